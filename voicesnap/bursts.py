"""Speech bursts on each input channel, and when a ruling need wait for no rival.

Why: the referee rules the first call at ``onset + decision_window`` and a
rival ties only if its onset is within ``tie_window`` of the first. A rival
that could tie has therefore *started speaking* long before the first call's
word ended. The shell watches the signal for those starts (``BurstTracker``:
a cheap energy onset tracker on the one clock, in the spotter thread) and the
pure game loop asks ``RivalWatch`` how far every possible call is already in:
a burst of speech is *resolved* once its own call has arrived, or once it has
ended and the spotter has had its latency to report one. The referee may then
be advanced up to ``settled - tie_window + decision_window`` instead of
waiting a fixed worst-case lag (which stays the floor: ``table.voice_lags``).

Both are deterministic functions of the audio (and of the detections), so a
replay of the same recording settles the same way.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Iterable

import numpy as np

from .audio import AudioChunk
from .events import event

__all__ = ["SpeechBurst", "BurstTracker", "RivalWatch"]


@event("speech-burst")
@dataclass(frozen=True)
class SpeechBurst:
    """Speech started at ``onset`` on input ``channel``; ``end`` (and ``peak``) once it stops.

    Sent twice: when it starts (``end`` None) and when it has stopped.
    """

    channel: int
    onset: float
    end: float | None = None
    peak: float | None = None  # loudest 10 ms frame, dB (with ``end``): tells crosstalk from a voice


class _Channel:
    """One channel's energy state: an adaptive noise floor and an open burst."""

    def __init__(self) -> None:
        self.floor: np.ndarray | None = None  # dB, plain and pre-emphasised
        self.above = 0  # consecutive frames above the start threshold
        self.first_above = 0.0
        self.onset: float | None = None  # the open burst
        self.peak = 0.0  # its loudest frame so far (dB)
        self.last_loud = 0.0  # end of the last frame above the stay threshold
        self.prev = 0.0  # last sample of the previous chunk (pre-emphasis continuity)


