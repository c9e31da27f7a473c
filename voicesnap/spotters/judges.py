"""Two judges of WHAT was called: Vosk and the keyword model, hearing the same audio.

Vosk knows a vocabulary (and so its decoys: "snack", "nap", the ranks); the
keyword model knows only "snap" and "snap pool" but hears them in noise that
Vosk decodes as "[unk]". Their rules, measured on the corpus in the combined
engine (docs/listening.md, "Eleventh round"), live here once, because two
places need them: the combined engine (one microphone, the enrollment names
the caller) and per-player microphones (``JudgedSpotter``: the channel names
the caller, so no enrollment is needed).

* The first judge to report a call reports it; the other's report of the
  same word is dropped (``first_report``).
* A keyword call over a word Vosk heard as a known non-call is dropped
  (``heard_other``).
* A Vosk call that the keyword model never scored KEYWORD_VETO from its start
  to KEYWORD_WAIT after its end is dropped (``doubts``), unless other evidence
  vouches for it (``keep``'s ``vouched``: the combined engine's one-mic ties).
  Over the announcer, where the echo canceller removed the game's own speech
  under the word, the line is KEYWORD_VETO_ECHO (``veto_line``).
* A Vosk call whose word does not start with a hiss is dropped (``hissless``,
  ``onsets.HISS_MIN``): every call starts with the "s" of "snap", while both
  judges take "nap" in noise for it (the keyword spotter does not report such
  a call of its own).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any, Iterable, Sequence

from ..audio import AudioChunk
from ..vocabulary import SNAP, SNAP_POOL
from . import Detection, Refusal, Spotter, undecided_from

# A Vosk call whose word the keyword model scored under KEYWORD_VETO everywhere from its start to
# KEYWORD_WAIT s after its end is not a call; the head was trained to score a call from 40 to 360 ms
# after its end (models/train_keyword.py). Corpus (combined engine): at 0.3 and 0.5 nothing changes;
# at 0.8 emma's "snack" in pink noise at 20 dB, which Vosk heard as "snap" and the enrollment named
# hers (the head: 0.69), is dropped, and no call is lost. With the head retrained on weighted near
# misses (docs/listening.md, "Fourteenth round") 0.9 keeps the same corpus calls, call for call, and
# drops three of the no-call hour's six false calls named to a player (0.95 loses a call in 10 dB
# noise). On real voices the head is unmeasured for want of a real "snap"; `play --no-keyword`
# turns it (and this veto) off.
KEYWORD_VETO = 0.9
# Over the announcer the keyword model scores real calls lower: what is left of the game's own speech
# behind the echo canceller covers part of the word (calls laid over every announcement, one room, a
# game under way: all 3 calls lost were Vosk's "snap" at 0.85-0.90; from a cold start 10 of 47 at
# 0.70-0.89). So where the canceller removed speech over the word no more than ECHO_UNDER_DB under
# what it left there (the announcer was playing under it, and the canceller knew it), the line is
# KEYWORD_VETO_ECHO. Without a canceller, or before it has learnt the room, the line stays KEYWORD_VETO.
# Only on one mic (the combined engine), where a false call counts only if the enrollment names a
# player: the players' near-miss words laid over the announcer were taken for calls 17 -> 18 of 171
# times, none named. On per-player mics the channel names every call, and there the lower line
# charged 14 -> 18 of those 171 words to a player and gained no call (``JudgedSpotter``).
KEYWORD_VETO_ECHO = 0.8
ECHO_UNDER_DB = 20.0
KEYWORD_WAIT = 0.36
# Whether a keyword "snap pool" stands over a word Vosk heard as "stop" (``over``) with no "pool" there.
# "stop" does not veto a keyword call because in noise Vosk hears real calls as "stop"; but the
# keyword model also takes "stop that" for "snap pool" (0.91-0.92), which Vosk hears as "stop [unk]".
# Measured (docs/listening.md, "Thirty-first round"): the no-call hour, combined engine, 9 -> 7 false
# calls per hour (both "stop that"s, named to nobody); the corpus the same calls, finn's "snap pool" in
# babble at 10 dB (Vosk: "stop") found 60 ms later by the enrollment's rescue; per-player mics' lone-call
# corpus the same calls (two real "snap pool"s Vosk heard as "stop pool" keep their "pool"); behind the
# echo canceller the corpus's last false call goes, and every call laid over the announcer stays.
POOL_OVER = False
# The rest of a phrase that starts like a call. Vosk's grammar holds little besides the call words, so it
# hears a sentence such as "slap it down" as "snap snap" or "slap snap"; the keyword model scores its first
# word low (0.13-0.22) and the whole phrase as "snap pool" (0.95-0.99), placed at the "s" of "slap". That
# score, 0.3 s after Vosk's second word, vouched for it. So a Vosk "snap" is not vouched for by a keyword
# "snap pool" run placed to start more than TAIL_LEAD s before it (``KeywordSpotter.score_over``'s
# ``since``), and a keyword "snap pool" over which Vosk heard two "snap"s and no "pool" is no "snap pool".
# A Vosk "snap pool" keeps every run: over the announcer the keyword model placed finn's "snap pool" at
# the announcer's "four" before it. The no-call hour: stranger2's 3 such false calls gone, the corpus the
# same (docs/listening.md, "Thirty-second round").
TAIL_LEAD = 0.12
TAILS = True  # both rules (off: as before)
CALL_TOKENS = ("snap", "pool")  # Vosk's words of the calls the keyword model hears
SAME_CALL = 0.15  # s: two judges' reports of one word overlap in time, or start this close
UNKNOWN = "[unk]"


class WhatJudges:
    """The rules between a Vosk spotter and a keyword spotter (see the module docstring).

    ``over``: Vosk words that do not make a keyword call a non-call (besides "[unk]"); the combined
    engine passes its RESCUE_OVER ("stop": in pink noise Vosk hears real calls as "stop").
    ``veto_echo``: the veto's line over the announcer (KEYWORD_VETO_ECHO; per-player mics keep
    KEYWORD_VETO there).
    """

    def __init__(self, vosk: Any, keyword: Any, words: Sequence[str] = (SNAP, SNAP_POOL),
                 over: Sequence[str] = ("stop",), veto_echo: float = KEYWORD_VETO_ECHO,
                 calls: Sequence[str] = ()) -> None:
        self.vosk = vosk
        self.keyword = keyword
        self.veto_echo = veto_echo
        self.words = set(words)
        # every call word, the keyword model's or not (Slapjack's "slap"): one call reported by both judges
        # under two words (Vosk's "slap", the keyword model's "snap") is one report (``first_report``)
        self.calls = self.words | set(calls)
        self.over = tuple(over)
        self._reported: list[Detection] = []  # calls either judge reported in the last 10 s
        self._refused: list[Refusal] = []  # Vosk calls dropped by these rules, for "why was I not heard?"

    def set_pool_exists(self, value: bool) -> None:
        """Tell both judges whether "snap pool" is possible now (each decides "snap" sooner without)."""
        for engine in (self.vosk, self.keyword):
            setter = getattr(engine, "set_pool_exists", None)
            if callable(setter):
                setter(value)

    def undecided(self) -> float | None:
        """The earliest onset of a call either judge has begun to hear and not reported (or None)."""
        onsets = [t for t in (undecided_from(self.vosk), undecided_from(self.keyword)) if t is not None]
        return min(onsets) if onsets else None

    def scored_to(self, now: float) -> float:
        """How far the keyword model has scored, capped at ``now``: its resampler holds back a few ms of
        input, and the veto must not run out its wait before the model has scored the audio up to it."""
        return min(now, float(getattr(self.keyword, "position", now)))

    def vetoes(self, words: Iterable[str]) -> bool:
        """Whether Vosk heard a known word among ``words`` (anything but "[unk]" and ``over``)."""
        return any(w != UNKNOWN and w not in self.over for w in words)

    def first_report(self, d: Detection) -> bool:
        """Whether ``d`` is the first report of its word by either judge (else the other one reported
        it already: the same call, not a second one). Records ``d`` when it is."""
        if self.keyword is None or d.word not in self.calls:
            return True
        same = [r for r in self._reported if r.engine != d.engine
                and (r.onset - SAME_CALL < d.end and d.onset < r.end + SAME_CALL)]
        self._reported = [r for r in self._reported if r.end >= d.onset - 10.0]
        if same:
            return False
        self._reported.append(d)
        return True

    def doubts(self, d: Detection, now: float, final: bool) -> bool | None:
        """For a Vosk call: True when the keyword model heard no call there (drop it), None while its
        scores may still say so (wait), False otherwise."""
        if d.engine != "vosk" or d.word not in self.words:
            return False
        return self.unheard(d.onset, d.end, now, final, tail=TAILS and d.word == SNAP)

    def unheard(self, onset: float, end: float, now: float, final: bool, tail: bool = False) -> bool | None:
        """Whether the keyword model heard no call over [onset, end + KEYWORD_WAIT]: True (it scored
        under KEYWORD_VETO everywhere there and was awake), None while its scores may still say so, False
        otherwise (or with no keyword model). For any judge's call: Vosk's, or the combined engine's
        rescue of an enrolled call Vosk did not know."""
        if not callable(getattr(self.keyword, "score_over", None)):
            return False
        best = self._best(onset, end, tail)
        if best is not None and (best >= KEYWORD_VETO or best >= self.veto_line(onset, end)):
            return False
        if final or now >= end + KEYWORD_WAIT:
            # asleep there (its own energy tracker saw no speech where Vosk heard a word): no opinion
            slept = getattr(self.keyword, "slept_over", None)
            return not (callable(slept) and slept(onset, end + KEYWORD_WAIT))
        return None

    def veto_line(self, onset: float, end: float) -> float:
        """The keyword score under which a word over [onset, end] is no call: KEYWORD_VETO, or
        ``veto_echo`` where the echo canceller removed the game's own speech under it."""
        level = getattr(self.keyword, "echo_level_db", None)
        over = level(onset, end) if callable(level) else None
        return self.veto_echo if over is not None and over >= -ECHO_UNDER_DB else KEYWORD_VETO

    def hissless(self, d: Detection) -> bool:
        """For a Vosk call: whether its word starts without a hiss, as the keyword spotter, which holds
        every frame on the stream's clock, hears it (``KeywordSpotter.hissless``)."""
        if d.engine != "vosk" or d.word not in self.words:
            return False
        hissless = getattr(self.keyword, "hissless", None)
        return bool(callable(hissless) and hissless(d.onset))

    def heard_other(self, d: Detection) -> bool:
        """For a keyword call: whether Vosk heard a known non-call word over it, finally or so far.
        A "snap pool" over an ``over`` word ("stop") counts too, unless Vosk heard its "pool" as well
        (POOL_OVER)."""
        if d.engine != "keyword":
            return False
        heard = getattr(self.vosk, "heard", None)
        words = [w for w, _a, _b in heard(d.onset, d.end) or []] if callable(heard) else []
        words += getattr(self.vosk, "pending", None) or []
        others = [w for w in words if w not in CALL_TOKENS]
        if TAILS and d.word == SNAP_POOL and "pool" not in words and words.count(SNAP) >= 2:
            return True  # Vosk heard its "pool" as a second "snap": a phrase that starts like a call (TAILS)
        if (d.word == SNAP_POOL and not POOL_OVER and "pool" not in words
                and any(w in self.over for w in others)):
            return True
        return self.vetoes(others)

    def keep(self, d: Detection, now: float, final: bool, vouched: bool = False) -> bool | None:
        """Whether ``d`` (from either judge) is a call to pass on: None while the keyword model's
        scores over a Vosk call may still come. Call once per detection that is ready. ``vouched``:
        other evidence says the word is a call (a one-mic tie), so the keyword model is not waited for."""
        if self.keyword is None:
            return True
        doubt = False if vouched else self.doubts(d, now, final)
        if doubt is None:
            return None
        if doubt:
            self._refuse(d, self._doubt_reason(d))
            return False
        if self.heard_other(d):
            return False
        if self.hissless(d):
            self._refuse(d, "Vosk heard the word, but it does not start with the hiss of an 's'")
            return False
        return self.first_report(d)

    REFUSALS_KEPT = 50

    def _refuse(self, d: Detection, reason: str) -> None:
        self._refused.append(Refusal(d.word, d.onset, d.end, d.player or "", reason, channel=d.channel,
                                     engine=d.engine, taken_for=""))
        del self._refused[:-self.REFUSALS_KEPT]

    def _best(self, onset: float, end: float, tail: bool) -> float | None:
        """The keyword model's best score over [onset, end + KEYWORD_WAIT] (None: none yet, or no model)."""
        score_over = getattr(self.keyword, "score_over", None)
        return score_over(onset, end + KEYWORD_WAIT, onset - TAIL_LEAD if tail else None) if callable(score_over) else None

    def _doubt_reason(self, d: Detection) -> str:
        best = self._best(d.onset, d.end, TAILS and d.word == SNAP)
        heard = "heard no call there" if best is None else f"scored it {best:.2f}, under {self.veto_line(d.onset, d.end):.2f}"
        return f"Vosk heard the word, but the keyword model {heard} (play --no-keyword turns this check off)"

    def take_refusals(self) -> list[Refusal]:
        """The Vosk calls these rules dropped (the keyword model doubted them, no hiss) since last asked."""
        out, self._refused = self._refused, []
        return out


