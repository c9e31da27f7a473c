"""Players' voices: enrollment takes, saved profiles, and who said a call.

A profile holds what the model-free spotter and attribution need, all learnt
from the player's own takes: cepstral templates of each call phrase (matched
with subsequence DTW, so the whole call must align, which rejects most
near-miss words), a voiceprint (mean/spread of raw cepstra and pitch: the
"who" signal that cepstral mean removal would otherwise throw away), and
thresholds calibrated leave-one-out among the takes themselves.

Profiles are small JSON files under ``<data dir>/players/NAME.json``, written
atomically with mode 0600 and versioned: a damaged or old file is refused
with the way out, never half-read into a wrong attribution.
"""

from __future__ import annotations

import datetime as _dt
import json
import math
import re
from dataclasses import dataclass, field, replace
from functools import lru_cache
from pathlib import Path
from typing import Iterable, Sequence

import numpy as np

from . import encoder as E
from . import features as F
from .errors import UserError
from .files import atomic_write_text, data_dir

PROFILE_VERSION = 2  # 2: voiceprint over frames within VOICE_RANGE_DB of the peak
POOL_SUFFIX = " pool"
MIN_CALL_TAKES = 5
MIN_POOL_TAKES = 3
NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9 _.-]{0,31}$")

# DTW step penalties (per-frame distance units): staying on one template frame
# or skipping one lets calls run at half to double the enrolled pace, at a cost.
STAY_PENALTY = 1.5
SKIP_PENALTY = 1.0
# Threshold = THRESHOLD_FACTOR x the worst leave-one-out distance among takes.
THRESHOLD_FACTOR = 1.35
# Takes made in one sitting agree more closely than calls in a noisy game do;
# this absolute margin (per-frame cepstral distance) allows for that.
THRESHOLD_MARGIN = 1.0
# A call is accepted when template and voice together fit (mean of the two
# distance/threshold ratios <= ACCEPT) and neither alone is far off.
R_LIMIT = 1.5
ACCEPT = 0.85  # mean of template and voice ratios (tuned on the fixtures: see docs/voices.md)
V_LIMIT = 1.25
STRONG_VOICE = 0.6  # ...or when the voice alone fits this well (and the mean <= 1)
VOICE_THRESHOLD_FACTOR = 1.6
# Takes made in one sitting agree too well; a voice is never held to less than this.
VOICE_MIN_THRESHOLD = 1.0
VOICE_SCALE_FLOOR = 1.0  # per-dimension spread never assumed smaller than this
# Pitch moves a lot between calls (a shout is higher): a light weight only.
PITCH_WEIGHT = 3.0
# The voiceprint is taken over frames within this many dB of the loudest: the
# voice itself, not the room tone around it. At 25 dB a take's own room tone
# (about 23 dB below its peak in the fixtures) was counted whenever the
# surroundings were quieter than the take (a digitally silent mono track: the
# trim then keeps the room tone), and it pulled calls out of their player's
# reach. 18 dB: same synthetic accuracy and EER, corpus 79 -> 82 of 114 named.
VOICE_RANGE_DB = 18.0
# The speaker encoder (voicesnap.encoder), when installed and every player enrolled with it:
# each voice's encoder ratio ((1 - cosine to their enrolled embeddings) / (1 - their
# threshold)) and template ratio are averaged; WHO is the voice where that fits best, and
# the call is accepted when the mean is <= ACCEPT, the encoder ratio <= 1 and the template
# within R_LIMIT. It replaces the voiceprint, which cannot tell real people apart on one
# short word. Measured with bench_voices (real same-word speakers, synthetic players: docs/voices.md).
ENC_CAP = 0.84  # a player's cosine threshold: the median leave-one-out cosine of their takes, at most this
# With a free-speech sample (enroll's "talk for a while" step, Encoder.embed_speech), each
# centroid mixes the takes' direction with the speech's: the takes carry the word, the speech
# the voice. Real same-word set, 20 s of each speaker's other sentences: strangers accepted at
# a fixed cosine line of 0.80 fell from 13% to 1.2% with 93% of the players' own takes named, as
# without it (bench_voices encoder). Thresholds from the takes alone run 0.84-0.87 there and let
# more strangers in than this fixed line; the line is steep (0.79: 4.7%, 0.81: 85% named).
ENC_SPEECH_CAP = 0.80
# Below this SNR (call level over the noise floor, dB) the encoder is not asked: in 5-20 dB
# babble or pink noise a player's call is as alike to another player's takes as to their own
# (cosine 0.67-0.82 both; corpus), while templates and voiceprint, noise-compensated, still
# name some. The synthetic held-out calls are at 21-35 dB, the real same-word takes 38-57 dB.
ENC_MIN_SNR = 20.0
# ...unless the background around the call is known and subtracted first (encoder.denoise),
# which keeps real players' cosines near their clean values down to ~5 dB of pink noise.
ENC_DENOISED_MIN_SNR = 8.0
# s of background needed to estimate it (10 frames for its low percentile); with less the stretch is
# left to the voiceprint. 0.25 s did that to real takes in 10 dB babble whose trim left 0.1-0.25 s
# around the word: strangers accepted 4 -> 22/172 (bench_voices noise).
ENC_MIN_AROUND = 0.1
# The voiceprint still has a say on WHAT was said: a near-miss word ("slap") by an enrolled
# player is their voice to the encoder (ratios 0.2-0.65), and with it a loose template
# (0.9-1.4) passed the mean; the voiceprint, a cepstral mean over the word, is partly
# text-dependent and refuses those. So the encoder's mean also needs the template and
# voiceprint together within this (corpus near misses: 12 false calls -> see docs/voices.md).
ENC_WHAT_LIMIT = 1.0
# The input's cepstral mean is taken over the whole stretch matched. A loud sound that runs into a
# call (a hand slapping the pile as the player shouts) pulls it away from the word's, and every frame
# fits worse: alice's clean "snap" 1.00 -> 1.82 of her threshold with white noise 20 dB under its
# peak over its last 80 ms and 200 ms after, so the model-free engine lost such calls (7 of 48). When
# the best fit is not yet within its threshold and the stretch outside it (beyond CROP_MARGIN frames)
# holds sound CROP_LOUD_DB over the background, the stretch is matched again cut to that fit and each
# template keeps the better ratio; placement stays the first pass's. Enrolled engine, corpus: the
# same detections (without the loudness test, cut stretches of near-miss words also fit better: 2
# more false calls); the tail-noise rows 41 / 7 / 3 -> 43 / 24 / 14 of 48, and, the other side of
# it, near-miss words with that noise over their end taken for calls 11 / 1 / 0 -> 18 / 9 / 5 of 96:
# once its end is masked, "snack" sounds like "snap" (docs/listening.md, tenth round).
CROP_MARGIN = 5
CROP_LOUD_DB = 10.0
CROP_LOUD = CROP_LOUD_DB * float(np.log(10.0)) / 10.0  # in the log-mel's natural-log power units
# In noise every fit worsens: the template, and the voiceprint that ENC_WHAT_LIMIT asks of
# it, more than the encoder on the denoised word. So a call that another engine already
# heard (``heard_snr``: its level over the floor, dB, under ENC_MIN_SNR) goes to the closest
# voice when the encoder vouches for it (ratio <= 1) and the template is within the limit,
# whatever the mean and the voiceprint say. Corpus calls at their true spans: right player
# 85 -> 89 of 114 one-mic calls (none to a wrong player); near-miss words by enrolled
# players, taken as "snap", 10 of 72 accepted before and after; strangers (4 of the 6 players
# enrolled, three sets) 0 of 114. Real same-word takes in pink noise and babble at 10 dB
# through the same span attribution: unchanged (127/250 named right, strangers 18/348).
# Tried and not kept: "clearly the closest" without the encoder's word (mean <= 1.4, every
# other voice 1.4x as far): corpus +6, but real strangers 18 -> 92/348.


