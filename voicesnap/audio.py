"""Audio chunks on the one clock.

Every chunk carries its rate, sample width, channel count and the index of its
first frame on the input stream. That index is the game's clock: a time in
seconds anywhere in voicesnap is ``frame_index / rate`` on this stream.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .events import event


@event("audio-chunk")
@dataclass(frozen=True)
class AudioChunk:
    """Frames as int16, shape (frames, channels), starting at ``start`` on the stream."""

    rate: int
    width: int
    channels: int
    start: int  # first frame's index on the stream: the clock
    samples: np.ndarray

    @property
    def timestamp(self) -> float:
        """Start of the chunk in seconds on the audio clock."""
        return self.start / self.rate

    @property
    def frames(self) -> int:
        return int(self.samples.shape[0])

    @property
    def end(self) -> int:
        return self.start + self.frames

    def to_data(self) -> dict:
        return {
            "rate": self.rate,
            "width": self.width,
            "channels": self.channels,
            "start": self.start,
            "samples": self.samples.astype("<i2").tobytes().hex(),
        }

    @classmethod
    def from_data(cls, data: dict) -> "AudioChunk":
        raw = np.frombuffer(bytes.fromhex(data["samples"]), dtype="<i2")
        channels = int(data["channels"])
        return cls(
            rate=int(data["rate"]),
            width=int(data["width"]),
            channels=channels,
            start=int(data["start"]),
            samples=raw.reshape(-1, channels).astype(np.int16),
        )

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, AudioChunk):
            return NotImplemented
        return (self.rate, self.width, self.channels, self.start) == (
            other.rate, other.width, other.channels, other.start,
        ) and np.array_equal(self.samples, other.samples)

    __hash__ = None  # type: ignore[assignment]
