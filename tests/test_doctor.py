"""`voicesnap doctor`: every check runs for real, and every problem comes with its exact fix."""

from __future__ import annotations

import json
import os
import re
from dataclasses import replace
from pathlib import Path
from typing import Callable

import pytest

from voicesnap.cli import doctor, main

REAL_ENCODER = os.environ.get("VOICESNAP_ENCODER_MODEL")  # before any test hides it: what CI installs


@pytest.fixture(autouse=True)
def _tmp_data(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("VOICESNAP_DATA_DIR", str(tmp_path / "data"))
    return tmp_path / "data"


def test_the_report_names_each_area_and_every_problem_has_a_fix(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["doctor", "--json"])
    checks = json.loads(capsys.readouterr().out)
    names = {c["name"] for c in checks}
    assert {"PortAudio", "espeak-ng", "pyttsx3 voices", "Vosk model", "profiles", "microphone", "speaker"} <= names
    for c in checks:
        assert c["ok"] or c["fix"], c
    assert code == (1 if any(not c["ok"] and c["needed"] for c in checks) else 0)


def test_missing_espeak_says_how_to_install_it(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))  # a PATH with no espeak-ng on it
    check = doctor.check_espeak()
    assert not check.ok and "apt-get install espeak-ng" in check.fix
    assert "espeak-ng" in doctor.check_pyttsx3().fix


@pytest.mark.parametrize("variable, check", [("VOICESNAP_VOSK_MODEL", doctor.check_vosk_model),
                                             ("VOICESNAP_KEYWORD_MODEL", doctor.check_keyword),
                                             ("VOICESNAP_ENCODER_MODEL", doctor.check_encoder)])
