"""Silent Snap's slam: the slam spotter on its synthetic fixtures and the speech corpus, and `voicesnap play
--variant silent` hearing a slam on a player's own microphone (tests/fixtures/audio/slams, made by
generate_slams.py)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from voicesnap import gamelog, rules
from voicesnap.audio import AudioChunk
from voicesnap.cli import main
from voicesnap.corpus import load, load_corpus, score
from voicesnap.spotters import Detection
from voicesnap.spotters.channels import ChannelSpotters
from voicesnap.spotters.slam import SlamSpotter
from voicesnap.table import TableStep

ROOT = Path(__file__).resolve().parents[1]
SLAMS = ROOT / "tests" / "fixtures" / "audio" / "slams"


def hear(spotter: object, samples: np.ndarray, rate: int, chunk: int = 320) -> list[Detection]:
    x = samples if samples.ndim == 2 else samples[:, None]
    out: list[Detection] = []
    for a in range(0, len(x), chunk):
        out += spotter.accept(AudioChunk(rate, 2, x.shape[1], a, x[a:a + chunk]))  # type: ignore[attr-defined]
    return out + spotter.flush()  # type: ignore[attr-defined]


def test_every_slam_is_heard_at_its_onset_and_nothing_else_is() -> None:
    """Slams alone from -3 to -26 dBFS peak, over talk and on the end of a "snap"; plosive words, a call,
    talk, the announcer, claps and clatter around them must stay unheard."""
    fx = load(SLAMS / "slams.json")
    found = hear(SlamSpotter(channel=0), fx.read(), fx.rate)
    s = score(fx, found, words=["slam"], tolerance=0.25)
    assert s.targets == 6
    assert not s.misses and not s.false, (s.misses, s.false)
    assert max(abs(e) for e in s.onset_errors) <= 0.010, s.onset_errors
    assert all(d.engine == "slam" and d.word == "slam" and d.end > d.onset for d in found)


def test_the_chunk_size_does_not_change_what_is_heard() -> None:
    fx = load(SLAMS / "slams.json")
    x = fx.read()
    a = [(round(d.onset, 4), round(d.end, 4)) for d in hear(SlamSpotter(channel=0), x, fx.rate, chunk=160)]
    b = [(round(d.onset, 4), round(d.end, 4)) for d in hear(SlamSpotter(channel=0), x, fx.rate, chunk=4801)]
    assert a == b and len(a) == 6


def test_no_slam_in_the_speech_corpus() -> None:
    """Calls, commands, near misses full of plosives, talk, real speech, the announcer, clipped shouts, table
    clatter and noise: 13.6 min without a slam."""
    heard = {}
    for fx in load_corpus():
        x = fx.read()
        found = hear(SlamSpotter(channel=0), x if x.ndim == 1 else x[:, 0], fx.rate)
        if found:
            heard[fx.name] = [round(d.onset, 3) for d in found]
    assert heard == {}


def test_steady_noise_and_silence_are_no_slam() -> None:
    rng = np.random.default_rng(1)
    noise = (rng.standard_normal(16000 * 5) * 3000).astype(np.int16)
    hum = (8000 * np.sin(2 * np.pi * 100 * np.arange(16000 * 5) / 16000)).astype(np.int16)
    for x in (noise, hum, np.zeros(16000 * 2, np.int16)):
        assert hear(SlamSpotter(channel=0), x, 16000) == []


def test_the_loudest_mic_names_the_slammer_and_its_copy_is_dropped() -> None:
    fx = load(SLAMS / "two_mic_slams.json")
    mics = ChannelSpotters({0: SlamSpotter(channel=0), 1: SlamSpotter(channel=1)}, {0: "Alice", 1: "Bob"})
    found = hear(mics, fx.read(), fx.rate)
    truth = next(s for s in fx.segments if s.text == "slam")
    assert [(d.player, d.channel) for d in found] == [("Bob", 1)]
    assert abs(found[0].onset - fx.seconds(truth.onset)) <= 0.010


def test_undecided_holds_the_line_while_the_decay_is_awaited() -> None:
    fx = load(SLAMS / "slams.json")
    x, rate = fx.read(), fx.rate
    onset = fx.seconds(next(s for s in fx.segments if s.text == "slam").onset)
    spotter = SlamSpotter(channel=0)
    cut = int((onset + 0.05) * rate)
    assert spotter.accept(AudioChunk(rate, 2, 1, 0, x[:cut, None])) == []
    assert spotter.undecided() is not None and abs(spotter.undecided() - onset) < 0.01
    found = spotter.accept(AudioChunk(rate, 2, 1, cut, x[cut:cut + rate // 2, None]))
    assert len(found) == 1 and spotter.undecided() is None


def play(args: list[str], data: Path, keys: bytes = b"") -> subprocess.CompletedProcess:
    env = dict(os.environ, VOICESNAP_DATA_DIR=str(data))
    return subprocess.run([sys.executable, "-m", "voicesnap", "play", *args], input=keys, cwd=ROOT, env=env,
                          capture_output=True, timeout=120)


def test_a_slam_on_bobs_mic_wins_the_match_for_bob_and_replays_the_same(tmp_path: Path) -> None:
    """Seed 3 at one card a second shows a match at 3.0 s (the third card); Bob slams 0.35 s later, 12 dB
    louder on his mic than on Alice's. Before, nothing heard a slam: the game went on without a ruling."""
    folder = tmp_path / "g"
    run = play(["--players", "Alice,Bob", "--variant", "silent", "--channels", "Alice=0,Bob=1", "--input-file",
                str(SLAMS / "two_mic_slams.wav"), "--no-keyboard", "--quiet", "--text", "--seed", "3", "--pace", "1",
                "--record", str(folder)], tmp_path / "data")
    assert run.returncode == 0, run.stderr.decode()
    records = [ev for _, ev in gamelog.read(folder / "log.jsonl")]
    flips = [r for r in records if isinstance(r, rules.Flipped)]
    assert flips[2].t == 3.0 and flips[2].match  # the fixture's premise
    won = [r for r in records if isinstance(r, rules.SnapWon)]
    assert [(w.player, w.kind) for w in won] == [("Bob", "slam")]
    calls = [r for r in records if isinstance(r, TableStep) and r.kind == "call" and r.word == "slam"]
    assert len(calls) == 1 and calls[0].engine == "slam" and abs(calls[0].onset - 3.35) < 0.01
    assert not any(isinstance(r, rules.WrongCall) for r in records)
    env = dict(os.environ, VOICESNAP_DATA_DIR=str(tmp_path / "data"))
    again = subprocess.run([sys.executable, "-m", "voicesnap", "replay", str(folder)], cwd=ROOT, env=env,
                           capture_output=True, timeout=120)
    assert again.returncode == 0, again.stderr.decode()
    out = again.stdout.decode()
    assert "rulings agree" in out and "different: " not in out and "same: at 3.35 seconds, Bob won " in out, out


