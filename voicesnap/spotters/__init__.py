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


class Spotter(Protocol):
    """What every engine offers: feed chunks in clock order, collect detections.

    ``accept`` must be cheap enough to keep up with real time; it returns the
    detections that became certain with this chunk (possibly for earlier
    audio: onsets are on the clock, not "now"). ``flush`` ends the stream.
    """

    name: str

    def accept(self, chunk: AudioChunk) -> list[Detection]: ...

    def flush(self) -> list[Detection]: ...
