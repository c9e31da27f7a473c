"""The echo canceller's reference, kept with a recorded game so a replay hears what play heard.

``voicesnap play --record DIR`` keeps the microphone (``audio.wav``); when the
echo canceller runs it also keeps ``reference.flac``: what the speaker played,
as the canceller was given it (``echo.PlaybackReference``: placed on the input
clock, 16 kHz mono). Frame ``i`` of it is frame ``i`` of ``audio.wav`` on the
clock (at 16 kHz), so ``voicesnap replay DIR`` can feed the recorded
microphone through the same ``EchoCancelled`` path with the same reference.

Why FLAC, int16: the reference is mostly silence between announcements (a
few hundred kB for a game where the WAV would be tens of MB), and the mixer's
output is int16 anyway; only the resampling to 16 kHz leaves fractions, which
rounding changes by at most half a step (~-96 dBFS).

Why a small in-memory tail: the playback reference re-anchors after a gap in
what it pulled and may then rewrite a few ms it wrote before; frames are
written to the file only once they are ``hold`` seconds old, so such rewrites
land. A rewrite older than that (never seen) is dropped and counted.
The file appears under its name only when finished (temporary name, then
rename), like the microphone recording.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path
from typing import Callable

import numpy as np

from .errors import UserError
from .text import counted
from .files import AtomicSoundFile

__all__ = ["REFERENCE_NAME", "RATE", "ReferenceRecorder", "load_reference", "reference_name"]

REFERENCE_NAME = "reference.flac"
RATE = 16000  # voicesnap.echo.RATE (not imported: this module stays free of the canceller)


def reference_name(audio: str) -> str:
    """The echo reference kept beside the microphone recording ``audio``: reference.flac beside
    audio.wav, reference-resumed-N.flac beside a resumed stretch's audio-resumed-N.wav."""
    return audio.replace("audio", "reference", 1).replace(".wav", ".flac")


class ReferenceRecorder:
    """Writes reference samples (int16 scale, ``RATE``, input-clock frames) to a FLAC file.

    ``write(start, samples)`` may leave gaps (silence) and may rewrite the last
    ``hold`` seconds. ``origin`` gives the clock frame (at ``RATE``) of the
    microphone recording's first frame once it is known (None before): file
    frame 0 is that frame. Called on the spotter's thread (the reference is
    pulled there), never in an audio callback.
    """

    def __init__(self, path: str | os.PathLike[str], origin: Callable[[], int | None] | int = 0,
                 hold: float = 2.0) -> None:
        self.path = Path(path)
        self._origin = origin
        self.hold = int(hold * RATE)
        self._file: AtomicSoundFile | None = None
        self._flushed = 0  # file frames written so far
        self._tail = np.zeros(0, np.float32)  # file frames [_flushed, _flushed + len) not yet written
        self.dropped = 0  # frames that came too late to be written (rewrites older than ``hold``)
        self.frames = 0  # file frames in the finished file
        self._lock = threading.Lock()  # write (spotter thread) against close (main thread at the end)
        self._closed = False

    def origin(self) -> int | None:
        return self._origin() if callable(self._origin) else self._origin

    def write(self, start: int, samples: np.ndarray) -> None:
        with self._lock:
            if not self._closed:
                self._write(start, samples)

    def _write(self, start: int, samples: np.ndarray) -> None:
        origin = self.origin()
        if origin is None:
            return  # nothing recorded from the microphone yet: nothing to line up with
        x = np.asarray(samples, dtype=np.float32).reshape(-1)
        at = start - origin
        if at < 0:  # before the microphone recording began
            x, at = x[-at:], 0
        if at < self._flushed:
            late = min(len(x), self._flushed - at)
            self.dropped += late
            x, at = x[late:], at + late
        if not len(x):
            return
        end = at + len(x) - self._flushed
        if end > len(self._tail):
            self._tail = np.concatenate([self._tail, np.zeros(end - len(self._tail), np.float32)])
        self._tail[at - self._flushed: end] = x
        if len(self._tail) > 2 * self.hold:
            self._flush(len(self._tail) - self.hold)

    def _flush(self, frames: int) -> None:
        if self._file is None:
            self._file = AtomicSoundFile(self.path, RATE, 1, "FLAC")
        block = np.clip(np.round(self._tail[:frames]), -32768, 32767).astype(np.int16)
        self._file.write(block)
        self._flushed += frames
        self._tail = self._tail[frames:]

    def close(self, until: int | None = None) -> Path | None:
        """Finish the file (padded with silence or cut to ``until`` file frames: the microphone
        recording's length at ``RATE``) and move it into place; None if nothing was recorded."""
        with self._lock:
            self._closed = True
            return self._close(until)

    def _close(self, until: int | None) -> Path | None:
        if until is not None and until > self._flushed + len(self._tail):
            self._tail = np.concatenate([self._tail, np.zeros(until - self._flushed - len(self._tail), np.float32)])
        elif until is not None:  # the speaker was fed ahead of the microphone: keep what it heard
            self._tail = self._tail[: max(0, until - self._flushed)]
        if self._file is None and not len(self._tail):
            return None
        self._flush(len(self._tail))
        assert self._file is not None
        path, self._file = self._file.finish(), None
        self.frames = self._flushed
        return path

    def discard(self) -> None:
        self._closed = True
        if self._file is not None:
            self._file.discard()
            self._file = None


def load_reference(path: str | os.PathLike[str]) -> np.ndarray:
    """A recorded reference as float32 samples (int16 scale) at ``RATE``; a damaged or foreign
    file is a UserError that says what to do."""
    import soundfile as sf

    try:
        data, rate = sf.read(str(path), dtype="int16", always_2d=True)
    except (RuntimeError, sf.LibsndfileError) as exc:
        raise UserError(f"{path} cannot be read ({exc}); delete it to replay without echo cancellation") from exc
    if rate != RATE or data.shape[1] != 1:
        raise UserError(f"{path} is {rate} Hz with {counted(data.shape[1], 'channel')}, not the 16 kHz mono reference "
                        "voicesnap play records; delete it to replay without echo cancellation")
    return data[:, 0].astype(np.float32)
