"""The table: the imperative shell that runs a game of Snap around real people.

Two halves:

* ``TableLoop`` is pure and deterministic: detections and a clock reading in,
  actions out (say this, log that, stop). It owns the pace, pause, and the
  voice/keyboard commands, and drives the referee. Tests drive it directly.
* ``Table`` wires it to the world with threads and queues::

      audio callback --chunks--> spotter thread --Heard(until, detections)--> game loop
      keyboard thread --------------Heard(None, [key detection])-----------/

  The audio callback only moves frames (the source's own queue); recognition
  runs on its own thread; the game loop never blocks either of them.

One clock: the game's "now" is how far the spotter has *heard* (the end of the
last chunk it processed), never the wall clock. So a slow recogniser only
delays rulings; it cannot reorder them, because the referee is never advanced
past audio the spotter has not yet judged, and it rules by onset. Without an
audio source (``--text`` keyboard play) a monotonic clock stands in.

Every input the referee sees is logged (``TableStep`` records) before its
consequences are acted on, with the engine's own events after it, so a game
can be resumed after a crash or replayed into the same state.
"""

from __future__ import annotations

import queue
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Protocol, Sequence

from .events import event
from .spotters import Detection
from .vocabulary import CALLS, COMMAND_PREFIX, command_phrases

__all__ = [
    "Say", "Log", "Stop", "Notice", "Setting", "Action",
    "TableStep", "TableStart", "TableNote",
    "TableLoop", "Heard", "Table", "WallClock",
    "HEARD_LAG",
]

# Calls whose onset is this close behind the heard clock may still be in the
# recogniser (a word in progress): the referee is advanced only this far
# behind "heard", which bounds rulings' extra delay. Vosk finalises a word
# ~0.1-0.2 s after it ends; "snap" lasts ~0.3 s.
HEARD_LAG = 0.0

PRIORITY_FLIP = 1
PRIORITY_INFO = 2
PRIORITY_RULING = 3  # never dropped


# ---------------------------------------------------------------------------
# Log records of the table itself (the engine logs its own events beside them)


@event("table-start")
@dataclass(frozen=True)
class TableStart:
    """Opens a game's log: enough to rebuild the same referee from scratch."""

    players: tuple[str, ...]
    seed: int
    variant: str = "classic"
    game: int = 1  # game number within the session
    dealer: int = 0  # seat of the dealer
    pace: float = 2.0
    offset: float = 0.0  # referee time = audio clock + offset (resumed games)
    options: dict[str, Any] = field(default_factory=dict)


@event("table-step")
@dataclass(frozen=True)
class TableStep:
    """One thing the loop fed the referee: a call, a flip, or time passing.

    ``kind`` is "call" (player/word/onset), "flip" (at ``now``) or "advance".
    Replaying these in order into a fresh referee gives the same events.
    """

    kind: str
    now: float
    player: str | None = None
    word: str | None = None
    onset: float | None = None
    engine: str = ""


@event("table-note")
@dataclass(frozen=True)
class TableNote:
    """Something the players were told that is not a game event (pause, device lost)."""

    now: float
    text: str


# ---------------------------------------------------------------------------
# Actions the shell carries out


@dataclass(frozen=True)
class Say:
    text: str
    priority: int = PRIORITY_INFO
    source: Any = None  # the engine event, if any (announcer may render it itself)


@dataclass(frozen=True)
class Log:
    record: Any


@dataclass(frozen=True)
class Notice:
    """Printed and spoken; shown on the display until the next notice."""

    text: str


@dataclass(frozen=True)
class Setting:
    """An announcer setting the players asked for: louder, quieter."""

    name: str


@dataclass(frozen=True)
class Stop:
    reason: str  # "over" (the game ended by its rules) or "ended" (the end command)
    events: tuple[Any, ...] = ()


Action = Say | Log | Notice | Setting | Stop


class Referee(Protocol):
    """What the loop needs from voicesnap.referee.Referee."""

    def flip(self, t: float) -> list[Any]: ...

    def submit(self, call: Any) -> list[Any]: ...

    def advance(self, now: float) -> list[Any]: ...


def _command_names() -> dict[str, str]:
    return {phrase: name for name, phrase in command_phrases().items()}


# ---------------------------------------------------------------------------
# The pure loop


