"""One spotter per player's microphone, and the crosstalk rule that keeps the mics apart.

With a microphone per player the channel names the caller, but every mic also
hears the rest of the table: a shout is loud on its owner's mic and some
10-30 dB fainter (and a few ms later) on the others, and a recogniser on a
neighbour's channel happily recognises that faint copy. Which detection
arrives first says nothing (each channel's recogniser has its own latency),
so the rule is read from the signal: ``ChannelLevels`` keeps 10 ms frame
energies of every mic for the last few seconds, and a detection whose
[onset, end] is clearly louder on another mic (``margin_db``) is that mic's
crosstalk and is dropped.

Usually the loud mic's own recogniser reports the same shout (it hears it
10-30 dB above the copy) and the copy is simply dropped. When it does not
(in fixture mc4 cara's "snap" 30 ms after bob's is missed on her own mic but
recognised in its copies on two others), the copy is moved to the loud mic:
the call is that mic's owner's, with the copy's onset (a copy is a few ms later
than its source, the sound's way across the table; mc4's moved call is 12 ms
early, pulled by bob's overlapping copy). The copy first waits ``hold`` seconds
of audio for the loud mic's own report (measured: it comes within 50 ms of the
copy's), so a moved call reaches the table that much later; a dropped copy
costs nothing.

Two genuine shouts tens of ms apart on two mics are each loudest on their own
mic, so both survive. The second caller's mic heard the first caller's copy
before its own player spoke, and its spotter placed the call's onset where
that copy begins, a few ms after the first caller: calls 80-250 ms apart were
ruled ties. So a call whose first frames are another mic's copy starts at the
first frame where its own mic is not clearly fainter than that mic
(``own_onset``), read in the broadband level and in a pre-emphasised one
that hears a "s" under the other caller's vowel.
"""

from __future__ import annotations

from collections import deque
from dataclasses import replace
from typing import Any

import numpy as np

from ..audio import AudioChunk
from ..vocabulary import SNAP, SNAP_POOL
from . import Detection, Refusal, take_refusals, undecided_from

#: How much louder another mic must be over a detection's span for the detection
#: to count as crosstalk. Crosstalk copies measure 12-20 dB below their source
#: (fixtures mc2/mc4: -12 dB; bench_play: -20 dB); two genuine callers differ by
#: their voices' loudness (fixture players: within ~4 dB of each other).
MARGIN_DB = 7.0
#: How long (audio clock) a crosstalk copy waits for its loud mic's own spotter
#: to report the call before the copy is moved there as that mic's call.
HOLD = 0.3
#: s of audio after a call's end that ``OwnWordCheck`` waits for before the enrollment judges it
#: (as the combined engine's attribution waits: spotters.combined.LOOKAHEAD).
OWN_WORD_LOOKAHEAD = 0.12
CHECKED = (SNAP, SNAP_POOL)  # the words every player enrolls, which OwnWordCheck puts to the enrollment


