"""The output side: announcement audio played on a known clock.

The referee judges calls against the moment a card was *heard*, so the moment
each announcement's first sample reaches the speaker must be a position on
the game's one clock (the input stream, ``voicesnap.audio``).

Choice: a separate ``sounddevice.OutputStream`` whose clock is *mapped* onto
the input clock, not one duplex stream. Why: the microphone and the speaker
are often different devices (USB mic, laptop speakers) which one duplex
stream cannot open; the input stream keeps its small fixed block size for the
spotter while the output can use whatever the device likes; and MicSource
stays the single owner of the input clock. The mapping is cheap and exact to
within PortAudio's reported latencies: PortAudio gives every output buffer its
DAC time (``outputBufferDacTime``) and every input buffer its ADC time on the
same stream-time base, so ``ClockMap`` turns a DAC time into input seconds
from (stream time, input position) anchors.

Split for testing: ``Mixer`` is the pure scheduling core (what plays in which
frame of which buffer; interrupts; fades), ``ClockMap`` the pure clock
arithmetic, ``DevicePlayback`` the thin PortAudio shell and
``VirtualPlayback`` the same core on a simulated clock (tests, benchmarks,
and games without a speaker).
"""

from __future__ import annotations

import abc
import collections
import threading
from dataclasses import dataclass
from typing import Any, Iterable

import numpy as np

from .errors import UserError
from .events import event

__all__ = [
    "AudioOutputError", "ClockMap", "Mixer", "Report", "SpeechStarted", "SpeechEnded", "SpeechStopped",
    "VirtualPlayback", "DevicePlayback", "find_onset", "anchor_from_input",
]


SPEAKER_GONE = "the speaker is gone"  # how DevicePlayback.loss_notice begins (the display keeps it shown)


class AudioOutputError(UserError):
    """No usable speaker: the game goes on, announcements as text."""


@event("speech-started")
@dataclass(frozen=True)
class SpeechStarted:
    """An announcement's first sample reached the speaker at ``t`` (input clock, seconds)."""

    id: int
    text: str
    t: float


@event("speech-ended")
@dataclass(frozen=True)
class SpeechEnded:
    """An announcement stopped at ``t``: played to the end, or cut (``completed`` False)."""

    id: int
    t: float
    completed: bool


@event("speech-stopped")
@dataclass(frozen=True)
class SpeechStopped:
    """Speech failed during the game and is off from here on (``reason`` says why); nothing
    more will start, so a card waiting for its announcement is turned at once."""

    reason: str


@event("speaker-notice")
@dataclass(frozen=True)
class SpeakerNotice:
    """What the players must be told about the speaker itself (gone, back, running dry): printed
    and shown, never spoken, since the speaker is what it is about."""

    text: str
    lost: bool = False  # the speaker is gone: kept on the display until it is back


@dataclass(frozen=True)
class Report:
    """What the mixer did, in output frames (callback side; no clock mapping yet)."""

    kind: str  # "started", "finished", "cut", "dropped" (cancelled before it started)
    id: int
    frame: int  # output-stream frame index


# --- the clock ---------------------------------------------------------------


