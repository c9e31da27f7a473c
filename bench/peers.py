"""Side-by-side peers for the listening benchmark: engines we did not write.

``PocketSphinxSpotter`` is PocketSphinx's keyphrase spotter with the English
acoustic model and dictionary bundled in its PyPI wheel, wrapped in our
``Spotter`` protocol so the harness judges it exactly like our engines.

How it is driven (and why):
- one keyphrase search over the calls and the command phrases; each phrase has
  its own threshold (``KWS_THRESHOLDS``, a probability exponent: smaller means
  more permissive). Swept on 5.2 min of fixtures (clean, snap vs pool, near
  misses, chatter, echo, long quiet; snap/pool exponents -25/-35 .. -40/-50):
  recall 0.27 -> 0.69 while false calls rose 445 -> 2,072 per hour. -30/-40
  (recall 0.44, 750/h) is kept as the knee; the sweep is in docs/listening.md.
  "snap pool" is rarely found at any threshold on these voices.
- KWS lists every detection of the utterance in ``seg()``; new entries are
  reported as they appear. The utterance restarts every ``UTTERANCE_LIMIT``
  seconds of audio (when no "snap" is pending) to bound the decoder's buffers,
  so times from ``seg()`` are offset by where the utterance began.
- at permissive thresholds KWS fires repeatedly on one word (again on its
  tail, on the "pool" of "snap pool"): a phrase starting within 0.6 s of its
  previous onset is dropped (it also merges near-simultaneous calls: this peer
  cannot report ties).
- "snap" fires before "snap pool" can finish, so a "snap" is held for
  ``POOL_WAIT`` seconds of audio and replaced if "snap pool" starts with it.
"""

from __future__ import annotations

import os
import tempfile
from dataclasses import replace

from voicesnap.audio import AudioChunk
from voicesnap.spotters import Detection
from voicesnap.vocabulary import SNAP, SNAP_POOL, command_phrases

FRAME_RATE = 100  # PocketSphinx features: 10 ms frames
POOL_WAIT = 0.45  # seconds of audio a "snap" waits for "pool"
REFIRE_GAP = 0.6  # the same phrase starting within 0.6 s of its previous onset is the same call
UTTERANCE_LIMIT = 20.0  # seconds; then the utterance restarts (a word across the cut can be lost)

# Keyphrase -> threshold exponent (threshold 1e<exp>). Longer phrases need
# smaller thresholds (more phonemes multiply more probabilities).
KWS_THRESHOLDS: dict[str, int] = {SNAP: -30, SNAP_POOL: -40}
COMMAND_THRESHOLD = -30


def pocketsphinx_available() -> str | None:
    """None when the peer can run, else what is missing."""
    try:
        import pocketsphinx  # noqa: F401
    except ImportError:
        return "pocketsphinx is not installed (pip install -e '.[dev]')"
    return None


class PocketSphinxSpotter:
    """PocketSphinx keyphrase spotting behind the voicesnap Spotter protocol (16 kHz mono)."""

    name = "pocketsphinx"

    def __init__(self, thresholds: dict[str, int] | None = None, commands: bool = True,
                 command_threshold: int = COMMAND_THRESHOLD) -> None:
        from pocketsphinx import Decoder

        phrases = dict(thresholds or KWS_THRESHOLDS)
        if commands:
            for phrase in command_phrases().values():
                phrases.setdefault(phrase, command_threshold)
        self.thresholds = phrases
        fd, self._kws_path = tempfile.mkstemp(prefix="voicesnap-kws-", suffix=".list")
        with os.fdopen(fd, "w") as handle:
            for phrase, exp in phrases.items():
                handle.write(f"{phrase} /1e{exp}/\n")
        self._decoder = Decoder(kws=self._kws_path, lm=None, loglevel="FATAL")
        os.unlink(self._kws_path)
        self._rate = 16000
        self._utt_start = 0  # sample where the current utterance began
        self._pos = 0  # samples fed so far
        self._pending: Detection | None = None  # a "snap" waiting to see if "pool" follows
        self._seen = 0  # detections of this utterance already reported
        self._last_onset: dict[str, float] = {}  # per phrase, onset of its last detection
        self._decoder.start_utt()

    def accept(self, chunk: AudioChunk) -> list[Detection]:
        if chunk.rate != self._rate or chunk.channels != 1:
            raise ValueError("PocketSphinxSpotter needs 16 kHz mono chunks (resample first)")
        if self._pos == 0 and chunk.start:
            self._pos = self._utt_start = chunk.start
        self._decoder.process_raw(chunk.samples.tobytes(), False, False)
        self._pos = chunk.end
        out = self._collect()
        if self._pending is None and self._pos - self._utt_start > UTTERANCE_LIMIT * self._rate:
            self._decoder.end_utt()  # keep the decoder's per-utterance buffers bounded
            out += self._collect()
            self._decoder.start_utt()
            self._utt_start, self._seen = self._pos, 0
        return out

    def flush(self) -> list[Detection]:
        self._decoder.end_utt()
        out = self._collect()
        if self._pending is not None:
            out.append(self._pending)
        self._pending = None
        self._decoder.start_utt()
        self._utt_start, self._seen = self._pos, 0
        return out

    def _collect(self) -> list[Detection]:
        """Report detections that appeared since the last call; hold a "snap" for its "pool"."""
        now = self._pos / self._rate
        out: list[Detection] = []
        segs = list(self._decoder.seg()) if self._decoder.hyp() is not None else []
        for seg in segs[self._seen:]:  # KWS keeps every detection of the utterance in seg()
            word = seg.word.strip()
            onset = (self._utt_start + seg.start_frame * self._rate // FRAME_RATE) / self._rate
            end = (self._utt_start + (seg.end_frame + 1) * self._rate // FRAME_RATE) / self._rate
            det = Detection(word, onset, end, float(seg.prob), engine=self.name, detected_at=now)
            if onset < self._last_onset.get(word, -9.0) + REFIRE_GAP:
                continue  # KWS fires again and again on one word at permissive thresholds
            self._last_onset[word] = onset
            if word == SNAP:
                if self._pending is not None:
                    out.append(self._pending)
                self._pending = det
            elif word == SNAP_POOL and self._pending is not None and abs(self._pending.onset - onset) < 0.3:
                self._pending = None  # that "snap" was the start of this "snap pool"
                out.append(det)
            else:
                out.append(det)
        self._seen = max(self._seen, len(segs))
        if self._pending is not None and now - self._pending.end >= POOL_WAIT:
            out.append(replace(self._pending, detected_at=now))
            self._pending = None
        return out
