"""Who said a call: the enrolled player a stretch of speech fits, or nobody.

``Voices`` holds a table's profiles (and the announcer's, a rival that always
loses) and decides from the call templates, the voiceprint and, when every
player enrolled with it, the speaker encoder; see docs/voices.md for the
measurements behind each constant.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from functools import lru_cache
from typing import Callable, Sequence

import numpy as np

from .. import encoder as E
from .. import features as F
from .loudness import clip_adaptation, clipped_profile, level_gain_db, rms_db, takes_level
from .near_miss import CODA_HEAD_MAX, CODA_LIMIT, CODA_OVER_HEAD, CONTRAST_RATIO, coda_costs, coda_line
from .profiles import (VOICE_MIN_THRESHOLD, VOICE_SCALE_FLOOR, VOICE_THRESHOLD_FACTOR, Profile, build_profile,
                       load_all, profile_contrast, profile_embeddings, profile_looped, profile_speech, profile_takes, unit)
from .takes import POOL_SUFFIX, Take, pool_phrase, trim
from .templates import Hit, TemplateBank, frame_cost, voiceprint
from .ties import (TIE_CALLER, TIE_CLEAR, TIE_FAR_WARPS, TIE_GAIN, TIE_MAX_OFFSET, TIE_NEAR_WARPS, TIE_PAIRS,
                   TIE_BOTH_ORDERS, TIE_R_LIMIT, TIE_SINGLE_MAX, TIE_SINGLE_OK, TIE_STEP, TIE_WINDOW, Tie, aligned_path,
                   joint_offset, mix_parts, warped)

# A call is accepted when template and voice together fit (mean of the two
# distance/threshold ratios <= ACCEPT) and neither alone is far off.
R_LIMIT = 1.5
ACCEPT = 0.85  # mean of template and voice ratios (tuned on the fixtures: see docs/voices.md)
V_LIMIT = 1.25
STRONG_VOICE = 0.6  # ...or when the voice alone fits this well (and the mean <= 1)

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
# A second look at a word the speech-sample line just refused: with a speech sample, a
# player's cosine of at least LOOP_GREY but under their line is measured again on the word
# played twice (Encoder.embed_looped) against their takes looped alike (mixed with the speech
# as above), whose own line is LOOP_LINE; the voice keeps the better of the two views (the
# second mapped onto the first's scale). On real "the" (bench_voices draws, 4 players, 20
# enrollments) most misses were own takes at cosine 0.76-0.80, where strangers also sit; the
# looped word separates them better: 506 -> 515 of 560 named, none wrong, strangers 1.4% -> 1.7%
# (docs/voices.md, "The word played twice"; both lines were read off those five speakers). The takes'
# looped embeddings come from enrollment (``profile_looped``): a game encodes only the call.
LOOP_GREY = 0.76
LOOP_LINE = 0.76

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



def encoder_model(embs: dict[str, np.ndarray], speech: np.ndarray | None = None
                   ) -> tuple[np.ndarray, float] | None:
    """(unit centroid per phrase, cosine threshold) from a player's takes' embeddings.

    Takes made in one sitting agree more closely than calls in a game (the
    synthetic players' leave-one-out cosines are 0.87-0.98, their held-out
    noisy calls 0.83-0.94), so the threshold is capped at ENC_CAP.
    With a free-speech sample each centroid is the mean of the takes' and the
    speech's directions, and the cap is ENC_SPEECH_CAP.
    """
    def centroid(m: np.ndarray) -> np.ndarray:
        c = unit(m.mean(axis=0))
        return c if speech is None else unit(c + speech)

    cents, loo = [], []
    for m in embs.values():
        if len(m) < 2:
            continue
        cents.append(centroid(m))
        loo += [float(unit(m[i]) @ centroid(np.delete(m, i, axis=0))) for i in range(len(m))]
    if not cents:
        return None
    return np.stack(cents).astype(np.float32), min(float(np.median(loo)), ENC_CAP if speech is None else ENC_SPEECH_CAP)

def ratio_to_score(r: float) -> float:
    """Distance / threshold (1 = boundary) to a 0..1 score (0.5 = boundary)."""
    return float(np.clip(1.0 - 0.5 * r, 0.0, 1.0)) if math.isfinite(r) else 0.0


ANNOUNCER = "<announcer>"  # rival profile names start with this (no player's name can: profiles.check_name)


def rival_words(name: str) -> str:
    """A rival's name as a player hears it: "<announcer> snap" is read aloud as "less than announcer
    greater than snap"."""
    word = name[len(ANNOUNCER):].strip() if name.startswith(ANNOUNCER) else name
    return f"the game's own voice saying '{word}'" if word else "the game's own voice"


