"""A speech gate in front of a recogniser: it hears only the stretches around speech.

Why: Vosk costs about the same CPU on every frame, speech or not (~6% of a core
per channel on this machine), so a table with one microphone per player
spends most of its idle time decoding room tone. A per-channel energy tracker
costs a few microseconds a chunk; the recogniser runs only from a pre-roll
before a rise in energy until a hangover after the last one.

* The tracker (``EnergyTracker``) follows an adaptive noise floor in two bands
  (the signal and its first difference, a cheap high-pass where the "s" of
  "snap" lives) over 10 ms frames: the floor falls fast and rises slowly, so
  speech over it stands out and steady noise at any level does not. Speech is
  2 frames in a row with a band over its floor by its margin (and over an
  absolute minimum, so a stream of near-zeros never opens the gate). The
  margins come from the corpus: room tone's low band swings +-5 dB from frame
  to frame (a 6 dB margin kept the gate open all the time), its high band
  +-1 dB; 15 dB (full) / 9 dB (high) kept the gate shut through 60 s of room
  tone and opened it at most 60 ms after the onset of every call in the
  corpus (none missed), well inside the pre-roll.
* ``SpeechGate`` keeps the last ``preroll`` seconds of chunks in a ring. On
  speech it feeds the inner spotter the ring (what it has not heard yet),
  then every chunk, until ``hangover`` seconds pass with no speech; then the
  inner spotter hears nothing until the next speech.
* One inner spotter for the whole stream, on a *spliced* clock: it is handed
  the chunks it hears as if they were contiguous (VoskSpotter assumes audio
  without gaps from its first chunk), and the gate maps every time in its
  detections (onset, end, detected_at) back to the stream's own clock through
  the list of splices, so every onset stays exact on the one clock
  (``detected_at`` is when the gate emitted it: the current chunk's end). Why not a
  fresh recogniser per burst (cheap: 1-5 ms with the model shared)? Vosk
  adapts to the speaker and level as it hears speech (online CMVN and
  i-vectors): on the quiet fixture a fresh recogniser that had heard only
  room tone before a -48 dBFS call missed it (started 1.3 s or more before
  the call, it heard none of the next two), while the continuous one heard
  both; a spliced recogniser keeps that adaptation and hears only speech.

Opening too often costs only CPU; opening too late would cost calls, hence
the sensitive margin and the pre-roll (the onset refiner needs ~0.33 s of
room tone before a word to find its floor).
"""

from __future__ import annotations

import bisect
from collections import deque
from dataclasses import replace
from typing import Any, Callable, overload

import numpy as np

from ..audio import AudioChunk
from . import Detection, Spotter

__all__ = ["EnergyTracker", "SpeechGate"]


class EnergyTracker:
    """Is there speech-like energy in this chunk? Adaptive floor, 10 ms frames, two bands."""

    def __init__(
        self,
        *,
        frame_s: float = 0.01,
        margin_db: tuple[float, float] = (15.0, 9.0),
        hold: int = 2,
        rise_db_per_s: float = 3.0,
        fall: float = 0.5,
        min_db: float = 20.0,
    ) -> None:
        self.frame_s = frame_s
        self.margin_db = np.asarray(margin_db, dtype=np.float64)  # (full band, high band)
        self.hold = hold  # active frames in a row that count as speech
        self._run = 0
        self.rise_db_per_s = rise_db_per_s
        self.fall = fall  # fraction of the way the floor moves down to a quieter frame
        self.min_db = min_db  # dB re 1 LSB^2 (20 dB: RMS 10 LSB, -70 dBFS): never speech below it
        self.floor: np.ndarray | None = None  # per band, dB
        self._rest = np.zeros(0, dtype=np.float64)
        self._prev = 0.0  # last sample of the previous chunk (first difference across chunks)
        self._frame = 0

    def update(self, samples: np.ndarray, rate: int) -> int:
        """Feed mono samples; returns how many samples from the chunk's end the last active frame ended
        (0: the chunk ends active), or -1 when no frame in it was active."""
        frame = max(1, int(round(self.frame_s * rate)))
        if frame != self._frame:
            self._frame, self._rest = frame, np.zeros(0, dtype=np.float64)
        x = samples.astype(np.float64).ravel()
        diff = np.diff(x, prepend=self._prev)
        if len(x):
            self._prev = float(x[-1])
        held = len(self._rest) // 2
        full = np.concatenate([self._rest[:held], x])
        high = np.concatenate([self._rest[held:], diff])
        n = len(full) // frame
        tail = len(full) - n * frame
        self._rest = np.concatenate([full[n * frame :], high[n * frame :]])
        if n == 0:
            return -1
        bands = np.stack([full[: n * frame].reshape(n, frame), high[: n * frame].reshape(n, frame)])
        energy = 10.0 * np.log10(np.mean(bands * bands, axis=2) + 1.0)  # (2, n) dB
        rise = self.rise_db_per_s * self.frame_s
        floor = self.floor if self.floor is not None else energy[:, 0].copy()
        last = -1
        for i in range(n):
            e = energy[:, i]
            if np.any((e > floor + self.margin_db) & (e > self.min_db)):
                self._run += 1
                if self._run >= self.hold:
                    last = i
            else:
                self._run = 0
            floor = np.where(e < floor, floor + (e - floor) * self.fall, np.minimum(floor + rise, e))
        self.floor = floor
        if last < 0:
            return -1
        return (n - 1 - last) * frame + tail