def pool_phrase(word: str) -> str:
    """The pool call for a call word: "snap" -> "snap pool"."""
    return f"{word}{POOL_SUFFIX}"


# --------------------------------------------------------------------------
# takes: trimming and checks


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
        problems.append(TakeProblem("silent", "nothing was heard: check the microphone "
                                    "and say the call after the beep"))
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


SPEECH_MIN_COSINE = 0.65  # a speech sample's embedding to the player's call takes' centroid, at least


def speech_mismatch(calls: np.ndarray, sample: dict) -> str | None:
    """Why a speech sample (``speech_extra``) seems not to be the voice of these call takes' embeddings
    (someone else, noise), or None.

    A guard against gross mistakes, not a proof: on the real and fixture
    speakers a player's own sample sits at 0.69-0.82 to their takes, other
    people's at 0.46-0.76, on-off noise at 0.61-0.68 (docs/voices.md, "Speech sample").
    """
    if not len(calls):
        return None
    cos = float(_unit(np.mean(calls, axis=0)) @ np.asarray(sample["embedding"], np.float32))
    if cos < SPEECH_MIN_COSINE:
        return (f"it does not sound like the voice of the calls (likeness {cos:.2f} < {SPEECH_MIN_COSINE:.2f}): "
                "was someone else talking, or a noise? Only the player should talk")
    return None


def speech_extra(enc: E.Encoder, name: str, speech: np.ndarray) -> dict:
    """The profile's ``extra["speech"]`` for a checked speech sample (see ENC_SPEECH_CAP)."""
    try:
        e, seconds = enc.embed_speech(speech)
    except ValueError as exc:
        raise UserError(f"the speech sample of {name} cannot be used: {exc}") from exc
    return {"seconds": round(seconds, 1), "embedding": [round(float(v), 5) for v in e]}


def missing_speech(prof: Profile, enc: E.Encoder | None) -> bool:
    """Enrolled with this encoder but without a speech sample: ``voicesnap enroll NAME --speech-only`` can add one."""
    return enc is not None and prof.extra.get("encoder") == enc.fingerprint and "speech" not in prof.extra


def take_templates(y: np.ndarray) -> np.ndarray:
    """The DTW template of a trimmed take: its log-mel frames (cepstra are made per match)."""
    return F.analyse(y).log_mel


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


# --------------------------------------------------------------------------
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


def _cost(x: np.ndarray, t: np.ndarray) -> np.ndarray:
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


