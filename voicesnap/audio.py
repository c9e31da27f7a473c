"""Audio on the one clock: chunks, sources, resampling and the recording tap.

Every chunk carries its rate, sample width, channel count and the index of its
first frame on the input stream. That index is the game's clock: a time in
seconds anywhere in voicesnap is ``frame_index / rate`` on this stream.

Sources (a WAV file, an in-memory array, the live microphone) all yield
``AudioChunk`` records in stream order with consecutive ``start`` indices, so
everything downstream (spotters, the referee, replays) is indifferent to where
the audio came from. Sound hardware lives only in ``MicSource``; sounddevice is
imported there, lazily, so the rules engine and file replays never need it.
"""

from __future__ import annotations

import os
import queue
import struct
import tempfile
import threading
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Iterable, Iterator

import numpy as np

from .errors import UserError
from .text import counted
from .events import event
from .files import AtomicSoundFile

__all__ = [
    "AudioChunk",
    "AudioFileError",
    "AudioDeviceError",
    "read_wav",
    "read_pcm",
    "write_wav",
    "ArraySource",
    "FileSource",
    "MicSource",
    "Resampler",
    "RecordingTap",
    "tap",
    "to_mono",
    "SUPPORTED_RATES",
]

# Rates a file or device may have; anything else is almost surely a broken header.
MIN_RATE, MAX_RATE = 8000, 192000
SUPPORTED_RATES = (8000, 11025, 16000, 22050, 32000, 44100, 48000, 88200, 96000)


@event("audio-chunk")
@dataclass(frozen=True)
class AudioChunk:
    """Frames as int16, shape (frames, channels), starting at ``start`` on the stream.

    ``echo``: what the echo canceller removed from these frames (the game's own speech, same
    shape and scale), so that a spotter searching for where a call starts can tell the rise of
    a player's voice from what is left of the announcer's (``onsets.Envelope``). None where no
    canceller ran. It is derived from the stream and the reference, so the plain-data form
    leaves it out: a replay recomputes it.
    """

    rate: int
    width: int
    channels: int
    start: int  # first frame's index on the stream: the clock
    samples: np.ndarray
    echo: np.ndarray | None = None

    @property
    def timestamp(self) -> float:
        """Start of the chunk in seconds on the audio clock."""
        return self.start / self.rate

    @property
    def frames(self) -> int:
        return int(self.samples.shape[0])

    @property
    def end(self) -> int:
        return self.start + self.frames

    def between(self, first: int, end: int) -> "AudioChunk":
        """The frames from ``first`` to ``end`` on the stream's clock, with what the canceller removed from them.

        One place cuts both, so a cut chunk never carries another stretch's echo.
        """
        a, b = max(first, self.start) - self.start, min(end, self.end) - self.start
        b = max(a, b)
        return replace(self, start=self.start + a, samples=self.samples[a:b],
                       echo=None if self.echo is None else self.echo[a:b])

    def to_data(self) -> dict:
        return {
            "rate": self.rate,
            "width": self.width,
            "channels": self.channels,
            "start": self.start,
            "samples": self.samples.astype("<i2").tobytes().hex(),
        }

    @classmethod
    def from_data(cls, data: dict) -> "AudioChunk":
        raw = np.frombuffer(bytes.fromhex(data["samples"]), dtype="<i2")
        channels = int(data["channels"])
        return cls(
            rate=int(data["rate"]),
            width=int(data["width"]),
            channels=channels,
            start=int(data["start"]),
            samples=raw.reshape(-1, channels).astype(np.int16),
        )

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, AudioChunk):
            return NotImplemented
        return (self.rate, self.width, self.channels, self.start) == (
            other.rate, other.width, other.channels, other.start,
        ) and np.array_equal(self.samples, other.samples)

    __hash__ = None  # type: ignore[assignment]


