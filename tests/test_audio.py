"""Audio sources on one clock, resampling, the recording tap and bad-file errors."""

from __future__ import annotations

import json
import time
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf

from voicesnap.audio import (
    ArraySource,
    AudioChunk,
    AudioFileError,
    FileSource,
    RecordingTap,
    Resampler,
    read_wav,
    tap,
    to_mono,
    write_wav,
)
from voicesnap.errors import UserError

CORPUS = Path(__file__).parent / "fixtures" / "audio" / "corpus"


def _clicks(rate: int, seconds: float, at: list[float], channels: int = 1) -> np.ndarray:
    """Silence with single-sample clicks at the given times (per channel offsets for stereo)."""
    x = np.zeros((int(rate * seconds), channels), dtype=np.int16)
    for c in range(channels):
        for t in at:
            x[int(round((t + 0.1 * c) * rate)), c] = 20000
    return x


def test_file_source_chunks_are_consecutive_on_the_clock(tmp_path: Path) -> None:
    wav = CORPUS / "clean_alice.wav"
    meta = json.loads(wav.with_suffix(".json").read_text())
    chunks = list(FileSource(wav, chunk_frames=333))
    assert chunks[0].start == 0 and chunks[0].rate == 16000 and chunks[0].channels == 1
    assert all(a.end == b.start for a, b in zip(chunks, chunks[1:]))
    assert all(c.frames == 333 for c in chunks[:-1]) and 0 < chunks[-1].frames <= 333
    assert chunks[-1].end == meta["frames"]
    assert chunks[10].timestamp == pytest.approx(10 * 333 / 16000)
    data, _ = read_wav(wav)
    assert np.array_equal(np.concatenate([c.samples for c in chunks]), data)


def test_realtime_source_is_paced_by_the_audio_clock() -> None:
    # Lower bound only: a real-time source must not run ahead of its audio.
    src = ArraySource(np.zeros(4800, dtype=np.int16), 16000, chunk_frames=800, realtime=True)
    began = time.monotonic()
    frames = sum(c.frames for c in src)
    assert frames == 4800
    assert time.monotonic() - began >= 0.27


def test_chunks_round_trip_through_events() -> None:
    from voicesnap import events

    chunk = next(iter(ArraySource(_clicks(16000, 0.3, [0.05], channels=2), 16000)))
    assert events.loads(events.dumps(chunk)) == chunk