class TableLoop:
    """One game's decisions, as a pure function of what was heard and when.

    ``make_call(player, word, onset)`` builds the referee's call record;
    ``describe(event)`` turns an engine event into (text, priority) or None;
    ``is_over(events)`` says whether the game has ended; ``status()`` and
    ``score()`` give the spoken answers to those commands.
    """

    def __init__(
        self,
        referee: Referee,
        players: Sequence[str],
        *,
        pace: float | None,
        make_call: Callable[[str, str, float], Any],
        describe: Callable[[Any], tuple[str, int] | None],
        is_over: Callable[[Any], bool],
        active_player: Callable[[], str | None] = lambda: None,
        status: Callable[[], str] = lambda: "",
        score: Callable[[], str] = lambda: "",
        offset: float = 0.0,
        start: float = 0.0,
        first_flip_delay: float = 1.0,
    ) -> None:
        self.referee = referee
        self.players = tuple(players)
        self.pace = pace  # None: flip only on the flip command
        self.make_call = make_call
        self.describe = describe
        self.is_over = is_over
        self.active_player = active_player
        self.status = status
        self.score = score
        self.offset = offset
        self.paused = False
        self.stopped: Stop | None = None
        self.next_flip: float | None = start + first_flip_delay if pace else None
        self.last_said = ""
        self.now = start
        self._commands = _command_names()

    # -- helpers -------------------------------------------------------------
    def _events(self, produced: Iterable[Any], actions: list[Action]) -> None:
        for ev in produced or ():
            actions.append(Log(ev))
            said = self.describe(ev)
            if said is not None:
                text, priority = said
                actions.append(Say(text, priority, ev))
                self.last_said = text
            if self.stopped is None and self.is_over(ev):
                self.stopped = Stop("over", (ev,))

    def _command(self, name: str, det: Detection, actions: list[Action]) -> None:
        t = self.now
        if name == "pause":
            if not self.paused:
                self.paused = True
                actions.append(Notice("paused: say 'dealer resume' or press o to go on"))
        elif name == "resume":
            if self.paused:
                self.paused = False
                if self.pace:
                    self.next_flip = t + self.pace
                actions.append(Notice("resumed"))
        elif name == "end":
            self.stopped = Stop("ended")
        elif name == "flip":
            active = self.active_player()
            if det.player is not None and active is not None and det.player != active:
                return  # only the active player's voice flips; keys flip for anyone
            self._flip(t, actions)
        elif name == "repeat":
            if self.last_said:
                actions.append(Say(self.last_said, PRIORITY_INFO))
        elif name == "status":
            actions.append(Say(self.status() or "no status yet", PRIORITY_INFO))
        elif name == "score":
            actions.append(Say(self.score() or "no score yet", PRIORITY_INFO))
        elif name in ("slower", "faster"):
            if self.pace:
                self.pace = round(self.pace * (1.25 if name == "slower" else 0.8), 3)
                self.pace = min(10.0, max(0.5, self.pace))
                actions.append(Say(f"one flip every {self.pace:g} seconds", PRIORITY_INFO))
        elif name in ("louder", "quieter"):
            actions.append(Setting(name))
        elif name == "help":
            actions.append(Say("say snap, snap pool, or dealer then pause, resume, repeat, "
                               "status, score, slower, faster, louder, quieter, flip, or end game",
                               PRIORITY_INFO))

    def _flip(self, t: float, actions: list[Action]) -> None:
        actions.append(Log(TableStep("flip", t)))
        self._events(self.referee.flip(t + self.offset), actions)
        if self.pace:
            self.next_flip = t + self.pace

    # -- the step ----------------------------------------------------------------
    def step(self, now: float, detections: Iterable[Detection] = ()) -> list[Action]:
        """Take what was heard up to ``now`` (audio clock) and return what to do.

        Detections may come late and out of order; calls go to the referee with
        their own onsets, so arrival order never matters to the ruling.
        """
        actions: list[Action] = []
        if self.stopped is not None:
            return actions
        self.now = max(self.now, now)
        for det in sorted(detections, key=lambda d: (d.onset, d.word, d.player or "")):
            command = self._commands.get(det.word)
            if command is None and det.word.startswith(COMMAND_PREFIX + " "):
                continue  # an unknown command phrase: nothing to do
            if command is not None:
                actions.append(Log(TableStep("command", det.onset, det.player, det.word,
                                             det.onset, det.engine)))
                self._command(command, det, actions)
                if self.stopped is not None:
                    return actions
                continue
            if det.player is None:
                actions.append(Log(TableNote(det.onset, f"'{det.word}' heard from an unknown voice: ignored")))
                continue
            if det.player not in self.players:
                actions.append(Log(TableNote(det.onset, f"'{det.word}' from {det.player}, who is not playing")))
                continue
            call = self.make_call(det.player, det.word, det.onset + self.offset)
            actions.append(Log(TableStep("call", det.onset, det.player, det.word, det.onset, det.engine)))
            self._events(self.referee.submit(call), actions)
        horizon = self.now - HEARD_LAG
        produced = self.referee.advance(horizon + self.offset)
        if produced:
            actions.append(Log(TableStep("advance", horizon)))
            self._events(produced, actions)
        if (
            self.stopped is None
            and not self.paused
            and self.next_flip is not None
            and self.now >= self.next_flip
        ):
            self._flip(self.next_flip, actions)
        if self.stopped is not None and self.stopped not in actions:
            actions.append(self.stopped)
        return actions


