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

import math
import queue
import signal
import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Callable, ClassVar, Iterable, Iterator, Protocol, Sequence

from .bursts import BurstTracker, RivalWatch, SpeechBurst
from .commands import KEY_NAMES, KEYMAP, allowed, help_text
from .live import LiveInput
from .rules import CallError
from .spotters import Detection, Refusal, command_begun_from, take_refusals, undecided_from
from .tablelog import (
    LISTENING_FAILED, TableEnd, TableNote, TableResumed, TableSession, TableStart, TableStep,
)
from .vocabulary import COMMAND_PREFIX, command_phrases
from .text import listed

__all__ = [
    "Say", "Log", "Stop", "Notice", "Setting", "Action",
    "TableStep", "TableStart", "TableNote", "TableSession", "TableResumed", "TableEnd", "LISTENING_FAILED",
    "TableLoop", "Heard", "Table", "WallClock",
    "HEARD_LAG", "PoolClaim", "snap_words", "voice_lags", "hears_commands", "call_words_text", "score_text",
]

# The listen-lag: the referee is advanced ``lag`` seconds behind what the
# spotter has heard. Why it cannot be zero with voices: the referee rules a call
# at ``onset + decision_window`` and refuses ("late") any call that reaches it
# after its own window closed, and a tie needs every rival whose onset is
# within the tie window of the first call to be there when the first is ruled.
# A call reaches the table at most SPOTTER_LATENCY after its word ends, and a
# word ends at most SNAP_WORD after its onset, so the last rival is known by
#     onset + tie_window + SNAP_WORD + SPOTTER_LATENCY,
# and the first call is ruled when heard = onset + decision_window + lag. Hence
#     lag = tie_window + SNAP_WORD + SPOTTER_LATENCY - decision_window
# (0.1 + 0.6 + 0.3 - 0.5 = 0.5 s with the defaults), and nothing smaller is safe.
# The ruling then starts about tie_window + SPOTTER_LATENCY + (SNAP_WORD - the
# word's length) after the word ends: a longer --decision-window lowers the lag
# one for one and changes nothing else.
# While a Snap-pool claim is open (PoolClaim) the spotters hold a "snap" for
# up to POOL_WAIT after the word to hear whether "pool" follows (the hold
# includes their own latency), so then
#     pool_lag = tie_window + SNAP_WORD + POOL_WAIT - decision_window   (1.4 s).
# Keyboard-only play needs none: a key press is known at once.
# That worst case is now only the floor. A rival that could tie has *started*
# speaking within tie_window of the first call's onset, long before that word
# ends, so the shell tracks speech bursts on each input (voicesnap.bursts) and
# the loop advances the referee as soon as every burst that started early enough
# has produced its call, or has ended and had SPOTTER_LATENCY (POOL_WAIT during
# a claim) to do so (RivalWatch). A lone "snap" is then ruled when it is
# recognised (or at onset + decision_window, if later), not ~0.6 s after it.
HEARD_LAG = 0.0
SNAP_WORD = 0.6  # s: the longest "snap" in the fixture corpus (cara's, 0.58-0.60 s)
SPOTTER_LATENCY = 0.3  # s: word end to the table, p95 (bench_play measured 157-297 ms)
POOL_WAIT = 1.2  # s: VoskSpotter's longest wait for "pool" after "snap" (its pool_wait)


