"""Enrollment takes: cutting a recording into takes, trimming them, and checking each one.

A take that is too quiet, clipped, too short or long, too noisy, or unlike the
player's other takes is refused with a reason a player can act on (enroll
speaks it and asks again), so a profile is never built from a bad take.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np

from .. import features as F
from .templates import dtw_distance, take_templates

POOL_SUFFIX = " pool"
MIN_CALL_TAKES = 5
MIN_POOL_TAKES = 3


def pool_phrase(word: str) -> str:
    """The pool call for a call word: "snap pool" whatever the player's own call, as the rules hear it.

    In Animal Snap "snap pool" claims the pool for every player; a player who enrolled "woof" was asked
    for "woof pool", which no variant takes, so their pool claims were never named."""
    return f"snap{POOL_SUFFIX}"


@dataclass(frozen=True)
class Take:
    """One enrollment take, trimmed to the spoken call (float audio at 16 kHz)."""

    phrase: str
    audio: np.ndarray
    source: str = ""  # file name or "take 3", for messages


@dataclass(frozen=True)
class TakeProblem:
    """Why a take was refused, in words a player can act on."""

    code: str  # quiet, clipped, short, long, noisy, unlike, silent
    reason: str


SPLIT_CONTEXT = 8000  # samples (0.5 s) of the recording kept each side of a take by split_takes


def split_takes(x: np.ndarray, rate: int = F.RATE) -> list[np.ndarray]:
    """Every voiced stretch of a recording, with the quiet around it (up to 0.5 s each side,
    never past half-way to the next stretch).

    Each part goes on to ``check_take``, which trims it itself: its threshold
    comes from the part's own background, so a part cut tight (the old 30 ms)
    had no background, the threshold rose to the word's weak ends, and
    "snap" lost its "p" (templates ~130 ms shorter than a one-take file's,
    and one-mic ties found 7/18 instead of 11/18 with such a profile).
    """
    y = F.resample(x, rate)
    feats = F.analyse(y)
    thr = F.vad_threshold(feats.energy_db)
    spans = [(F.refine_onset(y, s, thr), F.refine_end(y, e, thr))
             for s, e in F.voiced_segments(feats.energy_db, thr, min_frames=5, gap_frames=30)]
    out = []
    for k, (on, end) in enumerate(spans):
        lo = max(0, on - SPLIT_CONTEXT, (spans[k - 1][1] + on) // 2 if k else 0)
        hi = min(len(y), end + SPLIT_CONTEXT, (end + spans[k + 1][0]) // 2 if k + 1 < len(spans) else len(y))
        out.append(y[lo:hi])
    return out


def trim(x: np.ndarray, rate: int = F.RATE) -> tuple[np.ndarray, float, float]:
    """The main voiced stretch of a take, its level (dBFS) and SNR estimate (dB)."""
    y = F.resample(x, rate)
    feats = F.analyse(y)
    if len(feats) == 0:
        return y[:0], -120.0, 0.0
    thr = F.vad_threshold(feats.energy_db)
    segs = F.voiced_segments(feats.energy_db, thr, min_frames=3, gap_frames=30)
    if not segs:
        return y[:0], float(feats.energy_db.max()), 0.0
    # the loudest stretch is the call; anything else is a cough or a chair
    s, e = max(segs, key=lambda r: float(feats.energy_db[r[0]:r[1]].max()))
    on = F.refine_onset(y, s, thr)
    end = F.refine_end(y, e, thr)
    voiced = feats.energy_db[s:e]
    level = float(np.percentile(voiced, 90))
    outside = np.concatenate([feats.energy_db[: max(0, s - 3)], feats.energy_db[e + 3:]])
    floor = float(np.percentile(outside, 50)) if len(outside) >= 5 else F.FLOOR_DB
    return y[max(0, on - 480): min(len(y), end + 481)], level, level - floor


AUDIBLE_DB = 9.0  # dB over a take's own background (its median frame) that is a sound, not room noise
AUDIBLE_FRAMES = 5  # and for this many 10 ms frames: a click is shorter


def audible_level(x: np.ndarray) -> float | None:
    """The level (dBFS, 90th percentile) of what stands AUDIBLE_DB above the take's own background for
    AUDIBLE_FRAMES or more, or None when nothing does (a muted, dead or wrong microphone).

    A word too faint for the speech detector (a take at -57 dBFS, 12 dB over the room) is still heard:
    it is a player to ask to speak up, not a microphone to check."""
    energy = F.frame_energy_db(F.frames(F.to_float(x)))
    if len(energy) == 0:
        return None
    segs = F.voiced_segments(energy, float(np.median(energy)) + AUDIBLE_DB, min_frames=AUDIBLE_FRAMES,
                             gap_frames=5)
    if not segs:
        return None
    return float(np.percentile(np.concatenate([energy[s:e] for s, e in segs]), 90))


def check_take(x: np.ndarray, rate: int = F.RATE, phrase: str = "snap") -> tuple[np.ndarray, list[TakeProblem]]:
    """Trim a take and list what is wrong with it (empty list: a good take).

    The "unlike the others" check needs the other takes, so it is done by
    ``check_consistency``.
    """
    raw = F.to_float(x) if rate == F.RATE else F.resample(x, rate)
    problems: list[TakeProblem] = []
    full = np.abs(raw) >= 0.999
    if full.sum() >= 3:
        problems.append(TakeProblem("clipped", "that take was too loud and clipped: "
                                    "move back from the microphone or speak a little softer"))
    y, level, snr = trim(raw)
    dur = len(y) / F.RATE - 0.06
    if len(y) == 0 and level >= -45.0:
        problems.append(TakeProblem("noisy", "too much background noise to hear the call: "
                                    "find a quieter moment and try again"))
        return y, problems
    if len(y) == 0 or level < -55.0:
        heard = audible_level(raw)
        if heard is None:
            problems.append(TakeProblem("silent", "nothing was heard: check the microphone "
                                        "and say the call after the beep"))
        else:  # counted as a refused take, not towards "the microphone is muted" (SILENT_IN_A_ROW)
            problems.append(TakeProblem("quiet", f"that take was too quiet ({level if len(y) else heard:.0f} "
                                        "dBFS): speak up or move closer to the microphone"))
        return y, problems
    if level < -40.0:
        problems.append(TakeProblem("quiet", f"that take was too quiet ({level:.0f} dBFS): "
                                    "speak up or move closer to the microphone"))
    if snr < 12.0:
        problems.append(TakeProblem("noisy", f"too much background noise ({snr:.0f} dB above "
                                    "the noise): find a quieter moment and try again"))
    longest = 2.5 if phrase.endswith(POOL_SUFFIX) else 1.6
    if dur < 0.12:
        problems.append(TakeProblem("short", "that take was too short: say the whole word"))
    elif dur > longest:
        problems.append(TakeProblem("long", f"that take was too long ({dur:.1f} s): "
                                    f"say just '{phrase}', once"))
    return y, problems


SPEECH_MIN_SECONDS = 8.0  # of voice in a speech sample (enroll asks for 20 s of talking)
SPEECH_MIN_SPAN = 12.0  # dB between a speech sample's loudest frames and its quiet ones: less is a steady sound


def check_speech(x: np.ndarray) -> str | None:
    """What is wrong with a free-speech sample (16 kHz float), as a reason to say, or None."""
    raw = F.to_float(x)
    if int((np.abs(raw) >= 0.999).sum()) >= 0.001 * max(len(raw), 1) + 3:
        return "it was too loud and clipped: move back from the microphone or speak a little softer"
    energy = F.frame_energy_db(F.frames(raw))
    if len(energy) == 0 or float(energy.max()) < -55.0:
        return "nothing was heard: check the microphone and talk after the beep"
    voiced, span = F.voiced_speech(raw)
    if span < SPEECH_MIN_SPAN:
        return ("only a steady sound was heard, no talking: talk after the beep, away from any hum, fan or "
                "hiss near the microphone")
    level = float(np.percentile(energy, 95))
    if level < -40.0:
        return f"it was too quiet ({level:.0f} dBFS): speak up or move closer to the microphone"
    seconds = len(voiced) / F.RATE
    if seconds < SPEECH_MIN_SECONDS:
        return (f"only {seconds:.1f} seconds of talking were heard, {SPEECH_MIN_SECONDS:.0f} are needed: "
                "keep talking until the recording ends")
    return None


def check_consistency(takes: Sequence[Take]) -> dict[int, TakeProblem]:
    """Takes of one phrase that are far unlike the rest (index -> problem).

    A take is refused when its median DTW distance to the other takes is more
    than 1.6 times the typical one: a different word, a cough, two words.
    """
    if len(takes) < 3:
        return {}
    mats = [take_templates(t.audio) for t in takes]
    n = len(mats)
    d = np.zeros((n, n))
    for i in range(n):
        for j in range(i + 1, n):
            d[i, j] = d[j, i] = 0.5 * (dtw_distance(mats[i], mats[j]) + dtw_distance(mats[j], mats[i]))
    med = np.array([np.median(np.delete(d[i], i)) for i in range(n)])
    typical = float(np.median(med))
    bad = {}
    for i in range(n):
        if med[i] > 1.6 * typical and med[i] - typical > 2.0:
            bad[i] = TakeProblem("unlike", f"that take sounded unlike your other takes of "
                                 f"'{takes[i].phrase}': say it the way you will say it in the game")
    return bad
