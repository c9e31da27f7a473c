"""`voicesnap play` from the command line: keyboard play, end and resume, bad options, the display.

The voice game from recorded microphones is played once, in tests/test_replay.py, where the
same recording is also re-judged."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf

from voicesnap import gamelog, rules
from voicesnap.cli import main
from voicesnap.corpus import CORPUS_DIR, load
from voicesnap.table import TableEnd, TableStep, rebuild


ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture()
def data(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("VOICESNAP_DATA_DIR", str(tmp_path / "data"))
    return tmp_path / "data"


def play(args: list[str], keys: bytes, data: Path, timeout: float = 60) -> subprocess.CompletedProcess:
    env = dict(os.environ, VOICESNAP_DATA_DIR=str(data))
    return subprocess.run([sys.executable, "-m", "voicesnap", "play", *args], input=keys, cwd=ROOT, env=env,
                          capture_output=True, timeout=timeout)


CLEAR = "\x1b[H\x1b[2J"  # the display's redraw: home, clear screen


def play_on_a_terminal(args: list[str], keys: bytes, data: Path, timeout: float = 120) -> tuple[int, list[str], str]:
    """`voicesnap play` with its output on a pseudo-terminal, as the table display is drawn only there:
    (exit status, the frames drawn, in order, each with "\n" line ends, stderr)."""
    import pty
    import select

    env = dict(os.environ, VOICESNAP_DATA_DIR=str(data), COLUMNS="80", LINES="24")
    main_fd, child_fd = pty.openpty()
    game = subprocess.Popen([sys.executable, "-m", "voicesnap", "play", *args], stdin=subprocess.PIPE,
                            stdout=child_fd, stderr=subprocess.PIPE, cwd=ROOT, env=env)
    os.close(child_fd)
    assert game.stdin is not None
    game.stdin.write(keys)
    game.stdin.close()
    got = bytearray()
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if select.select([main_fd], [], [], 0.5)[0]:
            try:
                chunk = os.read(main_fd, 65536)
            except OSError:  # EIO: the game closed the terminal's last end
                break
            if not chunk:
                break
            got += chunk
        elif game.poll() is not None and not select.select([main_fd], [], [], 0.2)[0]:
            break
    os.close(main_fd)
    code = game.wait(timeout=max(1.0, end - time.monotonic()))
    err = game.stderr.read().decode() if game.stderr else ""
    return code, got.decode().replace("\r\n", "\n").split(CLEAR), err


def test_a_piped_game_prints_each_event_once_as_a_line_of_words(data: Path) -> None:
    """stdout to a pipe (a log file, a braille display's logger) without --text printed the whole table
    after every change: its grid, suit symbols and clock, each ruling again under every later card."""
    got = play(["--players", "Alice,Bob", "--engine", "none", "--quiet", "--seed", "3", "--pace", "0.002"],
               b"q", data, timeout=120)  # Alice's wrong call, then the pace plays the game out
    assert got.returncode == 0, got.stderr.decode()
    out = got.stdout.decode()
    assert "\x1b" not in out and "down   up" not in out and "pool: " not in out, out[:2000]
    assert not any(ch in out for ch in "\u2660\u2665\u2666\u2663"), out[:2000]  # cards in words
    assert out.count("Wrong call by Alice") == 1, out[:2000]
    assert "Call keys: Alice q for snap" in out and "Bob, Jack of Diamonds" in out, out[:2000]


def test_keyboard_play_end_game_then_resume_to_the_end(data: Path, tmp_path: Path) -> None:
    folder = tmp_path / "kb"
    # Alice (q) calls snap at once (wrong: nothing is showing), then Esc ends the game.
    first = play(["--players", "Alice,Bob", "--engine", "none", "--text", "--quiet", "--seed", "3",
                  "--pace", "5", "--record", str(folder)], b"q\x1b", data)
    assert first.returncode == 0, first.stderr.decode()
    out = first.stdout.decode()
    assert "Wrong call by Alice" in out and "voicesnap play --resume" in out
    records = [ev for _, ev in gamelog.read(folder / "log.jsonl")]
    assert [r.reason for r in records if isinstance(r, TableEnd)] == ["ended"]
    state = rebuild(records).game
    assert len(state.pool) == 1 and state.total() == 52  # the wrong call's card is in the pool
    # Resume: the same table, played out by the pace alone (nobody calls) to a winner.
    second = play(["--resume", "--record", str(folder), "--engine", "none", "--text", "--quiet", "--pace", "0.002"],
                  b"", data, timeout=120)
    assert second.returncode == 0, second.stderr.decode()
    # each count with its noun ("pool 1 cards" was read aloud so)
    assert (f"resuming {folder}: game 1, before its first flip (Alice 25 cards, Bob 26 cards, pool 1 card)"
            in second.stdout.decode())
    said = second.stdout.decode()
    # once (it was printed again as "Alice wins the session (1 game(s))."), in words with no "(s)"
    assert said.count("wins the session") == 1 and "wins the session after 1 game. Scores: " in said, said
    assert "(s)" not in said
    records = [ev for _, ev in gamelog.read(folder / "log.jsonl")]
    over = [r for r in records if isinstance(r, rules.GameOver)]
    assert len(over) == 1 and sum(over[0].cards) + 0 <= 52
    assert gamelog.replay(folder / "log.jsonl").total() == 52


@pytest.mark.parametrize("args, message", [
    (["--players", "Alice"], "2 to 6 players"),
    (["--players", "Alice,alice"], "different name"),
    (["--players", "Alice,,Bob"], "has an empty name between commas"),  # (was dropped unsaid)
    (["--players", "Ann/Bo,Cy"], "--players: player name 'Ann/Bo' is not usable"),  # (enroll would refuse it)
    (["--players", "A,B", "--variant", "speeed"], "Did you mean"),
    (["--players", "A,B", "--session", "best-of-zero"], "session format"),
    (["--players", "A,B", "--pace", "-1"], "--pace"),
    (["--players", "A,B", "--channels", "A=0,Zed=1", "--engine", "none"], "not in --players"),
    (["--players", "Ann,Ben", "--channels", "ann=0,ANN=1", "--engine", "none"], "--channels names Ann twice"),
    (["--players", "A,B", "--channels", "A=0,B=0", "--engine", "none"], "--channels gives A and B the same input "
                                                                         "channel, 0; give each their own"),
    (["--players", "A,B", "--channels", "A=0,B=1,", "--engine", "none"], "--channels A=0,B=1, has an empty entry "
                                                                          "between commas"),
    (["--resume"], "no session to resume"),
    # with the way out (it said only "no game log at /nonexistent/log.jsonl")
    (["--resume", "--record", "/nonexistent"], "--record /nonexistent holds no game to resume (no log.jsonl there): "
                                               "give the folder a game was played with --record, or leave --record"),
    (["--players", "A,B", "--strict-calls"], "--strict-calls is for one microphone per player"),
    (["--players", "A,B", "--channels", "A=0,B=1", "--strict-calls", "--engine", "none"], "--engine none hears none"),
    (["--players", "A,B", "--pace", "nan"], "--pace nan is impossible"),
    (["--players", "A,B", "--tie-window", "-0.1"], "--tie-window: tie window -0.1 s is impossible"),
    (["--players", "A,B", "--decision-window", "-1"], "--decision-window -1.0 is impossible"),
    (["--players", "A,B", "--decision-window", "0.05"], "shorter than --tie-window"),
    (["--players", "A,B", "--session", "first-to--2"], "session format"),
    # a model the player named that is not there is an error, never quietly played without
    (["--players", "A,B", "--model", "/nonexistent/vosk-model"], "/nonexistent/vosk-model is not a small English"),
    (["--players", "Zed,Yan", "--engine", "enrolled"], "none of Zed, Yan is enrolled"),
])
def test_impossible_options_get_a_clear_message(args: list[str], message: str, data: Path,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["play", *args, "--quiet", "--no-keyboard"]) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err


def test_a_refused_start_leaves_no_empty_record_folder(data: Path, tmp_path: Path,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    """--record's folder is made early (to check it can be written), and a start refused after that (a model
    that is not there) left it empty: resume and replay then said it "holds no game". A folder the player
    made beforehand is theirs, and kept."""
    args = ["play", "--players", "A,B", "--model", str(tmp_path / "no-model"), "--quiet", "--no-keyboard", "--record"]
    assert main([*args, str(tmp_path / "game")]) == 2
    assert "is not a small English" in capsys.readouterr().err
    assert not (tmp_path / "game").exists()
    (tmp_path / "mine").mkdir()
    assert main([*args, str(tmp_path / "mine")]) == 2
    assert (tmp_path / "mine").is_dir()


@pytest.mark.parametrize("args, message", [
    (["--volume", "5"], "speech volume 5.0 is out of range"),
    (["--rate", "-5"], "speech rate -5 is out of range"),
    (["--voice", "nosuchvoice"], "--voice 'nosuchvoice' is not an espeak-ng voice"),
])
def test_speech_options_that_cannot_be_used_stop_play_before_the_game(args: list[str], message: str, data: Path,
                                                                      capsys: pytest.CaptureFixture[str]) -> None:
    """Not a whole game of printed announcements for a player who asked for a voice."""
    from voicesnap import speech

    if args[0] == "--voice" and not speech.available_voices():
        pytest.skip("no espeak-ng voices to check a voice name against")
    assert main(["play", "--players", "A,B", "--engine", "none", "--no-keyboard", *args]) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err
    assert not (data / "games").exists()  # stopped before a game folder was made


def test_seats_find_their_profiles_whatever_the_case(data: Path) -> None:
    import voicefixtures

    from voicesnap import voices
    from voicesnap.cli import play as P

    for name in ("alice", "bob"):
        voices.save_profile(voicefixtures.profile(name), str(data))
    assert P.enrolled_names(data, ("Alice", "BOB", "Cara")) == {"Alice": "alice", "BOB": "bob"}
    assert [p.name for p in P._profiles(data, ("Alice", "BOB", "Cara"))] == ["Alice", "BOB"]  # named as seated
    assert P.offer_enrollment(data, ("Alice", "BOB", "Cara"), ask=False) == ["Cara"]


def test_vosk_alone_on_one_mic_points_to_the_combined_engine(data: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import voicefixtures

    from voicesnap import models, voices

    try:
        models.find_model("en", None, data)
    except Exception:  # noqa: BLE001 (any way of not having one)
        pytest.skip("no Vosk English model (set VOICESNAP_VOSK_MODEL; .ci/run fetches one)")
    voices.save_profile(voicefixtures.profile("alice"), str(data))
    assert main(["play", "--players", "Alice,Bob", "--engine", "vosk", "--quiet", "--no-keyboard"]) == 2
    err = capsys.readouterr().err
    assert "use --engine combined" in err and "enroll Bob first" in err and "enroll Alice" not in err


def test_without_the_vosk_model_play_says_voice_commands_are_not_heard(data: Path, monkeypatch: pytest.MonkeyPatch,
                                                                        capsys: pytest.CaptureFixture[str]) -> None:
    import voicefixtures

    from voicesnap import voices
    from voicesnap.keyword import load_keyword_model

    if load_keyword_model() is None:
        pytest.skip("no keyword model (voicesnap models download keyword; .ci/run installs it)")
    model = os.environ.get("VOICESNAP_VOSK_MODEL")
    monkeypatch.delenv("VOICESNAP_VOSK_MODEL", raising=False)
    for name in ("alice", "bob"):
        voices.save_profile(voicefixtures.profile(name), str(data))
    wav = ROOT / "tests" / "fixtures" / "audio" / "corpus" / "clean_alice.wav"
    assert main(["play", "--players", "alice,bob", "--input-file", str(wav), "--quiet", "--text", "--no-keyboard",
                 "--pace", "1", "--seed", "3"]) == 0
    out = capsys.readouterr().out
    assert "calls heard by the keyword model" in out and "voice commands such as 'dealer status'" in out
    assert "voicesnap models download" in out
    # with the model installed and another engine chosen, downloading it again was the advice
    if model:
        monkeypatch.setenv("VOICESNAP_VOSK_MODEL", model)
        assert main(["play", "--players", "alice,bob", "--input-file", str(wav), "--quiet", "--text", "--no-keyboard",
                     "--pace", "1", "--seed", "3", "--engine", "keyword"]) == 0
        out = capsys.readouterr().out
        assert "--engine combined" in out and "models download" not in out, out


def test_an_input_device_the_player_named_that_cannot_be_opened_stops_play(data: Path,
                                                                           capsys: pytest.CaptureFixture[str]) -> None:
    """Not a game by keyboard that nobody asked for (--engine auto falls back only where no device was named)."""
    from voicesnap import models

    try:
        models.find_model("en", None, data)
    except Exception:  # noqa: BLE001 (any way of not having one)
        pytest.skip("no Vosk English model (set VOICESNAP_VOSK_MODEL; .ci/run fetches one)")
    assert main(["play", "--players", "A,B", "--channels", "A=0,B=1", "--input", "99", "--quiet",
                 "--no-keyboard"]) == 2
    err = capsys.readouterr().err
    assert "--input" in err and "Traceback" not in err
    assert not (data / "games").exists() or not any((data / "games").iterdir())


def test_the_keys_printed_name_each_seats_own_call_in_silent_and_animal_snap(data: Path) -> None:
    """The keys were printed before the game as in Classic Snap ("q=snap"), while in Silent Snap q sends a
    slam and in Animal Snap the player's own noise. With --text (for a screen reader) they are words: the
    lines "Alice: q=snap a=snap pool" and "-=slower +=faster >=louder" were read aloud as "q equals snap",
    "minus equals slower plus equals faster greater equals louder"."""
    from voicesnap import variants

    for variant, seat_word in (("silent", lambda _i: "slam"), ("animal", None), ("classic", lambda _i: "snap")):
        game = variants.create(variant, ("Alice", "Bob"), 3)
        words = [seat_word(i) if seat_word else game.call_words(i)["snap"] for i in range(2)]
        for shown in ("--text", "display"):
            args = ["--players", "Alice,Bob", "--engine", "none", "--quiet", "--seed", "3", "--variant", variant]
            if shown == "display":  # drawn only on a terminal, the keys under each frame: the game played out
                code, frames, err = play_on_a_terminal([*args, "--pace", "0.002"], b"", data)
                assert code == 0, err
                out = frames[-1]
            else:
                run = play([*args, "--text"], b"\x1b", data)
                assert run.returncode == 0, run.stderr.decode()
                out = run.stdout.decode()
            if shown == "--text":
                pool = variant != "silent"  # no pool key in Silent Snap (the slam is both)
                seats = "; ".join(f"{name} {key} for {word}" + (f", {pk} for snap pool" if pool else "")
                                  for (name, key, pk), word in zip((("Alice", "q", "a"), ("Bob", "w", "s")), words))
                assert f"Call keys: {seats}.\n" in out, (variant, out)
                assert out.count("Command keys: p pause, l repeat, i status, k score, minus slower, plus faster, "
                                 "greater-than louder, less-than quieter, question mark help, Escape end game, "
                                 "space flip.\n") == 1, out
                assert not any(f"={w}" in out for w in (*words, "snap pool", "flip", "slower", "help")), (variant, out)
                continue
            for i, (name, key) in enumerate((("Alice", "q"), ("Bob", "w"))):
                assert f"{name}: {key}={words[i]}\n" in out or f"{name}: {key}={words[i]} " in out, (variant, out)
            # only the keys the variant has: no slap key but in Slapjack, no pool key in Silent Snap
            assert "z=slap" not in out and ("a=snap pool" in out) == (variant != "silent"), (variant, out)
            assert out.count("space=flip") == 1, out


def test_a_channel_or_an_engine_that_cannot_hear_the_input_file_stops_play(data: Path,
                                                                          capsys: pytest.CaptureFixture[str]) -> None:
    """--channels naming a channel the input lacks started a game in which that player was never heard;
    one that leaves a player out says so; --engine none with --input-file had heard the file with the best
    engine, against its help ("keyboard only")."""
    wav = str(ROOT / "tests" / "fixtures" / "audio" / "corpus" / "clean_alice.wav")
    base = ["play", "--players", "A,B", "--input-file", wav, "--quiet", "--no-keyboard", "--text", "--seed", "1"]
    assert main([*base, "--engine", "none"]) == 2
    assert "--engine none hears nothing" in capsys.readouterr().err
    assert main(["play", "--players", "A,B", "--channels", "A=0,B=1", "--engine", "none", "--quiet", "--text"]) == 2
    assert "--engine none hears none" in capsys.readouterr().err  # (the mics were dropped unsaid)
    try:
        from voicesnap.keyword import load_keyword_model

        if load_keyword_model(None, data) is None:
            from voicesnap import models

            models.find_model("en", None, data)
    except Exception:  # noqa: BLE001 (any way of not having one)
        pytest.skip("no Vosk model and no keyword model: nothing hears per-player mics")
    assert main([*base, "--channels", "A=0,B=3"]) == 2
    assert "--channels gives B channel 3, and" in capsys.readouterr().err
    # with the keyboard on (stdin a pipe, as in the keyboard games above) B is told to use it; with
    # --no-keyboard B could never call: refused (test_a_player_without_a_mic_and_no_keyboard_is_refused)
    keyed = [a for a in base[1:] if a != "--no-keyboard"]
    done = play([*keyed, "--channels", "A=0", "--session", "best-of-1"], b"", data, timeout=120)
    assert done.returncode == 0, done.stderr.decode()
    assert "no microphone for B in --channels: their calls need the keyboard" in done.stdout.decode()
    # which mic is whose, printed before the first card (it was never said)
    assert "; microphones: A on channel 0\n" in done.stdout.decode(), done.stdout.decode()[:600]


def test_a_second_game_started_in_the_same_second_gets_its_own_folder(tmp_path: Path,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    from voicesnap.cli import play as P

    monkeypatch.setattr(P.time, "strftime", lambda fmt: "20261206-120000")
    assert P._new_game_folder(tmp_path) == tmp_path / "games" / "20261206-120000"
    (tmp_path / "games" / "20261206-120000").mkdir(parents=True)
    assert P._new_game_folder(tmp_path) == tmp_path / "games" / "20261206-120000-2"  # not "already holds a log"


def test_strict_calls_name_the_players_who_must_enroll_first(data: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from voicesnap import models

    try:
        models.find_model("en", None, data)
    except Exception:  # noqa: BLE001 (any way of not having one)
        pytest.skip("no Vosk English model (set VOICESNAP_VOSK_MODEL; .ci/run fetches one)")
    assert main(["play", "--players", "A,B", "--channels", "A=0,B=1", "--strict-calls", "--quiet",
                 "--no-keyboard"]) == 2
    err = capsys.readouterr().err
    # each with the command that enrolls them on their own mic (it said "voicesnap enroll NAME")
    assert ("enroll A and B first (voicesnap enroll A --channel 0; voicesnap enroll B --channel 1)" in err
            and "Traceback" not in err), err


def test_the_table_display_fits_80_columns(data: Path, tmp_path: Path) -> None:
    code, frames, err = play_on_a_terminal(["--players", "Alice,Bob,Cara", "--engine", "none", "--quiet", "--seed",
                                            "9", "--pace", "0.002", "--record", str(tmp_path / "d")], b"", data)
    assert code == 0, err
    lines = [line for frame in frames for line in frame.splitlines()]
    assert any(line.startswith("   pool:") for line in lines)
    table = [line for line in lines if not line.startswith("log in ")]
    assert all(len(line) <= 80 for line in table), max(table, key=len)


def test_a_best_of_three_session_plays_to_a_winner_and_the_winner_deals(data: Path, tmp_path: Path) -> None:
    """Played with the table display, whose last drawing must count the last game won (its wins
    column was read once per game, so at a session's end it lagged one game behind the score)."""
    from voicesnap.session import GameScored, SessionOver

    folder = tmp_path / "bo3"
    code, frames, err = play_on_a_terminal(["--players", "Alice,Bob,Cara", "--engine", "none", "--quiet", "--seed",
                                            "4", "--pace", "0.001", "--session", "best-of-3", "--record",
                                            str(folder)], b"", data)
    assert code == 0, err
    out = "".join(frames)
    records = [ev for _, ev in gamelog.read(folder / "log.jsonl")]
    started = [r for r in records if isinstance(r, rules.GameStarted)]
    scored = [r for r in records if isinstance(r, GameScored)]
    over = [r for r in records if isinstance(r, SessionOver)]
    assert 2 <= len(started) == len(scored) and len(over) == 1
    assert max(over[0].scores) == 2 and over[0].winner == scored[-1].winner
    for prev, nxt in zip(scored, started[1:]):  # the winner of a game deals the next
        assert nxt.players[nxt.dealer] == prev.winner
    assert f"{over[0].winner} wins the session" in out
    # the table's title in words ("voicesnap classic, game 1 (best-of-3)" was ids a screen reader spells out)
    assert "voicesnap: Classic Snap, game 2 of a session of best of 3 games" in out and "best-of-3" not in out, out[:600]
    # printed once, in the announcer's words (the display lists no session's end of its own)
    assert out.count("wins the session") == 1
    assert f"{over[0].winner} wins the session after {over[0].games} games. Scores: " in out
    lines = out.splitlines()
    header = max(i for i, line in enumerate(lines) if line.split()[:1] == ["player"])
    rows = {}
    for line in lines[header + 1:header + 4]:  # the three seat rows of the last table drawn
        cells = line.lstrip(" >").split()
        rows[cells[0]] = int(cells[-1])
    assert rows == dict(zip(("Alice", "Bob", "Cara"), over[0].scores)), lines[header:]


def test_a_missing_microphone_names_plays_own_option(data: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The fix must name --input (play's option), not listen's --device."""
    from voicesnap import models

    model = os.environ.get("VOICESNAP_VOSK_MODEL")
    if not model or not models.is_model(model):
        pytest.skip("no Vosk English model (VOICESNAP_VOSK_MODEL): play needs a spotter before it opens the mic")
    code = main(["play", "--players", "A,B", "--engine", "vosk", "--channels", "A=0,B=1", "--model", model,
                 "--input", "no such microphone 4321", "--quiet", "--no-keyboard"])
    err = capsys.readouterr().err
    assert code == 2 and "Traceback" not in err
    assert "pick one with --input," in err and "--device" not in err


@pytest.mark.vosk_model
@pytest.mark.parametrize("mics", ["one per player", "one for the table"])
def test_a_pause_said_just_before_a_card_stops_that_card(data: Path, tmp_path: Path, mics: str) -> None:
    """"dealer pause" is decided only once its last word is over; a card due in between was turned.

    A fixture voice's "dealer pause" starts 2.71 s into the file and ends 3.38 s; at one card a
    second from 1.0 s, the card due at 3.0 s must wait for it, and then never turn (paused). On one
    microphone play wraps the spotter in the pool and echo wrappers (whose inner spotter is their
    ``spotter``): the hold first worked on per-player microphones only.
    """
    from voicesnap import models

    model = os.environ.get("VOICESNAP_VOSK_MODEL")
    if not model or not models.is_model(model):
        pytest.skip("no Vosk English model (VOICESNAP_VOSK_MODEL; .ci/run fetches one)")
    fx = load(CORPUS_DIR / "commands_1.json")
    said = next(s for s in fx.segments if s.text == "dealer pause")
    samples, rate = fx.read(), fx.rate
    cut = int(said.onset - 0.71 * rate)  # the word 2.71 s in, after 2 s of quiet
    mono = np.concatenate([np.zeros(2 * rate, np.int16), samples[cut:, 0], np.zeros(3 * rate, np.int16)])
    wav = tmp_path / "pause.wav"
    folder = tmp_path / "p"
    if mics == "one per player":
        sf.write(wav, np.stack([mono, np.zeros_like(mono)], axis=1), rate, subtype="PCM_16")
        table = ["--players", "Alice,Bob", "--channels", "Alice=0,Bob=1", "--engine", "vosk"]
    else:
        from table_script import enroll

        sf.write(wav, mono, rate, subtype="PCM_16")
        enroll(data, ("cara", "dev"))
        table = ["--players", "cara,dev", "--engine", "combined"]
    run = play([*table, "--model", model, "--input-file", str(wav), "--pace", "1", "--text", "--quiet", "--seed",
                "3", "--no-keyboard", "--record", str(folder)], b"", data, timeout=120)
    assert run.returncode == 0, run.stderr.decode()
    records = [ev for _, ev in gamelog.read(folder / "log.jsonl")]
    pause = [r for r in records if isinstance(r, TableStep) and r.word == "dealer pause"]
    assert len(pause) == 1 and abs(pause[0].onset - 2.71) < 0.2, pause
    assert [r.t for r in records if isinstance(r, rules.Flipped)] == [1.0, 2.0]


def test_the_hint_for_players_with_no_profile_gives_each_their_command(data: Path, tmp_path: Path) -> None:
    """Only the first player without a profile got a command to paste, and a name with a space broke it."""
    import shlex

    wav = ROOT / "tests" / "fixtures" / "audio" / "corpus" / "clean_alice.wav"
    run = play(["--players", "Mary Ann,Zed Q", "--engine", "enrolled", "--input-file", str(wav), "--text",
                "--quiet", "--no-keyboard", "--record", str(tmp_path / "g")], b"", data, timeout=120)
    line = next(x for x in run.stdout.decode().splitlines() if x.startswith("no voice profile for"))
    given = line[line.index("(or enroll later: ") + len("(or enroll later: "):].rstrip(")").split("; ")
    assert [shlex.split(c) for c in given] == [["voicesnap", "enroll", "Mary Ann"], ["voicesnap", "enroll", "Zed Q"]]


def test_verbosity_ranks_prints_flips_as_ranks_only(data: Path, tmp_path: Path) -> None:
    """--verbosity ranks: what --text prints is what is spoken, "Eight", not "Alice, Eight of Hearts"."""
    from voicesnap import session  # noqa: F401  (registers game-scored for gamelog.read)
    from voicesnap.cards import Rank

    folder = tmp_path / "ranks"
    run = play(["--players", "Alice,Bob", "--engine", "none", "--text", "--quiet", "--seed", "5",
                "--pace", "0.002", "--verbosity", "ranks", "--record", str(folder)], b"", data, timeout=120)
    assert run.returncode == 0, run.stderr.decode()
    flips = [ev for _, ev in gamelog.read(folder / "log.jsonl") if isinstance(ev, rules.Flipped)]
    lines = set(run.stdout.decode().splitlines())
    rank_names = {r.name.capitalize() for r in Rank}
    assert flips and {f.card.face_name for f in flips} <= rank_names
    assert {f.card.face_name for f in flips} <= lines  # each rank printed alone on its line
    assert not any(line.startswith(("Alice, ", "Bob, ")) for line in lines)


def test_a_played_log_reads_in_a_fresh_process_with_gamelog_alone(data: Path, tmp_path: Path) -> None:
    """Reading a session log must not depend on which modules the reader imported (it once said 'damaged')."""
    folder = tmp_path / "fresh"
    run = play(["--players", "Alice,Bob", "--engine", "none", "--text", "--quiet", "--seed", "2",
                "--pace", "0.002", "--record", str(folder)], b"", data, timeout=120)
    assert run.returncode == 0, run.stderr.decode()
    code = ("import sys; from voicesnap import gamelog; "
            "print(len(gamelog.read(sys.argv[1])), gamelog.replay(sys.argv[1]).total())")
    read = subprocess.run([sys.executable, "-c", code, str(folder / "log.jsonl")], cwd=ROOT,
                          capture_output=True, text=True, timeout=60)
    assert read.returncode == 0, read.stderr
    count, total = read.stdout.split()
    assert int(count) > 10 and int(total) == 52


def test_the_offer_to_enroll_a_missing_player_is_said_aloud(data: Path, monkeypatch: pytest.MonkeyPatch,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    """`play` waited on a printed question ("Enroll now? [Y/n]") that a player who plays by ear never heard."""
    from voicesnap.cli import enroll as E
    from voicesnap.cli import play as P

    played: list[int] = []
    monkeypatch.setattr(E, "_play", lambda sound: played.append(len(sound)))  # the speaker: what reached it
    asked: list[str] = []
    monkeypatch.setattr("builtins.input", lambda prompt="": asked.append(prompt) or "n")
    assert P.offer_enrollment(data, ("Cara",), ask=True, speak=True) == ["Cara"]
    assert played and played[0] > 16000  # a rendered sentence (espeak-ng), over a second long
    # asked once on screen: the spoken words were printed too, then the question again in other words
    assert "Press Enter to enroll" not in capsys.readouterr().out and asked == [
        "Cara has no voice profile. Enroll now (about two minutes)? [Y/n] "]
    played.clear()
    assert P.offer_enrollment(data, ("Cara",), ask=True, speak=False) == ["Cara"] and not played


def test_channels_name_seats_in_any_case() -> None:
    """`--channels ann=0` for seat Ann was refused as "not in --players", though profiles and
    `voicesnap players` take a name in any case."""
    from voicesnap.cli.play import parse_channels

    assert parse_channels("ann=0, BEN=1", ("Ann", "Ben")) == {"Ann": 0, "Ben": 1}


@pytest.mark.vosk_model
def test_a_player_without_a_mic_and_no_keyboard_is_refused(data: Path, tmp_path: Path,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    """They were told "their calls need the keyboard", and the game went on with the keyboard off."""
    import table_script

    model = table_script.model_or_skip()
    quiet = tmp_path / "quiet.wav"
    sf.write(quiet, np.zeros((16000, 2), dtype=np.int16), 16000)
    args = ["play", "--players", "Ann,Ben", "--channels", "Ann=0", "--engine", "vosk", "--model", model,
            "--input-file", str(quiet), "--quiet", "--text"]
    assert main([*args, "--no-keyboard"]) == 2
    assert "no microphone for Ben in --channels and --no-keyboard: they could never call" in capsys.readouterr().err


def _events(folder: Path) -> list:
    return [e for _n, e in gamelog.read(folder / "log.jsonl")]


def test_animal_snap_gives_each_player_the_noise_they_enrolled_and_says_it(data: Path, tmp_path: Path) -> None:
    """Animal Snap dealt noises by seat alone (moo, woof, meow, ...): alice, who enrolled "woof", was given
    "moo", and her own call was taken as bob's noise, a wrong call. Nor was anyone told their noise aloud."""
    from voicefixtures import PLAYERS_DIR

    animal = PLAYERS_DIR / "animal"
    for name, noise in (("alice", "woof"), ("bob", "meow")):
        takes = [str(animal / f"{name}_{noise}_{k}.wav") for k in range(1, 6)]
        assert main(["enroll", name, "--word", noise, "--no-pool", "--no-speech", "--contrast-takes", "0",
                     "--from-files", *takes]) == 0
    base = ["--players", "Alice,Bob,Cara", "--variant", "animal", "--engine", "none", "--text", "--quiet",
            "--seed", "5"]
    run = play([*base, "--record", str(tmp_path / "g")], b"\x1b", data)
    assert run.returncode == 0, run.stderr.decode()
    out = run.stdout.decode()
    assert "Call keys: Alice q for woof, a for snap pool; Bob w for meow, s for snap pool; Cara e for moo, d for snap pool." in out, out
    assert "Calls: Alice woof, Bob meow, Cara moo." in out, out  # (the start's line, spoken with --quiet off)
    started = next(e for e in _events(tmp_path / "g") if type(e).__name__ == "GameStarted")
    assert dict(started.config) == {"Alice": "woof", "Bob": "meow", "Cara": "moo"}
    # --animals overrides, in any case of the seat's name; a clash and a word that is a call are refused
    run = play([*base, "--animals", "cara=oink,ALICE=quack"], b"\x1b", data)
    assert "Calls: Alice quack, Bob meow, Cara oink." in run.stdout.decode(), run.stdout.decode()
    for bad, said in (("Bob=woof", "two players share an animal noise"), ("Alice=snap", "cannot be an animal noise"),
                      ("Dan=moo", "'Dan', who is not in --players"), ("Alice", "should look like Alice=woof"),
                      ("Alice=dealer faster", "starts like a voice command"),  # (it was heard as the command)
                      ("Alice=moo!,Cara=moo", "two players share an animal noise"),  # (one noise, punctuated)
                      ("alice=quack,ALICE=baa", "names Alice twice")):
        run = play([*base, "--animals", bad], b"\x1b", data)
        assert run.returncode == 2 and said in run.stderr.decode(), (bad, run.stderr.decode())
    run = play(["--players", "Alice,Bob", "--engine", "none", "--animals", "Alice=moo"], b"\x1b", data)
    assert run.returncode == 2 and "add --variant animal" in run.stderr.decode()
    # a resumed session keeps its noises, and says them again; the session's own noise given again is no clash
    run = play(["--resume", "--record", str(tmp_path / "g"), "--animals", "Alice=moo"], b"\x1b", data)
    err = run.stderr.decode()
    assert run.returncode == 2 and "--animals Alice=moo (the session's: Alice=woof,Bob=meow,Cara=moo)" in err, err
    run = play(["--resume", "--record", str(tmp_path / "g"), "--animals", "alice=Woof", "--engine", "none", "--text",
                "--quiet"], b"\x1b", data)
    assert run.returncode == 0 and "Calls: Alice woof, Bob meow, Cara moo." in run.stdout.decode(), run.stderr.decode()


def test_picture_snap_deals_the_deck_named(data: Path, tmp_path: Path) -> None:
    """The fruit deck shipped with voicesnap, and no option chose it: every Picture Snap game was farm."""
    from voicesnap.cards import picture_deck

    fruit = {c.name for c in picture_deck("fruit")}
    from voicesnap import variants

    run = play(["--players", "Alice,Bob", "--variant", "picture", "--deck", "Fruit", "--engine", "none", "--text",
                "--quiet", "--seed", "2", "--record", str(tmp_path / "g")], b"\x1b", data)
    assert run.returncode == 0, run.stderr.decode()
    started = next(e for e in _events(tmp_path / "g") if type(e).__name__ == "GameStarted")
    game = variants.from_started(started)  # (as replay and --resume deal it again)
    names = {e.card.name for k in range(1, 11) for e in game.flip(0.1 * k) if isinstance(e, rules.Flipped)}
    assert names and names <= fruit, names
    # --resume with the session's own deck goes on; another is refused in the player's own terms
    run = play(["--resume", "--record", str(tmp_path / "g"), "--deck", "Fruit", "--text", "--quiet"], b"\x1b", data)
    assert run.returncode == 0, run.stderr.decode()
    run = play(["--resume", "--record", str(tmp_path / "g"), "--deck", "farm", "--players", "Alice,Cara"], b"\x1b", data)
    err = run.stderr.decode()
    assert run.returncode == 2 and "--deck farm (the session's: fruit)" in err, err
    assert "--players Alice,Cara (the session's: Alice,Bob)" in err and "{" not in err and "('" not in err, err
    for args, said in ((["--variant", "picture", "--deck", "cars"], "choose farm or fruit"),
                       (["--deck", "fruit"], "add --variant picture")):
        run = play(["--players", "Alice,Bob", "--engine", "none", *args], b"\x1b", data)
        assert run.returncode == 2 and said in run.stderr.decode(), run.stderr.decode()


def test_an_animal_snap_players_pool_claim_is_their_snap_pool_and_plain_snap_is_said_to_be_no_call(
        data: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A player enrolled with "woof" was asked for "woof pool", which no variant takes, and the docs said
    --no-pool: their "snap pool" claims were "voice not known", and so was a plain "snap", which is no
    call in Animal Snap at all. Enrollment now asks every player for "snap pool"."""
    from voicefixtures import PLAYERS_DIR

    from voicesnap import voices as V

    for name, noise in (("alice", "woof"), ("bob", "meow")):
        takes = [str(PLAYERS_DIR / "animal" / f"{name}_{noise}_{k}.wav") for k in range(1, 6)]
        pools = [str(PLAYERS_DIR / "enroll" / f"{name}_snappool_{k}.wav") for k in range(1, 4)]
        assert main(["enroll", name, "--word", noise, "--no-speech", "--contrast-takes", "0",
                     "--from-files", *takes, *pools]) == 0
        assert sorted(V.load_profile(name).phrases()) == sorted([noise, "snap pool"])
    try:
        from voicesnap import models

        models.find_model("en", None, data)
    except Exception:  # noqa: BLE001
        pytest.skip("no Vosk English model: the plain 'snap' and 'snap pool' here are heard by Vosk")
    capsys.readouterr()
    heldout = PLAYERS_DIR / "heldout" / "alice.wav"  # alice: 'snap' x6 and 'snap pool' x3
    assert main(["listen", "--file", str(heldout), "--json"]) == 0
    heard = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    pools = [d for d in heard if d.get("type") == "detection" and d["word"] == "snap pool"]
    assert len(pools) == 3 and all(d["player"] == "alice" for d in pools), heard
    assert main(["play", "--players", "alice,bob", "--variant", "animal", "--input-file", str(heldout), "--quiet",
                 "--text", "--no-keyboard", "--seed", "5", "--record", str(tmp_path / "g")]) == 0
    out = capsys.readouterr().out
    assert "'snap' is no call in this game" in out and "voice not known" not in out, out
    # her three "snap pool"s, with no pool match showing, are wrong pool calls, as the pool key's are: with no
    # claim open they were heard as "snap" (decided at once, as in classic Snap) and said to be no call
    steps = [ev for ev in _events(tmp_path / "g") if isinstance(ev, TableStep) and ev.kind == "call"]
    assert [(c.player, c.word) for c in steps if c.word == "snap pool"] == [("alice", "snap pool")] * 3, steps
    assert out.count("Wrong call by alice: no pool match") == 3, out
    # a player enrolled without "snap pool" (--no-pool, or before it was asked for) is told at the start
    takes = [str(PLAYERS_DIR / "animal" / f"cara_moo_{k}.wav") for k in range(1, 6)]
    assert main(["enroll", "cara", "--word", "moo", "--no-pool", "--no-speech", "--contrast-takes", "0",
                 "--from-files", *takes]) == 0
    capsys.readouterr()
    assert main(["play", "--players", "alice,bob,cara", "--variant", "animal", "--input-file", str(heldout),
                 "--quiet", "--text", "--no-keyboard", "--seed", "5", "--record", str(tmp_path / "g2")]) == 0
    out = capsys.readouterr().out
    assert "cara enrolled no 'snap pool'" in out and "alice enrolled no" not in out, out


def test_animal_snap_warns_of_a_call_nobody_can_make_and_refuses_per_player_mics(data: Path) -> None:
    """Players enrolled with "snap" (the README's set-up) were given moo, woof, ... by seat and could make no
    call all game, unsaid; on per-player mics the engines hear "snap" and "snap pool" only, so no noise at
    all was heard."""
    from voicefixtures import enroll_files

    for name in ("alice", "bob"):
        assert main(["enroll", name, "--no-speech", "--contrast-takes", "0", "--from-files",
                     *enroll_files(name)]) == 0
    wav = str(ROOT / "tests" / "fixtures" / "audio" / "corpus" / "clean_alice.wav")
    run = play(["--players", "alice,bob", "--variant", "animal", "--input-file", wav, "--quiet", "--text",
                "--no-keyboard", "--seed", "1", "--session", "best-of-1"], b"", data, timeout=180)
    out = run.stdout.decode()
    assert "alice's Animal Snap call is 'moo', and alice enrolled 'snap'" in out, (out, run.stderr.decode())
    assert "voicesnap enroll alice --word moo" in out and "bob's Animal Snap call is 'woof'" in out, out
    run = play(["--players", "alice,bob", "--variant", "animal", "--input-file", wav, "--quiet", "--text",
                "--channels", "alice=0,bob=0"], b"", data)
    assert run.returncode == 2, run.stdout.decode()
    run = play(["--players", "alice,bob", "--variant", "animal", "--input-file", wav, "--quiet", "--text",
                "--channels", "alice=0"], b"", data)
    assert run.returncode == 2 and "play Animal Snap without --channels" in run.stderr.decode(), run.stderr.decode()


def test_slapjack_on_one_mic_names_each_slap_to_its_player(data: Path, tmp_path: Path,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    """On one microphone every "slap" was "'slap' not counted: voice not known": the players' takes of it
    were a contrast word (no call), and the engine took Vosk's "slap" for a command needing no caller.
    Seed 2: the Jack of Hearts is turned at 3.0 s (bob slaps: his), no Jack shows at 9.6 s (alice's slap,
    which Vosk hears as "snap", is a wrong call)."""
    from voicefixtures import PLAYERS_DIR, enroll_files

    from voicesnap.audio import write_wav

    try:
        from voicesnap import models

        models.find_model("en", None, data)
    except Exception:  # noqa: BLE001
        pytest.skip("no Vosk English model: the combined engine hears 'slap' through Vosk")
    enroll = PLAYERS_DIR / "enroll"
    for name in ("alice", "bob"):  # slap takes 1-2 enrolled, take 3 held out for the game
        assert main(["enroll", name, "--no-speech", "--from-files", *enroll_files(name),
                     *(str(enroll / f"{name}_slap_{k}.wav") for k in (1, 2))]) == 0
    x = np.random.default_rng(0).normal(0.0, 32768 * 10 ** (-60 / 20), 16000 * 14)
    for who, t in (("bob", 3.6), ("alice", 9.6)):
        y = sf.read(str(enroll / f"{who}_slap_3.wav"), dtype="int16")[0].astype(np.float64)
        x[int(t * 16000):int(t * 16000) + len(y)] += y
    write_wav(tmp_path / "slaps.wav", np.clip(x, -32768, 32767).astype(np.int16), 16000)
    capsys.readouterr()
    assert main(["play", "--players", "alice,bob", "--variant", "slapjack", "--input-file", str(tmp_path / "slaps.wav"),
                 "--quiet", "--text", "--no-keyboard", "--seed", "2", "--record", str(tmp_path / "g")]) == 0
    out = capsys.readouterr().out
    calls = [(e.player, e.word) for e in _events(tmp_path / "g") if isinstance(e, TableStep) and e.kind == "call"]
    assert calls == [("bob", "slap"), ("alice", "slap")], (calls, out)
    assert "bob wins 1 card" in out and "Wrong call by alice" in out and "voice not known" not in out, out
    # listen --variant shows what the game heard (without it: the calls every variant shares, and no slap)
    assert main(["listen", "--file", str(tmp_path / "slaps.wav"), "--variant", "slapjack", "--json"]) == 0
    heard = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [(d["player"], d["word"]) for d in heard if d["type"] == "detection"] == calls, heard


def test_a_slap_vosk_first_heard_as_slap_then_as_snap_is_one_call(data: Path, tmp_path: Path,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    """Slapjack on one mic: Vosk's partial result said "slap", its final result "snap" (and the keyword model
    "snap") for alice's held-out slap; each was passed on, so one slap was ruled twice ("Alice wins 1 card",
    then "Alice 'slap' ignored: late"). And the enrollment refused its own "slap" as "another word"."""
    from voicefixtures import PLAYERS_DIR, enroll_files

    from voicesnap.audio import write_wav

    try:
        from voicesnap import models

        models.find_model("en", None, data)
    except Exception:  # noqa: BLE001
        pytest.skip("no Vosk English model: the combined engine hears 'slap' through Vosk")
    enroll = PLAYERS_DIR / "enroll"
    for name in ("alice", "bob"):
        assert main(["enroll", name, "--no-speech", "--from-files", *enroll_files(name),
                     *(str(enroll / f"{name}_slap_{k}.wav") for k in (1, 2))]) == 0
    x = np.random.default_rng(0).normal(0.0, 32768 * 10 ** (-70 / 20), 16000 * 12)
    takes = (("alice_slap_3", 1.0), ("bob_snap_6", 3.0), ("alice_slap_3", 5.2), ("bob_slap_3", 7.0),
             ("alice_snap_6", 9.0))
    for take, t in takes:
        y = sf.read(str(enroll / f"{take}.wav"), dtype="int16")[0].astype(np.float64)
        x[int(t * 16000):int(t * 16000) + len(y)] += y
    write_wav(tmp_path / "stream.wav", np.clip(x, -32768, 32767).astype(np.int16), 16000)
    capsys.readouterr()
    assert main(["listen", "--file", str(tmp_path / "stream.wav"), "--variant", "slapjack", "--json"]) == 0
    heard = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    calls = [(d["player"], d["word"]) for d in heard if d["type"] == "detection"]
    assert calls == [(take.split("_")[0], take.split("_")[1]) for take, _t in takes], heard
    assert not any(d["type"] == "refusal" for d in heard), heard


def test_with_no_microphone_at_all_play_does_not_offer_to_enroll(data: Path, tmp_path: Path) -> None:
    """It asked "Enroll now? [Y/n]" (Enter meaning yes) for each player with no profile although no
    microphone could be opened: the enrollment would have waited on silence. Now the game goes
    straight to what it does without a microphone: it says so and takes calls by keyboard."""
    import pty
    import select

    env = dict(os.environ, VOICESNAP_DATA_DIR=str(data), PULSE_SERVER="unix:/nonexistent/pulse/native",
               PYTHONUNBUFFERED="1")
    master, slave = pty.openpty()  # a person at a terminal: the only one play asks
    game = subprocess.Popen([sys.executable, "-m", "voicesnap", "play", "--players", "A,B", "--text", "--quiet",
                             "--pace", "0.5", "--seed", "3", "--record", str(tmp_path / "game")],
                            cwd=ROOT, env=env, stdin=slave, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    os.close(slave)
    out = b""
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and b"Enroll now" not in out and b"Game 1." not in out \
                and game.poll() is None:
            ready, _w, _x = select.select([game.stdout], [], [], 0.2)
            if ready:
                out += os.read(game.stdout.fileno(), 4096)
        game.terminate()  # (SIGINT is ignored by a child of a runner started in the background, as CI's is)
        rest, _ = game.communicate(timeout=30)
        out += rest
    finally:
        if game.poll() is None:
            game.kill()
        os.close(master)
    text = out.decode(errors="replace")
    assert "Enroll now" not in text, text
    assert "no voice profile for A, B: their calls need the keyboard" in text and "Game 1." in text, text
    assert "(no microphone either: cannot open the microphone" in text, text  # enrolling needs one too


def test_speed_snap_at_verbosity_all_says_nobodys_turn(data: Path) -> None:
    """At --verbosity all every Speed Snap card was followed by "Cy's turn." (the engine's seat counter),
    though everyone turns a card at once and nobody has a turn; a voice "flip" was taken from that seat only."""
    args = ["--players", "Ann,Ben,Cy", "--engine", "none", "--text", "--quiet", "--seed", "5", "--pace", "0.001",
            "--verbosity", "all"]
    speed = play([*args, "--variant", "speed"], b"", data, timeout=120)
    out = speed.stdout.decode()
    assert speed.returncode == 0 and "Ben, Jack of Hearts" in out, speed.stderr.decode()
    assert "'s turn." not in out, out
    classic = play([*args, "--session", "best-of-1"], b"", data, timeout=120)  # (a turn is still said where there is one)
    assert "Ben, Jack of Hearts\nCy's turn.\n" in classic.stdout.decode()


def test_the_first_and_stop_lines_name_the_variant_format_and_reason_in_words(data: Path, tmp_path: Path) -> None:
    """They printed the ids: "voicesnap: Ann, Ben; single-pile, best-of-1; ..." and "stopped (ended)",
    which a screen reader read as "single dash pile, best dash of dash 1" and a bare "ended"."""
    run = play(["--players", "Ann,Ben", "--engine", "none", "--text", "--quiet", "--seed", "3",
                "--variant", "single-pile", "--record", str(tmp_path / "g")], b"\x1b", data)
    assert run.returncode == 0, run.stderr.decode()
    out = run.stdout.decode()
    assert "voicesnap: Ann and Ben; Single Pile Snap, one game; calls by keyboard\n" in out, out
    assert f"stopped (by the end command); continue with: voicesnap play --resume --record {tmp_path / 'g'}" in out
    assert "single-pile" not in out and "best-of" not in out and "(ended)" not in out, out
    run = play(["--players", "Ann,Ben,Cy", "--engine", "none", "--text", "--quiet", "--seed", "3",
                "--variant", "slapjack", "--session", "best-of-3"], b"\x1b", data)
    assert "voicesnap: Ann, Ben and Cy; Slapjack, best of 3 games; calls by keyboard\n" in run.stdout.decode()


def test_silent_snap_on_one_mic_says_voice_commands_work_only_where_they_are_heard(data: Path) -> None:
    """The hint said "(voice commands still work)" for any engine but none, while --engine keyword (and
    enrolled, and auto without the Vosk model) hears no command: the line below it said so."""
    import voicefixtures

    from voicesnap import models, voices
    from voicesnap.keyword import load_keyword_model

    if load_keyword_model() is None:
        pytest.skip("no keyword model (voicesnap models download keyword; .ci/run installs it)")
    for name in ("alice", "bob"):
        voices.save_profile(voicefixtures.profile(name), str(data))
    wav = ROOT / "tests" / "fixtures" / "audio" / "corpus" / "clean_alice.wav"
    args = ["--players", "alice,bob", "--variant", "silent", "--input-file", str(wav), "--quiet", "--text",
            "--pace", "1", "--seed", "3"]
    keyword = play([*args, "--engine", "keyword"], b"", data, timeout=180)
    out = keyword.stdout.decode()
    assert keyword.returncode == 0 and "Silent Snap on one microphone" in out, keyword.stderr.decode()
    assert "voice commands still work" not in out and "voice commands such as 'dealer status'" in out, out
    try:
        models.find_model("en", None, data)
    except Exception:  # noqa: BLE001 (any way of not having one)
        return
    combined = play([*args, "--engine", "combined"], b"", data, timeout=180)
    out = combined.stdout.decode()
    assert combined.returncode == 0 and "snap keys, printed below (voice commands still work); " in out, out


def test_verbosity_given_on_resume_is_the_one_used(data: Path, tmp_path: Path) -> None:
    """`play --resume --verbosity ranks` printed and said each card with its player and suit, the session's
    verbosity: the option was taken, then ignored unsaid (README: the verbosity may differ on resume)."""
    folder = tmp_path / "v"
    first = play(["--players", "Alice,Bob", "--engine", "none", "--text", "--quiet", "--seed", "3", "--pace", "5",
                  "--record", str(folder)], b"\x1b", data)
    assert first.returncode == 0, first.stderr.decode()
    second = play(["--resume", "--record", str(folder), "--text", "--quiet", "--pace", "0.002", "--verbosity",
                   "ranks"], b"", data, timeout=120)
    assert second.returncode == 0, second.stderr.decode()
    out = second.stdout.decode()
    assert "\nJack\n" in out and "Bob, Jack of Diamonds" not in out, out[:1500]


def test_a_session_says_what_it_is_played_to_and_a_resume_says_the_games_won(data: Path, tmp_path: Path) -> None:
    """A best of 3 began "Game 1. Alice deals", and one stopped in its second game (killed here: its log cut
    after game 2's first flips) came back as "Resuming game 2. Alice 26 cards, ...": a player by ear was never
    told what the session is played to, nor, on coming back, who had won the games before."""
    folder = tmp_path / "bo3"
    first = play(["--players", "Alice,Bob", "--engine", "none", "--text", "--quiet", "--seed", "4", "--pace", "0.001",
                  "--session", "best-of-3", "--record", str(folder)], b"", data, timeout=120)
    assert first.returncode == 0, first.stderr.decode()
    assert "Best of 3 games. Game 1. Alice deals; Bob goes first." in first.stdout.decode()
    assert "Best of 3 games. Game 2." not in first.stdout.decode()  # (once a sitting)
    log = folder / "log.jsonl"
    lines = log.read_text().splitlines(keepends=True)
    second = [i for i, line in enumerate(lines) if '"game-started"' in line][1]
    log.write_text("".join(lines[:second + 8]))  # killed a few cards into game 2
    scored = [json.loads(line) for line in lines[:second] if '"game-scored"' in line][0]
    resumed = play(["--resume", "--record", str(folder), "--text", "--quiet", "--pace", "0.001"], b"", data,
                   timeout=120)
    assert resumed.returncode == 0, resumed.stderr.decode()
    said = resumed.stdout.decode()
    won = ", ".join(f"{p} {n}" for p, n in zip(("Alice", "Bob"), scored["scores"]))
    assert f"Resuming game 2. Games won: {won}. Best of 3: first to 2 wins the session. " in said, said[:1500]


def test_the_engine_in_words_says_what_strict_calls_do() -> None:
    """`play --strict-calls` began "calls heard by Vosk, the keyword model and strict"."""
    from voicesnap.table import engine_words

    assert engine_words("vosk+keyword+strict") == ("Vosk and the keyword model, each call checked against its "
                                                   "player's enrolled voice")
    assert engine_words("vosk+keyword") == "Vosk and the keyword model"


def test_players_enrolled_on_their_own_mics_are_told_of_channels_when_play_hears_one_mix(data: Path) -> None:
    """Alice and Bob enrolled on their own mic channels (`enroll --channel`), and `play` without --channels
    heard every mic as one mix, each caller by voice, unsaid: the table thought it had a mic per player."""
    takes = ROOT / "tests" / "fixtures" / "audio" / "players" / "enroll"
    for name, channel in (("alice", 0), ("bob", 1)):
        assert main(["enroll", name, "--channel", str(channel), "--silent", "--from-files",
                     *map(str, sorted(takes.glob(f"{name}_*.wav")))]) == 0
    wav = str(ROOT / "tests" / "fixtures" / "audio" / "players" / "multichannel" / "mc2.wav")  # alice 0, bob 1
    got = play(["--players", "alice,bob", "--input-file", wav, "--quiet", "--text", "--no-keyboard", "--seed", "1"],
               b"", data, timeout=120)
    out = got.stdout.decode()
    assert got.returncode == 0, got.stderr.decode()
    assert ("alice and bob enrolled on their own microphone channels; this game hears every microphone as one, "
            "each caller known by voice: for a microphone per player, stop and add --channels alice=0,bob=1") in out, out
    mics = play(["--players", "alice,bob", "--input-file", wav, "--quiet", "--text", "--no-keyboard", "--seed", "1",
                 "--channels", "alice=0,bob=1"], b"", data, timeout=120)
    assert mics.returncode == 0 and "own microphone channels" not in mics.stdout.decode(), mics.stdout.decode()


def test_a_player_without_a_mic_at_a_table_of_mics_is_told_their_keys_aloud(data: Path) -> None:
    """`--channels A=0` with B at the table: "no microphone for B ... their calls need the keyboard" was
    printed, never said, so B, playing by ear, shouted "snap" at nobody and never heard which keys were theirs."""
    wav = str(ROOT / "tests" / "fixtures" / "audio" / "players" / "multichannel" / "mc2.wav")
    got = play(["--players", "A,B,C", "--input-file", wav, "--channels", "A=0", "--text", "--quiet", "--seed", "1",
                "--engine", "keyword"], b"", data, timeout=120)
    out = got.stdout.decode()
    if "keyword model" in got.stderr.decode():
        pytest.skip("no keyword model to hear per-player mics with")
    assert got.returncode == 0, got.stderr.decode()
    # the opening, which is spoken: every announcement is printed as it is said with --text
    assert ("Game 1. A deals; B goes first. B and C have no microphone and call by key: B w for snap, s for snap "
            "pool; C e for snap, d for snap pool.") in out, out[:1200]
    one = play(["--players", "A,B", "--input-file", wav, "--channels", "A=0", "--text", "--quiet", "--seed", "1",
                "--engine", "keyword"], b"", data, timeout=120).stdout.decode()
    assert "B has no microphone and calls by key: w for snap, s for snap pool." in one, one[:1200]
