"""The combined engine: Vosk says WHAT was called, the enrollment says WHO.

Vosk, with its vocabulary and decoys, is the better judge of whether a word
was "snap" (the enrolled matcher confuses near-miss words); the enrollment is
the only judge of which player said it. Every Vosk call is attributed at
once from the audio the enrolled spotter has already buffered (no waiting),
and a call that the announcer's own voice fits best is dropped: it is the
game's echo. The enrolled spotter is a second opinion in two places: calls
that are not words Vosk knows (Animal Snap's "woof") come from it alone, and
when the span of Vosk's one call fits two players' calls mixed better than
any one player's (a tie on one mic, ``Voices.tie``), both calls are reported
with their own onsets (a voice the tie cannot name as nobody's: TIE_UNNAMED).
Third, a call Vosk did not know (its final decode
there is "[unk]", nothing, or "stop") is rescued from the enrollment once Vosk's
decode is final, or sooner when Vosk hears nothing but "[unk]" so far
(``_rescued``, ``_early``), so that it can reach the table in time; where it
fits no one player well but two players' calls mixed, as both calls.

With the keyword model (``keyword``: a KeywordSpotter on the same audio),
WHAT has two judges. Each one's call goes through the same attribution, and
the first to report a call reports it (the other's report of the same word
is dropped, ``WhatJudges.first_report``): the keyword model usually hears a call as it
ends, and it hears calls in noise that Vosk decodes as "[unk]". A keyword
call is dropped where Vosk heard a known non-call word over it ("snack",
"nap", a rank), and a Vosk call is dropped where the keyword model never
gave it KEYWORD_VETO, waiting at most KEYWORD_WAIT after the word for its
scores (not for a one-mic tie: TIE_VOUCHES). Those rules are
``judges.WhatJudges``, shared with per-player microphones.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Sequence, cast

from ..audio import AudioChunk
from ..vocabulary import SNAP, SNAP_POOL
from ..voices import Profile
from . import Detection, Refusal, Spotter, take_refusals
from .enrolled import EnrolledSpotter, shift_tie
from .judges import UNKNOWN, WhatJudges

MATCH_WINDOW = 0.15  # s: a Vosk call and an enrolled call this close in onset are one call
LOOKAHEAD = 0.12  # s of audio after a Vosk call's end before judging who said it
# The same for the keyword model's "snap", whose "end" is already the step that heard it, 40-360 ms after
# the word (spotters.keyword): less is needed. Corpus, no claim open (docs/listening.md, "Twelfth round"):
# 0.12 -> 0.06 s: latency median / p95 136 / 247 -> 116 / 227 ms, 102 calls named right as before; at 0.0
# and 0.03, 62-81 ms median but 99 named (the matching window lacks the context after the step). Its
# "snap pool" is heard while "pool" still sounds (clean_emma: 0.22 and 0.25 s before the phrase ends;
# with no lookahead 2 such calls were named to nobody and one lost), so it waits LOOKAHEAD as Vosk's do.
KEYWORD_LOOKAHEAD = 0.06
TWIN_WINDOW = 0.3  # s: an enrolled call this close to a combined call is that call (or its tie partner)
# Enrolled score (1 - half the combined template/voice ratio) a call Vosk did not know must reach
# to be rescued. Calibrated on the corpus (docs/listening.md): no enrolled candidate on near misses,
# chatter, echo or long quiet passed the Vosk gate at any score; the two rescued calls scored
# 0.615/0.625, the near-miss matches Vosk named "snack"/"slap" 0.53-0.73 (3 of 7 below 0.6), all
# vetoed by those words. 0.6 -> 0.55 (fifth round): finn's "snap pool" in babble at 10 dB (0.578, Vosk
# heard "stop") is rescued; at any line down to 0.0 no false call is added on the corpus, nor on the
# 145 real Speech Commands words (bench.real_words), so the line only keeps a margin under real calls.
RESCUE_SCORE = 0.55
RESCUE_WAIT = 2.0  # s after the call's end: longest wait for Vosk to finalise its span
# With the keyword model (KEYWORD_RESCUE), a rescue also needs its word (judges.KEYWORD_VETO somewhere
# from the call's start to KEYWORD_WAIT after its end), as a Vosk call does. The enrollment confuses
# "snack" and "nap" in noise and inside sentences ("pass me a snack"), where Vosk hears only "[unk]":
# on the hour with no call (bench.bench_nocall) 11 false rescues, 10 of them named to the speaker,
# kw 0.22-0.81; the corpus's 3 rescued calls all 0.99. Measured: docs/listening.md, "Thirteenth round".
KEYWORD_RESCUE = True
# Decoys that do not veto a rescue. In pink noise Vosk hears real calls as "stop" (noisy_pink_20db:
# cara, dev; snap_vs_pool_1: cara; enrolled scores 0.70-0.76), while the enrollment never proposes a
# "snap" where a player said "stop": 0 of 18 (each player's "stop" clean, and in pink noise at 20 and
# 10 dB: nearmiss_*, nearmiss_noisy_*). "snack", which the enrollment does confuse, still vetoes.
RESCUE_OVER: tuple[str, ...] = ("stop",)
# s after a rescue candidate's end: if Vosk's utterance in progress holds nothing, or only "[unk]" (or
# RESCUE_OVER words), by then, the call is rescued without waiting for Vosk's final decode. That wait
# (Vosk's quiet rule: 0.9 s for bob in noisy_pink_10db) put a rescued call past what the table allows a
# spotter (table.SPOTTER_LATENCY, 0.3 s after the word), so play refused it as late; now 0.23 s (the
# enrolled engine's own latency; the other corpus rescues, over "stop" or in babble, are decided on
# Vosk's final decode as before). Corpus: the same calls and false calls at 0.12, 0.15, 0.25 s as without.
RESCUE_EARLY: float | None = 0.15
# Enrolled score from which a rescue candidate is first tried as two players' calls mixed
# (``EnrolledSpotter.tie_span``), even under RESCUE_SCORE: a tie gives both calls. Two voices at once
# fit no single template well (finn/cara 80 ms apart: 0.53; cara/finn 120 ms: 0.47), and Vosk heard
# them as "stop". Corpus: +3 calls, both at their onsets within 10 ms; at 0.0 no other call or false
# call is added (the mixture check is the gate), so the floor only spares the mixture search.
TIE_RESCUE_SCORE: float | None = 0.45
# s: on one mic, a Vosk call whose caller's template starts this much later inside Vosk's word takes
# the template's onset (since e1ea752 the energy rise there, as Vosk's onsets are found: finn after a
# clatter 15.1 -> 4.0 ms). Corpus: 3 calls moved, by 0.16-0.43 s, all to within 30 ms of the truth
# (bob's call 0.43 s after the start of the announcer's "Ten" Vosk had merged into it, now a hit
# instead of a miss and a false call; cara after "Jack"; finn after a clatter); every other call's
# template starts 0-40 ms *before* Vosk's refined onset, so any line from 0.05 to 0.15 s moves the same.
LATE_ONSET = 0.05
# s: on one mic, a Vosk call whose caller's template starts this much (up to EARLY_REACH) *earlier*
# than Vosk's refined onset takes the energy rise at the template's start. Corpus, 79 one-mic calls:
# the template starts 0-41 ms before Vosk's onset, except finn in babble at 20 dB, where Vosk's word
# began 104 ms after his; now 0 ms. Any line from 0.05 to 0.10 s moves that call only.
EARLY_ONSET = 0.06
EARLY_REACH = 0.2
POOL_TAIL = 0.7  # s after a Vosk "snap" searched for the rest of the player's "snap pool"
# With no claim open a "snap pool" is "snap" at once (vosk_spotter), and the "snap" cut from it fits neither
# the player's "snap" takes nor (cut short) their "snap pool" ones: fixture alice's two "snap pool"s in
# clean_alice were not counted ("voice not known"). A "snap" that fits nobody waits this long after its end
# (only such a call: it would be dropped) for the rest of a "snap pool", which then names the caller; only
# when the word stands POOL_HOLD_SNR over the room's floor, a sound as loud (within POOL_HOLD_DROP) follows
# it at once, and it is no one-mic tie: held for every call named to nobody (most of them in noise), the
# corpus's p95 latency with no claim open went from 209 to 454 ms.
POOL_HOLD = 0.35
POOL_HOLD_SNR = 20.0
POOL_HOLD_DROP = 8.0
# Two players 200 ms apart on one mic: Vosk can hear two call words, each span a mixture of both
# voices that fits nobody's call alone (cara/dev in the corpus: words 0.80-1.11 and 1.29-1.53 s, both
# named to nobody, the second 0.29 s late; behind the speech gate, as play runs it, Vosk heard only
# the second). The tie search over the word and what is around it finds the pair at their onsets
# (0.80 / 1.005 s for 0.80 / 1.00). So a call word named to nobody is searched for a tie from
# PAIR_BACK s before its start (unless a call was reported there) to PAIR_REACH s past its end, in
# audio already buffered (no wait); the span's own context (spotters.enrolled.CONTEXT, 0.12 s) reaches
# further back, and behind the gate cara is found 0.51 s before Vosk's word. A caller of the tie who
# already has a call reported over it is not reported again, and a later Vosk word that starts
# inside a reported call is that call.
PAIR_BACK = 0.4
PAIR_REACH = 0.25
# A Vosk call whose span fits two players' calls mixed (``Voices.tie``) is passed on without waiting for
# the keyword model's score (``WhatJudges.keep``'s ``vouched``): two enrolled calls found in one word are
# evidence of a call by themselves, and the keyword model scores such a mixture late (corpus, no claim
# open: a 20 ms tie's callers 537 / 355 ms after their words, 0.35 s of it the veto's wait;
# docs/listening.md, "Nineteenth round").
TIE_VOUCHES = True
# A one-mic tie in a Vosk call's span whose second voice the tie cannot name (a stranger calling with a
# player, or a player the mixture hides: ``Voices._tie_callers``) is still a call Vosk heard: it is reported
# with no player, as every other Vosk call that fits nobody is, so the table tells the players an unknown
# voice was not counted instead of that call vanishing. Corpus (docs/listening.md, "Twenty-fifth round"):
# emma's call with finn at 0 ms and with bob 50 ms before him, both lost before, now heard at their onsets
# (5 and 3 ms off); 142 -> 144/150 calls, the same false calls, names and no-call hour.
TIE_UNNAMED = True


CONTRAST_CALL = "slap"  # the contrast word that is a call in one variant (Slapjack: vosk_words holds it)


class CombinedSpotter:
    """Vosk detections with enrolled attribution (see module docstring)."""

    name = "combined"

    def __init__(self, vosk: Spotter, profiles: Sequence[Profile] | EnrolledSpotter,
                 vosk_words: Sequence[str] = ("snap", "snap pool"), rescue_score: float | None = RESCUE_SCORE,
                 keyword: Spotter | None = None):
        self.vosk = vosk
        self.keyword = keyword
        # the rules between Vosk and the keyword model, over the words that model knows (not Slapjack's "slap")
        self.judges = WhatJudges(vosk, keyword, [w for w in vosk_words if w in (SNAP, SNAP_POOL)], over=RESCUE_OVER,
                                 calls=vosk_words)
        # None: no rescue; needs a Vosk spotter that says what it decoded (VoskSpotter.heard)
        self.rescue_score = rescue_score if callable(getattr(vosk, "heard", None)) else None
        self._rescue: list[Detection] = []  # enrolled calls Vosk did not report, until Vosk's decode is final
        self._unk_seen: set[tuple[float, float]] = set()  # Vosk's final "[unk]" words already searched
        self._rescued_at: list[tuple[float, str | None]] = []  # (onset, player) rescued: Vosk may report them later
        self.enrolled = profiles if isinstance(profiles, EnrolledSpotter) else EnrolledSpotter(profiles)
        # Vosk hears calls with a noise over their end (48 / 47 / 42 of 48 at 30 / 20 / 10 dB, with or
        # without it); here the second match would only let more near misses in noise be rescued
        # (taken for calls 15 / 15 / 14 -> 16 / 18 / 15 of 96: bench.spotting.tail_noise_rows)
        self.enrolled.crop = False
        self.vosk_words = set(vosk_words)
        self._emitted: list[Detection] = []  # recent combined calls (to spot ties)
        self._heard: list[Detection] = []  # recent enrolled calls (for their onsets)
        self._waiting: list[Detection] = []  # Vosk calls whose end is not yet buffered
        self._refused: list[Refusal] = []  # the enrollment's near misses, until Vosk's decode over them is final
        self._ties: dict[tuple[str, str, float, float], list[Detection]] = {}  # tie searches of calls not done
        self._unnamed: set[tuple[str, str, float, float]] = set()  # "snap"s held for a "snap pool" (POOL_HOLD)

    def set_pool_exists(self, value: bool) -> None:
        """Whether "snap pool" is possible now (both engines then decide "snap" sooner)."""
        self.judges.set_pool_exists(value)
        self.enrolled.set_pool_exists(value)

    def take_refusals(self) -> list[Refusal]:
        """The enrolled engine's near misses, and the Vosk calls the keyword model doubted (``WhatJudges``),
        where no call was reported after all.

        Here Vosk decides the word: a sound the enrollment refused may still be a call Vosk
        heard (and reported), so each refusal waits until Vosk's decode over it is final (or
        RESCUE_WAIT has passed) and is dropped if a call was reported over it.
        """
        self._refused += take_refusals(self.enrolled) + self.judges.take_refusals()
        now = self.enrolled.position
        final_until = getattr(self.vosk, "final_until", now)
        out, keep = [], []
        for r in self._refused:
            if final_until < r.end and now - r.end <= RESCUE_WAIT:
                keep.append(r)
            elif not any(c.word in self.vosk_words and c.onset < r.end and r.onset < c.end
                         for c in self._emitted + self._waiting):
                out.append(r)
        self._refused = keep
        return out

    def undecided(self) -> float | None:
        """The earliest call begun but not reported: Vosk's, one waiting for its caller's whole word
        to be buffered, or an enrolled call waiting for Vosk's final decode to be rescued."""
        onsets = [d.onset for d in self._waiting]
        # enrolled calls not reported (by Vosk or a rescue) yet: waiting to be rescued, or held for "pool"
        onsets += [e.onset for e in self._rescue + self.enrolled.held_calls()
                   if not any(abs(c.onset - e.onset) <= TWIN_WINDOW for c in self._emitted + self._waiting)]
        t = self.judges.undecided()
        if t is not None:
            onsets.append(t)
        return min(onsets) if onsets else None

    def accept(self, chunk: AudioChunk) -> list[Detection]:
        second = self.enrolled.accept(chunk)  # first: its buffer must hold this chunk
        first = self.vosk.accept(chunk)
        if self.keyword is not None:
            first = first + self.keyword.accept(chunk)
        return self._combine(first, second)

    def flush(self) -> list[Detection]:
        second = self.enrolled.flush()
        first = self.vosk.flush()
        if self.keyword is not None:
            first = first + self.keyword.flush()
        return self._combine(first, second, final=True)

    def _combine(self, first: list[Detection], second: list[Detection],
                 final: bool = False) -> list[Detection]:
        out: list[Detection] = []
        # Vosk often names a call from partial results before the word is over:
        # attribution waits until the enrolled buffer holds the whole word
        now = self.enrolled.position
        heard_to = self.judges.scored_to(now)
        self._waiting += first
        ready: list[tuple[Detection, bool]] = []  # (call, vouched for: passed on before the keyword model's score)
        for d in self._waiting:
            if final or d.end + _lookahead(d) <= now:
                if not final and self._held_for_pool(d, now):
                    continue
                if final or self.judges.doubts(d, heard_to, final) is not None:
                    ready.append((d, False))
                elif self._vouched(d):
                    ready.append((d, True))
        taken = {id(d) for d, _v in ready}
        self._waiting = [d for d in self._waiting if id(d) not in taken]
        for d, vouched in ready:
            if not self.judges.keep(d, heard_to, final, vouched=vouched):
                continue
            if d.detected_at is not None:
                d = replace(d, detected_at=max(d.detected_at, now))
            if d.word not in self.vosk_words:  # commands: no attribution needed
                out.append(replace(d, engine=self.name))
                continue
            # a call rescued early (``_early``), before Vosk made up its mind, is already reported:
            # Vosk's call there is that caller's again (another player's call is still a call)
            already = {p for t, p in self._rescued_at if abs(t - d.onset) <= TWIN_WINDOW}
            reported = [c for c in self._emitted + out if c.word in self.vosk_words]
            # a tie's calls end where the mixture ends: a later Vosk word inside one is that call again
            already |= {c.player for c in reported if c.player and c.onset < d.onset < c.end}
            tie = self._tie_of(d)
            if tie:  # Vosk heard one "snap"; it was two players at once on one mic
                out += [replace(e, word=d.word, engine=self.name, detected_at=d.detected_at)
                        for e in tie if e.player not in already]
                continue
            why = self.enrolled.contrast_span(d.onset, d.end) if d.word in (SNAP, SNAP_POOL) else None
            if why is not None and CONTRAST_CALL in self.vosk_words:
                d = replace(d, word=CONTRAST_CALL)  # Slapjack: the players' own "slap" fits better: it is one
            elif why is not None:  # a "slap": the players' own takes of it fit better than their calls
                self._refused.append(Refusal(d.word, d.onset, d.end, "", why, d.channel, self.name))
                continue
            channel, att, announcer = self.enrolled.attribute_span(d.onset, d.end, d.word)
            if att.player is None and announcer:
                continue  # the game's own voice
            if _key(d) in self._unnamed:  # held for the rest of a "snap pool" (POOL_HOLD): does it name them?
                self._unnamed.discard(_key(d))
                _c, ext, _r = self.enrolled.attribute_span(d.onset, min(now, d.end + POOL_TAIL), SNAP_POOL, channel)
                if ext.player is not None:
                    att = ext
            if att.player is None and not already and now > d.end + _lookahead(d):
                start = d.onset - PAIR_BACK
                if any(start <= c.onset < d.onset for c in reported):
                    start = d.onset
                tie = self._tie_placed(self.enrolled.tie_span(start, min(now, d.end + PAIR_REACH), d.word))
                tie = [t for t in tie if not any(c.player == t.player and c.onset < t.end and t.onset < c.end
                                                 for c in reported)]
                if len({t.player for t in tie}) == 2:  # two callers: the word Vosk heard next is the second
                    pair = [replace(e, word=d.word, engine=self.name, detected_at=d.detected_at) for e in tie]
                    self._rescued_at = (self._rescued_at + [(e.onset, e.player) for e in pair])[-20:]
                    out += pair
                    continue
            if already and (att.player is None or att.player in already):
                continue
            onset = d.onset
            near = [e for e in second + self._heard
                    if e.player == att.player and abs(e.onset - d.onset) <= MATCH_WINDOW]
            # with a mic per player the enrolled onset is the rise on the caller's own mic; on one mic
            # Vosk's refined onset is the closer (corpus, one mic: onset error p95 30 -> 22 ms, clean calls
            # 17-31 ms early with the enrolled onset, within 8 ms with Vosk's)
            if near and self.enrolled.channels > 1:
                onset = min(near, key=lambda e: abs(e.onset - d.onset)).onset
            elif att.player is not None:
                # Vosk's word (and the energy burst its onset is refined in) can take in what came just
                # before the call: the announcer's rank, a clatter; the player's template then starts later
                late = self.enrolled.hit_onset(d.onset, d.end, att, channel)
                # (or, in babble, Vosk's word can start after the call did): the call is then placed at
                # the energy rise where the player's template starts
                if late is not None and (LATE_ONSET <= late - d.onset < d.end - d.onset
                                         or EARLY_ONSET <= d.onset - late <= EARLY_REACH):
                    onset = self._energy_onset(late, d.end)
            word = d.word
            if d.word == SNAP and SNAP_POOL in self.vosk_words and self.enrolled.pool_possible() and now > d.end:
                # a claim is open and Vosk heard "snap", then nothing it knew: in noise the "pool" of a
                # "snap pool" is often lost to Vosk while the player's enrolled "snap pool" still fits
                _c, ext, _r = self.enrolled.attribute_span(d.onset, min(now, d.end + POOL_TAIL), None, channel)
                if ext.phrase == SNAP_POOL and ext.player is not None:
                    word, att = SNAP_POOL, ext
            out.append(replace(d, word=word, onset=onset, player=att.player, score=att.score, channel=channel,
                               engine=self.name))
        for e in second:
            if e.word not in self.vosk_words:
                out.append(replace(e, engine=self.name))  # Animal Snap: words Vosk cannot know
                continue
            twin = [c for c in self._emitted + out
                    if c.word in self.vosk_words and abs(c.onset - e.onset) <= TWIN_WINDOW]
            if twin and all(c.player not in (e.player, None) for c in twin):
                out.append(replace(e, word=twin[0].word, engine=self.name))  # a second voice: a tie
            elif not twin and self.rescue_score is not None and \
                    not any(abs(w.onset - e.onset) <= TWIN_WINDOW for w in self._waiting):
                self._rescue.append(e)
        rescued = self._rescued(now, final, out)
        self._rescued_at = (self._rescued_at + [(d.onset, d.player) for d in rescued])[-20:]
        out += rescued
        if self._ties:
            self._ties = {k: v for k, v in self._ties.items() if any(_key(w) == k for w in self._waiting)}
        self._emitted = (self._emitted + out)[-20:]
        self._heard = (self._heard + second)[-20:]
        return sorted(out, key=lambda d: d.onset)

    def _held_for_pool(self, d: Detection, now: float) -> bool:
        """Whether ``d`` waits for the rest of a "snap pool" said with no claim open (POOL_HOLD): a
        "snap" that fits no player's call (nor the game's own voice), until POOL_HOLD after its end."""
        key = _key(d)
        if key in self._unnamed:
            return now < d.end + POOL_HOLD
        if d.word != SNAP or SNAP_POOL not in self.vosk_words or self.enrolled.pool_possible() \
                or now >= d.end + POOL_HOLD:
            return False
        word, after = self.enrolled.snr_span(d.onset, d.end), self.enrolled.snr_span(d.end, now)
        if word is None or after is None or word < POOL_HOLD_SNR or after < word - POOL_HOLD_DROP:
            return False  # (a word in noise, or one with nothing as loud said right after it)
        if self._tie_of(d):
            return False
        _c, att, announcer = self.enrolled.attribute_span(d.onset, d.end, d.word)
        if att.player is not None or announcer:
            return False
        self._unnamed.add(key)
        return True

    def _tie_of(self, d: Detection) -> list[Detection]:
        """The one-mic tie in ``d``'s span (``Voices.tie``, placed by ``_tie_placed``), or []: searched once
        per call (its span is buffered by then) and kept while the call waits."""
        key = _key(d)
        if key not in self._ties:
            tie = self.enrolled.tie_span(d.onset, d.end, d.word, unnamed=TIE_UNNAMED)
            self._ties[key] = self._tie_placed(tie)
        return self._ties[key]

    def _vouched(self, d: Detection) -> bool:
        """Whether a Vosk call is a call whatever the keyword model scores (see TIE_VOUCHES)."""
        return TIE_VOUCHES and d.engine == "vosk" and d.word in self.vosk_words and bool(self._tie_of(d))

    def _energy_onset(self, approx: float, end: float) -> float:
        """The signal's energy rise near ``approx`` as Vosk finds its own onsets (``approx`` where none)."""
        find = getattr(self.vosk, "energy_onset", None)
        got = find(approx, end) if callable(find) else None
        return approx if got is None else got

    def _early(self, e: Detection, now: float) -> bool:
        """Whether ``e`` may be judged before Vosk's decode is final: RESCUE_EARLY s after it, Vosk's
        utterance so far holds nothing, or only "[unk]" (and RESCUE_OVER words).

        Vosk's partial text trails the audio, so a near miss it would finally call "snack" may not show
        yet; the corpus has no enrolled near-miss candidate that reaches this point (see docs/listening.md)."""
        if RESCUE_EARLY is None or now - e.end < RESCUE_EARLY:
            return False
        pending = getattr(self.vosk, "pending", None)
        return pending is not None and not self.judges.vetoes(pending)

    def _may_rescue(self, e: Detection, out: list[Detection], score: float | None = None) -> bool:
        """Whether ``e`` is a call Vosk missed: its enrolled score reaches ``score`` (``rescue_score``), no call was
        reported there (by Vosk after all, or by the other rescue), and Vosk's final words over its span
        hold no known word (where Vosk heard "snack" or a rank, the enrollment is not trusted)."""
        # an enrolled call always has a score; rescue_score is set wherever rescues run (``_rescued``)
        if cast(float, e.score) < cast(float, self.rescue_score if score is None else score):
            return False
        if any(c.word in self.vosk_words and abs(c.onset - e.onset) <= TWIN_WINDOW for c in self._emitted + out):
            return False
        heard = self.vosk.heard(e.onset, e.end)  # type: ignore[attr-defined]
        # None: the recogniser cannot say what it decoded (a wrapper around another engine)
        return heard is not None and not self.judges.vetoes(w for w, _a, _b in heard)

    def _tie_rescue(self, e: Detection, out: list[Detection]) -> list[Detection]:
        """Both calls of a one-mic tie where ``e`` fits two players mixed, or []: the rescue's other
        conditions hold from TIE_RESCUE_SCORE up. Asked before the one-caller rescue: when the enrolled
        engine reports a tie's two calls, the first one rescued alone would bar its partner (a call
        already reported within TWIN_WINDOW); corpus overlap_000ms_dev_cara lost cara so."""
        if TIE_RESCUE_SCORE is None or not self._may_rescue(e, out, TIE_RESCUE_SCORE):
            return []
        return self._tie_placed(self.enrolled.tie_span(e.onset, e.end, e.word))

    def _tie_placed(self, tie: list[Detection]) -> list[Detection]:
        """A one-mic tie moved to where the mixture's energy rises (the first caller's start, found as
        Vosk's onsets are); the second caller keeps its offset from the first."""
        if self.enrolled.channels != 1:
            return tie
        return shift_tie(tie, lambda d: self._energy_onset(d.onset, d.end))

    def _rescued(self, now: float, final: bool, out: list[Detection]) -> list[Detection]:
        """Enrolled calls Vosk missed because it did not know the word there, once it is sure.

        In noise Vosk often decodes a real "snap" as "[unk]" (or nothing at
        all), while the enrollment still fits the player. Candidates are the
        enrolled engine's calls with no Vosk call near them, and the best
        enrolled call inside each of Vosk's final "[unk]" words
        (``EnrolledSpotter.call_in_span``). One is accepted when Vosk's FINAL
        decode over its span holds no known word other than RESCUE_OVER's
        (where Vosk heard "snack" or a rank, the enrollment's confusion of
        near-miss words is not trusted) and its enrolled score reaches
        ``rescue_score``. It waits
        until Vosk has finalised the span (``VoskSpotter.final_until``; at
        most RESCUE_WAIT s after the call's end, else it is dropped), so its
        latency is Vosk's endpoint delay on top of the enrolled engine's own,
        unless Vosk hears nothing known in the utterance so far (``_early``).
        """
        if self.rescue_score is None:
            self._rescue = []
            return []
        done: list[Detection] = []
        keep: list[Detection] = []
        final_until = getattr(self.vosk, "final_until", now)
        # Vosk's own "[unk]" words: the enrolled engine may not have found the call in a
        # long noisy stretch, but the best template inside the word's span can still fit
        for word, a, b in self.vosk.heard(now - RESCUE_WAIT - 1.0, now) or []:  # type: ignore[attr-defined]
            if word == UNKNOWN and (a, b) not in self._unk_seen and (final or b <= final_until):
                self._unk_seen.add((a, b))
                found = self.enrolled.call_in_span(a, b)
                if found is not None and found.word in self.vosk_words:
                    self._rescue.append(found)
        self._unk_seen = {k for k in self._unk_seen if k[1] >= now - RESCUE_WAIT - 1.0}
        heard_to = self.judges.scored_to(now)
        for e in self._rescue:
            unsure = not final and final_until < e.end  # Vosk's decode over it is not final yet
            ready = not unsure or self._early(e, now)
            if ready and KEYWORD_RESCUE and e.word in self.vosk_words:
                unheard = self.judges.unheard(e.onset, e.end, heard_to, final)
                if unheard is None and now - e.end <= RESCUE_WAIT:
                    keep.append(e)  # the keyword model's scores over it are still to come
                    continue
                if unheard is not False:
                    continue  # the keyword model heard no call there either
            tie = self._tie_rescue(e, out + done) if ready else []
            if ready and (tie or self._may_rescue(e, out + done)):
                if not tie and self.enrolled.channels == 1:
                    # one mic: the energy rise Vosk's onsets are refined from (corpus, 6 rescued calls:
                    # worst onset error 17.4 -> 8.8 ms, total 40 -> 20 ms); a tie is placed by _tie_placed
                    e = replace(e, onset=self._energy_onset(e.onset, e.end))
                done += [replace(t, engine=self.name, detected_at=max(t.detected_at or now, now)) for t in tie or [e]]
            elif unsure and now - e.end <= RESCUE_WAIT:
                keep.append(e)  # judged again once Vosk's decode is final
        self._rescue = keep
        return done


def _key(d: Detection) -> tuple[str, str, float, float]:
    return d.engine, d.word, d.onset, d.end


def _lookahead(d: Detection) -> float:
    """s of audio after ``d``'s end that attribution waits for (LOOKAHEAD, KEYWORD_LOOKAHEAD)."""
    return KEYWORD_LOOKAHEAD if d.engine == "keyword" and d.word == SNAP else LOOKAHEAD