class ChannelLevels:
    """Per-channel energy of the last ``seconds`` of input in 10 ms frames, on the input clock.

    Filled chunk by chunk into a fixed ring (no allocation that grows with
    time); frames are indexed by their position on the stream, so a gap in
    the input (a lost device) leaves stale slots that are simply not read.
    """

    def __init__(self, channels: list[int], seconds: float = 10.0, frame_s: float = 0.01) -> None:
        self.channels = list(channels)
        self.frame_s = frame_s
        self.seconds = seconds
        self.rate = 0
        self._col = np.asarray(self.channels, dtype=np.intp)
        self._reset(16000)

    def _reset(self, rate: int) -> None:
        self.rate = rate
        self.hop = max(1, int(round(rate * self.frame_s)))
        size = max(1, int(round(self.seconds / self.frame_s)))
        self._energy = np.zeros((size, len(self.channels)), dtype=np.float64)
        self._index = np.full(size, -1, dtype=np.int64)  # the stream frame each slot holds
        self._acc = np.zeros(len(self.channels), dtype=np.float64)
        self._filled = 0  # samples summed into _acc for frame _frame
        self._frame = 0
        self._next = -1  # stream index the next chunk should start at

    @property
    def clock(self) -> float:
        """Seconds on the input clock just past the newest sample taken."""
        return max(self._next, 0) / self.rate

    def accept(self, chunk: AudioChunk) -> None:
        if chunk.rate != self.rate:
            self._reset(chunk.rate)
        x = chunk.samples
        if x.ndim == 1:
            x = x[:, None]
        if chunk.start != self._next:  # first chunk, or a gap: start the frame the chunk falls in
            self._acc[:] = 0.0
            self._frame, self._filled = divmod(chunk.start, self.hop)
        self._next = chunk.start + len(x)
        if self._col.max() < x.shape[1]:
            sq = x[:, self._col].astype(np.float64)
        else:  # a mapped channel the input lacks reads as silence (never the louder mic)
            sq = np.zeros((len(x), len(self._col)))
            have = self._col < x.shape[1]
            sq[:, have] = x[:, self._col[have]]
        sq *= sq
        hop, n = self.hop, len(sq)
        i = min(hop - self._filled, n)
        self._acc += sq[:i].sum(axis=0)
        self._filled += i
        if self._filled == hop:
            self._push(self._acc / hop)
            self._acc[:] = 0.0
            self._filled = 0
        whole = (n - i) // hop
        if whole:
            for row in sq[i:i + whole * hop].reshape(whole, hop, -1).mean(axis=1):
                self._push(row)
            i += whole * hop
        if i < n:
            self._acc += sq[i:].sum(axis=0)
            self._filled = n - i

    def _push(self, energy: np.ndarray) -> None:
        slot = self._frame % len(self._index)
        self._energy[slot] = energy
        self._index[slot] = self._frame
        self._frame += 1

    def frames_db(self, t0: float, t1: float) -> np.ndarray:
        """Power (dBFS) of each held 10 ms frame over [t0, t1] seconds, shape (frames, channels)."""
        per_s = self.rate / self.hop
        f0 = int(np.floor(t0 * per_s))
        f1 = max(f0 + 1, int(np.ceil(t1 * per_s)))
        frames = np.arange(max(f0, self._frame - len(self._index)), min(f1, self._frame))
        slots = frames % len(self._index)
        slots = slots[self._index[slots] == frames]
        return 10.0 * np.log10(self._energy[slots] / 32768.0 ** 2 + 1e-12)

    def frame_time(self, t: float) -> float:
        """Start (s) of the 10 ms frame that holds time ``t``."""
        return float(np.floor(t * self.rate / self.hop) * self.hop / self.rate)

    def span_db(self, t0: float, t1: float) -> np.ndarray | None:
        """Mean power (dBFS) of each channel over [t0, t1] seconds, or None when not held."""
        db = self.frames_db(t0, t1)
        if not len(db):
            return None
        return 10.0 * np.log10(np.mean(10.0 ** (db / 10.0), axis=0) + 1e-12)