@contextmanager
def interrupts_deferred(drop: bool = False) -> Iterator[None]:
    """Ctrl-C waits for the end of the block: a log line or a recording being closed is never torn
    by it. Then it is raised, or with ``drop`` (the game is already stopping: a second, impatient
    Ctrl-C) forgotten. Only the main thread receives signals; elsewhere the block runs as it is."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    got: list[int] = []
    previous = signal.signal(signal.SIGINT, lambda signum, frame: got.append(signum))
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
    if got and not drop:
        raise KeyboardInterrupt


def paced(pace: float, command: str) -> float:
    """The pace after "dealer slower" or "dealer faster": a quarter slower, a fifth faster, 0.5-10 s."""
    return min(10.0, max(0.5, round(pace * (1.25 if command == "slower" else 0.8), 3)))


def voice_lags(tie_window: float, decision_window: float) -> tuple[float, float]:
    """(lag, pool_lag) for voice calls: the least that keeps every rival in time (see above)."""
    lag = max(0.0, tie_window + SNAP_WORD + SPOTTER_LATENCY - decision_window)
    pool_lag = max(lag, tie_window + SNAP_WORD + POOL_WAIT - decision_window)
    return round(lag, 3), round(pool_lag, 3)


VOICE_LAG, VOICE_POOL_LAG = voice_lags(0.1, 0.5)  # the defaults: 0.5 and 1.4 s


def burst_latency(lag: float, tie_window: float, decision_window: float) -> float:
    """The spotter latency a lag allows for (its inverse): how long after a burst of speech ends
    a call from it may still arrive (0.3 s, or POOL_WAIT while a pool claim is open)."""
    return max(0.0, lag - tie_window - SNAP_WORD + decision_window)

PRIORITY_FLIP = 1
PRIORITY_INFO = 2
PRIORITY_RULING = 3  # never dropped


# ---------------------------------------------------------------------------
# Actions the shell carries out


@dataclass(frozen=True)
class Say:
    text: str
    priority: int = PRIORITY_INFO
    source: Any = None  # the engine event, if any (announcer may render it itself)
    answer: bool = False  # the answer to a command (status, score, help, ...): shown on the display too


@dataclass(frozen=True)
class Log:
    record: Any


@dataclass(frozen=True)
class Notice:
    """Printed and spoken; shown on the display until the next notice.

    ``ends``: how an earlier notice that this one makes stale begins. The microphone
    being back is news only once the "lost" notice (about 9 s of speech) stops, so
    the newer one cuts it rather than waiting behind it.
    """

    EVENT_TYPE: ClassVar[str] = "notice"
    text: str
    ends: str = ""
    shown: bool = True  # kept on the display until the next notice; "resumed" is news only when said
    spoken: bool = True  # False: about the speaker itself, printed and shown only


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

    # A call from a voice that matches no enrolled player does not count. The caller must hear
    # that, or a real call lost (in noise, or shouted past full scale: about 1 in 10 of the
    # corpus calls) goes by in silence. Short, at information priority (the next card cuts it
    # and never waits for it: a ruling-priority notice of 5 s could hold play that long) and
    # at most once per UNKNOWN_REPEAT s of audio, so a bystander, or chatter heard as a call,
    # does not talk over the game.
    UNKNOWN_REPEAT = 30.0
    UNKNOWN_TEXT = "'{word}' not counted: voice not known"
    # A pace change ("slower", "faster") heard with less confidence than this says what was heard and how
    # to go back: "dealer score" heard as "dealer slower" turned a question into a pace change, and a player
    # who plays by ear must be able to tell and undo it by voice. (The spotter's own check takes most such
    # "slower"s for "score" first, vosk_spotter.SCORE_GAP, but gives no opinion in noise: in pink noise at
    # 20, 10 and 5 dB, 13 of the 29 it left came under 0.9, and 40 of 405 true ones; `python3 -m
    # bench.score_slower noise`, docs/announcer.md. An unsure "slower" is not answered as the score: one
    # true "slower" in 12 comes under 0.9 even in quiet.)
    SURE_PACE = 0.9

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
        lag: float | Callable[[], float] = HEARD_LAG,
        busy: Callable[[], bool] = lambda: False,
        peek: Callable[[float], list[Any]] | None = None,
        rivals: RivalWatch | None = None,
        turn_cue: bool = False,
    ) -> None:
        self.referee = referee
        self.turn_cue = turn_cue  # "<player>'s turn." after each card (verbosity all: who flips next)
        # Speech bursts seen on the inputs (voicesnap.bursts): the referee is advanced as soon as
        # every rival that could still tie is in, not only after the worst-case ``lag``.
        self.rivals = rivals
        # Speech on, with its start times on the input clock: ``peek(t)`` gives the events a
        # flip at ``t`` would make (on a copy of the game), so that the card is announced first
        # and turned for the referee when its announcement starts (``announced``).
        self.peek = peek
        self._awaiting: tuple[float, str] | None = None  # (due, text) of a flip announced, not yet turned
        self.busy = busy  # a ruling is still being spoken: the next flip waits for it
        self._waited = False
        self._held_for_call = False  # the next card waits for a call (or command) made before it
        self.voice = True  # voice commands are heard (play_session: a spotter with Vosk on an input)
        self.keys = True  # keys are read (play_session: a keyboard)
        # For help: how calls are made by voice (a sentence; "" where no call is heard by voice) and each
        # seat's call keys in words (Keymap.call_keys; printed once at the start, and a player who missed
        # them can ask again)
        self.call_words = "Call snap or snap pool."
        self.call_keys = ""
        self.rule = ""  # the variant's rule in one sentence (Game.rule_words), first in help
        self._command_from: float | None = None  # where a command the spotter is deciding began
        self._lag = lag
        self.players = tuple(players)
        self.pace = pace  # None: flip only on the flip command
        self.make_call = make_call
        self.describe = describe
        self.is_over = is_over
        self.active_player = active_player
        self.status = status
        self.score = score
        self.offset = offset
        self.paused = False  # by the players' pause command
        self.held = False  # by the table itself: the input device is gone
        self._rearm_after: float | None = None
        self._unknown_told = -math.inf  # when the players were last told of a call from an unknown voice
        self.stopped: Stop | None = None
        self.next_flip: float | None = start + first_flip_delay if pace else None
        self.last_said = ""
        self.now = start
        self.schedule: list[float] | None = None  # replays: every flip's time, instead of the pace
        self.ignore_commands = False  # replays: the schedule already says what players asked for
        self.stop_at: float | None = None  # replays: where the live game stopped
        self._commands = _command_names()

    # -- helpers -------------------------------------------------------------
    def _no_call(self, word: str) -> bool:
        """Whether ``word`` is a call for no seat in this game (Animal Snap's plain "snap")."""
        game = getattr(self.referee, "game", None)
        if game is None:
            return False
        return all(game.call_kind(seat, word) is None for seat in range(len(game.players)))

    def _events(self, produced: Iterable[Any], actions: list[Action], already_said: str | None = None) -> None:
        for ev in produced or ():
            actions.append(Log(ev))
            said = self.describe(ev)
            if said is not None and already_said is not None and said[0] == already_said:
                already_said = None  # announced before it was turned (peek): not twice
            elif said is not None:
                text, priority = said
                actions.append(Say(text, priority, ev))
                self.last_said = text
            if self.turn_cue and getattr(ev, "EVENT_TYPE", "") == "flipped" and not self.is_over(ev):
                who = self.active_player()
                if who is not None:  # (information: the next card cuts it, and at a pace it is heard first)
                    actions.append(Say(f"{who}'s turn.", PRIORITY_INFO))
            if self.stopped is None and self.is_over(ev):
                self.stopped = Stop("over", (ev,))

    def _reply(self, text: str, actions: list[Action], remember: bool = True) -> None:
        """An answer the players asked for, heard whole: at ruling priority the next card waits for it
        (at information priority the next card cut "status" after 0.3 s and "help" after 0.3 s)."""
        actions.append(Say(text, PRIORITY_RULING, answer=True))
        if remember:
            self.last_said = text

    def _command(self, name: str, det: Detection, actions: list[Action]) -> None:
        t = self.now
        if not allowed(name, self.paused):  # answered, never acted on (a flip while paused turned a card)
            first = self._ways(f"say resume after {COMMAND_PREFIX}", "press o")  # (keys only: "Say resume" was wrong)
            self._reply("Not paused." if name == "resume" else f"Paused. {first[0].upper()}{first[1:]} first.",
                        actions, remember=False)
            return
        if name in ("slower", "faster") and not self.pace:
            how = self._ways("says flip after " + COMMAND_PREFIX, "presses space")
            self._reply(f"There is no pace: cards are turned when someone {how}.", actions, remember=False)
            return
        if name == "pause":
            self.paused = True
            # (never "dealer resume" in the announcer's own words: its voice must not sound like a command)
            # (never the command's own words: said by the announcer, "dealer resume" could be heard as it)
            actions.append(Notice(f"paused: to go on, {self._ways(f'say resume after {COMMAND_PREFIX}', 'press o')}"))
        elif name == "resume":
            self.paused = False
            if self.pace:
                self.next_flip = t + self.pace
            actions.append(Notice("resumed", shown=False))
        elif name == "end":
            self.stopped = Stop("ended")
        elif name == "flip":
            active = self.active_player()
            if det.player is not None and active is not None and det.player != active:
                return  # only the active player's voice flips; keys flip for anyone
            self._flip(t, actions)
        elif name == "repeat":
            if self.last_said:
                self._reply(self.last_said, actions, remember=False)
        elif name == "status":
            self._reply(self.status() or "no status yet", actions)
        elif name == "score":
            self._reply(self.score() or "no score yet", actions)
        elif name in ("slower", "faster") and self.pace:  # (with no pace: answered above)
            self.pace = paced(self.pace, name)
            text = f"one flip every {self.pace:g} seconds"
            if det.confidence < self.SURE_PACE:
                back = "faster" if name == "slower" else "slower"
                key = KEY_NAMES.get(KEYMAP[back], KEYMAP[back])
                how = self._ways(f"say {back} after {COMMAND_PREFIX}", f"press {key}")
                text = f"{name.capitalize()}: {text}. To go back, {how}."
            self._reply(text, actions)
        elif name in ("louder", "quieter"):
            actions.append(Setting(name))
        elif name == "help":
            self._reply(self.help(), actions, remember=False)

    @property
    def lag(self) -> float:
        return self._lag() if callable(self._lag) else self._lag

    def _due(self) -> float | None:
        if self.schedule is not None:
            return self.schedule[0] if self.schedule else None
        return self.next_flip

    def _horizon(self) -> tuple[float, str]:
        """How far (audio clock) the referee may be advanced now, and why ("rivals" or "lag")."""
        fallback = self.now - self.lag
        if self.rivals is None:
            return fallback, "lag"
        dynamic = self.rivals.horizon(self.now)
        if dynamic is None:
            return fallback, "lag"
        window = self.rivals.decision_window
        if self._awaiting is not None:  # a card about to be turned (at its announcement, >= its due time):
            dynamic = min(dynamic, self._awaiting[0] + window)  # rule nothing after it
        # Only as far as the calls it rules: the referee refuses as late any call whose window has
        # passed its horizon, so a call the tracker missed (too faint for it) and the spotter reports
        # later is lost only if a later call was ruled before it, never just because time passed.
        due = [c.onset - self.offset + window for c in self._pending()]
        due = [d for d in due if d <= dynamic]
        dynamic = max(due) if due else fallback
        return (dynamic, "rivals") if dynamic > fallback else (fallback, "lag")

    def help(self) -> str:
        """The help command's answer: how to call and the commands that make sense now, in the ways
        this game hears them (voice, keys or both: a keyboard game was told to "say" commands)."""
        calls = self.call_words
        if self.keys and self.call_keys:
            calls = f"{calls} Call keys: {self.call_keys}." if calls else f"Call keys: {self.call_keys}."
        commands = help_text(self.paused, keys=self.keys, voice=self.voice or not self.keys)
        return " ".join(part for part in (self.rule, calls, commands) if part)

    def _ways(self, voice: str, key: str) -> str:
        """How the players can do something: by voice, by key, or both (only what this game hears)."""
        ways = [w for w, on in ((voice, self.voice), (key, self.keys)) if on]
        return " or ".join(ways) if ways else voice

    COMMAND_HOLD = 2.5  # s after a command begins that a card waits for it (a stuck partial never stops play)

    def _command_before(self, due: float) -> bool:
        """Has a command begun before ``due`` that the spotter is still deciding?"""
        begun = self._command_from
        return begun is not None and begun < due and self.now < begun + self.COMMAND_HOLD

    def _pending(self) -> list[Any]:
        """Calls the referee holds, not ruled yet (their onsets on its clock)."""
        return list(getattr(self.referee, "pending", ()))

    def _advance(self, horizon: float, actions: list[Action], by: str = "") -> None:
        produced = self.referee.advance(horizon + self.offset)
        if produced:
            actions.append(Log(TableStep("advance", horizon, heard=self.now, by=by)))
            self._events(produced, actions)

    def _flip(self, t: float, actions: list[Action]) -> None:
        if self.schedule:
            self.schedule.pop(0)
        if self.pace:
            self.next_flip = t + self.pace
        if self.peek is not None and self.schedule is None:
            preview = [(ev, self.describe(ev)) for ev in self.peek(t + self.offset)]
            said = [(ev, d) for ev, d in preview if d is not None]
            if len(said) == 1 and said[0][1][1] == PRIORITY_FLIP:  # a plain flip: announce it first
                ev, (text, priority) = said[0]
                actions.append(Say(text, priority, ev))
                self.last_said = text
                self._awaiting = (t, text)
                return
        self._turn(t, actions)

    def _turn(self, t: float, actions: list[Action], already_said: str | None = None) -> None:
        actions.append(Log(TableStep("flip", t)))
        self._events(self.referee.flip(t + self.offset), actions, already_said)

    # s of audio: a flip whose announcement has not started by then is turned anyway (a speaker
    # that hangs). Long, because the sound server can stall under load (measured in the e2e game
    # with two busy cores: 3.1 s with nothing else playing) and a card counted before it is heard
    # is wrong for a player who plays by ear. Speech that fails is reported (``speech_stopped``)
    # and turns the card at once instead.
    ANNOUNCE_WAIT = 8.0
    # A card whose announcement starts more than this share of the pace after its due time sets the pace
    # anew from when it was heard (``announced``); a usual speech start (10-100 ms) leaves the pace alone.
    LATE_SHARE = 0.5

    def announced(self, text: str, t: float) -> list[Action]:
        """An announcement started at ``t`` (input clock). If it is the flip waiting for it, the
        card is turned for the referee at ``t``: nobody can rightly call on a card before it is
        heard, so a call whose onset is earlier is judged against the table before it."""
        actions: list[Action] = []
        if self._awaiting is None or self.stopped is not None or text != self._awaiting[1]:
            return actions
        due, said = self._awaiting
        self._awaiting = None
        turned = min(max(due, t), due + self.ANNOUNCE_WAIT)  # (a wild clock map is capped)
        self._turn(turned, actions, said)
        if self.pace and self.schedule is None and self.next_flip is not None and turned - due > self.LATE_SHARE * self.pace:
            # Heard late (the speaker was still saying a long notice: a microphone lost and back): the next
            # card a full pace after this one was heard. From the due time, every card that fell due meanwhile
            # came at once, each cutting the last one's announcement: cards turned that nobody heard.
            self.next_flip = max(self.next_flip, turned + self.pace)
        if self.stopped is not None:
            actions.append(self.stopped)
        return actions

    def speech_stopped(self, reason: str) -> list[Action]:
        """Speech is off for good: cards are turned when due, the one waiting now at once."""
        self.peek = None
        actions: list[Action] = [Notice(f"{reason}; cards are no longer announced"),
                                 Log(TableNote(self.now, f"speech stopped: {reason}"))]
        if self._awaiting is not None and self.stopped is None:
            due, said = self._awaiting
            self._awaiting = None
            self._turn(max(due, self.now), actions, said)
            if self.stopped is not None:
                actions.append(self.stopped)
        return actions

    def hold(self, reason: str) -> list[Action]:
        """Stop flipping while the table cannot hear (device lost); calls already heard still count."""
        self.held = True
        return [Notice(reason), Log(TableNote(self.now, reason))]

    def release(self, now: float, reason: str) -> list[Action]:
        """Hearing again: the next flip comes a full pace after the return, not at once."""
        self.held = False
        self.now = max(self.now, now)
        self._rearm_after = self.now  # the clock jumps over the gap with the next audio
        return [Notice(reason, ends=LiveInput.LOST, shown=False), Log(TableNote(self.now, reason))]

    # -- the step ----------------------------------------------------------------
    def step(self, now: float, detections: Iterable[Detection] = (),
             bursts: Iterable[SpeechBurst] = (), undecided: float | None = None,
             commanding: float | None = None) -> list[Action]:
        """Take what was heard up to ``now`` (audio clock) and return what to do.

        Detections may come late and out of order; calls go to the referee with
        their own onsets, so arrival order never matters to the ruling.
        ``bursts``: speech starts and ends seen on the inputs up to ``now`` (for ``rivals``);
        ``undecided``: the onset of a call the spotter has begun to hear and not yet reported;
        ``commanding``: the same for a "dealer ..." command (a card due after it waits for it).
        """
        actions: list[Action] = []
        if self.stopped is not None:
            return actions
        self.now = max(self.now, now)
        self._command_from = commanding
        detections = list(detections)
        if self.rivals is not None:
            self.rivals.heard(bursts, [d for d in detections if d.engine != "keyboard"], undecided)
        if self._rearm_after is not None and self.now > self._rearm_after:
            self._rearm_after = None
            if self.pace:
                self.next_flip = self.now + self.pace
        for det in sorted(detections, key=lambda d: (d.onset, d.word, d.player or "")):
            command = self._commands.get(det.word)
            if command is None and det.word.startswith(COMMAND_PREFIX + " "):
                continue  # an unknown command phrase: nothing to do
            if command is not None and self.ignore_commands:
                continue
            if command is not None:
                actions.append(Log(TableStep("command", det.onset, det.player, det.word,
                                             det.onset, det.engine)))
                self._command(command, det, actions)
                if self.stopped is not None:
                    actions.append(self.stopped)
                    return actions
                continue
            if det.player is None and self._no_call(det.word):
                # (Animal Snap's "snap": nobody's call, whoever said it; "voice not known" sent them to enroll)
                actions.append(Log(TableNote(det.onset, f"'{det.word}' is no call in this game: ignored")))
                if det.onset >= self._unknown_told + self.UNKNOWN_REPEAT:
                    self._unknown_told = det.onset
                    actions.append(Say(f"'{det.word}' is no call in this game: each player calls their own word.",
                                       PRIORITY_INFO))
                continue
            if det.player is None:
                actions.append(Log(TableNote(det.onset, f"'{det.word}' heard from an unknown voice: ignored")))
                if det.onset >= self._unknown_told + self.UNKNOWN_REPEAT:
                    self._unknown_told = det.onset
                    actions.append(Say(self.UNKNOWN_TEXT.format(word=det.word), PRIORITY_INFO))
                continue
            if det.player not in self.players:
                actions.append(Log(TableNote(det.onset, f"'{det.word}' from {det.player}, who is not playing")))
                continue
            call = self.make_call(det.player, det.word, det.onset + self.offset)
            try:
                produced = self.referee.submit(call)
            except CallError as exc:  # e.g. a player already out calls: told, never a crash of the game
                actions.append(Log(TableNote(det.onset, f"'{det.word}' from {det.player} not judged: {exc}")))
                continue
            actions.append(Log(TableStep("call", det.onset, det.player, det.word, det.onset, det.engine,
                                         heard=self.now)))
            self._events(produced, actions)
        # Flips that fell due inside this stretch of audio happen in time order,
        # each after the rulings that were due before it (a slow recogniser can
        # hand over seconds at once; the order stays that of the clock).
        if self._awaiting is not None and self.now >= self._awaiting[0] + self.ANNOUNCE_WAIT:
            _due, said = self._awaiting  # never heard to start (dropped, no speaker): turned now
            self._awaiting = None
            self._turn(self.now, actions, said)
        held_at: float | None = None
        while self.stopped is None and not self.paused and not self.held and self._rearm_after is None:
            if self._awaiting is not None:
                break  # one card at a time: the last one is not turned yet
            due = self._due()
            if due is None or due > self.now:
                break
            if self.schedule is None and self.busy():
                self._waited = True  # players hear every ruling before the next card
                break
            if self._waited or self._held_for_call:  # the card is turned now, when the ruling has been heard
                due, self._waited = max(due, self.now), False
            horizon, by = self._horizon()  # rulings due before the card, never past it
            before = len(actions)
            self._advance(min(due, horizon) if by == "rivals" else due - self.lag, actions, by)
            if self.schedule is None and self._command_before(due):
                # "dealer pause" begun before this card is decided only once its last word is over:
                # the card waits for it (turned at once, a pause said just before a card let it turn).
                self._held_for_call = True
                break
            if self.schedule is None and any(c.onset - self.offset < due for c in self._pending()):
                # A call made before this card is not ruled yet (its decision window runs past the card's
                # due time): the card waits, so its ruling is said first. Turned now, a wrong call was
                # announced after the next card, naming a top card nobody could see any more.
                self._held_for_call = True
                break
            if self.schedule is None and any(isinstance(a, Say) and a.priority >= PRIORITY_RULING
                                             for a in actions[before:]):
                # A ruling made just now is spoken before the card: the next step asks busy(),
                # which knows once the speaker has it. (Turned at once, the card's announcement
                # queued behind the ruling and could start after the card was counted.)
                held_at = due
                break
            if self.stopped is None:
                self._held_for_call = False
                self._flip(due, actions)
        if self.stopped is None:
            horizon, by = self._horizon()
            if held_at is not None and horizon > held_at:  # nothing after the card held back is ruled
                horizon = held_at
            self._advance(horizon, actions, by)
        if self.stopped is None and self.stop_at is not None and self.now >= self.stop_at:
            self.stopped = Stop("ended")
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


POOL_CLAIM_HOLD = 1.5  # s of audio after the next flip that a "snap pool" for the last card may still end


class PoolClaim:
    """Is a Snap-pool claim open: could a word heard now rightly be "snap pool"?

    ``holder`` is ``[game]`` or ``[game, clock]`` (``clock()``: referee time of
    what the table has heard). The claim is open while the card on show matches
    the pool's top card and nobody has won or tied for it (``on_show("pool")``),
    and for ``hold`` seconds after the next flip, because a claim whose onset
    was before that flip is still valid and its word may still be being heard.

    Why it matters: while it is open the spotters hold every "snap" until they
    are sure no "pool" follows (up to ~1.2 s), and the referee runs further
    behind to wait for them. With only "a pool exists" (the first pass) that
    hold applied to nearly every snap once a pool had formed, which made the
    95th-percentile ruling ~1.5 s late; a claim is open on about one flip in 13.

    ``holder[2]``, where given, is called first: the spotter's thread waits there
    until the game loop has ruled on all the audio handed to it (Table.caught_up),
    so the answer is the game's as of the audio being judged, however far the
    spotter ran ahead (a file read as fast as it goes, a starved loop). Without
    it, a file game's pool claim was ruled a wrong call when the loop ran slow.

    Called from the spotter's thread while the game loop changes the game: it
    reads only public accessors, and when a read races a change (a key press, a
    speech start) it answers True (holding a snap a little longer is harmless;
    cutting "snap pool" short would turn a pool claim into a wrong snap).
    """

    def __init__(self, holder: list[Any], hold: float = POOL_CLAIM_HOLD) -> None:
        self.holder = holder
        self.hold = hold
        self._seen: tuple[int, int] | None = None  # (id(game), flip) where the claim was last open

    def __call__(self) -> bool:
        game = self.holder[0] if self.holder else None
        if game is None:
            return False
        if len(self.holder) > 2:  # the spotter's own: first let the game catch up with the audio handed over
            self.holder[2]()
        try:
            if game.pool_size() == 0 or game.pool_top() is None:
                return False
            view = game.view()
            if game.on_show("pool"):
                self._seen = (id(game), view.flip)
                return True
        except (IndexError, KeyError, ValueError, TypeError):
            return True
        seen = self._seen
        if seen is None or seen[0] != id(game) or view.flip != seen[1] + 1:
            return False  # never open, spent on its own card, or more than one flip ago
        clock = self.holder[1] if len(self.holder) > 1 else None
        return clock is not None and clock() - view.t <= self.hold


@dataclass(frozen=True)
class Heard:
    """From the spotter thread: audio up to ``until`` has been judged; these were in it.

    ``until`` None means keyboard input, which carries its own onset.
    """

    until: float | None
    detections: tuple[Detection, ...] = ()
    problem: str = ""  # overflow, device lost / back
    bursts: tuple[SpeechBurst, ...] = ()  # speech starts/ends in that audio (BurstTracker)
    refusals: tuple[Refusal, ...] = ()  # near misses the spotter judged another word (logged)
    undecided: float | None = None  # onset of a call the spotter has begun to hear (spotters.undecided_from)
    command: float | None = None  # onset of a command the spotter has begun to hear (spotters.command_begun_from)


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
        wall: Callable[[], float] | None = None,
        queue_size: int = 256,
        tick: float = 0.05,
        hook: Callable[[], list[Any]] | None = None,
        tracker: BurstTracker | None = None,
    ) -> None:
        self.loop = loop
        self.tracker = tracker  # speech bursts for the loop's RivalWatch (on the spotter thread)
        self.hook = hook  # called every tick; records it returns are logged (speech start times)
        self.on_actions = on_actions
        self.chunks = chunks
        self.spotter = spotter
        self.tap = tap
        self.inbox: queue.Queue[Heard] = queue.Queue(maxsize=queue_size)
        self.stopping = threading.Event()
        self.tick = tick
        self.heard = 0.0  # audio clock: how far the spotter has judged
        self._heard_at = time.monotonic()
        self._wall = wall or WallClock()
        self.clock = clock or self._key_clock
        self.errors: list[BaseException] = []
        self._threads: list[threading.Thread] = []
        self._undecided: float | None = None  # the spotter's undecided call onset, as last heard
        self._command: float | None = None  # the spotter's undecided command onset, as last heard
        self._handed = 0  # stretches of audio the spotter has handed to the loop
        self._ruled = 0  # of those, the ones the loop has stepped through
        self._ruling = threading.Condition()

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

    def caught_up(self) -> None:
        """On the spotter thread: wait until the loop has stepped through all the audio handed to it.

        What the spotter decides from the game (is a pool claim open?) is then the game as of the
        audio being judged, not as of wherever a busy loop happened to be.
        """
        with self._ruling:
            while self._ruled < self._handed and not self.stopping.is_set():
                self._ruling.wait(0.1)

    def _listen(self) -> None:
        """Spotter thread: chunks in clock order -> detections, plus how far we heard."""
        try:
            for chunk in self.chunks or ():
                if self.stopping.is_set():
                    break
                if self.tap is not None:
                    self.tap(chunk)
                found = tuple(self.spotter.accept(chunk)) if self.spotter is not None else ()
                bursts = tuple(self.tracker.accept(chunk)) if self.tracker is not None else ()
                with self._ruling:
                    self._handed += 1
                self.put(Heard(chunk.end / chunk.rate, found, bursts=bursts,
                               refusals=tuple(take_refusals(self.spotter)), undecided=undecided_from(self.spotter),
                               command=command_begun_from(self.spotter)))
            else:
                if self.spotter is not None and not self.stopping.is_set():
                    found = tuple(self.spotter.flush())
                    bursts = tuple(self.tracker.flush()) if self.tracker is not None else ()
                    self.put(Heard(None, found, bursts=bursts, refusals=tuple(take_refusals(self.spotter))))
                self.put(Heard(None, (), problem="end of audio"))
        except BaseException as exc:  # reported on the game loop, never lost
            self.errors.append(exc)
            self.put(Heard(None, (), problem=f"{LISTENING_FAILED}: {exc}"))

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
                while True:  # take everything that is waiting
                    try:
                        batch.append(self.inbox.get_nowait())
                    except queue.Empty:
                        break
                # One step per stretch of audio, in clock order, however many wait: a loop that fell
                # behind (a busy machine, a file read as fast as it goes) rules exactly as one that kept
                # up. Stepped once per batch, the rival watch saw only the batch's last "undecided" and
                # the referee's horizon jumped by the whole batch: a file game's tie became a late call
                # and a wrong call when the loop was slowed.
                actions: list[Action] = []
                ended_audio = failed = False
                stretches: list[Heard | None] = list(batch) or [None]  # (none waiting: a step all the same)
                for heard in stretches:
                    if heard is not None:
                        # why a call-like sound was not a call: "why was I not heard?"
                        actions += [Log(TableNote(r.onset, r.explain())) for r in heard.refusals]
                        if heard.until is not None:  # (a key press says nothing about the spotter)
                            self._undecided = heard.undecided
                            self._command = heard.command
                            self.heard = max(self.heard, heard.until)
                            self._heard_at = time.monotonic()
                        if heard.problem == "end of audio":
                            ended_audio = True
                        elif heard.problem.startswith(LISTENING_FAILED):
                            # nothing more will be heard, and the audio is the clock: the game would wait forever
                            failed = True
                            actions += [Notice(heard.problem), Log(TableNote(self.heard, heard.problem))]
                        elif heard.problem.startswith(LiveInput.LOST):
                            actions += self.loop.hold(heard.problem)
                        elif heard.problem.startswith(LiveInput.BACK):
                            actions += self.loop.release(self.heard, heard.problem)
                        elif heard.problem:
                            actions += [Notice(heard.problem), Log(TableNote(self.heard, heard.problem))]
                    now = self.heard if self.chunks is not None else self._wall()
                    stepped = self.loop.step(now, heard.detections if heard else (), heard.bursts if heard else (),
                                             self._undecided, self._command)
                    actions += stepped
                    if heard is not None and heard.until is not None:
                        with self._ruling:
                            self._ruled += 1
                            self._ruling.notify_all()
                    if any(isinstance(a, Stop) for a in stepped):
                        break
                if self.hook is not None:
                    for record in self.hook():
                        actions.append(Log(record))
                        if getattr(record, "EVENT_TYPE", "") == "speech-started":
                            actions += self.loop.announced(record.text, record.t)
                        elif getattr(record, "EVENT_TYPE", "") == "speech-stopped":
                            actions += self.loop.speech_stopped(record.reason)
                        elif getattr(record, "EVENT_TYPE", "") == "speaker-notice":
                            actions.append(Notice(record.text, shown=record.lost, spoken=False))
                self.on_actions(actions)
                stop = next((a for a in actions if isinstance(a, Stop)), None)
                if stop is not None:
                    return stop
                if ended_audio:
                    return Stop("audio ended")
                if failed:
                    return Stop(LISTENING_FAILED)
        except KeyboardInterrupt:
            stop = Stop("interrupted")
            with interrupts_deferred(drop=True):
                # (Ctrl-C, or SIGTERM/SIGHUP, which play turns into the same interrupt)
                self.on_actions([Log(TableNote(self.heard, "stopped by an interrupt (Ctrl-C or a stop signal)")), stop])
            return stop
        finally:
            self.stopping.set()
            for thread in self._threads:
                thread.join(timeout=2.0)


