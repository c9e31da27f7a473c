"""The table's game loop against the real engine and referee: pace, calls, ties, commands,
late recognition, and the threaded shell over real audio chunks and real key records."""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from voicesnap import gamelog, rules, variants
from voicesnap.audio import ArraySource
from voicesnap.keyboard import Keymap
from voicesnap.referee import Call, Referee
from voicesnap.spotters import Detection
from voicesnap.live import LiveInput
from voicesnap.playback import SpeechEnded as _SpeechEnded
from voicesnap.playback import SpeechStarted as _SpeechStarted
from voicesnap.table import (
    PRIORITY_INFO, PRIORITY_RULING, Log, Notice, Output, Say, Stop, TableLoop, TableSession, TableStep, describe,
    TableNote, play_session, rebuild, status_text, view_of,
)
from voicesnap.display import render

PLAYERS = ("Alice", "Bob", "Cara")


@pytest.fixture(autouse=True)
def _tmp_data(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("VOICESNAP_DATA_DIR", str(tmp_path / "data"))


def new_loop(seed: int = 7, pace: float | None = 1.0, window: float = 0.5) -> tuple[TableLoop, rules.Game]:
    game = rules.Game(PLAYERS, seed)
    referee = Referee(game, window)
    loop = TableLoop(
        referee, PLAYERS, pace=pace, make_call=Call, describe=describe,
        is_over=lambda ev: isinstance(ev, rules.GameOver),
        active_player=lambda: game.players[game.active], first_flip_delay=1.0,
        status=lambda: status_text(game),
    )
    return loop, game


def first_match(seed: int) -> float:
    """Time (pace 1 s, first flip at 1 s) of the first flip that shows a snap."""
    probe = rules.Game(PLAYERS, seed)
    for k in range(1, 200):
        if any(isinstance(e, rules.Flipped) and e.match for e in probe.flip(float(k))):
            return float(k)
    raise AssertionError("no match in 200 flips")


def snap(player: str | None, onset: float, word: str = "snap", engine: str = "vosk") -> Detection:
    return Detection(word, onset, onset + 0.3, 0.9, player=player, engine=engine)


def run_clock(loop: TableLoop, until: float, feed: dict[float, list[Detection]], step: float = 0.02) -> list:
    """Step the loop every ``step`` seconds of audio; ``feed`` maps a step time to what arrives then."""
    actions = []
    t = 0.0
    keys = sorted(feed)
    while t <= until + 1e-9 and loop.stopped is None:
        got = []
        while keys and keys[0] <= t + 1e-9:
            got.extend(feed[keys.pop(0)])
        actions.extend(loop.step(round(t, 4), got))
        t += step
    return actions


def rulings(actions: list) -> list:
    return [a.record for a in actions if isinstance(a, Log) and isinstance(a.record, rules.RULINGS)]


def test_flips_come_at_the_pace_on_the_audio_clock() -> None:
    loop, game = new_loop(pace=1.0)
    actions = run_clock(loop, 5.5, {})
    flips = [a.record for a in actions if isinstance(a, Log) and isinstance(a.record, rules.Flipped)]
    assert [f.t for f in flips] == [1.0, 2.0, 3.0, 4.0, 5.0]
    spoken = [a for a in actions if isinstance(a, Say) and isinstance(a.source, rules.Flipped)]
    assert len(spoken) == 5 and spoken[0].text.startswith(flips[0].player)


def test_a_snap_on_a_match_wins_the_piles() -> None:
    seed = 7
    t = first_match(seed)
    loop, game = new_loop(seed)
    actions = run_clock(loop, t + 0.95, {t + 0.5: [snap("Bob", t + 0.2)]})
    won = [r for r in rulings(actions) if isinstance(r, rules.SnapWon)]
    assert len(won) == 1 and won[0].player == "Bob" and won[0].t == pytest.approx(t + 0.2)
    assert any(isinstance(a, Say) and a.text.startswith("Bob wins") for a in actions)
    assert game.total() == 52


def test_calls_within_the_tie_window_tie_to_the_pool() -> None:
    seed = 7
    t = first_match(seed)
    loop, game = new_loop(seed)
    feed = {t + 0.55: [snap("Cara", t + 0.23)], t + 0.52: [snap("Alice", t + 0.2)]}
    actions = run_clock(loop, t + 0.95, feed)
    ties = [r for r in rulings(actions) if isinstance(r, rules.TieToPool)]
    assert len(ties) == 1 and set(ties[0].players) == {"Alice", "Cara"}
    assert len(game.pool) == ties[0].pool > 0


def test_a_slow_recogniser_delays_rulings_but_never_changes_them() -> None:
    """The same detections, handed over promptly or all at once seconds late, give the same rulings."""
    seed = 11
    t = first_match(seed)
    calls = [snap("Alice", t + 0.25), snap("Bob", t + 0.31), snap("Cara", t + 2.4)]  # last: a wrong call
    prompt, _ = new_loop(seed)
    a = run_clock(prompt, t + 4, {c.onset + 0.3: [c] for c in calls})
    slow, _ = new_loop(seed)
    # nothing reaches the loop until t+3.5: the recogniser was busy, the clock waited for it
    b = []
    b += [x for now in np.arange(0, t + 0.2, 0.02) for x in slow.step(float(now), [])]
    b += slow.step(t + 3.5, list(reversed(calls)))
    b += [x for now in np.arange(t + 3.52, t + 3.99, 0.02) for x in slow.step(float(now), [])]
    b += slow.step(t + 4.0, [])
    ra, rb = rulings(a), rulings(b)
    assert ra and [type(r).__name__ for r in ra] == [type(r).__name__ for r in rb]
    assert ra == rb
    fa = [x.record.t for x in a if isinstance(x, Log) and isinstance(x.record, rules.Flipped)]
    fb = [x.record.t for x in b if isinstance(x, Log) and isinstance(x.record, rules.Flipped)]
    assert fa == fb  # flips stay on the pace's clock times too


def test_unknown_voices_and_strangers_are_logged_not_judged() -> None:
    loop, game = new_loop()
    actions = loop.step(0.5, [snap(None, 0.2), snap("Zed", 0.3)])
    notes = [a.record.text for a in actions if isinstance(a, Log) and hasattr(a.record, "text")]
    assert any("unknown voice" in n for n in notes) and any("Zed" in n for n in notes)
    assert not rulings(actions + loop.step(1.5, []))


def test_players_are_told_of_a_call_from_an_unknown_voice_once_per_half_minute() -> None:
    """A call nobody's voice matches does not count; the table says so, briefly and at information
    priority (a card's announcement cuts it, no card waits for it), at most once every 30 s of audio,
    so a bystander shouting "snap" over and over does not drown the game."""

    loop, _game = new_loop()
    told = []
    for t, dets in ((0.5, [snap(None, 0.2)]), (5.0, [snap(None, 4.7)]), (29.0, [snap(None, 28.9)]),
                    (31.0, [snap(None, 30.5)]), (33.0, [snap("Alice", 32.8)])):
        told += [(t, a) for a in loop.step(t, dets) if isinstance(a, (Say, Notice)) and "not known" in a.text]
    assert [t for t, _ in told] == [0.5, 31.0], told
    assert all(isinstance(a, Say) and a.priority == PRIORITY_INFO and a.text == "'snap' not counted: voice not known"
               for _, a in told)


def test_pause_stops_flips_and_resume_restarts_the_pace() -> None:
    loop, game = new_loop(pace=1.0)
    cmd = lambda word, t: Detection(f"dealer {word}", t, t + 0.4, 0.9, engine="vosk")  # noqa: E731
    actions = run_clock(loop, 6.0, {1.5: [cmd("pause", 1.2)], 4.0: [cmd("resume", 3.8)]})
    flips = [a.record.t for a in actions if isinstance(a, Log) and isinstance(a.record, rules.Flipped)]
    assert flips == [1.0, 5.0, 6.0]
    assert any(isinstance(a, Notice) and "paused" in a.text for a in actions)


def test_flip_command_only_from_the_active_player_or_a_key() -> None:
    loop, game = new_loop(pace=None)
    active = game.players[game.active]
    other = next(p for p in PLAYERS if p != active)
    wrong = loop.step(1.0, [dataclasses.replace(snap(other, 0.9, "dealer flip"))])
    assert not any(isinstance(a, Log) and isinstance(a.record, rules.Flipped) for a in wrong)
    right = loop.step(2.0, [snap(active, 1.9, "dealer flip")])
    key = loop.step(3.0, [Keymap(PLAYERS).detection(" ", 2.9)])
    flipped = [a for a in right + key if isinstance(a, Log) and isinstance(a.record, rules.Flipped)]
    assert len(flipped) == 2


def test_end_game_stops_and_status_and_repeat_answer() -> None:
    loop, game = new_loop(pace=1.0)
    run_clock(loop, 2.1, {})
    cmd = lambda word, t: Detection(f"dealer {word}", t, t, 1.0, engine="keyboard")  # noqa: E731
    acts = loop.step(2.2, [cmd("status", 2.15)])
    said = [a.text for a in acts if isinstance(a, Say)]
    assert said and all(p in said[0] for p in PLAYERS)
    # whose turn it is, which no command said before
    assert said[0].endswith(f"Pool empty. {game.players[game.state.active]}'s turn."), said
    acts = loop.step(2.3, [cmd("repeat", 2.25)])
    assert [a.text for a in acts if isinstance(a, Say)] == [said[0]]
    acts = loop.step(2.4, [cmd("end game", 2.35)])
    assert acts[-1] == Stop("ended") and loop.stopped == Stop("ended")
    assert loop.step(9.0, []) == []


class _Log(list):
    def write(self, *records: object) -> None:
        self.extend(records)


def _keys_later(script: list[tuple[float, bytes]]):  # noqa: ANN202
    """A pipe standing in for the terminal, with key presses typed at the given wall times."""
    import os
    import time

    read_fd, write_fd = os.pipe()

    def typist() -> None:
        start = time.monotonic()
        for at, key in script:
            time.sleep(max(0.0, at - (time.monotonic() - start)))
            os.write(write_fd, key)
        os.close(write_fd)

    threading.Thread(target=typist, daemon=True).start()
    return os.fdopen(read_fd)


def test_the_threaded_shell_judges_key_presses_on_the_audio_clock() -> None:
    """Real-time audio drives the clock through the spotter thread; a real key press (keyboard
    thread) is stamped on that clock and judged by its onset."""
    from voicesnap.keyboard import RawKeyboard

    rate = 16000
    audio = ArraySource(np.zeros(int(rate * 3.5), dtype=np.int16), rate, chunk_frames=320, realtime=True)
    settings = TableSession(players=PLAYERS, seed=7, pace=1.0)
    log = _Log()
    out: list[str] = []
    with _keys_later([(2.3, b"w")]) as pipe, RawKeyboard(pipe) as keys:
        result = play_session(settings, log, chunks=audio, keyboard=keys, lines=out.append, text=True,
                              first_flip_delay=1.0)
    assert result.reason == "audio ended"
    flips = [r for r in log if isinstance(r, rules.Flipped)]
    assert [f.t for f in flips] == [1.0, 2.0, 3.0]
    calls = [r for r in log if isinstance(r, TableStep) and r.kind == "call"]
    assert len(calls) == 1 and calls[0].player == "Bob" and calls[0].engine == "keyboard"
    assert 2.1 < calls[0].onset < 2.8  # the audio clock when the key came, not the wall clock
    ruled = [r for r in log if isinstance(r, rules.RULINGS)]
    assert len(ruled) == 1 and ruled[0].player == "Bob" and ruled[0].t == calls[0].onset
    assert out[0].startswith("Game 1.")


def test_a_session_log_rebuilds_the_same_table_for_resume(tmp_path: Path) -> None:
    """Keyboard play (wall clock) with a call, logged to disk; the log deals the same table again."""
    from voicesnap.keyboard import RawKeyboard

    settings = TableSession(players=PLAYERS, seed=5, pace=0.05)
    path = tmp_path / "log.jsonl"
    box: list = []
    with gamelog.GameLog(path, fsync=True) as log, _keys_later([(0.5, b"e"), (0.9, b"\x1b")]) as pipe, \
            RawKeyboard(pipe) as keys:
        result = play_session(settings, log, keyboard=keys, lines=lambda s: None, pool_flag=box,
                              first_flip_delay=0.1)
    assert result.reason == "ended"
    live = box[0]
    records = [ev for _, ev in gamelog.read(path)]
    assert any(isinstance(r, rules.RULINGS) and r.player == "Cara" for r in records)
    back = rebuild(records)
    assert back.game is not None and back.game.state == live.state
    assert back.game.total() == 52 and back.game.flips >= 5
    # a torn last line (power cut mid-write) is skipped and the rest still resumes
    with open(path, "a") as f:
        f.write('{"type":"flipped","t":99')
    records = [ev for _, ev in gamelog.read(path, torn_tail=True)]
    assert rebuild(records).game.state == live.state


def test_the_display_of_a_live_game_fits_80_columns() -> None:
    loop, game = new_loop(pace=1.0)
    run_clock(loop, 6.0, {})
    lines = render(view_of(game, rulings=("Bob snapped and won 6 cards",), title="classic, game 1"))
    assert all(len(line) <= 80 for line in lines)
    assert sum(1 for line in lines if line[3:].split(" ")[0] in PLAYERS) == 3
    shown = [p for p in PLAYERS if game.state.piles[PLAYERS.index(p)]]
    assert shown and all(game.state.piles[PLAYERS.index(p)][-1].code in "\n".join(render(
        view_of(game), ascii_only=True)) for p in shown)


class _StandInMic:
    """What LiveInput asks of every stand-in for MicSource besides ``read``."""

    def stats(self) -> dict:
        return {"overflows": 0, "dropped_frames": 0}

    def close(self) -> None:
        pass


def _scripted_mic(script: Callable[[int], str]) -> type:
    """A stand-in for MicSource whose k-th opening (from 1) behaves as ``script(k)`` says: "fails"
    (5 chunks of a room's noise, then nothing: unplugged), "nothing", "zeros then sound" (3 chunks of
    digital zeros first) or "sound". ``opened`` counts the openings."""
    import time as _t

    from voicesnap.audio import AudioChunk

    class Mic(_StandInMic):
        opened = 0

        def __init__(self) -> None:
            Mic.opened += 1
            self.rate = 16000
            self.n = 0
            self.kind = script(Mic.opened)

        def read(self, timeout: float):  # noqa: ANN201
            if (self.kind == "fails" and self.n >= 5) or self.kind == "nothing":
                _t.sleep(timeout)  # the device went away: nothing arrives
                return None
            self.n += 1
            flat = self.kind == "zeros then sound" and self.n <= 3
            room = np.random.default_rng(self.n).integers(-3, 4, (320, 1)).astype(np.int16)  # a real mic's floor
            return AudioChunk(16000, 2, 1, (self.n - 1) * 320, room * 0 if flat else room)

    return Mic


def test_live_input_reports_a_lost_device_and_resumes_with_the_clock_running() -> None:
    """A source that stops delivering (unplugged) and then works again after reopening."""
    Mic = _scripted_mic(lambda k: "fails" if k == 1 else "sound")
    reports: list[str] = []
    live = LiveInput(Mic, reports.append, stall=0.3, retry=0.05)
    got = []
    for chunk in live:
        got.append(chunk)
        if len(got) == 10:
            live.close()
    assert reports[0].startswith(LiveInput.LOST) and reports[1].startswith(LiveInput.BACK)
    starts = [c.start for c in got]
    assert starts == sorted(starts) and starts[5] > starts[4] + 320  # the gap is kept on the clock


def test_a_reopened_microphone_is_back_only_once_it_delivers_sound() -> None:
    """A sound server that comes back slowly: the first reopened stream delivers nothing, the second
    zeros for a while, then sound. One loss is one "lost" and one "back" (a live game said back, lost
    again, back), and the clock runs on from the first loss."""
    import time as _t

    Mic = _scripted_mic(lambda k: {1: "fails", 2: "nothing"}.get(k, "zeros then sound"))
    reports: list[tuple[int, str]] = []
    live = LiveInput(Mic, lambda text: reports.append((len(got), text)), stall=0.3, retry=0.05)
    got: list = []
    began = _t.monotonic()
    for chunk in live:
        got.append(chunk)
        if len(got) == 12:
            live.close()
    took = _t.monotonic() - began
    assert Mic.opened == 3
    assert [text.split(":")[0] for _, text in reports] == [LiveInput.LOST, LiveInput.BACK], reports
    assert reports[1][0] == 8  # said with the first chunk of sound, after the reopened stream's 3 of zeros
    gap = (got[5].start - got[4].end) / 16000
    assert 2 * (0.3 + 0.05) - 0.05 <= gap <= took  # both stalls and both reopenings are on the clock


def _table_mics(dead: dict[int, tuple[float, float]], seconds: float = 8.0, channels: int = 3,
                at_end: Callable[[], None] = lambda: None) -> type:
    """A source of ``channels`` mics (the fixture's real two-mic recording on 0 and 1, room noise on any more),
    each channel in ``dead`` exact zeros from one time to another (s): a player's mic unplugged. ``at_end``
    is called when its audio is all read."""
    import soundfile as sf

    mc2, rate = sf.read(Path(__file__).parent / "fixtures" / "audio" / "players" / "multichannel" / "mc2.wav",
                        dtype="int16")
    frames = int(seconds * rate)
    table = np.random.default_rng(5).integers(-4, 5, (frames, channels)).astype(np.int16)
    table[:, :2] = np.resize(mc2, (frames, 2))
    for ch, (a, b) in dead.items():
        table[int(a * rate):int(b * rate), ch] = 0

    class Mic(_StandInMic):
        def open(self):  # noqa: ANN202
            self.chunks = iter(ArraySource(table, rate))
            return self

        def read(self, timeout: float):  # noqa: ANN201
            chunk = next(self.chunks, None)
            if chunk is None:
                at_end()
            return chunk

    return Mic


def test_a_players_own_microphone_that_goes_silent_pauses_the_game_with_their_name() -> None:
    """One mic per player, Bob's unplugged (its channel exact zeros, the others live): nothing was said,
    and his calls, heard faintly on Alice's mic, were won by Alice (a QA game: three of Bob's snaps, all
    ruled to her). Now the table is told, by Bob's name, and holds the cards until his mic is back; a
    channel no player uses may be silent, and the whole input silent is the old notice."""
    Mic = _table_mics({1: (1.0, 5.0), 2: (0.0, 8.0)})
    reports: list[tuple[float, str]] = []
    live = LiveInput(lambda: Mic().open(), lambda text: None, owners={0: "Alice", 1: "Bob"})
    live.report = lambda text: reports.append((got[-1].end / 16000 if got else 0.0, text))
    got: list = []
    for chunk in live:
        got.append(chunk)
        if chunk.end >= 7.9 * 16000:
            live.close()
    assert [text.split(":")[0] for _, text in reports] == [LiveInput.LOST, LiveInput.BACK], reports
    (lost_at, lost), (back_at, _) = reports
    assert lost.startswith(f"{LiveInput.LOST}: Bob's microphone (channel 1) sends no sound at all") and \
        "the game is paused" in lost and "plug it back in" in lost and "Alice" not in lost, lost
    assert 2.9 <= lost_at <= 3.1 and 4.9 <= back_at <= 5.1, reports
    # through a game: spoken and printed, and no card turned while Bob could not be heard
    Mic = _table_mics({1: (1.0, 5.0)}, channels=2, at_end=lambda: live.close())
    live = LiveInput(lambda: Mic().open(), lambda text: None, owners={0: "Alice", 1: "Bob"})
    spoken: list[str] = []
    printed: list[str] = []
    log = _Log()
    play_session(TableSession(players=("Alice", "Bob"), seed=3, pace=0.5), log, chunks=live, spotter=None,
                 lines=printed.append, say=lambda text, priority, ev: spoken.append(text), tick=0.0)
    notes = [r for r in log if isinstance(r, TableNote)]
    held = next(n for n in notes if n.text.startswith(LiveInput.LOST))
    freed = next(n for n in notes if n.text.startswith(LiveInput.BACK))
    assert "Bob's microphone (channel 1)" in held.text and held.text in spoken and held.text in printed
    flips = [r.t for r in log if isinstance(r, rules.Flipped)]
    assert not [t for t in flips if held.now < t <= freed.now], (held, freed, flips)
    assert [t for t in flips if t < held.now] and [t for t in flips if t > freed.now], (held, freed, flips)
    # two players' mics silent at once: both named in one notice
    Mic = _table_mics({0: (0.0, 8.0), 2: (0.0, 8.0)})
    reports.clear()
    got.clear()
    live = LiveInput(lambda: Mic().open(), lambda text: None, owners={0: "Alice", 2: "Cara", 1: "Bob"})
    live.report = lambda text: reports.append((0.0, text))
    for chunk in live:
        got.append(chunk)
        if chunk.end >= 4.0 * 16000:
            live.close()
    assert len(reports) == 1 and reports[0][1].startswith(
        f"{LiveInput.LOST}: Alice's microphone (channel 0) and Cara's microphone (channel 2) send no sound at all "
        "(unplugged, muted or switched off?): the game is paused, as their calls"), reports


def test_the_next_flip_does_not_wait_for_an_answer_the_next_answer_cut() -> None:
    """An answer cuts the answers before it (announcer.SpeechQueue): the help cut by "score" is never
    reported finished, so the table must not wait for it (it waited SPEECH_LIMIT, 30 s)."""
    from voicesnap.playback import SpeechEnded, SpeechStarted
    from voicesnap.table import Output, PRIORITY_RULING

    handed: list[tuple[str, bool]] = []
    out = Output(_Log(), say=lambda text, priority, ev: handed.append((text, getattr(ev, "answer", False))),
                 lines=lambda s: None)
    out([Say("the help, 16 seconds of it", PRIORITY_RULING, answer=True)])
    out([Log(SpeechStarted(7, "the help, 16 seconds of it", 1.2))])
    out([Say("Alice 2 games, Bob 1.", PRIORITY_RULING, answer=True)])
    assert handed == [("the help, 16 seconds of it", True), ("Alice 2 games, Bob 1.", True)]
    out([Log(SpeechEnded(7, 2.0, False)), Log(SpeechStarted(8, "Alice 2 games, Bob 1.", 2.0))])
    assert out.busy()
    out([Log(SpeechEnded(8, 3.1, True))])
    assert not out.busy()
    # a ruling is still waited for, whatever answer comes after it
    out([Say("Bob wins 4 cards.", PRIORITY_RULING)])
    out([Say("Alice 2 games, Bob 1.", PRIORITY_RULING, answer=True)])
    out([Log(SpeechStarted(9, "Bob wins 4 cards.", 3.2)), Log(SpeechEnded(9, 4.0, True))])
    assert out.busy()  # the answer after it, not yet said


def test_the_next_flip_waits_while_a_ruling_is_spoken() -> None:
    """Output knows a ruling is playing from the speaker's own start/end reports; the loop waits."""
    from voicesnap.playback import SpeechEnded, SpeechStarted
    from voicesnap.table import Output, PRIORITY_RULING

    out = Output(_Log(), say=lambda *a: None, lines=lambda s: None)
    loop, game = new_loop(pace=1.0)
    loop.busy = out.busy
    out(run_clock(loop, 1.1, {}))
    out([Say("Bob snapped and won 4 cards", PRIORITY_RULING)])
    out([Log(SpeechStarted(7, "Bob snapped and won 4 cards", 1.2))])
    assert out.busy()
    held = [a for now in (2.0, 2.5, 3.0) for a in loop.step(now)]
    assert not any(isinstance(a, Log) and isinstance(a.record, rules.Flipped) for a in held)
    out([Log(SpeechEnded(7, 3.1, True))])
    assert not out.busy()
    flipped = [a.record for a in loop.step(3.2) if isinstance(a, Log) and isinstance(a.record, rules.Flipped)]
    assert [f.t for f in flipped] == [3.2]  # turned when the ruling had been heard, then the pace again
    later = [a.record for now in (3.6, 4.2) for a in loop.step(now)
             if isinstance(a, Log) and isinstance(a.record, rules.Flipped)]
    assert [f.t for f in later] == [4.2]


def _ruling_as_the_card_falls_due(seed: int = 7) -> tuple[float, TableLoop, rules.Game, Output, list]:
    """A game (pace 1 s) run to just before the card after its first match, whose spoken rulings hold the
    next card; Bob's call is handed over only when that card is due (t + 1), its window (0.5 s) closing at
    t + 0.99. Returns (t, loop, game, output, that step's actions)."""
    t = first_match(seed)
    out = Output(_Log(), say=lambda *a: None, lines=lambda s: None)
    loop, game = new_loop(seed, pace=1.0)
    loop.busy = out.busy
    out(run_clock(loop, t + 0.98, {}))
    step = loop.step(t + 1.0, [snap("Bob", t + 0.49)])
    out(step)
    return t, loop, game, out, step


def test_a_ruling_repeated_on_request_holds_the_next_card_until_the_repeat_is_said() -> None:
    """"dealer repeat" just after a ruling answers with the ruling's own words. The speaker's reports were
    matched by text, so the first saying's end let the card be turned while the repeat was still being
    said: it queued behind it, was heard late, and the next card, due a pace after it, cut it."""
    t, loop, _game, out, step = _ruling_as_the_card_falls_due()
    text = next(a.text for a in step if isinstance(a, Say) and a.priority == PRIORITY_RULING)
    out([Log(_SpeechStarted(3, text, t + 1.05))])
    again = loop.step(t + 1.2, [Detection("dealer repeat", t + 1.1, t + 1.15, 1.0, engine="keyboard")])
    out(again)
    assert [a.text for a in again if isinstance(a, Say)] == [text]
    out([Log(_SpeechEnded(3, t + 1.7, True)), Log(_SpeechStarted(4, text, t + 1.7))])
    held = [a for now in (t + 1.8, t + 2.2) for a in loop.step(now)]
    assert out.busy() and not any(isinstance(a, Log) and isinstance(a.record, rules.Flipped) for a in held)
    out([Log(_SpeechEnded(4, t + 2.35, True))])
    flipped = [a.record for a in loop.step(t + 2.4) if isinstance(a, Log) and isinstance(a.record, rules.Flipped)]
    assert [f.t for f in flipped] == [pytest.approx(t + 2.4)]


def _speed_loop(pace: float) -> tuple[TableLoop, Output]:
    from voicesnap.variants import SpeedSnap

    game = SpeedSnap(list(PLAYERS), seed=3)
    loop = TableLoop(Referee(game, 0.5), PLAYERS, pace=pace, make_call=Call, describe=describe,
                     is_over=lambda ev: isinstance(ev, rules.GameOver), active_player=lambda: None,
                     first_flip_delay=1.0)
    out = Output(_Log(), say=lambda *a: None, lines=lambda s: None, clock=lambda: loop.now)
    loop.busy = out.busy
    return loop, out


def _cards(actions: list) -> list:
    return [a.record for a in actions if isinstance(a, Log) and isinstance(a.record, rules.Flipped)]


def test_a_speed_snap_round_is_said_whole_and_listened_to_before_the_next() -> None:
    """Everyone's card is said in turn (about 1.2 s each): the next round, due at the pace, cut the rest,
    and with 4 players at a pace of 3 s 9 cards in 93 were never heard (the announcer's rehearsal). The
    table waits for the round's last card to be said, then ``ROUND_GAP`` more to call a match it made."""
    loop, out = _speed_loop(pace=1.0)
    first = loop.step(1.0)
    out(first)
    cards = [a for a in first if isinstance(a, Say) and isinstance(a.source, rules.Flipped)]
    assert len(_cards(first)) == len(cards) == 3 and out.busy()
    held: list = []
    for k, say in enumerate(cards):  # said one after another from 1.0 s, 1.2 s each
        start, end = 1.0 + 1.2 * k, 2.2 + 1.2 * k
        out([Log(_SpeechStarted(10 + k, say.text, start))])
        held += [a for now in np.arange(start + 0.1, end + 0.05, 0.1) for a in loop.step(round(now, 3))]
        out([Log(_SpeechEnded(10 + k, end, True))])
    assert loop.now == pytest.approx(4.6) and not _cards(held)  # due at 2.0, 3.0, 4.0: all held
    gap = [a for now in (4.7, 5.0, 5.55) for a in loop.step(now)]
    assert not _cards(gap) and out.busy()  # said at 4.6, listened to until 5.6
    step = loop.step(5.65)
    out(step)
    assert [c.t for c in _cards(step)] == [5.65] * 3 and Output.ROUND_GAP == 1.0
    assert out.busy()  # the new round, being said


def test_a_speed_snap_round_is_not_waited_on_once_speech_has_stopped() -> None:
    """Speech gone for good (espeak-ng failed mid-game): nothing will report the round said, so the next
    round comes at the pace, not SPEECH_LIMIT s later."""
    from voicesnap.playback import SpeechStopped

    loop, out = _speed_loop(pace=1.0)
    out(loop.step(1.0))
    assert out.busy() and not _cards(loop.step(2.0))
    out([Log(SpeechStopped("espeak-ng stopped"))])
    assert not out.busy() and len(_cards(loop.step(2.05))) == 3


def test_a_classic_card_is_not_waited_on() -> None:
    """One card at a time: the next card cuts it at the pace, as a player who set the pace wants."""
    loop, game = new_loop(pace=1.0)
    out = Output(_Log(), say=lambda *a: None, lines=lambda s: None, clock=lambda: loop.now)
    loop.busy = out.busy
    out(loop.step(1.0))
    assert not out.busy() and len(_cards(loop.step(2.0))) == 1


def test_a_ruling_made_when_the_next_card_is_due_is_heard_before_that_card() -> None:
    """A late call's ruling and the next card fall due in one step: the card waits for the ruling.

    Turned at once, the card's announcement queued behind the ruling's speech; on a loaded
    machine it started seconds after the card was counted (CI, test_e2e_devices).
    """
    from voicesnap.playback import SpeechEnded, SpeechStarted

    t, loop, game, out, step = _ruling_as_the_card_falls_due()
    assert [type(r).__name__ for r in rulings(step)] == ["SnapWon"]
    assert not any(isinstance(a, Log) and isinstance(a.record, rules.Flipped) for a in step)
    assert out.busy()  # the ruling is with the speaker
    text = next(a.text for a in step if isinstance(a, Say) and a.priority == PRIORITY_RULING)
    out([Log(SpeechStarted(3, text, t + 1.05))])
    held = [a for now in (t + 1.2, t + 1.6) for a in loop.step(now)]
    assert not any(isinstance(a, Log) and isinstance(a.record, rules.Flipped) for a in held)
    out([Log(SpeechEnded(3, t + 1.7, True))])
    flipped = [a.record for a in loop.step(t + 1.8) if isinstance(a, Log) and isinstance(a.record, rules.Flipped)]
    assert [f.t for f in flipped] == [pytest.approx(t + 1.8)]
    assert game.total() == 52


def test_with_no_speaker_a_held_card_keeps_its_due_time() -> None:
    """Files and replays have nobody to wait for: the card is still turned at its pace time."""
    seed = 7
    t = first_match(seed)
    loop, game = new_loop(seed, pace=1.0)
    run_clock(loop, t + 0.98, {})
    first = loop.step(t + 1.0, [snap("Bob", t + 0.49)])
    then = loop.step(t + 1.02)
    assert [type(r).__name__ for r in rulings(first)] == ["SnapWon"]
    flipped = [a.record for a in first + then if isinstance(a, Log) and isinstance(a.record, rules.Flipped)]
    assert [f.t for f in flipped] == [t + 1.0]


def _to_pool_match(seed: int = 0) -> tuple[rules.Game, Referee, float, list[float]]:
    """Play a real game until a tie forms a pool and a later flip matches the pool's top card.

    Returns the game, its referee, the matching flip's time, and the times of flips
    made while a pool existed but did not match it.
    """
    game = rules.Game(PLAYERS, seed)
    ref = Referee(game, 0.5)
    t, pooled, unmatched = 1.0, False, []
    for _ in range(120):
        flipped = [e for e in ref.flip(t) if isinstance(e, rules.Flipped)]
        if flipped and flipped[-1].match and not pooled:
            ref.submit(Call("Alice", "snap", t + 0.3))
            ref.submit(Call("Bob", "snap", t + 0.33))
            pooled = any(isinstance(e, rules.TieToPool) for e in ref.advance(t + 0.9))
        elif flipped and flipped[-1].pool_match and pooled:
            return game, ref, t, unmatched
        elif pooled:
            unmatched.append(t)
        ref.advance(t + 0.9)
        t += 1.0
    raise AssertionError("seed gives no pool match; pick another")


SEED_POOL = 1  # a pool forms, later a card matches it, and the card after does not


def test_a_pool_claim_is_open_only_around_a_card_that_matches_the_pool() -> None:
    """Spotters hold "snap" for a possible "pool" only while a claim is open, not whenever a pool exists."""
    from voicesnap.table import POOL_CLAIM_HOLD, PoolClaim

    now = [0.0]
    # replay the same game, asking the claim after every flip as the spotter thread does
    game, ref, t_match, unmatched = _to_pool_match(SEED_POOL)
    assert unmatched, "the seed should give flips while a pool exists that do not match it"
    fresh = rules.Game(PLAYERS, SEED_POOL)
    claim = PoolClaim([fresh, lambda: now[0]])
    ref2 = Referee(fresh, 0.5)
    t = 1.0
    while t < t_match:
        flipped = [e for e in ref2.flip(t) if isinstance(e, rules.Flipped)]
        if flipped and flipped[-1].match and fresh.pool_size() == 0:
            ref2.submit(Call("Alice", "snap", t + 0.3))
            ref2.submit(Call("Bob", "snap", t + 0.33))
        ref2.advance(t + 0.9)
        now[0] = t + 0.5
        if t in unmatched:
            assert fresh.pool_size() > 0 and not claim(), f"no claim is open at the flip at {t}"
        t += 1.0
    ref2.flip(t_match)
    now[0] = t_match + 0.2
    assert fresh.pool_top() is not None and claim()
    # the next card: a claim made just before it may still be being spoken, for a while
    assert not any(isinstance(e, rules.Flipped) and e.pool_match for e in ref2.flip(t_match + 1.0))
    now[0] = t_match + 1.0 + POOL_CLAIM_HOLD - 0.1
    assert claim()
    now[0] = t_match + 1.0 + POOL_CLAIM_HOLD + 0.1
    assert not claim()

    # a claim that has been won is spent at once
    game2 = rules.Game(PLAYERS, SEED_POOL)
    claim2 = PoolClaim([game2, lambda: now[0]])
    ref3 = Referee(game2, 0.5)
    t = 1.0
    while t <= t_match:
        flipped = [e for e in ref3.flip(t) if isinstance(e, rules.Flipped)]
        if flipped and flipped[-1].match and game2.pool_size() == 0:
            ref3.submit(Call("Alice", "snap", t + 0.3))
            ref3.submit(Call("Bob", "snap", t + 0.33))
        if t < t_match:
            ref3.advance(t + 0.9)
        t += 1.0
    now[0] = t_match + 0.1
    assert claim2()
    ref3.submit(Call("Cara", "snap pool", t_match + 0.3))
    assert any(isinstance(e, rules.PoolWon) for e in ref3.advance(t_match + 0.9))
    assert not claim2()


@pytest.mark.parametrize("shorter, tie", [(0.0, True), (0.1, False)])
def test_the_voice_lag_is_just_enough_for_the_slowest_tie_rival(shorter: float, tie: bool) -> None:
    """The default listen-lag keeps a rival in time whose word is the longest and whose
    recognition the slowest; 100 ms less and that tie is lost (the lag is not padded)."""
    from voicesnap.table import SNAP_WORD, SPOTTER_LATENCY, voice_lags

    lag, pool_lag = voice_lags(0.1, 0.5)
    assert (lag, pool_lag) == (0.5, 1.4)
    seed = 7
    t = first_match(seed)
    loop, game = new_loop(seed)
    loop._lag = lag - shorter
    first = snap("Alice", t + 0.2)  # a short word, recognised quickly
    rival = snap("Cara", t + 0.29)  # inside the tie window; long word, slow recogniser
    feed = {t + 0.55: [first], round(rival.onset + SNAP_WORD + SPOTTER_LATENCY, 3): [rival]}
    found = rulings(run_clock(loop, t + 1.6, feed))
    ties = [r for r in found if isinstance(r, rules.TieToPool)]
    assert bool(ties) is tie
    if not tie:
        assert [r.player for r in found if isinstance(r, rules.SnapWon)] == ["Alice"]


class _PublicOnly:
    """A real game seen only through the engine's public accessors (rules.Game's
    "public view"): the table must not reach past them, so the engine can change."""

    PUBLIC = {"players", "call_words", "is_out", "eliminated", "pool_size", "pool_top", "showing",
              "on_show", "view", "state", "is_over", "variant"}

    def __init__(self, game: rules.Game) -> None:
        self._game = game

    def __getattr__(self, name: str):  # noqa: ANN204
        if name not in self.PUBLIC:
            raise AttributeError(f"the table read game.{name}, an engine internal")
        return getattr(self._game, name)


def test_the_table_reads_the_engine_only_through_its_public_accessors() -> None:
    from voicesnap import variants
    from voicesnap.table import PoolClaim, snap_words

    animal = variants.create("animal", PLAYERS, 4)
    assert snap_words(_PublicOnly(animal)) == dict(animal.animals) and len(set(animal.animals.values())) == 3
    silent = variants.create("silent", PLAYERS, 4)
    assert snap_words(_PublicOnly(silent)) == {p: "slam" for p in PLAYERS}
    assert snap_words(_PublicOnly(rules.Game(PLAYERS, 4))) == {}
    game, _ref, _t, _ = _to_pool_match(SEED_POOL)  # the card on show matches the pool's top card
    assert PoolClaim([_PublicOnly(game), lambda: 0.0])()
    keymap = Keymap(PLAYERS, snap_words=snap_words(_PublicOnly(animal)))
    assert keymap.lookup("q").kind == animal.animals["Alice"]


def _announcing_loop(seed: int) -> tuple[TableLoop, rules.Game]:
    loop, game = new_loop(seed)
    loop.peek = lambda t, g=game: g.copy().flip(t)
    loop.ANNOUNCE_WAIT = 0.5  # (pace 1 s here: the earlier cards, never announced, are turned in time)
    return loop, game


@pytest.mark.parametrize("onset_after_flip, wins", [(0.05, False), (0.15, True)])
def test_with_speech_a_card_counts_from_when_its_announcement_is_heard(onset_after_flip: float,
                                                                       wins: bool) -> None:
    """The flip is announced first and turned for the referee when the announcement starts
    (its time on the input clock); a call before that cannot be on the new card."""
    seed = 7
    t = first_match(seed)
    heard_at = t + 0.12  # the announcement's first sample, mapped onto the input clock
    loop, game = _announcing_loop(seed)
    actions = run_clock(loop, t, {})
    spoken = [a for a in actions if isinstance(a, Say) and isinstance(a.source, rules.Flipped)]
    flips = [a.record for a in actions if isinstance(a, Log) and isinstance(a.record, TableStep)
             and a.record.kind == "flip"]
    assert spoken[-1].source.t == t and spoken[-1].source.match  # announced at the due time...
    # ...but not turned yet (the earlier cards, never heard to start here, were turned after the wait)
    assert [f.now for f in flips] == [pytest.approx(k + loop.ANNOUNCE_WAIT, abs=0.021) for k in range(1, int(t))]
    before = game.showing()
    actions += loop.announced(spoken[-1].text, heard_at)
    assert game.showing() != before
    turned = [a.record for a in actions if isinstance(a, Log) and isinstance(a.record, rules.Flipped)]
    assert turned[-1].t == heard_at and turned[-1].card == spoken[-1].source.card
    assert sum(1 for a in actions if isinstance(a, Say) and a.text == spoken[-1].text) == 1  # said once
    call = snap("Bob", t + onset_after_flip)
    actions = run_clock(loop, t + 1.2, {t + 0.3: [call]})
    found = rulings(actions)
    assert bool([r for r in found if isinstance(r, rules.SnapWon) and r.player == "Bob"]) is wins
    if not wins:
        assert [type(r).__name__ for r in found] == ["WrongCall"]
    # without speech the same early call wins: the card counts from its due time
    plain, _ = new_loop(seed)
    assert any(isinstance(r, rules.SnapWon) for r in rulings(run_clock(plain, t + 1.2, {t + 0.3: [call]})))


def test_a_card_heard_late_sets_the_pace_anew_so_no_card_goes_by_unheard() -> None:
    """A long notice (the microphone lost, then back) holds a card's announcement back for seconds. The cards
    after it come a pace apart from when it was heard; from its due time they all fell due at once and each
    cut the last one's announcement (a live game turned 7 cards in 0.33 s)."""
    loop, game = new_loop(7, pace=1.0)
    loop.peek = lambda t, g=game: g.copy().flip(t)
    actions = run_clock(loop, 1.05, {})
    spoken = [a for a in actions if isinstance(a, Say) and isinstance(a.source, rules.Flipped)]
    assert len(spoken) == 1 and spoken[0].source.t == pytest.approx(1.0, abs=0.021)
    actions = run_clock(loop, 6.0, {})  # the speaker is busy: nothing starts
    assert not [a for a in actions if isinstance(a, Say) and isinstance(a.source, rules.Flipped)]
    actions = loop.announced(spoken[0].text, 6.0)  # heard 5 s late
    assert [a.record.t for a in actions if isinstance(a, Log) and isinstance(a.record, rules.Flipped)] == [6.0]
    assert loop.next_flip == pytest.approx(7.0)
    actions = run_clock(loop, 6.9, {})
    assert not [a for a in actions if isinstance(a, Say) and isinstance(a.source, rules.Flipped)]  # not at once
    # a usual start, tens of ms after the due time, leaves the pace as it was
    actions = run_clock(loop, 7.02, {})
    spoken = [a for a in actions if isinstance(a, Say) and isinstance(a.source, rules.Flipped)]
    assert len(spoken) == 1
    loop.announced(spoken[0].text, 7.06)
    assert loop.next_flip == pytest.approx(8.0, abs=0.021)


def test_a_flip_whose_announcement_never_starts_is_turned_anyway() -> None:
    loop, game = new_loop(7, pace=5.0)
    loop.peek = lambda t, g=game: g.copy().flip(t)
    actions = run_clock(loop, 1.0 + TableLoop.ANNOUNCE_WAIT + 0.1, {})
    flips = [a.record for a in actions if isinstance(a, Log) and isinstance(a.record, rules.Flipped)]
    assert len(flips) == 1 and flips[0].t == pytest.approx(1.0 + TableLoop.ANNOUNCE_WAIT, abs=0.021)
    assert game.view().flip == 1


def test_a_flip_waiting_for_its_announcement_is_turned_at_once_when_speech_stops() -> None:
    loop, game = new_loop(7, pace=5.0)
    loop.peek = lambda t, g=game: g.copy().flip(t)
    actions = run_clock(loop, 1.5, {})
    assert not any(isinstance(a, Log) and isinstance(a.record, rules.Flipped) for a in actions)
    actions = loop.speech_stopped("espeak-ng failed")
    flips = [a.record for a in actions if isinstance(a, Log) and isinstance(a.record, rules.Flipped)]
    assert [f.t for f in flips] == [pytest.approx(1.5)]
    assert any(isinstance(a, Notice) and "espeak-ng failed" in a.text for a in actions)
    later = [a.record for now in np.arange(1.52, 6.1, 0.02) for a in loop.step(round(float(now), 4))
             if isinstance(a, Log) and isinstance(a.record, rules.Flipped)]
    assert [f.t for f in later] == [pytest.approx(6.0)]  # the next card when due, not announced first


@pytest.mark.audio_device
def test_live_input_pauses_at_once_when_the_device_stream_dies_and_resumes() -> None:
    """A real microphone stream (the CI's virtual one) that PortAudio stops under us, as
    when a device errors, is taken as lost at once (not after the stall), then reopened."""
    import os
    import subprocess
    import time as _t

    from voicesnap.audio import MicSource

    if not os.environ.get("VOICESNAP_TEST_MIC_SINK"):
        pytest.skip("no virtual microphone (VOICESNAP_TEST_MIC_SINK; .ci/pulse.sh sets it up)")
    if subprocess.run(["pactl", "info"], capture_output=True).returncode != 0:
        pytest.skip("PulseAudio is not running (.ci/pulse.sh starts it)")
    opened: list[MicSource] = []

    def open_mic() -> MicSource:
        opened.append(MicSource(channels=1, option="--input").open())
        return opened[-1]

    reports: list[tuple[float, str]] = []
    live = LiveInput(open_mic, lambda text: reports.append((_t.monotonic(), text)), stall=30.0, retry=0.05)
    watchdog = threading.Timer(10.0, live.close)  # the stall alone would take 30 s: fail, don't hang
    watchdog.start()
    got, killed_at = 0, None
    try:
        for _chunk in live:
            got += 1
            if got == 25 and killed_at is None:
                killed_at = _t.monotonic()
                opened[0]._stream.abort()  # PortAudio stops the stream: the device is gone
            if len(reports) >= 2 and got > 30:
                break
    finally:
        watchdog.cancel()
        live.close()
    texts = [t for _, t in reports]
    assert texts and texts[0].startswith(LiveInput.LOST) and "plug the microphone back in" in texts[0]
    assert len(texts) >= 2 and texts[1].startswith(LiveInput.BACK) and len(opened) >= 2
    assert killed_at is not None and reports[0][0] - killed_at < 30.0 - 20.0  # well before the stall


def test_printed_lines_are_the_announcers_words_at_the_chosen_verbosity() -> None:
    """--text, the display and speech say the same thing; --verbosity ranks drops names and suits."""
    from voicesnap import announcer
    from voicesnap.cards import Card, Rank, Suit
    from voicesnap.table import PRIORITY_FLIP, PRIORITY_RULING, describe

    flip = rules.Flipped(1.0, 0, "Ann", Card(Rank.EIGHT, Suit.HEARTS), 1, False, False)
    assert describe(flip, "ranks") == ("Eight", PRIORITY_FLIP)
    assert describe(flip, "names") == ("Ann, Eight of Hearts", PRIORITY_FLIP)
    won = rules.SnapWon(2.0, "Bob", "snap", (0, 1), (3, 2), 5)
    spoken = announcer.describe(won, announcer.Verbosity.NAMES)
    assert describe(won) == (spoken[0], PRIORITY_RULING) == ("Bob wins 5 cards.", PRIORITY_RULING)
    refreshed = rules.Refreshed(3.0, 0, "Ann", 12)
    assert describe(refreshed, "names") is None and describe(refreshed, "all") is not None


def test_status_command_answers_in_the_announcers_words_for_single_pile_too() -> None:
    """The table once had its own status wording, which named a 'showing' card per seat in Single Pile Snap."""
    from voicesnap import announcer, variants
    from voicesnap.table import status_text

    game = variants.create("single-pile", ["Ann", "Ben", "Cat"], seed=4)
    for t in range(1, 6):
        game.flip(float(t))
    text = status_text(game)
    assert text == announcer.status_words(game.state, "Ann")  # (Ann flips next: her turn, said last)
    assert "Centre pile 5 cards" in text and "showing" not in text and text.endswith("Ann's turn.")


def _replay_mic(samples: np.ndarray):  # noqa: ANN202
    """A source that delivers a recording in 20 ms chunks, then nothing (as LiveInput's open_source)."""
    from voicesnap.audio import AudioChunk

    class Mic:
        rate = 16000

        def __init__(self) -> None:
            self.at = 0

        def read(self, timeout: float):  # noqa: ANN201
            if self.at >= len(samples):
                return None
            chunk = AudioChunk(16000, 2, samples.shape[1], self.at, samples[self.at : self.at + 320])
            self.at += 320
            return chunk

        def stats(self) -> dict:
            return {"overflows": 0, "dropped_frames": 0}

        def close(self) -> None:
            pass

    return Mic


def _reports_over(samples: np.ndarray) -> list[str]:
    reports: list[str] = []
    live = LiveInput(_replay_mic(samples), reports.append, stall=0.2, retry=0.05)
    for chunk in live:
        if chunk.end >= len(samples):
            live.close()
    return reports


def test_a_microphone_driven_past_full_scale_is_reported_with_the_fix_once_per_half_minute() -> None:
    """The corpus's hard-clipped calls (every player 12-18 dB past full scale, ~12 s): the players are
    told once (their calls would be heard but named to nobody, so ignored); clean calls say nothing."""
    from voicesnap.audio import read_wav

    corpus = Path(__file__).parent / "fixtures" / "audio" / "corpus"
    clipped, _ = read_wav(corpus / "clipped_calls.wav")
    clean, _ = read_wav(corpus / "clean_alice.wav")
    said = [r for r in _reports_over(clipped) if r.startswith(LiveInput.CLIPPING)]
    assert len(said) == 1 and "turn the input gain down" in said[0]
    assert not [r for r in _reports_over(clean) if r.startswith(LiveInput.CLIPPING)]
    # two channels, only the second clipped: the report names it
    both = np.concatenate([clean[: len(clipped)], clipped[: len(clean)]], axis=1)
    said2 = [r for r in _reports_over(both) if r.startswith(LiveInput.CLIPPING)]
    assert len(said2) == 1 and "on channel 1:" in said2[0]
    # one mic per player: the channel's player named with it
    reports: list[str] = []
    live = LiveInput(_replay_mic(both), reports.append, stall=0.2, retry=0.05, owners={0: "Alice", 1: "Bob"})
    for chunk in live:
        if chunk.end >= len(both):
            live.close()
    said3 = [r for r in reports if r.startswith(LiveInput.CLIPPING)]
    assert len(said3) == 1 and said3[0].startswith(f"{LiveInput.CLIPPING} on channel 1 (Bob's): shouted"), said3


def test_ctrl_c_waits_for_the_end_of_a_deferred_block_then_is_raised_or_dropped() -> None:
    import signal

    from voicesnap.table import interrupts_deferred

    done = []
    with pytest.raises(KeyboardInterrupt):
        with interrupts_deferred():
            signal.raise_signal(signal.SIGINT)
            done.append("the block ran to its end")
    with interrupts_deferred(drop=True):  # already stopping: a second Ctrl-C is the same request
        signal.raise_signal(signal.SIGINT)
        done.append("and again")
    assert done == ["the block ran to its end", "and again"]
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler  # put back


@pytest.mark.parametrize("command", ["dealer status", "dealer score", "dealer help", "dealer repeat", "dealer slower"])
def test_an_answer_the_players_asked_for_is_heard_whole_before_the_next_card(command: str) -> None:
    """Answers were said at information priority, and the next card cut them: "status" after 0.34 s
    and "help" after 0.31 s in a live game, so a player who plays by ear could hear neither mid-game.
    The next card now waits for the answer, as it waits for a ruling."""
    class _Log:
        def write(self, *records: object) -> None:
            pass

    spoken: list[tuple[str, int]] = []
    output = Output(_Log(), say=lambda text, priority, ev: spoken.append((text, priority)), lines=lambda s: None)
    loop, game = new_loop(7, pace=1.0)
    loop.busy = output.busy
    loop.score = lambda: "alice 0, bob 0"
    output(run_clock(loop, 1.5, {}))  # the first card, so "repeat" has something to repeat
    output(run_clock(loop, 1.6, {1.6: [Detection(command, 1.55, 1.9, 0.9, engine="vosk")]}))
    answer = spoken[-1]
    assert answer[1] == PRIORITY_RULING and answer[0], spoken
    flips = game.view().flip
    output([a for t in np.arange(1.62, 4.0, 0.02) for a in loop.step(round(float(t), 4))])
    assert game.view().flip == flips  # held while the answer is spoken (no speech-ended came)
    output([Log(_SpeechStarted(1, answer[0], 1.7)), Log(_SpeechEnded(1, 3.9, True))])
    output([a for t in np.arange(4.0, 4.2, 0.02) for a in loop.step(round(float(t), 4))])
    assert game.view().flip == flips + 1  # then the next card at once


def test_a_game_says_who_goes_first_and_a_resumed_one_says_where_it_is(tmp_path: Path) -> None:
    """"Game 1. alice deals." was said at information priority, so the first card cut it, and never
    said who goes first; a resumed game said nothing at all before its next card."""
    spoken: list[tuple[str, int]] = []

    def say(text: str, priority: int, ev: object) -> None:
        spoken.append((text, priority))

    settings = TableSession(players=PLAYERS, seed=7, pace=1.0)
    path = tmp_path / "log.jsonl"
    with gamelog.GameLog(path) as log:
        play_session(settings, log, chunks=ArraySource(np.zeros(16000 * 3, np.int16), 16000, chunk_frames=320),
                     say=say, lines=lambda s: None, first_flip_delay=1.0)
    game = rules.Game(PLAYERS, 7)
    first = f"Game 1. {PLAYERS[game.dealer]} deals; {PLAYERS[game.active]} goes first."
    assert spoken[0] == (first, PRIORITY_RULING), spoken[:2]
    spoken.clear()
    back = rebuild([ev for _, ev in gamelog.read(path)])
    where = status_text(back.game)  # (before the resumed game turns any card)
    with gamelog.GameLog(path) as log:
        play_session(settings, log, chunks=ArraySource(np.zeros(16000, np.int16), 16000, chunk_frames=320),
                     say=say, lines=lambda s: None, resumed=back)
    assert spoken[0][0].startswith("Resuming game 1. ") and spoken[0][1] == PRIORITY_RULING, spoken[:2]
    assert spoken[0][0] == f"Resuming game 1. {where}"
    # Speed Snap: everyone flips at once, so nobody goes first (it said "bob goes first")
    spoken.clear()
    with gamelog.GameLog(tmp_path / "speed.jsonl") as log:
        play_session(TableSession(players=PLAYERS, seed=7, pace=1.0, variant="speed"), log,
                     chunks=ArraySource(np.zeros(16000, np.int16), 16000, chunk_frames=320), say=say,
                     lines=lambda s: None)
    assert spoken[0][0].startswith(f"Game 1. {PLAYERS[game.dealer]} deals; everyone turns a card at once. Speed Snap:")
    assert spoken[0][1] == PRIORITY_RULING


def test_a_variants_rule_is_said_once_a_sitting_and_leads_help(tmp_path: Path) -> None:
    """In Slapjack a player by ear heard "Game 1. Alice deals; Bob goes first." and never that "slap" on a
    Jack is a call; help named the keys and commands only, as in Classic Snap. Each variant's rule is now
    said with the first game of a sitting (a resumed one too, not each game of a session) and by help."""
    spoken: list[str] = []
    for name in variants.names():
        spoken.clear()
        path = tmp_path / f"{name}.jsonl"
        settings = TableSession(players=PLAYERS, seed=7, pace=1.0, variant=name)
        with gamelog.GameLog(path) as log:
            play_session(settings, log, chunks=ArraySource(np.zeros(16000 * 2, np.int16), 16000, chunk_frames=320),
                         say=lambda text, priority, ev: spoken.append(text), lines=lambda s: None)
        rule = variants.create(name, PLAYERS, 7).rule_words()
        assert bool(rule) == (name != "classic"), name
        assert spoken[0].startswith("Game 1. ") and (rule in spoken[0] if rule else "." not in spoken[0][8:-1]), spoken[0]
        assert sum(rule in text for text in spoken) == (1 if rule else len(spoken)), spoken
        assert not any(c in rule for c in "`_=<>()\""), rule  # plain words for a screen reader
        spoken.clear()
        back = rebuild([ev for _, ev in gamelog.read(path)])
        with gamelog.GameLog(path) as log:
            play_session(settings, log, chunks=ArraySource(np.zeros(16000, np.int16), 16000, chunk_frames=320),
                         say=lambda text, priority, ev: spoken.append(text), lines=lambda s: None, resumed=back)
        assert spoken[0].startswith("Resuming game 1. ") and rule in spoken[0], spoken[0]
    assert "slap" in variants.create("slapjack", PLAYERS, 7).rule_words()
    assert "fruit deck" in variants.create("picture", PLAYERS, 7, deck="fruit").rule_words()
    loop, _ = new_loop(7, pace=1.0)
    loop.rule = variants.create("slapjack", PLAYERS, 7).rule_words()
    assert _help_of(loop, 0.5).startswith(loop.rule + " Call snap or snap pool."), _help_of(loop, 0.5)


def test_commands_that_make_no_sense_now_are_answered_and_not_acted_on() -> None:
    """A flip while paused turned a card; resume when not paused, a second pause, and a pace change
    with no pace got silence."""
    def said(actions: list) -> list[str]:
        return [a.text for a in actions if isinstance(a, (Say, Notice))]

    def cmd(word: str, t: float) -> Detection:
        return Detection(f"dealer {word}", t, t + 0.4, 0.9, engine="vosk")

    loop, game = new_loop(7, pace=1.0)
    run_clock(loop, 1.5, {})
    assert said(loop.step(1.6, [cmd("resume", 1.55)])) == ["Not paused."]
    assert any("paused" in t for t in said(loop.step(1.7, [cmd("pause", 1.65)])))
    flips = game.view().flip
    assert said(loop.step(1.8, [cmd("flip", 1.75)])) == ["Paused. Say resume after dealer or press o first."]
    assert said(loop.step(1.9, [cmd("pause", 1.85)])) == ["Paused. Say resume after dealer or press o first."]
    assert game.view().flip == flips  # no card turned while paused
    assert said(loop.step(2.0, [cmd("resume", 1.95)])) == ["resumed"]
    manual, _ = new_loop(7, pace=None)
    assert said(manual.step(1.0, [cmd("faster", 0.9)])) == [
        "There is no pace: cards are turned when someone says flip after dealer or presses space."]
    assert "dealer resume" not in " ".join(said(loop.step(2.1, [cmd("pause", 2.05)])))  # its own words
    # Keyboard-only play was told to "say resume after dealer", with nothing listening.
    keys, _ = new_loop(7, pace=1.0)
    keys.voice = False
    keyed = Detection("dealer pause", 1.0, 1.0, 1.0, engine="keyboard")
    assert said(keys.step(1.1, [keyed])) == ["paused: to go on, press o"]
    assert said(keys.step(1.2, [Detection("dealer flip", 1.15, 1.15, 1.0, engine="keyboard")])) == [
        "Paused. Press o first."]  # it said "Say resume first" with nothing listening


def _help_of(loop: TableLoop, t: float) -> str:
    """The loop's answer to the help command given at ``t``."""
    acts = loop.step(t + 0.05, [Detection("dealer help", t, t, 1.0, engine="keyboard")])
    return next(a.text for a in acts if isinstance(a, Say) and a.answer)


def test_help_says_how_to_call_and_command_in_the_ways_this_game_hears() -> None:
    """Help said "Call snap, or snap pool. You can say pause, ... each after the word dealer" in a keyboard
    game with nothing listening, and never named the seats' call keys (printed once, at the start)."""
    seats = Keymap(PLAYERS, calls=("snap", "snap pool")).call_keys()  # (the classic game's: play_session's key_calls)
    # "for" between key and call: said as "Alice q snap, a snap pool", the key a was heard as the word "a"
    assert seats == "Alice q for snap, a for snap pool; Bob w for snap, s for snap pool; Cara e for snap, d for snap pool"
    keys_only, _ = new_loop(7, pace=1.0)
    keys_only.voice, keys_only.call_words, keys_only.call_keys = False, "", seats
    said = _help_of(keys_only, 0.5)
    assert said.startswith(f"Call keys: {seats}. Command keys: p pause, l repeat, i status, k score, minus slower, ")
    assert said.endswith("question mark help, Escape end game, space flip.") and "o resume" not in said
    assert "dealer" not in said and "say" not in said
    keys_only.step(0.7, [Detection("dealer pause", 0.6, 0.6, 1.0, engine="keyboard")])
    paused = _help_of(keys_only, 0.8)
    assert "o resume" in paused and "p pause" not in paused and "space flip" not in paused
    both, _ = new_loop(7, pace=1.0)  # voice (Vosk) and keys: both, in one list
    both.call_keys = seats
    said = _help_of(both, 0.5)
    assert said.startswith(f"Call snap or snap pool. Call keys: {seats}. Commands, said after the word dealer "
                           "or by key: p pause, l repeat,"), said
    voice_only, _ = new_loop(7, pace=1.0)
    voice_only.keys = False
    assert _help_of(voice_only, 0.5) == ("Call snap or snap pool. You can say pause, repeat, status, score, slower, "
                                         "faster, louder, quieter, help, end game or flip, each after the word dealer.")


def test_help_and_the_pause_notice_in_a_game_whose_engine_hears_no_commands_name_keys(tmp_path: Path) -> None:
    """With --engine keyword or enrolled (no Vosk) calls are heard but commands are keys only: help and
    the pause notice told the players to say them."""
    from voicesnap.keyboard import RawKeyboard
    from voicesnap.table import call_words_text, hears_commands

    assert [hears_commands(e) for e in ("keyword", "enrolled", "slam", "none", "keyboard")] == [False] * 5
    assert all(hears_commands(e) for e in ("combined", "combined+keyword", "vosk+keyword", "vosk+slam",
                                           "vosk+keyword+strict"))
    assert call_words_text(rules.Game(PLAYERS, 1)) == "Call snap or snap pool."

    class Deaf:  # calls by voice, none made (the microphone hears silence)
        def accept(self, chunk: object) -> list:
            return []

        def flush(self) -> list:
            return []

    said = {}
    for engine in ("keyword", "combined"):
        rate = 16000
        audio = ArraySource(np.zeros(int(rate * 2.5), dtype=np.int16), rate, chunk_frames=320, realtime=True)
        settings = TableSession(players=PLAYERS, seed=7, pace=1.0, engine=engine)
        out: list[str] = []
        with gamelog.GameLog(tmp_path / f"{engine}.jsonl") as log, \
                _keys_later([(0.8, b"?"), (1.2, b"p")]) as pipe, RawKeyboard(pipe) as keys:
            play_session(settings, log, chunks=audio, spotter=Deaf(), keyboard=keys, lines=out.append, text=True,
                         first_flip_delay=1.0)
        said[engine] = out
    helped = next(line for line in said["keyword"] if line.startswith("Call snap or snap pool. Call keys: Alice q"))
    assert "Command keys: p pause" in helped and "dealer" not in helped
    assert "paused: to go on, press o" in said["keyword"]
    helped = next(line for line in said["combined"] if line.startswith("Call snap or snap pool. Call keys: Alice q"))
    assert "Commands, said after the word dealer or by key: p pause" in helped
    assert "paused: to go on, say resume after dealer or press o" in said["combined"]
    # said at the start too (it was only printed before the game): a player by ear said "dealer pause" and
    # heard nothing
    game = rules.Game(PLAYERS, 7)
    opening = f"Game 1. {PLAYERS[game.dealer]} deals; {PLAYERS[game.active]} goes first."
    assert said["keyword"][0] == (opening + " Voice commands are not heard in this game; press question mark for "
                                  "the command keys."), said["keyword"][:2]
    assert said["combined"][0] == opening, said["combined"][:2]


def test_the_screen_shows_the_answers_to_commands_until_the_next_answer_or_notice(tmp_path: Path) -> None:
    """Without --text the answers to status, score, help and repeat were spoken only, and the screen was not
    even redrawn: with --quiet, or speech gone, they were lost."""
    from voicesnap.keyboard import RawKeyboard

    settings = TableSession(players=PLAYERS, seed=7, pace=5.0)
    frames: list[str] = []
    with gamelog.GameLog(tmp_path / "log.jsonl") as log, \
            _keys_later([(0.8, b"i"), (1.2, b"k"), (1.6, b"?"), (2.0, b"p"), (2.4, b"\x1b")]) as pipe, \
            RawKeyboard(pipe) as keys:
        play_session(settings, log, keyboard=keys, lines=frames.append, text=False, redraw=True,
                     first_flip_delay=0.5)
    drawn = [f.split("\x1b[H\x1b[2J")[-1] for f in frames if f.startswith("\x1b[H\x1b[2J")]

    def answers(frame: str) -> str:  # the answer's lines under the table, joined again
        lines = frame.splitlines()
        at = [i for i, line in enumerate(lines) if line.startswith("   > ")]
        if not at:
            return ""
        tail = [lines[at[0]][5:]]
        for line in lines[at[0] + 1:]:
            if not line.startswith("     ") or not line.strip():
                break
            tail.append(line.strip())
        return " ".join(tail)

    shown = [answers(f) for f in drawn]
    assert all(len(line) <= 80 for f in drawn for line in f.splitlines())
    status = next(a for a in shown if a.startswith("Alice "))
    assert "Pool empty." in status and status.endswith("'s turn."), status  # whole, wrapped, not cut
    assert "Games won: Alice 0, Bob 0, Cara 0." in shown
    assert any(a.startswith("Call keys: Alice q for snap") and a.endswith("space flip.") for a in shown), shown
    assert shown[-1] == "" and "!! paused: to go on, press o" in drawn[-1]  # the notice takes the answer's place
    # each answer was drawn when it came: the frame after it holds it (before, nothing redrew)
    assert shown.index("Games won: Alice 0, Bob 0, Cara 0.") > shown.index(status)


def test_an_answer_leaves_the_screen_when_the_next_card_is_turned(tmp_path: Path) -> None:
    """A status answer stayed under the table after later flips and rulings, showing cards and a turn that
    were no longer so (a QA tester's table)."""
    from voicesnap.keyboard import RawKeyboard

    settings = TableSession(players=PLAYERS, seed=7, pace=0.0)
    frames: list[str] = []
    with gamelog.GameLog(tmp_path / "log.jsonl") as log, \
            _keys_later([(0.4, b" "), (0.9, b"i"), (1.5, b" "), (2.1, b"\x1b")]) as pipe, RawKeyboard(pipe) as keys:
        play_session(settings, log, keyboard=keys, lines=frames.append, text=False, redraw=True)
    drawn = [f.split("\x1b[H\x1b[2J")[-1] for f in frames if f.startswith("\x1b[H\x1b[2J")]
    shown = [any(line.startswith("   > ") for line in f.splitlines()) for f in drawn]
    assert True in shown, drawn  # the status answer was drawn...
    first = shown.index(True)
    flips = [i for i, f in enumerate(drawn) if i > first and f.count("♠") + f.count("♥") + f.count("♦")
             + f.count("♣") > drawn[first].count("♠") + drawn[first].count("♥") + drawn[first].count("♦")
             + drawn[first].count("♣")]
    assert flips and not any(shown[flips[0]:]), drawn[flips[0]] if flips else drawn  # ...and gone with the card


def test_score_names_the_target_where_a_session_has_one() -> None:
    from voicesnap.session import Session
    from voicesnap.table import score_text

    assert score_text(Session(PLAYERS[:2], "best-of-3")) == (
        "Games won: Alice 0, Bob 0. Best of 3: first to 2 wins the session.")
    assert score_text(Session(PLAYERS[:2], "first-to-1")).endswith(" First to 1 game wins the session.")
    assert score_text(Session(PLAYERS[:2], "first-to-4")).endswith(" First to 4 games wins the session.")
    assert score_text(Session(PLAYERS[:2], "single")) == "Games won: Alice 0, Bob 0."  # one game: no target
    session = Session(PLAYERS, "best-of-3", seed=2)
    session.sudden_death = True  # (as Session.record sets it when the leaders are level after 3 games)
    assert score_text(session).endswith(" Sudden death: the next game's winner wins the session.")


def test_the_display_drops_a_notice_once_the_game_is_back_to_normal() -> None:
    """"!! resumed" (and "input device is back") stayed on the screen for the rest of the game."""
    class _Log:
        def write(self, *records: object) -> None:
            pass

    output = Output(_Log(), say=None, lines=lambda s: None)
    loop, _game = new_loop(7, pace=1.0)
    run_clock(loop, 1.5, {})
    output(loop.step(1.6, [Detection("dealer pause", 1.55, 1.9, 0.9, engine="vosk")]))
    assert output.notice.startswith("paused")
    output(loop.step(1.7, [Detection("dealer resume", 1.65, 2.0, 0.9, engine="vosk")]))
    assert output.notice == ""
    output(loop.hold(f"{LiveInput.LOST}: plug it in"))
    assert output.notice.startswith(LiveInput.LOST)
    output(loop.release(2.0, f"{LiveInput.BACK}: resuming"))
    assert output.notice == ""


def test_at_verbosity_all_each_card_is_followed_by_whose_turn_it_is() -> None:
    """Promised at --verbosity all (with --pace 0 players must know who says "flip"); never said live."""
    for peeked in (False, True):  # cards announced as they are turned, or before (speech on)
        loop, game = new_loop(7, pace=1.0)
        loop.turn_cue = True
        if peeked:
            loop.peek = lambda t, g=game: g.copy().flip(t)
        actions = run_clock(loop, 1.05, {})
        if peeked:
            card = next(a for a in actions if isinstance(a, Say) and isinstance(a.source, rules.Flipped))
            actions = loop.announced(card.text, 1.06)
        flipped = next(a.record for a in actions if isinstance(a, Log) and isinstance(a.record, rules.Flipped))
        turns = [a.text for a in actions if isinstance(a, Say) and a.text.endswith("'s turn.")]
        assert turns == [f"{game.players[game.state.active]}'s turn."], (peeked, turns)
        assert game.players[game.state.active] != flipped.player
    plain, _ = new_loop(7, pace=1.0)
    assert not [a for a in run_clock(plain, 1.05, {}) if isinstance(a, Say) and a.text.endswith("'s turn.")]


def test_a_call_made_just_before_a_card_is_ruled_before_that_card_is_turned() -> None:
    """A wrong call 0.15 s before the next card was due was ruled 0.5 s later, after the card: players
    heard a new card, then "Wrong call by bob ... top card Six of Spades", a card no longer on top."""
    loop, game = new_loop(7, pace=1.0)
    run_clock(loop, 1.5, {})
    assert not any(e.match for e in [game.view()] if hasattr(e, "match"))
    actions = run_clock(loop, 3.5, {1.9: [snap("Bob", 1.85, engine="keyboard")]})
    order = [type(a.record).__name__ for a in actions if isinstance(a, Log)
             and isinstance(a.record, (rules.Flipped, *rules.RULINGS))]
    assert order[:2] == ["WrongCall", "Flipped"], order
    flips = [a.record.t for a in actions if isinstance(a, Log) and isinstance(a.record, rules.Flipped)]
    assert 2.35 <= flips[0] <= 2.5  # the card waited for the ruling, no longer


def test_an_unsure_pace_change_says_what_was_heard_and_how_to_go_back() -> None:
    """"dealer score" heard as "dealer slower" changed the pace, and the answer, "one flip every 2.5
    seconds", did not say that "slower" was what had been heard nor how to undo it. A pace change heard
    with less confidence than SURE_PACE now says both, in the ways this game hears commands; a sure one
    (or a key) keeps the short answer, and "faster" takes the pace back to where it was."""
    def said(loop: TableLoop, t: float, word: str, confidence: float, engine: str = "vosk") -> list[str]:
        got = loop.step(t, [Detection(word, t - 0.5, t - 0.1, confidence, engine=engine)])
        return [a.text for a in got if isinstance(a, Say) and a.answer]

    loop, _game = new_loop(7, pace=2.0)
    assert said(loop, 1.7, "dealer slower", 0.6) == [
        "Slower: one flip every 2.5 seconds. To go back, say faster after dealer or press plus."]
    assert said(loop, 2.7, "dealer faster", 1.0) == ["one flip every 2 seconds"]  # back where it was
    assert said(loop, 3.7, "dealer slower", 1.0, engine="keyboard") == ["one flip every 2.5 seconds"]
    loop.keys = False  # a game with no keyboard names no key
    assert said(loop, 4.7, "dealer faster", 0.5) == ["Faster: one flip every 2 seconds. To go back, say slower after dealer."]


def test_a_resumed_session_keeps_the_pace_the_players_asked_for(tmp_path: Path) -> None:
    """"dealer slower" twice took 2 s to 3.125 s; `play --resume` went back to 2 s."""
    settings = TableSession(players=PLAYERS, seed=7, pace=2.0)
    path = tmp_path / "log.jsonl"
    slower = Detection("dealer slower", 1.2, 1.6, 0.9, engine="vosk")
    with gamelog.GameLog(path) as log:
        log.write(settings)
        loop, _game = new_loop(7, pace=2.0)
        for t in (1.7, 2.7):
            for a in loop.step(t, [dataclasses.replace(slower, onset=t - 0.5)]):
                if isinstance(a, Log) and isinstance(a.record, TableStep):
                    log.write(a.record)
    assert loop.pace == 3.125
    assert rebuild([ev for _, ev in gamelog.read(path)]).settings.pace == 3.125


def test_a_command_being_heard_holds_the_next_card_only_while_it_may_still_come() -> None:
    """The card due at 3.0 s waits while the spotter is deciding a command begun at 2.7 s; a
    partial that never resolves (say the speech gate stopped feeding it) holds it 2.5 s at most."""
    def flips(actions: list) -> list[float]:
        return [a.record.t for a in actions if isinstance(a, Log) and isinstance(a.record, rules.Flipped)]

    loop, _game = new_loop()
    assert flips(loop.step(2.5)) == [1.0, 2.0]
    assert flips(loop.step(3.4, commanding=2.7)) == []  # "dealer ..." is still being decided
    assert flips(loop.step(3.6, [Detection("dealer help", 2.7, 3.3, 0.9, player="Bob")])) == [3.6]
    loop, _game = new_loop()
    assert flips(loop.step(2.5)) == [1.0, 2.0]
    assert flips(loop.step(5.1, commanding=2.7)) == []
    assert flips(loop.step(5.3, commanding=2.7)) == [5.3]  # 2.5 s after the command began: turned
    loop, _game = new_loop()
    assert flips(loop.step(3.4, commanding=3.2)) == [1.0, 2.0, 3.0]  # begun after the card was due


def test_a_table_drawn_in_place_shows_the_keys_under_it(tmp_path: Path) -> None:
    """The keys were printed once, before the game, and the first redraw cleared the screen: a new
    player had to know to press '?'."""
    from voicesnap import gamelog
    from voicesnap.keyboard import RawKeyboard

    settings = TableSession(players=PLAYERS, seed=7, pace=1.0)
    frames: list[str] = []
    with gamelog.GameLog(tmp_path / "log.jsonl") as log, _keys_later([(1.5, b"\x1b")]) as pipe, \
            RawKeyboard(pipe) as keys:
        play_session(settings, log, keyboard=keys, lines=frames.append, text=False, redraw=True,
                     first_flip_delay=0.5)
    drawn = [f for f in frames if f.startswith("\x1b[H\x1b[2J")]
    assert drawn, frames
    last = drawn[-1].splitlines()
    assert any("space=flip" in line for line in last) and any(line.strip().startswith("Alice: q=snap")
                                                             for line in last), last
    assert all(len(line) <= 80 for line in last[1:])


def test_a_speed_snap_session_with_real_speech_says_every_card_whole(tmp_path: Path) -> None:
    """The whole play path (play_session, the table speaker, espeak-ng's words through a mixer on the
    input clock, the speaker's start and end reports): 3 players at a pace of 1 s, far shorter than a
    round takes to say. Every card is said to its end, and each round starts only once the round before
    has been said and ``Output.ROUND_GAP`` has passed. Before, each round cut the last one's cards."""
    import threading

    from voicesnap.announcer import Announcer, Settings, TableSpeaker
    from voicesnap.audio import AudioChunk
    from voicesnap.playback import VirtualPlayback
    from voicesnap.speech import NoSpeechEngine, SpeechCache, VoiceSettings
    from voicesnap.table import play_session

    try:
        cache = SpeechCache.in_data_dir(tmp_path, VoiceSettings(), rate=16000)
        cache.get("Eight")
    except NoSpeechEngine:
        pytest.skip("espeak-ng is not installed (apt-get install espeak-ng): it speaks the cards")
    speaker = VirtualPlayback(16000, block=160)
    ann = Announcer(cache, speaker, Settings(text=False))
    table_speaker = TableSpeaker(ann)
    heard_to = [0.0]
    turn = threading.Semaphore(1)

    def microphone(seconds: float = 40.0):  # noqa: ANN202
        """A quiet room, 20 ms at a time, in step with the game loop: the next chunk only once the
        speaker has played up to the last one (the hook below), so speech and the table share a clock."""
        room = np.random.default_rng(0).normal(0, 20, (320, 1)).astype(np.int16)
        for k in range(int(seconds / 0.02)):
            turn.acquire()
            heard_to[0] = (k + 1) * 0.02
            yield AudioChunk(16000, 2, 1, k * 320, room)

    def hook() -> list:
        speaker.advance_to(heard_to[0])
        records = table_speaker.poll()
        turn.release()
        return records

    settings = TableSession(players=("alice", "bob", "cara"), seed=4, variant="speed", pace=1.0,
                            engine="keyboard")
    log = _Log()
    play_session(settings, log, chunks=microphone(), say=table_speaker.say, lines=lambda s: None, text=True,
                 hook=hook, announce_flips=True, tick=0.005)
    cards = [r for r in log if isinstance(r, rules.Flipped)]
    ended = {r.id: r for r in log if isinstance(r, _SpeechEnded)}  # (the speaker's reports, as logged)
    rounds = sorted({c.t for c in cards})
    assert len(rounds) >= 6, rounds
    for before, after in zip(rounds, rounds[1:]):
        assert len([c for c in cards if c.t == before]) == 3
        ids = [i for i, a in enumerate(ann.log) if a.kind == "flipped" and a.t == before]
        assert len(ids) == 3
        ends = [ended[ann.log[i].id] for i in ids]
        assert all(e.completed for e in ends), [ann.log[i].text for i in ids]
        assert after >= max(e.t for e in ends) + Output.ROUND_GAP - 0.05  # (a 20 ms chunk, a tick)


def test_louder_and_quieter_are_answered_in_words_printed_with_text_and_with_speech_off(tmp_path: Path) -> None:
    """"louder" and "quieter" were answered by the announcer alone ("Volume 120.": a number with no unit),
    so --text printed nothing, and with speech off (--quiet) the key or command got no answer at all. The
    answer is now the table's, like status or score: said, printed with --text, shown on the display."""
    from voicesnap import gamelog
    from voicesnap.announcer import Announcer, Settings, TableSpeaker
    from voicesnap.keyboard import RawKeyboard
    from voicesnap.playback import VirtualPlayback
    from voicesnap.speech import NoSpeechEngine, SpeechCache, VoiceSettings

    try:
        cache = SpeechCache.in_data_dir(tmp_path, VoiceSettings(), rate=16000)
        cache.get("Eight")
    except NoSpeechEngine:
        pytest.skip("espeak-ng is not installed (apt-get install espeak-ng): it speaks the answers")
    ann = Announcer(cache, VirtualPlayback(16000), Settings(text=False))
    speaker = TableSpeaker(ann)
    presses = [(0.3, b">"), (0.5, b">"), (0.7, b"<"), (0.9, b"\x1b")]
    for speech in (True, False):
        printed: list[str] = []
        settings = TableSession(players=PLAYERS, seed=7, pace=0.0)
        with gamelog.GameLog(tmp_path / f"log-{speech}.jsonl") as log, _keys_later(presses) as pipe, \
                RawKeyboard(pipe) as keys:
            play_session(settings, log, keyboard=keys, lines=printed.append, text=True,
                         say=speaker.say if speech else None, setting=speaker.setting if speech else None)
        if speech:
            answers = ["Louder: volume 120 percent.", "Louder: volume 140 percent.", "Quieter: volume 120 percent."]
            assert [line for line in printed if "volume" in line] == answers, printed
            assert [a.text for a in ann.log if "volume" in a.text] == answers  # said once each, by the table
            assert cache.settings.volume == pytest.approx(1.2)
        else:
            assert printed.count("Speech is off: there is no announcer's voice to change.") == 3, printed


def test_silent_snap_on_one_microphone_says_that_slams_are_keys(tmp_path: Path) -> None:
    """On one microphone a slam on the table cannot be heard as a call, only its key: that was printed
    before the game and never said, so a player by ear slammed the table and nothing happened. The start
    says each seat's slam key; with a microphone per player (slams heard), it does not."""
    from voicesnap.keyboard import RawKeyboard

    for engine, heard in (("keyboard", False), ("combined+keyword", False), ("vosk+slam", True)):
        spoken: list[str] = []
        settings = TableSession(players=PLAYERS, seed=7, pace=1.0, variant="silent", engine=engine)
        with gamelog.GameLog(tmp_path / f"{engine}.jsonl") as log, _keys_later([(0.3, b"\x1b")]) as pipe, \
                RawKeyboard(pipe) as keys:
            play_session(settings, log, keyboard=keys, say=lambda text, _p, _e: spoken.append(text),
                         lines=lambda s: None)
        game = rules.Game(PLAYERS, 7)
        opening = (f"Game 1. {PLAYERS[game.dealer]} deals; {PLAYERS[game.active]} goes first. "
                   + variants.SilentSnap(PLAYERS, 7).rule_words())
        assert spoken[0] == opening + ("" if heard else " Slams are keys: Alice q, Bob w, Cara e."), (engine, spoken)


@pytest.mark.parametrize("players, seed, said", [
    (2, 5041, "Game over: the same cards came round again. bot2 wins on the tie-break, most cards won by calls."),
    (2, 5146, "Game over: the same cards came round again. bot2 wins on the tie-break, by drawing lots."),
    (3, 5011, "Game over: the last players went out together. bot1 wins on the tie-break, most cards won by calls."),
])
def test_a_game_the_tiebreak_settles_says_what_settled_it(players: int, seed: int, said: str) -> None:
    """"bot2 wins on the tie-break" never said which step (docs/rules.md promised "Ben wins on most cards won
    by calls"), and a ruling that put the last players out together was followed by "Game over. bot1 wins.",
    just after "bot1 is out.", with no why. Bots' games (the simulator's) that end each way."""
    from voicesnap import simulate

    game = variants.create("classic", simulate.bot_names(players), seed)
    simulate.play(game, seed)
    over = next(ev for ev in game.events if isinstance(ev, rules.GameOver))
    assert describe(over, state=game.state, players=game.players, game=game) == (said, PRIORITY_RULING)


def test_an_ignored_call_is_printed_in_plain_words() -> None:
    """--text printed "Fay 'slap' ignored: out of the game" and "Ann 'snap' ignored: not a call in silent":
    quotes, and the variant's id, for a screen reader to read out."""
    from voicesnap.table import ruling_line

    assert ruling_line(rules.CallIgnored(2.2, "Ann", "snap", "not a call in silent")) == (
        "Ann's snap ignored: not a call in this game.")
    assert ruling_line(rules.CallIgnored(2.2, "Fay", "slap", "out of the game")) == "Fay's slap ignored: out of the game."
    said = describe(rules.CallIgnored(2.2, "Ann", "moo", "not a call in animal"), "all")
    assert said is not None and said[0] == "Ann's moo ignored: not a call in this game."


def test_a_word_that_is_no_call_in_this_game_is_said_at_every_verbosity() -> None:
    """In Animal or Silent Snap an enrolled player's "snap" was ignored in silence (said only at --verbosity
    all), while an unknown voice's was told "'snap' is no call in this game": the player never learnt why."""
    for verbosity in ("ranks", "names", "all"):
        said = describe(rules.CallIgnored(2.2, "Ann", "snap", "not a call in animal"), verbosity)
        assert said == ("Ann's snap ignored: not a call in this game.", PRIORITY_INFO), (verbosity, said)
    # the referee's other reasons stay for --verbosity all (a rival's call after a won snap, every time)
    assert describe(rules.CallIgnored(2.2, "Fay", "snap", "out of the game"), "names") is None
    # the reason the referee gives is the one the announcer knows
    ref = Referee(variants.create("animal", ["Ann", "Ben"], 1))
    ignored = ref.submit(Call("Ann", "snap", 0.5)) + ref.advance(5.0) + ref.close()
    assert any(isinstance(ev, rules.CallIgnored) and ev.reason.startswith(rules.NOT_A_CALL) for ev in ignored), ignored


def test_listen_names_a_players_silent_mic_as_play_does() -> None:
    """`listen --channels` (the check before a game) said nothing of a player's mic sending no sound."""
    from voicesnap.cli import listen

    mic = listen._live_mic(None, 2, {0: "Alice", 1: "Bob"})  # (nothing is opened until it is read)
    said = mic._channels_text((1,))
    assert said.startswith("Bob's microphone (channel 1) sends no sound at all") and "a game would pause" in said, said