# ---------------------------------------------------------------------------
# The shell: threads, queues, clock


class WallClock:
    """Seconds since start, for keyboard-only play (no audio stream to count)."""

    def __init__(self) -> None:
        self._t0 = time.monotonic()

    def __call__(self) -> float:
        return time.monotonic() - self._t0


@dataclass(frozen=True)
class Heard:
    """From the spotter thread: audio up to ``until`` has been judged; these were in it.

    ``until`` None means keyboard input, which carries its own onset.
    """

    until: float | None
    detections: tuple[Detection, ...] = ()
    problem: str = ""  # overflow, device lost / back


class Table:
    """Runs a TableLoop against live inputs until the game stops.

    ``chunks`` is an iterable of AudioChunk (a live source blocks in its own
    iterator, fed by the audio callback), or None for keyboard-only play.
    ``on_actions`` carries out the loop's actions (speech, log, display).
    """

    def __init__(
        self,
        loop: TableLoop,
        on_actions: Callable[[list[Action]], None],
        *,
        chunks: Iterable[Any] | None = None,
        spotter: Any = None,
        tap: Callable[[Any], None] | None = None,
        clock: Callable[[], float] | None = None,
        queue_size: int = 256,
        tick: float = 0.05,
    ) -> None:
        self.loop = loop
        self.on_actions = on_actions
        self.chunks = chunks
        self.spotter = spotter
        self.tap = tap
        self.inbox: queue.Queue[Heard] = queue.Queue(maxsize=queue_size)
        self.stopping = threading.Event()
        self.tick = tick
        self.heard = 0.0  # audio clock: how far the spotter has judged
        self._heard_at = time.monotonic()
        self._wall = WallClock()
        self.clock = clock or self._key_clock
        self.errors: list[BaseException] = []
        self._threads: list[threading.Thread] = []

    # keyboard presses: stamped on the audio clock when there is one
    def _key_clock(self) -> float:
        if self.chunks is None:
            return self._wall()
        return self.heard + (time.monotonic() - self._heard_at)

    def put(self, item: Heard) -> None:
        """Hand something to the game loop; never blocks a producer for long."""
        while not self.stopping.is_set():
            try:
                self.inbox.put(item, timeout=0.1)
                return
            except queue.Full:
                continue  # the game loop is behind: wait; calls are never dropped

    def put_key(self, det: Detection) -> None:
        self.put(Heard(None, (det,)))

    def _listen(self) -> None:
        """Spotter thread: chunks in clock order -> detections, plus how far we heard."""
        try:
            for chunk in self.chunks or ():
                if self.stopping.is_set():
                    break
                if self.tap is not None:
                    self.tap(chunk)
                found = tuple(self.spotter.accept(chunk)) if self.spotter is not None else ()
                self.put(Heard(chunk.end / chunk.rate, found))
            else:
                if self.spotter is not None and not self.stopping.is_set():
                    found = tuple(self.spotter.flush())
                    self.put(Heard(None, found))
                self.put(Heard(None, (), problem="end of audio"))
        except BaseException as exc:  # reported on the game loop, never lost
            self.errors.append(exc)
            self.put(Heard(None, (), problem=f"listening stopped: {exc}"))

    def start_thread(self, target: Callable[[], None], name: str) -> None:
        thread = threading.Thread(target=target, name=name, daemon=True)
        self._threads.append(thread)
        thread.start()

    def run(self) -> Stop:
        """The game loop: until the game is over, ended, the audio ends, or Ctrl-C."""
        if self.chunks is not None:
            self.start_thread(self._listen, "voicesnap-spotter")
        try:
            while True:
                try:
                    item = self.inbox.get(timeout=self.tick)
                except queue.Empty:
                    item = None
                batch = [item] if item is not None else []
                while True:  # take everything that is waiting, then rule once
                    try:
                        batch.append(self.inbox.get_nowait())
                    except queue.Empty:
                        break
                detections: list[Detection] = []
                ended_audio = False
                for heard in batch:
                    detections.extend(heard.detections)
                    if heard.until is not None:
                        self.heard = max(self.heard, heard.until)
                        self._heard_at = time.monotonic()
                    if heard.problem == "end of audio":
                        ended_audio = True
                    elif heard.problem:
                        self.on_actions([Notice(heard.problem), Log(TableNote(self.heard, heard.problem))])
                now = self.heard if self.chunks is not None else self._wall()
                actions = self.loop.step(now, detections)
                self.on_actions(actions)
                stop = next((a for a in actions if isinstance(a, Stop)), None)
                if stop is not None:
                    return stop
                if ended_audio:
                    return Stop("audio ended")
        except KeyboardInterrupt:
            stop = Stop("interrupted")
            self.on_actions([Log(TableNote(self.heard, "stopped by Ctrl-C")), stop])
            return stop
        finally:
            self.stopping.set()
            for thread in self._threads:
                thread.join(timeout=2.0)
