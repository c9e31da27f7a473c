"""`voicesnap enroll --from-files` end to end, in a temporary data directory."""

from __future__ import annotations

import numpy as np
import pytest

from voicesnap import voices as V
from voicesnap.audio import read_wav, write_wav
from voicesnap.cli import main

from voicefixtures import PLAYERS_DIR
from voicefixtures import enroll_files as files

E = PLAYERS_DIR / "enroll"


@pytest.fixture(autouse=True)
def tmp_data(tmp_path, monkeypatch):
    monkeypatch.setenv("VOICESNAP_DATA_DIR", str(tmp_path / "data"))


def test_enroll_from_files_then_reenroll(capsys):
    assert main(["enroll", "alice", "--from-files", *files("alice")]) == 0
    out = capsys.readouterr().out
    assert "Enrolled alice: 5 of 'snap', 3 of 'snap pool'" in out
    prof = V.load_profile("alice")
    assert prof.extra["takes"] == {"snap": 5, "snap pool": 3}
    assert main(["enroll", "alice", "--channel", "1", "--from-files", *files("alice")]) == 0
    assert "Re-enrolled alice" in capsys.readouterr().out
    assert V.load_profile("alice").channel == 1


def test_too_few_takes_is_a_clear_error(capsys):
    assert main(["enroll", "bob", "--from-files", *files("bob", 3, 3)]) == 2
    err = capsys.readouterr().err
    assert "only 3 good takes of 'snap', 5 needed" in err
    assert V.list_players() == []


def test_bad_take_refused_with_reason_and_others_kept(tmp_path, capsys):
    samples, rate = read_wav(E / "bob_snap_1.wav")
    loud = np.clip(samples.astype(np.int32) * 40, -32768, 32767).astype(np.int16)
    write_wav(tmp_path / "clipped.wav", loud, rate)
    args = ["enroll", "bob", "--from-files", str(tmp_path / "clipped.wav"), *files("bob")]
    assert main(args) == 0
    out = capsys.readouterr().out
    assert "clipped.wav: refused: that take was too loud and clipped" in out
    assert V.load_profile("bob").extra["takes"]["snap"] == 5


def test_one_file_with_several_takes(tmp_path):
    parts = [read_wav(E / f"cara_snap_{k}.wav")[0] for k in range(1, 6)]
    write_wav(tmp_path / "five.wav", np.concatenate(parts), 16000)
    pools = [str(E / f"cara_snappool_{k}.wav") for k in (1, 2, 3)]
    assert main(["enroll", "cara", "--from-files", str(tmp_path / "five.wav"), *pools]) == 0
    assert V.load_profile("cara").extra["takes"] == {"snap": 5, "snap pool": 3}


def test_animal_word_without_pool():
    takes = [str(PLAYERS_DIR / "animal" / f"bob_meow_{k}.wav") for k in range(1, 6)]
    assert main(["enroll", "bob", "--word", "meow", "--no-pool", "--from-files", *takes]) == 0
    prof = V.load_profile("bob")
    assert prof.word == "meow" and list(prof.templates) == ["meow"]


@pytest.mark.parametrize("argv, words", [
    (["enroll", "x/y", "--from-files", "a.wav"], "not usable"),
    (["enroll", "dev", "--takes", "2", "--from-files", "a.wav"], "at least 5"),
    (["enroll", "dev", "--from-files", "missing.wav"], "no such audio file"),
    # the game's own calls and command words were enrolled as a player's call, which no game could hear
    (["enroll", "dev", "--word", "slap", "--from-files", "a.wav"], "'slap' is one of the game's own calls"),
    (["enroll", "dev", "--word", "Snap Pool", "--from-files", "a.wav"], "'snap pool' is one of the game's own calls"),
    (["enroll", "dev", "--word", "dealer pause", "--from-files", "a.wav"], "starts like a voice command"),
])
def test_impossible_options(argv, words, capsys):
    assert main(argv) == 2
    assert words in capsys.readouterr().err


