"""Where a word starts: the signal's energy rise, found to the millisecond.

Ties are judged on onsets, and a recogniser's word times are coarse (Vosk's
30 ms frames, the keyword model's 80 ms steps), so every spotter that places
a word from the signal keeps the recent audio here and asks for the rise near
its estimate. All times are seconds on the input stream's clock.
"""

from __future__ import annotations

from typing import Literal

import numpy as np

__all__ = ["Envelope", "HISS_MIN", "RATE"]

RATE = 16000

# A "snap" whose word adds less high band than low band at its start by this much (``Envelope.hiss``,
# dB) does not start with the "s" of "snap" and is not a call: the keyword spotter does not report it,
# and the judges drop Vosk's (spotters.judges). Measured at the true onsets (docs/listening.md,
# "Seventeenth round"): the corpus's calls -9.9 to +31 dB, the 7 under +3 dB over the announcer, in
# babble at 5 dB or a second caller 200 ms into another's call (the 3 under the line: two calls the
# combined engine misses anyway, and a tie partner it still finds); "nap" on the no-call hour -1.2 dB
# at most, 87-93% under the line; "map" 98-100%; real people's "s" words
# (tests/fixtures/audio/real/commands: "six", "seven", "stop", "sheila") -0.7 to +47, their "no",
# "nine", "marvin" 12 of 13 under it. Combined engine: on the corpus no call is lost and 1 of 2 false
# calls goes; on the no-call hour 33 -> 23 false calls per hour. None turns the check off.
HISS_MIN: float | None = -5.0
# A weak hiss that is the vowel's, not an "s" before it. The no-call hour's last "nap"s in pink noise
# (cara's, heard by the keyword model alone, Vosk decoding nothing there) score -2.9 to -1.3 dB, over
# HISS_MIN; raising the line would drop real people's weak "s" in noise too (a real "stop" -0.6 dB clean,
# -0.7 to -4 dB in pink noise; docs/listening.md, "Thirty-seventh round"). What tells those "nap"s apart is
# the order: their high band rises clearly (``Envelope.hiss_order``) only after their low band, the nasal
# and the vowel, has begun, while an "s" comes first. So a word whose hiss is under HISS_WEAK dB and whose
# high band's clear rise comes more than HISS_AFTER s after its low band's is hiss-less too. Where the high
# band never rises clearly (a weak "s" in noise) there is no opinion and the word keeps its call. None
# turns this second test off.
HISS_WEAK: float | None = 0.0
HISS_AFTER = 0.02

# Behind the echo canceller a frame whose energy is more than this many dB under what the canceller
# removed there is what is left of the announcer, not a rise of a player's voice (``Envelope.energy_db``;
# None: no such reading). Measured on players' calls laid over every announcement of echo_ranks (bench.
# echo_rows' overlay, both rooms, all gains and offsets): frames with only the announcer in them sit a
# median 22-25 dB under what was removed, 9 dB or more under it in 9 of 10; a call's first 20 ms rise
# over that line in 9 of 10 calls even at half its clean level.
ECHO_MARGIN_DB: float | None = 10.0


def _db_of_mean(power: np.ndarray, k: int, mode: Literal["same", "valid"]) -> np.ndarray:
    """dB of the power averaged over ``k`` frames (np.convolve's ``mode``): a stretch's level, not its loudest frame's."""
    return 10 * np.log10(np.convolve(power, np.ones(k) / k, mode=mode))


