"""Two players' calls at once on one microphone: the pair of templates that fits the mixture.

Mixed calls fit no single template, but they fit the two players' templates
mixed (log-add) at the right offset; the offset is refined by a joint
alignment, and each caller must fit their place better than a stand-in voice.
``Voices.tie`` drives the search; the pieces live here.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .. import features as F
from .templates import SKIP_PENALTY, STAY_PENALTY, frame_cost, heard_cepstra


# Ties on one microphone: two players' calls mixed fit no single template, but
# they fit the two players' templates mixed (log-add) at the right offset.
# Every enrolled player is a candidate caller: a caller's single-template fit says little about
# an overlap (on the fixtures the partner ranked 4th-5th of 6 by single template in 7 of 55 overlap
# stretches, e.g. finn under emma behind bob and dev), while over all pairs the true pair fit best
# in 54 of 55 (the other: bob with emma 50 ms apart, where alice-bob fits as well, 1.39 vs 1.40).
TIE_MAX_OFFSET = 22  # frames (220 ms): calls further apart are two stretches anyway
TIE_STEP = 3  # frames between the offsets tried first
TIE_PAIRS = 2  # pairs tried at every TIE_STEP after the coarser first pass
# The pair's offset refined by a joint alignment of both templates (joint_offset): within this many
# frames of the mixture's offset, the second caller mixed this many dB louder or quieter. Reach 1-4
# measured alike on the fixtures. Gains (-6, -3, 0, 3, 6) put 2 more offsets within 5 ms (players
# 16/18, corpus 13/15) at 5x the work, but the 0 ms alice-bob tie went from 30 to 35 ms late (15 ms
# at 0 dB alone), past the 30 ms the tests allow; kept at 0 dB.
# The best pair's neighbouring offsets are tried in both orders (each around that order's best offset),
# not only in the order of the best mixture found so far: two calls 0-2 frames apart fit either way
# round about as well, and a caller may fit their place only in the order that matches the audio.
TIE_BOTH_ORDERS = True
TIE_JOINT_REACH = 2
TIE_JOINT_GAINS_DB = (0.0,)
# frames (2 s): a longer stretch (chatter) is searched only this far around the best single template's
# hit. The cost matrix is stretch x every pair's mixtures: a 16 s stretch of chatter took 200 MB more.
TIE_WINDOW = 200
# The pair must fit this much better than the best single template. Measured with every pair
# tried, on the enrolled engine's and the combined engine's stretches of players/overlap,
# heldout, unknown, nearmiss and the whole corpus (scratch analysis, 557 stretches): real
# overlaps 0.26-0.79 (similar voices, cara and dev, 0.71-0.79: each alone already fits the
# other's template nearly as well); lone calls of enrolled players >= 0.97 where both callers of
# the best pair would be named, noises in a quiet room 0.88-0.93; lone calls whose callers the
# evidence check rejects down to 0.72 (a stranger).
TIE_GAIN = 0.80
TIE_R_LIMIT = 1.6  # ...and this well against the larger of the two thresholds
# A stretch a single template fits this well is one call: no pair fits under TIE_GAIN times it
# (the best pair of a real overlap: ratio 0.62; 0.62 / 0.80 = 0.78). Two similar voices at once
# can fit one of them this well (cara and dev 0 ms apart: 0.99).
TIE_SINGLE_OK = 0.78
TIE_SINGLE_MAX = 2.7  # ...and one no template comes near is no call at all (overlaps: 1.1-2.6)
# Each caller of a pair must be that player, not the voice nearest to a stranger's
# (``Voices._tie_callers``). Stand-in ratio: the pair's distance over the best distance with
# another voice in the caller's place (1 = it fits as well); the other voices are the other
# players, the announcer, and the caller's own template warped along frequency (another
# person saying the same word, so the test does not depend on who else enrolled: with alice
# and bob alone, bob stood in for a stranger with only the announcer to compare with).
# Own-part ratio: the caller's half of the mixture against their enrolled threshold.
# A caller is named when they fit their place clearly better than a near voice (stand-in
# with formants 8% off <= TIE_CLEAR), or when their own part and the stand-in ratio with
# formants 12% off are within the boundary on average (mean <= TIE_CALLER). Measured on
# bench_voices ties' material (players/overlap and the corpus overlaps) with all six players
# enrolled, each caller in turn not enrolled, and two players only (each caller with each
# player who did not call, and both callers): 171 of 184 real callers named (160 by the
# first test, 152 by the second), none of 78 players standing in for a stranger (lowest:
# 0.907 and 1.013, so the margins are thin).
TIE_CLEAR = 0.9
TIE_CALLER = 1.0
TIE_NEAR_WARPS = (0.92, 1.08)
TIE_FAR_WARPS = (0.88, 1.12)


def warped(t: np.ndarray, alpha: float) -> np.ndarray:
    """Log-mel template ``t`` as a voice with formants ``alpha`` times as high would say it.

    The vocal-tract length is what the templates know of a voice: the caller's
    own word, warped along frequency, is another person saying it.
    """
    peaks = F.mel_edges()[1:-1]  # each band's centre on the mel scale
    src = F.hz_to_mel(F.mel_to_hz(peaks) / alpha)  # where each band's energy comes from
    pos = np.interp(src, peaks, np.arange(F.N_MELS, dtype=np.float64))
    lo = np.floor(pos).astype(np.int64)
    hi = np.minimum(lo + 1, F.N_MELS - 1)
    w = (pos - lo).astype(np.float32)
    return (t[:, lo] * (1 - w) + t[:, hi] * w).astype(np.float32)


def mix_parts(ta: np.ndarray, tb: np.ndarray, d: int) -> tuple[np.ndarray, np.ndarray]:
    """Log-mel templates ``ta`` (from frame 0) and ``tb`` (from frame ``d``) on one grid, quiet elsewhere."""
    quiet = np.float32(min(float(ta.min()), float(tb.min())) - 5.0)
    n = max(len(ta), d + len(tb))
    x = np.full((n, F.N_MELS), quiet, np.float32)
    y = x.copy()
    x[: len(ta)] = ta
    y[d: d + len(tb)] = tb
    return x, y


def aligned_path(cost: np.ndarray) -> list[tuple[int, int]]:
    """The (input frame, template frame) path of ``TemplateBank.match``'s best placement of one template.

    The same steps, penalties and choice of end as there, with back-pointers
    kept (the bank keeps none: it only needs distances).
    """
    n, m = cost.shape
    inf = np.float32(1e9)
    acc = np.full((n, m), inf, np.float32)
    step = np.zeros((n, m), np.int8)  # 0 stay, 1 diagonal, 2 skip, 3 start
    start = np.zeros((n, m), np.int64)
    diag_pen = np.zeros(m, np.float32)
    diag_pen[0] = inf
    skip_pen = np.full(m, SKIP_PENALTY, np.float32)
    skip_pen[:2] = inf
    for i in range(n):
        if i:
            prev = acc[i - 1]
            diag = np.concatenate([[inf], prev[:-1]]) + diag_pen
            skip = np.concatenate([[inf, inf], prev[:-2]]) + skip_pen
            stay = prev + np.float32(STAY_PENALTY)
            later = np.minimum(skip, stay)
            take_diag = diag <= later
            acc[i] = cost[i] + np.where(take_diag, diag, later)
            step[i] = np.where(take_diag, 1, np.where(skip <= stay, 2, 0))
            back = np.arange(m) - np.array([0, 1, 2, 0])[step[i]]
            start[i] = start[i - 1][np.maximum(back, 0)]
        acc[i, 0], step[i, 0], start[i, 0] = cost[i, 0], 3, i
    span = np.arange(n) - start[:, m - 1] + 1
    norm = np.where((span <= 2 * m + 2) & (acc[:, m - 1] < inf / 2), acc[:, m - 1] / span, np.inf)
    i, j = int(np.argmin(norm)), m - 1
    path = [(i, j)]
    while step[i, j] != 3 and i > 0:
        j -= (0, 1, 2)[step[i, j]]
        i -= 1
        path.append((i, j))
    return path[::-1]


def joint_offset(log_mel: np.ndarray, floor: np.ndarray | None, ta: np.ndarray, tb: np.ndarray,
                  d0: int) -> float | None:
    """The second call's start (frames after the first's) with each caller's template warped on its own.

    Matching the two templates mixed at one fixed offset lets the DTW's
    warping absorb a few frames of the offset (1-3 frames off on the
    fixtures). Here one alignment walks both templates through the stretch
    at once (``_joint_start``), with the second caller at each of
    TIE_JOINT_GAINS_DB relative to the first, and the best-fitting
    balance's start is taken. The path can only enter the second template
    on a 10 ms frame, and measured it entered early (by 0.4-0.7 frame on
    average on players/overlap and the corpus overlaps), so half a frame is
    added: offsets within 5 ms of the truth on 14/18 players' and 11/15
    corpus overlaps (was 7/18 and 2/15 exact, 16 and 9 within 10 ms).
    """
    fits = [_joint_start(log_mel, floor, ta, tb + np.float32(g * math.log(10.0) / 10.0), d0)
            for g in TIE_JOINT_GAINS_DB]
    _dist, start = min(fits, key=lambda f: f[0])
    return None if start is None else start + 0.5


def _joint_start(log_mel: np.ndarray, floor: np.ndarray | None, ta: np.ndarray, tb: np.ndarray,
                 d0: int) -> tuple[float, int | None]:
    """(mean cost, second template's start in frames after the first's) of the best joint path.

    Each frame of the input is compared with the mixture of the
    first template's frame ``a`` and the second's frame ``b`` (``b`` = "not
    started yet" or "ended" are the other alone), each advancing 0-2 frames
    per input frame with the bank's penalties, so the second caller's start
    is where the path enters their first frame. Searched within
    TIE_JOINT_REACH frames of ``d0``; (inf, None) when no path fits.
    """
    reach = TIE_JOINT_REACH
    la, lb = len(ta), len(tb)
    if la < 3 or lb < 3 or len(log_mel) < 3:
        return math.inf, None
    inf = np.float32(1e9)
    quiet = np.full((1, F.N_MELS), min(float(ta.min()), float(tb.min())) - 5.0, np.float32)
    rows = np.vstack([ta, quiet])  # a: 0..la-1 the first template, la ended
    cols = np.vstack([quiet, tb, quiet])  # b: 0 not started, 1..lb the second template, lb+1 ended
    mix = np.logaddexp(rows[:, None, :], cols[None, :, :])
    # gain, floor and mean normalisation as the bank does for the pair mixed at d0
    ref = np.logaddexp(*mix_parts(ta, tb, d0))
    top = float(log_mel.max())
    gain = np.float32(F.peak_level(log_mel) - F.peak_level(ref))

    def ceps(t: np.ndarray) -> np.ndarray:
        return heard_cepstra(t, gain, top, floor)

    mean = ceps(ref.reshape(-1, F.N_MELS)).mean(axis=0)
    c = (ceps(mix.reshape(-1, F.N_MELS)) - mean).astype(np.float32)
    x = F.call_cepstra(log_mel, floor)
    na, nb = la + 1, lb + 2
    cost = frame_cost(x, c).reshape(len(x), na, nb)
    pen_a = np.full((3, na), inf, np.float32)
    pen_a[0, :la] = STAY_PENALTY
    pen_a[0, la] = 0.0
    pen_a[1, 1:] = 0.0
    pen_a[2, 2:] = SKIP_PENALTY
    pen_b = np.full((3, nb), inf, np.float32)
    pen_b[0, 0] = 0.0
    pen_b[0, 1: lb + 1] = STAY_PENALTY
    pen_b[0, lb + 1] = 0.0
    pen_b[1, 1:] = 0.0
    pen_b[2, 3:] = SKIP_PENALTY
    moves = [(da, db) for da in range(3) for db in range(3)]
    pens = np.stack([pen_a[da][:, None] + pen_b[db][None, :] for da, db in moves])

    def shifted(z: np.ndarray, da: int, db: int, fill: np.floating | float) -> np.ndarray:
        out = np.full_like(z, fill)
        out[da:, db:] = z[: na - da, : nb - db]
        return out

    # the moves that enter the second template's first frame: it starts at that input frame
    enter = np.array([db == 1 for _da, db in moves])[:, None, None] & (np.arange(nb) == 1)[None, None, :]
    acc = np.full((na, nb), inf, np.float32)
    st = np.zeros((na, nb), np.int64)  # the path's first input frame
    bs = np.full((na, nb), -1, np.int64)  # the input frame where the second template starts
    best, found = math.inf, None
    for i in range(len(x)):
        cand = np.stack([shifted(acc, da, db, inf) for da, db in moves]) + pens
        cst = np.stack([shifted(st, da, db, 0) for da, db in moves])
        cbs = np.where(enter, i, np.stack([shifted(bs, da, db, -1) for da, db in moves]))
        bad = enter & (np.abs(cbs - cst - d0) > reach)  # the second may start only within reach of d0
        cand = np.where(bad, inf, cand)
        k = np.argmin(cand, axis=0)
        pick = np.take_along_axis(cand, k[None], 0)[0]
        st = np.take_along_axis(cst, k[None], 0)[0]
        bs = np.take_along_axis(cbs, k[None], 0)[0]
        acc = cost[i] + pick
        # a path starts with the first template's first frame (the second not started, or starting too)
        if abs(d0) <= reach and acc[0, 1] > cost[i, 0, 1]:
            acc[0, 1], st[0, 1], bs[0, 1] = cost[i, 0, 1], i, i
        if acc[0, 0] > cost[i, 0, 0]:
            acc[0, 0], st[0, 0], bs[0, 0] = cost[i, 0, 0], i, -1
        for ea, eb in ((la - 1, lb), (la, lb), (la - 1, lb + 1)):
            if acc[ea, eb] < inf / 2 and bs[ea, eb] >= 0:
                v = float(acc[ea, eb]) / (i - st[ea, eb] + 1)
                if v < best:
                    best, found = v, int(bs[ea, eb] - st[ea, eb])
    return best, found


@dataclass(frozen=True)
class Tie:
    """Two calls overlapping in one stretch: ``second`` started ``offset`` frames later.

    A caller is None when the voice is nobody enrolled (a stranger calling at the
    same time as a player): that call is heard but named to nobody.
    """

    first: str | None
    second: str | None
    offset: float  # frames (10 ms), to half a frame
    ratio: float  # pair distance / the pair's larger threshold
    single: float  # the best single template's ratio, for comparison
    start: int  # matched frames within the input
    end: int
    # each caller's evidence (<= 1: named; Voices._tie_callers)
    evidence: tuple[float, float] = (0.0, 0.0)
