"""The slam spotter: hears a hand slammed on the table (Silent Snap's call), with no model.

A slam is not a word, so no recogniser hears it; it is also one of the easiest sounds to find in
a stream: an impulse. What sets it apart, and what each test below reads:

* **A steep rise far above what came just before.** The crack of a palm on wood reaches its peak
  within a few ms: the 2 ms frame energy of the pre-emphasised signal (first difference: the
  broadband crack, without the room's hum and rumble) jumps ``STEP_DB`` over the frames 8-16 ms
  before it and ``ABOVE_DB`` over the channel's running noise floor (trigger), and at the
  decision its peak within 12 ms of the onset is ``RISE_DB`` over the 6-30 ms before the onset.
  Speech rarely rises like that: vowels and "s" build up over tens of ms; the bursts of
  "p", "t", "k" do, after their silent closure, and pass this test.
* **A fast decay.** Most of a slam's energy is gone within 100-150 ms (the table and the room
  ring briefly). ``DECAY_DB``: the 50-150 ms after the onset must be that far below the peak, in
  the pre-emphasised band and (``DECAY_BB_DB``) in the full band. This is what rejects the
  plosives: a vowel follows their burst within tens of ms and carries on at the burst's level
  or above. It also rejects the game's own announcements (speech) and the end of a word that a
  slam lands on (the word carries on).
* **A broadband spectrum with a low thump.** Over the first 32 ms, with the background's
  spectrum before the onset taken off: at least ``HIGH_FRAC`` of the energy above 2 kHz (the
  crack; a thud alone, a cup set down softly, is not a slam) and at least ``LOW_FRAC`` below
  300 Hz (the table's body driven by a hand: a card flicked down, a cup's clink or a *clap*
  has almost none). Claps are therefore **not** slams, by choice: a player clapping at a
  good flip must not make a call (a wrong call costs cards). Spectral flatness over
  300 Hz-6 kHz (``FLAT_MIN``) rejects tones: an earcon, a cup's ring, a whistle.

Everything was tuned on synthetic sounds (``tests/fixtures/audio/generate_slams.py``: noise-burst
slams with a 3-6 ms attack, 25-45 ms decay and a 70-140 Hz thump, claps, clatter) and on the
speech of ``tests/fixtures/audio/corpus``; no real slam was recorded. A microphone with a
steep low cut (below ~300 Hz) would take the thump away: then ``LOW_FRAC`` refuses real slams.

Cost: one vectorised pass over each chunk (2 ms frame energies) and a short Python loop over its
frames (a floor update, a comparison); the spectrum (one 32 ms FFT) only for a trigger, which
room tone and steady noise never give and speech gives a few times a second. Each instance
follows one channel (``channel``; None mixes all), so per-player microphones get one each
(``ChannelSpotters``, where the loudest mic names the slammer).

A slam is reported ``DECIDE_S`` after its onset (its decay must be heard), with ``undecided``
saying where it began meanwhile, so the table waits for it.
"""

from __future__ import annotations

from collections import deque
from typing import Any

import numpy as np

from ..audio import AudioChunk
from . import Detection, Refusal, take_refusals, undecided_from

__all__ = ["SlamSpotter", "WithSlams", "WORD", "ENGINE"]

WORD = "slam"  # Silent Snap's call (variants.SilentSnap.words)
ENGINE = "slam"