class ClockMap:
    """PortAudio stream time -> input-clock seconds.

    Anchors are (PortAudio time, input seconds) pairs for the same instant.
    Exact anchors come from the input callback (``inputBufferAdcTime`` and the
    block's first frame). Anchors taken by polling (``stream.time`` with the
    input position) lag by up to one input block, so the map keeps the *upper
    envelope* of ``clock - pa_time`` over recent anchors, which converges on
    the exact offset within a few blocks. Slope is 1: both clocks count real
    seconds and a game is short enough (ppm drift: <1 ms per 10 minutes) not
    to need a rate fit; anchors age out so a slow drift is still followed.
    """

    def __init__(self, window: int = 64, offset: float | None = None) -> None:
        self._offsets: collections.deque[float] = collections.deque(maxlen=window)
        if offset is not None:
            self._offsets.append(offset)
        self.correction = 0.0  # seconds, from calibrate(): what the reported latencies got wrong
        self._deltas: collections.deque[float] = collections.deque(maxlen=9)

    def observe(self, pa_time: float, clock: float) -> None:
        self._offsets.append(clock - pa_time)

    @property
    def ready(self) -> bool:
        return bool(self._offsets)

    @property
    def offset(self) -> float:
        if not self._offsets:
            raise RuntimeError("ClockMap has no anchors yet")
        return max(self._offsets) + self.correction

    def calibrate(self, mapped: float, heard: float) -> float:
        """Correct the map with one sound both played and heard: ``mapped`` is
        where the map put its first sample, ``heard`` where the microphone
        found it (``find_onset``). PortAudio's *reported* latencies can be off
        by tens of milliseconds (measured: 38 ms through ALSA's pulse plugin);
        probes measure the real path, room included. Every announcement the
        microphone hears can be a probe; the correction is the median of the
        last nine measurements, so one probe drowned by a shout cannot move
        it far. ``mapped`` must come from this map before any correction
        (``to_clock(x) - correction``). Returns the correction now in force.
        """
        self._deltas.append(heard - mapped)
        self.correction = float(np.median(np.asarray(self._deltas)))
        return self.correction

    def to_clock(self, pa_time: float) -> float:
        return pa_time + self.offset


# --- the pure core -----------------------------------------------------------


class _Item:
    __slots__ = ("id", "samples", "pos", "gain")

    def __init__(self, item_id: int, samples: np.ndarray, gain: float) -> None:
        self.id = item_id
        self.samples = samples
        self.pos = 0
        self.gain = gain


class Mixer:
    """Plays queued clips back to back into output buffers; cancels on request.

    The control thread calls ``enqueue``/``cancel``; the audio callback calls
    ``fill``. They meet only in two deques (append/popleft are atomic), so the
    callback never waits on a lock. A cut clip fades out over ``fade`` seconds
    instead of clicking. Each clip's first frame is reported as "started" with
    its output-frame index, which the shell maps onto the input clock.
    """

    def __init__(self, rate: int, channels: int = 1, fade: float = 0.004, keep: float = 4.0) -> None:
        self.rate = rate
        self.channels = channels
        self._fade = max(1, int(fade * rate))
        # what was written, the last ``keep`` seconds: the echo canceller's reference (voicesnap.echo)
        self._played = np.zeros(max(1, int(keep * rate)), dtype=np.float32)
        self._commands: collections.deque[tuple[str, Any]] = collections.deque()
        self._queue: collections.deque[_Item] = collections.deque()
        self._current: _Item | None = None
        self._fading: tuple[np.ndarray, int] | None = None  # tail of a cut clip, position
        self.reports: collections.deque[Report] = collections.deque()
        self.frame = 0  # output frames written so far

    # control thread
    def enqueue(self, item_id: int, samples: np.ndarray, gain: float = 1.0) -> None:
        self._commands.append(("play", _Item(item_id, np.asarray(samples, dtype=np.int16).reshape(-1), gain)))

    def cancel(self, item_ids: Iterable[int]) -> None:
        ids = frozenset(item_ids)
        if ids:
            self._commands.append(("cancel", ids))

    @property
    def busy(self) -> bool:
        return bool(self._current is not None or self._queue or self._commands)

    def played_since(self, frame: int | None) -> tuple[int, np.ndarray]:
        """(first frame, samples) the callback wrote from output frame ``frame`` on (None, or
        older than kept: from the oldest kept), int16 scale; read from another thread."""
        end = self.frame  # the callback writes at and after this frame only
        size = len(self._played)
        start = max(end - size + 4096, 0 if frame is None else frame)  # a margin for a block being written
        if start >= end:
            return end, np.zeros(0, np.float32)
        idx = np.arange(start, end) % size
        return start, self._played[idx]

    # audio thread
    def _apply(self) -> None:
        while self._commands:
            what, arg = self._commands.popleft()
            if what == "play":
                self._queue.append(arg)
                continue
            if self._current is not None and self._current.id in arg:
                cur = self._current
                rest = cur.samples[cur.pos : cur.pos + self._fade].astype(np.float32) * cur.gain
                ramp = np.linspace(1.0, 0.0, len(rest), endpoint=False, dtype=np.float32)
                self._fading = ((rest * ramp).astype(np.float32), 0)
                self.reports.append(Report("cut", cur.id, self.frame))
                self._current = None
            if any(item.id in arg for item in self._queue):
                for item in self._queue:
                    if item.id in arg:
                        self.reports.append(Report("dropped", item.id, self.frame))
                self._queue = collections.deque(i for i in self._queue if i.id not in arg)

    def fill(self, out: np.ndarray) -> None:
        """Write the next ``len(out)`` frames (int16 or float32, 1-D or (frames, ch))."""
        self._apply()
        frames = out.shape[0]
        mix = np.zeros(frames, dtype=np.float32)
        if self._fading is not None:
            tail, pos = self._fading
            n = min(frames, len(tail) - pos)
            mix[:n] += tail[pos : pos + n]
            self._fading = None if pos + n >= len(tail) else (tail, pos + n)
        at = 0
        while at < frames:
            if self._current is None:
                if not self._queue:
                    break
                self._current = self._queue.popleft()
                self.reports.append(Report("started", self._current.id, self.frame + at))
            cur = self._current
            n = min(frames - at, len(cur.samples) - cur.pos)
            mix[at : at + n] += cur.samples[cur.pos : cur.pos + n].astype(np.float32) * cur.gain
            cur.pos += n
            at += n
            if cur.pos >= len(cur.samples):
                self.reports.append(Report("finished", cur.id, self.frame + at))
                self._current = None
        at = self.frame % len(self._played)  # keep it (preallocated ring: no allocation here)
        first = min(frames, len(self._played) - at)
        self._played[at : at + first] = mix[:first]
        if first < frames:
            self._played[: frames - first] = mix[first:]
        self.frame += frames
        if out.dtype == np.int16:
            block = np.clip(mix, -32768, 32767).astype(np.int16)
        else:
            block = (mix / 32768.0).astype(out.dtype)
        if out.ndim == 2:
            out[:] = block[:, None]
        else:
            out[:] = block