@lru_cache(maxsize=8)
def announcer_profile(word: str = "snap") -> Profile | None:
    """A profile of the game's own announcer voice, rendered locally (no recording).

    Attribution treats it as a rival that always loses: when the announcer's
    own "snap" fits best, the call is nobody's. None when speech cannot be rendered.
    Cached: the same (read-only) profile for every spotter.
    """
    try:
        from ..speech import VoiceSettings, render
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
                 encoder: E.Encoder | None | str = "auto", second_look: bool = True):
        self.rivals = {p.name for p in rivals}
        every = [*profiles, *[r for r in rivals if r.name not in {p.name for p in profiles}]]
        self.profiles = {p.name: p for p in every}
        self.players = [p.name for p in profiles]
        self.bank = TemplateBank([(p.name, ph, t) for p in every
                                  for ph, ts in p.templates.items() for t in ts])
        self.channels = {p.channel: p.name for p in profiles if p.channel is not None}
        # the players' call takes and their takes of contrast words, in one bank (``contrast``)
        words = [(p.name, w, t) for p in profiles for w, ts in profile_contrast(p).items() for t in ts]
        # (in Slapjack a contrast word is also a call phrase, ``contrast_as_call``: not a call take here)
        told = {w for _p, w, _t in words}
        calls = [(p.name, ph, t) for p in profiles for ph, ts in p.templates.items() if ph not in told for t in ts]
        self._contrast = (TemplateBank(calls + words), len(calls)) if words else None
        self._rank_models = self._pooled_voice_models(profiles)
        self.encoder, self._enc_models = self._encoder_models(profiles, every, encoder)
        self._coda_lines: dict[tuple[str, str], tuple[float, float]] = {}  # near_miss's lines, on first use
        self.clipped_to: float | None = None  # set on voices learnt from clipped takes (``loudness``)
        self._levels = {p.name: takes_level(p) for p in every}  # each voice's takes' level (None: not kept)
        self._clipped: dict[float, Voices | None] = {}  # clip share -> those voices, built on first use
        self._loop_models = self._looped_models(profiles, second_look)  # the second look's voices (``_second_look``)

    def clipped(self, share: float) -> Voices | None:
        """These voices learnt again from their takes clipped until ``share`` of each passes full scale
        (``voices.loudness``), or None when some voice was saved without its takes. Built on first use
        for each share (about 0.1 s of CPU per voice with the speaker encoder), then kept."""
        if self.clipped_to is not None:
            return self
        if share not in self._clipped:
            players = [clipped_profile(self.profiles[n], share, self.encoder) for n in self.players]
            rivals = [clipped_profile(self.profiles[n], share, self.encoder) for n in sorted(self.rivals)]
            if any(p is None for p in players):
                self._clipped[share] = None
            else:
                # (no second look: their takes played twice would be computed mid-game, about 0.1 s a take)
                voices = Voices([p for p in players if p is not None], [r for r in rivals if r is not None],
                                encoder=self.encoder, second_look=False)
                voices.clipped_to = share
                self._clipped[share] = voices
        return self._clipped[share]

    def for_call(self, y: np.ndarray) -> tuple[Voices, str]:
        """The voices to match call ``y`` (float audio, the call itself) against, and a note for the
        attribution's reason: a clipped call (``loudness.clip_adaptation``) against these voices learnt
        from their takes clipped alike; any other call, or a table saved without its takes, (self, "")."""
        share = None if self.clipped_to is not None else clip_adaptation(y)
        voices = None if share is None else self.clipped(share)
        if voices is None:
            return self, ""
        return voices, f" (against takes clipped as the call is: {share:.0%} of its samples at full scale)"

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
            model = encoder_model(got[1], speech.get(name))
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
        if noisy and snr is not None and (not known or snr < ENC_DENOISED_MIN_SNR):  # (noisy: snr is set)
            return None
        # a call far louder (or quieter) than a voice's takes is also heard at their level
        # (voices.loudness: the encoder never lowers loud input); one embedding per distinct gain
        level = rms_db(y)
        gains = {n: level_gain_db(level, self._levels.get(n)) for n in self._enc_models}
        levels = sorted({0.0, *gains.values()})
        ks = [np.float32(10.0 ** (g / 20.0)) for g in levels]
        background = around if noisy else None
        embs = dict(zip(levels, self.encoder.embed_many(
            [y * k for k in ks], [None if background is None else background * k for k in ks])))
        # as heard, or brought down: whichever fits the voice better (a word can be loud by nature)
        cos = {n: float(max(np.max(c @ embs[0.0]), np.max(c @ embs[gains[n]])))
               for n, (c, _thr) in self._enc_models.items()}
        if background is None:
            self._second_look(y, cos)
        return cos

    def _looped_models(self, profiles: Sequence[Profile], second_look: bool) -> dict[str, np.ndarray]:
        """Per player with a speech sample and their takes' looped embeddings (``profile_looped``, kept at
        enrollment): their centroid per phrase, mixed with the speech as ``encoder_model`` does
        (``LOOP_LINE``). A profile saved before they were kept has them computed here, once, as the table
        is set up (about 0.1 s a take), never in the middle of a game. ``second_look`` False: none."""
        out: dict[str, np.ndarray] = {}
        if not second_look or self.encoder is None:
            return out
        for prof in profiles:
            speech = profile_speech(prof)
            if speech is None or prof.extra.get("encoder") != self.encoder.fingerprint:
                continue
            looped = profile_looped(prof)
            takes = profile_takes(prof) if looped is None else None
            if takes:
                groups: dict[str, list[np.ndarray]] = {}
                for t, e in zip(takes, self.encoder.embed_looped([t.audio for t in takes])):
                    groups.setdefault(t.phrase, []).append(e)
                looped = {ph: np.stack(v) for ph, v in groups.items()}
            cents = [unit(unit(np.mean(v, axis=0)) + speech) for v in (looped or {}).values() if len(v) >= 2]
            if cents:
                out[prof.name] = np.stack(cents).astype(np.float32)
        return out

    def _second_look(self, y: np.ndarray, cos: dict[str, float]) -> None:
        """Raise, in place, the cosine of each player just under their line (LOOP_GREY and up) whom
        the word played twice fits (``LOOP_LINE``): the better view of the two, on the first's scale."""
        models = self._loop_models  # (empty without the encoder)
        grey = [n for n in self.players if n in cos and n in models and LOOP_GREY <= cos[n] < self._enc_models[n][1]]
        if not grey or self.encoder is None:
            return
        e = self.encoder.embed_looped([y])[0]
        for n in grey:
            loop = float(np.max(models[n] @ e))
            thr = self._enc_models[n][1]
            cos[n] = max(cos[n], 1.0 - (1.0 - loop) * (1.0 - thr) / (1.0 - LOOP_LINE))

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
            return Attribution(None, 0.0, None, {n: 0.0 for n in self.players},
                               reason="nothing was heard: silence or a steady noise, no call" if self.players
                               else "no players enrolled")
        voices, note = self.for_call(y)
        if voices is not self:
            att = voices.attribute(full)  # already at the features rate: not resampled again
            return replace(att, reason=att.reason + note)
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
                               f"no enrolled player fits it as well as {rival_words(name)} does")
        strong = v <= STRONG_VOICE and comb <= 1.0  # the voice itself is unmistakable
        why = []
        if comb > accept and not strong:
            why.append(f"combined {comb:.2f} over {accept:.2f} (and voice {v:.2f} over {STRONG_VOICE:.2f})")
        if r > r_limit:
            why.append("template {} over {}".format(*_apart(r, r_limit)))
        if v > V_LIMIT:
            why.append(f"voice {v:.2f} over {V_LIMIT:.2f}")
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
                           f"{name}: combined {comb:.2f} at most {accept:.2f}" if comb <= accept else
                           f"{name}: voice {v:.2f} at most {STRONG_VOICE:.2f} and combined {comb:.2f} at most 1.00")

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
                               f"no enrolled player fits it as well as {rival_words(name)} does")
        thr = self._enc_models[name][1]
        # as with the voiceprint: an unmistakable voice may carry a loosely fitting template
        # (clean_emma in the corpus: cosine 0.93, template 1.46)
        strong = er[name] <= STRONG_VOICE and comb[name] <= 1.0
        why = []
        if er[name] > 1.0:
            why.append("voice {} under {}".format(*_apart(enc[name], thr)))
        if r > r_limit:
            why.append(f"template {r:.2f} over {r_limit:.2f}")
        if comb[name] > accept and not strong:
            why.append("combined {} over {}".format(*_apart(comb[name], accept)))
        if voice and name in voice and 0.5 * (r + voice[name]) > ENC_WHAT_LIMIT:
            why.append(f"template and voiceprint {0.5 * (r + voice[name]):.2f} over {ENC_WHAT_LIMIT:.2f}")
        if why and by_voiceprint == name and er[name] <= 1.0 and r <= r_limit:
            return Attribution(name, scores[name], phrase, scores, h.start, h.end, details,
                               f"{name}: voice {enc[name]:.2f} at least {thr:.2f}, and the voiceprint rule accepts "
                               f"(combined {comb[name]:.2f} over {accept:.2f})")
        if why and heard_snr is not None and heard_snr < ENC_MIN_SNR and er[name] <= 1.0 and r <= r_limit:
            return Attribution(name, scores[name], phrase, scores, h.start, h.end, details,
                               f"{name}: voice {enc[name]:.2f} at least {thr:.2f} in noise ({heard_snr:.0f} dB over "
                               f"the floor), where the other checks fail real calls")
        if why:
            return Attribution(None, scores[name], None, scores, h.start, h.end, details,
                               f"closest is {name}, but " + "; ".join(why))
        return Attribution(name, scores[name], phrase, scores, h.start, h.end, details,
                           f"{name}: voice {enc[name]:.2f} at least {thr:.2f}, combined {comb[name]:.2f} at most "
                           + (f"{accept:.2f}" if comb[name] <= accept else f"1.00 (voice ratio {er[name]:.2f} at most "
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
            return f"{pa}\n{pha}\n{pb}\n{phb}", str(d), np.logaddexp(*mix_parts(ta, tb, d))

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
        tried = [*hits, *(TemplateBank(finer).match_log_mel(log_mel, floor) if finer else [])]
        h = min(tried, key=lambda h: h.distance)
        pa, _pha, pb, _phb = h.player.split("\n")
        # the best pair's neighbouring offsets in both orders, each around that order's best offset
        # (TIE_BOTH_ORDERS): two calls a frame or two apart fit either way round, and a caller may fit
        # their place only in one (emma and finn at once: emma 0-2 frames first, the only order refined
        # before, left finn unnamed; finn 1 frame first fits better and names both)
        near = []
        for x, y in ((pa, pb), (pb, pa)) if TIE_BOTH_ORDERS else ((pa, pb),):
            same = [t for t in tried if t.player.split("\n")[0::2] == [x, y]]
            dx = int(min(same, key=lambda t: t.distance).phrase) if same else 0
            # (offset 0 is one mixture whichever order it was tried in)
            done = {int(t.phrase) for t in same} | {0 for t in tried if t.phrase == "0"
                                                    and set(t.player.split("\n")[0::2]) == {x, y}}
            near += [mixed(x, y, d) for d in range(max(0, dx - TIE_STEP + 1), min(TIE_MAX_OFFSET, dx + TIE_STEP - 1) + 1)
                     if d not in done]
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
        joint = joint_offset(log_mel, floor, mats[first][1], mats[second][1], int(h.phrase))
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
        x, y = mix_parts(ta, tb, offset)
        bank = TemplateBank([("", "", np.logaddexp(x, y))])
        cost = frame_cost(F.call_cepstra(log_mel, floor), bank.cepstra(F.peak_level(log_mel), float(log_mel.max()), floor))
        path = aligned_path(cost)
        local = np.array([cost[i, j] for i, j in path], np.float64)
        ex, ey = (np.logaddexp.reduce(z.astype(np.float64), axis=1)[[j for _i, j in path]] for z in (x, y))
        share_first = 1.0 / (1.0 + np.exp(ey - ex))
        own = [float(np.sum(local * w) / max(float(np.sum(w)), 1e-9)) / self.profiles[p].thresholds[ph]
               for p, ph, w in ((first, ph1, share_first), (second, ph2, 1.0 - share_first))]
        out = []
        for k, (p, q) in enumerate(((first, second), (second, first))):
            ph, t = mats[p]
            voices = {c: m for c, m in mats.items() if c not in (p, q)}
            voices.update({f"{p} x{a}": (ph, warped(t, a)) for a in (*TIE_NEAR_WARPS, *TIE_FAR_WARPS)})
            items = []
            for c, (phc, tc) in voices.items():
                for d in range(max(0, offset - TIE_STEP), min(TIE_MAX_OFFSET, offset + TIE_STEP) + 1):
                    parts = mix_parts(tc, mats[q][1], d) if k == 0 else mix_parts(mats[q][1], tc, d)
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

    def contrast(self, log_mel: np.ndarray, floor: np.ndarray | None) -> str | None:
        """Why the call heard in ``log_mel`` is a contrast word ("slap"), or None.

        Some player's takes of the word fit it at under CONTRAST_RATIO of the cost of the
        best-fitting call take (near_miss.CONTRAST_WORDS). None when no player enrolled one.
        """
        if self._contrast is None or len(log_mel) == 0:
            return None
        bank, n = self._contrast
        hits = bank.match_log_mel(log_mel, floor)
        call, word = min(hits[:n], key=lambda h: h.distance), min(hits[n:], key=lambda h: h.distance)
        if word.distance < CONTRAST_RATIO * call.distance:
            return (f"it fits {word.player}'s '{word.phrase}' takes better than any call take "
                    f"({word.distance:.2f} against {call.distance:.2f}, {call.player}'s '{call.phrase}')")
        return None

    def near_miss(self, player: str, phrase: str, log_mel: np.ndarray, floor: np.ndarray | None) -> str | None:
        """Why the call of ``player``'s ``phrase`` found in ``log_mel`` is another word, or None.

        Its closing sounds fit the player's takes far worse than the takes fit each
        other, while its opening fits like a call (see CODA_LIMIT); the player's line is
        worked out from the stored templates on first use, so profiles are unchanged.
        """
        if phrase not in NEAR_MISS_CALLS:
            return None
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


def _apart(a: float, b: float) -> tuple[str, str]:
    """``a`` and ``b`` to 2 decimals, or to as many more (up to 4) as it takes to print them apart
    ("voice 0.84 < 0.84" said why a player was refused)."""
    n = 2
    while n < 4 and f"{a:.{n}f}" == f"{b:.{n}f}":
        n += 1
    return f"{a:.{n}f}", f"{b:.{n}f}"


#: The calls the near-miss check was measured on ("snack", "nap", "map" for "snap"). An Animal Snap noise
#: has no such words known, and its tail is often a glide that fades into the room: bob's own enrollment
#: take of "meow", played back in a room at -62 dBFS, ended 2.4x as badly as his takes fit each other
#: and was refused as "another word" every time.
NEAR_MISS_CALLS = ("snap", "snap pool")


def load_voices(option: str | None = None, announcer: bool = True,
                on_damaged: Callable[[str], None] | None = None) -> Voices:
    """Every enrolled player, with the announcer's voice as a rival (never attributed);
    ``on_damaged``: as load_all (a damaged profile left out, and why)."""
    profiles = load_all(option, on_damaged)
    rivals = []
    if announcer:
        for word in sorted({p.word for p in profiles}):
            rival = announcer_profile(word)
            if rival is not None:
                rivals.append(rival)
    return Voices(profiles, rivals)