FRAME_S = 0.002  # frame length: the onset is found to within a frame, then to the sample
# Tuned on tests/fixtures/audio/slams (synthetic slams at -3 to -26 dBFS peak over room tone, chatter,
# near-miss words and the announcer) and the speech corpus (tests/fixtures/audio/corpus: no slam heard).
STEP_DB = 12.0  # trigger: a frame this far over the loudest of the frames 8-16 ms before it ...
ABOVE_DB = 20.0  # ... and this far over the channel's noise floor
RISE_DB = 12.0  # decision: peak (12 ms from the onset) over the mean of 6-30 ms before the onset
DECAY_DB = 10.0  # peak over the mean of 50-150 ms after the onset, pre-emphasised band
DECAY_BB_DB = 10.0  # the same in the full band (the thump's decay; a vowel after a "t" fails here)
HIGH_FRAC = 0.03  # of the onset's 32 ms energy (background taken off) above 2 kHz: the crack (synthetic slams 0.07-0.22)
LOW_FRAC = 0.45  # of it below 300 Hz: the table's thump (synthetic slams 0.58-0.85; consonant bursts, claps, clatter 0.42 or less)
FLAT_MIN = 0.2  # spectral flatness over 300 Hz-6 kHz: noise ~0.5, a tone or a vowel far less
RING_DB = 12.0  # a slam's full band stays within this of its peak ...
MIN_RING_S = 0.016  # ... this long (frames counted over its first 40 ms): the table rings, a "k" burst does not
DECIDE_S = 0.16  # s after the onset when the decay has been heard
REFRACTORY_S = 0.25  # s: a second trigger this soon after a slam is its rattle (or a double slam: one call)
ONSET_DB = 6.0  # the onset: first sample of the rise whose pre-emphasised power is this far over the pre level
FLOOR_RISE_DB_PER_S = 3.0  # the floor creeps up this fast (steady noise becomes floor) ...
FLOOR_FALL = 0.3  # ... and falls this fraction of the way to any quieter frame
KEEP_S = 0.6  # s of samples and frame energies kept per channel


def _db(power: Any) -> Any:
    """dB of a power (or an array of them), 1e-12 keeping digital silence finite."""
    return 10.0 * np.log10(np.asarray(power) + 1e-12)