class SpeechGate:
    """Feeds ``inner`` only around speech on ``channel``, on a spliced clock (see module doc).

    ``inner`` is a spotter (or a factory of one, called once, on the first
    speech). ``channel`` is the input channel whose energy opens the gate (None:
    the mix of all); the inner spotter picks its own channel from the original
    chunks. ``stats()`` says how much of the audio the recogniser heard.
    """

    def __init__(
        self,
        inner: Spotter | Callable[[], Spotter],
        *,
        channel: int | None = 0,
        preroll: float = 0.5,
        hangover: float = 1.0,
        tracker: EnergyTracker | None = None,
        name: str | None = None,
    ) -> None:
        self._make = inner if not hasattr(inner, "accept") else None
        self.inner: Any = inner if self._make is None else None
        self.channel = channel
        self.preroll = preroll
        self.hangover = hangover
        self.tracker = tracker or EnergyTracker()
        self.name = name or f"{getattr(self.inner, 'name', 'spotter')}-gated"
        self.open = False
        self._ring: deque[AudioChunk] = deque()
        self._ring_frames = 0
        self._quiet_frames = 0  # frames since the last speech frame (on the clock)
        self._fed_end: int | None = None  # stream frame one past the last frame the inner spotter heard
        self._inner_end = 0  # the same on the inner spotter's spliced clock
        self._splices_inner: list[int] = []  # inner frame where each stretch starts ...
        self._splices_real: list[int] = []  # ... and where that is on the stream
        self._rate: int | None = None
        self._pool: Any = None
        self.bursts = 0
        self.frames_total = 0
        self.frames_fed = 0
        self._now = 0.0  # seconds: the stream's end so far

    # ------------------------------------------------------------------ Spotter

    def accept(self, chunk: AudioChunk) -> list[Detection]:
        # Emitted now, whatever stretch of audio the inner spotter was working on (the pre-roll is
        # older audio fed late): ``detected_at`` is this chunk's end on the stream's clock.
        now = chunk.end / chunk.rate
        self._now = now
        return [replace(d, detected_at=now) for d in self._accept(chunk)]

    def _accept(self, chunk: AudioChunk) -> list[Detection]:
        self.frames_total += chunk.frames
        self._rate = chunk.rate
        self._remember(chunk)
        samples = chunk.samples
        if samples.ndim == 2 and samples.shape[1] > 1:
            mono = samples[:, self.channel] if self.channel is not None else samples.mean(axis=1)
        else:
            mono = samples.ravel()
        since = self.tracker.update(mono, chunk.rate)
        self._quiet_frames = since if since >= 0 else self._quiet_frames + chunk.frames
        found: list[Detection] = []
        if not self.open:
            if since < 0:
                return found
            self.open = True
            self.bursts += 1
            for held in self._ring:  # the pre-roll, ending with this chunk
                found += self._feed(held)
            return found
        found += self._feed(chunk)
        if self._quiet_frames >= self.hangover * chunk.rate:
            self.open = False
        return found

    def flush(self) -> list[Detection]:
        if self.inner is None:
            return []
        end = self._fed_end / self._rate if self._fed_end is not None and self._rate else None
        return [replace(d, detected_at=end if end is not None else d.detected_at)
                for d in map(self._to_stream, self.inner.flush())]

    def set_pool_exists(self, value: Any) -> None:
        self._pool = value
        setter = getattr(self.inner, "set_pool_exists", None)
        if callable(setter):
            setter(value)

    @property
    def final_until(self) -> float:
        """The inner spotter's ``final_until`` on the stream's clock (CombinedSpotter's rescue).

        Audio the gate did not feed is final already: nothing was heard there.
        """
        inner = getattr(self.inner, "final_until", None)
        if inner is None or self._rate is None or inner * self._rate >= self._inner_end:
            return self._now
        return float(self._time(inner))

    def undecided(self) -> float | None:
        """The inner spotter's ``undecided`` on the stream's clock."""
        from . import undecided_from

        return self._time(undecided_from(self.inner)) if self.inner is not None else None

    def command_begun(self) -> float | None:
        """The inner spotter's ``command_begun`` on the stream's clock."""
        from . import command_begun_from

        return self._time(command_begun_from(self.inner)) if self.inner is not None else None

    @property
    def pending(self) -> list[str] | None:
        """The inner spotter's ``pending`` words (no times: the utterance in progress); None if it cannot say."""
        if self.inner is None:
            return []
        got = getattr(self.inner, "pending", None)
        return list(got) if got is not None else None

    def heard(self, a: float, b: float) -> list[tuple[str, float, float]] | None:
        """The inner spotter's ``heard`` (its final words) with times on the stream's clock;
        None when the inner spotter cannot say (then nobody may read silence into it)."""
        if self.inner is None:
            return []  # nothing was loud enough to be fed: nothing was heard
        if not callable(getattr(self.inner, "heard", None)):
            return None
        words = [(w, self._time(s), self._time(e)) for w, s, e in self.inner.heard(float("-inf"), float("inf"))]
        return [(w, s, e) for w, s, e in words if e > a and s < b]

    def energy_onset(self, approx: float, latest: float) -> float | None:
        """The inner spotter's ``energy_onset`` with stream times; None where it cannot say (audio the
        gate did not feed, or an inner spotter without one)."""
        find = getattr(self.inner, "energy_onset", None)
        a, b = self._inner_time(approx), self._inner_time(latest)
        if not callable(find) or a is None or b is None:
            return None
        got = find(a, b)
        return None if got is None else self._time(got)

    def stats(self) -> dict[str, float]:
        """Stretches of speech heard and the share of the audio the inner recogniser heard."""
        share = self.frames_fed / self.frames_total if self.frames_total else 0.0
        return {"bursts": self.bursts, "frames": self.frames_total, "fed": self.frames_fed, "share": share}

    # ---------------------------------------------------------------- internals

    def _remember(self, chunk: AudioChunk) -> None:
        self._ring.append(chunk)
        self._ring_frames += chunk.frames
        keep = int(self.preroll * chunk.rate)
        while self._ring and self._ring_frames - self._ring[0].frames >= keep:
            self._ring_frames -= self._ring.popleft().frames

    def _feed(self, chunk: AudioChunk) -> list[Detection]:
        if self._fed_end is not None and chunk.end <= self._fed_end:
            return []  # heard already (the end of the last stretch's hangover)
        if self._fed_end is not None and chunk.start < self._fed_end:  # partly heard: the new part only
            chunk = chunk.between(self._fed_end, chunk.end)
        if self.inner is None:
            assert self._make is not None
            self.inner = self._make()
            if self._pool is not None:
                self.set_pool_exists(self._pool)
        if chunk.start != self._fed_end:  # a new stretch: splice it on after the last one
            self._splices_inner.append(self._inner_end)
            self._splices_real.append(chunk.start)
            if len(self._splices_inner) > 256:  # detections never reach that far back
                del self._splices_inner[:128], self._splices_real[:128]
        spliced = replace(chunk, start=self._inner_end)
        self._inner_end += chunk.frames
        self._fed_end = chunk.end
        self.frames_fed += chunk.frames
        return [self._to_stream(d) for d in self.inner.accept(spliced)]

    @overload
    def _time(self, t: float) -> float: ...
    @overload
    def _time(self, t: None) -> None: ...
    def _time(self, t: float | None) -> float | None:
        """A time on the inner spotter's spliced clock, on the stream's clock."""
        if t is None or not self._splices_inner or self._rate is None:
            return t
        frame = t * self._rate
        i = max(0, bisect.bisect_right(self._splices_inner, frame) - 1)
        return (self._splices_real[i] + (frame - self._splices_inner[i])) / self._rate

    def _inner_time(self, t: float) -> float | None:
        """A time on the stream's clock, on the inner spotter's spliced clock; None if not fed."""
        if not self._splices_real or self._rate is None:
            return None
        frame = t * self._rate
        i = bisect.bisect_right(self._splices_real, frame) - 1
        if i < 0:
            return None
        inner = self._splices_inner[i] + (frame - self._splices_real[i])
        limit = self._splices_inner[i + 1] if i + 1 < len(self._splices_inner) else self._inner_end
        return inner / self._rate if inner < limit else None

    def _to_stream(self, det: Detection) -> Detection:
        return replace(det, onset=self._time(det.onset), end=self._time(det.end))