# --- shells ------------------------------------------------------------------


class _Shell(abc.ABC):
    """Shared bookkeeping: report -> clock events for the announcer."""

    def __init__(self, mixer: Mixer) -> None:
        self.mixer = mixer
        self._texts: dict[int, str] = {}
        self.events: collections.deque[SpeechStarted | SpeechEnded] = collections.deque()
        self.cut = self.dropped = 0

    def play(self, item_id: int, text: str, samples: np.ndarray, gain: float = 1.0) -> None:
        self._texts[item_id] = text
        self.mixer.enqueue(item_id, samples, gain)

    def cancel(self, item_ids: Iterable[int]) -> None:
        self.mixer.cancel(item_ids)

    @abc.abstractmethod
    def _frame_to_clock(self, frame: int) -> float:
        """Where an output frame plays, on the input clock: each playback knows its own mapping."""

    def frame_to_clock(self, frame: int) -> float:
        """Where output frame ``frame`` plays, on the input clock (seconds)."""
        return self._frame_to_clock(frame)

    def played_since(self, frame: int | None) -> tuple[int, np.ndarray] | None:
        """What the speaker was given from output frame ``frame`` on, for the echo canceller
        (``voicesnap.echo.PlaybackReference``); None while the clock mapping is not known."""
        clock_map = getattr(self, "clock_map", None)
        if clock_map is not None and not clock_map.ready:
            return None
        return self.mixer.played_since(frame)

    def _collect(self) -> None:
        while self.mixer.reports:
            r = self.mixer.reports.popleft()
            t = self._frame_to_clock(r.frame)
            if r.kind == "started":
                self.events.append(SpeechStarted(r.id, self._texts.get(r.id, ""), t))
            else:
                self.cut += r.kind == "cut"
                self.dropped += r.kind == "dropped"
                self.events.append(SpeechEnded(r.id, t, r.kind == "finished"))
                self._texts.pop(r.id, None)

    def poll(self) -> list[SpeechStarted | SpeechEnded]:
        """Events since the last poll, in order (control thread)."""
        self._collect()
        out = list(self.events)
        self.events.clear()
        return out