class AudioFileError(UserError):
    """An audio file that cannot be used as it is; the message says why and what to do. ``reason``, where
    the reader gives one, is what is wrong with the file alone (no path, no advice): for a caller whose own
    advice differs, such as replay, which cannot ask for a game's recording to be made again."""

    def __init__(self, message: str, reason: str = "") -> None:
        super().__init__(message)
        self.reason = reason


class AudioDeviceError(UserError):
    """No usable audio device; the message says how to get one."""


# --------------------------------------------------------------------------- files

_CONVERT_HINT = "convert it with: sox IN.wav -r 16000 -c 1 -b 16 OUT.wav"


def _check_riff(path: Path, raw_head: bytes, size: int) -> int:
    """Catch truncated WAVs, which libsndfile silently reads short.

    A WAV's data chunk declares its length; if the file ends before that, the
    recording was cut off (a crash, a partial copy) and judging it would be
    judging different audio than was heard. Returns how many bytes follow a data
    chunk whose header says 0 (a recorder stopped before it wrote the length), else 0.
    """
    if raw_head[:4] not in (b"RIFF", b"RIFX") or raw_head[8:12] != b"WAVE":
        return 0
    big = raw_head[:4] == b"RIFX"
    fmt = ">I" if big else "<I"
    with open(path, "rb") as handle:
        handle.seek(12)
        pos = 12
        while True:
            header = handle.read(8)
            if len(header) < 8:
                reason = f"truncated: no audio data chunk before the end of the file at byte {size}"
                raise AudioFileError(
                    f"{path}: WAV file is truncated (no audio data chunk before the end "
                    f"of the file at byte {size}); re-record or re-export it", reason
                )
            chunk_id, chunk_len = header[:4], struct.unpack(fmt, header[4:])[0]
            if chunk_id == b"data":
                available = size - (pos + 8)
                # 0 and 0xFFFFFFFF mean "length unknown" (a stream-written WAV): accept.
                if chunk_len not in (0, 0xFFFFFFFF) and chunk_len > available:
                    raise AudioFileError(
                        f"{path}: WAV file is truncated: its header promises {chunk_len} bytes "
                        f"of audio but only {available} are there; re-record or re-export it",
                        f"truncated: its header promises {chunk_len} bytes of audio but only {available} are there",
                    )
                return available if chunk_len == 0 else 0
            pos += 8 + chunk_len + (chunk_len & 1)
            if pos > size:
                # the chunk's name as letters ("fmt"): its bytes' repr, b'fmt ', was read aloud as "b quote fmt"
                name = chunk_id.decode("latin-1").strip()
                where = f"its {name} header chunk" if name.isascii() and name.isprintable() and name else "a header chunk"
                raise AudioFileError(
                    f"{path}: WAV file is truncated inside {where}; re-record or re-export it",
                    f"truncated inside {where}"
                )
            handle.seek(pos)


_FLOAT_SUBTYPES = frozenset({"FLOAT", "DOUBLE"})