class ChannelSpotters:
    """One spotter per player's microphone channel: the channel says who called, and a
    call clearly louder on another mic is that mic's (see the module docstring)."""

    name = "vosk-channels"

    def __init__(self, spotters: dict[int, Any], owner: dict[int, str], margin_db: float | None = MARGIN_DB,
                 hold: float = HOLD, seconds: float = 10.0) -> None:
        self.spotters = spotters
        self.owner = owner
        self.margin_db = margin_db  # None: no crosstalk rule (every detection keeps its channel)
        self.hold = hold
        self.levels = ChannelLevels(sorted(spotters), seconds=seconds)
        self.high = ChannelLevels(sorted(spotters), seconds=seconds)  # the pre-emphasised levels (own_onset)
        self._last: np.ndarray | None = None  # each channel's last sample, for the pre-emphasis across chunks
        self._next = -1
        self.dropped: list[tuple[Detection, int, float]] = []  # (crosstalk copy, its loud mic, dB louder)
        self.moved: list[Detection] = []  # calls re-attributed to the loud mic (its own spotter missed them)
        self._pending: list[tuple[Detection, int, float]] = []  # (copy, loud mic, clock when reported)
        self._kept: list[Detection] = []  # recent calls passed on, to match copies against

    def _louder(self, d: Detection, ch: int) -> tuple[int, float] | None:
        """(channel, dB) of the mic where ``d``'s span is clearly louder, or None when ``d`` is its own mic's."""
        if self.margin_db is None or len(self.spotters) < 2:
            return None
        levels = self.levels.span_db(d.onset, d.end)
        if levels is None:
            return None
        mine = levels[self.levels.channels.index(ch)]
        k = int(np.argmax(levels))
        if levels[k] - mine >= self.margin_db:
            return self.levels.channels[k], float(levels[k] - mine)
        return None

    def _accept_levels(self, chunk: AudioChunk) -> None:
        self.levels.accept(chunk)
        x = chunk.samples.astype(np.float32)
        if x.ndim == 1:
            x = x[:, None]
        if self._last is None or chunk.start != self._next or len(self._last) != x.shape[1]:
            self._last = x[0].copy()  # (a gap: the first sample differs from nothing before it)
        high = np.diff(x, axis=0, prepend=self._last[None, :])  # +6 dB per octave: a "s" over a vowel
        self._last = x[-1].copy()
        self._next = chunk.end
        self.high.accept(replace(chunk, samples=high, echo=None))

    def own_onset(self, d: Detection, ch: int) -> float:
        """``d``'s onset, or where its own mic's sound begins when its first frames are another mic's copy.

        A frame is the copy's while some other mic is ``margin_db`` louder in both the broadband and the
        pre-emphasised level (a caller's "s" under the other caller's vowel shows in the second). The
        onset moves only when the frame holding it or the next is such a frame, to the first frame from
        which two frames running are not: the frame's start, so at most 10 ms early.
        """
        if self.margin_db is None or len(self.spotters) < 2:
            return d.onset
        start = self.levels.frame_time(d.onset)
        broad = self.levels.frames_db(start, d.end)
        high = self.high.frames_db(start, d.end)
        n = min(len(broad), len(high))
        if n < 3:
            return d.onset
        i = self.levels.channels.index(ch)
        others = [k for k in range(broad.shape[1]) if k != i]
        copy = [any(broad[f, k] - broad[f, i] >= self.margin_db and high[f, k] - high[f, i] >= self.margin_db
                    for k in others) for f in range(n)]
        if not (copy[0] or copy[1]):
            return d.onset
        for f in range(1, n - 1):
            if not copy[f] and not copy[f + 1]:
                return max(d.onset, start + f * self.levels.hop / self.levels.rate)
        return d.onset  # its own mic never comes clear of the copy: the crosstalk rule's to judge

    def _take(self, found: list[Any], ch: int, now: float) -> list[Any]:
        out = []
        for d in found:
            d = replace(d, player=d.player or self.owner.get(ch), channel=ch)
            louder = self._louder(d, ch)
            if louder is None:
                onset = self.own_onset(d, ch)
                if onset != d.onset:
                    d = replace(d, onset=onset)
                if not any(m.channel == ch and m.onset < d.end and d.onset < m.end for m in self.moved[-8:]):
                    out.append(d)  # (else its copy was already moved here: the mic's own report came late)
            else:
                self.dropped.append((d, *louder))
                self._pending.append((d, louder[0], now))
        return out

    def _settle(self, out: list[Any], now: float, final: bool) -> list[Any]:
        """Drop the copies whose loud mic reported the call itself; move the rest there once it had ``hold``."""
        self._kept = [d for d in self._kept + out if d.end > now - 15.0]
        waiting = []
        for d, loud, at in self._pending:
            if any(k.channel == loud and k.onset < d.end and d.onset < k.end for k in self._kept):
                continue  # the loud mic's own call (or a copy already moved there)
            if final or now - at >= self.hold:
                moved = replace(d, channel=loud, player=self.owner.get(loud), detected_at=now)
                self.moved.append(moved)
                self._kept.append(moved)
                out.append(moved)
            else:
                waiting.append((d, loud, at))
        self._pending = waiting
        return out

    def undecided(self) -> float | None:
        """The earliest call begun on any mic and not yet passed on (spotters.undecided_from),
        a crosstalk copy waiting to be moved to its loud mic included."""
        from . import undecided_from

        now = self.levels.clock
        onsets = [d.onset for d, _loud, _at in self._pending]
        for ch, spotter in self.spotters.items():
            t = undecided_from(spotter)
            # a neighbour's call heard faintly here: that mic's own spotter holds the line for it
            if t is not None and self._louder(Detection("snap", t, max(now, t), 0.0, ch), ch) is None:
                onsets.append(t)
        return min(onsets) if onsets else None

    def take_refusals(self) -> list[Refusal]:
        """Each mic's refusals, named to its player; not those of a neighbour's call heard faintly here."""
        out = []
        for ch, spotter in self.spotters.items():
            for r in take_refusals(spotter):
                if any(k.channel == ch and k.onset < r.end and r.onset < k.end for k in self._kept):
                    continue  # a call on this mic after all (a neighbour's copy of it moved here)
                if self._louder(Detection(r.word, r.onset, r.end, 0.0, ch), ch) is None:
                    out.append(replace(r, player=r.player or self.owner.get(ch, ""), channel=ch))
        return out

    def accept(self, chunk: AudioChunk) -> list[Any]:
        self._accept_levels(chunk)
        now = chunk.end / chunk.rate
        out = []
        for ch, spotter in self.spotters.items():
            out.extend(self._take(spotter.accept(chunk), ch, now))
        return self._settle(out, now, final=False)

    def flush(self) -> list[Any]:
        now = self.levels.clock
        out = []
        for ch, spotter in self.spotters.items():
            out.extend(self._take(spotter.flush(), ch, now))
        return self._settle(out, now, final=True)


