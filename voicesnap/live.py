"""The live microphone: device loss, overflow, clock continuity.

A game (voicesnap.table) and ``voicesnap listen`` hear the microphone through
``LiveInput``: a device that goes away, goes silent or clips is said as it
happens and reopened, and the audio clock runs on across the gap, so every
event keeps a true position on it.
"""

from __future__ import annotations

import time
import threading
from dataclasses import replace
from typing import Any, Callable, Iterator, Mapping

import numpy as np

from .audio import AudioChunk
from .text import counted, listed



class LiveInput:
    """Chunks from the microphone that survive the device going away.

    ``open_source()`` returns an opened source with ``read(timeout)``,
    ``stats()`` and ``close()`` (voicesnap.audio.MicSource). When no audio
    arrives for ``stall`` seconds the device is taken as lost: ``report`` says
    so (the table pauses), the source is reopened every second until it works,
    and the clock continues across the gap so recordings keep true times. It is
    said to be back once it delivers real sound, not when it merely opens: a
    reopened stream can deliver nothing, or zeros, for a while.
    Overflows and dropped blocks are reported as they happen, never hidden.

    A stream can also go on delivering while nothing is there: a muted
    microphone, or (through PulseAudio) a source that vanished and whose
    stream was moved to a silent one. A real microphone never delivers exact
    digital zeros, or one constant value, for seconds on end (even a quiet
    room has noise, and its converter's own noise is a few LSB), so ``silent``
    seconds of that are taken as a loss too: reported the same way (the table
    pauses) and over as soon as a chunk carries real signal again. The chunks
    keep flowing meanwhile, on the same clock.
    """

    LOST = "input device lost"
    BACK = "input device is back"
    CLIPPING = "the microphone is too loud"
    # A shout driven past full scale is heard as a call (Vosk still knows the word) but
    # its voice no longer matches anyone's enrollment (measured: all 6 hard-clipped calls
    # of the corpus were named to nobody, so play ignored them), and nothing else would
    # tell the players why. Full scale is 32767; a converter's clipped run sits at it.
    CLIP_LEVEL = 32700
    CLIP_WINDOW = 0.5  # s: the stretch in which clipped samples are counted
    CLIP_SHARE = 0.005  # share of that stretch's samples at full scale that means clipping
    CLIP_REPEAT = 30.0  # s of audio between two reports
    CLIP_TEXT = ("{where}shouted calls are cut off at full scale, so they may not be recognised or told "
                 "apart and can be ignored: turn the input gain down (pavucontrol, alsamixer or the "
                 "system's sound settings) or move the microphone further away")

    def __init__(
        self,
        open_source: Callable[[], Any],
        report: Callable[[str], None],
        *,
        stall: float = 1.5,
        retry: float = 1.0,
        silent: float = 2.0,
        watch: Any = None,
        watch_every: float = 2.0,
        meanwhile: str = "the game is paused",
        owners: Mapping[int, str] | None = None,
        channel_meanwhile: str | None = None,
    ) -> None:
        self.open_source = open_source
        self.meanwhile = meanwhile  # what the loss notices say happens until it is back (listen: no game)
        self.report = report
        self.stall = stall
        self.retry = retry
        self.silent = silent  # s of exact digital silence (or a constant) that means no microphone
        # Where the sound server records the stream from (voicesnap.pulse.SourceWatch: ``check()``, ``reset()``),
        # asked every ``watch_every`` s of wall time: a stream moved to another live microphone looks healthy.
        self.watch = watch
        self.watch_every = watch_every
        self.flat_frames = 0  # frames of it in a row so far
        # One microphone per player (channel -> player): a channel of exact silence while the others carry
        # sound is that player's mic unplugged or muted. Unsaid, their calls reached only the other mics,
        # faintly, and were counted for those mics' players.
        self.owners = dict(owners or {})
        self.channel_meanwhile = channel_meanwhile or meanwhile  # what a player's silent mic means meanwhile
        self._flat_channel: dict[int, int] = {}  # frames of exact silence in a row, per watched channel
        self._dead: tuple[int, ...] = ()  # the watched channels the players were told are silent
        self.gone = False  # the players were told it is lost (by silence, stall or death) and not yet back
        self.closed = threading.Event()
        self.source: Any = None
        self.rate = 16000
        self._seen = {"overflows": 0, "dropped_frames": 0}
        self.offset = 0  # frames added to the current source's clock (after reopenings)
        self._clipped: np.ndarray | None = None  # per channel: full-scale samples in this window
        self._clip_frames = 0  # frames counted in this window
        self._clip_said: float | None = None  # clock (s) of the last clipping report

    def close(self) -> None:
        self.closed.set()

    def _stream_dead(self) -> bool:
        """Has the device's stream stopped by itself (device error, callback aborted)?

        Not every loss shows here: through PulseAudio an unloaded source's streams
        are moved to another source and go on delivering. If that one is silent
        (exact zeros), ``_check_silence`` catches it; one moved to another live
        microphone only the server can tell (``watch``, ``_moved``).
        """
        stream = getattr(self.source, "_stream", None)  # voicesnap.audio.MicSource's sounddevice stream
        if stream is None:
            return False
        try:
            return not stream.active
        except Exception:
            return True

    SILENT_TEXT = ("the microphone sends no sound at all (muted, switched off or unplugged?): {meanwhile}; "
                   "unmute it or plug it back in and it resumes by itself")

    CHANNEL_SILENT_TEXT = ("{who} sends no sound at all (unplugged, muted or switched off?): {meanwhile}, as "
                           "{whose} calls would reach only the other microphones and count for their players; "
                           "plug it back in and it resumes by itself")

    def _silent_channels(self, chunk: AudioChunk) -> tuple[int, ...]:
        """The players' channels (``owners``) that have carried exact silence for ``silent`` seconds."""
        if not self.owners or chunk.samples.size == 0:
            return ()
        columns = chunk.samples.reshape(chunk.frames, -1)
        for ch in self.owners:
            if ch < columns.shape[1]:
                flat = bool(columns[:, ch].min() == columns[:, ch].max())
                self._flat_channel[ch] = self._flat_channel.get(ch, 0) + chunk.frames if flat else 0
        return tuple(ch for ch in sorted(self.owners) if self._flat_channel.get(ch, 0) >= self.silent * chunk.rate)

    def _channels_text(self, dead: tuple[int, ...]) -> str:
        """ "Bob's microphone (channel 1) sends no sound at all ...": each silent mic named by its player."""
        names = [self.owners[ch] for ch in dead]
        who = listed(f"{self.owners[ch]}'s microphone (channel {ch})" for ch in dead)
        whose = f"{names[0]}'s" if len(names) == 1 else "their"
        return self.CHANNEL_SILENT_TEXT.format(who=who, whose=whose, meanwhile=self.channel_meanwhile).replace(
            " sends ", " send " if len(dead) > 1 else " sends ", 1)

    def _check_silence(self, chunk: AudioChunk) -> None:
        """Exact digital silence (or one constant value) for ``silent`` seconds: nothing is there. With one
        microphone per player, the same on one player's channel while the others carry sound."""
        samples = chunk.samples
        flat = samples.size > 0 and samples.min() == samples.max()  # a few microseconds a chunk
        dead = self._silent_channels(chunk)
        if not flat:
            self.flat_frames = 0
            if dead and dead != self._dead:  # (said again only when another mic goes silent too)
                self.gone, self._dead = True, dead
                self.report(f"{self.LOST}: {self._channels_text(dead)}")
            elif not dead and self.gone:
                self.gone, self._dead = False, ()
                self.report(f"{self.BACK}: sound again, resuming")
            return
        self.flat_frames += chunk.frames
        if not self.gone and self.flat_frames >= self.silent * chunk.rate:
            self.gone = True
            self.report(f"{self.LOST}: {self.SILENT_TEXT.format(meanwhile=self.meanwhile)}")

    def _check_clipping(self, chunk: AudioChunk) -> None:
        """Say so (at most every CLIP_REPEAT s) when a channel sits at full scale in CLIP_WINDOW of audio."""
        samples = chunk.samples.reshape(chunk.frames, -1)
        hits = (np.abs(samples.astype(np.int32)) >= self.CLIP_LEVEL).sum(axis=0)
        if self._clipped is None or len(self._clipped) != len(hits):
            self._clipped, self._clip_frames = np.zeros(len(hits), dtype=np.int64), 0
        self._clipped += hits
        self._clip_frames += chunk.frames
        if self._clip_frames < self.CLIP_WINDOW * chunk.rate:
            return
        loud = np.flatnonzero(self._clipped >= self.CLIP_SHARE * self._clip_frames)
        self._clipped[:], self._clip_frames = 0, 0
        now = chunk.end / chunk.rate
        if len(loud) == 0 or (self._clip_said is not None and now - self._clip_said < self.CLIP_REPEAT):
            return
        self._clip_said = now
        # each channel with its player's name where there is one: "channel 0" told a player by ear nothing
        where = ": " if len(hits) == 1 else " on channel " + ", ".join(
            f"{int(c)} ({self.owners[int(c)]}'s)" if int(c) in self.owners else str(int(c)) for c in loud) + ": "
        self.report(self.CLIPPING + self.CLIP_TEXT.format(where=where))

    def _check_overflow(self) -> None:
        stats = self.source.stats() if hasattr(self.source, "stats") else {}
        over = stats.get("overflows", 0) - self._seen["overflows"]
        dropped = stats.get("dropped_frames", 0) - self._seen["dropped_frames"]
        if over > 0 or dropped > 0:
            self._seen = {"overflows": stats.get("overflows", 0), "dropped_frames": stats.get("dropped_frames", 0)}
            self.report(f"audio input overflow: {dropped / self.rate * 1000:.0f} ms of sound lost "
                        f"({counted(over, 'overflow')}); the computer is too busy, so calls in that gap were not heard")

    def _moved(self) -> str | None:
        """What to tell the players when the server moved the stream off the microphone they chose
        (the game pauses), or None. A move from a default microphone is only said."""
        change = self.watch.check() if self.watch is not None else None
        if change is None:
            return None
        text, pause = change
        if not pause:
            self.report(text)
            return None
        return text

    def _reopened(self) -> bool:
        """Whether the source just opened records from the right microphone (else it is closed again)."""
        if self.watch is None:
            return True
        self.watch.reset()
        if self._moved() is None:
            return True
        try:
            self.source.close()
        except Exception:
            pass
        self.source = None
        return False

    def __iter__(self) -> Iterator[Any]:
        offset = self.offset = 0  # frames added to the source's clock (across reopenings)
        end = 0
        self.source = self.open_source()
        self.rate = getattr(self.source, "rate", self.rate)
        last = watched = time.monotonic()
        lost_at = 0.0
        delivered = True  # the current stream has delivered a chunk (a reopened one may never)
        if self.watch is not None:
            self.watch.reset()
        try:
            while not self.closed.is_set():
                moved = None
                if self.watch is not None and time.monotonic() - watched >= self.watch_every:
                    watched = time.monotonic()
                    moved = self._moved()
                try:
                    chunk = self.source.read(timeout=0.2) if moved is None else None
                except Exception:  # the driver gave up on the device (PortAudioError and kin)
                    chunk, last = None, 0.0
                if moved is not None or (chunk is None and self._stream_dead()):
                    last = 0.0  # no need to wait for the stall: the stream says it has stopped, or was moved
                if chunk is not None:
                    last = time.monotonic()
                    delivered = True
                    if offset:
                        chunk = replace(chunk, start=chunk.start + offset)
                    end = chunk.end
                    self._check_overflow()
                    self._check_silence(chunk)
                    self._check_clipping(chunk)
                    yield chunk
                    continue
                if time.monotonic() - last < self.stall:
                    continue
                if delivered:  # (a reopened stream that never delivered is the same loss, from the same time)
                    lost_at = time.monotonic() - (self.stall if last else 0.0)
                if not self.gone:
                    self.gone = True
                    self.report(f"{self.LOST}: {moved}" if moved is not None else
                                f"{self.LOST}: {self.meanwhile}; plug the microphone back in (or check "
                                "'voicesnap devices') and it resumes by itself")
                try:
                    self.source.close()
                except Exception:
                    pass
                self.source = None
                while not self.closed.is_set():
                    time.sleep(self.retry)
                    if self.watch is not None and not self.watch.pactl(["info"]):
                        continue  # the sound server is away: a PortAudio try would only print its errors
                    try:
                        self.source = self.open_source()
                    except Exception:
                        continue
                    if self._reopened():
                        break
                if self.source is None:
                    return
                gap = int((time.monotonic() - lost_at) * self.rate)
                offset = self.offset = end + gap
                self._seen = {"overflows": 0, "dropped_frames": 0}
                self.flat_frames, delivered = 0, False
                last = watched = time.monotonic()
                # Back once it delivers sound (_check_silence), not when it opens: a reopened stream can
                # deliver nothing, or zeros, and "back" then "lost" again told the players twice of one loss.
        finally:
            if self.source is not None:
                try:
                    self.source.close()
                except Exception:
                    pass