def test_slap_takes_are_enrolled_as_a_contrast_word_not_a_call(capsys):
    """Files named for "slap" are takes of the contrast word enroll asks for with "snap": kept apart
    from the call's templates (a "slap" must never be a call), listed by `players`; --contrast-takes 0
    leaves them out, and 1 is refused (the takes are checked against each other)."""
    from voicefixtures import contrast_files

    assert main(["enroll", "alice", "--from-files", *files("alice"), *contrast_files("alice")]) == 0
    assert "Enrolled alice: 5 of 'snap', 3 of 'snap pool', 3 of 'slap' (no call but in Slapjack)" in capsys.readouterr().out
    prof = V.load_profile("alice")
    assert list(prof.templates) == ["snap", "snap pool"] and prof.extra["takes"] == {"snap": 5, "snap pool": 3}
    assert [len(ts) for ts in V.profile_contrast(prof).values()] == [3]
    assert main(["players"]) == 0
    listed = capsys.readouterr()
    assert "3 of 'slap' (no call but in Slapjack)" in listed.out and "takes of 'slap'" not in listed.err
    assert main(["enroll", "alice", "--contrast-takes", "0", "--from-files", *files("alice"),
                 *contrast_files("alice")]) == 0
    assert "a take of 'slap', skipped (--contrast-takes 0)" in capsys.readouterr().out
    assert V.profile_contrast(V.load_profile("alice")) == {}
    assert main(["enroll", "bob", "--from-files", *files("bob")]) == 0
    assert "no takes of 'slap'" in capsys.readouterr().out
    assert main(["players"]) == 0
    assert "alice and bob gave no takes of 'slap' at enrollment" in capsys.readouterr().err
    assert main(["enroll", "bob", "--contrast-takes", "1", "--from-files", *files("bob")]) == 2
    assert "--contrast-takes must be at least 2" in capsys.readouterr().err
    assert main(["enroll", "bob", "--contrast-takes", "-2", "--from-files", *files("bob")]) == 2
    assert "--contrast-takes must be at least 2" in capsys.readouterr().err
    assert main(["enroll", "bob", "--speech-only", "--contrast-takes", "0"]) == 2
    assert "--contrast-takes" in capsys.readouterr().err


def test_contrast_only_adds_slap_takes_to_an_enrolled_player_keeping_the_rest(capsys):
    """A player enrolled without "slap" takes (before enroll asked for them) adds them with
    --contrast-only: every other part of the profile is kept as it was; files that are not "slap"
    takes are named and skipped; options about the other takes, and a call word with no contrast
    word, are refused with the reason; `players` then has no note for them."""
    import json

    from voicefixtures import contrast_files

    assert main(["enroll", "dev", "--channel", "0", "--contrast-takes", "0", "--from-files", *files("dev")]) == 0
    before = V.load_profile("dev")
    capsys.readouterr()
    assert main(["players"]) == 0
    assert "voicesnap enroll dev --contrast-only" in capsys.readouterr().err
    assert main(["enroll", "dev", "--contrast-only", "--from-files", files("dev")[0], *contrast_files("dev")]) == 0
    out = capsys.readouterr().out
    assert "dev_snap_1.wav: not a take of 'slap' (by its name), skipped" in out
    assert "Added 3 of 'slap' (no call but in Slapjack) to dev" in out
    after = V.load_profile("dev")
    assert [len(ts) for ts in V.profile_contrast(after).values()] == [3]
    kept = json.loads(after.to_json())
    del kept["extra"]["contrast"]
    assert kept == json.loads(before.to_json())  # takes, channel, embeddings, date: as they were
    assert main(["players"]) == 0
    assert "--contrast-only" not in capsys.readouterr().err
    assert main(["enroll", "dev", "--contrast-only", "--takes", "6", "--from-files", *contrast_files("dev")]) == 2
    assert "--takes would change nothing" in capsys.readouterr().err
    assert main(["enroll", "dev", "--contrast-only", "--from-files", files("dev")[0]]) == 2
    assert "no good takes of 'slap', 2 or more needed" in capsys.readouterr().err  # (it said "only 0 good takes")
    assert json.loads(V.load_profile("dev").to_json()) == json.loads(after.to_json())  # nothing half-written
    takes = [str(PLAYERS_DIR / "animal" / f"bob_meow_{k}.wav") for k in range(1, 6)]
    assert main(["enroll", "bob", "--word", "meow", "--no-pool", "--from-files", *takes]) == 0
    assert main(["enroll", "bob", "--contrast-only", "--from-files", *contrast_files("bob")]) == 2
    assert "has no contrast word" in capsys.readouterr().err