class OwnWordCheck:
    """Per-player mics with ``play --strict-calls``: a call counts only where the players' enrollment
    (``EnrolledSpotter.attribute_span``) also hears an enrolled player's call in it.

    The channel names every caller, so a near miss or a word of table talk that Vosk and the keyword
    model take for "snap" is charged to the mic's player: 25 per hour over the no-call hour
    (``python3 -m bench.bench_nocall vosk+keyword``). The enrollment names nobody for most of them, as
    it does on one mic, but also for many calls in loud noise. Measured: 25 -> 3 false calls per hour
    (``bench.bench_nocall vosk+keyword+strict``), 104 -> 88 of the corpus's 114 lone calls on two mics,
    most of those lost in noise (``bench --only channels``; docs/listening.md, "Twenty-seventh round"). So it is a choice for quiet, chatty
    tables, off by default. A refused call is kept as a ``Refusal`` with the enrollment's reason. Only
    the words every player enrolls ("snap", "snap pool") are checked: Slapjack's "slap" has no takes.
    """

    name = "channels+enrolled"

    def __init__(self, inner: ChannelSpotters, enrolled: Any, lookahead: float = OWN_WORD_LOOKAHEAD) -> None:
        self.inner = inner
        self.spotters = getattr(inner, "spotters", None)  # the mics, for the table's burst tracker
        self.enrolled = enrolled  # a spotters.enrolled.EnrolledSpotter fed the same chunks
        self.lookahead = lookahead
        self._held: list[Detection] = []  # calls waiting for ``lookahead`` of audio after their end
        self._refused: list[Refusal] = []
        self._now = 0.0

    def undecided(self) -> float | None:
        """The earliest call begun and not passed on: the mics' own, or one waiting for the enrollment."""
        onsets = [d.onset for d in self._held]
        t = undecided_from(self.inner)
        return min([*onsets, t] if t is not None else onsets, default=None)

    def take_refusals(self) -> list[Refusal]:
        out, self._refused = take_refusals(self.inner) + self._refused, []
        return out

    def _judge(self, d: Detection) -> bool:
        _ch, att, rival = self.enrolled.attribute_span(d.onset, d.end, word=d.word, channel=d.channel)
        if att.player is not None and not rival:
            return True
        why = "the game's own voice fits it best" if rival else (att.reason or "no enrolled call fits it")
        self._refused.append(Refusal(d.word, d.onset, d.end, d.player or "",
                                     f"--strict-calls: the enrollment does not hear a call there ({why})",
                                     channel=d.channel or 0, engine=d.engine))
        return False

    def _pass(self, found: list[Any], final: bool) -> list[Any]:
        self._held += [d for d in found if d.word in CHECKED]
        due = [final or self._now >= d.end + self.lookahead for d in self._held]
        ready = [d for d, ok in zip(self._held, due) if ok]
        self._held = [d for d, ok in zip(self._held, due) if not ok]
        take_refusals(self.enrolled)  # its own near misses are not this table's (its calls are not used)
        return [d for d in found if d.word not in CHECKED] + [d for d in ready if self._judge(d)]

    def accept(self, chunk: AudioChunk) -> list[Any]:
        self.enrolled.accept(chunk)
        self._now = chunk.end / chunk.rate
        return self._pass(self.inner.accept(chunk), final=False)

    def flush(self) -> list[Any]:
        self.enrolled.flush()
        return self._pass(self.inner.flush(), final=True)


