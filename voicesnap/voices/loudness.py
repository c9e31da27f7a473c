"""Calls shouted louder than the takes, or past full scale: both heard on the takes' footing.

Players enroll at a talking level and shout in a game. Two things then broke
attribution, both measured on held-out calls (``python3 -m bench.bench_voices
loud loud-real``; docs/voices.md, "Shouted and clipped calls"):

- *Level.* The speaker encoder raises quiet input to -30 dBFS but never
  lowers loud input (Resemblyzer's front end; normalising it both ways cost
  the real same-word set discrimination), so a call far louder than a
  voice's takes is another input to it: the real speakers' takes called 12
  dB louder were named 69 of 125 times instead of 116. The encoder now also
  hears such a call brought down to that voice's takes' level, and the
  closer of the two counts (a word can be loud by nature, and one real take
  13 dB over its speaker's was named only as it was): 107 of 125, strangers
  as before. A call as far under a voice's takes is heard raised to them the
  same way (12 dB quieter: 105 -> 107 of 125; the encoder's own raise to
  -30 dBFS already covers most of it).
- *Clipping.* A call driven past full scale is squared off: with as few as 5%
  of its samples clipped, no held-out call fitted its player any more. It
  cannot be unclipped, but the takes can be clipped the same way: each is
  scaled until the same share of its samples reaches full scale, clipped
  there, and learnt from again (templates, thresholds, voiceprint,
  embeddings), and the call is matched against those.

Profiles saved before the takes were kept (``profile_takes`` None) have no
level to compare with and no takes to clip, and are matched as before; the
table still tells the players that the microphone clipped.
"""

from __future__ import annotations

import math

import numpy as np

from .. import encoder as E
from .profiles import Profile, build_profile, profile_takes
from .takes import Take

FULL_SCALE = 32700 / 32768  # a 16-bit converter's clipped run sits at 32767 (or -32768)
# Share of a call's samples at full scale from which it is matched against clipped takes. A
# loud but clean call's peaks touch full scale on a few samples only; the corpus's clipped calls
# hold 39-50%.
CLIP_ADAPT = 0.02
# Shares are rounded on a grid of CLIP_RATIO steps through CLIP_BASE before adapting (... 3.5%, 5%, 7.1%,
# 10%, 14%, 20%, 28%, 40%, 57% ...): one set of clipped takes per step, each within 19% of the share
# it stands for. Even steps of 5% (before) learnt the takes again three times for the corpus's one
# clipped file (its calls rounded to 35, 40 and 45%), about 1.6 s of CPU each on the slower machine; on this grid once, and
# the same calls are named (docs/voices.md, "What the clipped path costs").
CLIP_BASE = 0.05
CLIP_RATIO = 2.0 ** 0.5
# The speaker encoder also hears a call this many dB (RMS) over or under a voice's takes (their median)
# brought to their level, in LEVEL_STEP dB steps: nearer than that, levels vary from take to take and
# call to call anyway (at 6 dB real strangers without a speech sample rose 22 -> 25 of 172).
LOUD_DB = 9.0
LEVEL_STEP = 3.0


def rms_db(y: np.ndarray) -> float:
    """RMS of float audio in dB under full scale (-inf for silence)."""
    ms = float(np.mean(np.square(y, dtype=np.float64))) if len(y) else 0.0
    return 10.0 * float(np.log10(ms)) if ms > 0 else float("-inf")


def clip_share(y: np.ndarray) -> float:
    """The share of ``y``'s samples at full scale (float audio, 1.0 = full scale)."""
    return float(np.mean(np.abs(y) >= FULL_SCALE)) if len(y) else 0.0


def clip_adaptation(y: np.ndarray) -> float | None:
    """The clip share to clip the takes to for call ``y`` (float audio, trimmed to the call): its share
    of samples at full scale rounded on the CLIP_RATIO grid, or None when under CLIP_ADAPT (not clipped)."""
    share = clip_share(y)
    if share < CLIP_ADAPT:
        return None
    return round(CLIP_BASE * CLIP_RATIO ** round(math.log(share / CLIP_BASE, CLIP_RATIO)), 4)


def level_gain_db(call_db: float, takes_db: float | None) -> float:
    """dB to bring a call at ``call_db`` to a voice whose takes sit at ``takes_db`` (0: near enough,
    or a voice saved without its takes)."""
    if takes_db is None or not np.isfinite(call_db) or abs(call_db - takes_db) < LOUD_DB:
        return 0.0
    return -round((call_db - takes_db) / LEVEL_STEP) * LEVEL_STEP


def clipped_like(y: np.ndarray, share: float) -> np.ndarray:
    """Take ``y`` driven until ``share`` of its samples pass full scale, and clipped there as the
    converter would."""
    level = float(np.quantile(np.abs(y), 1.0 - share))
    gain = 1.0 / level if level > 0.0 else 1.0
    return np.clip(y * gain, -1.0, 1.0).astype(np.float32)


def takes_level(prof: Profile) -> float | None:
    """The median RMS level (dBFS) of a profile's takes, or None when it was saved without them."""
    takes = profile_takes(prof)
    return None if not takes else float(np.median([rms_db(t.audio) for t in takes]))


def clipped_profile(prof: Profile, share: float, encoder: E.Encoder | None) -> Profile | None:
    """``prof`` learnt again from its takes clipped to ``share`` (None: saved without its takes).

    ``encoder``: the table's speaker encoder, or None when the table decides without one.
    """
    takes = profile_takes(prof)
    if takes is None:
        return None
    # the name is checked as a player's name would be; rivals' names ("<announcer> snap") are not
    out = build_profile("clipped", prof.word, [Take(t.phrase, clipped_like(t.audio, share)) for t in takes],
                        channel=prof.channel, encoder=encoder)
    out.name = prof.name
    if "speech" in prof.extra and "embeddings" in out.extra:
        # the free-speech sample's embedding as enrolled (its audio is not kept): it carries the voice
        # rather than the word, and without it strangers pass as they do with takes alone
        out.extra["speech"] = prof.extra["speech"]
    return out
