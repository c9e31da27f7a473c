"""Calls shouted louder than the takes, or past full scale: the takes driven the same way first.

Players enroll at a talking level and shout in a game. Two things then break
attribution, both measured on the fixture players' held-out calls
(``python3 -m bench.bench_voices loud``):

- *Level.* The speaker encoder raises quiet input to -30 dBFS but never
  lowers loud input (Resemblyzer's front end), so a call much louder than
  the takes is a different input to it: the held-out calls scaled to peak at
  full scale without clipping fall from cosine 0.92 to 0.84 with their own
  player, and half are named to nobody.
- *Clipping.* A call driven past full scale is squared off: with as few as 5%
  of its samples clipped, no held-out call fitted its player any more.

Both are known, simple distortions, so they can be applied to the takes as
well: each take is scaled to the call's level (and clipped at full scale if
that is where it goes), or, for a clipped call, scaled until the same share
of its samples reaches full scale and clipped there, and learnt from again
(templates, thresholds, voiceprint, embeddings). The call is then matched
against voices heard the way it was.

Profiles saved before the takes were kept (``profile_takes`` None) are not
adapted; the table still tells the players that the microphone clipped.
"""

from __future__ import annotations

import numpy as np

from .. import encoder as E
from .profiles import Profile, build_profile, profile_takes
from .takes import Take

FULL_SCALE = 32700 / 32768  # a 16-bit converter's clipped run sits at 32767 (or -32768)
# Share of a call's samples at full scale from which it is matched against clipped takes. A
# loud but clean call's peaks touch full scale on a few samples only; the corpus's clipped calls
# hold 39-50%.
CLIP_ADAPT = 0.02
CLIP_STEP = 0.05  # shares are rounded to this before adapting: one set of clipped takes per step
# A call whose RMS is this many dB over the table's takes (their median) is matched against takes
# driven to its level; level steps of LEVEL_STEP dB share one set of driven takes.
LOUD_DB = 6.0
LEVEL_STEP = 3.0

Adaptation = tuple[str, float]  # ("clipped", share of samples at full scale) or ("level", RMS dBFS)


def rms_db(y: np.ndarray) -> float:
    """RMS of float audio in dB under full scale (-inf for silence)."""
    ms = float(np.mean(np.square(y, dtype=np.float64))) if len(y) else 0.0
    return 10.0 * float(np.log10(ms)) if ms > 0 else float("-inf")


def clip_share(y: np.ndarray) -> float:
    """The share of ``y``'s samples at full scale (float audio, 1.0 = full scale)."""
    return float(np.mean(np.abs(y) >= FULL_SCALE)) if len(y) else 0.0


def adaptation(y: np.ndarray, takes_db: float) -> Adaptation | None:
    """How to drive the takes for call ``y`` (float audio, trimmed to the call), or None when it is
    neither clipped (CLIP_ADAPT) nor LOUD_DB over ``takes_db``, the table's takes' level."""
    share = clip_share(y)
    if share >= CLIP_ADAPT:
        return "clipped", max(CLIP_STEP, round(share / CLIP_STEP) * CLIP_STEP)
    level = rms_db(y)
    if level >= takes_db + LOUD_DB:
        return "level", round(level / LEVEL_STEP) * LEVEL_STEP
    return None


def driven(y: np.ndarray, how: Adaptation) -> np.ndarray:
    """Take ``y`` driven as ``how`` says: to an RMS level, or until a share of it passes full scale;
    clipped at full scale either way, as the converter would."""
    kind, value = how
    if kind == "clipped":
        level = float(np.quantile(np.abs(y), 1.0 - value))
        gain = 1.0 / level if level > 0.0 else 1.0
    else:
        gain = 10.0 ** ((value - rms_db(y)) / 20.0) if np.isfinite(rms_db(y)) else 1.0
    return np.clip(y * gain, -1.0, 1.0).astype(np.float32)


def takes_level(profiles: list[Profile]) -> float | None:
    """The median RMS level (dBFS) of every take of ``profiles``, or None when one was saved without them."""
    levels = []
    for prof in profiles:
        takes = profile_takes(prof)
        if takes is None:
            return None
        levels += [rms_db(t.audio) for t in takes]
    return float(np.median(levels)) if levels else None


def adapted_profile(prof: Profile, how: Adaptation, encoder: E.Encoder | None) -> Profile | None:
    """``prof`` learnt again from its takes driven as ``how`` says (None: saved without its takes).

    ``encoder``: the table's speaker encoder, or None when the table decides without one.
    """
    takes = profile_takes(prof)
    if takes is None:
        return None
    # the name is checked as a player's name would be; rivals' names ("<announcer> snap") are not
    out = build_profile("adapted", prof.word, [Take(t.phrase, driven(t.audio, how)) for t in takes],
                        channel=prof.channel, encoder=encoder)
    out.name = prof.name
    return out
