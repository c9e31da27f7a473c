"""Game logs: written line by line as play goes, replayed into the same table, damage named."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from voicesnap import events, gamelog, variants
from voicesnap.errors import UserError
from voicesnap.referee import Call, Referee
from voicesnap.rules import Flipped, Game
from voicesnap.session import Session


@pytest.fixture(autouse=True)
def _tmp_data_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("VOICESNAP_DATA_DIR", str(tmp_path / "data"))


def played(variant: str, seed: int, log: gamelog.GameLog | None = None, n: int = 4) -> tuple[Game, list]:
    """A whole game with noisy scripted callers, logged as it goes."""
    game = variants.create(variant, ["Ann", "Ben", "Cat", "Dan"][:n], seed)
    ref = Referee(game, 0.5)
    rng = random.Random(seed)
    words = {"silent": "slam", "slapjack": "slap"}
    if log:
        log.write(game.events)
    out = list(game.events)
    t = 0.0
    while not game.is_over():
        t += 1.5
        step = ref.flip(t)
        for ev in step:
            if isinstance(ev, Flipped) and (ev.match or ev.pool_match or rng.random() < 0.05):
                for name in game.players:
                    if not game.out[game.seat_of[name]] and rng.random() < 0.7:
                        word = getattr(game, "animals", {}).get(name) or words.get(variant, "snap")
                        if ev.pool_match and not ev.match and variant != "silent":
                            word = "snap pool"
                        call = Call(name, word, t + rng.uniform(0.25, 0.6))
                        ref.submit(call)
                        if log:
                            log.write(call)  # calls are logged too; replay passes over them
        step += ref.advance(t + 1.4)
        if log:
            log.write(step)
        out += step
    return game, out


@pytest.mark.parametrize("variant", variants.names())
def test_replay_rebuilds_the_same_final_table(variant: str, tmp_path: Path) -> None:
    path = tmp_path / "game.jsonl"
    with gamelog.GameLog(path) as log:
        game, out = played(variant, seed=17, log=log)
    assert out == game.events
    again = gamelog.replay(path)
    assert again.state == game.state and again.winner == game.winner and again.reason == game.reason
    assert again.events == game.events


def test_each_event_reaches_the_file_before_write_returns(tmp_path: Path) -> None:
    path = tmp_path / "live.jsonl"
    log = gamelog.GameLog(path)
    game = Game(["Ann", "Ben"], seed=3)
    log.write(game.events)
    assert len(path.read_text().splitlines()) == 2  # still open, already on disk
    log.write(game.flip(1.0))
    lines = path.read_text().splitlines()
    assert events.loads(lines[-1]) == game.events[-1]
    log.close()
    # readable by the player alone, as the game's recording beside it is (the log was 0644, the audio 0600)
    assert path.stat().st_mode & 0o777 == 0o600


def test_a_session_log_replays_every_game(tmp_path: Path) -> None:
    path = tmp_path / "session.jsonl"
    session = Session(["Ann", "Ben"], "first-to-2", seed=8)
    finals = []
    with gamelog.GameLog(path) as log:
        while not session.is_over():
            game = session.new_game()
            ref = Referee(game)
            t = 0.0
            while not game.is_over():
                t += 1.0
                ref.flip(t)
                if game.legal_calls():
                    ref.submit(Call(game.players[game.flips % 2], "snap", t + 0.3))
                ref.advance(t + 0.9)
            log.write(game.events, session.record(game))
            finals.append(game.state)
    assert [g.state for g in gamelog.replay_games(path)] == finals


def _write(path: Path, lines: list[str]) -> Path:
    path.write_text("".join(line + "\n" for line in lines))
    return path


def _lines(seed: int = 5) -> list[str]:
    game, out = played("classic", seed)
    return [events.dumps(ev) for ev in out]


def test_a_line_that_is_not_json_is_named(tmp_path: Path) -> None:
    lines = _lines()
    lines[4] = lines[4][:-9]
    with pytest.raises(gamelog.LogError, match=r"game.jsonl:5: not JSON") as info:
        gamelog.replay(_write(tmp_path / "game.jsonl", lines))
    assert isinstance(info.value, UserError)


def test_an_edited_card_is_caught_at_its_line(tmp_path: Path) -> None:
    lines = _lines()
    i = next(i for i, line in enumerate(lines) if '"flipped"' in line)
    data = json.loads(lines[i])
    data["card"] = "KS" if data["card"] != "KS" else "QS"
    lines[i] = json.dumps(data)
    with pytest.raises(gamelog.LogError, match=rf"line {i + 1}: the log says .* but the rules give"):
        gamelog.replay(_write(tmp_path / "game.jsonl", lines))


def test_an_impossible_ruling_is_caught(tmp_path: Path) -> None:
    lines = _lines()[:4]
    lines.append(json.dumps({"type": "pool-won", "t": 9.0, "player": "Ann", "cards": 7, "flip": 2}))
    with pytest.raises(gamelog.LogError, match="line 5: PoolWon cannot happen here"):
        gamelog.replay(_write(tmp_path / "game.jsonl", lines))


@pytest.mark.parametrize("body, message", [
    ("", "no game"),
    ('{"type": "flipped", "t": 1, "seat": 0, "player": "Ann", "card": "8H", "flip": 1, "match": false, '
     '"pool_match": false}', "before any game-started"),
    ('{"type": "game-started", "t": 0, "players": ["Ann"], "seed": 1, "dealer": 0, "variant": "classic", '
     '"options": {}}', "2 to 6 players"),
    ('{"type": "game-started", "t": 0, "players": ["A", "B"], "seed": 1, "dealer": 0, "variant": "warp", '
     '"options": {}}', "no Snap variant"),
])
def test_logs_that_cannot_start_a_game_say_why(tmp_path: Path, body: str, message: str) -> None:
    path = tmp_path / "game.jsonl"
    path.write_text(body + "\n" if body else "")
    with pytest.raises(gamelog.LogError, match=message):
        gamelog.replay(path)


def test_a_torn_last_line_from_a_crash(tmp_path: Path) -> None:
    lines = _lines()
    path = tmp_path / "game.jsonl"
    path.write_text("".join(line + "\n" for line in lines[:-1]) + lines[-1][:10])
    with pytest.raises(gamelog.LogError, match=f"line {len(lines)}"):
        gamelog.read(path)
    said: list[str] = []
    assert len(gamelog.read(path, torn_tail=True, notice=said.append)) == len(lines) - 1
    assert len(said) == 1 and f"last line ({len(lines)}) was cut off" in said[0]  # a replay says it starts short
    with gamelog.GameLog(path) as log:  # appending after a crash (a resume) drops the torn line first
        log.write(Call("Ann", "snap", 1.0))
    assert events.loads(path.read_text().splitlines()[-1]) == Call("Ann", "snap", 1.0)
    # left between the records, the torn line made the log damaged from there on: no second resume or replay
    again = gamelog.read(path)
    assert [ev for _n, ev in again] == [events.loads(line) for line in lines[:-1]] + [Call("Ann", "snap", 1.0)]
    # a whole record that only lacks its newline is kept
    path.write_text("".join(line + "\n" for line in lines))
    path.write_text(path.read_text()[:-1])
    with gamelog.GameLog(path) as log:
        log.write(Call("Bea", "snap", 2.0))
    assert [ev for _n, ev in gamelog.read(path)][-2:] == [events.loads(lines[-1]), Call("Bea", "snap", 2.0)]


def test_a_missing_log_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(gamelog.LogError, match="no game log at"):
        gamelog.replay(tmp_path / "nothing.jsonl")


def test_junk_in_any_field_of_a_ruling_is_named_never_a_crash(tmp_path: Path) -> None:
    """A hand-edited or damaged log: every field of the first rulings replaced by junk
    gives a LogError naming a line (or replays, where the junk changes nothing)."""
    lines = _lines()
    rulings = [i for i, line in enumerate(lines) if '"flipped"' not in line and '"refreshed"' not in line][2:7]
    assert len(rulings) >= 5
    lines = lines[: rulings[-1] + 5]  # a log cut short replays as far as it goes: quicker
    path = tmp_path / "game.jsonl"
    for i in rulings:
        data = json.loads(lines[i])
        for key in [k for k in data if k != "type"]:
            for junk in ("x", -1, None, 10**9, [99], 1.5):
                edited = lines[:i] + [json.dumps({**data, key: junk})] + lines[i + 1:]
                try:
                    gamelog.replay(_write(path, edited))
                except gamelog.LogError as exc:
                    assert "line" in str(exc) or ".jsonl:" in str(exc)


def test_a_played_sessions_records_are_read_in_a_fresh_process(tmp_path) -> None:
    """`voicesnap replay` and `--resume` read logs holding the table's and the speaker's records
    before anything else is imported: the log module must know them itself (it once said such a
    log was "damaged" because nothing had imported the speaker's module yet)."""
    import subprocess
    import sys

    log = tmp_path / "log.jsonl"
    log.write_text(
        '{"type":"table-session","players":["alice","bob"],"seed":1}\n'
        '{"type":"speech-started","id":1,"text":"Seven","t":1.5}\n'
        '{"type":"speech-ended","id":1,"t":2.0,"completed":true}\n'
    )
    code = ("import sys; from voicesnap import gamelog; "
            "print([type(e).__name__ for _, e in gamelog.read(sys.argv[1])])")
    out = subprocess.run([sys.executable, "-c", code, str(log)], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "['TableSession', 'SpeechStarted', 'SpeechEnded']"