#: s of each mic's audio ``ContrastCheck`` keeps: a call's word and the table's background before it
CONTRAST_KEEP = 4.0
CONTRAST_CONTEXT = 0.15  # s around a call's word searched for a take (the enrolled engine's CONTEXT)


class ContrastCheck:
    """Per-player mics: a call that fits a player's takes of a contrast word ("slap") better than any
    call take is that word (``Voices.contrast``), as on one mic (``spotters.combined``).

    Here the channel names the caller, so a "slap" that Vosk and the keyword model take for "snap" is
    charged to the mic's player. Only the calls are analysed, from the last CONTRAST_KEEP s of their
    mic, which is kept as the chunks came (no copy): nothing runs while nobody calls. A refused call
    is kept as a ``Refusal`` with the reason.
    """

    name = "channels+contrast"

    def __init__(self, inner: Any, profiles: list[Any]) -> None:
        from ..voices import Voices

        self.inner = inner
        self.spotters = getattr(inner, "spotters", None)  # the mics, for the table's burst tracker
        self.voices = Voices(profiles, encoder=None)  # templates only: the speaker encoder is not needed
        self._chunks: deque[AudioChunk] = deque()
        self._refused: list[Refusal] = []

    def undecided(self) -> float | None:
        return undecided_from(self.inner)

    def take_refusals(self) -> list[Refusal]:
        out, self._refused = take_refusals(self.inner) + self._refused, []
        return out

    def _audio(self, channel: int, t0: float, t1: float) -> tuple[np.ndarray, float]:
        """(``channel`` kept from ``t0`` to ``t1`` s as float samples at the features' rate, the time of
        the first)."""
        from .. import features as F

        parts = [c for c in self._chunks if c.end / c.rate > t0 and c.start / c.rate < t1]
        if not parts or channel >= parts[0].channels:
            return np.zeros(0, np.float32), t0
        rate = parts[0].rate
        x = np.concatenate([c.samples[:, channel] for c in parts])
        first = parts[0].start
        a, b = max(0, int(t0 * rate) - first), max(0, int(t1 * rate) - first)
        return F.resample(F.to_float(x[a:b]), rate), (first + a) / rate

    def _judge(self, d: Detection) -> bool:
        from .. import features as F

        if d.word not in CHECKED:
            return True
        x, t0 = self._audio(d.channel or 0, d.onset - CONTRAST_KEEP, d.end + CONTRAST_CONTEXT)
        if len(x) < F.FRAME:
            return True
        feats = F.analyse(x)
        lo = max(0, int((d.onset - CONTRAST_CONTEXT - t0) * F.RATE) // F.HOP)
        hi = min(len(feats), int((d.end + CONTRAST_CONTEXT - t0) * F.RATE) // F.HOP + 1)
        why = self.voices.contrast(feats.log_mel[lo:hi], F.noise_floor(feats.log_mel))
        if why is None:
            return True
        self._refused.append(Refusal(d.word, d.onset, d.end, d.player or "", why, channel=d.channel or 0,
                                     engine=d.engine))
        return False

    def _keep(self, chunk: AudioChunk) -> None:
        self._chunks.append(chunk)
        while self._chunks and (chunk.end - self._chunks[0].end) / chunk.rate > CONTRAST_KEEP + 1.0:
            self._chunks.popleft()

    def accept(self, chunk: AudioChunk) -> list[Any]:
        self._keep(chunk)
        return [d for d in self.inner.accept(chunk) if self._judge(d)]

    def flush(self) -> list[Any]:
        return [d for d in self.inner.flush() if self._judge(d)]


def with_contrast(inner: Any, profiles: list[Any]) -> Any:
    """``inner`` (the mics' spotters) behind a ``ContrastCheck`` when some of ``profiles`` hold takes of
    a contrast word; else ``inner`` itself: with none there is nothing to check."""
    from ..voices import profile_contrast

    told = [p for p in profiles if profile_contrast(p)]
    return ContrastCheck(inner, told) if told else inner
