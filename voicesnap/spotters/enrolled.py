"""The model-free spotter: finds players' own calls by matching their enrollment.

Needs no speech model and no download, and knows no language: a call is
whatever the player enrolled ("snap", "woof", a whistle). Per channel it
tracks the background level, cuts voiced stretches with an energy detector,
and when a stretch ends matches it against every player's templates at once
(``voices.TemplateBank``: subsequence DTW, the whole template must align, so
most near-miss words cost too much). The best fit under its player's
calibrated threshold, confirmed by the voiceprint, becomes a Detection with
the player's name; the game's announcer voice competes as a rival and is
never reported. Onsets come from the signal itself (2 ms blocks), not from
the 10 ms feature grid, because ties are judged on them.

With several microphones (channels) a shout reaches all of them; it is kept
only on the channel where it is loudest, and a channel mapped to a player
(``Profile.channel``) names the caller. On one mic, two players calling at
once fit neither player's template, but they fit the two templates mixed at
the right offset (``Voices.tie``): both calls are then reported, the second
that offset later. Measured rates are in docs/voices.md.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Callable, Sequence, cast

import numpy as np

from .. import features as F
from ..audio import AudioChunk, Resampler
from ..onsets import Envelope
from ..voices import (ENC_MIN_AROUND, POOL_SUFFIX, R_LIMIT, Attribution, Profile, Tie, Voices, announcer_profile,
                      ratio_to_score, voiceprint)
from ..voices.attribution import NEAR_MISS_CALLS
from . import Detection, Refusal

HANGOVER = 15  # frames of quiet that end a stretch (150 ms): bridges "snap ... pool"
MIN_FRAMES = 8  # 80 ms: shorter bursts are clicks, not calls
MAX_FRAMES = 300  # a stretch is matched at least every 3 s, even in endless chatter
CONTEXT = 12  # frames of context kept each side of a stretch for matching
HISTORY = 300  # frames of history kept per channel for the background estimate
AROUND = 200  # frames (2 s) before a stretch handed to the speaker encoder as its background
# The speaker encoder hears the best template's placement (ENC_MARGIN frames each side) instead of
# the whole stretch when the rest of the stretch is ENC_APART_DB or more under it: chatter under a
# call, which runs into the call's stretch and made the encoder hear other voices (babble 20 dB
# under the calls: the callers' cosines 0.47-0.64 on the stretch, 0.92-0.97 on the placement). The
# caller's own talk around the word (within 1-3 dB of it) keeps the whole stretch: heard alone, the
# "snack" of "pass me a snack" passed for a call (no-call hour, talk: 2 -> 9 false calls).
ENC_MARGIN = 3
ENC_APART_DB = 10.0
SPAN_R_LIMIT = 2.5  # template ratio allowed when another engine already found the call
POOL_GAP = 35  # frames: a "snap" waits this long for a "pool" before it is final
POOL_WAIT = 80  # frames after a held call's end by which its "pool" would be over, however long the talk runs
# A call's onset: the first 2 ms block of a run of ONSET_HOLD blocks (10 ms) over the threshold, not
# stepped back. Single 2 ms blocks of room tone reach floor + 6 dB, and stepping back walks into the
# floor: clean calls came 15-34 ms early. Corpus, enrolled engine: onset error p95 33 -> 20 ms,
# median 9.9 -> 0.8 ms (hold 1, 3, 5, 8 blocks and steps back of 0, 3, 6 dB tried).
ONSET_HOLD = 5
ONSET_BACK_DB = 0.0
# On one mic a call's onset is then moved to the energy rise near it, found as Vosk's and the keyword
# model's calls are placed (``onsets.Envelope.refine_onset``: the "s" above 2 kHz first, where pink noise
# and most chatter lie below it); a tie's pair moves together by its first caller's shift, at most
# TIE_SHIFT s (as ``combined.CombinedSpotter`` places the ties it finds). Corpus, this engine alone:
# onset error p95 20.6 -> 5.2 ms (calls over 10 ms: 18 -> 4 of 120; lone calls alone 15.0 ms), median
# 0.8 -> 0.2 ms, every call, name and latency the same (docs/listening.md, "Twenty-ninth round"). Only
# words that start with an "s": Animal Snap's keep the template's onset (``_rise_onset``).
RISE_ONSET = True
# s: the most a one-mic tie is moved to the mixture's energy rise (``shift_tie``, for this engine and the
# combined one). Corpus, 18 tie stretches through the combined engine: moved 0.1-2.9 ms, except emma's
# call with finn at 0 ms (finn not heard), 18 ms -> 0.4 ms.
TIE_SHIFT = 0.03
# A one-mic tie's second call is placed at the two templates' offset (Voices.tie): on the 10 ms
# grid, where the path through both templates enters the second's first frame a frame early or on
# time (+-5 ms with the half frame added), and 2-3 frames early in some ties (corpus: both 120 ms
# overlaps of alice-bob and cara-finn 25 ms early). Every call word (SNAP, SNAP_POOL, SLAP) starts
# with a hiss the first caller's vowel lacks, so a second caller starting in that vowel is a sharp
# step in the hiss band: the second onset is moved to it when there is one near the offset.
# Fixtures (players/overlap and the corpus's one-mic overlaps, 36 ties): steps of 12.4-31.9 dB
# where it moved a call (all six 120 ms overlaps and one of 200 ms: each to within 1 ms of the
# truth), at most 8.6 dB elsewhere (a 200 ms overlap whose hiss rises slowly: kept at the
# offset); a second call starting in the first's own hiss (0-80 ms apart) shows no step.
TIE_HISS_BAND = (3000.0, 8000.0)  # Hz
TIE_HISS_SPAN = 480  # samples (30 ms) searched either side of the templates' offset
TIE_HISS_WINDOW = 160  # samples (10 ms) of level compared before and after a step
TIE_HISS_STEP_DB = 10.0  # the step needed
TIE_HISS_DIP_DB = 10.0  # ...from a level this far under the first caller's hiss (the first is in its vowel)


def hiss_onset(audio: np.ndarray, first: int, guess: int, block: int = 32) -> int | None:
    """Where a second caller's hiss starts in ``audio`` (an index), within TIE_HISS_SPAN of ``guess``, or None.

    ``first`` is the first caller's onset. The step is the largest rise of the
    hiss band's level (mean over TIE_HISS_WINDOW after minus before, 2 ms
    blocks) after ``first``, taken only where the level before it is
    TIE_HISS_DIP_DB under the loudest hiss since ``first`` and the rise is at
    least TIE_HISS_STEP_DB.
    """
    w = TIE_HISS_WINDOW // block
    a = max(0, min(first, guess - TIE_HISS_SPAN - 2 * TIE_HISS_WINDOW))
    b = min(len(audio), guess + TIE_HISS_SPAN + 2 * TIE_HISS_WINDOW)
    n = (b - a) // block
    if n < 4 * w or first < a:
        return None
    spec = np.fft.rfft(audio[a: a + n * block].astype(np.float64))
    hz = np.fft.rfftfreq(n * block, 1.0 / F.RATE)
    spec[(hz < TIE_HISS_BAND[0]) | (hz > TIE_HISS_BAND[1])] = 0.0
    hiss = np.fft.irfft(spec, n * block)
    db = 10.0 * np.log10(np.mean(np.square(hiss).reshape(n, block), axis=1) + 1e-12)
    c = np.concatenate([[0.0], np.cumsum(db)])
    k1 = (first - a) // block
    best, at = TIE_HISS_STEP_DB, None
    for k in range(max(w, k1 + w + 1), n - w + 1):
        if abs(a + k * block - guess) > TIE_HISS_SPAN:
            continue
        before = (c[k] - c[k - w]) / w
        if before > float(db[k1: k - w].max()) - TIE_HISS_DIP_DB:
            continue
        step = (c[k + w] - c[k]) / w - before
        if step >= best:
            best, at = step, a + k * block
    return at


def shift_tie(tie: list[Detection], rise: Callable[[Detection], float]) -> list[Detection]:
    """A one-mic tie moved by its first caller's shift to ``rise`` (where the mixture's energy rises),
    when that is at most TIE_SHIFT s; the second caller keeps its offset from the first."""
    if not tie:
        return tie
    first = min(tie, key=lambda d: d.onset)
    delta = rise(first) - first.onset
    return [replace(d, onset=d.onset + delta) for d in tie] if abs(delta) <= TIE_SHIFT else tie


@dataclass
class _Channel:
    """One microphone's running state (all indices in 16 kHz samples / 10 ms frames)."""

    audio: np.ndarray = field(default_factory=lambda: np.zeros(0, np.float32))
    base: int = 0  # stream sample index of frame 0
    audio_start: int = 0  # stream sample index of audio[0]
    energy: np.ndarray = field(default_factory=lambda: np.zeros(0, np.float32))
    _log_mel: np.ndarray = field(default_factory=lambda: np.zeros((0, F.N_MELS), np.float32))
    mel_frame: int = 0  # frames [frame0, mel_frame) have their log-mel in _log_mel
    frame0: int = 0  # stream frame index of energy[0]
    next_frame: int = 0  # first frame not analysed yet
    seg_start: int | None = None
    last_loud: int = -1
    run: int = 0  # consecutive loud frames while not in a stretch
    floor_db: float = -70.0
    pending: tuple[int, int, list[Detection]] | None = None  # a "snap" that may become "snap pool"
    _floor_mel: np.ndarray | None = None
    _floor_mel_at: int = -1  # next_frame when _floor_mel was taken

    @property
    def log_mel(self) -> np.ndarray:
        """Log-mel of frames [frame0, next_frame), computed on first use.

        The voice-activity detector needs only each frame's energy; the mel
        spectrum is needed only when a stretch is matched, so it is computed
        then, for every frame since the last match at once (one FFT batch,
        not one per 20 ms chunk), and never for long silences nobody matches.
        """
        if self.mel_frame < self.next_frame:
            a = self.base + self.mel_frame * F.HOP - self.audio_start
            b = self.base + (self.next_frame - 1) * F.HOP + F.FRAME - self.audio_start
            new = F.analyse(self.audio[a:b]).log_mel
            self._log_mel = np.concatenate([self._log_mel, new])
            self.mel_frame = self.next_frame
        return self._log_mel

    def drop_frames(self, cut: int) -> None:
        """Forget the first ``cut`` frames' energy and log-mel (never computing log-mel just to drop it)."""
        self.energy = self.energy[cut:]
        self._log_mel = self._log_mel[cut:]
        self.frame0 += cut
        self.mel_frame = max(self.mel_frame, self.frame0)

    @property
    def floor_mel(self) -> np.ndarray | None:
        """Per-band background (log-mel) over the last HISTORY frames, or None before any frame.

        Taken only when a match needs it (a few times a minute), not every
        chunk: it was 40% of the engine's CPU; same value as taking it every chunk.
        """
        if self._floor_mel_at != self.next_frame:
            self._floor_mel = F.noise_floor(self.log_mel[-HISTORY:]) if len(self.log_mel) else None
            self._floor_mel_at = self.next_frame
        return self._floor_mel