# ---------------------------------------------------------------------------
# The engine seen from the table: words, view, call records


def describe(ev: Any, verbosity: str = "names", state: Any = None,
             players: Sequence[str] = (), game: Any = None) -> tuple[str, int] | None:
    """An engine event as one plain sentence and its table priority, or None for silence.

    The wording is the announcer's (voicesnap.announcer.describe), so what is
    spoken, what ``--text`` prints and what the display lists are the same
    words at the same verbosity; plain words only, nothing a screen reader
    would spell out. ``state`` is the table after the event (the pool's top); ``game``, the game it
    happened in, says what kind of call a word was (why a call in Animal Snap was wrong).
    """
    from . import announcer, rules

    step = game.tiebreak_step() if game is not None and isinstance(ev, rules.GameOver) else None
    players = players or (tuple(game.players) if game is not None else ())  # (whose noise a wrong call was)
    said = announcer.describe(ev, announcer.Verbosity.parse(verbosity), state, players, kind_of(game), step)
    if said is None:
        return None
    text, priority, _earcon = said
    return text, _TABLE_PRIORITY[priority]


def kind_of(game: Any) -> Callable[[str, str], str | None] | None:
    """``game``'s kind of call for a player's word (``rules.Game.call_kind``), or None without a game."""
    if game is None:
        return None
    return lambda player, word: game.call_kind(game.players.index(player), word)