class VirtualPlayback(_Shell):
    """The mixer on a simulated clock: output frame 0 is input-clock ``start``.

    Used by tests and benchmarks (and by a game with no speaker, where the
    flip's announced moment is simply when it would have played). ``record``
    keeps every output sample so tests can check what was "heard".
    """

    def __init__(self, rate: int = 16000, start: float = 0.0, block: int = 256, record: bool = False) -> None:
        super().__init__(Mixer(rate))
        self.rate = rate
        self.start = start
        self.block = block
        self._record: list[np.ndarray] | None = [] if record else None

    def _frame_to_clock(self, frame: int) -> float:
        return self.start + frame / self.rate

    @property
    def now(self) -> float:
        return self._frame_to_clock(self.mixer.frame)

    def advance_to(self, clock: float) -> None:
        """Run the output callback block by block until ``clock`` is reached."""
        while self.now + 1e-12 < clock:
            buf = np.zeros(self.block, dtype=np.int16)
            self.mixer.fill(buf)
            if self._record is not None:
                self._record.append(buf)
        self._collect()

    def recording(self) -> np.ndarray:
        if self._record is None:
            raise RuntimeError("VirtualPlayback(record=True) keeps the output")
        return np.concatenate(self._record) if self._record else np.zeros(0, np.int16)