def test_a_refused_takes_reason_is_spoken_without_its_measurement():
    """Spoken, "too quiet (-52 dBFS): speak up" read "open bracket minus fifty-two d b f s" between the fault
    and the fix; the prompt says the fault and the fix, the printed line keeps the level."""
    from voicesnap.text import aloud

    take, rate = read_wav(E / "alice_snap_1.wav")
    quiet = (take[:, 0] * 10 ** (-30 / 20)).astype(np.int16)
    reason = V.check_take(quiet, rate)[1][0].reason
    assert "dBFS)" in reason  # printed
    said = aloud(f"Again please: {reason}.")
    assert said == "Again please: that take was too quiet: speak up or move closer to the microphone.", said
    long = "that take was too long (1.9 s): say just 'snap', once"
    assert aloud(long) == "that take was too long: say just 'snap', once"


def test_enroll_help_reads_aloud_in_words(capsys):
    """`enroll --help` named code ("voices.CONTRAST_WORDS": "voices dot contrast underscore words"), listed
    the name's characters as "- _ ." and said nothing of the spoken prompts or what Ctrl-C keeps."""
    import re

    with pytest.raises(SystemExit):
        main(["enroll", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert not re.search(r"\b[A-Z]+_[A-Z_]+\b|voices\.|0-based|- _ \.", text), text
    assert "hyphens, underscores and dots" in text and "counted from 0" in text, text
    assert "spoken as well as printed" in text and "Ctrl-C stops with nothing saved" in text, text


def test_re_enrolling_from_too_few_good_files_says_the_old_profile_is_kept(capsys):
    """Re-enrolling said nothing of the old profile until "Re-enrolled"; refused for too few good takes, it
    left a player to guess whether the old one was gone. It is said first, and again at the refusal."""
    assert main(["enroll", "bob", "--no-speech", "--from-files", *files("bob")]) == 0
    before = V.profile_path("bob").read_bytes()
    capsys.readouterr()
    assert main(["enroll", "bob", "--no-speech", "--from-files", *files("bob", 3, 3)]) == 2
    got = capsys.readouterr()
    assert "bob is enrolled already: these recordings replace the old profile if enough of them are good" in got.out
    assert "only 3 good takes of 'snap', 5 needed; bob's profile from before is kept, unchanged; " in got.err, got.err
    assert V.profile_path("bob").read_bytes() == before


def test_a_folder_given_whole_skips_the_sidecars_beside_its_recordings(tmp_path, capsys):
    """``--from-files takes/*`` passes each take's NAME.json too: the first sidecar was refused as "not a
    readable audio file" and nothing was enrolled. A sidecar beside a recording given is read with it; a
    .json with no recording beside it is still refused."""
    import shutil
    from pathlib import Path

    folder = tmp_path / "takes"
    folder.mkdir()
    for wav in map(Path, files("alice")):
        shutil.copy(wav, folder)
        shutil.copy(wav.with_suffix(".json"), folder)
    given = sorted(folder.iterdir())
    assert sum(p.suffix == ".json" for p in given) == 8
    assert main(["enroll", "alice", "--no-speech", "--from-files", *map(str, given)]) == 0
    assert V.load_profile("alice").extra["takes"] == {"snap": 5, "snap pool": 3}
    (folder / "alice_snap_1.wav").unlink()  # its sidecar left alone: no recording to read it with
    capsys.readouterr()
    assert main(["enroll", "alice", "--no-speech", "--from-files", *map(str, sorted(folder.iterdir()))]) == 2
    assert "alice_snap_1.json: not a readable audio file" in capsys.readouterr().err