class Envelope:
    """Recent 16 kHz mono audio and its 1 ms energy envelope, for onset refinement."""

    HOP = 16  # 1 ms
    WIN = 80  # 5 ms frames
    use_high = True  # also try the high band for onsets
    RISE_DB = 6.0  # an onset is where energy rises this far over the floor before it

    def __init__(self, seconds: float = 12.0) -> None:
        self.capacity = int(seconds * RATE)
        # Linear buffer twice the capacity: appends are copies, compaction is rare.
        self.buf = np.zeros(2 * self.capacity, dtype=np.float32)
        self.fill = 0  # samples held in buf[:fill]
        self.end = 0  # clock index (16 kHz) one past the newest sample
        self.echo: np.ndarray | None = None  # beside buf, once a chunk came with one: what the canceller removed

    def push(self, start: int, samples: np.ndarray, echo: np.ndarray | None = None) -> None:
        """Append ``samples`` at clock index ``start``; ``echo``, what the echo canceller removed
        from them (``AudioChunk.echo``), tells the announcer's residue from a rise (``energy_db``)."""
        x = samples.astype(np.float32).ravel()
        if echo is not None and self.echo is None:
            self.echo = np.zeros_like(self.buf)  # what came before had none removed
        if start != self.end and self.fill:  # a gap (dropped frames): restart, positions stay true
            self.fill = 0
        n = min(len(x), self.capacity)
        cut = len(x) - n  # only the newest capacity samples are kept
        if self.fill + n > len(self.buf):
            keep = self.capacity - n
            for buf in (self.buf, self.echo) if self.echo is not None else (self.buf,):
                buf[:keep] = buf[self.fill - keep : self.fill]
            self.fill = keep
        self.buf[self.fill : self.fill + n] = x[cut:]
        if self.echo is not None:
            self.echo[self.fill : self.fill + n] = 0.0 if echo is None else echo.astype(np.float32).ravel()[cut:]
        self.fill += n
        self.end = start + len(samples)

    def segment(self, a: int, b: int, echo: bool = False) -> tuple[np.ndarray, int]:
        """Samples for clock indices [a, b) clipped to what is held; returns (samples, first index).
        ``echo``: what the canceller removed there instead (zeros where nothing is known)."""
        first = self.end - self.fill
        a, b = max(a, first, 0), min(b, self.end)
        if b <= a:
            return np.zeros(0, dtype=np.float32), a
        if echo:
            return (self.echo[a - first : b - first] if self.echo is not None
                    else np.zeros(b - a, dtype=np.float32)), a
        return self.buf[a - first : b - first], a

    # Linear-phase high-pass FIR (windowed sinc, 2 kHz, 33 taps): the "s" of "snap"
    # lives above it, pink noise, hum, babble and most table clatter below it.
    _HP_TAPS = 33
    _HP = (lambda n, fc: (np.eye(1, n, n // 2).ravel() - np.sinc(2 * fc * (np.arange(n) - n // 2)) * 2 * fc
                          * np.hamming(n)))(33, 2000 / RATE)

    def energy_db(self, a: int, b: int, high: bool = False, masked: bool = True) -> tuple[np.ndarray, int]:
        """Frame energies (dB) on a 1 ms hop; frame i covers [first + i*HOP, +WIN).

        ``high``: of the signal high-passed at 2 kHz (same timing: zero-phase). Behind the echo
        canceller, frames that are only what is left of the announcer (``ECHO_MARGIN_DB`` under
        what was removed there) read as silence (0 dB): every search for a rise, a burst or the
        "s" of a call then finds the player's voice, not the announcement it was said over.
        """
        e, first = self._energy_db(a, b, high, echo=False)
        if not masked or self.echo is None or ECHO_MARGIN_DB is None or not len(e):
            return e, first
        removed, _ = self._energy_db(a, b, high, echo=True)
        return np.where(e > removed[: len(e)] - ECHO_MARGIN_DB, e, 0.0), first

    def _energy_db(self, a: int, b: int, high: bool, echo: bool) -> tuple[np.ndarray, int]:
        if high:
            m = self._HP_TAPS // 2
            wide, wfirst = self.segment(a - m, b + m, echo)
            if not len(wide):
                return np.zeros(0), wfirst
            x = np.convolve(wide.astype(np.float64), self._HP, mode="same")
            lo, hi = max(a, wfirst) - wfirst, min(b, wfirst + len(wide)) - wfirst
            x, first = x[lo:hi], wfirst + lo
        else:
            x, first = self.segment(a, b, echo)
        if len(x) < self.WIN:
            return np.zeros(0), first
        sq = np.concatenate([[0.0], np.cumsum(x.astype(np.float64) ** 2)])
        starts = np.arange(0, len(x) - self.WIN + 1, self.HOP)
        power = (sq[starts + self.WIN] - sq[starts]) / self.WIN
        return 10 * np.log10(power + 1.0), first

    def refine_onset(
        self, approx: float, latest: float | None = None, before: float = 0.03, after: float = 0.10,
        peak_to: float | None = None,
    ) -> float | None:
        """The energy rise in [approx - before, approx + after] (seconds), or None when there is none.

        Noise floor from the 300 ms before the search window; the onset is the
        first frame from which energy stays above the floor + a margin (or 30
        dB under the word's peak, whichever is higher) for 15 ms. The window is
        narrow because Vosk's word start is reliably 10-50 ms early (measured on
        the corpus): a wider one lets a noise burst before the word win.

        ``peak_to``: whether the rise is clear (12 dB over the floor) is judged by the word up to
        there too. A window that ends 20-30 ms into the word (the keyword spotter's, just past the
        "s" it found) holds too little of it to stand that far over pink noise 10 dB under it.
        """
        centre = int(round(approx * RATE))
        a, b = centre - int(before * RATE), centre + int(after * RATE)
        if latest is not None:
            b = max(centre + int(0.03 * RATE), min(b, int(latest * RATE)))
        # The high band first: the "s" of "snap" starts the word there, and
        # pink noise, hum, babble and most clatter lie below it. Behind the canceller, what is left
        # of the announcer is skipped first; a call whose "s" is 10 dB under a loud stretch of the
        # announcement is skipped with it, and is then searched for as it was without the canceller.
        for masked in (True, False) if self.echo is not None and ECHO_MARGIN_DB is not None else (False,):
            for high in (True, False) if self.use_high else (False,):
                onset = self._rise(a, b, high, masked, None if peak_to is None else int(peak_to * RATE))
                if onset is not None:
                    return onset
        return None

    # word_start(): a rise that a quiet gap this long (s) parts from the word's first vowel is not its start.
    WORD_GAP = 0.06
    WORD_GAP_DB = 8.0  # "quiet": under the floor before the onset + this (10 ms frames)
    WORD_GAP_HIGH_DB = 4.0  # and under the high band's floor + this
    WORD_GAP_SWELL_DB = 3.0  # or under the floor's own swells (95th percentile of its 10 ms levels) + this
    WORD_UNDER_DB = 25.0  # or this far under the word's vowel
    WORD_UNDER_HIGH_DB = 30.0  # in the high band: or this far under the word's "s" (its 150 ms before the vowel)
    WORD_PEAK_DB = 10.0  # the word's first vowel: its first voiced stretch this close to the loudest one
    WORD_VOICED = 0.5  # a vowel's 40 ms frame: its normalised autocorrelation at the pitch period
    WORD_VOICED_FRAMES = 4  # ... in this many frames on end (10 ms apart)
    WORD_REACH = 0.2  # s past the word's end that its vowel is looked for in (a recogniser's end can be early)

    def word_start(self, onset: float, end: float) -> float | None:
        """The start of the sound that runs on into the word, where a quiet gap of ``WORD_GAP`` s parts
        ``onset`` from the word's first vowel (looked for up to WORD_REACH past ``end``, s): a recogniser's
        word can take in a click or a card slap before it, and its onset is then found there; None where
        no gap does."""
        end += self.WORD_REACH
        e, first = self.energy_db(int(onset * RATE), int(end * RATE), masked=False)
        high, _ = self.energy_db(int(onset * RATE), int(end * RATE), high=True, masked=False)
        floor_db, _ = self.energy_db(int((onset - 0.3) * RATE), int(onset * RATE), masked=False)
        high_floor, _ = self.energy_db(int((onset - 0.3) * RATE), int(onset * RATE), high=True, masked=False)
        if len(e) < 40 or len(high) < len(e) or not len(floor_db) or not len(high_floor):
            return None
        vowel = self._first_vowel(first, len(e))
        gap = int(self.WORD_GAP * 1000)
        if vowel is None or vowel < gap:
            return None
        # quiet in both bands, over 10 ms: in noise a weak "s" hardly rises over the whole band's floor;
        # and anything WORD_UNDER_DB under the vowel is quiet (a quiet room's hum wavers over its floor),
        # and anything pink noise's own swells reach (its 10 ms levels rise 8 dB or more over its 20th
        # percentile: a gap of noise alone between a breath or a click and the word then counts)
        smooth = _db_of_mean(10 ** (e / 10), 10, "same")
        high_smooth = _db_of_mean(10 ** (high[:vowel] / 10), 10, "same")
        swells = _db_of_mean(10 ** (floor_db / 10), 10, "valid") if len(floor_db) >= 10 else floor_db
        line = max(float(np.percentile(floor_db, 20)) + self.WORD_GAP_DB,
                   float(np.percentile(swells, 95)) + self.WORD_GAP_SWELL_DB,
                   float(smooth[vowel: vowel + 50].max()) - self.WORD_UNDER_DB)
        smooth = smooth[:vowel]
        quiet = smooth < line
        s_peak = float(high_smooth[max(0, vowel - 150):].max())
        quiet &= high_smooth < max(float(np.percentile(high_floor, 20)) + self.WORD_GAP_HIGH_DB,
                                   s_peak - self.WORD_UNDER_HIGH_DB)
        runs = np.flatnonzero(np.convolve(quiet.astype(np.int32), np.ones(gap, dtype=np.int32), mode="valid") == gap)
        if not len(runs):
            return None
        after = (first + (int(runs[-1]) + gap) * self.HOP) / RATE  # the end of the last quiet gap
        if after >= end - self.WORD_REACH:
            return None  # past the word's own end: what follows the word, not its start
        # searched up to the vowel: a gap that ends well before the "s" would leave only a swell of
        # the noise in the onset search's usual 0.1 s, where the high band holds nothing yet
        vowel_at = (first + vowel * self.HOP) / RATE
        found = self.refine_onset(after, latest=end, before=0.0, after=max(0.10, vowel_at - after))
        start = found if found is not None else after
        # a call starts with the hiss of its "s": moved only onto one (in noise a weak "s" can pass for a
        # gap, and the vowel after it is no start); where the check has no opinion, not moved
        hiss = self.hiss(start)
        if hiss is None or hiss < (HISS_MIN if HISS_MIN is not None else -5.0):
            return None
        return start

    # hiss_lead(): how far back (s) a weak "s" is looked for, and the lines it is walked back over by
    HISS_LEAD = 0.25
    HISS_LEAD_DB = 1.5  # the high band (20 ms) this far over its floor's median
    HISS_LEAD_SPREAD = 3.0  # or this many times the floor's own spread, if more (babble: then hardly ever)
    HISS_LEAD_LOW_DB = 10.0  # while the band under 2 kHz stays under its own such line + this
    HISS_LEAD_UNDER = 15.0  # and the high band within this of its loudest 20 ms (to 100 ms past the onset)

    def hiss_lead(self, onset: float) -> float | None:
        """Where a weak "s" that runs on into the rise at ``onset`` (s) starts, or None. In steady noise a
        real speaker's "s" can stand 2-4 dB over the high band's floor for 100-200 ms before the rise the
        onset search finds, at the vowel (docs/listening.md, "Thirty-fourth round"). Walked back over
        while the high band stands over its floor and what is under 2 kHz does not, unvoiced: an "s" adds
        nothing low and does not repeat at a pitch period; another caller's vowel before it does both."""
        a, c = int((onset - self.HISS_LEAD) * RATE), int(onset * RATE)
        # behind the echo canceller what is left of the announcer reads as silence (its own "s" is not the call's)
        full, first = self.energy_db(a, c + 100 * self.HOP)
        high, _ = self.energy_db(a, c + 100 * self.HOP, high=True)
        floor_full, _ = self.energy_db(a - int(0.3 * RATE), a, masked=False)
        floor_high, _ = self.energy_db(a - int(0.3 * RATE), a, high=True, masked=False)
        if len(high) < 100 or len(floor_high) < 100 or len(full) != len(high) or len(floor_full) != len(floor_high):
            return None
        k = 20  # 20 ms windows of the 1 ms frames

        def low(f: np.ndarray, h: np.ndarray) -> np.ndarray:  # power under 2 kHz
            return np.maximum(10 ** (f / 10) - 10 ** (h / 10), 1.0)

        def smooth(p: np.ndarray) -> np.ndarray:  # [i]: frames i .. i+k-1, dB
            return _db_of_mean(p, k, "valid")

        def sigma(v: np.ndarray) -> float:  # a robust standard deviation (dB)
            q10, q90 = np.percentile(v, (10, 90))
            return float(q90 - q10) / 2.56

        def line(p: np.ndarray) -> tuple[float, float]:  # a floor's median (20 ms, dB) and the line over it
            levels = smooth(p)
            mid = float(np.median(levels))
            return mid, mid + max(self.HISS_LEAD_DB, self.HISS_LEAD_SPREAD * sigma(levels))

        high_s, low_s = smooth(10 ** (high / 10)), smooth(low(full, high))
        floor_mid, high_line = line(10 ** (floor_high / 10))
        low_line = line(low(floor_full, floor_high))[1] + self.HISS_LEAD_LOW_DB
        # no lower than the onset search's own line under the "s" (a quiet room: its faint lead-in is not its start)
        high_line = max(high_line, float(high_s.max()) - self.HISS_LEAD_UNDER)
        end = int(min(max(c // self.HOP - first // self.HOP - k // 2, 0), len(high_s) - 1))  # centred on the onset
        hiss = (high_s > high_line) & (low_s < low_line)
        # and unvoiced: an "s" does not repeat at a pitch period; another caller's vowel before it does
        x, _ = self.segment(first, first + len(full) * self.HOP + self.WIN)
        found = self._periodicity(x)
        if found is not None:
            voiced = found[0] >= self.WORD_VOICED  # frame f covers 1 ms frames [10 f, 10 f + 40)
            at = (np.arange(len(hiss)) + k // 2) // 10  # where each 20 ms window is centred, in 10 ms
            # judged on the 40 ms that end there: the onset itself may be a vowel's, the "s" before it not
            hiss &= ~voiced[np.clip(at - 4, 0, len(voiced) - 1)]
        if not hiss[end]:
            return None
        i = end
        while i > 0 and hiss[i - 1]:
            i -= 1
        if i == 0:
            return None  # runs back past the window: not the start of a word
        # Where in the first window over the line it starts: not in its first half (a window's mean crosses the
        # line once the "s" fills half of it, or less where the "s" is loud), and from there the change point
        # from the floor to the level the line stands for (5 ms frames' dB over halfway between them, summed
        # back from the onset: where that sum is largest)
        # (and over twice what a 5 ms frame of the floor wavers by)
        mid = max((floor_mid + high_line) / 2, floor_mid + 2 * sigma(floor_high))
        i += k // 2 - 2
        score = high[i: end + k // 2] - mid  # dB: frames over halfway from the floor to the line count for the "s"
        if not len(score):
            return None
        j = i + int(np.argmax(np.cumsum(score[::-1])[::-1]))
        start = self._first_sample(first + j * self.HOP, high_line, True)
        return start if start < onset - 0.005 else None

    _VOICE_N, _VOICE_HOP = 640, 160  # 40 ms frames on a 10 ms hop: two periods of a 50 Hz voice

    def _periodicity(self, x: np.ndarray, n: int | None = None,
                     hop: int | None = None) -> tuple[np.ndarray, np.ndarray] | None:
        """Each 40 ms frame's (10 ms apart, from x[0]; or ``n`` samples, ``hop`` apart) normalised
        autocorrelation at its best pitch period (2.5-20 ms: voices of 50-400 Hz), and its level (dB);
        None when ``x`` is under one frame."""
        n, hop = n or self._VOICE_N, hop or self._VOICE_HOP
        if len(x) < n:
            return None
        windows = np.lib.stride_tricks.sliding_window_view(x.astype(np.float64), n)[::hop]
        windows = windows - windows.mean(axis=1, keepdims=True)
        spec = np.fft.rfft(windows, 2 * n, axis=1)
        ac = np.fft.irfft(np.abs(spec) ** 2, axis=1)[:, :n]
        # each lag's product over the energies of the two stretches it compares (normalised: 1 for a
        # perfectly periodic frame at any lag, where the plain ratio to lag 0 falls with the lag)
        sq = np.cumsum(windows ** 2, axis=1)
        lags = np.arange(40, 320)
        head = sq[:, n - 1 - lags]  # x[0 : n-lag]
        tail = sq[:, -1:] - sq[:, lags - 1]  # x[lag : n]
        periodic = (ac[:, lags] / np.sqrt(head * tail + 1e-9)).max(axis=1)
        return periodic, 10 * np.log10(ac[:, 0] / n + 1.0)

    def _first_vowel(self, first: int, frames: int) -> int | None:
        """The 1 ms frame (from clock index ``first``) where the first voiced stretch within
        WORD_PEAK_DB of the loudest one starts: voiced is a 40 ms frame that repeats itself at a pitch
        period (normalised autocorrelation WORD_VOICED or more at a lag of 2.5-20 ms), which a vowel
        does and a slap, a click or an "s" does not, however loud. None where nothing is voiced."""
        x, start = self.segment(first, first + frames * self.HOP)
        found = self._periodicity(x)
        if found is None:
            return None
        periodic, level = found
        hop = self._VOICE_HOP
        voiced = periodic >= self.WORD_VOICED
        # and for WORD_VOICED_FRAMES frames on end (70 ms): a thump's ringing is periodic too, but dies sooner
        k = self.WORD_VOICED_FRAMES
        runs = np.convolve(voiced.astype(np.int32), np.ones(k, dtype=np.int32), mode="valid") == k
        voiced = np.convolve(runs.astype(np.int32), np.ones(k, dtype=np.int32), mode="full")[: len(voiced)] > 0
        if not voiced.any():
            return None
        loud = voiced & (level >= level[voiced].max() - self.WORD_PEAK_DB)
        return int(np.flatnonzero(loud)[0]) * hop // self.HOP + (start - first) // self.HOP

    def rise_near(self, approx: float, latest: float) -> float | None:
        """The energy rise within 50 ms of an onset another engine found (``energy_onset`` of the
        spotters, for CombinedSpotter), searched as ``refine_onset`` searches, or None."""
        return self.refine_onset(approx, latest=latest, before=0.05, after=0.05)

    def _rise(self, a: int, b: int, high: bool, masked: bool = True, peak_to: int | None = None) -> float | None:
        """refine_onset's search in one band (full, or high-passed) of clock indices [a, b);
        ``masked``: with what is left of the announcer read as silence (``energy_db``)."""
        # the floor is what the output held before the word, what is left of the announcer included:
        # read masked, its frames were 0 dB, the line fell to 30 dB under the call's peak, and a stretch
        # of the announcer the mask let through (its "s", which the canceller takes out least) was the start
        floor_db, _ = self.energy_db(a - int(0.3 * RATE), a, high, masked=False)
        e, first = self.energy_db(a, b, high, masked)
        if len(e) < 20:
            return None
        floor = float(np.percentile(floor_db, 20)) if len(floor_db) else float(np.percentile(e, 5))
        peak = float(e.max())
        if peak_to is not None and peak_to > b:
            peak = float(self.energy_db(b, peak_to, high, masked)[0].max(initial=peak))
        if peak - floor < 12.0:  # no clear rise: leave Vosk's estimate alone
            return None
        thr = max(floor + self.RISE_DB, peak - 30.0)
        above = e > thr
        hold = 15
        run = np.convolve(above.astype(np.int32), np.ones(hold, dtype=np.int32), mode="valid") == hold
        idx = np.flatnonzero(run)
        if len(idx) == 0:
            return None
        # Pick the rise closest to (and not much after) Vosk's start.
        i = int(idx[0])
        if above[0]:  # already loud at the window start: the rise is before it, unknown
            starts = np.flatnonzero(run & ~np.concatenate([[True], above[:-1]])[: len(run)])
            if len(starts) == 0:
                return None
            i = int(starts[0])
        return self._first_sample(first + i * self.HOP, thr, high)

    def _first_sample(self, at: int, thr: float, high: bool) -> float:
        """The first sample (s) over ``thr`` (dB, as energy_db reads it) in the frame that starts at clock
        index ``at``, which covers [at, at + 5 ms); the frame's middle where none is."""
        if high:
            m = self._HP_TAPS // 2
            wide, _ = self.segment(at - m, at + self.WIN + m)
            frame = np.convolve(wide.astype(np.float64), self._HP, mode="same")[m : m + self.WIN]
        else:
            frame = self.segment(at, at + self.WIN)[0]
        lin_thr = np.sqrt(10 ** (thr / 10.0)) * 0.5
        over = np.flatnonzero(np.abs(frame) > lin_thr)
        offset = int(over[0]) if len(over) else self.WIN // 2
        return (at + offset) / RATE

    # hiss(): 16 ms frames on a 5 ms hop; the "s" lives in HISS_BAND, a nasal's or vowel's start in LOW_BAND.
    _FFT = 256
    _FFT_HOP = 80
    HISS_BAND = (3500.0, 7800.0)
    LOW_BAND = (100.0, 1500.0)
    # A frame counts as part of the "s" where the high band stands this far (power ratio) over its floor:
    # 3 dB. Real speakers' "s" can lie 25-40 dB under their vowel (espeak's 6-13 dB); at 6 dB a quarter
    # of real "s" words in pink noise at 5 dB never rose, and were judged hiss-less (docs/listening.md,
    # "Thirty-third round").
    HISS_RISE = 2.0

    def hiss(self, onset: float, before: float = 0.03, after: float = 0.15) -> float | None:
        """How much the word at ``onset`` (s) starts with a hiss: the most, over the frames from
        ``before`` s before it to ``after`` s after it, of the sound added over the floor in the high
        band against that in the low band (dB). The "s" of "snap" adds high band and little low band
        (about +20 dB); "nap" and "map" start with a nasal and a vowel, which add mostly low band
        (-5 to -40 dB). The floor is the 30th percentile of each band over the 0.55 s before the word,
        so a caller's "s" over another's vowel, 200 ms into it, still counts. Minus infinity where the
        high band never rises ``HISS_RISE`` over its floor (a "nap" in pink noise adds nothing up there;
        every corpus call rises over it, in noise at 5 dB too). None (no opinion) with too little audio
        before the word, or where the input carries nothing above 4 kHz (a telephone-band headset),
        where every call would look hiss-less."""
        bands = self._bands(onset, after + 0.02)
        if bands is None:
            return None
        power, freqs, high, low, t = bands
        above_4k = power[:, freqs >= 4500.0].sum()
        if above_4k < 1e-4 * power[:, (freqs >= 2500.0) & (freqs < 4000.0)].sum():  # 40 dB down
            return None
        floor, word = t < -0.05, (t >= -before) & (t <= after)
        if floor.sum() < 5 or not word.any():
            return None
        high_floor, low_floor = np.percentile(high[floor], 30), np.percentile(low[floor], 30)
        h, lo = high[word], low[word]
        rose = h > self.HISS_RISE * (high_floor + 1e-12)
        if not rose.any():
            return float("-inf")
        # What the word adds over the floor; a thousandth of its peak keeps silence from dividing by 0.
        added_high = np.maximum(h - high_floor, 0.0) + 1e-3 * h.max() + 1e-12
        added_low = np.maximum(lo - low_floor, 0.0) + 1e-3 * lo.max() + 1e-12
        return float(10 * np.log10(added_high[rose] / added_low[rose]).max())

    def hissless(self, onset: float) -> bool:
        """Whether the word at ``onset`` (s) starts without the hiss of an "s": ``hiss`` under HISS_MIN,
        or under HISS_WEAK with its high band rising only after its low band (``hiss_order`` under
        -HISS_AFTER). False with no opinion, or with HISS_MIN None."""
        if HISS_MIN is None:
            return False
        value = self.hiss(onset)
        if value is None:
            return False
        if value < HISS_MIN:
            return True
        if HISS_WEAK is None or value >= HISS_WEAK:
            return False
        order = self.hiss_order(onset)
        return order is not None and order < -HISS_AFTER

    # hiss_order(): the hiss's frames; a band "rises clearly" over ORDER_RUN frames in a row (15 ms) where it
    # stands ORDER_HIGH (power ratio) over its floor's 90th percentile (the high band) or ORDER_LOW over it and
    # within ORDER_PEAK_DB of its loudest frame in the word (the low band: the voicing, not an "s"'s leak).
    def _bands(self, onset: float, after: float) -> tuple[np.ndarray, ...] | None:
        """(power spectra, their frequencies, the high band's and the low band's power per frame, each
        frame's time from ``onset``) from 0.6 s before ``onset`` to ``after`` s after it; None with too
        little audio kept."""
        n, hop = self._FFT, self._FFT_HOP
        c = int(round(onset * RATE))
        x, first = self.segment(c - int(0.6 * RATE), c + int(after * RATE))
        if len(x) < n + 20 * hop:
            return None
        frames = np.lib.stride_tricks.sliding_window_view(x.astype(np.float64), n)[::hop] * np.hanning(n)
        power = np.abs(np.fft.rfft(frames, axis=1)) ** 2
        freqs = np.fft.rfftfreq(n, 1.0 / RATE)
        high = power[:, (freqs >= self.HISS_BAND[0]) & (freqs < self.HISS_BAND[1])].sum(axis=1)
        low = power[:, (freqs >= self.LOW_BAND[0]) & (freqs < self.LOW_BAND[1])].sum(axis=1)
        t = (first + np.arange(len(high)) * hop + n / 2) / RATE - onset
        return power, freqs, high, low, t

    ORDER_HIGH = 2.0
    ORDER_LOW = 4.0
    ORDER_PEAK_DB = 15.0
    ORDER_RUN = 3
    ORDER_AFTER = 0.25

    def hiss_order(self, onset: float, before: float = 0.03) -> float | None:
        """How long (s) the word at ``onset`` s has its high band (the "s") rising clearly before its low
        band (the voicing) does, searched from ``before`` s before it to ORDER_AFTER s after: about +0.05 to
        +0.3 for a call ("s" first), below zero where the hiss is only the vowel's ("nap" in noise). None (no
        opinion) where either band never rises clearly (a weak "s" under noise), or with too little audio."""
        bands = self._bands(onset, self.ORDER_AFTER)
        if bands is None:
            return None
        _power, _freqs, high, low, t = bands
        floor, word = t < -0.05, (t >= -before) & (t <= self.ORDER_AFTER)
        if floor.sum() < 5 or not word.any():
            return None
        high_line = self.ORDER_HIGH * np.percentile(high[floor], 90)
        low_line = max(self.ORDER_LOW * np.percentile(low[floor], 90),
                       float(low[word].max()) * 10 ** (-self.ORDER_PEAK_DB / 10))

        def first_rise(over: np.ndarray) -> float | None:
            run = 0
            for i in np.flatnonzero(word):
                run = run + 1 if over[i] else 0
                if run >= self.ORDER_RUN:
                    return float(t[i - self.ORDER_RUN + 1])
            return None

        rise_high, rise_low = first_rise(high > high_line), first_rise(low > low_line)
        if rise_high is None or rise_low is None:
            return None
        return rise_low - rise_high

    # voice_after_s(): 10 ms frames on a 2.5 ms hop (a stop closure lasts a few tens of ms); voicing from
    # 32 ms frames centred on them, at pitch periods of 2.5-20 ms (voices of 50-400 Hz, as _periodicity).
    _GAP_WIN, _GAP_HOP, _GAP_VOICE_N = 160, 40, 512
    GAP_S_MIN = 0.04  # the "s": a stretch this long (s) whose band over 3 kHz outweighs 100 Hz-1 kHz
    GAP_CLEAR_DB = (6.0, 12.0)  # the "s" (high band) and the vowel (low band) over their floors, or no opinion

    def voice_after_s(self, start: float, end: float) -> tuple[float, float | None] | None:
        """How long after the "s" that starts the word over [``start``, ``end``] s (a recogniser's word
        times) its voice begins: (seconds until the band of 100 Hz-1 kHz comes within 12 dB of its loudest
        after the "s", seconds until the signal is voiced: periodic at a pitch of 50-400 Hz for 15 ms; None
        where it never is). An "s" followed by a stop ("score", "stop") leaves the closure and the burst
        between them, 40-100 ms; one followed by a voiced sound ("slower", "six") runs into it at once.
        None (no opinion) where no "s" of GAP_S_MIN starts the word within 0.1 s of ``start``, or where the
        "s" or the voice after it stands less than GAP_CLEAR_DB over the floor of the 1.5 s before the
        word (in noise the gap is not measured: the closure fills with it)."""
        win, hop = self._GAP_WIN, self._GAP_HOP
        a = int(round((start - 0.08) * RATE))
        x, _ = self.segment(a, int(round(min(end, start + 0.45) * RATE)))
        floor_x, _ = self.segment(int(round((start - 1.5) * RATE)), int(round(start * RATE)))
        if len(x) < win + 40 * hop or len(floor_x) < win + 20 * hop:
            return None

        def bands(v: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:  # total, 100 Hz-1 kHz, over 3 kHz (dB)
            frames = np.lib.stride_tricks.sliding_window_view(v.astype(np.float64), win)[::hop] * np.hanning(win)
            power = np.abs(np.fft.rfft(frames, axis=1)) ** 2
            freqs = np.fft.rfftfreq(win, 1.0 / RATE)
            db = lambda p: 10 * np.log10(p + 1.0)  # noqa: E731
            return (db(power.sum(axis=1)), db(power[:, (freqs >= 100) & (freqs < 1000)].sum(axis=1)),
                    db(power[:, freqs >= 3000].sum(axis=1)))

        total, low, high = bands(x)
        fric = (high - low > 3.0) & (total > total.max() - 40.0)
        need = int(round(self.GAP_S_MIN * RATE / hop))
        runs = np.flatnonzero(np.diff(np.concatenate([[0], fric.astype(np.int8), [0]])))  # run starts, ends
        found = [(s, e) for s, e in zip(runs[::2], runs[1::2]) if e - s >= need]
        if not found or found[0][0] * hop > int(0.18 * RATE) or found[0][1] >= len(low) - 4:
            return None  # no "s" near the word's start (0.08 s of lead-in + 0.1 s), or nothing after it
        s0, e = found[0]
        _, floor_low, floor_high = bands(floor_x)
        loudest = float(low[e:].max())
        if (np.median(high[s0:e]) < np.percentile(floor_high, 10) + self.GAP_CLEAR_DB[0]
                or loudest < np.percentile(floor_low, 10) + self.GAP_CLEAR_DB[1]):
            return None
        low_gap = int(np.argmax(low[e:] >= loudest - 12.0))
        # voicing: each frame's normalised autocorrelation at its best pitch period, over 32 ms centred on it
        pad = np.zeros((self._GAP_VOICE_N - win) // 2)
        voicing = self._periodicity(np.concatenate([pad, x.astype(np.float64), pad]), self._GAP_VOICE_N, hop)
        if voicing is None:
            return None
        periodic = voicing[0][: len(low)]
        voiced = (periodic >= 0.5) & (low >= loudest - 20.0)
        k = int(round(0.015 * RATE / hop))
        held = np.flatnonzero(np.convolve(voiced.astype(np.int32), np.ones(k, dtype=np.int32), mode="valid") == k)
        held = held[held >= e - 4]
        return low_gap * hop / RATE, (float(held[0] - e) * hop / RATE if len(held) else None)

    def echo_level_db(self, a: float, b: float) -> float | None:
        """dB of what the echo canceller removed over [a, b] s, relative to what it left there (the
        output): how loud the game's own speech was under a word. None where no canceller ran."""
        if self.echo is None:
            return None
        x, _ = self.segment(int(a * RATE), int(b * RATE))
        e, _ = self.segment(int(a * RATE), int(b * RATE), echo=True)
        if not len(x):
            return None
        removed, left = (float(np.mean(v.astype(np.float64) ** 2)) + 1.0 for v in (e, x))
        return float(10 * np.log10(removed / left))

    def active_after(self, t: float, min_ms: int = 20) -> bool:
        """Whether speech-like energy (over the recent floor) lasts ``min_ms`` somewhere after ``t``."""
        e_recent, _ = self.energy_db(self.end - 3 * RATE, self.end)
        e, _ = self.energy_db(int(t * RATE), self.end)
        if len(e) < min_ms or len(e_recent) == 0:
            return False
        floor, peak = float(np.percentile(e_recent, 10)), float(e_recent.max())
        thr = max(floor + 9.0, peak - 30.0)
        above = (e > thr).astype(np.int32)
        return bool((np.convolve(above, np.ones(min_ms, dtype=np.int32), mode="valid") == min_ms).any())

    BURST_WHOLE = True  # burst_onset: where no rise is near the burst's start, the first one in the whole burst

    def burst_onset(self, now: float, max_len: float = 0.9) -> tuple[float, float] | None:
        """Onset and end of the last speech burst before ``now`` if it is isolated (for partials)."""
        b = int(now * RATE)
        a = b - int((max_len + 0.5) * RATE)
        e, first = self.energy_db(a, b)
        if len(e) < 100:
            return None
        floor = float(np.percentile(e, 10))
        peak = float(e.max())
        if peak - floor < 25.0:
            return None  # noisy: bursts are ill-defined here; the final result's timing is safer
        thr = max(floor + 9.0, peak - 30.0)
        above = np.flatnonzero(e > thr)
        last = int(above[-1])
        # Walk back over gaps shorter than 200 ms (stop closures, the pause in "snap pool").
        i = last
        k = len(above) - 1
        while k > 0 and above[k] - above[k - 1] < 200:
            k -= 1
        i = int(above[k])
        if i == 0 or (last - i) / 1000.0 > max_len:
            return None  # speech runs back past the window: not an isolated call
        start = first + i * self.HOP
        latest = (first + last * self.HOP) / RATE
        onset = self.refine_onset(start / RATE, latest=latest, before=0.05, after=0.05)
        if onset is None and self.BURST_WHOLE:
            # no rise near where the burst starts: in pink noise its walk back runs on over the noise's own
            # swells (its 5 ms levels rise 9 dB over its 10th percentile), 0.1-0.2 s before the word. The
            # first rise anywhere in the burst (the high band first: the "s" of a call) is its start.
            onset = self.refine_onset(start / RATE, latest=latest, before=0.05, after=latest - start / RATE)
        return (onset if onset is not None else start / RATE, (first + last * self.HOP + self.WIN) / RATE)

    def fricative_onset(self, heard: float, earliest: float = 0.9, latest: float = 0.2) -> float | None:
        """Where the word that ended near ``heard`` (s) began: the start of its loudest high-band
        stretch (the "s" of "snap") in [heard - earliest, heard - latest], or None when nothing
        there stands 6 dB over the high band's floor before it."""
        e, first = self.energy_db(int((heard - earliest) * RATE), int((heard - latest) * RATE), high=True)
        floor_db, _ = self.energy_db(int((heard - earliest - 0.5) * RATE), int((heard - earliest) * RATE), high=True)
        if len(e) < 40 or len(floor_db) == 0:
            return None
        smooth = np.convolve(e, np.ones(30) / 30, mode="same")
        peak_i = int(np.argmax(smooth))
        floor = float(np.percentile(floor_db, 20))
        if smooth[peak_i] - floor < 6.0:
            return None
        thr = max(floor + 3.0, float(smooth[peak_i]) - 15.0)
        i = peak_i
        while i > 0 and smooth[i - 1] > thr:
            i -= 1
        return (first + i * self.HOP) / RATE
