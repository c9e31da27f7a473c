"""Near misses: a word that differs from the call in its closing sounds ("snack" for "snap")."""

from __future__ import annotations

import math
from typing import Sequence

import numpy as np

from .. import features as F
from .templates import frame_cost, heard_cepstra
from .ties import aligned_path

# near misses: the closing sounds of the call
#
# A near-miss word ("snack" for "snap") differs from the call in one short stretch,
# and the template's mean cost over the whole word hides it: the rest fits as
# well as a real call. So the call's parts are compared one by one, with a
# wider range of level than the match (the closing consonant lies at the edge
# of the match's 30 dB), and the worst part of each half is set against the same
# measure between the player's own takes (each take against the others): no word
# list and no language, only the player's takes. A call is another word when its
# second half fits far worse than that, while its first half fits like a call and
# is not the worse half (a fit loose all through is left to the template's own
# threshold: calls in babble, Animal Snap's held-out "meow"). Ratios to the lines
# (second half; first half): the corpus's six clean "snack"s 2.25-2.88; 1.89-2.40,
# second/first 1.02-1.53; every call heard on the corpus with its first half under
# CODA_HEAD_MAX at most 2.09 (cara's clean "snap"); calls over CODA_LIMIT: finn's
# "snap pool" in babble 4.43; 6.5, Animal Snap's "meow" 3.63; 3.50 and "moo" 2.69;
# 4.04, a one-mic overlap's "snap" 2.24; 2.89 (second/first 0.78). Margins: 3-5% on
# CODA_LIMIT, 4-7% on CODA_OVER_HEAD (0.91: a babble call misread), 17-20% on
# CODA_HEAD_MAX, all on synthetic voices. Not caught: a "slap" (it differs at the
# start), a "snack" in pink noise at 20 dB (its end is under the noise: 1.35).
# Contrast words: a near miss that differs at the start ("slap") is caught by the player's own takes
# of it. Enrollment asks for CONTRAST_TAKES of each word listed for the call word; a word heard as a
# call that some player's takes of a contrast word fit at under CONTRAST_RATIO of the DTW cost of the
# best-fitting call take (any player's) is that word (``Voices.contrast``). The same voice saying both
# words cancels what the room, the mic and the voice do to one template's cost alone; a ratio, not a
# difference, because a call past full scale fits every take badly (costs near 5, against 1.5-2.5).
# Measured on synthetic voices (six fixture players, 3 "slap" takes each, rendered as their enrollment
# takes; a scratch driver at the true spans, docs/listening.md, "Thirtieth round"): the corpus's 106
# "snap" calls 0.97 and over (a hard-clipped call, then one-mic overlaps), the no-call hour's 106
# "slap"s 0.90 and under, all but one under 0.85. "nap" is no contrast word: it hides inside "snap",
# and its takes fit calls as well as they fit a "nap".
CONTRAST_WORDS: dict[str, tuple[str, ...]] = {"snap": ("slap",)}
CONTRAST_TAKES = 3
CONTRAST_RATIO = 0.85
CODA_RANGE_DB = 50.0  # dB of level kept under the loudest band (the match keeps 30)
CODA_PARTS = 8  # the template is cut into this many parts of equal length
CODA_FROM = 0.5  # the "second half": parts from this fraction of the template on
CODA_LIMIT = 2.15  # worst second-half part over the player's line: more is no call ...
CODA_OVER_HEAD = 0.95  # ... when it is also this much worse than the worst first-half part (over its line)
CODA_HEAD_MAX = 2.9  # ... and that first half fits like a call (over its line; more: the whole word is loose)


def part_costs(log_mel: np.ndarray, floor: np.ndarray | None, templates: Sequence[np.ndarray]) -> np.ndarray:
    """Mean cost per part (CODA_PARTS of each template) along each template's best placement in
    ``log_mel`` (as ``TemplateBank.match``), the lowest over ``templates`` per part.

    Cepstra as ``features.call_cepstra`` and ``heard_cepstra``, but CODA_RANGE_DB deep.
    """
    rng = CODA_RANGE_DB * math.log(10.0) / 10.0
    x = F.call_cepstra(log_mel, floor, rng)
    peak, top = F.peak_level(log_mel), float(log_mel.max())
    best = np.full(CODA_PARTS, np.inf)
    for t in templates:
        c = heard_cepstra(t, peak - F.peak_level(t), top, floor, rng)
        cost = frame_cost(x, (c - c.mean(axis=0)).astype(np.float32))
        path = np.array(aligned_path(cost))
        part = np.minimum(CODA_PARTS - 1, CODA_PARTS * path[:, 1] // len(t))
        sums = np.bincount(part, weights=cost[path[:, 0], path[:, 1]], minlength=CODA_PARTS)
        n = np.bincount(part, minlength=CODA_PARTS)
        best = np.minimum(best, np.where(n > 0, sums / np.maximum(n, 1), np.inf))
    return best


def coda_costs(log_mel: np.ndarray, floor: np.ndarray | None, templates: Sequence[np.ndarray]) -> tuple[float, float]:
    """(worst first-half part, worst second-half part) of ``part_costs``."""
    parts = part_costs(log_mel, floor, templates)
    k = int(round(CODA_FROM * CODA_PARTS))
    return float(parts[:k].max()), float(parts[k:].max())


def coda_line(templates: Sequence[np.ndarray]) -> tuple[float, float]:
    """The player's own (first-half, second-half) line: the worst of each take against the others."""
    pairs = [coda_costs(t, None, [u for j, u in enumerate(templates) if j != i]) for i, t in enumerate(templates)]
    return max(p[0] for p in pairs), max(p[1] for p in pairs)