def test_silent_snap_on_one_mic_without_the_keyboard_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("VOICESNAP_DATA_DIR", str(tmp_path / "data"))
    code = main(["play", "--players", "Alice,Bob", "--variant", "silent", "--input-file",
                 str(SLAMS / "slams.wav"), "--no-keyboard", "--quiet", "--text", "--seed", "3"])
    err = capsys.readouterr().err
    assert code == 2 and "Traceback" not in err
    assert "one microphone cannot tell whose hand slammed" in err
    assert "--channels Alice=0,Bob=1" in err and "drop --no-keyboard" in err


def test_silent_snap_on_one_mic_says_slams_are_keys(tmp_path: Path) -> None:
    run = play(["--players", "Alice,Bob", "--variant", "silent", "--engine", "none", "--quiet", "--text",
                "--seed", "3", "--record", str(tmp_path / "k")], tmp_path / "data", keys=b"\x1b")
    out = run.stdout.decode()
    assert "a slam on the table cannot say whose hand it was, so slams are the snap keys" in out
    assert "Call keys: Alice q for slam; Bob w for slam." in out
    # a resumed session was told to add --channels, which --resume refuses (it keeps the session's mics)
    run = play(["--resume", "--record", str(tmp_path / "k"), "--engine", "none", "--quiet", "--text"],
               tmp_path / "data", keys=b"\x1b")
    out = run.stdout.decode()
    assert run.returncode == 0 and "slams are the snap keys" in out, run.stderr.decode()
    assert "a new session with a microphone per player (--channels Alice=0,Bob=1) hears slams" in out, out


def test_listen_shows_the_slams_a_silent_snap_game_would_hear(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    """`listen --channels` heard "snap" and "snap pool" only: a Silent Snap table could not check its slams
    before a game. With --variant silent it builds play's spotter for the variant."""
    import json

    monkeypatch.setenv("VOICESNAP_DATA_DIR", str(tmp_path / "data"))
    wav = str(SLAMS / "two_mic_slams.wav")
    assert main(["listen", "--file", wav, "--channels", "Alice=0,Bob=1", "--variant", "silent", "--json"]) == 0
    slams = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    slams = [d for d in slams if d.get("word") == "slam"]
    assert [(d["player"], d["channel"]) for d in slams] == [("Bob", 1)] and abs(slams[0]["onset"] - 3.35) < 0.01
    if main(["listen", "--file", wav, "--channels", "Alice=0,Bob=1", "--json"]) == 0:  # (with a Vosk or keyword model)
        plain = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
        assert not any(d.get("word") == "slam" for d in plain), plain