class EnrolledSpotter:
    """Spotter over enrolled players' calls (see module docstring)."""

    name = "enrolled"

    def __init__(self, profiles: Sequence[Profile], *, announcer: bool | Profile = True,
                 overlaps: bool = True, min_db: float = -62.0,
                 pool_exists: bool | Callable[[], bool] = True):
        rivals: list[Profile] = []
        if isinstance(announcer, Profile):
            rivals.append(announcer)
        elif announcer:
            words = {p.word for p in profiles} or {"snap"}
            for w in sorted(words):
                prof = announcer_profile(w)
                if prof is not None:
                    rivals.append(prof)
        self.voices = Voices(profiles, rivals)
        self.overlaps = overlaps
        # a stretch that runs into a loud noise is matched again cut to the call (voices.attribution.CROP_LOUD_DB);
        # the combined engine turns it off (it hears such calls through Vosk)
        self.crop = True
        self.pool_exists = pool_exists  # False (or a callable saying so): "snap" is final at once
        self.min_db = min_db
        self._channels: list[_Channel] = []
        self._resampler: Resampler | None = None
        self._position = 0  # samples seen (16 kHz clock)
        self._refusals: list[Refusal] = []  # near misses since take_refusals last ran

    # -- streaming -----------------------------------------------------------

    def accept(self, chunk: AudioChunk) -> list[Detection]:
        if chunk.rate != F.RATE:
            if self._resampler is None:
                self._resampler = Resampler(F.RATE, mono=False)
            out = self._resampler.accept(chunk)
            if out is None:
                return []
            chunk = out
        return self._feed(chunk.samples, chunk.start, final=False)

    def flush(self) -> list[Detection]:
        if self._resampler is not None:
            out = self._resampler.flush()
            if out is not None:
                dets = self._feed(out.samples, out.start, final=False)
                return dets + self._feed(np.zeros((0, max(1, len(self._channels))), np.int16),
                                         self._position, final=True)
        return self._feed(np.zeros((0, max(1, len(self._channels))), np.int16), self._position,
                          final=True)

    def _feed(self, samples: np.ndarray, start: int, final: bool) -> list[Detection]:
        pcm = samples if samples.ndim == 2 else samples[:, None]
        while len(self._channels) < pcm.shape[1]:
            self._channels.append(_Channel(base=start, audio_start=start))
        self._position = start + pcm.shape[0]
        closed: list[tuple[int, int, int]] = []  # (channel, start frame, end frame)
        for c, st in enumerate(self._channels):
            x = F.to_float(pcm[:, c]) if c < pcm.shape[1] else np.zeros(0, np.float32)
            st.audio = np.concatenate([st.audio, x])
            closed += [(c, s, e) for s, e in self._analyse(st, final)]
        dets: list[Detection] = []
        for c, s, e in closed:
            st = self._channels[c]
            held: list[Detection] = []  # a call found before this stretch, waiting for its "pool"
            s_alone = s
            if st.pending is not None:
                ps, pe, pdets = st.pending
                st.pending = None
                if s - pe <= POOL_GAP:
                    held, s = pdets, ps  # "snap" + "pool": judge them together
                else:
                    dets += pdets
            if self._is_crosstalk(c, s, e):
                continue
            found = self._match(c, s, e)
            if held and not any(d.word.endswith(POOL_SUFFIX) for d in found):
                # no "pool" grew out of it: the held call stands as heard alone, and the
                # new stretch is judged alone (in chatter, merging hid the calls after it)
                dets += self._final_now(held)
                s = s_alone
                found = [] if self._is_crosstalk(c, s, e) else self._match(c, s, e)
            # hold calls that may still grow into "<word> pool", and unmatched
            # stretches too: the "snap" of a long pause may only fit with its "pool"
            if not final and self.pool_possible() and (not found or any(self._may_grow(d) for d in found)):
                st.pending = (s, e, found)
            else:
                dets += found
        for c, st in enumerate(self._channels):
            if st.pending is not None:
                ps, pe, pdets = st.pending
                growing = st.seg_start is not None and st.seg_start - pe <= POOL_GAP
                if final or (not growing and st.next_frame - pe >= POOL_GAP):
                    dets += self._final_now(pdets)
                    st.pending = None
                elif growing and pdets and st.next_frame - pe >= POOL_WAIT:
                    # talk runs on after a held call: its "pool" would be over by now, so the call is
                    # judged with the frames a "pool" could take, and the talk after them alone
                    pool = [d for d in self._match(c, ps, pe + POOL_WAIT) if d.word.endswith(POOL_SUFFIX)]
                    dets += self._final_now(pool or pdets)
                    st.pending = None
        self._trim_history()
        return sorted(dets, key=lambda d: (d.onset, d.channel))

    def _final_now(self, held: list[Detection]) -> list[Detection]:
        """Held calls passed on now: their event time is this moment on the audio clock."""
        return [replace(d, detected_at=self._position / F.RATE) for d in held]

    def _analyse(self, st: _Channel, final: bool) -> list[tuple[int, int]]:
        """Analyse new frames and run the voice-activity state machine."""
        first_sample = st.base + st.next_frame * F.HOP - st.audio_start
        energy_db = F.frame_energy_db(F.frames(st.audio[first_sample:]))
        n = len(energy_db)
        st.energy = np.concatenate([st.energy, energy_db])
        out: list[tuple[int, int]] = []
        if n:
            st.floor_db = F.percentile_1d(st.energy[-HISTORY:], 10)
        thr = max(st.floor_db + 10.0, self.min_db)
        for k in range(n):
            f = st.next_frame + k
            loud = energy_db[k] >= thr
            if st.seg_start is None:
                st.run = st.run + 1 if loud else 0
                if st.run >= 3:
                    st.seg_start = f - 2
                    st.last_loud = f
            else:
                if loud:
                    st.last_loud = f
                if f - st.last_loud >= HANGOVER or f - st.seg_start >= MAX_FRAMES:
                    if st.last_loud + 1 - st.seg_start >= MIN_FRAMES:
                        out.append((st.seg_start, st.last_loud + 1))
                    st.seg_start, st.run = None, 0
        st.next_frame += n
        if final and st.seg_start is not None:
            if st.last_loud + 1 - st.seg_start >= MIN_FRAMES:
                out.append((st.seg_start, st.last_loud + 1))
            st.seg_start = None
        return out

    @property
    def position(self) -> float:
        """Seconds of audio received so far (the clock position of the buffer's end)."""
        return self._position / F.RATE

    @property
    def channels(self) -> int:
        """Input channels seen so far (0 before any audio)."""
        return len(self._channels)

    def held_calls(self) -> list[Detection]:
        """Calls found but held back for a possible "pool" (not stretches held unmatched: chatter)."""
        return [d for st in self._channels if st.pending is not None for d in st.pending[2]]

    def undecided(self) -> float | None:
        """The onset of the earliest call held for a possible "pool" (see spotters.undecided_from), or None."""
        held = [d.onset for d in self.held_calls()]
        return min(held) if held else None

    REFUSALS_KEPT = 50  # a caller that never asks (bench, tests) holds only the latest

    def _refuse(self, refusal: Refusal) -> None:
        self._refusals.append(refusal)
        del self._refusals[:-self.REFUSALS_KEPT]

    def take_refusals(self) -> list[Refusal]:
        """Sounds judged another word than the call they resembled since last asked, with the reason."""
        out, self._refusals = self._refusals, []
        return out

    def set_pool_exists(self, value: bool) -> None:
        self.pool_exists = value

    def pool_possible(self) -> bool:
        """Whether "snap pool" can be called now (a claim is open)."""
        value = self.pool_exists
        return bool(value() if callable(value) else value)

    def _may_grow(self, d: Detection) -> bool:
        """A call word whose player also enrolled it with "pool" after it: "pool" may follow (an Animal
        Snap player's "woof" never grows into their "snap pool")."""
        prof = self.voices.profiles.get(d.player or "")
        return prof is not None and not d.word.endswith(POOL_SUFFIX) and f"{d.word}{POOL_SUFFIX}" in prof.templates

    def _trim_history(self) -> None:
        for st in self._channels:
            keep_from = st.next_frame - 2 * HISTORY
            if st.seg_start is not None:
                keep_from = min(keep_from, st.seg_start - CONTEXT)
            if st.pending is not None:
                keep_from = min(keep_from, st.pending[0] - CONTEXT)
            cut = max(0, keep_from - st.frame0)
            if cut > 0:
                st.drop_frames(cut)
            drop = max(0, st.base + st.frame0 * F.HOP - st.audio_start)
            if drop > 0:
                st.audio = st.audio[drop:]
                st.audio_start += drop

    # -- decisions -----------------------------------------------------------

    def _level(self, c: int, s: int, e: int) -> float:
        st = self._channels[c]
        lo, hi = max(s - st.frame0, 0), max(e - st.frame0, 0)
        seg = st.energy[lo:hi]
        return float(np.percentile(seg, 90)) if len(seg) else -120.0

    def _is_crosstalk(self, c: int, s: int, e: int) -> bool:
        """True when the same stretch is clearly louder on another microphone."""
        if len(self._channels) < 2:
            return False
        # judged on the stretch's first 100 ms: a neighbour's shout that starts
        # 30 ms later is louder over the whole stretch but not at its start
        e = min(e, s + 10)
        mine = self._level(c, s, e)
        return any(self._level(o, s, e) > mine + 3.0 for o in range(len(self._channels)) if o != c)

    def _samples(self, st: _Channel, f0: int, f1: int) -> np.ndarray:
        a = max(0, st.base + f0 * F.HOP - st.audio_start)
        b = max(0, st.base + f1 * F.HOP + F.FRAME - st.audio_start)
        return st.audio[a:b]

    def _embedding_scores(self, st: _Channel, f0: int, f1: int, snr: float,
                          voices: Voices | None = None) -> dict[str, float] | None:
        """The speaker encoder's cosines for frames [f0, f1) of channel state ``st`` (Voices.embedding_scores),
        with their level over the floor (``_snr``) and the background before them; ``voices``: the
        table's voices to compare with (default this spotter's)."""
        return (voices or self.voices).embedding_scores(self._samples(st, f0, f1), snr=snr,
                                                        around=self._before(st, f0))

    def _snr(self, c: int, st: _Channel, f0: int, f1: int) -> float:
        """Level of frames [f0, f1) of channel ``c`` over its noise floor, dB."""
        return self._level(c, f0, f1) - st.floor_db

    def _before(self, st: _Channel, f0: int) -> np.ndarray | None:
        """Up to AROUND frames of audio ending 3 frames before frame ``f0`` (never the stretch itself):
        the background the encoder subtracts in noise; None when less is buffered than it needs."""
        end = f0 - 3 - 1  # _samples runs to the end of its last frame's window
        if end <= st.frame0:
            return None
        x = self._samples(st, max(st.frame0, f0 - AROUND), end)
        return x if len(x) >= ENC_MIN_AROUND * F.RATE else None

    def _match(self, c: int, s: int, e: int) -> list[Detection]:
        st = self._channels[c]
        lo = max(s - CONTEXT, st.frame0)
        hi = min(e + CONTEXT, st.frame0 + len(st.energy))
        log_mel = st.log_mel[lo - st.frame0: hi - st.frame0]
        if len(log_mel) < MIN_FRAMES or not self.voices.players:
            return []
        voices, _note = self.voices.for_call(self._samples(st, s, e))  # clipped: the takes clipped alike
        best, _ = voices.ratios(log_mel, st.floor_mel, None, crop=self.crop)
        # voiceprint per candidate span (the span its own template matched)
        voice: dict[str, float] = {}
        rank: dict[str, float] = {}
        for (player, _phrase), (_r, h) in best.items():
            if player in voice:
                continue
            vp = voiceprint(self._samples(st, max(s, lo + h.start), min(e, lo + h.end + 1)))
            voice[player] = voices.voice_ratio(player, vp)
            rank[player] = voices.rank_ratio(player, vp)
        # speaker encoder, when installed and the stretch is clear enough above the floor for it;
        # not where no player's template fits (no call whoever said it: most stretches of chatter)
        fits = [(r, h) for (p, _ph), (r, h) in best.items() if p not in voices.rivals and r <= R_LIMIT]
        enc = None
        if fits:
            h0 = min(fits, key=lambda v: v[0])[1]
            e0, e1 = max(s, lo + h0.start - ENC_MARGIN), min(e, lo + h0.end + 1 + ENC_MARGIN)
            gap = self._level(c, e0, e1) - max(self._level(c, s, e0), self._level(c, e1, e))
            if gap < ENC_APART_DB:
                e0, e1 = s, e  # the caller's own talk around the word: the whole stretch is their voice
            enc = self._embedding_scores(st, e0, e1, self._snr(c, st, e0, e1), voices)
        mapped = self.voices.player_for_channel(c) if len(self._channels) > 1 else None
        if mapped is not None:
            # the mic names the caller: the voice only has to be plausibly theirs
            # (a neighbour's crosstalk at the start of the stretch blurs the fit)
            mine = {k: v for k, v in best.items() if k[0] == mapped or k[0] in voices.rivals}
            att = voices.decide(mine, voice, accept=1.0, rank=rank, enc=enc)
        else:
            att = voices.decide(best, voice, rank=rank, enc=enc)
        if self.overlaps and mapped is None:
            tie = voices.tie(log_mel, st.floor_mel, best)
            if tie is not None:
                pair = self._tie_detections(c, s, lo, tie)
                return self._tie_placed(st, pair) if RISE_ONSET and len(self._channels) == 1 else pair
        detections: list[Detection] = []
        found: list[tuple[str, str, object]] = []
        # one caller per stretch unless the tie search found two: a "second player
        # whose template also fits" (dropped) added nothing on the synthetic
        # overlaps, and on real voices other players' templates of a short word
        # fit almost as well, so 35 of 41 lone real words got a false second caller
        # a near-miss word ("snack") fits the whole template, but not at its end (Voices.near_miss);
        # not on a player's own mic, where a neighbour's crosstalk over the call's end is what
        # fits badly (bench_voices ties, per-mic calls: 17/18 right -> 15/18 with the check there)
        if att.player is not None and att.phrase is not None:
            # (the contrast words are near misses of "snap": Slapjack's "slap", a call there, is not put to them)
            why = None if mapped is not None else (
                voices.near_miss(att.player, att.phrase, log_mel, st.floor_mel)
                or (self.voices.contrast(log_mel, st.floor_mel) if att.phrase in NEAR_MISS_CALLS else None))
            if why is None:
                found.append((att.player, att.phrase, best[(att.player, att.phrase)][1]))
            else:
                self._refuse(Refusal(att.phrase, (st.base + s * F.HOP) / F.RATE, (st.base + e * F.HOP) / F.RATE,
                                     att.player, why, c, self.name))
        thr_db = self._threshold_db(st)
        for player, phrase, hit in found:
            r = best[(player, phrase)][0]
            f_on = lo + hit.start  # type: ignore[attr-defined]
            f_end = lo + hit.end  # type: ignore[attr-defined]
            if abs(f_on - s) <= 8:
                f_on = s
            onset, end = self._refined(st, f_on, f_end + 1, thr_db)
            if len(self._channels) > 1:
                onset = self._own_onset(c, onset, thr_db)
            elif RISE_ONSET:
                onset = self._rise_onset(st, onset, end, phrase)
            mapped = self.voices.player_for_channel(c) if len(self._channels) > 1 else None
            detections.append(Detection(
                word=phrase, onset=onset / F.RATE, end=max(end, onset) / F.RATE,
                confidence=ratio_to_score(r), channel=c, player=mapped or player,
                score=ratio_to_score(0.5 * r + 0.5 * voice.get(player, r)), engine=self.name,
                detected_at=self._position / F.RATE))
        return detections

    def _tie_detections(self, c: int, s: int, lo: int, tie: Tie, word: str | None = None,
                        unnamed: bool = False) -> list[Detection]:
        """Both calls of a one-mic tie: the first from the signal's rise, the second ``tie.offset`` later
        (or at the step of its hiss near there: ``hiss_onset``).

        A caller the tie names as nobody (a stranger calling with a player, or a player
        whose voice the mixture hides) is left out, as this engine leaves out any call of
        a voice it does not know; with ``unnamed`` (another engine heard the call word
        over the pair) it is reported with no player, as that engine's calls are.
        """
        st = self._channels[c]
        f_on = lo + tie.start
        if abs(f_on - s) <= 8:
            f_on = s
        onset, end = self._refined(st, f_on, lo + tie.end + 1, self._threshold_db(st))
        end = max(end, onset)
        score = ratio_to_score(tie.ratio)
        second = onset + int(round(tie.offset * F.HOP))
        said = word or (self.voices.profiles[tie.second].word if tie.second is not None else "")
        if said.lower().startswith("s"):  # the hiss step is the "s" of the call words; Animal Snap's need not have one
            hiss = hiss_onset(st.audio, onset - st.audio_start, second - st.audio_start)
            if hiss is not None:
                second = hiss + st.audio_start
        out = []
        for player, at in ((tie.first, onset), (tie.second, second)):
            if player is None and not (unnamed and word):
                continue
            out.append(Detection(
                word=word or self.voices.profiles[cast(str, player)].word, onset=at / F.RATE,
                end=max(end, at) / F.RATE,
                confidence=score, channel=c, player=player, score=score, engine=self.name,
                detected_at=self._position / F.RATE))
        return out

    def _threshold_db(self, st: _Channel) -> float:
        """The level (dB) a call's edges are found at on this channel: over its floor, never under min_db."""
        return max(st.floor_db + 6.0, self.min_db)

    @staticmethod
    def _refined(st: _Channel, f_on: int, f_end: int, thr_db: float) -> tuple[int, int]:
        """Onset and end (samples on the clock) refined from the signal, for feature frames [f_on, f_end)."""
        shift = (st.audio_start - st.base) // F.HOP  # audio[0] is frame ``shift``
        return (F.refine_onset(st.audio, f_on - shift, thr_db, ONSET_BACK_DB, ONSET_HOLD) + st.audio_start,
                F.refine_end(st.audio, f_end - shift, thr_db) + st.audio_start)

    def _tie_placed(self, st: _Channel, pair: list[Detection]) -> list[Detection]:
        """A one-mic tie moved to the energy rise ``_rise_onset`` finds for its first caller (``shift_tie``)."""
        def rise(d: Detection) -> float:
            return self._rise_onset(st, int(round(d.onset * F.RATE)), int(round(d.end * F.RATE)), d.word) / F.RATE

        return shift_tie(pair, rise)

    @staticmethod
    def _rise_onset(st: _Channel, onset: int, end: int, word: str) -> int:
        """``onset`` (a sample on the clock) moved to the energy rise near it as the other spotters find
        theirs (``onsets.Envelope.refine_onset``: the "s" above 2 kHz first), or kept where there is none.
        The search is built for the "s" of the call words: a word that does not start with one (Animal
        Snap's "meow", "moo") keeps the template's onset, which places the players' own takes closer (3
        animal takes: 0 ms each, against 3-11 ms searched in the full band)."""
        if not word.lower().startswith("s"):
            return onset
        # what the search reads: the 0.3 s floor before its window (which opens 30 ms early), to the
        # window's end (``end``, or 0.1 s past the onset at least) and the high-pass filter's margin
        a = max(0, onset - st.audio_start - int(0.35 * F.RATE))
        b = min(len(st.audio), max(end, onset + int(0.12 * F.RATE)) - st.audio_start)
        b = max(a, b)
        env = Envelope(seconds=(b - a) / F.RATE + 0.1)
        env.push(st.audio_start + a, st.audio[a:b] * 32768.0)  # the envelope reads 16-bit levels
        rise = env.refine_onset(onset / F.RATE, latest=end / F.RATE)
        return onset if rise is None else int(round(rise * F.RATE))

    def _own_onset(self, c: int, onset: int, thr_db: float) -> int:
        """First 2 ms block from ``onset`` where channel ``c`` is not just another mic's crosstalk.

        A shout reaches the other mics later and weaker; when a neighbour's
        shout started first, the early part of this channel's stretch is its
        crosstalk, and this channel's own call starts where it becomes the
        loudest (within 6 dB) of all mics.
        """
        block, span = 32, int(0.15 * F.RATE)

        def blocks(ch: int) -> np.ndarray:
            st = self._channels[ch]
            a = onset - st.audio_start
            seg = st.audio[max(0, a): max(0, a) + span]
            n = len(seg) // block
            return 10 * np.log10(np.mean(seg[: n * block].reshape(n, block) ** 2, axis=1) + 1e-12)

        mine = blocks(c)
        others = [blocks(o) for o in range(len(self._channels)) if o != c]
        n = min([len(mine)] + [len(o) for o in others])
        if n == 0:
            return onset
        loudest_other = np.max(np.stack([o[:n] for o in others]), axis=0)
        own = (mine[:n] >= thr_db) & (mine[:n] >= loudest_other - 6.0)
        hit = np.nonzero(own)[0]
        return onset + int(hit[0]) * block if len(hit) else onset

    def _span_window(self, onset: float, end: float, channel: int | None):
        """The buffered frames around [onset, end] s: (channel, state, s, e, lo, hi), or None.

        ``s``/``e`` are the span's frames, ``lo``/``hi`` the matching window
        with context, clipped to what is still buffered; without ``channel``,
        the mic where the span is loudest.
        """
        if not self._channels:
            return None
        base = self._channels[0].base  # every channel starts with the stream's first chunk
        s = (int(onset * F.RATE) - base) // F.HOP
        e = (int(end * F.RATE) - base) // F.HOP + 1
        if channel is None:
            channel = max(range(len(self._channels)), key=lambda c: self._level(c, s, e))
        st = self._channels[channel]
        lo = max(s - CONTEXT, st.frame0)
        hi = min(e + CONTEXT, st.frame0 + len(st.energy))
        return channel, st, s, e, lo, hi

    def snr_span(self, onset: float, end: float) -> float | None:
        """Level of [onset, end] s over its mic's noise floor, dB (the loudest mic's), or None when not buffered."""
        got = self._span_window(onset, end, None)
        if got is None:
            return None
        channel, st, s, e, _lo, _hi = got
        return self._snr(channel, st, s, e) if e > s else None

    def tie_span(self, onset: float, end: float, word: str | None = None,
                 unnamed: bool = False) -> list[Detection]:
        """Two players' overlapping calls in the buffered span [onset, end] s, or [] (see Voices.tie);
        ``unnamed``: a caller the tie cannot name is reported with no player (``_tie_detections``)."""
        win = self._span_window(onset, end, None)
        if win is None or not self.overlaps or not self.voices.players:
            return []
        channel, st, s, _e, lo, hi = win
        if hi - lo < MIN_FRAMES or (len(self._channels) > 1 and self.voices.player_for_channel(channel)):
            return []
        log_mel = st.log_mel[lo - st.frame0: hi - st.frame0]
        best, _ = self.voices.ratios(log_mel, st.floor_mel, None)
        tie = self.voices.tie(log_mel, st.floor_mel, best, word if any(k[1] == word for k in best) else None)
        return [] if tie is None else self._tie_detections(channel, s, lo, tie, word, unnamed)

    def contrast_span(self, onset: float, end: float) -> str | None:
        """Why the call another engine heard in [onset, end] s is a player's contrast word ("slap"),
        or None (``Voices.contrast``). On one mic only, as the near-miss check: on a player's own mic
        a neighbour's crosstalk blurs the fit."""
        win = self._span_window(onset, end, None)
        if win is None or len(self._channels) > 1:
            return None
        _c, st, _s, _e, lo, hi = win
        if hi - lo < MIN_FRAMES:
            return None
        return self.voices.contrast(st.log_mel[lo - st.frame0: hi - st.frame0], st.floor_mel)

    def attribute_span(self, onset: float, end: float, word: str | None = None,
                       channel: int | None = None, encoder: bool = True) -> tuple[int, Attribution, bool]:
        """Who said the call heard in [onset, end] seconds (for another engine's detection).

        Uses the audio this spotter has already buffered; with several mics, the
        channel where the span is loudest. Only templates of ``word`` count when
        the players enrolled it. The flag is True when a rival (the announcer)
        fits the span best: the call is the game's own voice.
        """
        win = self._span_window(onset, end, channel)
        if win is None:
            return 0, Attribution(None, 0.0, None, {}), False
        channel, st, s, e, lo, hi = win
        if hi - lo < MIN_FRAMES or not self.voices.players:
            return channel, Attribution(None, 0.0, None, {}), False
        # the voiceprint from the voiced frames only (another engine's word span
        # may include silence or miss the word's tail)
        energy = st.energy[max(s - 5, lo) - st.frame0: min(e + 10, hi) - st.frame0]
        loud = np.nonzero(energy >= max(st.floor_db + 10.0, self.min_db))[0]
        v0, v1 = (max(s - 5, lo) + int(loud[0]), max(s - 5, lo) + int(loud[-1]) + 1) if len(loud) else (s, e)
        call = self._samples(st, v0, v1)
        voices, note = self.voices.for_call(call)  # a call past full scale: the takes clipped alike
        best, _ = voices.ratios(st.log_mel[lo - st.frame0: hi - st.frame0], st.floor_mel, None)
        (top, _ph), (top_r, _h) = min(best.items(), key=lambda kv: kv[1][0])
        players_r = min((v[0] for k, v in best.items() if k[0] not in voices.rivals), default=9.0)
        rival = top in voices.rivals and top_r < 1.0 and top_r < 0.8 * players_r
        if word is not None and any(ph == word for (_p, ph) in best):
            best = {k: v for k, v in best.items() if k[1] == word}
        vp = voiceprint(call)
        voice = {p: voices.voice_ratio(p, vp) for p in {k[0] for k in best}}
        rank = {p: voices.rank_ratio(p, vp) for p in voice}
        # speaker encoder, when installed and the span is clear enough above the floor for it
        snr = self._snr(channel, st, v0, v1)
        enc = self._embedding_scores(st, v0, v1, snr, voices) if encoder else None
        # another engine already heard a call here: the question is only who,
        # so the template may fit loosely as long as the voice fits (in noise the encoder's word suffices)
        att = voices.decide(best, voice, accept=1.0, r_limit=SPAN_R_LIMIT, rank=rank, enc=enc,
                            heard_snr=snr)
        if note:
            att = replace(att, reason=att.reason + note)
        mapped = self.voices.player_for_channel(channel) if len(self._channels) > 1 else None
        if mapped is not None and att.player is not None:
            att = replace(att, player=mapped)  # keeps the ratios and reason
        return channel, att, rival

    def hit_onset(self, onset: float, end: float, att: Attribution, channel: int) -> float | None:
        """Where the template ``attribute_span(onset, end, ..., channel)`` placed starts, refined from
        the signal (s), or None: the word's own onset when the span also holds sound before it."""
        win = self._span_window(onset, end, channel)
        if win is None or att.end <= att.start:
            return None
        _c, st, _s, _e, lo, _hi = win
        on, _end = self._refined(st, lo + att.start, lo + att.end + 1, self._threshold_db(st))
        return on / F.RATE

    def call_in_span(self, onset: float, end: float) -> Detection | None:
        """The enrolled call that fits best inside [onset, end] s, if a player's is accepted there.

        For a stretch another engine heard but could not name (Vosk's "[unk]",
        often a whole second of noise around the call): the best template hit
        in the span first, then the attribution of that hit's own frames
        (over the whole span the voiceprint is mostly the background). The
        detection gets its onset and end from the signal, like ``_match``.
        """
        win = self._span_window(onset, end, None)
        if win is None:
            return None
        # without the speaker encoder: a call inside babble is a mixture of voices to it
        # (cosine 0.58-0.67 to its own player on noisy_babble_10db), while the templates
        # and voiceprint still find it; the rescue was measured (and is gated) on those
        channel, att, _rival = self.attribute_span(onset, end, None, win[0], encoder=False)
        if att.end <= att.start:
            return None
        base, lo = win[1].base, win[4]
        a, b = (base + (lo + att.start) * F.HOP) / F.RATE, (base + (lo + att.end + 1) * F.HOP) / F.RATE
        win = self._span_window(a, b, channel)
        channel, att, rival = self.attribute_span(a, b, None, channel, encoder=False)
        if win is None or att.player is None or att.phrase is None or rival:
            return None
        _c, st, _s, _e, lo, _hi = win
        on, stop = self._refined(st, lo + att.start, lo + att.end + 1, self._threshold_db(st))
        stop = max(stop, on)
        template = att.details.get(att.player, {}).get("template", 2.0)
        return Detection(word=att.phrase, onset=on / F.RATE, end=stop / F.RATE,
                         confidence=ratio_to_score(template), channel=channel, player=att.player,
                         score=att.score, engine=self.name, detected_at=self._position / F.RATE)