_TABLE_PRIORITY = {0: PRIORITY_INFO, 1: PRIORITY_FLIP, 2: PRIORITY_RULING}  # announcer.Priority -> table


def ruling_line(ev: Any, game: Any = None) -> str | None:
    """Short text of a ruling for the display's "last rulings" (ignored calls included); ``game`` as
    for ``describe``."""
    from . import rules
    from .announcer import ignored_words

    if isinstance(ev, rules.CallIgnored):
        return ignored_words(ev)
    if isinstance(ev, rules.RULINGS) or isinstance(ev, (rules.Eliminated, rules.GameOver)):
        said = describe(ev, game=game)
        return said[0] if said else None
    return None


def view_of(game: Any, *, rulings: Sequence[str] = (), title: str = "voicesnap", clock: float = 0.0,
            notice: str = "", wins: dict[str, int] | None = None, keys: Sequence[str] = (),
            answer: str = "") -> Any:
    """The display's view of a live game (voicesnap.rules.Game)."""
    from .display import PlayerView, TableView

    state = game.state
    own_piles = len(state.piles) == len(state.players)
    tops: dict[Any, list[str]] = {}  # face -> players showing it
    players = []
    for seat, name in enumerate(state.players):
        pile = state.piles[seat] if own_piles else ()
        top = pile[-1] if pile else None
        if top is not None:
            tops.setdefault(getattr(top, "face", top), []).append(name)
        players.append(PlayerView(
            name, len(state.stacks[seat]), len(pile), _card(top), active=(seat == state.active),
            out=state.eliminated[seat], wins=(wins or {}).get(name, 0)))
    matches = tuple(n for names in tops.values() if len(names) > 1 for n in names)
    if not own_piles and state.piles and state.piles[0]:
        centre = state.piles[0]
        title = f"{title}  centre pile {len(centre)}, top {_card(centre[-1])}"
        if len(centre) > 1:  # a match is the top card on the one under it: both shown (it showed the top only)
            same = getattr(centre[-1], "face", centre[-1]) == getattr(centre[-2], "face", centre[-2])
            title += f" on {_card(centre[-2])}" + ("  = match" if same else "")
    pool_top = _card(state.pool[-1]) if state.pool else None
    return TableView(tuple(players), len(state.pool), pool_top, tuple(rulings), title, clock, notice, matches,
                     tuple(keys), answer)