class BurstTracker:
    """Energy onsets and ends of speech, per channel, on 10 ms frames of the input clock.

    Each frame is measured twice, plain and pre-emphasised (first difference),
    each against its own floor: the "s" of "snap" is faint in the full band
    but plain above a few kHz, so the burst starts with the word, not its
    vowel, also in low-frequency noise. A burst starts when either band stays
    ``START_DB`` over its floor for ``CONFIRM`` frames (its onset is the first
    of them) and ends after ``HANGOVER`` s with both under ``STAY_DB`` (its
    end is the last loud frame). Floors follow quiet frames down at once and
    creep up slowly, so steady noise becomes floor while a word cannot.

    ``channels``: the channel indices to watch (per-player microphones), or
    None for every channel of the input. Each is watched on its own, never
    mixed: a burst is resolved only by a call heard on its own channel, so a
    rival on another microphone can never hide inside someone else's burst
    (an engine that listens to a mix and reports channel 0 makes the other
    channels wait for their bursts to end: slower, never wrong).
    """

    FRAME = 0.01  # s
    START_DB = 12.0
    STAY_DB = 8.0
    CONFIRM = 3  # frames
    HANGOVER = 0.12  # s: longer than the gap inside "snap pool" (<= 71 ms in the corpus)
    RISE_PER_S = 3.0  # dB/s the floor may creep up while the level stays above it
    MIN_DB = 20.0  # level (dB re 1 LSB^2) below which nothing is speech (digital near-silence)

    def __init__(self, channels: Iterable[int] | None = None) -> None:
        self.channels = tuple(channels) if channels is not None else None
        self._state: dict[int, _Channel] = {}
        self._pending: dict[int, np.ndarray] = {}
        self._pending_start: dict[int, int] = {}

    def accept(self, chunk: AudioChunk) -> list[SpeechBurst]:
        """The bursts that started or ended in this chunk (cheap: a few numpy ops per chunk)."""
        x = chunk.samples.astype(np.float64)
        if x.ndim == 1:
            x = x[:, None]
        out: list[SpeechBurst] = []
        for ch in self.channels if self.channels is not None else range(x.shape[1]):
            if ch < x.shape[1]:
                out += self._channel(ch, x[:, ch], chunk.start, chunk.rate)
        return out

    def flush(self) -> list[SpeechBurst]:
        """End every open burst (end of the audio)."""
        out = []
        for ch, st in self._state.items():
            if st.onset is not None:
                out.append(SpeechBurst(ch, st.onset, max(st.last_loud, st.onset), round(st.peak, 1)))
                st.onset = None
        return out

    def _channel(self, ch: int, x: np.ndarray, start: int, rate: int) -> list[SpeechBurst]:
        st = self._state.setdefault(ch, _Channel())
        hop = max(1, int(round(self.FRAME * rate)))
        held = self._pending.get(ch)
        if held is not None and len(held):
            x = np.concatenate([held, x])
            start = self._pending_start[ch]
        n = (len(x) // hop) * hop
        self._pending[ch] = x[n:].copy()
        self._pending_start[ch] = start + n
        if n == 0:
            return []
        frames = x[:n].reshape(-1, hop)
        emph = np.diff(x[:n], prepend=st.prev).reshape(-1, hop)
        st.prev = float(x[n - 1])
        # Two bands, each against its own floor: in low-frequency noise (pink, hum) the plain
        # level hides a word's "s" that the pre-emphasised one shows at once.
        levels = 10 * np.log10(np.stack([(frames ** 2).mean(axis=1), (emph ** 2).mean(axis=1)], axis=1) + 1.0)
        out: list[SpeechBurst] = []
        for i in range(len(levels)):
            lv = levels[i]
            db = float(lv.max())
            t0 = (start + i * hop) / rate
            t1 = t0 + hop / rate
            if st.floor is None:
                st.floor = lv.copy()
            rise = float((lv - st.floor).max()) if db >= self.MIN_DB else 0.0
            loud = rise >= self.STAY_DB
            if st.onset is not None:
                st.peak = max(st.peak, db)
                if loud:
                    st.last_loud = t1
                elif t1 - st.last_loud >= self.HANGOVER:
                    out.append(SpeechBurst(ch, st.onset, st.last_loud, round(st.peak, 1)))
                    st.onset = None
                    st.above = 0
            else:
                if rise >= self.START_DB:
                    if st.above == 0:
                        st.first_above = t0
                    st.above += 1
                    if st.above >= self.CONFIRM:
                        st.onset, st.last_loud, st.peak = st.first_above, t1, db
                        out.append(SpeechBurst(ch, st.onset))
                else:
                    st.above = 0
            # The floors: down at once, up slowly (steady noise joins them; a word is too short to).
            st.floor = np.where(lv < st.floor, lv, st.floor + np.minimum(lv - st.floor, self.RISE_PER_S * self.FRAME))
        return out


class RivalWatch:
    """How far the calls are all in: the pure half, fed by the game loop.

    ``settled(now)`` is a time S such that every call whose onset is before S
    has reached the table (or never will: its burst ended and the spotter had
    ``latency()`` seconds to report it). None when nothing is known (no
    tracker): the caller falls back to its worst-case lag.

    A burst is resolved by a detection on its channel whose onset lies inside
    it (the burst's own call): up to that word's end. Two players overlapping
    on one microphone make one burst; the engine that tells them apart (the
    enrolled/combined engine) reports both calls together, so the first call
    of the burst stands for it. Whatever of a burst goes on after its call is
    unresolved until it ends and ``latency()`` has passed.

    Crosstalk: with a microphone per player, one player's call also reaches the
    others' microphones, fainter. A burst that starts with a call's burst on
    another channel, ends with it, and peaked ``BLEED_DB`` or more below it is
    that call heard again, and resolved with it. A rival speaking into that
    microphone is loud on it, so its burst is not taken for crosstalk.

    When the tracker cannot tell: a call that arrives with no burst of its own
    (speech too faint or too noisy for the tracker, though the spotter heard a
    call in it) means a rival could be missed the same way, so for ``BLIND``
    seconds after it ``settled`` says nothing and the table falls back to its
    worst-case lag.
    """

    MARGIN = 0.2  # s: a spotter's onset may precede the tracker's (its rise is fainter; 5 dB pink noise: ~0.19 s)
    DELAY = 0.25  # s: speech this recent may not have been seen to start yet
    SAME_BURST = 0.15  # s: a burst ending this soon after its call's word ended is that word
    KEEP = 10.0  # s of history kept
    BLEED_DB = 10.0  # a burst this much fainter than a simultaneous call's burst is that call's crosstalk
    BLEED_ONSET = 0.1  # s: crosstalk starts this close to the burst it echoes (a few metres of air)
    BLIND = 10.0  # s of fallback after a call that no burst accounts for
    # A call the spotter has begun to hear (spotters.undecided_from) holds the line at its onset for at
    # most this long: in noise the tracker can miss a burst that Vosk still decodes as "snap" (corpus,
    # combined engine, one mic: 7 calls reached the table after their onset was settled; 2 with the hold,
    # and the time a call waits to be ruled unchanged, 128 ms median after the word)
    UNDECIDED_HOLD = 3.0

    def __init__(self, latency: float | Callable[[], float], tie_window: float = 0.1,
                 decision_window: float = 0.5) -> None:
        self._latency = latency
        self.tie_window = tie_window
        self.decision_window = decision_window
        self._bursts: dict[tuple[int | None, float], tuple[float | None, float | None]] = {}  # -> (end, peak)
        self._calls: list[tuple[int, float, float]] = []  # (channel, onset, end) of detections
        self.tracking = False
        self.blind_until = float("-inf")  # a call came with no burst: the tracker is missing speech
        self.undecided: float | None = None  # onset of a call the spotter has begun to hear, not reported

    def latency(self) -> float:
        return self._latency() if callable(self._latency) else self._latency

    def heard(self, bursts: Iterable[SpeechBurst] = (), calls: Iterable[object] = (),
              undecided: float | None = None) -> None:
        """Take the bursts and calls that arrived, and the spotter's ``undecided`` now (None: nothing)."""
        self.undecided = undecided
        for b in bursts:
            self.tracking = True
            self._bursts[(b.channel, b.onset)] = (b.end, b.peak)
        for d in calls:
            ch, onset, end = int(getattr(d, "channel", 0)), float(getattr(d, "onset")), float(getattr(d, "end"))
            self._calls.append((ch, onset, end))
            if self.tracking and not any(c == ch and o - self.MARGIN <= onset and (e is None or onset <= e + 0.05)
                                         for (c, o), (e, _) in self._bursts.items()):
                self.blind_until = max(self.blind_until, end + self.BLIND)

    def _covered(self, channel: int | None, onset: float, end: float | None) -> float | None:
        """End of the latest call heard inside this burst (or that this burst is part of, like
        the "pool" of a "snap pool" said with a pause), or None."""
        best = None
        for ch, a, b in self._calls:
            if channel is not None and ch != channel:
                continue
            starts_inside = onset - self.MARGIN <= a and (end is None or a <= end + 0.05)
            part_of_it = a - self.MARGIN <= onset <= b
            if starts_inside or part_of_it:
                best = b if best is None else max(best, b)
        return best

    def _crosstalk(self, channel: int | None, onset: float, end: float | None, peak: float | None) -> bool:
        """Is this ended burst another microphone's call heard faintly here?"""
        if channel is None or end is None or peak is None:
            return False
        for (ch, a), (b, p) in self._bursts.items():
            if ch is None or ch == channel or b is None or p is None or abs(a - onset) > self.BLEED_ONSET:
                continue
            covered = self._covered(ch, a, b)
            if covered is not None and p - peak >= self.BLEED_DB and end <= max(b, covered) + self.SAME_BURST:
                return True
        return False

    def horizon(self, now: float) -> float | None:
        """How far the referee may be advanced: the calls it would rule have every rival in."""
        settled = self.settled(now)
        if settled is None:
            return None
        return min(now, settled - self.tie_window + self.decision_window)

    def settled(self, now: float) -> float | None:
        if not self.tracking or now < self.blind_until:
            return None
        settled = now - self.DELAY
        if self.undecided is not None and self.undecided >= now - self.UNDECIDED_HOLD:
            settled = min(settled, self.undecided - self.MARGIN)
        latency = self.latency()
        for (ch, onset), (end, peak) in list(self._bursts.items()):
            if end is not None and end < now - self.KEEP:
                del self._bursts[(ch, onset)]
                continue
            covered = self._covered(ch, onset, end)
            if covered is not None:
                if end is not None and end <= covered + self.SAME_BURST:
                    continue  # the burst was its call
                open_from = covered  # talk goes on after the call
            elif self._crosstalk(ch, onset, end, peak):
                continue
            else:
                open_from = onset - self.MARGIN
            if end is not None and now >= end + latency:
                continue  # ended, and the spotter had its time to report a call from it
            settled = min(settled, open_from)
        self._calls = [c for c in self._calls if c[2] >= now - self.KEEP]
        return settled
