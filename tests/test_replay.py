"""A voice game played from recorded per-player microphones (`voicesnap play --input-file
--record`), then `voicesnap replay DIR`: re-judged from its audio it agrees with itself, and a
difference comes with its reason."""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path

import pytest

from voicesnap import gamelog, rules
from voicesnap.audio import read_wav, write_wav
from voicesnap.cli import main
from voicesnap.table import TableSession, TableStep

from table_script import model_or_skip, play_recorded

pytestmark = pytest.mark.vosk_model


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, str, object]:
    model = model_or_skip()
    base = tmp_path_factory.mktemp("replay")
    data = base / "data"
    folder = base / "session"
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        code, script = play_recorded(folder, data, model)
    assert code == 0
    # the recording runs out before the game does: play says so, and how to go on
    assert f"stopped (the input file ended); continue with: voicesnap play --resume --record {folder}" in printed.getvalue()
    return folder, data, model, script


def rejudge(folder: Path, data: Path, model: str, capsys: pytest.CaptureFixture[str]) -> tuple[int, dict]:
    code = main(["--data-dir", str(data), "replay", str(folder), "--model", model, "--json"])
    return code, json.loads(capsys.readouterr().out)


def test_play_from_recorded_microphones_rules_every_scripted_call(recorded) -> None:
    """`voicesnap play --input-file` (per-player channels, real Vosk): the rulings the script expects."""
    folder, data, model, script = recorded
    records = [ev for _, ev in gamelog.read(folder / "log.jsonl")]
    got = [(r.EVENT_TYPE, getattr(r, "player", None) or ",".join(sorted(r.players))) for r in records
           if isinstance(r, rules.RULINGS)]
    assert got == [(kind, who) for kind, who, _t in script.rulings()]
    calls = [r for r in records if isinstance(r, TableStep) and r.kind == "call"]
    for c, s in zip(calls, script.shouts):
        assert abs(c.onset - s.onset) < 0.05 and c.player == s.player  # onsets on the one clock
    flips = [r for r in records if isinstance(r, rules.Flipped)]
    assert [f.t for f in flips] == pytest.approx(script.flip_times()[: len(flips)])
    assert (folder / "audio.wav").stat().st_size > 16000 * 2 * 3 * 20  # the session's audio is kept


def test_the_recorded_audio_gives_the_same_rulings_again(recorded, capsys) -> None:
    """The live game listened to the same file, so a deterministic re-judging agrees to the millisecond."""
    folder, data, model, script = recorded
    code, got = rejudge(folder, data, model, capsys)
    assert code == 0 and got["total"] == got["agree"] == 5
    assert set(got) == {"rulings", "agree", "total", "notes"}  # a game never resumed: one stretch, as ever
    assert {r["ruling"] for r in got["rulings"]} == {"snap-won", "tie-to-pool", "wrong-call", "pool-won"}
    assert all(r["live"] == r["replay"] for r in got["rulings"])


def test_a_file_game_rules_the_same_when_the_game_loop_runs_slow(recorded, tmp_path: Path, monkeypatch) -> None:
    """A file is read as fast as it goes, so the spotter runs ahead of a slow game loop. A loop that
    stalled now and then (a busy machine: seen in CI) once ruled the scripted tie as a late call and a
    wrong call, and bob's pool claim as a wrong call: the loop stepped once per batch of audio, and the
    spotter asked whether a pool claim was open of a game that had not caught up with its audio."""
    import time

    from voicesnap import table

    folder, data, model, script = recorded
    step = table.TableLoop.step
    count = [0]

    def stalling(self, *args, **kwargs):  # every 40th step of the loop takes 0.2 s
        count[0] += 1
        if count[0] % 40 == 0:
            time.sleep(0.2)
        return step(self, *args, **kwargs)

    monkeypatch.setattr(table.TableLoop, "step", stalling)
    with contextlib.redirect_stdout(io.StringIO()):
        code, _ = play_recorded(tmp_path / "slow", data, model)
    assert code == 0 and count[0] > 40  # (it stalled)

    def rulings(log: Path) -> list[tuple[str, float, tuple[str, ...]]]:
        return [(r.EVENT_TYPE, round(r.t, 3), tuple(sorted(getattr(r, "players", None) or (r.player,))))
                for _, r in gamelog.read(log) if isinstance(r, rules.RULINGS)]

    want = rulings(folder / "log.jsonl")
    assert len(want) == 5 and rulings(tmp_path / "slow" / "log.jsonl") == want


def test_a_replay_stopped_part_way_compares_nothing(recorded, capsys, monkeypatch) -> None:
    """Ctrl-C 1.5 s into a replay printed "3 of 5 rulings agree" and the unheard rulings as differences,
    exit 1, like a replay that really disagrees (the table turns Ctrl-C into a stop of its own)."""
    import _thread
    import signal

    from voicesnap import audio

    class Interrupted(audio.FileSource):
        def __iter__(self):
            for k, chunk in enumerate(super().__iter__()):
                if k == 300:  # 6 s in: Ctrl-C, as the main thread gets it
                    _thread.interrupt_main()
                yield chunk

    folder, data, model, script = recorded
    monkeypatch.setattr(audio, "FileSource", Interrupted)
    # Python's own Ctrl-C handler, as in a terminal: a pytest-xdist worker ignores SIGINT, and interrupt_main
    # then raised nothing (the replay ran to its end)
    before = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        code = main(["--data-dir", str(data), "replay", str(folder), "--model", model])
    finally:
        signal.signal(signal.SIGINT, before)
    assert code == 130
    out = capsys.readouterr()
    assert "stopped before the end" in out.err and "no rulings compared" in out.err, out
    assert "agree" not in out.out and "different: " not in out.out, out.out


def test_replay_rebuilds_the_speech_gate_setting_the_game_used(recorded, capsys, tmp_path: Path) -> None:
    """The gate moves Vosk's chunk boundaries, so replay must use the game's own setting, read from its log."""
    folder, data, model, script = recorded
    session = next(ev for _, ev in gamelog.read(folder / "log.jsonl") if isinstance(ev, TableSession))
    assert session.gate is True  # play gates by default, and says so in the log
    code, got = rejudge(folder, data, model, capsys)
    assert "speech gate: on, as in the game" in got["notes"]
    copy = tmp_path / "ungated"
    copy.mkdir()
    lines = (folder / "log.jsonl").read_text().splitlines()
    edited = [json.dumps({**json.loads(x), "gate": False}) if '"table-session"' in x else x for x in lines]
    (copy / "log.jsonl").write_text("\n".join(edited) + "\n")
    (copy / "audio.wav").write_bytes((folder / "audio.wav").read_bytes())
    code, got = rejudge(copy, data, model, capsys)
    assert "speech gate: off, as in the game" in got["notes"]