def _card(card: Any) -> str | None:
    if card is None:
        return None
    return card.code if getattr(card, "picture", None) is None else (card.name or card.picture)


class Output:
    """Carries out the loop's actions: the log first, then speech, text and display.

    ``log`` has ``write(*records)`` (voicesnap.gamelog.GameLog); ``say(text,
    priority, event)`` speaks (the announcer) and may be None; ``lines`` prints
    one line (to the terminal). With ``text`` every announcement is one plain
    line; otherwise the table display is printed after each change.
    """

    def __init__(self, log: Any, *, say: Callable[[str, int, Any], None] | None = None,
                 lines: Callable[[str], None] = print, text: bool = True,
                 view: Callable[[], Any] | None = None, setting: Callable[[str], str | None] | None = None,
                 redraw: bool = False, width: int = 80, hears_speech: bool = True, game: Any = None,
                 clock: Callable[[], float] | None = None) -> None:
        self.log = log
        self.clock = clock  # the table loop's clock (audio, or wall in a keyboard game): a round's listening time
        self.game = game  # the game shown (what kind of call a word was, for a wrong call's ruling line)
        # Whether speech start and end records will come (play's hook): only then does a ruling being
        # spoken hold the next card; a speaker that never reports would hold every card SPEECH_LIMIT s.
        self.hears_speech = hears_speech
        self.redraw = redraw  # a terminal: draw the table in place instead of scrolling
        self.width = width
        self.say = say
        self.lines = lines
        self.text = text
        self.view = view
        self.setting = setting
        self.rulings: list[str] = []
        self.notice = ""
        self.answer = ""  # the last answer to a command, shown under the table until the next card, ruling or notice
        # What the next card waits for: rulings, answers and a round's cards handed to the speaker and not yet
        # started (text, when handed, a round's card), in order, and those playing, by their speech id. Not
        # by text alone: a ruling and "repeat"'s answer are the same words, and the first one's end let the
        # card be turned while the second was still being said.
        # (text, when handed, what: "card" of a round, "answer" to a command, or "" a ruling)
        self._handed: list[tuple[str, float, str]] = []
        self._playing: dict[int, tuple[str, float, str]] = {}
        self._round_left = 0  # the last round's cards (Speed Snap) still to be said
        self._round_said: float | None = None  # when its last card was reported said (``clock``)
        self.said: list[tuple[str, Any]] = []  # (text, event) in order, for tests and replays

    SPEECH_LIMIT = 30.0  # s: a ruling not reported finished by then is taken as done (speech failed)
    # s of audio after a round's last card is said before the next round is turned: time to call a match
    # that card made (at a pace of 2 s a classic card, said in about 1.2 s, leaves 0.8 s).
    ROUND_GAP = 1.0

    def _track(self, record: Any) -> None:
        kind = getattr(record, "EVENT_TYPE", "")
        if kind == "speech-started":
            at = next((k for k, h in enumerate(self._handed) if h[0] == record.text), None)
            if at is not None:
                self._playing[record.id] = self._handed.pop(at)
        elif kind == "speech-ended" and record.id in self._playing:
            _text, _when, what = self._playing.pop(record.id)
            if what == "card":
                self._round_left -= 1
                if self._round_left == 0 and self.clock is not None:
                    self._round_said = self.clock()  # (the record's own time may be on the speaker's clock)
        elif kind == "speech-stopped":  # nothing more will be said: nothing to wait for
            self._handed.clear()
            self._playing.clear()
            self._round_left, self._round_said = 0, None

    def _flips(self, says: list[Say]) -> None:
        """Cards being announced. Several turned at one moment (Speed Snap: everyone at once) are said
        in turn, about 1.2 s each, and the next round would cut what is left: with 4 players at a pace
        of 3 s, 9 cards in 93 were never heard. So a round is waited for like a ruling, and then
        ``ROUND_GAP`` more. Any new card ends the wait for an older round (its rest is cut)."""
        self._handed = [h for h in self._handed if h[2] != "card"]
        self._playing = {i: p for i, p in self._playing.items() if p[2] != "card"}
        self._round_left, self._round_said = 0, None
        if not self.hears_speech or self.say is None or len(says) < 2:
            return
        when = time.monotonic()
        self._handed += [(a.text, when, "card") for a in says]
        self._round_left = len(says)

    def busy(self) -> bool:
        """Is a ruling, an answer or a round of cards still being spoken (or a round just said)? The next
        flip waits, so every flip is heard."""
        since = time.monotonic() - self.SPEECH_LIMIT
        self._handed = [h for h in self._handed if h[1] >= since]
        self._playing = {i: p for i, p in self._playing.items() if p[1] >= since}
        if self._round_said is not None and self.clock is not None:
            if self.clock() < self._round_said + self.ROUND_GAP:
                return True
            self._round_said = None
        return bool(self._handed or self._playing)

    def __call__(self, actions: list[Action]) -> None:
        records = [a.record for a in actions if isinstance(a, Log)]
        if records:
            self.log.write(*records)  # before anything is said: nothing announced is unlogged
        changed = False
        cards = [a for a in actions if isinstance(a, Say) and a.priority == PRIORITY_FLIP
                 and getattr(a.source, "EVENT_TYPE", "") == "flipped"]
        if cards:
            self._flips([a for a in cards if a.source.t == cards[-1].source.t])
        for a in actions:
            if isinstance(a, Log):
                self._track(a.record)
                if isinstance(a.record, TableStep) and a.record.kind == "flip":
                    changed = True  # the card is on the table now (it may have been announced before)
                    self.answer = ""  # a status or score answer is out of date once a card is turned
                line = ruling_line(a.record, self.game)
                if line:
                    self.rulings = (self.rulings + [line])[-6:]
                    changed = True
                    self.answer = ""  # ...or a ruling has moved cards
                    if self.text and describe(a.record) is None:
                        self.lines(line)  # ignored calls: printed, never spoken
            elif isinstance(a, Say):
                self.said.append((a.text, a.source))
                if self.say is not None:
                    if a.answer:  # it cuts the answers before it (announcer.SpeechQueue): no more waiting for them
                        self._handed = [h for h in self._handed if h[2] != "answer"]
                        self._playing = {i: p for i, p in self._playing.items() if p[2] != "answer"}
                    if a.priority >= PRIORITY_RULING and self.hears_speech:
                        self._handed.append((a.text, time.monotonic(), "answer" if a.answer else ""))
                    # (an answer goes with its Say, whose ``answer`` tells the speaker what it may cut)
                    self.say(a.text, a.priority, a if a.answer and a.source is None else a.source)
                if self.text:
                    self.lines(a.text)
                if a.answer:  # shown as well as spoken: with --quiet, or speech failed, it was lost
                    self.answer = a.text
                changed = changed or a.source is not None or a.answer
            elif isinstance(a, Notice):
                self.notice = a.text if a.shown else ""
                if a.shown:  # the notice takes over the screen's message line
                    self.answer = ""
                self.said.append((a.text, None))
                if self.say is not None and a.spoken:
                    self.say(a.text, PRIORITY_RULING, a)
                self.lines(a.text)
                changed = True
            elif isinstance(a, Setting):  # louder, quieter: the answer said, printed and shown as any answer
                answer = self.setting(a.name) if self.setting is not None else NO_VOICE_TO_CHANGE
                if answer:
                    self([Say(answer, PRIORITY_RULING, answer=True)])
        if changed and not self.text and self.view is not None:
            from .display import render

            table = "\n".join(render(self.view(), width=self.width))
            self.lines(("\x1b[H\x1b[2J" + table) if self.redraw else table)


