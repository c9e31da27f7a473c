"""The keyword spotter: calls from the keyword model's scores (voicesnap.keyword).

Why it looks the way it does:

* A call is a run of steps (80 ms each) whose P(snap) + P(snap pool) is over
  ``threshold``; it is reported once, when the run begins, and a new call may
  begin only after the score has fallen under ``release``. The head was
  trained to fire from 40 ms to 360 ms after the word's last sample
  (models/train_keyword.py), so a call is usually reported just after it ends.
* "snap" vs "snap pool", as in the Vosk spotter: with no pool claim open
  (``pool_exists`` False) every call is "snap" at once. While one is open a
  "snap" is held until P(snap pool) passes ``threshold`` (then "snap pool"),
  or the signal has been quiet for ``pool_quiet`` after it, or ``pool_wait``
  has passed. A new run while one is held is that call's "pool" when it
  hears "snap pool" (the score can dip between the two words), else a second
  "snap": one call either way, never two for one "snap pool".
* Onsets come from the signal (``onsets.Envelope``): the start of the word's
  "s", refined to the energy rise (``_place``). The model's own time grid is
  80 ms, far too coarse for ties.
* The model knows only "snap" and "snap pool": Slapjack's "slap", commands
  and Animal Snap's words are the other engines' work.
* With ``gate`` (as play runs it unless --no-gate) both networks sleep while
  its own energy tracker (``gate.EnergyTracker``, the margins of Vosk's
  speech gate, on the 16 kHz input) has seen no speech for ``HANGOVER`` s;
  the stream computes the last 2 s it skipped on waking, so every step
  scored awake sees the context an ungated stream gives it (scores within
  0.05 of the ungated ones on corpus files with random sleeps; the same
  corpus detections: ``python3 -m bench.spotting keyword-gated``). Idle:
  2.0% of a core -> 0.3% per microphone. Steps skipped asleep are marked
  (``Scores.asleep``): where the model slept it has no opinion, and vetoes
  nothing another engine heard (``slept_over``).
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from typing import Callable, Sequence

from ..audio import AudioChunk, Resampler
from ..keyword import RATE, KeywordModel, KeywordStream, Scores
from ..onsets import Envelope
from ..vocabulary import SNAP, SNAP_POOL
from . import Detection
from .gate import EnergyTracker

__all__ = ["KeywordSpotter", "THRESHOLD"]

# P(call) a step must reach to start a call. Chosen on the fixture corpus
# (docs/listening.md): the trade between calls heard and near misses taken.
THRESHOLD = 0.9
RELEASE = 0.5  # P(call) a run must fall under before the next call can begin
TYPICAL_LEAD = 0.45  # s from a call's onset to the step that hears it, when the signal shows no burst
POOL_SPAN = (1.5, 0.45)  # s before a "snap pool" is heard: where its "s" is looked for
POOL_LEAD = 0.8  # s from a "snap pool"'s onset to the step that hears it, when the signal shows no "s"
HISTORY_STEPS = 125  # 10 s of scores kept for ``score_over``
# s after the last speech-like frame that the embedding network keeps running (``gate``): the head fires
# up to 0.36 s after a word and its score must then fall under ``release``; a held "snap" keeps it awake.
HANGOVER = 1.5
REACH = 0.2  # s before the call's "s" searched for the word's energy rise (``_place``)
# A weak "s" under steady noise: the rise found is its louder part or the vowel, and the onset is walked back
# over the "s" as the Vosk spotter's are (``Envelope.hiss_lead``). Where both engines hear a call the combined
# engine reports whichever is ready first: emma's "snap pool" in pink noise at 5 dB was 40 ms late from this
# spotter, 2 ms early from Vosk's (docs/listening.md, "Thirty-fifth round").
HISS_LEAD = True


@dataclass
class _Held:
    """A "snap" waiting to learn whether "pool" follows (a claim is open)."""

    onset: float
    end: float
    conf: float
    heard_at: float


class KeywordSpotter:
    """Spots "snap" and "snap pool" with the keyword model (see module docstring).

    ``channel`` picks one input channel (a player's own microphone); None mixes
    all. ``pool_exists`` (bool, or a callable asked at decision time) says
    whether "snap pool" is possible now; ``calls`` the call phrases that count.
    """

    name = "keyword"

    def __init__(self, model: KeywordModel, *, channel: int | None = 0,
                 calls: Sequence[str] = (SNAP, SNAP_POOL), pool_exists: bool | Callable[[], bool] = True,
                 threshold: float = THRESHOLD, release: float = RELEASE, pool_wait: float = 1.2,
                 pool_quiet: float = 0.3, gate: bool = False) -> None:
        self.model = model
        self.channel = channel
        self.calls = tuple(c for c in calls if c in (SNAP, SNAP_POOL))
        self.pool_exists = pool_exists
        self.threshold = threshold
        self.release = release
        self.pool_wait = pool_wait
        self.pool_quiet = pool_quiet
        self._resampler = Resampler(RATE, channel=channel)
        self._stream = KeywordStream(model)
        self._env = Envelope()
        self._armed = True  # the score has been under ``release`` since the last call
        self._held: _Held | None = None
        self.last: Scores | None = None  # the newest scores (another engine may consult them)
        # recent scores (``score_over``), each with where the run it belongs to was placed to start (None: in no run)
        self._history: deque[tuple[Scores, float | None]] = deque(maxlen=HISTORY_STEPS)
        self._run_onset: float | None = None
        self._tracker = EnergyTracker() if gate else None
        self._quiet = 0  # samples since the tracker's last speech-like frame (``gate``)

    # ------------------------------------------------------------------ stream

    @property
    def position(self) -> float:
        return self._stream.position

    def set_pool_exists(self, value: bool) -> None:
        self.pool_exists = value

    def accept(self, chunk: AudioChunk) -> list[Detection]:
        out = self._resampler.accept(chunk)
        return self._feed(out, chunk.end / chunk.rate) if out is not None else []

    def flush(self) -> list[Detection]:
        found: list[Detection] = []
        tail = self._resampler.flush()
        if tail is not None:
            found += self._feed(tail, self.position + tail.frames / RATE)
        if self._held is not None:
            found.append(self._emit(SNAP, self._held, self.position))
            self._held = None
        return found

    def undecided(self) -> float | None:
        """The onset of a call heard but not yet reported (a "snap" held for "pool"), or None."""
        return self._held.onset if self._held is not None else None

    def energy_onset(self, approx: float, latest: float) -> float | None:
        """The energy rise (s) within 50 ms of ``approx``, as the Vosk spotter finds it (CombinedSpotter)."""
        return self._env.rise_near(approx, latest)

    def hissless(self, onset: float) -> bool:
        """Whether the word at ``onset`` (s) starts without the hiss of an "s" (``onsets.HISS_MIN``): this
        spotter reports no such call, and the judges ask it of Vosk's, because it keeps every frame on the
        stream's clock, asleep or awake, where Vosk behind its speech gate hears only the stretches around
        speech, on a spliced clock."""
        return self._env.hissless(onset)

    def echo_level_db(self, a: float, b: float) -> float | None:
        """dB of the game's own speech the echo canceller removed over [a, b] s, relative to the word
        left there (``onsets.Envelope.echo_level_db``; None without a canceller): the judges read
        this spotter's scores there against a lower line (``judges.KEYWORD_VETO_ECHO``)."""
        return self._env.echo_level_db(a, b)

    def score_over(self, a: float, b: float, since: float | None = None) -> float | None:
        """The highest P(call) of the steps whose audio ends in [a, b] s, or None if none is known yet.
        ``since``: leave out the steps of a "snap pool" run placed to start before it (s): they heard a
        phrase that began earlier, of which a "snap" at ``a`` is the rest (``judges.TAIL_LEAD``)."""
        got = [s.call for s, o in self._history
               if a <= s.time <= b and (since is None or o is None or o >= since or s.probs[2] <= s.probs[1])]
        return max(got) if got else None

    def slept_over(self, a: float, b: float) -> bool:
        """Whether every step known in [a, b] s was skipped asleep (``gate``): the model did not listen
        there, so it has no opinion on a call another engine heard (``judges.WhatJudges.doubts``)."""
        got = [s.asleep for s, _o in self._history if a <= s.time <= b]
        return bool(got) and all(got)

    # --------------------------------------------------------------- internals

    def _awake(self, chunk: AudioChunk) -> bool:
        """Whether the embedding network runs for this chunk (always, without ``gate``)."""
        if self._tracker is None:
            return True
        since = self._tracker.update(chunk.samples, RATE)
        self._quiet = since if since >= 0 else self._quiet + chunk.frames
        return self._quiet < HANGOVER * RATE or self._held is not None

    def _pool(self) -> bool:
        value = self.pool_exists
        return bool(value() if callable(value) else value) and SNAP_POOL in self.calls

    def _feed(self, chunk: AudioChunk, detected_at: float) -> list[Detection]:
        self._env.push(chunk.start, chunk.samples, chunk.echo)
        found: list[Detection] = []
        for s in self._stream.push(chunk.start, chunk.samples, self._awake(chunk)):
            self.last = s
            found += self._step(s, detected_at)
            self._history.append((s, self._run_onset))
        found += self._decide_held(detected_at)
        return found

    def _step(self, s: Scores, detected_at: float) -> list[Detection]:
        call = s.call
        starts = self._armed and call >= self.threshold and bool(self.calls)  # a new run begins here
        if self._held is not None and (s.probs[2] >= self.threshold or (starts and s.probs[2] > s.probs[1])):
            # the held "snap"'s "pool", also where the score dipped between the words: one call, not two
            held, self._held = self._held, None
            self._armed = False
            return [self._emit(SNAP_POOL, held, detected_at, end=s.time)]
        if not self._armed:
            self._armed = call < self.release
            if self._armed:
                self._run_onset = None
            return []
        if not starts:
            return []
        self._armed = False
        snap_pool = s.probs[2] > s.probs[1]
        # another "snap" while one is held: the held one was a "snap"
        found = [self._emit(SNAP, self._held, detected_at)] if self._held is not None else []
        self._held = None
        onset, end, hissless = self._place(s.time, snap_pool)
        self._run_onset = onset
        if hissless:  # "nap", "map": no "s" at the start, so no call (the run stays disarmed)
            return found
        if snap_pool and self._pool():
            return found + [self._emit(SNAP_POOL, _Held(onset, end, call, s.time), detected_at)]
        if self._pool():
            self._held = _Held(onset, end, call, s.time)
            return found
        word = SNAP if SNAP in self.calls else SNAP_POOL
        return found + [self._emit(word, _Held(onset, end, call, s.time), detected_at)]

    def _decide_held(self, detected_at: float) -> list[Detection]:
        held = self._held
        if held is None:
            return []
        now = self.position
        if not self._pool() or now >= held.heard_at + self.pool_wait or (
                now >= held.heard_at + self.pool_quiet and not self._env.active_after(now - self.pool_quiet)):
            self._held = None
            return [self._emit(SNAP, held, detected_at)]
        return []

    def _place(self, heard: float, snap_pool: bool = False) -> tuple[float, float, bool]:
        """(onset, end, hissless) of the call the step ending at ``heard`` s detected (``snap_pool``: the
        head heard "snap pool", so the "s" lies before a whole "pool": searched from POOL_SPAN back), and
        whether the word starts without a hiss there (``hissless``: judged once per onset).

        The start of the word's "s" (its loudest high-band stretch), then the energy rise up to
        REACH before it: a vowel can outshine the "s", which then starts up to ~150 ms before the
        loudest stretch. Corpus, 109 lone calls the model heard: 100 within 10 ms of the truth;
        the energy burst before the step, as Vosk's partial calls are placed, took in a clatter or
        talk just before 29 of them (docs/listening.md). The rise is judged clear by the word up to
        the step, not the 30 ms after the "s" alone: in noise the "s" is found up to 11 ms early
        (its stretch is smoothed), and those 30 ms stood under the 12 dB line (docs/listening.md,
        "Twenty-ninth round").
        """
        approx = self._env.fricative_onset(heard, *POOL_SPAN) if snap_pool else self._env.fricative_onset(heard)
        if approx is None:
            onset = heard - (POOL_LEAD if snap_pool else TYPICAL_LEAD)
            return onset, heard, self.hissless(onset)
        rise = self._env.refine_onset(approx, latest=heard - 0.1, before=REACH, after=0.03, peak_to=heard - 0.1)
        onset = rise if rise is not None else approx
        hissless = self.hissless(onset)
        # only a call that starts with a hiss where it was found: walked back first, a "nap" in noise could
        # take a swell of the noise before it for its "s" and pass the hiss check (no-call hour: one did)
        if HISS_LEAD and not hissless:
            walked = self._env.hiss_lead(onset)
            if walked is not None:
                onset, hissless = walked, self.hissless(walked)
        return onset, heard, hissless

    def _emit(self, word: str, held: _Held, detected_at: float, end: float | None = None) -> Detection:
        return Detection(word, held.onset, max(end if end is not None else held.end, held.onset), held.conf,
                         self.channel if self.channel is not None else 0, engine=self.name,
                         detected_at=max(detected_at, held.heard_at))
