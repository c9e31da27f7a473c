"""Voice commands: "dealer pause" and friends, heard by the same spotter as the calls.

How commands avoid false triggers during play (each layer measured in
bench/bench_announcer.py on the fixture corpus, figures in docs/announcer.md):

1. A prefix word. A command is two or three words, "dealer <command>", and
   only a spotter detection whose word is *exactly* one of
   ``vocabulary.command_phrases()`` becomes a command. Bare "pause", "help",
   "status" in table talk, or "dealer" alone, never do; a call ("snap",
   "snap pool", "slap") never does, and a command phrase is never passed to
   the referee as a call (``is_call``).
2. The announcer never says the prefix word followed by a command word
   (help lists the commands *before* naming the prefix), and never says a
   call word: its own voice cannot form a command or a call phrase.
3. An echo gate: a command heard while the announcer itself was speaking and
   attributed to no enrolled player is ignored (``CommandGate(speaking=...)``).
4. Lead-in quiet: a command starts an utterance ("dealer, pause"), it is
   not the middle of a sentence ("who is the dealer now"). With the recent
   audio available (``CommandGate(audio=...)``), a command whose 250 ms
   before the onset is not at least 10 dB quieter than the command itself
   is ignored.
5. A refractory time: the same command twice within ``refractory`` seconds is
   one command (a partial and a final result of one utterance).
6. State: a command that makes no sense now (resume while playing, flip while
   paused) is answered ("Not paused."), never acted on.

Layers 4 and 5 are ``CommandGate``, which a game runs on what its spotter hears
(``spotters.command_gate.CommandGated``); there layer 3 is the echo canceller's own check (a
detection that is mostly removed echo is the game's own speech: ``echo.EchoCancelled``).

Every command also has a keyboard key (``KEYMAP``), used by voicesnap.keyboard.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Sequence

from .events import event
from .spotters import Detection
from .vocabulary import COMMAND_PREFIX, COMMANDS, command_phrases

__all__ = [
    "Command", "KEYMAP", "DESCRIPTIONS", "CommandGate", "from_detection", "is_call",
    "help_text", "allowed",
]


@event("command")
@dataclass(frozen=True)
class Command:
    """A player asked for something. ``t`` is the onset on the audio clock."""

    name: str  # a key of vocabulary.COMMANDS
    t: float
    player: str | None = None
    source: str = "voice"  # "voice" or "key"
    confidence: float = 1.0


# command -> keyboard key (single characters; "\x1b" is Esc). Seat call keys
# (q a z, w s x, ... y h n) are left alone so one keyboard serves both.
KEYMAP: Mapping[str, str] = {
    "flip": " ",
    "pause": "p",
    "resume": "o",
    "repeat": "l",
    "status": "i",
    "score": "k",
    "slower": "-",
    "faster": "+",
    "louder": ">",
    "quieter": "<",
    "help": "?",
    "end": "\x1b",
}

# Keys by name, as a screen reader would read them out and a player can find them.
KEY_NAMES = {" ": "space", "\x1b": "Escape", "-": "minus", "+": "plus", ">": "greater-than", "<": "less-than",
             "?": "question mark"}

DESCRIPTIONS: Mapping[str, str] = {
    "flip": "turn the next card",
    "pause": "stop flipping until resumed",
    "resume": "carry on after a pause",
    "repeat": "say the last announcement again",
    "status": "every player's cards and showing card, and the pool",
    "score": "the score",
    "slower": "speak slower",
    "faster": "speak faster",
    "louder": "speak louder",
    "quieter": "speak quieter",
    "help": "what you can say now",
    "end": "end the game",
}

_PHRASE_TO_NAME = {phrase: name for name, phrase in command_phrases().items()}


def is_call(det: Detection) -> bool:
    """Whether a detection is a call for the referee: anything but a command phrase or its parts."""
    word = " ".join(det.word.lower().split())
    return not (word == COMMAND_PREFIX or word.startswith(COMMAND_PREFIX + " ") or word in COMMANDS.values())


def from_detection(det: Detection) -> Command | None:
    """The command a detection names, or None (layer 1: the exact prefixed phrase only)."""
    name = _PHRASE_TO_NAME.get(" ".join(det.word.lower().split()))
    if name is None:
        return None
    return Command(name, det.onset, det.player, "voice", det.confidence)


def allowed(name: str, paused: bool) -> bool:
    """Layer 5: commands that make sense now."""
    if name == "resume":
        return paused
    if name in ("pause", "flip"):
        return not paused
    return True


def help_text(paused: bool, keys: bool = False, voice: bool = True) -> str:
    """The commands that make sense now, as the players can give them: ``voice`` (heard after the
    prefix word), ``keys`` (pressed), or both. The prefix is named *after* the list, so the
    announcer never says "dealer <command>" itself (layer 2)."""
    names = [n for n in COMMANDS if allowed(n, paused)]
    keyed = ", ".join(f"{KEY_NAMES.get(KEYMAP[n], KEYMAP[n])} {COMMANDS[n]}" for n in names if n in KEYMAP)
    if keys and voice:
        return f"Commands, said after the word {COMMAND_PREFIX} or by key: {keyed}."
    if keys:
        return f"Command keys: {keyed}."
    words = [COMMANDS[n] for n in names]
    said = ", ".join(words[:-1]) + " or " + words[-1]
    return f"You can say {said}, each after the word {COMMAND_PREFIX}."


@dataclass
class CommandGate:
    """Layers 1, 3, 4 and 5 in one place: detections in, commands out.

    ``speaking(t)`` says whether the announcer's own audio was playing at
    clock time ``t``. ``audio(start, end)`` returns
    the input samples between two clock times (or None when no longer
    held); ``echo(start, end)``, what the echo canceller removed from them
    (None: no canceller ran). ``counts`` records why detections were rejected, for the
    benchmark and ``voicesnap listen``.
    """

    speaking: Callable[[float], bool] | None = None
    audio: Callable[[float, float], Any] | None = None
    echo: Callable[[float, float], Any] | None = None
    refractory: float = 1.0
    min_confidence: float = 0.0
    lead_in: float = 0.25  # seconds before the onset that must be quiet
    lead_in_db: float = 10.0  # how much quieter than the command
    # With ``echo``: a lead-in is the game's own speech when the canceller removed at least ECHO_DB (re the
    # lead-in's level) over it and the ECHO_TAIL before it (commands laid over the announcer: see
    # docs/announcer.md, "The command gate in a game").
    echo_tail: float = 0.3
    echo_db: float = -10.0
    counts: dict[str, int] = field(default_factory=dict)
    _last: dict[str, float] = field(default_factory=dict)

    def _count(self, why: str) -> None:
        self.counts[why] = self.counts.get(why, 0) + 1

    def accept(self, det: Detection) -> Command | None:
        return self.judge(det)[0]

    def judge(self, det: Detection) -> tuple[Command | None, str | None]:
        """The command ``det`` gives, or None and why not (one of ``counts``' keys; None: no command phrase)."""
        cmd = from_detection(det)
        if cmd is None:
            return None, None
        why = None
        if det.confidence < self.min_confidence:
            why = "low confidence"
        elif self.speaking is not None and det.player is None and self.speaking(det.onset):
            why = "echo"
        elif self.audio is not None and not self._quiet_before(det, self.audio):
            why = "mid-sentence"
        else:
            last = self._last.get(cmd.name)
            if last is not None and 0 <= det.onset - last < self.refractory:
                why = "repeat"
        if why is not None:
            self._count(why)
            return None, why
        self._last[cmd.name] = det.onset
        return cmd, None

    def _quiet_before(self, det: Detection, audio: Callable[[float, float], Any]) -> bool:
        """``audio``: ``self.audio`` (not None)."""
        import numpy as np

        before = audio(det.onset - self.lead_in, det.onset - 0.02)
        word = audio(det.onset, max(det.end, det.onset + 0.2))
        if before is None or word is None or len(before) == 0 or len(word) == 0:
            return True  # audio no longer held: do not block on missing evidence

        def rms(x: Any) -> float:
            return float(np.sqrt(np.mean(np.square(np.asarray(x, dtype=np.float64))))) + 1e-9
        removed = (self.echo(det.onset - self.lead_in - self.echo_tail, det.onset - 0.02)
                   if self.echo is not None else None)
        if removed is not None and len(removed) and 20 * np.log10(rms(removed) / rms(before)) > self.echo_db:
            # the game's own speech was there (or just before: its tail in the room), and what is left of
            # it is no player's sentence: "dealer pause" said as the announcer spoke is not refused for it
            return True
        # 20 ms frames: the loudest part of the lead-in against the word's typical level
        b = np.asarray(before, dtype=np.float64).reshape(-1)
        frame = max(1, len(b) // max(1, int(round((self.lead_in - 0.02) / 0.02))))
        loudest = max(rms(b[i:i + frame]) for i in range(0, len(b), frame))
        return 20 * np.log10(rms(word) / loudest) >= self.lead_in_db

    def feed(self, detections: Sequence[Detection]) -> list[Command]:
        out = []
        for det in detections:
            cmd = self.accept(det)
            if cmd is not None:
                out.append(cmd)
        return out