def _drive(game: Any, logged: Sequence[Any]) -> None:
    """Re-run a game's logged flips and rulings through the rules (resume)."""
    from . import rules

    i = 0
    while i < len(logged):
        ev = logged[i]
        if isinstance(ev, (rules.Flipped, rules.Refreshed)):
            produced = game.flip(ev.t)
        elif isinstance(ev, rules.RULINGS) or isinstance(ev, rules.Forfeit):
            produced = game.apply(ev)
        else:
            i += 1
            continue
        if produced and produced[0] != ev:
            from .gamelog import LogError

            raise LogError(f"the log says {ev} but the rules give {produced[0]}; the log does not "
                           "belong to these settings, so it cannot be resumed")
        i += max(1, len(produced))


@dataclass
class Resumed:
    """A session rebuilt from its log: the game to continue (or None) and the clock."""

    settings: TableSession
    session: Any
    game: Any
    last_t: float
    games: int
    unlogged: list[Any]  # records the crash kept from the log (e.g. a missing game score)


def rebuild(records: Sequence[Any]) -> Resumed:
    """Deal the same session again from its log and bring it to where the log ends."""
    from . import rules
    from .gamelog import LogError
    from .session import GameScored, Session

    settings = next((r for r in records if isinstance(r, TableSession)), None)
    if settings is None:
        raise LogError("the log has no table-session record, so it is not a voicesnap play log")
    session = new_session(settings)
    groups: list[list[Any]] = []
    for r in records:
        if isinstance(r, rules.GameStarted):
            groups.append([r])
        elif groups and isinstance(r, (rules.Dealt, rules.Flipped, rules.Refreshed, rules.Eliminated,
                                       rules.GameOver, rules.Forfeit, *rules.RULINGS)):
            groups[-1].append(r)
    scored = {r.game for r in records if isinstance(r, GameScored)}
    current = None
    unlogged: list[Any] = []
    for number, group in enumerate(groups, 1):
        game = session.new_game(group[0].t)
        if game.events[0] != group[0]:
            raise LogError(f"game {number} in the log was not dealt from these settings; cannot resume")
        _drive(game, group[2:])
        if game.is_over():
            out = session.record(game)
            if number not in scored:
                unlogged.extend(out)
        else:
            current = game
    times = [getattr(r, "t", None) or getattr(r, "now", None) or 0.0 for r in records]
    last_t = max([0.0, *[t for t in times if isinstance(t, float)]])
    return Resumed(_pace_as_left(settings, records), session, current, last_t, len(groups), unlogged)


def _pace_as_left(settings: TableSession, records: Sequence[Any]) -> TableSession:
    """The settings with the pace the players had asked for by the end of the log ("dealer slower"
    twice took 2 s to 3.125 s, and a resume went back to 2 s)."""
    from dataclasses import replace as _replace

    commands = {phrase: name for name, phrase in command_phrases().items()}
    pace = settings.pace
    for r in records:
        name = commands.get(r.word or "") if isinstance(r, TableStep) and r.kind == "command" else None
        if pace and name in ("slower", "faster"):
            pace = paced(pace, name)
    return _replace(settings, pace=pace)