class JudgedSpotter:
    """Vosk and the keyword model on one channel, no attribution: a player's own microphone.

    With a microphone per player the channel names the caller
    (``spotters.channels.ChannelSpotters``), so all that is left is WHAT was
    called, and both judges hear it: in noise the keyword model hears calls
    Vosk loses. Detections keep their judge's name as ``engine``.
    """

    name = "vosk+keyword"

    def __init__(self, vosk: Spotter, keyword: Spotter, words: Sequence[str] = (SNAP, SNAP_POOL)) -> None:
        self.vosk = vosk
        self.keyword = keyword
        # the channel names every call here, so over the announcer the veto keeps its plain line
        self.judges = WhatJudges(vosk, keyword, words, veto_echo=KEYWORD_VETO)
        self._waiting: list[Detection] = []  # Vosk calls waiting for the keyword model's scores
        self._now = 0.0
        self._refused: list[Refusal] = []  # Vosk calls the judges dropped, waiting for REFUSAL_WAIT
        self._passed: list[Detection] = []  # calls passed on in the last 10 s
        self._final = False

    def set_pool_exists(self, value: bool) -> None:
        self.judges.set_pool_exists(value)

    # s of audio a doubted Vosk call waits before it is told as refused: the keyword model may still
    # report the word itself (it holds a "snap" while a "pool" may follow), and then it was heard after all
    REFUSAL_WAIT = 1.5

    def take_refusals(self) -> list[Refusal]:
        self._refused += self.judges.take_refusals()
        out: list[Refusal] = []
        keep: list[Refusal] = []
        for r in self._refused:
            if any(c.onset < r.end and r.onset < c.end for c in self._passed):
                continue  # the keyword model reported it: a call after all
            (out if self._final or self._now - r.end >= self.REFUSAL_WAIT else keep).append(r)
        self._refused = keep
        return out

    def undecided(self) -> float | None:
        onsets = [d.onset for d in self._waiting]
        t = self.judges.undecided()
        if t is not None:
            onsets.append(t)
        return min(onsets) if onsets else None

    def accept(self, chunk: AudioChunk) -> list[Detection]:
        found = self.vosk.accept(chunk) + self.keyword.accept(chunk)
        self._now = self.judges.scored_to(chunk.end / chunk.rate)
        return self._judge(found, final=False)

    def flush(self) -> list[Detection]:
        self._final = True
        return self._judge(self.vosk.flush() + self.keyword.flush(), final=True)

    def _judge(self, found: list[Detection], final: bool) -> list[Detection]:
        self._waiting += found
        out, waiting = [], []
        for d in self._waiting:
            verdict = self.judges.keep(d, self._now, final)
            if verdict is None:
                waiting.append(d)
            elif verdict:
                if d.detected_at is not None and d.detected_at < self._now:
                    d = replace(d, detected_at=self._now)
                out.append(d)
        self._waiting = waiting
        self._passed = [d for d in self._passed + out if d.end >= self._now - 10.0]
        return sorted(out, key=lambda d: d.onset)