def _heard_cepstra(t: np.ndarray, gain: np.ndarray | float, top: float, floor: np.ndarray | None,
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
        self.peaks = np.array([F.peak_level(m) for _, _, m in items], dtype=np.float32)
        ends = np.cumsum(self.lengths)
        self.first = ends - self.lengths
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
        c = _heard_cepstra(self.log_mel, gains, top, floor)
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
        cost = _cost(np.asarray(x, np.float32), frames)
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
        for i in range(n):
            d = cur[0, 2:]
            diag = cur[0, 1:-1] + diag_pen
            skip = cur[0, :-2] + skip_pen
            stay = d + stay_pen
            # the cheapest step (ties go diagonal, then skip, then stay)
            later = np.minimum(skip, stay)
            take_diag = diag <= later
            np.add(cost[i], np.where(take_diag, diag, later), out=nxt[0, 2:])
            np.copyto(nxt[1, 2:], np.where(take_diag, cur[1, 1:-1], np.where(skip <= stay, cur[1, :-2], cur[1, 2:])))
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


# --------------------------------------------------------------------------
# profiles


@dataclass
class Profile:
    """Everything known about one player's voice (see the module docstring)."""

    name: str
    word: str
    templates: dict[str, list[np.ndarray]]  # phrase -> log-mel templates (frames, N_MELS)
    thresholds: dict[str, float]  # phrase -> DTW distance accepted as this call
    voiceprint: np.ndarray  # mean voice signature over takes
    voice_scale: np.ndarray  # per-dimension spread used to score voiceprints
    voice_threshold: float  # voiceprint distance accepted as this player
    channel: int | None = None
    created: str = ""
    version: int = PROFILE_VERSION
    extra: dict = field(default_factory=dict)

    def phrases(self) -> list[str]:
        return list(self.templates)

    def voice_distance(self, vp: np.ndarray) -> float:
        z = (vp - self.voiceprint) / self.voice_scale
        return float(np.sqrt(np.mean(z * z)))

    def to_json(self) -> str:
        return json.dumps({
            "format": "voicesnap-profile",
            "version": self.version,
            "name": self.name,
            "word": self.word,
            "channel": self.channel,
            "created": self.created,
            "thresholds": self.thresholds,
            "voiceprint": [round(float(v), 5) for v in self.voiceprint],
            "voice_scale": [round(float(v), 5) for v in self.voice_scale],
            "voice_threshold": self.voice_threshold,
            "templates": {ph: [np.round(t, 3).tolist() for t in ts]
                          for ph, ts in self.templates.items()},
            "extra": self.extra,
        }, separators=(",", ":"))

    @classmethod
    def from_json(cls, text: str, where: str = "profile") -> "Profile":
        name = Path(where).stem
        way_out = (f"enroll again with `voicesnap enroll {name}`, or delete it with "
                   f"`voicesnap players forget {name}`")
        try:
            data = json.loads(text)
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise UserError(f"voice profile {where} is damaged (not valid JSON: {exc}); {way_out}") from exc
        if not isinstance(data, dict) or data.get("format") != "voicesnap-profile":
            raise UserError(f"{where} is not a voicesnap voice profile; {way_out}")
        version = data.get("version")
        if version != PROFILE_VERSION:
            raise UserError(f"voice profile {where} has format version {version!r}, this voicesnap "
                            f"reads version {PROFILE_VERSION}; {way_out}")
        try:
            templates = {str(ph): [np.asarray(t, np.float32).reshape(-1, F.N_MELS) for t in ts]
                         for ph, ts in data["templates"].items()}
            prof = cls(
                name=str(data["name"]),
                word=str(data["word"]),
                templates=templates,
                thresholds={str(k): float(v) for k, v in data["thresholds"].items()},
                voiceprint=np.asarray(data["voiceprint"], np.float32),
                voice_scale=np.asarray(data["voice_scale"], np.float32),
                voice_threshold=float(data["voice_threshold"]),
                channel=None if data.get("channel") is None else int(data["channel"]),
                created=str(data.get("created", "")),
                extra=dict(data.get("extra") or {}),
            )
            profile_embeddings(prof)  # the speaker embeddings, when there, must be whole
            profile_speech(prof)
        except (KeyError, TypeError, ValueError) as exc:
            raise UserError(f"voice profile {where} is damaged ({type(exc).__name__}: {exc}); {way_out}") from exc
        if (not prof.word or prof.word not in prof.templates or any(len(t) < 2 for ts in prof.templates.values() for t in ts)
                or prof.voiceprint.shape != prof.voice_scale.shape or set(prof.thresholds) != set(prof.templates)
                or not all(math.isfinite(v) and v > 0 for v in prof.thresholds.values())):
            raise UserError(f"voice profile {where} is damaged (inconsistent contents); {way_out}")
        return prof


def build_profile(name: str, word: str, takes: Sequence[Take], channel: int | None = None,
                  encoder: E.Encoder | None | str = "auto", speech: np.ndarray | None = None) -> Profile:
    """A profile from checked, trimmed takes (at least 2 per phrase; enroll asks for more).

    With a speaker encoder (``"auto"``: the installed one, if any) each take's
    embedding is kept in ``extra["embeddings"]``; profiles without them keep working.
    ``speech``: some seconds of the player talking freely (16 kHz float), kept
    as one embedding in ``extra["speech"]`` (see ENC_SPEECH_CAP); needs the encoder.
    """
    check_name(name)
    by_phrase: dict[str, list[np.ndarray]] = {}
    for t in takes:
        by_phrase.setdefault(t.phrase, []).append(t.audio)
    if word not in by_phrase or len(by_phrase[word]) < 2:
        raise UserError(f"need at least 2 good takes of '{word}' to enroll {name}")
    templates = {ph: [take_templates(y) for y in ys] for ph, ys in by_phrase.items() if len(ys) >= 2}
    thresholds = {}
    for ph, ts in templates.items():
        loo = []
        for i, t in enumerate(ts):
            others = [u for j, u in enumerate(ts) if j != i]
            bank = TemplateBank([("", ph, u) for u in others])
            loo.append(min(h.distance for h in bank.match_log_mel(t)))
        thresholds[ph] = float(THRESHOLD_FACTOR * max(loo) + THRESHOLD_MARGIN)
    vps = np.stack([voiceprint(t.audio) for t in takes])
    center = vps.mean(axis=0)
    scale = np.maximum(vps.std(axis=0), VOICE_SCALE_FLOOR).astype(np.float32)
    dists = []
    for i in range(len(vps)):
        rest = np.delete(vps, i, axis=0)
        z = (vps[i] - rest.mean(axis=0)) / scale
        dists.append(float(np.sqrt(np.mean(z * z))))
    voice_thr = max(float(VOICE_THRESHOLD_FACTOR * max(dists)), VOICE_MIN_THRESHOLD)
    enc = E.load_encoder() if encoder == "auto" else encoder
    extra: dict = {}
    if isinstance(enc, E.Encoder):
        extra["encoder"] = enc.fingerprint
        extra["embeddings"] = [[t.phrase, [round(float(v), 5) for v in enc.embed(t.audio)]] for t in takes]
        if speech is not None:
            extra["speech"] = speech_extra(enc, name, speech)
    return Profile(
        name=name, word=word, templates=templates, thresholds=thresholds,
        voiceprint=center.astype(np.float32), voice_scale=scale, voice_threshold=voice_thr,
        channel=channel, created=_dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        extra={"takes": {ph: len(v) for ph, v in by_phrase.items()},
               # every take's voiceprint, so a table can pool its players' spreads (Voices.rank_ratio);
               # optional: profiles without it are ranked by their own voice ratio
               "voiceprints": [[round(float(v), 4) for v in vp] for vp in vps], **extra},
    )


def profile_embeddings(prof: Profile) -> tuple[str, dict[str, np.ndarray]] | None:
    """(encoder fingerprint, phrase -> takes' embeddings) of a profile enrolled with the encoder, else None.

    Raises ValueError when they are there but malformed (a damaged profile).
    """
    raw = prof.extra.get("embeddings")
    if raw is None:
        return None
    fp = prof.extra.get("encoder")
    if not isinstance(fp, str) or not isinstance(raw, list) or not raw:
        raise ValueError("speaker embeddings without their encoder")
    by: dict[str, list[np.ndarray]] = {}
    for item in raw:
        if not (isinstance(item, list) and len(item) == 2 and isinstance(item[0], str)):
            raise ValueError("a speaker embedding is not [phrase, values]")
        v = np.asarray(item[1], np.float32)
        if v.shape != (E.HIDDEN,) or not np.isfinite(v).all():
            raise ValueError(f"a speaker embedding has shape {v.shape}, not ({E.HIDDEN},)")
        by.setdefault(item[0], []).append(v)
    return fp, {ph: np.stack(vs) for ph, vs in by.items()}


def profile_speech(prof: Profile) -> np.ndarray | None:
    """The embedding of a profile's free-speech sample, if it has one (ValueError when malformed)."""
    raw = prof.extra.get("speech")
    if raw is None:
        return None
    if not isinstance(raw, dict) or not isinstance(raw.get("seconds"), (int, float)):
        raise ValueError("the speech sample is not {seconds, embedding}")
    v = np.asarray(raw.get("embedding"), np.float32)
    if v.shape != (E.HIDDEN,) or not np.isfinite(v).all() or not np.linalg.norm(v) > 0:
        raise ValueError(f"the speech sample's embedding has shape {v.shape}, not ({E.HIDDEN},)")
    return v / np.linalg.norm(v)


def _unit(v: np.ndarray) -> np.ndarray:
    return v / max(float(np.linalg.norm(v)), 1e-9)


def _encoder_model(embs: dict[str, np.ndarray], speech: np.ndarray | None = None
                   ) -> tuple[np.ndarray, float] | None:
    """(unit centroid per phrase, cosine threshold) from a player's takes' embeddings.

    Takes made in one sitting agree more closely than calls in a game (the
    synthetic players' leave-one-out cosines are 0.87-0.98, their held-out
    noisy calls 0.83-0.94), so the threshold is capped at ENC_CAP.
    With a free-speech sample each centroid is the mean of the takes' and the
    speech's directions, and the cap is ENC_SPEECH_CAP.
    """
    def centroid(m: np.ndarray) -> np.ndarray:
        c = _unit(m.mean(axis=0))
        return c if speech is None else _unit(c + speech)

    cents, loo = [], []
    for m in embs.values():
        if len(m) < 2:
            continue
        cents.append(centroid(m))
        loo += [float(_unit(m[i]) @ centroid(np.delete(m, i, axis=0))) for i in range(len(m))]
    if not cents:
        return None
    return np.stack(cents).astype(np.float32), min(float(np.median(loo)), ENC_CAP if speech is None else ENC_SPEECH_CAP)


def check_name(name: str) -> str:
    if not NAME_RE.match(name or ""):
        raise UserError(f"player name {name!r} is not usable: use 1-32 letters, digits, spaces, "
                        "'-', '_' or '.', starting with a letter or digit")
    return name


def players_dir(option: str | None = None) -> Path:
    return data_dir(option) / "players"


def profile_path(name: str, option: str | None = None) -> Path:
    return players_dir(option) / f"{check_name(name)}.json"


def save_profile(profile: Profile, option: str | None = None) -> Path:
    """Write atomically, readable only by the user (0600)."""
    return atomic_write_text(profile_path(profile.name, option), profile.to_json(), mode=0o600)


def load_profile(name: str, option: str | None = None) -> Profile:
    path = profile_path(name, option)
    if not path.exists():
        raise UserError(f"no voice profile for {name!r} in {path.parent}; enroll with "
                        f"`voicesnap enroll {name}`")
    return load_profile_file(path)


def load_profile_file(path: Path) -> Profile:
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise UserError(f"cannot read voice profile {path} ({exc}); enroll again with "
                        f"`voicesnap enroll {path.stem}` or `voicesnap players forget {path.stem}`") from exc
    return Profile.from_json(text, str(path))


def list_players(option: str | None = None) -> list[str]:
    d = players_dir(option)
    if not d.exists():
        return []
    return sorted(p.stem for p in d.glob("*.json") if not p.name.startswith("."))


def load_all(option: str | None = None) -> list[Profile]:
    return [load_profile(n, option) for n in list_players(option)]


# --------------------------------------------------------------------------
# attribution


@dataclass(frozen=True)
class Attribution:
    """Who said a stretch of speech: ``player`` is None when nobody is close enough."""

    player: str | None
    score: float  # 0..1; ``ACCEPT_SCORE`` is the acceptance line
    phrase: str | None
    scores: dict[str, float]  # every enrolled player's score
    start: int = 0  # matched frames within the input
    end: int = 0
    # per voice (players and rivals): {"phrase", "template", "voice", "combined"} ratios
    # (distance / that player's calibrated threshold: 1 = the boundary), and why
    # the decision went the way it did, for `players identify --json`
    details: dict[str, dict] = field(default_factory=dict)
    reason: str = ""


def ratio_to_score(r: float) -> float:
    """Distance / threshold (1 = boundary) to a 0..1 score (0.5 = boundary)."""
    return float(np.clip(1.0 - 0.5 * r, 0.0, 1.0)) if math.isfinite(r) else 0.0


ANNOUNCER = "<announcer>"  # rival profile names start with this

# Ties on one microphone: two players' calls mixed fit no single template, but
# they fit the two players' templates mixed (log-add) at the right offset.
# Every enrolled player is a candidate caller: a caller's single-template fit says little about
# an overlap (on the fixtures the partner ranked 4th-5th of 6 by single template in 7 of 55 overlap
# stretches, e.g. finn under emma behind bob and dev), while over all pairs the true pair fit best
# in 54 of 55 (the other: bob with emma 50 ms apart, where alice-bob fits as well, 1.39 vs 1.40).
TIE_MAX_OFFSET = 22  # frames (220 ms): calls further apart are two stretches anyway
TIE_STEP = 3  # frames between the offsets tried first
TIE_PAIRS = 2  # pairs tried at every TIE_STEP after the coarser first pass
# The pair's offset refined by a joint alignment of both templates (_joint_offset): within this many
# frames of the mixture's offset, the second caller mixed this many dB louder or quieter. Reach 1-4
# measured alike on the fixtures. Gains (-6, -3, 0, 3, 6) put 2 more offsets within 5 ms (players
# 16/18, corpus 13/15) at 5x the work, but the 0 ms alice-bob tie went from 30 to 35 ms late (15 ms
# at 0 dB alone), past the 30 ms the tests allow; kept at 0 dB.
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


def _warped(t: np.ndarray, alpha: float) -> np.ndarray:
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


def _mix_parts(ta: np.ndarray, tb: np.ndarray, d: int) -> tuple[np.ndarray, np.ndarray]:
    """Log-mel templates ``ta`` (from frame 0) and ``tb`` (from frame ``d``) on one grid, quiet elsewhere."""
    quiet = np.float32(min(float(ta.min()), float(tb.min())) - 5.0)
    n = max(len(ta), d + len(tb))
    x = np.full((n, F.N_MELS), quiet, np.float32)
    y = x.copy()
    x[: len(ta)] = ta
    y[d: d + len(tb)] = tb
    return x, y


def _aligned(cost: np.ndarray) -> list[tuple[int, int]]:
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


def _joint_offset(log_mel: np.ndarray, floor: np.ndarray | None, ta: np.ndarray, tb: np.ndarray,
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
    ref = np.logaddexp(*_mix_parts(ta, tb, d0))
    top = float(log_mel.max())
    gain = np.float32(F.peak_level(log_mel) - F.peak_level(ref))

    def ceps(t: np.ndarray) -> np.ndarray:
        return _heard_cepstra(t, gain, top, floor)

    mean = ceps(ref.reshape(-1, F.N_MELS)).mean(axis=0)
    c = (ceps(mix.reshape(-1, F.N_MELS)) - mean).astype(np.float32)
    x = F.call_cepstra(log_mel, floor)
    na, nb = la + 1, lb + 2
    cost = _cost(x, c).reshape(len(x), na, nb)
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

    def shifted(z: np.ndarray, da: int, db: int, fill: float) -> np.ndarray:
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


# --------------------------------------------------------------------------
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
CODA_RANGE_DB = 50.0  # dB of level kept under the loudest band (the match keeps 30)
CODA_PARTS = 8  # the template is cut into this many parts of equal length
CODA_FROM = 0.5  # the "second half": parts from this fraction of the template on
CODA_LIMIT = 2.15  # worst second-half part over the player's line: more is no call ...
CODA_OVER_HEAD = 0.95  # ... when it is also this much worse than the worst first-half part (over its line)
CODA_HEAD_MAX = 2.9  # ... and that first half fits like a call (over its line; more: the whole word is loose)


def part_costs(log_mel: np.ndarray, floor: np.ndarray | None, templates: Sequence[np.ndarray]) -> np.ndarray:
    """Mean cost per part (CODA_PARTS of each template) along each template's best placement in
    ``log_mel`` (as ``TemplateBank.match``), the lowest over ``templates`` per part.

    Cepstra as ``features.call_cepstra`` and ``_heard_cepstra``, but CODA_RANGE_DB deep.
    """
    rng = CODA_RANGE_DB * math.log(10.0) / 10.0
    x = F.call_cepstra(log_mel, floor, rng)
    peak, top = F.peak_level(log_mel), float(log_mel.max())
    best = np.full(CODA_PARTS, np.inf)
    for t in templates:
        c = _heard_cepstra(t, peak - F.peak_level(t), top, floor, rng)
        cost = _cost(x, (c - c.mean(axis=0)).astype(np.float32))
        path = np.array(_aligned(cost))
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


@lru_cache(maxsize=8)
def announcer_profile(word: str = "snap") -> Profile | None:
    """A profile of the game's own announcer voice, rendered locally (no recording).

    Attribution treats it as a rival that always loses: when the announcer's
    own "snap" fits best, the call is nobody's. None when speech cannot be rendered.
    Cached: the same (read-only) profile for every spotter.
    """
    try:
        from .speech import VoiceSettings, render
    except ImportError:  # pragma: no cover - speech module missing
        return None
    takes = []
    try:
        for phrase, rates in ((word, (170, 185, 200, 215, 230)), (pool_phrase(word), (180, 200, 220))):
            for r in rates:
                pcm, rate = render(phrase, VoiceSettings(rate=r))
                y = F.resample(pcm, rate)
                pad = np.zeros(480, np.float32)
                takes.append(Take(phrase, np.concatenate([pad, y, pad])))
    except Exception:  # no espeak-ng: attribution goes on without the guard
        return None
    prof = build_profile("announcer", word, takes)
    prof.name = f"{ANNOUNCER} {word}"
    return prof


ACCEPT_SCORE = ratio_to_score(ACCEPT)


class Voices:
    """The enrolled players, ready to match: one template bank, their voiceprints.

    ``rivals`` are voices that must never be attributed (the announcer): they
    compete in matching, and a call they win is reported as nobody's.
    """

    def __init__(self, profiles: Sequence[Profile], rivals: Sequence[Profile] = (),
                 encoder: E.Encoder | None | str = "auto"):
        self.rivals = {p.name for p in rivals}
        every = [*profiles, *[r for r in rivals if r.name not in {p.name for p in profiles}]]
        self.profiles = {p.name: p for p in every}
        self.players = [p.name for p in profiles]
        self.bank = TemplateBank([(p.name, ph, t) for p in every
                                  for ph, ts in p.templates.items() for t in ts])
        self.channels = {p.channel: p.name for p in profiles if p.channel is not None}
        self._rank_models = self._pooled_voice_models(profiles)
        self.encoder, self._enc_models = self._encoder_models(profiles, every, encoder)
        self._coda_lines: dict[tuple[str, str], tuple[float, float]] = {}  # near_miss's lines, on first use

    @staticmethod
    def _encoder_models(profiles: Sequence[Profile], every: Sequence[Profile], encoder: E.Encoder | None | str
                        ) -> tuple[E.Encoder | None, dict[str, tuple[np.ndarray, float]]]:
        """The encoder and each voice's (centroids, threshold), or (None, {}) to use the voiceprint.

        Only when EVERY player was enrolled with this encoder (its fingerprint):
        a player enrolled before it was installed cannot be compared with the
        others, so the whole table stays on the voiceprint until they re-enroll.
        Rivals without embeddings simply do not compete on the encoder.
        """
        embs = {p.name: profile_embeddings(p) for p in every}
        speech = {p.name: profile_speech(p) for p in every}
        if not profiles or any(embs[p.name] is None for p in profiles):
            return None, {}
        enc = E.load_encoder() if encoder == "auto" else encoder
        if not isinstance(enc, E.Encoder):
            return None, {}
        models = {}
        for name, got in embs.items():
            if got is None or got[0] != enc.fingerprint:
                continue
            model = _encoder_model(got[1], speech.get(name))
            if model is not None:
                models[name] = model
        if any(p.name not in models for p in profiles):
            return None, {}
        return enc, models

    def embedding_scores(self, y: np.ndarray, snr: float | None = None,
                         around: np.ndarray | None = None) -> dict[str, float] | None:
        """Cosine similarity of this stretch of speech to every voice enrolled with the encoder.

        None (decide as without the encoder) when there is none, or when ``snr``
        (the stretch's level over the noise floor, dB) is under ENC_MIN_SNR.
        ``around``: the audio around the stretch; with at least ENC_MIN_AROUND
        s of it, a noisy stretch (under ENC_MIN_SNR) has the background
        subtracted (``encoder.denoise``) and is judged down to
        ENC_DENOISED_MIN_SNR; with less, the background is not known and the
        stretch is left to the other rule, as without it.
        """
        if self.encoder is None or len(y) == 0:
            return None
        noisy = snr is not None and snr < ENC_MIN_SNR
        known = around is not None and len(around) >= ENC_MIN_AROUND * F.RATE
        if noisy and (not known or snr < ENC_DENOISED_MIN_SNR):
            return None
        e = self.encoder.embed(y, noise=around if noisy else None)
        return {n: float(np.max(c @ e)) for n, (c, _thr) in self._enc_models.items()}

    def encoder_ratio(self, name: str, cos: float) -> float:
        """(1 - cosine) over (1 - the player's threshold): 1 = the boundary, like the other ratios."""
        thr = self._enc_models[name][1]
        return (1.0 - cos) / max(1.0 - thr, 1e-6)

    @staticmethod
    def _pooled_voice_models(profiles: Sequence[Profile]) -> dict[str, tuple[np.ndarray, np.ndarray, float]]:
        """Per player (centre, scale, threshold) of the voiceprint with one scale and threshold for the table.

        Five takes are too few to say how far one player's voice may move in
        each dimension, and each player's own scale and threshold then decide
        who is "closest" as much as the voices do. The within-player spread
        pooled over every enrolled player's takes, and the players' median
        leave-one-out threshold under it, rank real speakers far better
        (LibriSpeech words, 4 players: 17/28 -> 24/28 named right; see docs/voices.md).
        """
        prints = {p.name: np.asarray(p.extra.get("voiceprints") or [], np.float32) for p in profiles}
        prints = {n: v for n, v in prints.items() if v.ndim == 2 and len(v) >= 2}
        if not prints:
            return {}
        dev = np.concatenate([v - v.mean(axis=0) for v in prints.values()])
        scale = np.maximum(np.sqrt(np.mean(dev * dev, axis=0)), VOICE_SCALE_FLOOR).astype(np.float32)
        thresholds = []
        for v in prints.values():
            loo = [float(np.sqrt(np.mean(((v[i] - np.delete(v, i, axis=0).mean(axis=0)) / scale) ** 2)))
                   for i in range(len(v))]
            thresholds.append(max(VOICE_THRESHOLD_FACTOR * max(loo), VOICE_MIN_THRESHOLD))
        common = float(np.median(thresholds))
        return {n: (v.mean(axis=0), scale, common) for n, v in prints.items()}

    def voice_ratio(self, name: str, vp: np.ndarray) -> float:
        """Voiceprint distance to player ``name`` over that player's threshold (1 = the boundary)."""
        prof = self.profiles[name]
        return prof.voice_distance(vp) / prof.voice_threshold

    def rank_ratio(self, name: str, vp: np.ndarray) -> float:
        """Voiceprint distance to ``name`` on the table's pooled scale: for choosing WHO, not for accepting.

        Acceptance stays with each player's own ratio (``voice_ratio``), which
        is what keeps unknown voices out; players (and rivals) without the
        takes' voiceprints are ranked by that own ratio.
        """
        model = self._rank_models.get(name)
        if model is None:
            return self.voice_ratio(name, vp)
        center, scale, threshold = model
        z = (vp - center) / scale
        return float(np.sqrt(np.mean(z * z))) / threshold

    def ratios(self, log_mel: np.ndarray, floor: np.ndarray | None, vp: np.ndarray | None,
               crop: bool = False) -> tuple[dict[tuple[str, str], tuple[float, Hit]], dict[str, float]]:
        """Best DTW ratio per (player, phrase) and voice ratio per player.

        ``crop``: a stretch found by voice activity, where a loud sound next to the call may have
        run into it (see CROP_LOUD_DB).
        """
        best = self._template_ratios(log_mel, floor)
        if crop and best and floor is not None:  # the loudness test needs the background
            r0, h0 = min(best.values(), key=lambda v: v[0])
            if r0 > 1.0:  # most stretches fit or are nothing like a call: no second look
                a, b = max(0, h0.start - CROP_MARGIN), min(len(log_mel), h0.end + 1 + CROP_MARGIN)
                rest = np.concatenate([log_mel[:a], log_mel[b:]])
                if len(rest) and float(np.mean(rest - floor[None, :], axis=1).max()) >= CROP_LOUD:
                    for key, (r, _h) in self._template_ratios(log_mel[a:b], floor).items():
                        if r < best[key][0]:
                            best[key] = (r, best[key][1])  # the first pass's placement: onsets as before
        voice = {}
        if vp is not None:
            for name in self.profiles:
                voice[name] = self.voice_ratio(name, vp)
        return best, voice

    def _template_ratios(self, log_mel: np.ndarray, floor: np.ndarray | None
                         ) -> dict[tuple[str, str], tuple[float, Hit]]:
        best: dict[tuple[str, str], tuple[float, Hit]] = {}
        for h in self.bank.match_log_mel(log_mel, floor):
            r = h.distance / self.profiles[h.player].thresholds[h.phrase]
            key = (h.player, h.phrase)
            if key not in best or r < best[key][0]:
                best[key] = (r, h)
        return best

    def attribute(self, x: np.ndarray, rate: int = F.RATE) -> Attribution:
        """The enrolled player whose call this recording most resembles, or nobody."""
        full = F.resample(x, rate)
        y, _level, _snr = trim(full)
        if len(y) == 0 or not self.players:
            return Attribution(None, 0.0, None, {n: 0.0 for n in self.players})
        feats = F.analyse(full)
        floor = F.noise_floor(feats.log_mel)
        # match on the call with generous context: a fricative lost in noise by
        # the trim must still be there for the template to align with
        thr = F.vad_threshold(feats.energy_db)
        segs = F.voiced_segments(feats.energy_db, thr, min_frames=3, gap_frames=30)
        s, e = max(segs, key=lambda r: float(feats.energy_db[r[0]:r[1]].max()))
        lo, hi = max(0, s - 15), min(len(feats), e + 15)
        vp = voiceprint(y)
        best, voice = self.ratios(feats.log_mel[lo:hi], floor, vp)
        # the background for the encoder: the recording outside the call (3 frames' margin)
        m = 3 * F.HOP
        c0, c1 = max(0, s * F.HOP - m), min(len(full), e * F.HOP + F.FRAME + m)
        around = np.concatenate([full[:c0], full[c1:]])
        return self.decide(best, voice, rank={n: self.rank_ratio(n, vp) for n in voice},
                           enc=self.embedding_scores(y, snr=_snr, around=around if len(around) else None))

    def decide(self, best: dict[tuple[str, str], tuple[float, Hit]], voice: dict[str, float],
               accept: float = ACCEPT, r_limit: float = R_LIMIT,
               rank: dict[str, float] | None = None, enc: dict[str, float] | None = None,
               heard_snr: float | None = None) -> Attribution:
        """Turn template ratios and voice ratios into one attribution (or nobody).

        Who fits best is chosen with the ``rank`` voice ratios (the table's
        pooled scale) when given; whether that player is accepted is judged
        with their own ``voice`` ratio, as before. With the speaker encoder's
        cosines (``enc``, from ``embedding_scores``) the encoder decides instead
        of the voiceprint (``decide_encoder``).
        """
        if enc:
            # what the voiceprint would decide: it may accept the player the encoder vouches for
            by_voiceprint = self.decide(best, voice, accept, r_limit, rank).player if voice else None
            return self.decide_encoder(best, enc, accept, r_limit, by_voiceprint, voice, heard_snr)
        per_player: dict[str, tuple[float, str, Hit]] = {}
        rv = voice if rank is None else rank
        for (player, phrase), (r, h) in best.items():
            combined = 0.5 * r + 0.5 * rv.get(player, voice.get(player, r))
            cur = per_player.get(player)
            # the longer phrase wins when it also fits: "snap" hides inside "snap pool"
            if cur is None or combined < cur[0] or (
                    r < 1.0 and phrase.endswith(POOL_SUFFIX) and combined < 1.0):
                per_player[player] = (combined, phrase, h)
        own = {p: 0.5 * best[(p, ph)][0] + 0.5 * voice.get(p, best[(p, ph)][0])
               for p, (_c, ph, _h) in per_player.items()}  # acceptance: each player's own voice ratio
        scores = {p: ratio_to_score(c) for p, c in own.items() if p not in self.rivals}
        details = {p: {"phrase": ph, "template": round(best[(p, ph)][0], 3),
                       "voice": round(voice[p], 3) if p in voice else None, "combined": round(own[p], 3),
                       **({"rank": round(c, 3)} if rank is not None else {})}
                   for p, (c, ph, _h) in per_player.items()}
        if not per_player:
            return Attribution(None, 0.0, None, scores, reason="no call-like sound to match")
        name, (_rank, phrase, h) = min(per_player.items(), key=lambda kv: kv[1][0])
        r = best[(name, phrase)][0]
        v = voice.get(name, r)
        comb = own[name]
        if name in self.rivals:
            return Attribution(None, 0.0, None, scores, h.start, h.end, details,
                               f"the game's own voice ({name}) fits best")
        strong = v <= STRONG_VOICE and comb <= 1.0  # the voice itself is unmistakable
        why = []
        if comb > accept and not strong:
            why.append(f"combined {comb:.2f} > {accept:.2f} (and voice {v:.2f} > {STRONG_VOICE:.2f})")
        if r > r_limit:
            why.append(f"template {r:.2f} > {r_limit:.2f}")
        if v > V_LIMIT:
            why.append(f"voice {v:.2f} > {V_LIMIT:.2f}")
        if why:
            if rank is not None:
                # the player closest by their own ratios may still be accepted (two voices
                # at once, one of them named): the choice before pooled ranking existed
                own_choice = self.decide(best, voice, accept, r_limit)
                if own_choice.player is not None:
                    return replace(own_choice, details=details)
            return Attribution(None, scores[name], None, scores, h.start, h.end, details,
                               f"closest is {name}, but " + "; ".join(why))
        return Attribution(name, scores[name], phrase, scores, h.start, h.end, details,
                           f"{name}: combined {comb:.2f} <= {accept:.2f}" if comb <= accept else
                           f"{name}: voice {v:.2f} <= {STRONG_VOICE:.2f} and combined {comb:.2f} <= 1.00")

    def decide_encoder(self, best: dict[tuple[str, str], tuple[float, Hit]], enc: dict[str, float],
                       accept: float = ACCEPT, r_limit: float = R_LIMIT,
                       by_voiceprint: str | None = None, voice: dict[str, float] | None = None,
                       heard_snr: float | None = None) -> Attribution:
        """WHO by the speaker encoder and the templates together, accepted when both fit (see ENC_CAP).

        The same ``accept`` and ``r_limit`` as ``decide``: callers loosen them
        where another engine already heard a call, or a mic names the caller.
        ``by_voiceprint``: the player the voiceprint rule (``decide`` without
        the encoder) accepts, if any. When that is the encoder's candidate and
        the encoder vouches for the voice (its ratio <= 1), the call is theirs
        even if the mean is over the line: the encoder is then the stranger
        check and the voiceprint the fit (real same-word set: 88 -> 90/97 named,
        strangers unchanged 22/172; corpus calls +3; synthetic unchanged).
        ``heard_snr``: a call another engine heard, this many dB over the floor;
        under ENC_MIN_SNR the encoder's word and the template limit suffice.

        WHO is chosen on the same mean as acceptance, not on the cosine alone:
        two espeak voices (bob, dev) are nearly as alike to the encoder (0.905
        vs 0.905 on a call of dev's in the corpus) while the templates tell them
        apart; on the real same-word set both choices give the same 88/97 and
        26/28 (bench_voices encoder), on the synthetic calls EER 0.004 vs 0.038.
        """
        per_player: dict[str, tuple[float, str, Hit]] = {}
        for (player, phrase), (r, h) in sorted(best.items(), key=lambda kv: kv[1][0]):
            cur = per_player.get(player)
            # the best-fitting phrase; the longer one wins when it fits too ("snap" hides in "snap pool")
            if cur is None or (r < 1.0 and phrase.endswith(POOL_SUFFIX) and not cur[1].endswith(POOL_SUFFIX)):
                per_player[player] = (r, phrase, h)
        cands = [p for p in per_player if p in enc]
        if not cands:
            return Attribution(None, 0.0, None, {}, reason="no call-like sound to match")
        er = {p: self.encoder_ratio(p, enc[p]) for p in cands}
        comb = {p: 0.5 * (er[p] + per_player[p][0]) for p in cands}
        scores = {p: ratio_to_score(comb[p]) for p in cands if p not in self.rivals}
        # "voice": the encoder's ratio (1 = the player's threshold), as the voiceprint's was
        details = {p: {"phrase": per_player[p][1], "template": round(per_player[p][0], 3),
                       "voice": round(er[p], 3), "encoder": round(enc[p], 3), "combined": round(comb[p], 3),
                       **({"voiceprint": round(voice[p], 3)} if voice and p in voice else {})}
                   for p in cands}
        name = min(cands, key=lambda p: comb[p])
        r, phrase, h = per_player[name]
        if name in self.rivals:
            return Attribution(None, 0.0, None, scores, h.start, h.end, details,
                               f"the game's own voice ({name}) fits best")
        thr = self._enc_models[name][1]
        # as with the voiceprint: an unmistakable voice may carry a loosely fitting template
        # (clean_emma in the corpus: cosine 0.93, template 1.46)
        strong = er[name] <= STRONG_VOICE and comb[name] <= 1.0
        why = []
        if er[name] > 1.0:
            why.append(f"voice {enc[name]:.2f} < {thr:.2f}")
        if r > r_limit:
            why.append(f"template {r:.2f} > {r_limit:.2f}")
        if comb[name] > accept and not strong:
            why.append(f"combined {comb[name]:.2f} > {accept:.2f}")
        if voice and name in voice and 0.5 * (r + voice[name]) > ENC_WHAT_LIMIT:
            why.append(f"template and voiceprint {0.5 * (r + voice[name]):.2f} > {ENC_WHAT_LIMIT:.2f}")
        if why and by_voiceprint == name and er[name] <= 1.0 and r <= r_limit:
            return Attribution(name, scores[name], phrase, scores, h.start, h.end, details,
                               f"{name}: voice {enc[name]:.2f} >= {thr:.2f}, and the voiceprint rule accepts "
                               f"(combined {comb[name]:.2f} > {accept:.2f})")
        if why and heard_snr is not None and heard_snr < ENC_MIN_SNR and er[name] <= 1.0 and r <= r_limit:
            return Attribution(name, scores[name], phrase, scores, h.start, h.end, details,
                               f"{name}: voice {enc[name]:.2f} >= {thr:.2f} in noise ({heard_snr:.0f} dB over "
                               f"the floor), where the other checks fail real calls")
        if why:
            return Attribution(None, scores[name], None, scores, h.start, h.end, details,
                               f"closest is {name}, but " + "; ".join(why))
        return Attribution(name, scores[name], phrase, scores, h.start, h.end, details,
                           f"{name}: voice {enc[name]:.2f} >= {thr:.2f}, combined {comb[name]:.2f} <= "
                           + (f"{accept:.2f}" if comb[name] <= accept else f"1.00 (voice ratio {er[name]:.2f} <= "
                              f"{STRONG_VOICE})"))

    def player_for_channel(self, channel: int) -> str | None:
        return self.channels.get(channel)

    def tie(self, log_mel: np.ndarray, floor: np.ndarray | None,
            best: dict[tuple[str, str], tuple[float, Hit]], word: str | None = None) -> Tie | None:
        """Two enrolled players calling at once in this stretch, or None.

        Each pair of enrolled players is mixed (log-add of their
        best-fitting templates, both at the same peak) at every offset up to
        TIE_MAX_OFFSET, and matched like one template. A lone call fits its own
        template about as well as any mixture (measured: pair/single >= 0.97
        where both callers would be named); a real overlap fits one better
        (0.26-0.79; see TIE_GAIN).

        A stranger calling with a player fits best mixed with the enrolled voice
        nearest to theirs, so each caller must also fit their place clearly
        better than any other voice (the other players, the announcer, their
        own voice warped: ``_tie_callers``); a caller who does not is reported
        as None (nobody enrolled), and a pair with neither is no tie.
        """
        def fits(best: dict[tuple[str, str], tuple[float, Hit]]) -> list[tuple[float, tuple[str, str], Hit]]:
            return sorted(((r, k, h) for k, (r, h) in best.items()
                           if not k[1].endswith(POOL_SUFFIX) and (word is None or k[1] == word)), key=lambda t: t[0])

        fitting = fits(best)
        singles = [t for t in fitting if t[1][0] not in self.rivals]
        if not singles or not TIE_SINGLE_OK <= singles[0][0] <= TIE_SINGLE_MAX:
            return None
        # two calls overlap where the best single template fits: in a long stretch the mixtures are
        # matched there only, and the single templates again on the same frames (like with like)
        lo = 0
        if len(log_mel) > TIE_WINDOW:
            h0 = singles[0][2]
            lo = max(0, min(len(log_mel) - TIE_WINDOW, (h0.start + h0.end - TIE_WINDOW) // 2))
            log_mel = log_mel[lo: lo + TIE_WINDOW]
            fitting = fits(self.ratios(log_mel, floor, None)[0])
            singles = [t for t in fitting if t[1][0] not in self.rivals]
            if not singles or not TIE_SINGLE_OK <= singles[0][0] <= TIE_SINGLE_MAX:
                return None
        cands = list(dict.fromkeys(k[0] for _r, k, _h in singles))  # every player, best-fitting first
        if len(cands) < 2:
            return None
        b = self.bank
        mats = {}  # every voice's best-fitting template (rivals too: stand-ins for a stranger)
        for _r, (p, ph), h in fitting:
            if p not in mats:
                t = b.log_mel[b.first[h.index]: b.last[h.index] + 1]
                mats[p] = (ph, t - np.float32(F.peak_level(t)))

        def mixed(pa: str, pb: str, d: int) -> tuple[str, str, np.ndarray]:
            (pha, ta), (phb, tb) = mats[pa], mats[pb]
            return f"{pa}\n{pha}\n{pb}\n{phb}", str(d), np.logaddexp(*_mix_parts(ta, tb, d))

        # every pair at every 2 x TIE_STEP frames first, then the TIE_PAIRS best pairs every TIE_STEP
        # frames, then the best pair's neighbours: half the DTW work of every pair every TIE_STEP
        # frames, the same ties on the fixtures and the corpus
        pairs = [(pa, pb) for pa in cands for pb in cands if pa != pb]
        coarse = 2 * TIE_STEP
        hits = TemplateBank([mixed(pa, pb, d) for pa, pb in pairs
                             for d in range(0 if pa < pb else coarse, TIE_MAX_OFFSET + 1, coarse)]
                            ).match_log_mel(log_mel, floor)
        fit: dict[frozenset[str], float] = {}
        for h in hits:
            key = frozenset(h.player.split("\n")[0::2])
            fit[key] = min(fit.get(key, math.inf), h.distance)
        keep = set(sorted(fit, key=fit.__getitem__)[:TIE_PAIRS])
        finer = [mixed(pa, pb, d) for pa, pb in pairs if frozenset((pa, pb)) in keep
                 for d in range(TIE_STEP, TIE_MAX_OFFSET + 1, coarse)]
        h = min([*hits, *(TemplateBank(finer).match_log_mel(log_mel, floor) if finer else [])],
                key=lambda h: h.distance)
        pa, _pha, pb, _phb = h.player.split("\n")
        d0 = int(h.phrase)
        near = [mixed(pa, pb, d) for d in range(max(0, d0 - TIE_STEP + 1), min(TIE_MAX_OFFSET, d0 + TIE_STEP - 1) + 1)
                if d != d0]
        if near:
            h = min([h, *TemplateBank(near).match_log_mel(log_mel, floor)], key=lambda h: h.distance)
        first, ph1, second, ph2 = h.player.split("\n")
        ratio = h.distance / max(self.profiles[first].thresholds[ph1], self.profiles[second].thresholds[ph2])
        if ratio > TIE_R_LIMIT or ratio > TIE_GAIN * singles[0][0]:
            return None
        ev = self._tie_callers(log_mel, floor, mats, first, second, int(h.phrase), h.distance)
        named = [p if e <= 1.0 else None for p, e in zip((first, second), ev)]
        if named == [None, None]:
            return None
        joint = _joint_offset(log_mel, floor, mats[first][1], mats[second][1], int(h.phrase))
        offset = float(h.phrase) if joint is None else joint
        return Tie(named[0], named[1], offset, float(ratio), float(singles[0][0]), lo + h.start, lo + h.end, ev)

    def _tie_callers(self, log_mel: np.ndarray, floor: np.ndarray | None, mats: dict[str, tuple[str, np.ndarray]],
                     first: str, second: str, offset: int, distance: float) -> tuple[float, float]:
        """Each caller's evidence of being that player (<= 1: named; see TIE_CALLER).

        The smaller of the near stand-in ratio over TIE_CLEAR and the mean of
        the own-part and far stand-in ratios over TIE_CALLER. Own part: the
        mixture's aligned frames' costs, each weighted by the caller's share of
        that frame's energy in the mixture, over their threshold. Stand-in: the
        pair's ``distance`` over the best with another voice in the caller's
        place, mixed with the other caller's template within TIE_STEP frames of
        the pair's ``offset`` (when the call in that place starts is known).
        """
        (ph1, ta), (ph2, tb) = mats[first], mats[second]
        x, y = _mix_parts(ta, tb, offset)
        bank = TemplateBank([("", "", np.logaddexp(x, y))])
        cost = _cost(F.call_cepstra(log_mel, floor), bank.cepstra(F.peak_level(log_mel), float(log_mel.max()), floor))
        path = _aligned(cost)
        local = np.array([cost[i, j] for i, j in path], np.float64)
        ex, ey = (np.logaddexp.reduce(z.astype(np.float64), axis=1)[[j for _i, j in path]] for z in (x, y))
        share_first = 1.0 / (1.0 + np.exp(ey - ex))
        own = [float(np.sum(local * w) / max(float(np.sum(w)), 1e-9)) / self.profiles[p].thresholds[ph]
               for p, ph, w in ((first, ph1, share_first), (second, ph2, 1.0 - share_first))]
        out = []
        for k, (p, q) in enumerate(((first, second), (second, first))):
            ph, t = mats[p]
            voices = {c: m for c, m in mats.items() if c not in (p, q)}
            voices.update({f"{p} x{a}": (ph, _warped(t, a)) for a in (*TIE_NEAR_WARPS, *TIE_FAR_WARPS)})
            items = []
            for c, (phc, tc) in voices.items():
                for d in range(max(0, offset - TIE_STEP), min(TIE_MAX_OFFSET, offset + TIE_STEP) + 1):
                    parts = _mix_parts(tc, mats[q][1], d) if k == 0 else _mix_parts(mats[q][1], tc, d)
                    items.append((c, phc, np.logaddexp(*parts)))
            alt: dict[str, float] = {}
            for h in TemplateBank(items).match_log_mel(log_mel, floor):
                alt[h.player] = min(alt.get(h.player, math.inf), h.distance)

            def stand_in(warps: tuple[float, ...]) -> float:
                far = {f"{p} x{a}" for a in (*TIE_NEAR_WARPS, *TIE_FAR_WARPS)} - {f"{p} x{a}" for a in warps}
                best = min((v for c, v in alt.items() if c not in far), default=math.inf)
                return distance / best if math.isfinite(best) and best > 0 else 1.0

            out.append(min(stand_in(TIE_NEAR_WARPS) / TIE_CLEAR,
                           0.5 * (own[k] + stand_in(TIE_FAR_WARPS)) / TIE_CALLER))
        return out[0], out[1]

    def near_miss(self, player: str, phrase: str, log_mel: np.ndarray, floor: np.ndarray | None) -> str | None:
        """Why the call of ``player``'s ``phrase`` found in ``log_mel`` is another word, or None.

        Its closing sounds fit the player's takes far worse than the takes fit each
        other, while its opening fits like a call (see CODA_LIMIT); the player's line is
        worked out from the stored templates on first use, so profiles are unchanged.
        """
        prof = self.profiles[player]
        key = (player, phrase)
        if key not in self._coda_lines:
            self._coda_lines[key] = coda_line(prof.templates[phrase])
        (head_line, tail_line), (head, tail) = self._coda_lines[key], coda_costs(log_mel, floor, prof.templates[phrase])
        tail_r, head_r = tail / max(tail_line, 1e-6), head / max(head_line, 1e-6)
        if tail_r > CODA_LIMIT and tail_r > CODA_OVER_HEAD * head_r and head_r <= CODA_HEAD_MAX:
            return (f"its end fits {player}'s takes {tail_r:.2f}x as badly as they fit each other "
                    f"(over {CODA_LIMIT:.2f}; its start {head_r:.2f}x)")
        return None


def load_voices(option: str | None = None, announcer: bool = True) -> Voices:
    """Every enrolled player, with the announcer's voice as a rival (never attributed)."""
    profiles = load_all(option)
    rivals = []
    if announcer:
        for word in sorted({p.word for p in profiles}):
            rival = announcer_profile(word)
            if rival is not None:
                rivals.append(rival)
    return Voices(profiles, rivals)