def test_a_call_missing_from_the_audio_is_explained(recorded, capsys, tmp_path: Path) -> None:
    folder, data, model, script = recorded
    copy = tmp_path / "edited"
    copy.mkdir()
    (copy / "log.jsonl").write_bytes((folder / "log.jsonl").read_bytes())
    samples, rate = read_wav(folder / "audio.wav")
    bob = script.players.index("bob")
    shout = next(s for s in script.shouts if s.player == "bob" and s.word == "snap")
    a = int(shout.onset * rate) - 1600
    samples = samples.copy()
    samples[a: a + rate, bob] = 0  # bob's snap never reached his microphone
    write_wav(copy / "audio.wav", samples, rate)
    assert main(["--data-dir", str(data), "replay", str(copy), "--model", model]) == 1
    text = capsys.readouterr().out.splitlines()
    diff = next(i for i, line in enumerate(text) if line.startswith("  different: "))
    at = f"{shout.onset:.3f}".rstrip("0").rstrip(".")
    assert text[diff] == f"  different: at {at} seconds, the game ruled: bob won 4 cards; the replay did not", text
    assert "why: the replay heard no call from bob" in text[diff + 1] and "did not hear" in text[diff + 1]


def test_a_tie_lost_on_replay_names_the_caller_it_did_not_hear(recorded, capsys, tmp_path: Path) -> None:
    """cara's half of the tie cut from her microphone: both rows blamed alice, whom both sides heard ("the
    replay heard alice say 'snap' -0 ms from here"); they now name cara, the call one side did not hear."""
    folder, data, model, script = recorded
    copy = tmp_path / "untied"
    copy.mkdir()
    (copy / "log.jsonl").write_bytes((folder / "log.jsonl").read_bytes())
    samples, rate = read_wav(folder / "audio.wav")
    tie = next(t for kind, _who, t in script.rulings() if kind == "tie-to-pool")
    shout = next(s for s in script.shouts if s.player == "cara" and abs(s.onset - tie) < 0.2)
    a = int(shout.onset * rate) - 1600
    samples = samples.copy()
    samples[a: a + rate, script.players.index("cara")] = 0
    write_wav(copy / "audio.wav", samples, rate)
    assert main(["--data-dir", str(data), "replay", str(copy), "--model", model]) == 1
    text = capsys.readouterr().out.splitlines()
    lost = next(i for i, line in enumerate(text) if "the game ruled: tie between alice and cara" in line)
    at = f"{tie:.3f}".rstrip("0").rstrip(".")
    assert text[lost + 1] == (f"    why: the replay heard no call from cara near {at} seconds (the game heard "
                              "'snap'), so it ruled no tie there"), text
    won = next(i for i, line in enumerate(text) if "the replay ruled: alice won" in line)
    assert text[won + 1].startswith("    why: the game also heard cara say 'snap' "), text
    assert text[won + 1].endswith("later, within the tie window, so it ruled a tie"), text
    # the later rulings' card counts differ with the tie: the first difference is named, not only "ruled differently"
    after = [line for line in text[won + 2:] if line.startswith("    why: the same call, ruled differently")]
    assert after and all(line.endswith(f" (an earlier ruling, at {at} seconds, already differed)") for line in after), text


def test_replay_says_each_ruling_in_words(recorded, capsys) -> None:
    """Read by a screen reader, a ruling was "same 7.600 s tie-to-pool alice,cara": the event's wire name,
    names joined by a comma, "s" for seconds. Now a line of words, with its unit and card counts."""
    folder, data, model, script = recorded
    assert main(["--data-dir", str(data), "replay", str(folder), "--model", model]) == 0
    text = capsys.readouterr().out.splitlines()
    rows = [line for line in text if line.startswith("  ") and not line.startswith("    ")]
    assert rows == ["  same: at 3.1 seconds, alice won 2 cards",
                    "  same: at 7.6 seconds, tie between alice and cara, the pool then had 2 cards",
                    "  same: at 9.1 seconds, wrong call by cara, the pool then had 3 cards",
                    "  same: at 13.6 seconds, bob won 4 cards",
                    "  same: at 18.1 seconds, bob won the pool, 3 cards"], rows
    # and why each was ruled, from the log: who called, when, who else within the tie window, the flip
    # ("why did cara not win that pile?" had no answer but the log)
    because = [line for line in text if line.startswith("    because: ")]
    assert len(because) == 5, text
    assert because[1].startswith("    because: alice called 'snap' at 7.6 seconds; cara called 'snap' 30 milliseconds "
                                 "later, within the tie window (0.1 seconds); the call answered flip 5, "), because
    assert because[1].endswith(": a match; so neither won: a tie sends the cards in play to the pool"), because
    assert because[3].startswith("    because: bob called 'snap' at 13.6 seconds; no one else called within the tie "
                                 "window (0.1 seconds); the call answered flip 9, "), because
    assert because[3].endswith(": a match; so bob, first to call, won the 4 cards in play"), because
    assert ": no match; so the referee ruled a wrong call: cara paid 1 " in because[2], because


def test_a_session_without_audio_says_how_to_record_one(tmp_path: Path, capsys) -> None:
    assert main(["--data-dir", str(tmp_path / "d"), "replay", str(tmp_path)]) == 2
    assert "--record" in capsys.readouterr().err


def test_a_wrong_folder_is_named_for_what_it_is_with_where_the_games_are(tmp_path: Path, capsys) -> None:
    """A mistyped folder, a file, and the log file itself were each said to "have no log.jsonl", with "the
    data folder's games/" for where to look: no path a player could go to."""
    from voicesnap import events

    data = tmp_path / "d"
    game = tmp_path / "game"
    game.mkdir()
    (game / "log.jsonl").write_text(events.dumps(TableSession(players=("Ann", "Ben"), seed=1, engine="vosk")) + "\n")
    (tmp_path / "notes.txt").write_text("x")
    said = {}
    for name, path in (("typo", tmp_path / "gaem"), ("file", tmp_path / "notes.txt"), ("log", game / "log.jsonl")):
        assert main(["--data-dir", str(data), "replay", str(path)]) == 2
        said[name] = capsys.readouterr().err
    games = f"a game's folder in {data / 'games'} "
    assert f"there is no folder {tmp_path / 'gaem'}; " in said["typo"] and games in said["typo"], said
    assert f"{tmp_path / 'notes.txt'} is a file, not a game's folder" in said["file"] and games in said["file"], said
    assert f"is the game's log: give its folder, voicesnap replay {game}" in said["log"], said


def test_a_session_whose_recording_is_gone_says_the_file_is_missing(tmp_path: Path, capsys) -> None:
    """Replay told a player whose audio.wav was deleted to record the session with --record, which they had."""
    from voicesnap import events

    folder = tmp_path / "gone"
    folder.mkdir()
    (folder / "log.jsonl").write_text(events.dumps(
        TableSession(players=("Ann", "Ben"), seed=1, engine="vosk", audio="audio.wav")) + "\n")
    assert main(["--data-dir", str(tmp_path / "d"), "replay", str(folder)]) == 2
    err = capsys.readouterr().err
    assert f"{folder / 'audio.wav'} is missing" in err and "put the file back" in err, err
    assert "--record" not in err, err
    # --json: the reason in the JSON too, as a resumed game's stretches give it (a game never resumed printed
    # nothing on stdout)
    assert main(["--data-dir", str(tmp_path / "d"), "replay", str(folder), "--json"]) == 2
    printed = capsys.readouterr()
    got = json.loads(printed.out)
    assert (got["rulings"], got["agree"], got["total"]) == ([], 0, 0), got
    assert f"{folder / 'audio.wav'} is missing" in got["error"] and got["error"] in printed.err, printed