class DevicePlayback(_Shell):
    """The mixer on a real speaker through a sounddevice OutputStream.

    The callback fills the buffer and notes the buffer's DAC time per output
    frame; started/ended reports are mapped onto the input clock with
    ``clock_map`` (fed by the input side). Without input anchors the output
    stream's own clock (seconds since it opened) stands in.

    Latency: the device's "low" first, "high" after the first underflow.
    Why: the issue wants a flip heard within 20 ms ("low": 11 ms to the DAC on
    the virtual speaker, "high": 41 ms), but a player who plays by ear must not
    hear gaps in the announcer. Measured on the virtual speaker with a second
    core busy (``bench/bench_playback.py``): "low" ran short or dropped sound
    in some runs, "high" delivered nearly every run in full; on a quiet machine
    both were whole. So the stream starts low and, once PortAudio reports an
    output underflow, ``underflow_notice`` reopens it once at
    ``fallback_latency`` (the mixer and its clock carry on; start times come
    from the buffers' DAC times, exact whatever the buffer). Underflows are
    counted in ``underflows`` and told once per burst.
    """

    UNDERFLOW_BURST = 5.0  # s without an underflow that end a burst (one notice per burst)

    def __init__(self, rate: int | None = None, device: int | str | None = None,
                 clock_map: ClockMap | None = None, latency: str | float = "low", blocksize: int = 0,
                 option: str = "--output", fallback_latency: str | float | None = "high") -> None:
        self.device = device
        self.option = option  # the command-line option that picks the device, named in errors
        self.requested_rate = rate
        self.clock_map = clock_map
        self.latency = latency
        self.fallback_latency = fallback_latency  # reopened with this after an underflow (None: never)
        self.blocksize = blocksize
        self._stream: Any = None
        self._dac: collections.deque[tuple[int, float]] = collections.deque(maxlen=256)  # (frame, dac time)
        self._first_dac: float | None = None
        self._lock = threading.Lock()
        self.underflows = 0  # output buffers the device ran dry on (PortAudio's output-underflow flag)
        self._underflows_told = 0
        self._last_underflow: float | None = None
        self.callbacks = 0  # output buffers filled so far: a count that stops moving is a speaker gone
        self.lost = False  # the players were told the speaker is gone, and not yet that it is back
        self._moved_at: tuple[int, float] | None = None  # (callbacks, when that count was first seen)
        self._retry_at = 0.0
        self._pulse_at_open = False  # a PulseAudio server answered when the stream opened
        self.warmed: float | None = None  # seconds warm_up() waited for the stream to run steadily
        super().__init__(Mixer(rate or 48000))

    @property
    def rate(self) -> int:
        return self.mixer.rate

    def open(self) -> "DevicePlayback":
        try:
            import sounddevice as sd
        except OSError as exc:
            raise AudioOutputError(
                f"no audio output: PortAudio is missing ({exc}); install libportaudio2 "
                "(Debian/Ubuntu: apt-get install libportaudio2)"
            ) from exc
        try:
            info = sd.query_devices(self.device, "output")
            rate = int(self.requested_rate or info["default_samplerate"])
            self.mixer = Mixer(rate)
            self._start(sd, rate)
            from .pulse import pactl_json

            self._pulse_at_open = bool(pactl_json(["info"]))  # (5 ms; lets a lost server be waited for quietly)
        except (sd.PortAudioError, ValueError) as exc:
            raise AudioOutputError(
                f"no audio output ({exc}); run 'voicesnap devices' to list outputs and pick one with "
                f"{self.option}, or start a sound server"
            ) from exc
        return self

    def _start(self, sd: Any, rate: int) -> None:
        self._stream = sd.OutputStream(
            device=self.device, samplerate=rate, channels=1, dtype="int16",
            latency=self.latency, blocksize=self.blocksize, callback=self._callback,
        )
        self._stream.start()

    def _reopen_with_fallback(self) -> bool:
        """Reopen the stream once at ``fallback_latency`` (control thread); True if it now runs so."""
        if self._stream is None or self.fallback_latency is None or self.latency == self.fallback_latency:
            return False
        import sounddevice as sd

        self.close()
        self.latency = self.fallback_latency
        try:
            self._start(sd, self.rate)
        except (sd.PortAudioError, ValueError) as exc:
            raise AudioOutputError(f"the speaker could not be reopened with a longer buffer ({exc}); "
                                   f"run 'voicesnap devices' and pick another output with {self.option}") from exc
        return True

    def close(self) -> None:
        if self._stream is not None:
            try:  # abort: stop() waits for the stream's thread, which a dead sound server can leave stuck
                self._stream.abort()
                self._stream.close()
            except Exception:
                pass
            finally:
                self._stream = None

    # The stream is warm once it has played WARM_S of audio at real-time pace (WARM_PACE of it at least)
    # with DAC times that follow its frames (within WARM_DAC) and no underflow. Why: measured through
    # ALSA's pulse plugin on the virtual speaker, a new output stream takes its first few buffers at once
    # and then stalls 0.6-1.9 s; the stall's underflow (a busy machine) reopened it at "high", which
    # stalled 1.9 s again, in the middle of the game's first announcement, and the echo reference of an
    # announcement laid across a stall was 1.9 s early (a CI run of the e2e game). WARM_S: with two cores
    # busy the stall's underflow came 0-0.25 s after it ended (9 instrumented e2e games), and a stream
    # called warm after 0.3 s had the first announcement reopened under it once in four. WARM_LIMIT_S:
    # two such stalls and their WARM_S each, with room to spare.
    WARM_S = 0.5
    WARM_PACE = 0.7
    WARM_DAC = 0.05
    WARM_LIMIT_S = 6.0

    def warm_up(self, limit: float | None = None, clock: Any = None, sleep: Any = None) -> str | None:
        """Wait until the output stream really runs (control thread, before the first announcement):
        ``WARM_S`` of audio played at real-time pace on a steady DAC clock. An underflow meanwhile
        reopens it at ``fallback_latency`` now, while nothing is being said (reopened mid-game, the
        stream stalls again, in an announcement). At most ``limit`` seconds (``WARM_LIMIT_S``); returns
        what to tell the players if it was not steady by then (the game goes on), else None.
        ``warmed`` is the seconds it took."""
        import time

        clock = clock or time.monotonic
        sleep = sleep or time.sleep
        limit = self.WARM_LIMIT_S if limit is None else limit
        began = clock()
        seen: collections.deque[tuple[float, int]] = collections.deque()  # (when, mixer frames by then)
        while self._stream is not None:
            now = clock()
            if self.underflows > self._underflows_told:
                self._underflows_told = self.underflows
                if self._reopen_with_fallback():
                    seen.clear()
                    continue
            seen.append((now, self.mixer.frame))
            while len(seen) > 1 and seen[1][0] <= now - self.WARM_S:
                seen.popleft()
            if self._steady(seen, now):
                self.warmed = now - began
                return None
            if now - began >= limit:
                self.warmed = now - began
                return ("the speaker is slow to start: the first announcements may be late or cut; if this goes "
                        f"on, close other programs or pick another output (voicesnap devices, then {self.option})")
            sleep(0.01)
        return None

    def _steady(self, seen: collections.deque[tuple[float, int]], now: float) -> bool:
        """Over the last WARM_S (``seen``: polls of the mixer's frame count) the stream played at
        real-time pace and its DAC times followed its frames."""
        since, frame = seen[0]
        if now - since < self.WARM_S or self.mixer.frame - frame < self.WARM_PACE * (now - since) * self.rate:
            return False
        anchors = [(f, d) for f, d in list(self._dac) if f >= frame]
        if len(anchors) < 2:
            return False
        (f0, d0), (f1, d1) = anchors[0], anchors[-1]
        return abs((d1 - d0) - (f1 - f0) / self.rate) <= self.WARM_DAC

    LOST_S = 2.0  # s without an output buffer asked for: the speaker is gone (server restarted, unplugged)
    RETRY_S = 2.0  # s between tries to reopen it

    def loss_notice(self, now: float | None = None) -> str | None:
        """Tell the players once when the speaker stops asking for sound, and once when it is back
        (control thread). While it is gone the stream is reopened every RETRY_S: a sound server that
        restarted left the announcer silent for the rest of the game, with nothing said."""
        import time

        if self._stream is None and not self.lost:
            return None  # closed on purpose (or never opened)
        now = time.monotonic() if now is None else now
        count = self.callbacks
        if self._moved_at is None or count != self._moved_at[0]:
            self._moved_at = (count, now)
            if self.lost and count > 0:
                self.lost = False
                return "the speaker is back: the announcer speaks again"
            return None
        if now - self._moved_at[1] < self.LOST_S:
            return None
        told = None
        if not self.lost:
            self.lost = True
            told = (f"{SPEAKER_GONE} (it has asked for no sound for {self.LOST_S:g} s: the sound server stopped, or the "
                    "device was unplugged); the game goes on without speech and it is reopened as soon as it can be")
        if now >= self._retry_at:
            self._retry_at = now + self.RETRY_S
            self._reopen()
        return told

    def _reopen(self) -> None:
        import sounddevice as sd

        from .pulse import pactl_json

        if self._pulse_at_open and not pactl_json(["info"]):
            return  # the server is not back yet: a PortAudio try would only print its own errors
        self.close()
        try:  # (as the microphone is reopened: through ALSA's pulse device, a restarted server is found)
            self._start(sd, self.rate)
        except Exception:  # not back yet: tried again later
            self.close()

    def __enter__(self) -> "DevicePlayback":
        return self.open()

    def __exit__(self, *_: object) -> None:
        self.close()

    def _callback(self, outdata: np.ndarray, frames: int, time_info: Any, status: Any) -> None:
        if status and status.output_underflow:  # flags are an int: no allocation when all is well
            self.underflows += 1
        self.callbacks += 1
        self._dac.append((self.mixer.frame, float(time_info.outputBufferDacTime)))
        self.mixer.fill(outdata)

    def _frame_to_clock(self, frame: int) -> float:
        dac = None
        anchors = list(self._dac)  # snapshot: the callback appends meanwhile
        for f0, d in reversed(anchors):
            if f0 <= frame:
                dac = d + (frame - f0) / self.rate
                break
        if dac is None:  # older than every kept anchor (the echo reference pulls up to 4 s back): extrapolate
            dac = anchors[0][1] - (anchors[0][0] - frame) / self.rate if anchors else 0.0
        if self.clock_map is not None and self.clock_map.ready:
            return self.clock_map.to_clock(dac)
        if self._first_dac is None:
            self._first_dac = anchors[0][1] if anchors else dac
        return dac - self._first_dac

    def underflow_notice(self, now: float | None = None) -> str | None:
        """What to tell the player about new underflows (control thread): a message at the
        first of a burst, None otherwise (nothing new, or the burst is still going on)."""
        new = self.underflows - self._underflows_told
        if new <= 0:
            return None
        import time

        now = time.monotonic() if now is None else now
        self._underflows_told = self.underflows
        reopened = self._reopen_with_fallback()
        quiet = self._last_underflow is None or now - self._last_underflow > self.UNDERFLOW_BURST
        self._last_underflow = now
        # (short: a screen reader reads each notice whole, between the cards)
        if reopened:
            # the remedy is the game's own and needs nothing of the players: not told (on the virtual speaker
            # nearly every game's start had one, and "the speaker's sound broke up" read as a fault); a
            # machine too busy for the longer buffer too gets the notice below at its next underflow
            return None
        if not quiet:
            return None
        return ("the speaker's sound is breaking up: the computer is too busy; close other programs, or try "
                "another output (voicesnap devices, then --output)")

    @property
    def stream_time(self) -> float:
        """PortAudio's time now (the base DAC/ADC times are given in)."""
        return float(self._stream.time) if self._stream is not None else 0.0