@pytest.mark.parametrize("rate", [8000, 22050, 44100, 48000])
def test_resampler_keeps_time_and_content(rate: int) -> None:
    seconds = 1.5
    t = np.arange(int(rate * seconds)) / rate
    tone = (8000 * np.sin(2 * np.pi * 440 * t)).astype(np.int16)
    x = tone[:, None].copy()
    x[int(0.75 * rate), 0] = 32000  # a click marks a known instant
    out = list(Resampler(16000).stream(ArraySource(x, rate, chunk_frames=rate // 50)))
    assert all(c.rate == 16000 and c.channels == 1 for c in out)
    assert all(a.end == b.start for a, b in zip(out, out[1:]))
    y = np.concatenate([c.samples[:, 0] for c in out]).astype(np.float64)
    assert abs(len(y) - int(16000 * seconds)) <= 1
    # The tone keeps its pitch (no speed change) ...
    spectrum = np.abs(np.fft.rfft(y[:16000] * np.hanning(16000)))
    assert abs(np.argmax(spectrum) - 440) <= 1
    # ... and the click stays at its time (soxr compensates its filter delay).
    residual = y - np.interp(np.arange(len(y)) / 16000, t, tone.astype(np.float64))
    assert abs(int(np.argmax(np.abs(residual))) - int(0.75 * 16000)) <= 2


def test_resampler_downmixes_or_picks_a_channel() -> None:
    rate = 44100
    x = np.zeros((rate, 2), dtype=np.int16)
    x[:, 0] = 10000  # left: DC; right: silence
    mixed = np.concatenate([c.samples for c in Resampler(16000).stream(ArraySource(x, rate))])
    left = np.concatenate([c.samples for c in Resampler(16000, channel=0).stream(ArraySource(x, rate))])
    right = np.concatenate([c.samples for c in Resampler(16000, channel=1).stream(ArraySource(x, rate))])
    mid = slice(2000, 14000)
    assert np.allclose(mixed[mid], 5000, atol=30)
    assert np.allclose(left[mid], 10000, atol=30)
    assert np.abs(right).max() <= 2  # silence (soxr dithers its int16 output by 1 LSB)
    with pytest.raises(ValueError, match="channel 2"):
        to_mono(x, 2)


def test_resampler_at_16k_passes_frames_through_exactly() -> None:
    x = (np.random.default_rng(1).standard_normal((16000, 1)) * 3000).astype(np.int16)
    out = list(Resampler(16000).stream(ArraySource(x, 16000, chunk_frames=320, start=480)))
    assert out[0].start == 480
    assert np.array_equal(np.concatenate([c.samples for c in out]), x)


def test_recording_tap_is_sample_exact_and_fills_gaps(tmp_path: Path) -> None:
    x = (np.random.default_rng(2).standard_normal((24000, 2)) * 4000).astype(np.int16)
    chunks = list(ArraySource(x, 48000, chunk_frames=1000, start=5000))
    dropped = chunks.pop(7)  # a block the microphone lost
    with RecordingTap(tmp_path / "game.wav") as rec:
        passed = list(tap(chunks, rec))
        assert not (tmp_path / "game.wav").exists()  # appears only when complete
    assert passed == chunks
    assert rec.origin == 5000 and rec.gap_frames == dropped.frames
    heard, rate = read_wav(tmp_path / "game.wav")
    assert rate == 48000 and heard.shape == x.shape
    expected = x.copy()
    expected[dropped.start - 5000 : dropped.end - 5000] = 0  # silence where frames were lost
    assert np.array_equal(heard, expected)


def test_recording_tap_refuses_overlapping_chunks(tmp_path: Path) -> None:
    rec = RecordingTap(tmp_path / "x.wav")
    rec.write(AudioChunk(16000, 2, 1, 0, np.zeros((100, 1), dtype=np.int16)))
    with pytest.raises(ValueError, match="overlaps"):
        rec.write(AudioChunk(16000, 2, 1, 50, np.zeros((100, 1), dtype=np.int16)))
    rec.discard()
    assert list(tmp_path.iterdir()) == []


# ------------------------------------------------------------------ bad files


def _good(tmp_path: Path, rate: int = 16000, channels: int = 1, seconds: float = 0.5) -> Path:
    x = (np.random.default_rng(3).standard_normal((int(rate * seconds), channels)) * 2000).astype(np.int16)
    return write_wav(tmp_path / f"good_{rate}_{channels}.wav", x, rate)


def test_read_wav_reads_what_was_written(tmp_path: Path) -> None:
    path = _good(tmp_path, 22050, 2)
    data, rate = read_wav(path)
    assert rate == 22050 and data.shape == (11025, 2) and data.dtype == np.int16
    assert np.array_equal(data, sf.read(path, dtype="int16", always_2d=True)[0])


@pytest.mark.parametrize("subtype", ["FLOAT", "DOUBLE"])
def test_a_floating_point_wav_is_read_at_its_level_not_as_silence(tmp_path: Path, subtype: str) -> None:
    """An audio editor's 32-bit float export: libsndfile gives an int16 read its samples unscaled."""
    pcm, rate = read_wav(CORPUS / "clean_alice.wav")
    path = tmp_path / "float.wav"
    sf.write(path, pcm.astype(np.float64) / 32768.0, rate, subtype=subtype)
    data, got_rate = read_wav(path)
    assert got_rate == rate and data.dtype == np.int16
    assert np.array_equal(data, pcm)
    sf.write(path, np.array([[1.5], [-1.5], [0.5]]), rate, subtype=subtype)  # past full scale: clipped
    assert read_wav(path)[0][:, 0].tolist() == [32767, -32768, 16384]


def _put(path: Path, data: bytes) -> Path:
    path.write_bytes(data)
    return path


@pytest.mark.parametrize(
    "make, message",
    [
        (lambda d: d / "missing.wav", "no such audio file"),
        (lambda d: _put(d / "empty.wav", b""), "empty"),
        (lambda d: _put(d / "text.wav", b"hello, not audio at all"), "not a readable audio file"),
        (lambda d: d, "is a folder"),
    ],
    ids=["missing", "empty", "not-audio", "folder"],
)
def test_read_wav_bad_files_give_clear_errors(tmp_path: Path, make, message: str) -> None:
    with pytest.raises(AudioFileError, match=message) as info:
        read_wav(make(tmp_path))
    assert isinstance(info.value, UserError)


def test_an_unreadable_file_is_named_once_in_its_one_line(tmp_path: Path) -> None:
    """libsndfile's own words ("Error opening '<path>': ...") named the path twice, read out twice."""
    bad = _put(tmp_path / "notes.wav", b"hello, not audio at all")
    with pytest.raises(AudioFileError) as info:
        read_wav(bad)
    assert str(info.value).count(str(bad)) == 1, info.value
    assert str(info.value).startswith(f"{bad}: not a readable audio file (Format not recognised); "), info.value


def test_read_wav_truncated_file(tmp_path: Path) -> None:
    raw = _good(tmp_path).read_bytes()
    cut = tmp_path / "cut.wav"
    cut.write_bytes(raw[: len(raw) // 2])
    with pytest.raises(AudioFileError, match="truncated: its header promises 16000 bytes of audio but only") as info:
        read_wav(cut)
    # the advice stays for every command but replay, which words its own (a game cannot be recorded again)
    assert str(info.value).endswith("; re-record or re-export it"), info.value
    assert info.value.reason.startswith("truncated: its header promises 16000 bytes") and "re-" not in info.value.reason
    header_only = tmp_path / "header.wav"
    header_only.write_bytes(raw[:20])
    with pytest.raises(AudioFileError, match="truncated") as info:
        read_wav(header_only)
    # the chunk by its name, not its bytes' repr ("inside its b'fmt ' header chunk")
    assert info.value.reason == "truncated inside its fmt header chunk", info.value.reason
    assert str(info.value) == f"{header_only}: WAV file is truncated inside its fmt header chunk; re-record or re-export it"


def test_read_wav_without_frames(tmp_path: Path) -> None:
    path = tmp_path / "none.wav"
    sf.write(path, np.zeros((0, 1), dtype=np.int16), 16000, subtype="PCM_16")
    with pytest.raises(AudioFileError, match="no audio frames"):
        read_wav(path)


def test_read_wav_of_headerless_audio_says_what_it_lacks(tmp_path: Path) -> None:
    """libsndfile takes a .raw name for headerless audio and asks for its rate: listen and identify stopped
    with a traceback ("TypeError: samplerate must be specified")."""
    for name in ("take.raw", "TAKE.RAW"):
        path = tmp_path / name
        path.write_bytes(np.zeros(3200, np.int16).tobytes())
        with pytest.raises(AudioFileError) as info:
            read_wav(path)
        assert str(info.value).startswith(f"{path}: headerless (raw) audio, which does not say its sample rate"), info.value
        assert "sox -t raw -r 16000 -e signed -b 16 -c 1 IN.raw OUT.wav" in str(info.value)


def test_read_wav_whose_header_was_never_finished_says_how_to_repair_it(tmp_path: Path) -> None:
    """A recorder stopped before it wrote the lengths leaves 0 in the header with the audio after it:
    libsndfile reads no frames, and the player was told the file "contains no audio frames; re-record
    it", though every sample is there. Now: what happened, and the sox command that reads it whole."""
    import struct

    good = _good(tmp_path, 16000, 1)
    raw = bytearray(good.read_bytes())
    at = raw.index(b"data")
    raw[4:8] = struct.pack("<I", 0)
    raw[at + 4: at + 8] = struct.pack("<I", 0)
    path = tmp_path / "unfinished.wav"
    path.write_bytes(raw)
    follow = len(raw) - (at + 8)
    with pytest.raises(AudioFileError) as info:
        read_wav(path)
    assert str(info.value) == (f"{path}: its header says it holds no audio, yet {follow} bytes follow it: the "
                               "recorder stopped before it finished the file; repair it with: sox --ignore-length "
                               "IN.wav OUT.wav")
    assert info.value.reason.startswith("unfinished: ") and "sox" not in info.value.reason


def test_read_wav_wrong_rate_and_channels_when_exact_ones_are_needed(tmp_path: Path) -> None:
    path = _good(tmp_path, 44100, 2)
    with pytest.raises(AudioFileError, match=r"44100 Hz, 16000 Hz is needed.*sox"):
        read_wav(path, expect_rate=16000)
    with pytest.raises(AudioFileError, match="2 channel"):
        read_wav(path, expect_channels=1)


def test_read_wav_implausible_rate(tmp_path: Path) -> None:
    path = tmp_path / "odd.wav"
    sf.write(path, np.zeros((1000, 1), dtype=np.int16), 1000, subtype="PCM_16")
    with pytest.raises(AudioFileError, match="1000 Hz is outside"):
        read_wav(path)


def test_file_source_reports_bad_files(tmp_path: Path) -> None:
    (tmp_path / "e.wav").write_bytes(b"")
    with pytest.raises(AudioFileError, match="empty"):
        FileSource(tmp_path / "e.wav")


def test_headerless_pcm_source(tmp_path: Path) -> None:
    from voicesnap.audio import read_pcm

    x = (np.random.default_rng(4).standard_normal((8000, 2)) * 3000).astype(np.int16)
    raw = tmp_path / "take.raw"
    raw.write_bytes(x.astype("<i2").tobytes())
    chunks = list(FileSource(raw, pcm_rate=8000, pcm_channels=2, chunk_frames=160))
    assert chunks[0].rate == 8000 and chunks[0].channels == 2
    assert np.array_equal(np.concatenate([c.samples for c in chunks]), x)
    raw.write_bytes(x.astype("<i2").tobytes()[:-1])  # cut mid-frame
    with pytest.raises(AudioFileError, match="not a whole number"):
        read_pcm(raw, 8000, 2)
