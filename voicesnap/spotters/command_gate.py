"""The command gate on what a game's spotter hears: "dealer ..." must start an utterance, and is said once.

Why here: ``commands.CommandGate`` needs the audio around a command ("who is the dealer now"
was heard as "dealer help": its lead-in is the rest of the sentence), and only the spotter's side
of the game holds audio; the table acts on whatever command phrase reaches it. ``CommandGated``
wraps a game's spotter (``cli.play.build_spotter``: play, replay and listen alike), keeps the
last few seconds of what the spotter heard (behind the echo canceller: the cancelled signal, and
what was removed from it), and passes calls through untouched.
"""

from __future__ import annotations

import collections
from typing import Any

import numpy as np

from ..audio import AudioChunk
from ..commands import CommandGate
from . import Detection, Refusal, take_refusals

KEEP_SECONDS = 6.0  # audio held: a command is reported at most ~3 s after it began (Vosk's command pass)

_WHY = {  # CommandGate's reasons, in words for listen and the game's log
    "mid-sentence": "it came in the middle of talk, not after a pause (the quarter second before 'dealer' must be "
                    "10 dB quieter than the command)",
    "repeat": "the same command was heard less than a second before (one command, heard twice)",
    "low confidence": "the recogniser was not sure of it",
    "echo": "the game's own speech was playing",
}


class CommandGated:
    """Any Spotter whose command detections pass ``commands.CommandGate`` (layers 4 and 5) first.

    A refused command is a ``Refusal`` (``take_refusals``: ``voicesnap listen`` prints it, a game's
    log keeps it). Everything else the inner spotter offers is its own (``__getattr__``).
    """

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.name = getattr(inner, "name", "spotter")
        self.gate = CommandGate()
        self._held: collections.deque[AudioChunk] = collections.deque()
        self._refused: list[Refusal] = []

    def __getattr__(self, name: str) -> Any:  # set_pool_exists, spotters, undecided, ...: the inner spotter's
        if name == "inner":
            raise AttributeError(name)
        return getattr(self.inner, name)

    def accept(self, chunk: AudioChunk) -> list[Detection]:
        self._held.append(chunk)
        while self._held and self._held[0].end < chunk.end - KEEP_SECONDS * chunk.rate:
            self._held.popleft()
        return self._gated(self.inner.accept(chunk))

    def flush(self) -> list[Detection]:
        return self._gated(self.inner.flush())

    def take_refusals(self) -> list[Refusal]:
        out, self._refused = take_refusals(self.inner) + self._refused, []
        return out

    def _gated(self, detections: list[Detection]) -> list[Detection]:
        if not detections:
            return detections
        kept = []
        for det in detections:
            self.gate.audio = lambda a, b, c=det.channel: self._between(a, b, c, echo=False)
            self.gate.echo = lambda a, b, c=det.channel: self._between(a, b, c, echo=True)
            command, why = self.gate.judge(det)
            if command is None and why is not None:
                self._refused.append(Refusal(det.word, det.onset, det.end, det.player or "",
                                             _WHY.get(why, why), det.channel,
                                             det.engine, taken_for=""))
                continue
            kept.append(det)
        return kept

    def _between(self, start: float, end: float, channel: int, echo: bool) -> np.ndarray | None:
        """The held samples (or what the canceller removed from them) of ``channel`` between two clock
        times; None when not all of it is held, or when no canceller ran (``echo``)."""
        if not self._held:
            return None
        rate = self._held[0].rate
        first, last = int(round(start * rate)), int(round(end * rate))
        if first < self._held[0].start or last <= first:
            return None
        parts = []
        for chunk in self._held:
            if chunk.end <= first or chunk.start >= last:
                continue
            cut = chunk.between(first, last)
            data = cut.echo if echo else cut.samples
            if data is None:
                return None
            parts.append(data[:, min(channel, data.shape[1] - 1)] if data.ndim == 2 else data)
        return np.concatenate(parts) if parts else None