def new_session(settings: TableSession) -> Any:
    from .rules import Options
    from .session import Session

    options = Options(tie_window=settings.tie_window, pool_claim=settings.pool_claim,  # type: ignore[arg-type]
                      flipper_may_call=settings.flipper_may_call)
    return Session(settings.players, settings.format, settings.seed, settings.variant, options,
                   **settings.config)


def key_calls(game: Any) -> tuple[str, ...]:
    """The calls a seat's keys make in this variant: "snap" always; "snap pool" where it is a call of its
    own (Silent Snap's pool is the slam); "slap" in Slapjack only."""
    from .vocabulary import SLAP, SNAP, SNAP_POOL

    words = game.call_words(0)
    out = [SNAP]
    if "pool" in words and words["pool"] != words.get("snap"):
        out.append(SNAP_POOL)
    if "slap" in words:
        out.append(SLAP)
    return tuple(out)


def snap_words(game: Any) -> dict[str, str]:
    """Each player's word for the snap key where it is not "snap" (Silent Snap's slam,
    Animal Snap's noise), asked of the engine's public ``call_words``."""
    out = {}
    for seat, name in enumerate(game.players):
        word = game.call_words(seat).get("snap", "snap")
        if word != "snap":
            out[name] = word
    return out


def hears_commands(engine: str) -> bool:
    """Whether calls heard by this engine (play's logged name: "combined+keyword", "vosk+slams", ...) come
    with the voice commands: only Vosk hears "dealer pause" and the rest; without it commands are keys."""
    return "vosk" in engine or "combined" in engine


NO_VOICE_TO_CHANGE = "Speech is off: there is no announcer's voice to change."  # louder, quieter without speech


# What each part of an engine's logged name means, for the line a game starts with (a screen reader read
# "combined+keyword" as "combined plus keyword", which says nothing to a player).
_ENGINE_WORDS = {"vosk": "Vosk", "keyword": "the keyword model", "enrolled": "the players' enrolled calls",
                 "slam": "table slams", "slams": "table slams"}


def engine_words(engine: str) -> str:
    """Who hears the calls, in words: "combined+keyword" -> "Vosk and the keyword model, each caller known
    by their voice"; "vosk+slams" -> "Vosk and table slams". An unknown part is given as it is."""
    parts = engine.split("+")
    voices = "combined" in parts
    strict = "strict" in parts  # (play --strict-calls: it read "heard by Vosk, the keyword model and strict")
    heard = [_ENGINE_WORDS.get(p, p) for p in (["vosk"] if voices else []) + [p for p in parts
                                                                            if p not in ("combined", "strict")]]
    said = heard[0] if len(heard) == 1 else ", ".join(heard[:-1]) + " and " + heard[-1]
    return (said + (", each caller known by their voice" if voices else "")
            + (", each call checked against its player's enrolled voice" if strict else ""))


def call_words_text(game: Any, slams: bool = True) -> str:
    """How to call by voice in this variant, for help: "Call snap or snap pool.", each player's own word
    (Animal Snap), or a slam (Silent Snap; "" where ``slams`` are not heard: one microphone cannot say
    whose hand slammed, so slams are keys). Asked of the engine's ``call_words`` and ``call_kind``."""
    from .rules import SLAM

    seats = range(len(game.players))
    if all(game.call_kind(s, w) == SLAM for s in seats for w in game.call_words(s).values()):
        return "To call, slam the table." if slams else ""
    own = snap_words(game)
    if len(set(own.values())) > 1:  # each player their own word
        each = ", ".join(f"{p} {own[p]}" for p in game.players if p in own)
        pool = game.call_words(0).get("pool")
        return f"Each player calls their own word: {each}." + (f" For the pool, {pool}." if pool else "")
    words = list(dict.fromkeys(game.call_words(0).values()))
    if not words:
        return ""
    return "Call " + (", ".join(words[:-1]) + " or " + words[-1] if len(words) > 1 else words[0]) + "."


def status_text(game: Any) -> str:
    """The "status" command's answer, in the announcer's words (one wording for every variant), with
    whose turn it is (not in Speed Snap, where everyone flips at once, nor once the game is over)."""
    from .announcer import status_words

    return status_words(game.state, game.whose_turn())


def score_text(session: Any) -> str:
    """The "score" command's answer: games won, and what wins the session where there is more than one
    game ("Best of 3: first to 2 wins the session")."""
    from .text import counted

    text = "Games won: " + ", ".join(f"{p} {n}" for p, n in zip(session.players, session.scores)) + "."
    fmt = session.format
    if session.sudden_death:
        return f"{text} Sudden death: the next game's winner wins the session."
    if fmt.kind == "first-to":
        return f"{text} First to {counted(fmt.n, 'game')} wins the session."
    if fmt.n > 1:
        return f"{text} Best of {fmt.n}: first to {fmt.target} wins the session."
    return text


@dataclass
class SessionResult:
    reason: str  # "over" (session finished), "ended", "interrupted", "audio ended", LISTENING_FAILED
    winner: str | None
    games: int
    said: list[tuple[str, Any]]


