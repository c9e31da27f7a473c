"""Keyword spotters: from audio chunks to detected calls and commands.

Two engines share one output record: the Vosk grammar spotter (needs a model)
and the enrolled-template spotter (needs only the players' own enrollment).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from ..audio import AudioChunk

from ..events import event


@event("detection")
@dataclass(frozen=True)
class Detection:
    """A call or command heard on the audio clock.

    ``onset`` and ``end`` are seconds on the input stream's clock; ties are
    judged on ``onset``. ``player`` is the attributed player, or None when the
    voice matches nobody enrolled (a bystander, the announcer).
    """

    word: str  # "snap", "snap pool", "slap", or "dealer <command>", or an enrolled call word
    onset: float
    end: float
    confidence: float
    channel: int = 0
    player: str | None = None
    score: float | None = None  # attribution score for ``player``
    engine: str = ""  # "vosk", "enrolled", "combined", ...
    detected_at: float | None = None  # clock position when the engine emitted it (latency)


@event("refusal")
@dataclass(frozen=True)
class Refusal:
    """A sound that fit a call but was judged another word (or the game's own speech), and why.

    Nothing is played on it; it is kept so that "why was my call not heard?"
    has an answer (``voicesnap listen`` prints it, a game's log keeps it).
    Times are seconds on the input stream's clock, as in ``Detection``.
    """

    word: str  # the call it resembled
    onset: float
    end: float
    player: str  # whose call it resembled ("" when nobody's: the game's own speech)
    reason: str
    channel: int = 0
    engine: str = ""
    # or "the game's own speech" (voicesnap.echo); "" for a word one judge heard and the other doubted
    taken_for: str = "another word"

    def explain(self) -> str:
        from ..vocabulary import COMMAND_PREFIX

        like = f"{self.player}'s '{self.word}'" if self.player else f"'{self.word}'"
        what = "a command" if self.word.startswith(COMMAND_PREFIX + " ") else "a call"
        verdict = f"was taken for {self.taken_for}" if self.taken_for else f"was not taken for {what}"
        return f"a sound at {self.onset:.2f}-{self.end:.2f} s like {like} {verdict}: {self.reason}"


def take_refusals(spotter: object) -> list[Refusal]:
    """The refusals ``spotter`` made since last asked (engines that judge no near misses have none)."""
    take = getattr(spotter, "take_refusals", None)
    return list(take()) if callable(take) else []


def undecided_from(spotter: object) -> float | None:
    """The earliest onset (s) of a call ``spotter`` has begun to hear but not yet reported, or None.

    The table's RivalWatch holds its "every call before here is in" line at it:
    a call still being decided (Vosk's partial text already says "snap"; a call
    waiting to be rescued) must not be ruled out by a later caller's quicker one.
    """
    get = getattr(spotter, "undecided", None)
    return get() if callable(get) else None


def command_begun_from(spotter: object) -> float | None:
    """The earliest onset (s) of a "dealer ..." command ``spotter`` has begun to hear, or None.

    The table holds the next card for it, so "dealer pause" said just before a
    card is due stops that card (the command is decided only once its last word
    is over). Only Vosk hears commands; wrappers without their own method are
    looked through (``inner``, ``vosk``, ``spotter``: play's pool and echo
    wrappers; one spotter per microphone).
    """
    own = getattr(spotter, "command_begun", None)
    if callable(own):
        return own()
    parts = [getattr(spotter, name, None) for name in ("inner", "vosk", "spotter")]
    per = getattr(spotter, "spotters", None)
    parts += list(per.values()) if isinstance(per, dict) else []
    times = [t for p in parts if p is not None and (t := command_begun_from(p)) is not None]
    return min(times, default=None)


class Spotter(Protocol):
    """What every engine offers: feed chunks in clock order, collect detections.

    ``accept`` must be cheap enough to keep up with real time; it returns the
    detections that became certain with this chunk (possibly for earlier
    audio: onsets are on the clock, not "now"). ``flush`` ends the stream.
    """

    name: str

    def accept(self, chunk: AudioChunk) -> list[Detection]: ...

    def flush(self) -> list[Detection]: ...