def test_a_keyboard_only_session_says_there_is_no_audio_to_rejudge(tmp_path: Path, capsys) -> None:
    """A keyboard game played with --record has no audio (play records only what it listens to): replay
    told the player to record it with --record, which they had."""
    from voicesnap import events

    folder = tmp_path / "kb"
    folder.mkdir()
    (folder / "log.jsonl").write_text(events.dumps(TableSession(players=("Ann", "Ben"), seed=1, engine="none"))
                                      + "\n")
    assert main(["--data-dir", str(tmp_path / "d"), "replay", str(folder)]) == 2
    err = capsys.readouterr().err
    assert "was played by keyboard only, so there is no audio to re-judge" in err and "--record" not in err, err


@pytest.fixture(scope="module")
def resumed(recorded, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The recorded session stopped when its input ended, then `play --resume --record` on the same scripted
    track: a second stretch with calls of its own, in audio-resumed-1.wav, on a clock that starts again at 0."""
    import shutil

    folder, data, model, script = recorded
    copy = tmp_path_factory.mktemp("resumed") / "session"
    shutil.copytree(folder, copy)
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        code = main(["--data-dir", str(data), "play", "--resume", "--record", str(copy), "--input-file",
                     str(folder.parent / f"{folder.name}-mic.wav"), "--model", model, "--quiet", "--text",
                     "--no-keyboard"])
    assert code == 0 and "stopped (the input file ended)" in printed.getvalue()
    records = [r for _, r in gamelog.read(copy / "log.jsonl")]
    cut = next(i for i, r in enumerate(records) if r.EVENT_TYPE == "table-resumed")
    assert records[cut].audio == "audio-resumed-1.wav" and (copy / "audio-resumed-1.wav").is_file()
    assert sum(isinstance(r, rules.RULINGS) for r in records[cut:]) == 5  # the stretch after the resume rules too
    return copy


def test_every_stretch_of_a_resumed_game_is_rejudged_from_its_own_recording(recorded, resumed, capsys) -> None:
    """Replay re-judged only the stretch before the first resume ("only its first stretch ... is re-judged"):
    for a host who stopped and resumed, most of the evening was never checked."""
    folder, data, model, script = recorded
    code, got = rejudge(resumed, data, model, capsys)
    assert code == 0 and got["total"] == got["agree"] == 10, got
    assert [(s["stretch"], s["audio"], s["agree"], s["total"], s["error"]) for s in got["stretches"]] == [
        (1, "audio.wav", 5, 5, ""), (2, "audio-resumed-1.wav", 5, 5, "")]
    second = [r for r in got["rulings"] if r["stretch"] == 2]
    # on its own recording's clock: the same track's calls, at the same times, ruled on the game as it stood
    assert [(r["ruling"], r["t"]) for r in second] == [
        ("snap-won", pytest.approx(3.1, abs=0.01)), ("tie-to-pool", pytest.approx(7.6, abs=0.01)),
        ("wrong-call", pytest.approx(9.1, abs=0.01)), ("wrong-call", pytest.approx(13.6, abs=0.01)),
        ("snap-won", pytest.approx(18.1, abs=0.01))]
    assert any(n.startswith("the game was resumed once, so it has 2 stretches") for n in got["notes"]), got["notes"]
    assert not any("time(s)" in n or "not yet replayed" in n for n in got["notes"]), got["notes"]

    assert main(["--data-dir", str(data), "replay", str(resumed), "--model", model]) == 0
    text = capsys.readouterr().out.splitlines()
    assert "stretch 1 of 2 (audio.wav): 5 of 5 rulings agree" in text, text
    assert "stretch 2 of 2 (audio-resumed-1.wav): 5 of 5 rulings agree" in text, text
    assert text[-1] == f"replay of {resumed}, the whole game: 10 of 10 rulings agree", text
    assert sum(line == "(speech gate: on, as in the game)" for line in text) == 1, text  # said once
    # the folder is said first and last, not again on each stretch's line (a long path, heard in full)
    assert text[0].startswith(f"replay of {resumed} (the game was resumed once"), text
    assert sum(str(resumed) in line for line in text) == 2, text


def test_a_call_missing_from_a_resumed_stretchs_audio_is_explained_on_its_clock(recorded, resumed, capsys,
                                                                                tmp_path: Path) -> None:
    """The second stretch is really heard again: bob's snap cut from audio-resumed-1.wav is a difference,
    placed on that recording's clock, and the first stretch still agrees."""
    import shutil

    folder, data, model, script = recorded
    copy = tmp_path / "edited"
    shutil.copytree(resumed, copy)
    samples, rate = read_wav(copy / "audio-resumed-1.wav")
    bob = script.players.index("bob")
    shout = next(s for s in script.shouts if s.player == "bob" and s.word == "snap")
    a = int(shout.onset * rate) - 1600
    samples = samples.copy()
    samples[a: a + rate, bob] = 0
    write_wav(copy / "audio-resumed-1.wav", samples, rate)
    assert main(["--data-dir", str(data), "replay", str(copy), "--model", model]) == 1
    text = [line for line in capsys.readouterr().out.splitlines() if not line.startswith("    because: ")]
    assert "stretch 1 of 2 (audio.wav): 5 of 5 rulings agree" in text, text
    assert "stretch 2 of 2 (audio-resumed-1.wav): 3 of 5 rulings agree" in text, text
    diff = next(i for i, line in enumerate(text) if line.startswith("  different: "))
    at = f"{shout.onset:.3f}".rstrip("0").rstrip(".")
    assert text[diff].startswith(f"  different: at {at} seconds, the game ruled: wrong call by bob"), text
    assert f"why: the replay heard no call from bob near {at} seconds" in text[diff + 1], text
    # his wrong call's cards never went to the pool, so his next snap won a different number of them
    assert text[diff + 2].startswith("  different: ") and "the game ruled: " in text[diff + 2], text
    assert " won " in text[diff + 2] and "the same call, ruled differently" in text[diff + 3], text
    assert text[-1] == f"replay of {copy}, the whole game: 8 of 10 rulings agree", text


def test_a_stretch_whose_recording_is_missing_or_damaged_is_named_and_the_others_are_rejudged(
        recorded, resumed, capsys, tmp_path: Path) -> None:
    import shutil

    folder, data, model, script = recorded
    gone = tmp_path / "gone"
    shutil.copytree(resumed, gone)
    (gone / "audio-resumed-1.wav").unlink()
    code, got = rejudge(gone, data, model, capsys)
    assert code == 1 and got["total"] == got["agree"] == 5, got  # the first stretch, whole
    second = got["stretches"][1]
    assert second["total"] == 0 and f"{gone / 'audio-resumed-1.wav'} is missing" in second["error"], second
    assert any(n.startswith("stretch 2 of 2 (audio-resumed-1.wav) was not re-judged") for n in got["notes"])

    damaged = tmp_path / "damaged"
    shutil.copytree(resumed, damaged)
    (damaged / "audio.wav").write_bytes(b"RIFF" + bytes(40))
    assert main(["--data-dir", str(data), "replay", str(damaged), "--model", model]) == 1
    text = capsys.readouterr().out.splitlines()
    assert any(line.startswith("stretch 1 of 2 (audio.wav): not re-judged, because "
                               f"{damaged / 'audio.wav'}") for line in text), text
    assert "stretch 2 of 2 (audio-resumed-1.wav): 5 of 5 rulings agree" in text, text
    assert text[-1] == (f"replay of {damaged}, the whole game: 5 of 5 rulings agree in the 1 stretch of 2 "
                        "re-judged; not re-judged: stretch 1 of 2"), text

    # none left to re-judge: the reason, as before resumes were replayed
    (damaged / "audio-resumed-1.wav").unlink()
    assert main(["--data-dir", str(data), "replay", str(damaged), "--model", model]) == 2
    err = capsys.readouterr().err
    assert "no stretch of the game could be re-judged" in err and "audio-resumed-1.wav is missing" in err, err


def test_replay_json_gives_each_stretchs_reason_when_none_can_be_rejudged(recorded, resumed, capsys,
                                                                          tmp_path: Path) -> None:
    """With every recording gone, `replay --json` printed nothing on stdout (the reason on stderr alone):
    a program reading its JSON got none. Now each stretch's error is in the JSON, and the exit status and
    the stderr line are as before."""
    import shutil

    folder, data, model, script = recorded
    gone = tmp_path / "gone"
    shutil.copytree(resumed, gone)
    for wav in gone.glob("audio*.wav"):
        wav.unlink()
    assert main(["--data-dir", str(data), "replay", str(gone), "--model", model, "--json"]) == 2
    printed = capsys.readouterr()
    got = json.loads(printed.out)
    assert (got["rulings"], got["agree"], got["total"]) == ([], 0, 0), got
    assert [(s["stretch"], s["audio"], s["total"], s["notes"]) for s in got["stretches"]] == [
        (1, "audio.wav", 0, []), (2, "audio-resumed-1.wav", 0, [])], got["stretches"]
    assert f"{gone / 'audio.wav'} is missing" in got["stretches"][0]["error"], got["stretches"]
    assert f"{gone / 'audio-resumed-1.wav'} is missing" in got["stretches"][1]["error"], got["stretches"]
    assert "no stretch of the game could be re-judged" in printed.err, printed.err

    # each stretch's rulings as its log gives them, with why (a player disputing one had nothing to read)
    assert [(round(r["t"], 1), r["ruling"], r["stretch"]) for r in got["stretches"][1]["logged"]][:1] == [
        (3.1, "snap-won", 2)], got["stretches"]
    assert got["stretches"][0]["logged"][0]["because"].startswith("alice called 'snap' at 3.1 seconds;")

    # the text: the reason on stderr, and each stretch's logged rulings on stdout
    assert main(["--data-dir", str(data), "replay", str(gone), "--model", model]) == 2
    printed = capsys.readouterr()
    assert "no stretch of the game could be re-judged" in printed.err, printed
    out = printed.out.splitlines()
    assert out[0] == "stretch 1 of 2 (audio.wav)'s 5 rulings, as the log gives them (not re-judged):", out
    assert out[1] == "  at 3.1 seconds, alice won 2 cards" and out[2].startswith("    because: alice called"), out
    assert "stretch 2 of 2 (audio-resumed-1.wav)'s 5 rulings, as the log gives them (not re-judged):" in out, out


def test_a_single_ruling_is_counted_in_the_singular(recorded, resumed, capsys, tmp_path: Path) -> None:
    """"1 of 1 rulings agree" and "in the 1 of 2 stretches re-judged": each count now takes its own number,
    in a game never resumed and in a resumed one."""
    import shutil

    folder, data, model, script = recorded
    samples, rate = read_wav(folder / "audio.wav")
    short = tmp_path / "short"
    short.mkdir()
    (short / "log.jsonl").write_bytes((folder / "log.jsonl").read_bytes())
    write_wav(short / "audio.wav", samples[: 6 * rate], rate)  # only the snap won at 3.1 s is re-judged
    assert main(["--data-dir", str(data), "replay", str(short), "--model", model]) == 0
    text = capsys.readouterr().out.splitlines()
    assert f"replay of {short}: 1 of 1 ruling agrees" in text, text

    damaged = tmp_path / "damaged"
    shutil.copytree(resumed, damaged)
    (damaged / "audio.wav").write_bytes(b"RIFF" + bytes(40))
    samples, rate = read_wav(resumed / "audio-resumed-1.wav")
    write_wav(damaged / "audio-resumed-1.wav", samples[: 6 * rate], rate)
    assert main(["--data-dir", str(data), "replay", str(damaged), "--model", model]) == 1
    text = capsys.readouterr().out.splitlines()
    assert "stretch 2 of 2 (audio-resumed-1.wav): 1 of 1 ruling agrees" in text, text
    assert text[-1] == (f"replay of {damaged}, the whole game: 1 of 1 ruling agrees in the 1 stretch of 2 "
                        "re-judged; not re-judged: stretch 1 of 2"), text
    assert not any("1 rulings" in line or "1 of 2 stretches" in line for line in text), text


def test_a_truncated_recording_is_called_damaged_without_asking_to_record_it_again(
        recorded, resumed, capsys, tmp_path: Path) -> None:
    """A stretch's recording cut to 5000 bytes was "WAV file is truncated ...; re-record or re-export it":
    a game cannot be recorded again. Replay says the recording is damaged and what cannot be re-judged;
    the others are re-judged as ever."""
    import shutil

    folder, data, model, script = recorded
    cut = tmp_path / "cut"
    shutil.copytree(resumed, cut)
    wav = cut / "audio-resumed-1.wav"
    wav.write_bytes(wav.read_bytes()[:5000])
    assert main(["--data-dir", str(data), "replay", str(cut), "--model", model]) == 1
    out = capsys.readouterr().out
    text = out.splitlines()
    assert "stretch 1 of 2 (audio.wav): 5 of 5 rulings agree" in text, text
    line = next(x for x in text if x.startswith("stretch 2 of 2 (audio-resumed-1.wav): "))
    assert line.startswith(f"stretch 2 of 2 (audio-resumed-1.wav): not re-judged, because {wav} "
                           "is damaged (truncated: its header promises"), line
    assert line.endswith("are there), so this stretch cannot be re-judged"), line
    assert "re-record" not in out and "re-export" not in out, out

    # a game never resumed: the same, for the game
    alone = tmp_path / "alone"
    alone.mkdir()
    (alone / "log.jsonl").write_bytes((folder / "log.jsonl").read_bytes())
    (alone / "audio.wav").write_bytes((folder / "audio.wav").read_bytes()[:5000])
    assert main(["--data-dir", str(data), "replay", str(alone), "--model", model]) == 2
    err = capsys.readouterr().err
    assert f"{alone / 'audio.wav'} is damaged (truncated: " in err and "so the game cannot be re-judged" in err, err
    assert "re-record" not in err and "re-export" not in err, err


def test_a_resumed_game_hears_as_the_session_did_and_logs_each_stretchs_own_recording(
        recorded, capsys, tmp_path: Path) -> None:
    """A resume listened with play's defaults (here Vosk and the keyword model, not the session's Vosk
    alone) under the session's lag, unsaid; each stretch's record named audio.wav, not its own file,
    and two resumes within a second wrote the same file."""
    import shutil

    import numpy as np

    folder, data, model, script = recorded
    copy = tmp_path / "session"
    shutil.copytree(folder, copy)
    quiet = tmp_path / "quiet.wav"
    write_wav(quiet, np.zeros((16000, len(script.players)), dtype=np.int16), 16000)
    common = ["--data-dir", str(data), "play", "--resume", "--record", str(copy), "--input-file", str(quiet),
              "--model", model, "--quiet", "--text", "--no-keyboard"]
    assert main([*common, "--engine", "combined"]) == 2  # a change of engine is refused, not ignored
    err = capsys.readouterr().err
    assert "--resume continues the session as it was set up: --engine combined (the session's: vosk)" in err
    for n in (1, 2):
        assert main(common) == 0
        assert "; calls heard by Vosk; microphones: " in capsys.readouterr().out  # (Vosk alone, each mic its player's)
        resumes = [r.audio for _, r in gamelog.read(copy / "log.jsonl") if r.EVENT_TYPE == "table-resumed"]
        assert resumes[-1] == f"audio-resumed-{n}.wav" and (copy / resumes[-1]).is_file()
    assert read_wav(copy / "audio-resumed-1.wav")[0].shape == read_wav(copy / "audio-resumed-2.wav")[0].shape


def test_a_keyboard_session_is_not_resumed_with_listening(tmp_path: Path, capsys) -> None:
    """`--resume --input-file` on a keyboard-only session had heard the file with the best engine."""
    import numpy as np

    from voicesnap import events

    folder = tmp_path / "kb"
    folder.mkdir()
    (folder / "log.jsonl").write_text(events.dumps(TableSession(players=("Ann", "Ben"), seed=1, engine="none")) + "\n")
    common = ["--data-dir", str(tmp_path / "d"), "play"]
    quiet = tmp_path / "quiet.wav"
    write_wav(quiet, np.zeros(16000, dtype=np.int16), 16000)
    assert main([*common, "--resume", "--record", str(folder), "--input-file", str(quiet), "--quiet"]) == 2
    assert "this session is played by keyboard only" in capsys.readouterr().err
    assert main([*common, "--resume", "--record", str(folder), "--variant", "speed", "--quiet"]) == 2
    assert "--variant speed (the session's: classic)" in capsys.readouterr().err


def test_a_game_killed_mid_recording_can_still_be_replayed(recorded, capsys, tmp_path: Path) -> None:
    """A killed game leaves its audio under the recorder's temporary name, with the header's sizes
    never written; replay said the folder "holds no recorded audio", and nothing recovered it."""
    import shutil

    folder, data, model, script = recorded
    crashed = tmp_path / "crashed"
    shutil.copytree(folder, crashed)
    raw = bytearray((crashed / "audio.wav").read_bytes())
    data_at = raw.index(b"data")
    raw[4:8] = raw[data_at + 4:data_at + 8] = bytes(4)  # as libsndfile leaves a file it never closed
    (crashed / ".audio.wav.k1ll3d.tmp.wav").write_bytes(raw)
    (crashed / "audio.wav").unlink()
    code = main(["--data-dir", str(data), "replay", str(crashed), "--model", model, "--json"])
    said = capsys.readouterr()
    assert "recovered audio.wav" in said.err
    got = json.loads(said.out)
    assert code == 0 and got["total"] == got["agree"] == 5, got
    assert read_wav(crashed / "audio.wav")[0].shape == read_wav(folder / "audio.wav")[0].shape
    assert not list(crashed.glob(".audio.wav.*"))


def test_a_game_killed_mid_play_is_compared_only_as_far_as_its_log_reached(recorded, capsys, tmp_path: Path) -> None:
    """SIGKILL leaves a log without its end and audio running on past it: replay ruled the calls the live
    game never got to ("DIFF ... live: None replay: ...", with a false reason)."""
    folder, data, model, script = recorded
    killed = tmp_path / "killed"
    killed.mkdir()
    lines = (folder / "log.jsonl").read_text().splitlines(keepends=True)
    bob = next(i for i, line in enumerate(lines)
               if '"kind":"call"' in line and '"player":"bob"' in line)  # his snap, logged; his ruling not yet
    heard = json.loads(lines[bob])["heard"]
    (killed / "log.jsonl").write_text("".join(lines[: bob + 1]))
    samples, rate = read_wav(folder / "audio.wav")
    write_wav(killed / "audio.wav", samples[: int((heard + 0.3) * rate)], rate)  # the recorder runs ahead
    code, got = rejudge(killed, data, model, capsys)
    assert code == 0 and got["total"] == got["agree"] == 3, got  # the rulings before bob's snap
    assert any("without the game's end" in note and "only rulings on calls up to" in note
               for note in got["notes"]), got["notes"]
    assert not any(" s " in note or " s)" in note or " s:" in note or ".000" in note for note in got["notes"]), (
        got["notes"])  # times in words: "13.6 seconds", not "13.600 s"


def test_audio_shorter_than_the_log_is_compared_only_as_far_as_it_runs(recorded, capsys, tmp_path: Path) -> None:
    """An audio.wav cut short gave "3 of 5 rulings agree" and "the spotter did not hear 'snap' there" for
    every ruling past its end."""
    folder, data, model, script = recorded
    short = tmp_path / "short"
    short.mkdir()
    (short / "log.jsonl").write_bytes((folder / "log.jsonl").read_bytes())
    samples, rate = read_wav(folder / "audio.wav")
    write_wav(short / "audio.wav", samples[: 12 * rate], rate)  # bob's snap at 13.6 s and all after: gone
    code, got = rejudge(short, data, model, capsys)
    assert code == 0 and got["total"] == got["agree"] == 3, got
    assert any(note.startswith("audio.wav ends at 12 seconds, before what the game heard") for note in got["notes"])


def test_players_without_a_profile_now_are_named_in_replays_terms(tmp_path: Path, capsys) -> None:
    """Replay tells callers apart by the profiles in the data folder now, not the game's (a session folder
    keeps no voices): after a rename it said "0 of 4 rulings agree", each "the spotter did not hear 'snap'
    there", and on another data folder it gave play's advice (--channels, --engine none)."""
    from voicesnap.corpus import CORPUS_DIR

    from table_script import enroll

    data, folder = tmp_path / "data", tmp_path / "session"
    enroll(data, ("alice", "bob"))
    assert main(["--data-dir", str(data), "play", "--players", "alice,bob", "--engine", "enrolled", "--seed", "1",
                 "--pace", "1", "--input-file", str(CORPUS_DIR / "clean_alice.wav"), "--record", str(folder),
                 "--text", "--quiet", "--no-keyboard"]) == 0
    capsys.readouterr()
    code, got = rejudge(folder, data, "", capsys)
    assert code == 0 and got["total"] == got["agree"] > 0, got  # alice's calls, heard by her profile

    assert main(["--data-dir", str(data), "players", "rename", "alice", "alicia"]) == 0
    capsys.readouterr()
    code, got = rejudge(folder, data, "", capsys)
    assert code == 1 and got["agree"] == 0, got
    note = next(n for n in got["notes"] if "no voice profile" in n)
    assert note.startswith(f"alice has no voice profile in {data} now") and "bob" not in note, note
    assert "(voicesnap enroll alice)" in note and f"--data-dir DIR replay {folder}" in note, note
    assert all("cannot tell alice's calls by voice" in r["why"] for r in got["rulings"]), got["rulings"]

    assert main(["--data-dir", str(tmp_path / "elsewhere"), "replay", str(folder)]) == 2
    err = capsys.readouterr().err
    assert "alice and bob have no voice profile in" in err and "--data-dir DIR replay" in err, err
    assert "--channels" not in err and "--engine none" not in err, err


@pytest.mark.parametrize("name", ["audio.wav", "reference.flac"])
def test_a_recording_a_killed_process_left_unfinished_is_read_to_its_end(tmp_path: Path, name: str) -> None:
    """What AtomicSoundFile leaves when its process is killed: every block written is recovered (an
    unfinished FLAC, the echo reference, up to its last whole frame; it was left behind, and replay
    then said the game had been played without echo cancellation)."""
    import subprocess
    import sys

    import soundfile as sf

    from voicesnap.files import recover_sound_files

    code = ("import sys, time, numpy as np\n"
            "from voicesnap.files import AtomicSoundFile\n"
            f"f = AtomicSoundFile({str(tmp_path / name)!r}, 16000, 1, {name.rsplit('.', 1)[1].upper()!r})\n"
            "for i in range(20):\n    f.write(np.full(1600, i, np.int16))\n"
            "print('written', flush=True)\ntime.sleep(60)\n")
    run = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True,
                           cwd=Path(__file__).resolve().parents[1])
    try:
        assert run.stdout is not None and run.stdout.readline().strip() == "written"
    finally:
        run.kill()
        run.wait(timeout=10)
    assert not (tmp_path / name).exists()
    assert recover_sound_files(tmp_path) == [tmp_path / name]
    samples, rate = sf.read(tmp_path / name, dtype="int16", always_2d=True)
    assert rate == 16000 and list(tmp_path.iterdir()) == [tmp_path / name]
    if name.endswith(".wav"):
        assert samples.shape[0] == 20 * 1600 and samples[-1, 0] == 19
    else:  # FLAC keeps what reached the file: all but the frames still in the encoder
        assert 10 * 1600 <= samples.shape[0] <= 20 * 1600 and samples[0, 0] == 0 and samples[-1, 0] >= 10


