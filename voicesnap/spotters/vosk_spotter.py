"""The Vosk keyword spotter: a grammar-restricted recogniser for calls and commands.

Why it looks the way it does:

* Grammar. Vosk decodes only the game's words, a set of *decoys* (words that
  sound like a call, card ranks the announcer says, common table talk) and
  "[unk]". Without decoys a grammar decoder must map "snack" or "map" onto
  "snap", the only word it knows that is close; with them the near miss wins.
* Latency. Vosk's stock endpointing waits 0.5-1 s of silence before a final
  result, and its partial word timestamps only show words once the next one
  begins. The model is loaded through a small overlay of its config with short
  endpoint silences and a small decoding chunk, and the plain partial *text* is
  used to emit a call as soon as the decoder believes it (provisionally: the
  onset then comes from the signal, and the final result, when it agrees, is
  not emitted twice).
* "snap" vs "snap pool". With ``pool_exists`` False (no claim open) "snap" is
  final at once. While a claim is open "snap" is held ``pool_gap`` after the
  word; then it is decided if nothing followed, if the decoder shows another
  word after it, or once the signal has been quiet for ``pool_quiet``
  (counted back from now, not from Vosk's word end, which often falls before
  the word's own tail: that used to hold such a "snap" the whole
  ``pool_wait``, 1.2 s). 0.3 s because the players' takes of "snap pool" hold
  up to ~210 ms of silence between the words, and in pink noise at 10 dB SNR
  0.25 s split one "snap pool" into a wrong "snap".
* Onsets. Vosk's word times have 30 ms granularity; ties are judged on onsets,
  so each onset is refined from the signal's energy rise near the word start.

All times are seconds on the input stream's clock.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterable, Sequence

import numpy as np

from ..audio import AudioChunk, Resampler
from ..onsets import Envelope
from ..vocabulary import COMMAND_PREFIX, COMMANDS, SNAP, SNAP_POOL, grammar_words
from . import Detection

__all__ = ["VoskSpotter", "load_model", "DECOYS", "TUNED_CONFIG"]

RATE = 16000

# Words that are not calls but sound like one or are said at the table. Only
# those the model knows are used (vosk ignores the rest, with a warning).
DECOYS: tuple[str, ...] = (
    # near misses of "snap" (the list; "slap" is in the game vocabulary already)
    "snack", "stop", "map", "cap", "nap", "trap", "snow",
    # the announcer's card ranks
    "ace", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten",
    "jack", "queen", "king",
)

# Vosk's word start precedes the true onset by 13-50 ms (median ~30 ms) on the
# corpus; used only when the signal shows no clear rise to refine it from.
VOSK_START_LEAD = 0.03
# Vosk's word can take in a click or a card slap 0.1-0.4 s before it (real Speech Commands clips):
# the onset is then moved to the start of the sound that runs on into the word (``Envelope.word_start``).
WORD_RUN = True
# In steady noise a real speaker's weak "s" hardly rises over the floor, and the onset search finds the vowel
# after it, up to 0.25 s late: the onset is then walked back over the "s" (``Envelope.hiss_lead``).
HISS_LEAD = True

# "dealer score" heard as "dealer slower": a question taken for a pace change. In the command pass the two
# compete, and for many voices the recogniser is sure of the wrong one (espeak-ng's en-us and en-us-nyc
# "score", non-rhotic, nearly always; half with confidence 0.9 or more, as many with no "score" among Vosk's
# alternatives). What the recogniser blurs the signal keeps: the "s" of "score" is followed by the closure
# and burst of its "k", the "s" of "slower" runs into a voiced "l" (``Envelope.voice_after_s``). A "slower"
# whose low band comes up SCORE_GAP[0] s or more after its "s" and whose voicing starts SCORE_GAP[1] s or
# more after it is taken for "score", the harmless reading; one the signal gives no opinion on (no clear
# "s", noise) stays "slower". Measured by ``python3 -m bench.score_slower`` (384 espeak-ng takes of each
# phrase: 4 draws of 8 accents x 12 variants at random speed and pitch): the command pass heard 174 "score"s
# as "slower", every one with a low-band gap of 40 ms or more and voicing 35-118 ms after the "s"; of the
# 364 "slower"s it heard right, 12 have that low-band gap, their voicing 2-30 ms after the "s". "score"
# heard right 205 -> 379 of 384 (none as "slower"), "slower" 364 -> 363. Real people's words (Speech
# Commands, tests/test_commands.py): "stop" 47-100 ms in the low band in 5 of 6, "six", "seven", "sheila"
# 0-23 ms. None turns it off.
SCORE_GAP: tuple[float, float] | None = (0.040, 0.030)
# "dealer slower" heard as "dealer louder": a pace change taken for a volume change (a player asking the dealer
# to slow down got a louder dealer). "louder" starts with a voiced "l" and has no "s"; "slower" starts with the
# hiss of one. So a command-pass "louder" whose word starts with a clear "s" (``Envelope.voice_after_s`` finds
# 40 ms or more where the band over 3 kHz outweighs 100 Hz-1 kHz, standing clear of the floor) is taken for
# "slower" (then checked by SCORE_GAP as any "slower" is); one with no clear "s" (noise) stays "louder".
# Measured by ``python3 -m bench.score_slower louder`` (384 espeak-ng takes of each phrase: 4 draws of 8
# accents x 12 variants): the command pass heard 17 "slower"s as "louder", an "s" found in all 17, and in none
# of its 383 "louder"s. Through the whole spotter "slower" heard as "louder" 15 -> 0 of 384 (heard right
# 354 -> 369), "louder" as "slower" 0 -> 0 (heard right 368 -> 368); in pink noise (96 takes each) at 20 dB
# 1 -> 0 and 1 -> 1 (the recogniser's own), at 10 and 5 dB no change (no clear "s"). Real voices are not
# measured: a breath run into "louder" could pass for an "s". False turns it off.
LOUDER_S = True

# How many times each call word ("snap", "pool") is listed in the grammar. Vosk gives every
# grammar entry equal weight, so repeating a word raises its prior against the
# decoys: with decoys alone the small model heard many real calls as "stop" or
# "snack" (recall fell by a third); with the game words repeated 100 times recall
# came back above the no-decoy level while near-miss false calls fell from 12 to
# 3 on the fixture corpus (docs/listening.md has the measurement).
# 300 found 7 more calls in 13 min of corpus but doubled near-miss false calls
# (2 -> 4 of 48 words) and lost 4 of 24 voice commands; 1000 added more false calls.
# Boosting "slap" (both near-miss false calls were "slap") as well removed them
# but lost 4 commands, 2 clipped calls and 2 snap/snap-pool calls: not kept.
BOOST = 100

# Endpointing and chunking that suit one- and two-word calls (stock: 0.5/0.75/1.0 s).
TUNED_CONFIG: dict[str, str] = {
    "--endpoint.rule2.min-trailing-silence": "0.05",
    "--endpoint.rule3.min-trailing-silence": "0.1",
    "--endpoint.rule4.min-trailing-silence": "0.2",
    "--frames-per-chunk": "6",
    # Not changed: --acoustic-scale (stock 1.0), the same trade as BOOST seen from the
    # other side. Swept on the corpus (claim open, 150 calls; calls heard / false calls):
    # 0.7 113/11, 1.0 107/7, 1.1 109/5, 1.2 108/3, 1.3 107/3, 1.4 104/3; 1.2 also took
    # the false calls on 145 real Speech Commands words from 2 to 0. Not kept: at 1.2
    # one player's "snap pool" became "snap" (a wrong call) and two of cara's snaps
    # were lost (test_snap_versus_snap_pool), and at 1.1 a clean "snap" after 10 s of
    # faint noise was missed (test_a_call_after_long_faint_noise_is_heard).
    # Stock rule 1 ends an utterance after 5 s of trailing silence even with no
    # speech in it. In steady faint noise (-60 dB white) the decoder first holds
    # a junk word, then re-reads the noise as silence just as a word begins, so
    # rule 1 fired inside that word and cut it (the word was lost). Off here;
    # VoskSpotter ends quiet utterances itself, at moments the signal shows to
    # be quiet (see ``quiet_endpoint``).
    "--endpoint.rule1.min-trailing-silence": "100000",
}


def _overlay(model_dir: Path, where: Path, settings: dict[str, dict[str, str]]) -> Path:
    """A folder that is ``model_dir`` with some of its ``conf/`` files changed (symlinks for the rest).

    ``settings``: file name (``model.conf``, ``mfcc.conf``) -> option -> value; a file the
    model lacks is left out (the model then runs with Kaldi's defaults for it).
    """
    for entry in model_dir.iterdir():
        if entry.name != "conf":
            os.symlink(entry.resolve(), where / entry.name)
    conf = where / "conf"
    conf.mkdir()
    for entry in (model_dir / "conf").iterdir():
        if entry.name not in settings:
            os.symlink(entry.resolve(), conf / entry.name)
    for name, options in settings.items():
        source = model_dir / "conf" / name
        if not source.is_file():
            continue
        lines = source.read_text().splitlines()
        keep = [ln for ln in lines if ln.split("=", 1)[0].strip() not in options]
        keep += [f"{k}={v}" for k, v in options.items()]
        (conf / name).write_text("\n".join(keep) + "\n")
    return where


# Kaldi dithers the audio before its features (default --dither=1.0) with a random state
# seeded from the C library's global rand(), so the same audio decoded by a fresh recogniser
# gave different results depending on what the process had decoded before (vosk-api issue
# #868): noisy_babble_20db alone vs after 26 other corpus files gained a second "snap".
# A game must judge the same recorded audio the same way on replay, and benchmarks must not
# depend on file order: no dither (in whichever feature config the model has). Corpus, Vosk: the
# same figures with and without (docs/listening.md, fourth round).
MFCC_CONFIG: dict[str, str] = {"--dither": "0"}


_MODEL: Any = None


def _model_class() -> Any:
    """vosk.Model, minus the traceback its ``__del__`` prints for a model whose loading Ctrl-C cut
    short ("AttributeError: 'Model' object has no attribute '_handle'", after 'stopped'), or one
    freed at interpreter exit, after vosk's module globals are gone."""
    global _MODEL
    if _MODEL is None:
        import vosk

        class Model(vosk.Model):
            def __del__(self) -> None:
                if getattr(self, "_handle", None) is None:
                    return
                try:
                    vosk.Model.__del__(self)
                except (AttributeError, TypeError):  # at exit: vosk's library handle is already None
                    pass

        _MODEL = Model
    return _MODEL


def load_model(path: str | os.PathLike[str], *, tuned: bool = True) -> Any:
    """Load a Vosk model; ``tuned`` applies TUNED_CONFIG (falls back to stock if it cannot)."""
    import vosk

    vosk.SetLogLevel(-1)
    Model = _model_class()
    model_dir = Path(path)
    if tuned and (model_dir / "conf" / "model.conf").is_file():
        tmp = Path(tempfile.mkdtemp(prefix="voicesnap-vosk-"))
        try:
            return Model(str(_overlay(model_dir, tmp, {"model.conf": TUNED_CONFIG, "mfcc.conf": MFCC_CONFIG,
                                                            "fbank.conf": MFCC_CONFIG})))
        except (OSError, Exception):  # no symlinks (Windows) or an odd model: use it as shipped
            pass
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    return Model(str(model_dir))


@dataclass
class _Word:
    word: str
    start: float  # seconds on the clock
    end: float
    conf: float


class VoskSpotter:
    """Spots calls and "dealer <command>" phrases with a grammar-restricted Vosk recogniser.

    ``model`` is a loaded ``vosk.Model`` or a model folder. ``channel`` picks
    one input channel (a player's own microphone); None mixes all channels.
    ``pool_exists`` (bool, or a callable asked at decision time) says whether
    "snap pool" is possible now. ``calls`` are the call phrases that count
    (add "slap" for Slapjack; otherwise "slap" is a decoy).
    """

    name = "vosk"

    def __init__(
        self,
        model: Any,
        *,
        words: Sequence[str] | None = None,
        channel: int | None = 0,
        calls: Sequence[str] = (SNAP, SNAP_POOL),
        pool_exists: bool | Callable[[], bool] = True,
        decoys: Iterable[str] = DECOYS,
        boost: int = BOOST,
        min_confidence: float = 0.3,
        min_command_confidence: float = 0.3,
        pool_gap: float = 0.25,
        pool_wait: float = 1.2,
        pool_quiet: float = 0.30,
        command_gap: float = 0.8,
        use_partials: bool = True,
        partial_hold: float = 0.0,
        quiet_endpoint: float = 2.0,
        command_pass: bool = True,
    ) -> None:
        import vosk

        vosk.SetLogLevel(-1)
        self.model = model if isinstance(model, vosk.Model) else load_model(model)
        self.channel = channel
        self.calls = tuple(calls)
        self.pool_exists = pool_exists
        self.min_confidence = min_confidence
        self.min_command_confidence = min_command_confidence
        self.pool_gap = pool_gap
        self.pool_wait = pool_wait  # longest wait for "pool" while something is still being said
        self.pool_quiet = pool_quiet  # quiet after "snap" that rules out "pool" (claim open)
        self.command_gap = command_gap
        self.use_partials = use_partials
        self.partial_hold = partial_hold
        # An utterance this long (s) is ended when the last QUIET_S of signal held no speech.
        self.quiet_endpoint = quiet_endpoint
        wanted = list(words) if words is not None else grammar_words()
        known = [w for w in wanted if self.model.vosk_model_find_word(w) >= 0]
        self.missing_words = [w for w in wanted if w not in known]
        extra = [d for d in decoys if d not in known and self.model.vosk_model_find_word(d) >= 0]
        call_words = [w for w in known if any(w in c.split() for c in self.calls)]
        self.grammar = known + call_words * (max(1, boost) - 1) + extra + ["[unk]"]
        self._game_words = set(known) - {"[unk]"}
        self._commands = {words_: f"{COMMAND_PREFIX} {words_}" for words_ in COMMANDS.values()}
        self._rec = vosk.KaldiRecognizer(self.model, RATE, json.dumps(self.grammar))
        # Second pass for "dealer ..." (see ``_second_pass``): whole command phrases only, no boost.
        self.command_pass = command_pass
        self._cmd_grammar = json.dumps([*self._commands.values(), "[unk]"])
        self._rec.SetWords(True)
        self._rec.SetPartialWords(False)  # partial *word* lists lag a word behind; the text does not
        self._resampler = Resampler(RATE, channel=channel)
        self._env = Envelope()
        self._origin: int | None = None  # 16 kHz clock index of the first frame fed to vosk
        self._now = 0.0  # seconds: end of audio fed so far
        self._words: list[_Word] = []  # final words not yet turned into detections
        self._emitted: list[Detection] = []  # recent detections (dedupe finals vs partials)
        self._partial_seen: dict[tuple[int, str], float] = {}  # (index, token) -> first seen
        self._partial_done: set[int] = set()  # token indices emitted from this utterance's partial
        self._hearing = False  # the decoder is inside an utterance (partial text not empty)
        self._partial: list[str] = []  # the current utterance's partial text, as words
        self._utt_start = 0.0  # seconds: where the decoder's current utterance began
        self._quiet_checked = 0.0  # seconds: when the quiet endpoint was last considered
        self._heard: list[_Word] = []  # final words incl. "[unk]" of the last HEARD_S seconds (``heard``)

    # ------------------------------------------------------------------ stream

    def accept(self, chunk: AudioChunk) -> list[Detection]:
        out = self._resampler.accept(chunk)
        detected_at = chunk.end / chunk.rate
        return self._feed(out, detected_at) if out is not None else []

    def flush(self) -> list[Detection]:
        found: list[Detection] = []
        tail = self._resampler.flush()
        if tail is not None:
            found += self._feed(tail, self._now + tail.frames / RATE)
        self._take_final(json.loads(self._rec.FinalResult()))
        found += self._decide(self._now, final=True)
        return found

    def set_pool_exists(self, value: bool) -> None:
        self.pool_exists = value

    # --------------------------------------------------------------- internals

    def _pool(self) -> bool:
        value = self.pool_exists
        return bool(value() if callable(value) else value)

    @property
    def _channel_out(self) -> int:
        return self.channel if self.channel is not None else 0

    def _feed(self, chunk: AudioChunk, detected_at: float) -> list[Detection]:
        if self._origin is None:
            self._origin = chunk.start
        self._env.push(chunk.start, chunk.samples, chunk.echo)
        self._now = chunk.end / RATE
        found: list[Detection] = []
        if self._rec.AcceptWaveform(chunk.samples.tobytes()):
            self._take_final(json.loads(self._rec.Result()))
        elif self._quiet_now():
            # Reset, not FinalResult: FinalResult also rebuilds the feature
            # pipeline, and a word starting right then lost its context (and
            # was missed). Nothing is lost: the utterance holds no game word.
            self._rec.Reset()
            self._take_final({})
        else:
            text = json.loads(self._rec.PartialResult()).get("partial", "")
            self._hearing = bool(text.strip())
            self._partial = text.split()
            if self.use_partials:
                found += self._from_partial(text, detected_at)
        found += self._decide(detected_at)
        return found

    def _take_final(self, result: dict) -> None:
        offset = (self._origin or 0) / RATE
        self._heard = [w for w in self._heard if w.end >= self._now - self.HEARD_S]
        for w in result.get("result", []):
            self._words.append(_Word(w["word"], w["start"] + offset, w["end"] + offset, float(w.get("conf", 1.0))))
            self._heard.append(self._words[-1])
        self._partial_seen.clear()
        self._partial_done.clear()
        self._hearing = False
        self._partial = []
        self._utt_start = self._now

    HEARD_S = 10.0

    @property
    def pending(self) -> list[str]:
        """The words of the utterance in progress (since ``final_until``) as Vosk hears them so far.

        Not final: a later word can still change them. Lets another engine
        see that Vosk hears no known word there yet (CombinedSpotter's early rescue).
        """
        return list(self._partial)

    def _call_token(self, tok: str) -> bool:
        """Whether a decoded word starts a call ("snap", which may become "snap pool", or another call word)."""
        return tok == "snap" or tok in self.calls and tok != "pool"

    def undecided(self) -> float | None:
        """Where a call the decoder already shows, not yet emitted, may start (see spotters.undecided_from).

        A "snap" in the partial text not yet emitted: the utterance's start (partial text has no
        times); a final "snap" held for a possible "pool": its start.
        """
        held = [w.start for w in self._words if self._call_token(w.word)]
        if any(self._call_token(tok) and i not in self._partial_done for i, tok in enumerate(self._partial)):
            held.append(self._utt_start)
        return min(held) if held else None

    def command_begun(self) -> float | None:
        """Where a "dealer ..." phrase the decoder shows, not yet decided, may start (see
        spotters.command_begun_from): a final "dealer" waiting for its command word, or one in the
        partial text (the utterance's start: partial text has no times)."""
        held = [w.start for w in self._words if w.word == COMMAND_PREFIX]
        if COMMAND_PREFIX in self._partial:
            held.append(self._utt_start)
        return min(held) if held else None

    @property
    def final_until(self) -> float:
        """Seconds on the clock up to which the decoder's results are final (where the
        utterance in progress began): ``heard`` is complete for spans ending before it."""
        return self._utt_start

    def heard(self, a: float, b: float) -> list[tuple[str, float, float]]:
        """What Vosk finally decoded over [a, b] s: (word, start, end) of every final word,
        "[unk]" included, that overlaps it, from the last HEARD_S seconds. Empty: nothing (an
        utterance ended by the quiet rule holds no game word and keeps only its other words, each
        over the whole utterance). Lets another engine ask whether Vosk heard a known word where
        it found a call (CombinedSpotter)."""
        return [(w.word, w.start, w.end) for w in self._heard if w.end > a and w.start < b]

    def energy_onset(self, approx: float, latest: float) -> float | None:
        """The energy rise (s) within 50 ms of ``approx``, refined as Vosk's own word onsets are,
        or None where there is no clear one: for an onset another engine found (CombinedSpotter)."""
        return self._env.rise_near(approx, latest)

    QUIET_S = 1.0

    def _quiet_now(self) -> bool:
        """Whether to end the utterance now: it is long and the signal's last QUIET_S held no speech.

        Ending it here, rather than by Vosk's own silence rule, means a cut can
        never fall inside a word (checked at most every 0.25 s: it costs an
        envelope pass).
        """
        if self._now - self._utt_start < self.quiet_endpoint or self._now - self._quiet_checked < 0.25:
            return False
        self._quiet_checked = self._now
        if self._env.active_after(self._now - self.QUIET_S):
            return False
        pending = json.loads(self._rec.PartialResult()).get("partial", "").split()
        if any(w in self._game_words for w in pending):
            return False
        # the utterance is dropped, but ``heard`` keeps what was decoded there besides "[unk]"
        # (a decoy such as "snack"; no timestamps: each word spans the whole utterance)
        self._heard += [_Word(w, self._utt_start, self._now, 0.0) for w in pending if w != "[unk]"]
        return True

    # Partial text: fast, provisional calls (commands wait for the final result).
    def _from_partial(self, text: str, detected_at: float) -> list[Detection]:
        tokens = text.split()
        found: list[Detection] = []
        for i, tok in enumerate(tokens):
            if not self._call_token(tok):
                continue
            if i in self._partial_done:
                continue
            if i > 0 and tokens[i - 1] == COMMAND_PREFIX:
                continue  # "dealer snap" is a command misheard: the final result and the command pass decide
            seen = self._partial_seen.setdefault((i, tok), self._now)
            if self._now - seen < self.partial_hold:
                continue
            nxt = tokens[i + 1] if i + 1 < len(tokens) else None
            if tokens[i + 1 :] not in ([], ["pool"]):
                continue  # talk goes on after it: the last burst is not this word
            burst = self._env.burst_onset(self._now)
            if burst is None:
                continue  # cannot place it from the signal: wait for the final result
            start, end = burst
            if tok == "snap":
                if nxt == "pool" and SNAP_POOL in self.calls:
                    word = SNAP_POOL
                elif nxt is None and self._pool() and SNAP_POOL in self.calls and self._now - end < self.pool_gap:
                    continue  # "pool" may still come: wait for a quiet gap after the word
                elif SNAP in self.calls:
                    word = SNAP
                else:
                    continue
            else:
                word = tok
            # once the word is known (not on every chunk spent waiting for "pool"); the burst's own start is
            # checked too: a second token over a call already out is that call, wherever the onset was moved
            # to past it (into chatter after it)
            onset = self._word_start(start, end)
            if any(min(abs(d.onset - onset), abs(d.onset - start)) < 0.25 for d in self._emitted):
                self._partial_done.add(i)
                continue
            det = Detection(word, onset, max(end, onset), 0.5, self._channel_out, engine="vosk",
                            detected_at=detected_at)
            self._partial_done.add(i)
            self._remember(det)
            found.append(det)
        return found

    def _remember(self, det: Detection) -> None:
        self._emitted.append(det)
        horizon = self._now - 10.0
        self._emitted = [d for d in self._emitted if d.end >= horizon]

    @staticmethod
    def _family(word: str) -> str:
        """A word's first token, "snap" for "slap": in Slapjack a partial "slap" that the final result turns
        into "snap" (or back) is that call again, not a second one (the game ruled one slap twice)."""
        first = word.split()[0]
        return "snap" if first == "slap" else first

    def _duplicate(self, word: str, onset: float, end: float) -> bool:
        for d in self._emitted:
            same_family = self._family(word) == self._family(d.word)
            if same_family and d.onset - 0.3 <= onset <= d.end + 0.1 or abs(d.onset - onset) < 0.25 and same_family:
                return True
        return False

    def _word_start(self, onset: float, end: float) -> float:
        """The onset, moved past a click that a quiet gap parts from the word ending at ``end`` (WORD_RUN),
        and back over a weak "s" that runs on into it (HISS_LEAD)."""
        later = self._env.word_start(onset, end) if WORD_RUN else None
        onset = onset if later is None else later
        earlier = self._env.hiss_lead(onset) if HISS_LEAD else None
        return onset if earlier is None else earlier

    def _emit(self, word: str, first: _Word, last: _Word, conf: float, detected_at: float) -> list[Detection]:
        if self._duplicate(word, first.start, last.end):
            return []
        refined = self._env.refine_onset(first.start, latest=first.end)
        # No clear rise (noise): Vosk's start corrected by its typical lead.
        onset = self._word_start(refined if refined is not None else first.start + VOSK_START_LEAD, first.end)
        det = Detection(word, onset, last.end, conf, self._channel_out, engine="vosk", detected_at=detected_at)
        self._remember(det)
        return [det]

    def _decide(self, detected_at: float, final: bool = False) -> list[Detection]:
        """Turn final words into calls/commands once nothing later can change them."""
        found: list[Detection] = []
        words = self._words
        while words:
            w = words[0]
            nxt = words[1] if len(words) > 1 else None
            if w.word == "snap":
                if nxt is not None and nxt.word == "pool" and nxt.start - w.end <= self.pool_gap and SNAP_POOL in self.calls:
                    conf = min(w.conf, nxt.conf)
                    if conf >= self.min_confidence:
                        found += self._emit(SNAP_POOL, w, nxt, conf, detected_at)
                    del words[:2]
                    continue
                if nxt is None and not final and self._pool() and SNAP_POOL in self.calls and self._hold_snap(w):
                    break
                if SNAP in self.calls and w.conf >= self.min_confidence:
                    found += self._emit(SNAP, w, w, w.conf, detected_at)
                del words[0]
            elif w.word == COMMAND_PREFIX:
                phrase, used = self._command_after(words)
                if phrase is None and used == 0:  # incomplete: wait for more words
                    # Past command_gap, wait on only while the decoder shows a word AND the signal still
                    # sounds: a command word it cannot place ("resume" heard as "[unk]") kept the partial
                    # busy for 2 s, and behind the speech gate (which stops feeding 1 s after speech) for ever.
                    if not final and (self._now < w.end + self.command_gap
                                      or self._hearing and self._now < w.end + 2.0
                                      and self._env.active_after(self._now - self.COMMAND_QUIET)):
                        break
                if self.command_pass:
                    second = self._second_pass(w)
                    if second is not None:
                        phrase2, first2, last2, conf2 = second
                        phrase2 = self._score_or_slower(self._louder_or_slower(phrase2, last2), last2)
                        if conf2 >= self.min_command_confidence:
                            found += self._emit(phrase2, first2, last2, conf2, detected_at)
                        # every first-pass word inside the command is part of it, never a call
                        while words and words[0].start < last2.end:
                            del words[0]
                        continue
                if phrase is None and used == 0:
                    del words[0]
                    continue
                if phrase is not None:
                    last = words[used - 1]
                    conf = min(x.conf for x in words[:used])
                    phrase = self._score_or_slower(self._louder_or_slower(phrase, last), last)
                    if conf >= self.min_command_confidence:
                        found += self._emit(phrase, w, last, conf, detected_at)
                del words[: max(used, 1)]
            elif w.word in self.calls and w.word not in ("pool",):
                if w.conf >= self.min_confidence:
                    found += self._emit(w.word, w, w, w.conf, detected_at)
                del words[0]
            else:
                del words[0]
        return found

    def _hold_snap(self, w: _Word) -> bool:
        """A claim is open: may "pool" still follow this final "snap"? (Wait while it may.)"""
        if self._now < w.end + self.pool_gap:
            return True
        if self._now >= w.end + self.pool_wait:
            return False
        if self._hearing:
            # The decoder shows a word after "snap": only "pool" (or what may yet become it) holds it.
            return not self._partial or "pool" in self._partial or self._partial[0] == "[unk]"
        if not self._env.active_after(w.end + 0.03):
            return False  # nothing at all after the word for pool_gap
        # Something followed Vosk's word end (often the word's own tail): once the signal has been
        # quiet for pool_quiet, "pool" cannot be the word's continuation any more.
        return self._env.active_after(self._now - self.pool_quiet)

    COMMAND_SPAN = 2.0  # seconds after "dealer" starts that a command phrase may take
    COMMAND_QUIET = 0.3  # s of quiet signal after which a command's words are taken as over

    def _second_pass(self, dealer: _Word) -> tuple[str, _Word, _Word, float] | None:
        """Re-decode the audio from "dealer" on with a grammar of the command phrases only.

        In the main grammar each call word is listed BOOST times, which pulls
        command words towards calls ("dealer status" was heard as "dealer
        snap", a false call) and starves them ("dealer score" -> "four");
        a command-only pass over the same audio has no such pull. Returns
        (phrase, first word, last word, confidence) or None (nothing heard).
        """
        a = int((dealer.start - 0.1) * RATE)
        b = int(min(self._now, dealer.start + self.COMMAND_SPAN) * RATE)
        samples, first = self._env.segment(a, b)
        if len(samples) < RATE // 4:
            return None
        import vosk

        # A fresh recogniser each time: Reset() keeps counting time, so word times would drift.
        rec = vosk.KaldiRecognizer(self.model, RATE, self._cmd_grammar)
        rec.SetWords(True)
        rec.AcceptWaveform(np.clip(samples, -32768, 32767).astype(np.int16).tobytes())
        got = [_Word(x["word"], x["start"] + first / RATE, x["end"] + first / RATE, float(x.get("conf", 1.0)))
               for x in json.loads(rec.FinalResult()).get("result", [])]
        for i, x in enumerate(got):
            if x.word != COMMAND_PREFIX:
                continue
            for phrase in self._commands.values():
                n = len(phrase.split())
                if " ".join(y.word for y in got[i : i + n]) == phrase:
                    return phrase, x, got[i + n - 1], min(y.conf for y in got[i : i + n])
        return None

    _SLOWER = f"{COMMAND_PREFIX} {COMMANDS['slower']}"
    _SCORE = f"{COMMAND_PREFIX} {COMMANDS['score']}"
    _LOUDER = f"{COMMAND_PREFIX} {COMMANDS['louder']}"

    def _louder_or_slower(self, phrase: str, word: _Word) -> str:
        """"dealer louder" whose command word starts with the hiss of an "s" is "dealer slower" (LOUDER_S: "louder"
        has no "s"); any other phrase, or a word with no clear "s" at its start, as heard."""
        if not LOUDER_S or phrase != self._LOUDER:
            return phrase
        return self._SLOWER if self._env.voice_after_s(word.start, word.end) is not None else phrase

    def _score_or_slower(self, phrase: str, word: _Word) -> str:
        """"dealer slower" whose command word has the stop of "score" after its "s" is "dealer score"
        (SCORE_GAP); any other phrase, or a word the signal gives no opinion on, as heard."""
        if SCORE_GAP is None or phrase != self._SLOWER:
            return phrase
        gaps = self._env.voice_after_s(word.start, word.end)
        if gaps is None:
            return phrase
        low, voiced = gaps
        if low >= SCORE_GAP[0] and voiced is not None and voiced >= SCORE_GAP[1]:
            return self._SCORE
        return phrase

    def _command_after(self, words: list[_Word]) -> tuple[str | None, int]:
        """(phrase, words used) for "dealer ..." at words[0]; (None, 0) means wait; (None, 1) drop."""
        dealer = words[0]
        rest = words[1:]
        for spoken, phrase in sorted(self._commands.items(), key=lambda kv: -len(kv[0].split())):
            parts = spoken.split()
            got = rest[: len(parts)]
            if [g.word for g in got] == parts[: len(got)]:
                if got and got[0].start - dealer.end > self.command_gap:
                    continue
                if len(got) == len(parts):
                    return phrase, 1 + len(parts)
                return None, 0  # a prefix of this command so far
        if not rest:
            return None, 0
        return None, 1