def find_onset(recording: np.ndarray, probe: np.ndarray, rate: int, start: int = 0) -> float | None:
    """Seconds (from ``start`` frames) where ``probe`` begins in ``recording``, by
    normalised cross-correlation; None when it is not clearly there (peak < 0.5)."""
    x = np.asarray(recording, dtype=np.float64).reshape(-1)
    p = np.asarray(probe, dtype=np.float64).reshape(-1)
    if len(x) < len(p) or not p.any():
        return None
    n = 1 << int(np.ceil(np.log2(len(x) + len(p))))
    corr = np.fft.irfft(np.fft.rfft(x, n) * np.conj(np.fft.rfft(p, n)), n)[: len(x) - len(p) + 1]
    energy = np.sqrt(np.convolve(x * x, np.ones(len(p)), "valid")) * np.sqrt(np.sum(p * p))
    # floor: in near-silence the FFT's round-off would otherwise score above 1
    energy = np.maximum(energy, 0.05 * float(energy.max()) + 1e-9)
    score = corr / energy
    best = int(np.argmax(score))
    if score[best] < 0.5:
        return None
    return (start + best) / rate


def anchor_from_input(clock_map: ClockMap, stream: Any, position: int, rate: int,
                      delivered: int | None = None) -> None:
    """One polled anchor from an open input stream and its frame position.

    ``position`` frames have arrived; the last of them was captured about one
    input latency before ``stream.time``. Polled anchors lag by up to a block;
    ClockMap's envelope removes that. No anchor until this stream has delivered
    frames (``delivered``: its own count, when ``position`` carries an offset
    from an earlier stream): before its first block, ``position`` stands for no
    captured moment. A stream can take 0.5-2 s to start (a PulseAudio monitor
    did), and such a poll is *ahead* of the truth by that wait, which the
    envelope, keeping the highest offset, would hold on to.
    """
    if (position if delivered is None else delivered) <= 0:
        return
    latency = stream.latency if isinstance(stream.latency, float) else stream.latency[0]
    clock_map.observe(float(stream.time) - float(latency), position / rate)