def read_wav(
    path: str | os.PathLike[str],
    *,
    expect_rate: int | None = None,
    expect_channels: int | None = None,
) -> tuple[np.ndarray, int]:
    """Read a WAV (or any libsndfile format) as int16 frames ``(frames, channels)`` and its rate.

    Raises ``AudioFileError`` with the fix in the message for a missing, empty,
    unreadable, truncated or implausible file, or one whose rate/channels differ
    from ``expect_rate``/``expect_channels`` when the caller needs exact ones.
    """
    import soundfile as sf

    p = Path(path)
    if not p.exists():
        raise AudioFileError(f"{p}: no such audio file; check the path")
    if p.is_dir():
        raise AudioFileError(f"{p}: is a folder, not an audio file; give the path of a .wav file")
    size = p.stat().st_size
    if size == 0:
        raise AudioFileError(f"{p}: file is empty (0 bytes); re-record or re-export it", "empty: 0 bytes")
    with open(p, "rb") as handle:
        head = handle.read(12)
    unfinished = _check_riff(p, head, size)
    try:
        info = sf.info(str(p))
        if info.subtype in _FLOAT_SUBTYPES:
            # libsndfile hands floating-point samples to an int16 read unscaled (1.0 -> 1, not 32767), so
            # an editor's 32-bit float export read as int16 is silence: scale it here, clipping what lies
            # past full scale as a 16-bit file would have
            wide, rate = sf.read(str(p), dtype="float64", always_2d=True)
            data = np.clip(np.round(wide * 32768.0), -32768, 32767).astype(np.int16)
        else:
            data, rate = sf.read(str(p), dtype="int16", always_2d=True)
    except TypeError as exc:  # (libsndfile takes a .raw name for headerless audio, and wants its rate: a traceback)
        raise AudioFileError(
            f"{p}: headerless (raw) audio, which does not say its sample rate, format or channels; give a WAV, or "
            "convert it with what it was recorded as: sox -t raw -r 16000 -e signed -b 16 -c 1 IN.raw OUT.wav",
            "headerless (raw) audio, which does not say its sample rate, format or channels",
        ) from exc
    except (sf.SoundFileError, RuntimeError) as exc:
        # libsndfile's "Error opening '<the path>': Format not recognised." named the path a second time in
        # the one line, a long stretch for a screen reader: its reason alone
        why = str(exc).rsplit("': ", 1)[1].rstrip(".") if str(exc).startswith("Error opening '") else str(exc)
        raise AudioFileError(
            f"{p}: not a readable audio file ({why}); give a PCM WAV, or {_CONVERT_HINT}",
            f"not a readable audio file: {why}",
        ) from exc
    if not MIN_RATE <= rate <= MAX_RATE:
        raise AudioFileError(
            f"{p}: sample rate {rate} Hz is outside {MIN_RATE}-{MAX_RATE} Hz, so the header is "
            f"probably wrong; {_CONVERT_HINT}",
            f"its header says {rate} Hz, outside {MIN_RATE}-{MAX_RATE} Hz",
        )
    if data.shape[0] == 0 and unfinished:  # (libsndfile reads such a file as empty)
        raise AudioFileError(
            f"{p}: its header says it holds no audio, yet {unfinished} bytes follow it: the recorder stopped "
            "before it finished the file; repair it with: sox --ignore-length IN.wav OUT.wav",
            f"unfinished: its header says it holds no audio, yet {unfinished} bytes follow it")
    if data.shape[0] == 0:
        raise AudioFileError(f"{p}: contains no audio frames ({info.format}); re-record or re-export it",
                             "it holds no audio frames")
    if expect_rate is not None and rate != expect_rate:
        raise AudioFileError(f"{p}: sample rate is {rate} Hz, {expect_rate} Hz is needed; {_CONVERT_HINT}")
    if expect_channels is not None and data.shape[1] != expect_channels:
        raise AudioFileError(
            f"{p}: has {counted(data.shape[1], 'channel')}, {expect_channels} needed; {_CONVERT_HINT}"
        )
    return np.ascontiguousarray(data), int(rate)


def narrowband_note(path: str | os.PathLike[str], rate: int) -> str | None:
    """What a recording under 16 kHz loses (None at 16 kHz or more): it is resampled up and heard, but it
    holds nothing where the "s" of "snap" is (3.5-8 kHz), which onsets, the hiss check and the voices use."""
    if rate >= 16000:
        return None
    return (f"{path}: recorded at {rate} Hz, so it holds nothing over {rate // 2} Hz, where the 's' of a call "
            "is: calls are placed and told apart from other words less well, and voices too (record at 16 kHz "
            "or more)")


def write_wav(path: str | os.PathLike[str], samples: np.ndarray, rate: int) -> Path:
    """Write int16 frames as a 16-bit PCM WAV, atomically (old file or new, never half)."""
    import soundfile as sf

    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp.wav", dir=target.parent)
    os.close(fd)
    try:
        sf.write(tmp, np.asarray(samples, dtype=np.int16), rate, subtype="PCM_16", format="WAV")
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return target


# ------------------------------------------------------------------------- sources