def test_a_model_variable_naming_a_wrong_folder_fails_as_play_does(
        variable: str, check: Callable[[Path], doctor.Check], monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    """Doctor warned "not installed ... models download" and said "ready to play", while play and enroll
    refuse to start on a variable that names no model (models.find_model): a download does not fix it."""
    monkeypatch.setenv(variable, str(tmp_path / "nowhere"))
    got = check(tmp_path)
    assert not got.ok and got.needed and f"{variable}={tmp_path / 'nowhere'} is not a" in got.detail, got
    assert got.fix.startswith("fix or unset the variable") and variable in got.fix, got
    assert main(["doctor"]) == 1
    out = capsys.readouterr().out
    assert f"FAIL {got.name}: {variable}=" in out and "ready to play" not in out, out


def test_a_real_model_is_found(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    path = os.environ.get("VOICESNAP_VOSK_MODEL") or "/root/.cache/voicesnap-ci/vosk-model-small-en-us-aar-0.3.45"
    if not Path(path, "am", "final.mdl").is_file():
        pytest.skip("no Vosk English model (set VOICESNAP_VOSK_MODEL; .ci/run fetches one)")
    monkeypatch.setenv("VOICESNAP_VOSK_MODEL", path)
    check = doctor.check_vosk_model(tmp_path)
    assert check.ok and path in check.detail


def test_portaudio_and_pyttsx3_are_checked_for_real() -> None:
    pa = doctor.check_portaudio()
    assert pa.ok and "PortAudio" in pa.detail
    # its build's revision was 40 hex digits read out one by one
    assert "revision" not in pa.detail and not re.search("[0-9a-f]{12}", pa.detail), pa.detail
    tts = doctor.check_pyttsx3()
    assert tts.ok, tts  # the project pins pyttsx3 2.91 and needs espeak-ng


def test_device_problems_point_to_the_sound_server_and_text_play() -> None:
    for check in doctor.check_devices():
        if not check.ok:
            assert "voicesnap devices" in check.fix and "--text" in check.fix


def test_a_damaged_profile_is_named_with_re_enroll_and_forget(_tmp_data: Path) -> None:
    players = _tmp_data / "players"
    players.mkdir(parents=True)
    (players / "alice.json").write_text('{"version": 1, "name": "alice", "templ')  # cut off mid-write
    check = doctor.check_profiles(_tmp_data)
    assert not check.ok and "alice" in check.detail
    assert "voicesnap enroll alice" in check.fix and "voicesnap players forget alice" in check.fix


def test_the_speaker_encoder_is_checked_with_its_download(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("VOICESNAP_ENCODER_MODEL", raising=False)
    check = doctor.check_encoder(tmp_path)
    assert not check.ok and not check.needed  # play works without it, attribution is poorer
    assert "voicesnap models download encoder" in check.fix and "enroll each player again" in check.fix
    folder = tmp_path / "models" / "resemblyzer-0.1.4"
    folder.mkdir(parents=True)
    for damaged in (b"", b"garbage", b"PK\x03\x04 cut short"):  # found, but enrolling would stop on it
        (folder / "encoder.npz").write_bytes(damaged)
        bad = doctor.check_encoder(tmp_path)
        assert not bad.ok and "cannot read the speaker encoder's weights" in bad.detail, damaged
        assert "voicesnap models download encoder" in bad.fix
    real = REAL_ENCODER
    if not real or not Path(real, "encoder.npz").is_file():
        pytest.skip("speaker encoder weights not installed (VOICESNAP_ENCODER_MODEL; .ci/run sets it)")
    (folder / "encoder.npz").write_bytes(Path(real, "encoder.npz").read_bytes())
    found = doctor.check_encoder(tmp_path)
    assert found.ok and str(folder) in found.detail


def test_the_microphone_watch_is_checked_against_the_real_sound_server(monkeypatch: pytest.MonkeyPatch,
                                                                      tmp_path: Path) -> None:
    import shutil
    import subprocess

    if shutil.which("pactl") is None or subprocess.run(["pactl", "info"], capture_output=True).returncode != 0:
        pytest.skip("no PulseAudio server with pactl here (source .ci/pulse.sh)")
    check = doctor.check_source_watch()
    assert check.ok and "notices" in check.detail, check  # CI's PulseAudio 16: pactl answers in JSON
    fake = tmp_path / "bin"  # a PulseAudio without its tools: the fix names the package
    fake.mkdir()
    (fake / "pulseaudio").write_text("#!/bin/sh\nexit 0\n")
    (fake / "pulseaudio").chmod(0o755)
    monkeypatch.setenv("PATH", str(fake))
    check = doctor.check_source_watch()
    assert not check.ok and not check.needed and "apt-get install pulseaudio-utils" in check.fix, check


def test_players_without_slap_takes_are_named_with_the_way_to_add_them(_tmp_data: Path) -> None:
    """A player enrolled before enroll asked for "slap" works, but a "slap" is more often heard as their
    call: the profiles check names them and says how to enroll again; once they have, it passes."""
    from voicesnap import voices

    from voicefixtures import profile, takes_of

    for name in ("cara", "dev"):
        prof = profile(name)
        if name == "cara":
            prof = replace(prof, extra={**prof.extra, "contrast": voices.contrast_extra(takes_of(name, contrast=True))})
        voices.save_profile(prof, str(_tmp_data))
    check = doctor.check_profiles(_tmp_data)
    assert not check.ok and not check.needed and "without takes of 'slap': dev (" in check.detail, check
    assert "voicesnap enroll dev --contrast-only   (3 takes each)" in check.fix
    prof = voices.load_profile("dev", str(_tmp_data))
    prof.extra["contrast"] = voices.contrast_extra(takes_of("dev", contrast=True))
    voices.save_profile(prof, str(_tmp_data))
    assert "'slap'" not in doctor.check_profiles(_tmp_data).detail  # (the speech sample may still be missing)


@pytest.mark.parametrize("check, variable", [(doctor.check_vosk_model, "VOICESNAP_VOSK_MODEL"),
                                             (doctor.check_keyword, "VOICESNAP_KEYWORD_MODEL"),
                                             (doctor.check_encoder, "VOICESNAP_ENCODER_MODEL")])
def test_a_missing_model_says_each_way_to_it_once(check: Callable[[Path], doctor.Check], variable: str,
                                                  monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """A missing model's fix said the download, then "details:" and the search's whole message, which
    said the download again (300 characters twice over, by ear); the Vosk line said "the game uses
    enrolled calls only", which the keyword model makes untrue."""
    monkeypatch.delenv(variable, raising=False)
    got = check(tmp_path)
    said = f"{got.detail} {got.fix}"
    assert not got.ok and not got.needed and got.detail.startswith(f"not installed in {tmp_path / 'models'}: ")
    assert said.count("voicesnap models download") == 1 and said.count("voicesnap models install") == 1, said
    assert said.count(variable) == 1 and "details" not in said and "enrolled calls only" not in said, said


def test_players_on_their_own_mics_are_listed_with_the_channels_the_default_input_has(
        _tmp_data: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The doctor said nothing of players enrolled on their own mic channel: a table setting up a mic per
    player learnt that the input had too few channels only when play refused. Now it lists them, the
    --channels that plays them so, and whom the default input cannot hear."""
    from voicesnap import voices
    from voicesnap.cli import devices

    from voicefixtures import profile

    assert doctor.check_channels(_tmp_data) == []  # nobody enrolled on a channel: nothing to say
    for name, channel in (("alice", 0), ("bob", 1), ("cara", 2)):
        voices.save_profile(replace(profile(name), channel=channel), str(_tmp_data))
    # the sound server's answer to `pactl list short sources`, as devices reads it
    monkeypatch.setattr(devices, "_pactl_short", lambda kind: [
        ["0", "table.monitor", "module-null-sink.c", "s16le 2ch 16000Hz", "RUNNING"]])
    monkeypatch.setenv("PULSE_SOURCE", "table.monitor")
    (check,) = doctor.check_channels(_tmp_data)
    assert not check.ok and not check.needed, check
    assert check.detail == ("alice on channel 0, bob on channel 1 and cara on channel 2, and the default microphone "
                            "(table.monitor) has 2 channels, none for cara"), check
    assert "--input NAME (voicesnap devices lists each input's channels)" in check.fix, check
    monkeypatch.setenv("PULSE_SOURCE", "elsewhere")  # a source whose channels cannot be known
    (check,) = doctor.check_channels(_tmp_data)
    assert check.ok and check.detail.endswith("play them so with --channels alice=0,bob=1,cara=2"), check