def play_session(
    settings: TableSession,
    log: Any,
    *,
    chunks: Iterable[Any] | None = None,
    spotter: Any = None,
    tap: Callable[[Any], None] | None = None,
    keyboard: Any = None,
    say: Callable[[str, int, Any], None] | None = None,
    lines: Callable[[str], None] = print,
    text: bool = True,
    setting: Callable[[str], str | None] | None = None,
    resumed: Resumed | None = None,
    schedule: Sequence[float] | None = None,
    stop_at: Sequence[float] | None = None,
    first_flip_delay: float = 1.0,
    tick: float = 0.05,
    pool_flag: list[Any] | None = None,
    hook: Callable[[], list[Any]] | None = None,
    redraw: bool = False,
    announce_flips: bool = False,
) -> SessionResult:
    """Play (or continue) a whole session; everything goes to ``log`` as it happens.

    ``schedule`` (replays) gives every flip's time instead of the pace, and
    ``stop_at`` each game's logged end time; commands are then ignored, since
    the flips already say what the players did.
    ``announce_flips``: speech is on and ``hook`` reports when each announcement
    starts on the input clock; every card is then announced first and turned
    for the referee at that moment (TableLoop.announced), and the log's flip
    times are those, so a replay judges the same.
    """
    from .keyboard import KeyCall, Keymap, pump_keys
    from .referee import Call, Referee
    from .rules import GameOver

    offset = 0.0
    shown_keys: list[str] = []  # the key lines last printed (a variant's words can change them game to game)
    if resumed is not None:
        session = resumed.session
        game = resumed.game
        offset = resumed.last_t + 1.0
        log.write(TableResumed(offset, settings.audio))
        if resumed.unlogged:
            log.write(*resumed.unlogged)
    else:
        session = new_session(settings)
        game = None
        log.write(settings)
    it = iter(chunks) if chunks is not None else None
    wall = WallClock()
    audio_now = 0.0  # position on this run's audio clock where the next game starts
    said: list[tuple[str, Any]] = []
    reason = "over"
    flips = list(schedule or ())
    ends = list(stop_at or ())
    told = False  # the variant's rule said (once a sitting)
    while not session.is_over():
        fresh = game is None
        if fresh:
            game = session.new_game(audio_now + offset)
            log.write(*game.events)
        holder = game
        clock_box: list[Callable[[], float]] = []

        def game_clock(box: list = clock_box) -> float:  # referee time of what the table has heard
            return box[0]() if box else float("-inf")

        claim = PoolClaim([holder, game_clock])
        referee = Referee(game, settings.decision_window)
        lag_now = (lambda c=claim, s=settings: max(s.lag, s.pool_lag) if c() else s.lag)
        # (type: ignore[misc] on the lambdas below: mypy cannot type a lambda with default args, python/mypy#15459)
        rivals = tracker = None
        if it is not None and spotter is not None:  # voices: rule once every possible rival is in
            rivals = RivalWatch(lambda f=lag_now, s=settings: burst_latency(f(), s.tie_window, s.decision_window),  # type: ignore[misc]
                                settings.tie_window, settings.decision_window)
            per = getattr(spotter, "spotters", None)  # one spotter per microphone channel (ChannelSpotters)
            tracker = BurstTracker(sorted(per) if isinstance(per, dict) else None)  # else every input channel
        # in words, as it is read: "voicesnap classic, game 1 (best-of-3)" was ids a screen reader spells out
        title = f"voicesnap: {game.title}, game {session.games + 1}" + (
            f" of a session of {session.format.words()}" if session.format.n > 1 else "")
        out_box: list[Output] = []

        keys: list[str] = []  # the keys, shown under the table while a keyboard is read

        def view(game: Any = holder, title: str = title, keys: list[str] = keys) -> Any:
            o = out_box[0]  # wins read now: the table drawn once a game is scored counts that game
            return view_of(game, rulings=o.rulings, title=title, clock=table.heard if it else wall(),
                           notice=o.notice, wins=dict(zip(session.players, session.scores)), keys=keys,
                           answer=o.answer)

        import shutil

        width = min(120, shutil.get_terminal_size((80, 24)).columns) if redraw else 80
        output = Output(log, say=say, lines=lines, text=text, view=view, setting=setting, redraw=redraw,
                        width=width, hears_speech=hook is not None, game=holder)
        out_box.append(output)
        start = audio_now if it is not None else wall()
        loop = TableLoop(
            referee, game.players,
            pace=None if schedule is not None else (settings.pace or None),
            make_call=Call,
            describe=lambda ev, g=holder: describe(ev, settings.verbosity, g.state, g.players, g),  # type: ignore[misc]
            is_over=lambda ev: isinstance(ev, GameOver),
            # whose turn, not the engine's seat counter: in Speed Snap nobody's (it said "Cy's turn." after each
            # card at --verbosity all, and only that seat's voice could say "flip")
            active_player=lambda g=holder: g.whose_turn(),  # type: ignore[misc]
            status=lambda g=holder: status_text(g),  # type: ignore[misc]
            score=lambda s=session: score_text(s),  # type: ignore[misc]
            offset=offset,
            start=start,
            first_flip_delay=first_flip_delay,
            lag=lag_now,
            rivals=rivals,
            busy=lambda: out_box[0].busy(),
            peek=(lambda t, g=holder: g.copy().flip(t)) if announce_flips and schedule is None else None,  # type: ignore[misc]
            turn_cue=settings.verbosity == "all",
        )
        output.clock = lambda lp=loop: lp.now  # (a round's listening time)
        heard = it is not None and spotter is not None  # calls by voice
        loop.voice, loop.keys = heard and hears_commands(settings.engine), keyboard is not None
        loop.call_words = call_words_text(game, slams="slam" in settings.engine) if heard else ""
        loop.rule = rule = game.rule_words()
        if schedule is not None:
            loop.schedule = [t - offset for t in flips]
            loop.ignore_commands = True
            loop.stop_at = (ends.pop(0) - offset) if ends else None
        # Said whole before the first card (ruling priority: the card waits), so a player who plays by
        # ear knows who goes first, and that a resumed game is the one they left.
        own = snap_words(game)
        # The variant's rule, once a sitting (the first game said here, fresh or resumed): the players chose
        # Slapjack, but a player by ear was never told that "slap" is a call, nor when
        calls = f" {rule}" if rule and not told else ""
        keyed = [p for p in game.players if settings.channels and p not in settings.channels]
        if keyed and heard and keyboard is not None and not told:
            # a mic per player but not for these: printed before the game, and now said (a player by ear was
            # never told that their shout is heard by nobody, nor which keys are theirs)
            seats = dict(zip(game.players, Keymap(game.players, snap_words=own,
                                                  calls=key_calls(game)).call_keys().split("; ")))
            calls += (f" {keyed[0]} has no microphone and calls by key: {seats[keyed[0]].removeprefix(keyed[0] + ' ')}."
                      if len(keyed) == 1 else f" {listed(keyed)} have no microphone and call by key: "
                      + "; ".join(seats[p] for p in keyed) + ".")
        # A session of more than one game, once a sitting: what it is played to, and on a resume the games won
        # so far (a player by ear who came back to a best of 3 heard only "Resuming game 2", never the score)
        sitting = ""
        if not told and session.format.n > 1:
            sitting = (f"{score_text(session)} " if resumed is not None
                       else f"{session.format.words().capitalize()}. ")
        told = True
        # Animal Snap: each player's own noise, said (a player playing by ear has no keys line to read)
        calls += (" Calls: " + ", ".join(f"{p} {own[p]}" for p in game.players if p in own) + "."
                  if len(set(own.values())) > 1 else "")
        if keyboard is not None and "slam" in own.values() and "slam" not in settings.engine:
            # Silent Snap on one microphone: a slam on the table is not heard, only its key. Said as well as
            # printed: a player by ear slammed the table and nothing happened
            keymap_said = Keymap(game.players, snap_words=own, calls=key_calls(game))
            slams = {k.player: key for key, k in keymap_said.keys.items() if isinstance(k, KeyCall) and k.kind == "slam"}
            calls += " Slams are keys: " + ", ".join(f"{p} {slams[p]}" for p in game.players if p in slams) + "."
        if heard and not loop.voice and session.games == 0 and fresh:
            # calls by voice, commands not (no Vosk): printed before the game, and now said once, as a player
            # by ear said "dealer pause" and heard nothing
            calls += (" Voice commands are not heard in this game; press question mark for the command keys."
                      if keyboard is not None else " Voice commands are not heard in this game.")
        if fresh:
            dealer, first = game.players[game.dealer], game.players[game.active]
            # Speed Snap has no first player: "Bob goes first" told a player by ear to wait for Bob
            opening = "everyone turns a card at once" if game.whose_turn() is None else f"{first} goes first"
            output([Say(f"{sitting}Game {session.games + 1}. {dealer} deals; {opening}.{calls}", PRIORITY_RULING)])
        elif resumed is not None and game is resumed.game:
            output([Say(f"Resuming game {session.games + 1}. {sitting}{status_text(game)}{calls}", PRIORITY_RULING)])
        table = Table(loop, output, chunks=it, spotter=spotter, tap=tap, wall=wall, tick=tick, hook=hook,
                      tracker=tracker)
        clock_box.append(lambda t=table: (t.heard if it is not None else wall()) + offset)  # type: ignore[misc]
        if pool_flag is not None:  # the spotter's claim: asked on its thread, as of the audio it judges
            pool_flag[:] = [holder, game_clock, table.caught_up]
        if isinstance(chunks, LiveInput):  # device lost/back and overflows reach this game's loop
            chunks.report = lambda text, t=table: t.put(Heard(None, (), problem=text))  # type: ignore[misc]
        if keyboard is not None:
            keymap = Keymap(game.players, snap_words=snap_words(game), calls=key_calls(game))
            loop.call_keys = keymap.call_keys()
            if redraw:  # a screen drawn in place would wipe printed keys: they are listed under the table
                keys[:] = keymap.help_lines()
            else:  # printed when they change: each seat's own word (Silent Snap's slam, Animal Snap's noise)
                # --text (a screen reader) gets them in words: "Alice: q=snap" and "-=slower" were read
                # aloud as "q equals snap" and "minus equals slower"
                help_lines = ([f"Call keys: {keymap.call_keys()}.", help_text(False, keys=True, voice=False)] if text
                              else keymap.help_lines())
                if help_lines != shown_keys:
                    shown_keys[:] = help_lines
                    for line in help_lines:
                        lines(line)
            table.start_thread(lambda: pump_keys(keyboard, keymap, table.clock, table.put_key,
                                                 table.stopping.is_set), "voicesnap-keys")
        stop = table.run()
        with interrupts_deferred(drop=stop.reason == "interrupted"):  # the game's end is logged whole
            if stop.reason != "over":
                tail = referee.close() if not game.is_over() else []
                acts: list[Action] = []
                loop._events(tail, acts)
                output(acts)
            end_now = table.heard if it is not None else wall()
            log.write(TableEnd(session.games + 1, stop.reason, end_now + offset))
            audio_now = end_now + 1.0
            if schedule is not None:
                flips = [t for t in flips if t > end_now + offset]
            if not game.is_over():
                said.extend(output.said)
                reason = stop.reason
                break
            scored = session.record(game)
            acts = []
            loop._events(scored, acts)
            output(acts)
            said.extend(output.said)
            game = None
            if stop.reason not in ("over",):
                reason = stop.reason
                break
    return SessionResult(reason, session.winner, session.games, said)