class ArraySource:
    """In-memory frames as a source: the same chunks a file or mic would give."""

    def __init__(
        self,
        samples: np.ndarray,
        rate: int,
        *,
        chunk_frames: int | None = None,
        realtime: bool = False,
        start: int = 0,
    ) -> None:
        arr = np.asarray(samples)
        if arr.ndim == 1:
            arr = arr[:, None]
        if arr.dtype != np.int16:
            raise TypeError(f"ArraySource needs int16 frames, got {arr.dtype}")
        self.samples = np.ascontiguousarray(arr)
        self.rate = int(rate)
        self.channels = int(arr.shape[1])
        self.chunk_frames = int(chunk_frames or max(1, self.rate // 50))  # 20 ms default
        if self.chunk_frames <= 0:
            raise ValueError("chunk_frames must be positive")
        self.realtime = realtime
        self.start = int(start)

    @property
    def frames(self) -> int:
        return int(self.samples.shape[0])

    @property
    def duration(self) -> float:
        return self.frames / self.rate

    def __iter__(self) -> Iterator[AudioChunk]:
        began = time.monotonic()
        n = self.frames
        for offset in range(0, n, self.chunk_frames):
            block = self.samples[offset : offset + self.chunk_frames]
            if self.realtime:
                # Pace on the audio clock: chunk k is released once its last frame "happened".
                due = began + (offset + block.shape[0]) / self.rate
                delay = due - time.monotonic()
                if delay > 0:
                    time.sleep(delay)
            yield AudioChunk(self.rate, 2, self.channels, self.start + offset, block)


def read_pcm(path: str | os.PathLike[str], rate: int, channels: int = 1) -> np.ndarray:
    """Headerless little-endian 16-bit PCM (e.g. ``parec --raw`` output) as (frames, channels)."""
    p = Path(path)
    if not p.is_file():
        raise AudioFileError(f"{p}: no such PCM file; check the path")
    if not MIN_RATE <= rate <= MAX_RATE:
        raise AudioFileError(f"{p}: a PCM rate of {rate} Hz is outside {MIN_RATE}-{MAX_RATE} Hz")
    raw = p.read_bytes()
    frame_bytes = 2 * channels
    if not raw:
        raise AudioFileError(f"{p}: file is empty (0 bytes); re-record it")
    if len(raw) % frame_bytes:
        raise AudioFileError(
            f"{p}: {len(raw)} bytes is not a whole number of {channels}-channel 16-bit frames: "
            "truncated, or not 16-bit PCM with that channel count"
        )
    return np.frombuffer(raw, dtype="<i2").reshape(-1, channels).astype(np.int16)


class FileSource(ArraySource):
    """A WAV (or headerless PCM, given ``pcm_rate``) file as a source.

    As fast as possible, or paced in real time with ``realtime=True``.
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        chunk_frames: int | None = None,
        realtime: bool = False,
        pcm_rate: int | None = None,
        pcm_channels: int = 1,
    ) -> None:
        if pcm_rate is not None:
            samples, rate = read_pcm(path, pcm_rate, pcm_channels), pcm_rate
        else:
            samples, rate = read_wav(path)
        super().__init__(samples, rate, chunk_frames=chunk_frames, realtime=realtime)
        self.path = Path(path)


# ---------------------------------------------------------------------- resampling


def to_mono(samples: np.ndarray, channel: int | None = None) -> np.ndarray:
    """One channel (``channel``) or the mean of all, as int16 (frames, 1)."""
    if samples.ndim == 1:
        return samples[:, None]
    if samples.shape[1] == 1:
        return samples
    if channel is not None:
        if not 0 <= channel < samples.shape[1]:
            raise ValueError(f"channel {channel} does not exist: the input has {samples.shape[1]}")
        return np.ascontiguousarray(samples[:, channel : channel + 1])
    mixed = samples.astype(np.int32).sum(axis=1) // samples.shape[1]
    return mixed.astype(np.int16)[:, None]


class Resampler:
    """Streaming downmix + resample of chunks to what a recogniser needs (e.g. 16 kHz mono).

    Output chunks are on the output rate's clock, which measures the same
    seconds as the input's: soxr compensates its own filter delay, so output
    frame k is input time k / out_rate (within a fraction of a sample). Output
    chunk sizes vary a little while the filter fills; ``flush`` drains it.
    """

    def __init__(self, rate: int = 16000, *, channel: int | None = None, mono: bool = True) -> None:
        self.rate = int(rate)
        self.channel = channel
        self.mono = mono
        self._stream: Any = None
        self._in_rate: int | None = None
        self._in_channels: int | None = None
        self._out_start: int | None = None
        self._out_count = 0

    def _prepare(self, samples: np.ndarray) -> np.ndarray:
        if self.mono or self.channel is not None:
            return to_mono(samples, self.channel)
        return samples

    def _echo(self, chunk: AudioChunk) -> np.ndarray | None:
        """The chunk's ``echo`` taken down to the output's channels; only at the same rate (a
        canceller's output is already at the spotters' rate), else None."""
        if chunk.echo is None or chunk.rate != self.rate:
            return None
        return self._prepare(chunk.echo)

    def accept(self, chunk: AudioChunk) -> AudioChunk | None:
        """Resampled frames for this chunk (None while the filter is still filling)."""
        data = self._prepare(chunk.samples)
        if self._in_rate is None:
            self._in_rate = chunk.rate
            self._in_channels = data.shape[1]
            # Map the input stream's start onto the output clock (same seconds).
            self._out_start = round(chunk.start * self.rate / chunk.rate)
            if chunk.rate != self.rate:
                import soxr

                self._stream = soxr.ResampleStream(
                    chunk.rate, self.rate, data.shape[1], dtype="int16", quality="HQ"
                )
        elif chunk.rate != self._in_rate or data.shape[1] != self._in_channels:
            raise ValueError("input rate or channel count changed mid-stream")
        if self._stream is None:
            return self._emit(data, self._echo(chunk))
        out = self._stream.resample_chunk(np.ascontiguousarray(data), last=False)
        if out.ndim == 1:
            out = out[:, None]
        return self._emit(out)

    def flush(self) -> AudioChunk | None:
        """The frames still held in the filter at the end of the stream."""
        if self._stream is None:
            return None
        out = self._stream.resample_chunk(
            np.zeros((0, self._in_channels or 1), dtype=np.int16), last=True
        )
        if out.ndim == 1:
            out = out[:, None]
        return self._emit(out)

    def _emit(self, out: np.ndarray, echo: np.ndarray | None = None) -> AudioChunk | None:
        if out.shape[0] == 0:
            return None
        assert self._out_start is not None
        chunk = AudioChunk(self.rate, 2, int(out.shape[1]), self._out_start + self._out_count, out, echo)
        self._out_count += out.shape[0]
        return chunk

    def stream(self, chunks: Iterable[AudioChunk]) -> Iterator[AudioChunk]:
        """Resample a whole source lazily."""
        for chunk in chunks:
            out = self.accept(chunk)
            if out is not None:
                yield out
        last = self.flush()
        if last is not None:
            yield last


# -------------------------------------------------------------------- recording tap


class RecordingTap:
    """Writes the exact frames heard to a WAV, so a game can be re-judged from its audio.

    Sample index in the file equals the frame's index on the clock (minus the
    first chunk's start): gaps, e.g. frames the microphone dropped, are filled
    with silence so times stay true. The file appears under its name only when
    closed (written to a temporary name, then renamed).
    """

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        self._file: AtomicSoundFile | None = None
        self._next: int | None = None
        self.origin: int | None = None  # clock index of the file's first frame
        self.rate: int | None = None  # the recording's rate (known with the first chunk)
        self.frames_written = 0
        self.gap_frames = 0

    def write(self, chunk: AudioChunk) -> None:
        if self._file is None:
            self._file = AtomicSoundFile(self.path, chunk.rate, chunk.channels, "WAV")
            self._next = self.origin = chunk.start
            self._rate, self._channels = chunk.rate, chunk.channels
            self.rate = chunk.rate
        if (chunk.rate, chunk.channels) != (self._rate, self._channels):
            raise ValueError("a recording tap needs one rate and channel count throughout")
        assert self._next is not None
        if chunk.start < self._next:
            raise ValueError(f"chunk at {chunk.start} overlaps frames already written (next {self._next})")
        if chunk.start > self._next:
            gap = chunk.start - self._next
            self._file.write(np.zeros((gap, self._channels), dtype=np.int16))
            self.gap_frames += gap
            self.frames_written += gap
        self._file.write(chunk.samples)
        self.frames_written += chunk.frames
        self._next = chunk.end

    def close(self) -> Path | None:
        """Finish the file and move it into place; returns its path (None if nothing was heard)."""
        if self._file is None:
            return None
        path, self._file = self._file.finish(), None
        return path

    def discard(self) -> None:
        if self._file is not None:
            self._file.discard()
            self._file = None

    def __enter__(self) -> "RecordingTap":
        return self

    def __exit__(self, *_: object) -> None:
        # Even on an error, keep what was heard: it is the evidence.
        self.close()


def tap(chunks: Iterable[AudioChunk], recorder: RecordingTap) -> Iterator[AudioChunk]:
    """Pass chunks through unchanged while recording each one."""
    for chunk in chunks:
        recorder.write(chunk)
        yield chunk


# ---------------------------------------------------------------------- microphone


# ALSA's handler, kept referenced: the library calls it for as long as the process runs.
_ALSA_HANDLER: Any = None


def quiet_alsa() -> bool:
    """Keep ALSA's own messages ("ALSA lib pcm.c:8570:(snd_pcm_recover) underrun occurred") off the
    terminal, where they break the table's display and mean nothing to a player: what they stand
    for is said in words (speaker underflows, a lost microphone). Only for the ``voicesnap`` command
    itself, and not with VOICESNAP_ALSA_MESSAGES=1 (a developer reading them). True once in place."""
    global _ALSA_HANDLER
    if _ALSA_HANDLER is not None:
        return True
    if os.environ.get("VOICESNAP_ALSA_MESSAGES") == "1":
        return False
    import ctypes
    import ctypes.util

    try:
        lib = ctypes.CDLL(ctypes.util.find_library("asound") or "libasound.so.2")
        setter = lib.snd_lib_error_set_handler
    except (OSError, AttributeError):  # no ALSA (not Linux, or not installed): nothing prints
        return False
    # void handler(const char *file, int line, const char *function, int err, const char *fmt, ...):
    # the variadic tail is never read, so the fixed arguments are all ctypes needs to know.
    prototype = ctypes.CFUNCTYPE(None, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_int,
                                 ctypes.c_char_p)
    _ALSA_HANDLER = prototype(lambda file, line, function, err, fmt: None)
    setter(_ALSA_HANDLER)
    return True


class MicSource:
    """The live microphone through PortAudio, on the stream's own frame clock.

    The PortAudio callback only copies frames into a preallocated ring of
    blocks and hands the slot number to a queue: it never blocks and allocates
    nothing but that small tuple. When the reader falls behind and the ring is
    full, the block is dropped, *counted* (``dropped_frames``) and the clock
    still advances, so later chunks keep their true positions and the gap is
    visible (and a recording tap fills it with silence). PortAudio's own input
    overflows are counted in ``overflows``.

    Use as a context manager and iterate; ``stats()`` reports the counts.
    """

    def __init__(
        self,
        *,
        device: int | str | None = None,
        rate: int = 16000,
        channels: int = 1,
        block_frames: int = 320,
        ring_blocks: int = 512,
        latency: str | float = "low",
        option: str = "--device",
        plan: Any = None,
    ) -> None:
        self.device = device
        self.option = option  # the command-line option that picks the device, named in errors
        self.rate = int(rate)
        self.channels = int(channels)
        self.block_frames = int(block_frames)
        self.ring_blocks = int(ring_blocks)
        self.latency = latency
        # a sound-server source opened as ``pulse.channel_plan`` says: ``plan.open`` channels, of which
        # column ``plan.order[k]`` is channel k (picked on the reader's side, never in the callback)
        self._opened = int(plan.open) if plan is not None else self.channels
        self._order = list(plan.order) if plan is not None else None
        if self._order is not None and len(self._order) != self.channels:
            raise ValueError(f"a plan for {len(self._order)} channels, {self.channels} asked for")
        self._ring = np.zeros((self.ring_blocks, self.block_frames, self._opened), dtype=np.int16)
        self._queue: queue.Queue[tuple[int, int, int]] = queue.Queue(maxsize=self.ring_blocks - 2)  # one slot spare: the one being read
        self._slot = 0
        self._clock = 0  # frames delivered by PortAudio so far: the stream clock
        self.overflows = 0
        self.dropped_frames = 0
        self.dropped_blocks = 0
        self._stream: Any = None
        self._closed = threading.Event()

    # PortAudio thread: copy, enqueue, never wait.
    def _callback(self, indata: np.ndarray, frames: int, time_info: Any, status: Any) -> None:
        if status and status.input_overflow:
            self.overflows += 1
        start = self._clock
        self._clock += frames
        if frames > self.block_frames:  # cannot happen with a fixed blocksize; be safe
            frames = self.block_frames
        slot = self._slot
        self._ring[slot, :frames] = indata[:frames]
        try:
            self._queue.put_nowait((slot, frames, start))
        except queue.Full:
            self.dropped_blocks += 1
            self.dropped_frames += frames
            return
        self._slot = (slot + 1) % self.ring_blocks

    def open(self) -> "MicSource":
        try:
            import sounddevice as sd
        except OSError as exc:  # PortAudio library missing
            raise AudioDeviceError(
                f"PortAudio is not installed ({exc}); on Debian/Ubuntu: apt-get install libportaudio2"
            ) from exc
        try:
            sd.check_input_settings(device=self.device, channels=self._opened, dtype="int16", samplerate=self.rate)
            self._stream = sd.InputStream(
                device=self.device,
                channels=self._opened,
                samplerate=self.rate,
                dtype="int16",
                blocksize=self.block_frames,
                latency=self.latency,
                callback=self._callback,
            )
            self._stream.start()
        except (sd.PortAudioError, ValueError) as exc:
            raise AudioDeviceError(
                f"cannot open the microphone ({exc}); run 'voicesnap devices' to list inputs and "
                f"pick one with {self.option}, or check that a sound server/microphone is available"
            ) from exc
        return self

    def close(self) -> None:
        self._closed.set()
        if self._stream is not None:
            try:  # abort: stop() waits for the stream's thread, which a dead sound server can leave stuck
                self._stream.abort()
                self._stream.close()
            finally:
                self._stream = None

    def __enter__(self) -> "MicSource":
        return self.open()

    def __exit__(self, *_: object) -> None:
        self.close()

    def read(self, timeout: float | None = None) -> AudioChunk | None:
        """The next chunk (a copy), or None on timeout."""
        try:
            slot, frames, start = self._queue.get(timeout=timeout)
        except queue.Empty:
            return None
        block = self._ring[slot, :frames].copy() if self._order is None else self._ring[slot, :frames][:, self._order]
        return AudioChunk(self.rate, 2, self.channels, start, block)

    def __iter__(self) -> Iterator[AudioChunk]:
        while not self._closed.is_set():
            chunk = self.read(timeout=0.5)
            if chunk is not None:
                yield chunk

    @property
    def position(self) -> int:
        """Frames delivered by the device so far (the clock's "now")."""
        return self._clock

    def stats(self) -> dict[str, int]:
        return {
            "frames": self._clock,
            "overflows": self.overflows,
            "dropped_frames": self.dropped_frames,
            "dropped_blocks": self.dropped_blocks,
        }