def test_a_recording_with_fewer_channels_than_the_games_mics_is_not_taken_for_it(recorded, capsys,
                                                                                  tmp_path: Path) -> None:
    """A mono audio.wav in a per-player-mic game's folder was re-judged ("1 of 12 agree", every miss blamed
    on the spotter); audio too short for any ruling said "calls up to -1.174 s"."""
    folder, data, model, _script = recorded
    samples, rate = read_wav(folder / "audio.wav")
    assert samples.shape[1] > 1
    for name, audio in (("mono", samples[:, :1]), ("short", samples[: rate // 2])):
        copy = tmp_path / name
        copy.mkdir()
        (copy / "log.jsonl").write_bytes((folder / "log.jsonl").read_bytes())
        write_wav(copy / "audio.wav", audio, rate)
        if name == "mono":
            assert main(["--data-dir", str(data), "replay", str(copy), "--model", model]) == 2
            err = capsys.readouterr().err
            assert "has 1 channel," in err and "not this game's recording" in err, err
        else:
            code, got = rejudge(copy, data, model, capsys)
            note = next(n for n in got["notes"] if n.startswith("audio.wav ends at 0.5 seconds"))
            assert "too soon for any ruling" in note and " -" not in note, note


def test_replay_says_when_a_player_was_enrolled_again_since_the_game(tmp_path: Path, capsys) -> None:
    """Replay hears with today's profiles: a player enrolled again since the game changed the rulings
    ("0 of 4 rulings agree") with no word of why."""
    import time

    from voicesnap.corpus import CORPUS_DIR

    from table_script import enroll

    data, folder = tmp_path / "data", tmp_path / "session"
    enroll(data, ("alice", "bob"))
    assert main(["--data-dir", str(data), "play", "--players", "alice,bob", "--engine", "enrolled", "--seed", "1",
                 "--pace", "1", "--input-file", str(CORPUS_DIR / "clean_alice.wav"), "--record", str(folder),
                 "--text", "--quiet", "--no-keyboard"]) == 0
    logged = next(r for _n, r in gamelog.read(folder / "log.jsonl") if isinstance(r, TableSession))
    assert set(logged.voices) == {"alice", "bob"}
    capsys.readouterr()
    code, got = rejudge(folder, data, "", capsys)
    assert not any("enrolled again" in n for n in got["notes"]), got["notes"]
    time.sleep(1.1)  # (a profile's stamp is to the second)
    enroll(data, ("alice",))
    capsys.readouterr()
    code, got = rejudge(folder, data, "", capsys)
    note = next(n for n in got["notes"] if n.startswith("enrolled again since the game: alice"))
    assert "bob" not in note and "today's profile" in note, note


def test_replay_help_names_the_folders_it_takes(capsys) -> None:
    """`replay --help` named only the --record folder; a game played without --record is kept in the data
    folder's games/ too, and replay reads it (and says it kept no audio)."""
    with pytest.raises(SystemExit) as done:
        main(["replay", "--help"])
    assert done.value.code == 0
    text = " ".join(capsys.readouterr().out.split())
    assert "voicesnap play --record" in text and "the data folder's games/" in text, text
    assert "stretch by stretch" in text, text


def test_a_call_both_sides_heard_but_ruled_apart_says_what_each_ruled() -> None:
    """A replay heard bob's "snap pool" where the game did, yet ruled it a wrong call where the game gave
    him the pool: the reason said only "which the referee ruled otherwise" (a QA tester by ear)."""
    from voicesnap.cli.replay import compare

    call = TableStep("call", 7.7, player="bob", word="snap pool", onset=7.6, engine="combined")
    live = [call, rules.PoolWon(t=7.6, player="bob", cards=2, flip=5)]
    again = [call, rules.WrongCall(t=7.6, player="bob", kind="snap pool", from_pile=1, from_stack=0, pool=3,
                                   flip=5)]
    rows = {row["ruling"]: row["why"] for row in compare(live, again)}
    assert rows["pool-won"].endswith("and ruled: wrong call by bob, the pool then had 3 cards"), rows
    assert rows["wrong-call"].endswith("and ruled: bob won the pool, 2 cards"), rows
    # a call the other side heard and made nothing of says that
    rows = {row["ruling"]: row["why"] for row in compare(live, [call])}
    assert rows["pool-won"].endswith("at the same moment) and made no ruling of it"), rows


def test_a_replay_with_no_ruling_says_so_in_words() -> None:
    """A recorded game nobody called in was summed up as "0 of 0 rulings agree" (a QA table's per-player
    mic session, each of its stretches and the whole)."""
    from voicesnap.cli import replay

    assert replay._agreeing(0, 0) == "no ruling to compare: nobody called in the game or the replay"
    assert replay._agreeing(1, 1) == "1 of 1 ruling agrees" and replay._agreeing(3, 5) == "3 of 5 rulings agree"


def _two_player_track(path: Path, length: float, shouts: list[tuple[str, float]]) -> Path:
    """alice's and bob's microphones (one channel each), quiet but for their held-out "snap"s at ``shouts``."""
    import numpy as np

    from table_script import RATE, takes

    n = int(length * RATE)
    track = np.random.default_rng(1).normal(0, 32768 * 10 ** (-80 / 20), (n, 2))
    for k, (player, t) in enumerate(shouts):
        clip = takes(player, "snap")[k % 3].astype(float)
        a = int(t * RATE)
        track[a:a + len(clip), ("alice", "bob").index(player)] += clip[: n - a]
    write_wav(path, np.clip(track, -32768, 32767).astype(np.int16), RATE)
    return path


@pytest.fixture(scope="module")
def games(recorded, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A best-of-3 session heard from a 42 s two-microphone recording at a fast pace: game 1 (wrong calls at 3
    and 6 s) ends near 30 s, and game 2 (wrong calls at 35 and 38 s) is cut off when the recording ends; then
    `play --resume` on the same recording: game 2 goes on (wrong calls at 3 and 6 s on its clock) and ends the
    session. (No call falls in the second between two games: a call there is charged to the next game before
    its first card, at an onset that differs from run to run by some 20 ms, so its replay may not agree.)"""
    folder, data, model, script = recorded
    base = tmp_path_factory.mktemp("games")
    mic = _two_player_track(base / "mic.wav", 42, [("alice", 3), ("bob", 6), ("alice", 35), ("bob", 38)])
    session = base / "session"
    common = ["--input-file", str(mic), "--quiet", "--text", "--no-keyboard", "--record", str(session)]
    with contextlib.redirect_stdout(io.StringIO()):
        assert main(["--data-dir", str(data), "play", "--players", "alice,bob", "--seed", "7", "--pace", "0.08",
                     "--channels", "alice=0,bob=1", "--engine", "vosk", "--model", model, "--session", "best-of-3",
                     *common]) == 0
        assert main(["--data-dir", str(data), "play", "--resume", "--model", model, *common]) == 0
    return session


def test_a_sessions_replay_says_each_rulings_game(recorded, games, capsys) -> None:
    """A best-of-3 session's replay listed its rulings with no word of which game each was in (two "at 3
    seconds" rulings, one in game 1, one in game 2 after the resume) and summed up "the whole game"."""
    folder, data, model, script = recorded
    assert main(["--data-dir", str(data), "replay", str(games), "--model", model]) == 0
    text = capsys.readouterr().out.splitlines()
    assert text[0].startswith(f"replay of {games} (the session was resumed once, so it has 2 stretches"), text
    rows = [line for line in text if line.startswith("  same: ")]
    assert [line.split(", ")[0:2] for line in rows] == [
        ["  same: game 1", "at 3 seconds"], ["  same: game 1", "at 6 seconds"], ["  same: game 2", "at 35 seconds"],
        ["  same: game 2", "at 38 seconds"],  # stretch 1
        ["  same: game 2", "at 3 seconds"], ["  same: game 2", "at 6 seconds"]], text  # stretch 2, resumed in game 2
    assert text[-1] == f"replay of {games}, the whole session: 6 of 6 rulings agree", text


def test_a_replays_numbers_are_the_logs(recorded, games, capsys) -> None:
    """Every compared ruling's game, time, players and count is the log's own, every logged ruling is
    compared, and every record of the log reads back as written (gamelog.read, then written again)."""
    from voicesnap import events
    from voicesnap.tablelog import TableResumed

    folder, data, model, script = recorded
    code, got = rejudge(games, data, model, capsys)
    assert code == 0
    lines = (games / "log.jsonl").read_text().splitlines()
    records = gamelog.read(games / "log.jsonl")
    for number, record in records:
        assert json.loads(events.dumps(record)) == json.loads(lines[number - 1]), number
    want, game, stretch, offset = [], 0, 1, 0.0
    for _, r in records:
        if isinstance(r, rules.GameStarted):
            game += 1
        elif isinstance(r, TableResumed):
            stretch, offset = stretch + 1, r.offset
        elif isinstance(r, rules.RULINGS):
            who = ",".join(getattr(r, "players", ())) or r.player
            count = str(getattr(r, "cards", getattr(r, "pool", "")))
            want.append((stretch, game, round(r.t - offset, 4), r.EVENT_TYPE, who, count))
    assert [(r["stretch"], r["game"], r["t"], r["ruling"], r["who"], r["live"]) for r in got["rulings"]] == want
    wrong = got["rulings"][2]  # alice's in game 2
    assert wrong["calls"] == [{"player": "alice", "word": "snap", "onset": wrong["t"], "by": "voice",
                               "within_tie_window": True}], wrong
    assert wrong["because"].startswith("alice called 'snap' at 35 seconds; the call answered flip "), wrong
    assert ": no match; so the referee ruled a wrong call: alice paid " in wrong["because"], wrong


def test_a_keyboard_sessions_replay_gives_its_logged_rulings_and_why(tmp_path: Path, capsys) -> None:
    """A keyboard game has no audio to re-judge, and replay said only that: a player disputing one of its
    rulings got nothing. Now the log's rulings come, each with its game and why it was made."""
    import os
    import re
    import subprocess
    import sys

    folder = tmp_path / "kb"
    env = dict(os.environ, VOICESNAP_DATA_DIR=str(tmp_path / "d"))
    subprocess.run([sys.executable, "-m", "voicesnap", "play", "--players", "alice,bob", "--engine", "none",
                    "--quiet", "--text", "--seed", "4", "--pace", "0.001", "--session", "first-to-2", "--record",
                    str(folder)], input=b"qs", env=env, capture_output=True, timeout=60, check=True)
    assert main(["--data-dir", str(tmp_path / "d"), "replay", str(folder)]) == 2
    printed = capsys.readouterr()
    assert "played by keyboard only, so there is no audio to re-judge" in printed.err, printed
    # (both keys pressed before the first flip; their times are the machine's, a millisecond or so in)
    assert re.sub(r"at 0\.\d+ seconds", "at T seconds", printed.out).splitlines() == [
        "the session's 2 rulings, as the log gives them (not re-judged):",
        "  game 1, at T seconds, wrong call by alice, the pool then had 1 card",
        "    because: alice called 'snap' by keyboard at T seconds; no card had been turned yet in this game; so "
        "the referee ruled a wrong call: alice paid 1 face-down card into the pool",
        "  game 1, at T seconds, wrong call by bob, the pool then had 2 cards",
        "    because: bob called 'snap pool' by keyboard at T seconds; no card had been turned yet in this game; "
        "so the referee ruled a wrong call: bob paid 1 face-down card into the pool"], printed.out
    assert main(["--data-dir", str(tmp_path / "d"), "replay", str(folder), "--json"]) == 2
    got = json.loads(capsys.readouterr().out)
    assert [(r["game"], r["ruling"], r["who"], r["calls"][0]["by"]) for r in got["logged"]] == [
        (1, "wrong-call", "alice", "keyboard"), (1, "wrong-call", "bob", "keyboard")], got


def test_a_game_still_being_played_keeps_its_recording(recorded, capsys, tmp_path: Path) -> None:
    """`replay` (or `play --resume`) in a second terminal while the game went on "recovered" the recording the
    game was still writing: moved a copy of it into place and deleted it, so the game ended with "...tmp.wav ->
    audio.wav: No such file or directory" (exit 2) and its audio held only what was there at the replay. Now the
    recording is left to the game, replay says the game is still being played (with the rulings its log has so
    far, each with why), and resume refuses."""
    from voicesnap.files import AtomicSoundFile

    folder, data, model, script = recorded
    live = tmp_path / "live"
    live.mkdir()
    (live / "log.jsonl").write_bytes((folder / "log.jsonl").read_bytes())
    samples, rate = read_wav(folder / "audio.wav")
    recording = AtomicSoundFile(live / "audio.wav", rate, samples.shape[1])  # as the game records it
    recording.write(samples[: rate * 10])
    assert main(["--data-dir", str(data), "replay", str(live), "--model", model]) == 2
    printed = capsys.readouterr()
    assert f"the game in {live} is still being played (its recording audio.wav is still being written)" in printed.err
    assert "recovered" not in printed.err and printed.out.startswith("the game's 5 rulings, as the log gives them"), printed
    assert main(["--data-dir", str(data), "play", "--resume", "--record", str(live), "--model", model]) == 2
    assert "is still being played" in capsys.readouterr().err
    assert recording.tmp.is_file() and not (live / "audio.wav").exists()
    recording.write(samples[rate * 10:])
    recording.finish()  # the game goes on to its end, and its whole recording is kept
    assert read_wav(live / "audio.wav")[0].shape == samples.shape


def test_a_stretchs_own_note_names_its_stretch(recorded, games, capsys, tmp_path: Path) -> None:
    """A note only one stretch gives ("audio.wav ends at ...", "the log stops at ...") was printed bare
    between the stretches, its time on a clock the player had to guess; a note every stretch gives (the
    speech gate) is still said once, bare."""
    import shutil

    folder, data, model, script = recorded
    cut = tmp_path / "cut"
    shutil.copytree(games, cut)
    samples, rate = read_wav(cut / "audio.wav")
    write_wav(cut / "audio.wav", samples[: rate * 20], rate)
    main(["--data-dir", str(data), "replay", str(cut), "--model", model])
    text = capsys.readouterr().out.splitlines()
    assert "(speech gate: on, as in the game)" in text, text
    assert any(line.startswith("(stretch 1 of 2: audio.wav ends at 20 seconds, before what the game heard") for line in text), text


def test_a_ruling_with_no_logged_call_says_the_verdict_alone() -> None:
    """A ruling the log holds no call for (a pool tie whose flip is not in these records, an ignored call)
    explained itself as "so the referee ruled: ...", a "so" that followed nothing; the calls weighed come
    with the tie window's verdict on each."""
    from voicesnap.cli.replay import because

    settings = TableSession(players=("a", "b"), seed=1)
    records = [TableStep("call", 5.0, player="a", word="snap pool", onset=5.0),
               TableStep("call", 5.05, player="b", word="snap pool", onset=5.05),
               rules.PoolTied(t=5.0, players=("a", "b"), flip=3),
               rules.CallIgnored(t=6.0, player="b", kind="snap", reason="not a call in this game")]
    words, calls = because(records, 2, settings)
    assert words == ("a called 'snap pool' at 5 seconds; b called 'snap pool' 50 milliseconds later, within the "
                     "tie window (0.1 seconds); so the referee ruled: tie for the pool between a and b"), words
    assert [(c["player"], c["within_tie_window"]) for c in calls] == [("a", True), ("b", True)]
    assert because(records, 3, settings)[0] == "the referee ruled: b's call ignored: not a call in this game"


def test_a_note_some_stretches_give_is_said_for_each_of_them(tmp_path: Path, capsys) -> None:
    """A note two stretches of three gave was said once, named for the first: the second's went unsaid."""
    from voicesnap.cli.replay import Stretch, _Done, _report_stretches

    def done(k: int, notes: list[str]) -> _Done:
        return _Done(Stretch(k, 3, f"a{k}.wav", 0.0, [], []), [], notes)

    _report_stretches(tmp_path, [done(1, ["gate", "cut"]), done(2, ["gate", "cut"]), done(3, ["gate"])], False)
    text = capsys.readouterr().out.splitlines()
    assert text.count("(gate)") == 1 and "(stretch 1 of 3: cut)" in text and "(stretch 2 of 3: cut)" in text, text


def test_a_call_on_the_card_shown_at_a_resume_names_that_flip() -> None:
    """The first call after a `--resume`, on the card the game was stopped at, explained itself without the
    flip it answered: that flip is in the log before the stretch."""
    from voicesnap.cards import standard_deck
    from voicesnap.cli.replay import because

    settings = TableSession(players=("a", "b"), seed=1)
    seven = next(c for c in standard_deck() if c.spoken == "Seven of Hearts")
    before = [rules.Flipped(t=4.0, seat=1, player="b", card=seven, flip=9, match=True, pool_match=False)]
    records = [TableStep("call", 0.3, player="a", word="snap", onset=0.3),
               rules.SnapWon(t=5.3, player="a", kind="snap", piles=(0, 1), counts=(2, 2), cards=4, flip=9)]
    words, _ = because(records, 1, settings, offset=5.0, before=before)
    assert "the call answered flip 9, b's Seven of Hearts: a match" in words, words
