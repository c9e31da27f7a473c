"""What a take is matched by: DTW call templates and the voiceprint.

A call template is a take's log-mel frames; matching turns them into
noise-compensated cepstra and aligns them with subsequence DTW, so the whole
call must fit (which rejects most near-miss words). The voiceprint is a
fixed-length mean/spread of raw cepstra and pitch: the "who" signal that
cepstral mean removal would otherwise throw away.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Iterable

import numpy as np

from .. import features as F


# DTW step penalties (per-frame distance units): staying on one template frame
# or skipping one lets calls run at half to double the enrolled pace, at a cost.
STAY_PENALTY = 1.5
SKIP_PENALTY = 1.0

# Pitch moves a lot between calls (a shout is higher): a light weight only.
PITCH_WEIGHT = 3.0
# The voiceprint is taken over frames within this many dB of the loudest: the
# voice itself, not the room tone around it. At 25 dB a take's own room tone
# (about 23 dB below its peak in the fixtures) was counted whenever the
# surroundings were quieter than the take (a digitally silent mono track: the
# trim then keeps the room tone), and it pulled calls out of their player's
# reach. 18 dB: same synthetic accuracy and EER, corpus 79 -> 82 of 114 named.
VOICE_RANGE_DB = 18.0


def take_templates(y: np.ndarray) -> np.ndarray:
    """The DTW template of a trimmed take: its log-mel frames (cepstra are made per match)."""
    return F.analyse(y).log_mel


# voiceprint


def voiceprint(y: np.ndarray) -> np.ndarray:
    """A fixed-length voice signature of a trimmed stretch of speech.

    Mean and spread of the raw cepstra c1..c12 over loud frames (vocal tract and
    voice quality), plus log pitch: text-dependent calls make these stable.
    """
    feats = F.analyse(y)
    if len(feats) == 0:
        return np.zeros(25, np.float32)
    thr = max(float(feats.energy_db.max()) - VOICE_RANGE_DB, -70.0)
    loud = feats.energy_db >= thr
    m = feats.mfcc[loud][:, 1:13] if loud.sum() >= 2 else feats.mfcc[:, 1:13]
    f0 = F.pitch_hz(y, feats.energy_db, thr + 5.0)
    lf0 = math.log(f0) if f0 > 0 else math.log(120.0)
    return np.concatenate([m.mean(axis=0), m.std(axis=0), [lf0 * PITCH_WEIGHT]]).astype(np.float32)


# --------------------------------------------------------------------------
# DTW


def frame_cost(x: np.ndarray, t: np.ndarray) -> np.ndarray:
    # c0 (loudness contour) is left out: noise and distance to the mic move it
    # far more than the word or the speaker do (measured: 1 of 54 held-out calls
    # within threshold with it, 15 without, before margins)
    x, t = x[:, 1:], t[:, 1:]
    xx = np.sum(x * x, axis=1)[:, None]
    tt = np.sum(t * t, axis=1)[None, :]
    return np.sqrt(np.maximum(xx + tt - 2.0 * F.matmul(x, t.T), 0.0)).astype(np.float32)


def dtw_distance(x: np.ndarray, t: np.ndarray) -> float:
    """Whole-to-whole alignment cost of log-mel ``x`` against log-mel template ``t``."""
    bank = TemplateBank([("", "", t)])
    return float(bank.match_log_mel(x, None, anchored=True)[0].distance)


@dataclass(frozen=True)
class Hit:
    """Best placement of one template inside the input (frames [start, end])."""

    index: int
    player: str
    phrase: str
    distance: float
    start: int
    end: int


def heard_cepstra(t: np.ndarray, gain: np.ndarray | np.floating | float, top: float, floor: np.ndarray | None,
                   range_nats: float = F.RANGE_NATS) -> np.ndarray:
    """Cepstra of log-mel template frames ``t`` at ``gain`` as heard over background ``floor`` (no mean
    removed): ``F.compensate``, then the bands limited to ``range_nats`` under ``top`` (the input's
    loudest band) and just over the background, as ``F.call_cepstra`` does to the input."""
    t = F.compensate(t, gain, floor)
    fl = np.full(F.N_MELS, top - range_nats, np.float32)
    if floor is not None:
        fl = np.maximum(fl, floor + 0.9)
    return F.matmul(np.maximum(t, fl[None, :]).astype(np.float32), F._dct().T)


class TemplateBank:
    """All templates of all players stacked, so one DTW pass scores them all.

    Templates are kept as log-mel frames and turned into cepstra per query,
    after adding the query's background noise to them (``features.compensate``).
    Steps advance the template by 0, 1 or 2 frames per input frame (slope 0-2),
    so each input frame depends only on the previous one and a whole input
    frame is one vectorised update over every template frame.
    """

    def __init__(self, templates: Iterable[tuple[str, str, np.ndarray]]):
        items = [(p, ph, np.asarray(m, np.float32)) for p, ph, m in templates if len(m) >= 2]
        self.players = [p for p, _, _ in items]
        self.phrases = [ph for _, ph, _ in items]
        self.lengths = np.array([len(m) for _, _, m in items], dtype=np.int64)
        self.log_mel = (np.concatenate([m for _, _, m in items]) if items
                        else np.zeros((0, F.N_MELS), np.float32))
        ends = np.cumsum(self.lengths)
        self.first = ends - self.lengths
        # every template's F.peak_level at once (the same values: the loudest of its frames' levels)
        self.peaks = (np.maximum.reduceat(F.frame_levels(self.log_mel), self.first).astype(np.float32)
                      if items else np.zeros(0, np.float32))
        self.last = ends - 1
        m = len(self.log_mel)
        self._is_first = np.zeros(m, bool)
        self._is_first[self.first] = True
        self._is_second = np.zeros(m, bool)
        self._is_second[self.first[self.lengths > 1] + 1] = True

    def __len__(self) -> int:
        return len(self.players)

    def cepstra(self, peak: float, top: float, floor: np.ndarray | None) -> np.ndarray:
        """Every template frame's cepstra, gain-matched to ``peak`` and noise-compensated."""
        gains = np.repeat(peak - self.peaks, self.lengths)[:, None]
        c = heard_cepstra(self.log_mel, gains, top, floor)
        means = np.add.reduceat(c, self.first, axis=0) / self.lengths[:, None]
        return (c - np.repeat(means, self.lengths, axis=0)).astype(np.float32)

    def match_log_mel(self, log_mel: np.ndarray, floor: np.ndarray | None = None,
                      anchored: bool = False) -> list[Hit]:
        """Match a stretch of log-mel frames heard over background ``floor``."""
        if len(self.players) == 0:
            return []
        x = F.call_cepstra(log_mel, floor)
        if len(log_mel) == 0:
            return self.match(x, x, anchored)
        t = self.cepstra(F.peak_level(log_mel), float(log_mel.max()), floor)
        return self.match(x, t, anchored)

    def match(self, x: np.ndarray, frames: np.ndarray, anchored: bool = False) -> list[Hit]:
        """Best placement of each template (cepstra ``frames``) in ``x`` (mean cost per input frame).

        ``anchored`` forces the match to start at input frame 0 and end at the
        last one (whole-to-whole); otherwise it may start and end anywhere.

        Per input frame this is a dozen numpy operations over every template
        frame at once: the accumulated cost and the path's start frame live in
        one (2, m + 2) array (two padding columns in front), so the diagonal
        and skip predecessors are views, not copies, and one ``where`` moves
        both; the template boundaries are fixed penalty vectors instead of
        masked assignments; the best end per template is chosen after the
        loop from every frame's template-end costs at once.
        """
        n, k = len(x), len(self.players)
        if k == 0:
            return []
        inf = np.float32(1e9)
        if n == 0:
            return [Hit(i, self.players[i], self.phrases[i], float(inf), 0, 0) for i in range(k)]
        cost = frame_cost(np.asarray(x, np.float32), frames)
        m = cost.shape[1]
        # no diagonal step into a template's first frame, no skip into its first two
        diag_pen = np.where(self._is_first, inf, np.float32(0.0)).astype(np.float32)
        skip_pen = np.where(self._is_first | self._is_second, inf, np.float32(SKIP_PENALTY)).astype(np.float32)
        stay_pen = np.float32(STAY_PENALTY)
        firsts = np.nonzero(self._is_first)[0]
        cur = np.zeros((2, m + 2), np.float32)  # row 0: cost, row 1: start frame (exact in float32)
        cur[0] = inf
        nxt = cur.copy()
        end_cost = np.empty((n, k), np.float32)
        end_start = np.empty((n, k), np.float32)
        last = self.last + 2
        # one set of work rows for the whole loop: no array is allocated per input frame
        diag, skip, stay, later = (np.empty(m, np.float32) for _ in range(4))
        take_diag, skip_first = np.empty(m, bool), np.empty(m, bool)
        for i in range(n):
            c, s = cur[0], cur[1]
            np.add(c[1:-1], diag_pen, out=diag)
            np.add(c[:-2], skip_pen, out=skip)
            np.add(c[2:], stay_pen, out=stay)
            # the cheapest step (ties go diagonal, then skip, then stay)
            np.less_equal(skip, stay, out=skip_first)
            np.minimum(skip, stay, out=later)
            np.less_equal(diag, later, out=take_diag)
            np.copyto(later, diag, where=take_diag)
            np.add(cost[i], later, out=nxt[0, 2:])
            start = nxt[1, 2:]  # the path's start frame travels with the step taken
            np.copyto(start, s[2:])
            np.copyto(start, s[:-2], where=skip_first)
            np.copyto(start, s[1:-1], where=take_diag)
            if not anchored or i == 0:
                nxt[0, firsts + 2] = cost[i, firsts]
                nxt[1, firsts + 2] = i
            end_cost[i] = nxt[0, last]
            end_start[i] = nxt[1, last]
            cur, nxt = nxt, cur
        starts = end_start.astype(np.int64)
        span = np.arange(n)[:, None] - starts + 1
        norm = end_cost / span
        ok = (span <= 2 * self.lengths + 2) & (end_cost < inf / 2)
        if anchored:
            ok[:-1] = False
        norm = np.where(ok, norm, np.inf)
        at = np.argmin(norm, axis=0)  # the first frame with the lowest cost, as a running minimum keeps
        cols = np.arange(k)
        found = ok[at, cols]
        best = np.where(found, norm[at, cols], float(inf))
        return [Hit(j, self.players[j], self.phrases[j], float(best[j]),
                    int(starts[at[j], j]) if found[j] else 0, int(at[j]) if found[j] else 0) for j in range(k)]