class SlamSpotter:
    """Slams on one channel of the input (see the module docstring), as ``Detection(word="slam")``."""

    name = ENGINE

    def __init__(self, *, channel: int | None = 0) -> None:
        self.channel = channel
        self.rate = 0
        self.found = 0  # slams reported (tests, benchmarks)
        self.refused = 0  # triggers judged not a slam
        self._reset(16000)
        self.floor: float | None = None  # dB, pre-emphasised band (kept across a gap)

    # ---------------------------------------------------------------- state

    def _reset(self, rate: int) -> None:
        self.rate = rate
        self.hop = max(1, int(round(rate * FRAME_S)))
        self._x = np.zeros(0, dtype=np.float64)  # recent samples (full scale 1.0) ...
        self._x0 = 0  # ... from this stream index
        self._next = -1  # stream index the next chunk should start at
        self._eh: deque[float] = deque()  # pre-emphasised frame energies (dB) ...
        self._eb: deque[float] = deque()  # ... and full band ...
        self._f0 = 0  # ... from this frame index
        self._frame = 0  # the next frame to measure
        self._triggers: deque[int] = deque()  # frames that triggered, waiting for their decision
        self._quiet_until = -1  # no trigger before this frame (after a slam)
        self.floor = None

    def _mono(self, chunk: AudioChunk) -> np.ndarray:
        s = chunk.samples
        if s.ndim == 2:
            if self.channel is None:
                s = s.astype(np.float64).mean(axis=1)
            elif self.channel < s.shape[1]:
                s = s[:, self.channel]
            else:
                s = np.zeros(len(s))
        return np.asarray(s, dtype=np.float64).ravel() / 32768.0

    # ---------------------------------------------------------------- Spotter

    def accept(self, chunk: AudioChunk) -> list[Detection]:
        if chunk.rate != self.rate:
            self._reset(chunk.rate)
        x = self._mono(chunk)
        if chunk.start != self._next:  # first chunk, or a gap: start afresh there (the floor is kept)
            floor = self.floor
            self._reset(chunk.rate)
            self.floor = floor
            self._x0 = chunk.start
            self._frame = self._f0 = -(-chunk.start // self.hop)  # the first whole frame in the chunk
        self._next = chunk.end
        self._x = np.concatenate([self._x, x])
        self._measure()
        out = self._decide(final=False, now=chunk.end / chunk.rate)
        self._trim()
        return out

    def flush(self) -> list[Detection]:
        return self._decide(final=True, now=self._next / self.rate if self._next >= 0 else 0.0)

    def undecided(self) -> float | None:
        """Onset (s) of the earliest rise still waiting for its decay to be heard, or None."""
        if not self._triggers:
            return None
        return max(0, self._triggers[0] - 2) * self.hop / self.rate

    # ---------------------------------------------------------------- frames

    def _samples(self, a: int, b: int) -> np.ndarray:
        """Samples [a, b) of the stream held now (clipped to what is held)."""
        lo, hi = max(a, self._x0) - self._x0, max(min(b, self._x0 + len(self._x)) - self._x0, 0)
        return self._x[lo:max(lo, hi)]

    def _measure(self) -> None:
        """Energy of every whole new frame; the floor and the triggers, frame by frame."""
        hop = self.hop
        last = (self._x0 + len(self._x)) // hop  # frames [self._frame, last) are whole
        if last <= self._frame:
            return
        a = self._frame * hop - 1  # one sample before, for the first difference
        seg = self._samples(max(a, self._x0), last * hop)
        if a < self._x0:
            seg = np.concatenate([seg[:1], seg])  # no sample before the stream: the first difference is 0
        n = last - self._frame
        full = seg[1:].reshape(n, hop)
        high = np.diff(seg).reshape(n, hop)
        eb = _db(np.mean(full * full, axis=1))
        eh = _db(np.mean(high * high, axis=1))
        rise = FLOOR_RISE_DB_PER_S * FRAME_S
        floor = self.floor
        hist = list(self._eh)[-8:]  # the frames before, for the step
        for i in range(n):
            e = float(eh[i])
            if floor is None:
                floor = e
            f = self._frame + i
            before = hist[-8:-3] if len(hist) >= 8 else []
            if (before and f >= self._quiet_until and e - max(before) >= STEP_DB and e - floor >= ABOVE_DB
                    and not (self._triggers and f - self._triggers[-1] < 5)):
                self._triggers.append(f)
            floor = floor + (e - floor) * FLOOR_FALL if e < floor else min(floor + rise, e)
            hist.append(e)
        self.floor = floor
        self._eh.extend(eh.tolist())
        self._eb.extend(eb.tolist())
        self._frame = last

    def _trim(self) -> None:
        keep = int(KEEP_S * self.rate)
        pending = self._triggers[0] * self.hop - int(0.1 * self.rate) if self._triggers else None
        cut = len(self._x) - keep
        if pending is not None:
            cut = min(cut, pending - self._x0)
        if cut > 0:
            self._x = self._x[cut:]
            self._x0 += cut
        first = self._x0 // self.hop
        while self._f0 < first and self._eh:
            self._eh.popleft()
            self._eb.popleft()
            self._f0 += 1

    def _frames(self, band: deque[float], a: int, b: int) -> np.ndarray:
        """Energies (dB) of frames [a, b) held in ``band``."""
        lo, hi = max(a, self._f0) - self._f0, min(b, self._frame) - self._f0
        return np.asarray([band[k] for k in range(lo, hi)]) if hi > lo else np.zeros(0)

    # ---------------------------------------------------------------- decisions

    def _decide(self, final: bool, now: float) -> list[Detection]:
        out = []
        need = int(round(DECIDE_S / FRAME_S)) + 2
        while self._triggers and (final or self._frame >= self._triggers[0] + need):
            f = self._triggers.popleft()
            if f < self._quiet_until:
                continue
            found = self._judge(f, now)
            if found is None:
                self.refused += 1
                continue
            self.found += 1
            out.append(found)
            self._quiet_until = int(round((found.onset + REFRACTORY_S) * self.rate / self.hop))
            while self._triggers and self._triggers[0] < self._quiet_until:
                self._triggers.popleft()
        return out

    def _judge(self, f: int, now: float) -> Detection | None:
        _, why, facts = self._judge_reason(f)
        if why is not None:
            return None
        onset = facts["onset"]
        confidence = float(min(1.0, 0.5 + (facts["rise"] - RISE_DB) / 40.0 + (facts["decay"] - DECAY_DB) / 40.0))
        return Detection(WORD, onset, onset + facts["length"], max(0.5, confidence),
                         channel=self.channel if self.channel is not None else 0, engine=ENGINE,
                         score=round(facts["rise"], 1), detected_at=now)

    def _judge_reason(self, f: int) -> tuple[int, str | None, dict]:
        per_ms = 0.001 / FRAME_S  # frames per ms
        ms = lambda t: int(round(t * per_ms))  # noqa: E731 (frames in t ms)
        eh_trig = self._frames(self._eh, f - ms(16), f + 1)
        ref = float(np.max(eh_trig[: ms(8)])) if len(eh_trig) > ms(8) else -120.0
        # the onset frame: the first of the last few frames before the trigger rising ONSET_DB over ref
        j = f
        while j > f - ms(8) and len(a := self._frames(self._eh, j - 1, j)) and a[0] > ref + ONSET_DB:
            j -= 1
        pre = self._frames(self._eh, j - ms(30), j - ms(6))
        pre_bb = self._frames(self._eb, j - ms(30), j - ms(6))
        if len(pre) < 3:
            return j, "no background before it", {}
        pre_db = float(_db(np.mean(10 ** (pre / 10))))
        pre_bb_db = float(_db(np.mean(10 ** (pre_bb / 10))))
        peak = self._frames(self._eh, j, j + ms(12))
        peak_bb = self._frames(self._eb, j, j + ms(12))
        tail = self._frames(self._eh, j + ms(50), j + ms(150))
        tail_bb = self._frames(self._eb, j + ms(50), j + ms(150))
        if not len(peak) or not len(tail):
            return j, "cut off by the end of the audio", {}
        peak_db, peak_bb_db = float(peak.max()), float(peak_bb.max())
        rise = peak_db - pre_db
        decay = peak_db - float(_db(np.mean(10 ** (tail / 10))))
        decay_bb = peak_bb_db - float(_db(np.mean(10 ** (tail_bb / 10))))
        facts = {"rise": rise, "decay": decay, "decay_bb": decay_bb, "pre_bb": pre_bb_db}
        ring = int(np.count_nonzero(self._frames(self._eb, j, j + ms(40)) >= peak_bb_db - RING_DB)) * FRAME_S
        facts["ring"] = ring
        if rise < RISE_DB:
            return j, f"rises {rise:.0f} dB in 12 ms (a slam: {RISE_DB:.0f})", facts
        if decay < DECAY_DB or decay_bb < DECAY_BB_DB:
            return j, f"still {decay:.0f} / {decay_bb:.0f} dB under its peak 50-150 ms on (a slam: {DECAY_DB:.0f} / " \
                      f"{DECAY_BB_DB:.0f}): a word goes on", facts
        if ring < MIN_RING_S:
            return j, f"rings {ring * 1000:.0f} ms within {RING_DB:.0f} dB of its peak (a slam: {MIN_RING_S * 1000:.0f}): " \
                      "a consonant's burst", facts
        onset = self._onset(j, pre_db)
        low, high, flat = self._spectrum(onset)
        facts.update(low=low, high=high, flat=flat, onset=onset / self.rate)
        if high < HIGH_FRAC:
            return j, f"{high:.2f} of its energy above 2 kHz (a slam: {HIGH_FRAC}): a thud", facts
        if low < LOW_FRAC:
            return j, f"{low:.3f} of its energy below 300 Hz (a slam: {LOW_FRAC}): a clap or clatter", facts
        if flat < FLAT_MIN:
            return j, f"spectral flatness {flat:.2f} (a slam: {FLAT_MIN}): a tone", facts
        # its length: until the pre-emphasised band is back within 20 dB... of the pre level, at most 150 ms
        after = self._frames(self._eh, j, j + ms(150))
        quiet = np.nonzero(after < max(peak_db - 30.0, pre_db + 6.0))[0]
        quiet = quiet[quiet > ms(4)]
        facts["length"] = (int(quiet[0]) if len(quiet) else len(after)) * FRAME_S
        return j, None, facts

    def _onset(self, j: int, pre_db: float) -> int:
        """Stream index of the first sample of the rise: the pre-emphasised sample whose power is ONSET_DB
        over the pre level, searched in the frames around frame ``j``."""
        a, b = (j - 2) * self.hop, (j + 2) * self.hop
        seg = self._samples(a - 1, b)
        if len(seg) < 2:
            return j * self.hop
        start = b - len(seg) + 1  # stream index of the first difference's first value
        d = np.diff(seg)
        over = np.nonzero(d * d > 10 ** ((pre_db + ONSET_DB + 6.0) / 10))[0]  # 12 dB: past the noise's own peaks
        return int(start + over[0]) if len(over) else j * self.hop

    def _spectrum(self, onset: int) -> tuple[float, float, float]:
        """(fraction below 300 Hz, fraction above 2 kHz, flatness over 300 Hz-6 kHz) of the 32 ms from
        ``onset``, the same span's worth of background before it taken off."""
        n = int(round(0.032 * self.rate))
        event = self._samples(onset, onset + n)
        back = self._samples(onset - n - int(0.006 * self.rate), onset - int(0.006 * self.rate))
        if len(event) < n:
            return 0.0, 0.0, 0.0
        win = np.hanning(n)
        p = np.abs(np.fft.rfft(event * win)) ** 2
        if len(back) == n:
            p = np.maximum(p - np.abs(np.fft.rfft(back * win)) ** 2, 0.0)
        freqs = np.fft.rfftfreq(n, 1.0 / self.rate)
        total = float(p[freqs >= 20].sum()) + 1e-20
        low = float(p[(freqs >= 20) & (freqs < 300)].sum()) / total
        high = float(p[freqs >= 2000].sum()) / total
        mid = p[(freqs >= 300) & (freqs <= min(6000.0, self.rate / 2))]
        # flatness of the band's power smoothed over ~200 Hz (a noise burst's own spectrum is ragged)
        k = max(1, int(round(200.0 / (freqs[1] - freqs[0]))))
        smooth = np.convolve(mid, np.ones(k) / k, mode="valid") if len(mid) > k else mid
        smooth = smooth + 1e-20
        flat = float(np.exp(np.mean(np.log(smooth))) / np.mean(smooth)) if len(smooth) else 0.0
        return low, high, flat


class WithSlams:
    """Silent Snap on per-player mics: ``slams`` (a ``ChannelSpotters`` of one ``SlamSpotter`` per mic,
    where the loudest mic names the slammer) and ``words`` (Vosk per mic, for "dealer ..." commands;
    None without a model) hear every chunk, and their detections go to the table together.

    ``inner`` is the words' spotter, so that the table's hold for a command being said
    (``spotters.command_begun_from``) finds it; ``spotters`` (the mics) is for the table's burst tracker.
    """

    def __init__(self, words: object | None, slams: object) -> None:
        self.inner = words
        self.slams = slams
        self.spotters = getattr(slams, "spotters", None)
        self.name = f"{getattr(words, 'name', '')}+{ENGINE}" if words is not None else ENGINE

    def accept(self, chunk: AudioChunk) -> list[Detection]:
        out = list(self.inner.accept(chunk)) if self.inner is not None else []  # type: ignore[attr-defined]
        return out + list(self.slams.accept(chunk))  # type: ignore[attr-defined]

    def flush(self) -> list[Detection]:
        out = list(self.inner.flush()) if self.inner is not None else []  # type: ignore[attr-defined]
        return out + list(self.slams.flush())  # type: ignore[attr-defined]

    def undecided(self) -> float | None:
        times = [t for t in (undecided_from(self.inner), undecided_from(self.slams)) if t is not None]
        return min(times, default=None)

    def take_refusals(self) -> list[Refusal]:
        return take_refusals(self.inner) + take_refusals(self.slams)
