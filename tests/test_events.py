"""The shared event records round-trip to plain data and reject malformed input."""

from __future__ import annotations

import numpy as np
import pytest

from voicesnap import events
from voicesnap.audio import AudioChunk
from voicesnap.spotters import Detection


def test_detection_round_trips_through_json() -> None:
    d = Detection("snap", 1.25, 1.6, 0.93, channel=1, player="alice", score=0.8, engine="vosk")
    assert events.loads(events.dumps(d)) == d


def test_audio_chunk_keeps_its_clock_and_samples() -> None:
    samples = np.arange(-6, 6, dtype=np.int16).reshape(6, 2)
    chunk = AudioChunk(rate=16000, width=2, channels=2, start=32000, samples=samples)
    back = events.loads(events.dumps(chunk))
    assert back == chunk
    assert back.timestamp == 2.0 and back.frames == 6 and back.end == 32006


def test_a_cut_chunk_keeps_its_clock_and_the_echo_of_the_same_frames() -> None:
    samples = np.arange(20, dtype=np.int16).reshape(10, 2)
    chunk = AudioChunk(16000, 2, 2, start=100, samples=samples, echo=samples * 10)
    cut = chunk.between(103, 107)
    assert (cut.start, cut.frames) == (103, 4)
    assert np.array_equal(cut.samples, samples[3:7]) and np.array_equal(cut.echo, samples[3:7] * 10)
    assert chunk.between(50, 102).frames == 2 and chunk.between(108, 500).end == 110  # clamped to the chunk
    assert chunk.between(120, 130).frames == 0
    assert AudioChunk(16000, 2, 2, 100, samples).between(101, 102).echo is None


@pytest.mark.parametrize(
    "line, message",
    [
        ("{not json", "not JSON"),
        ('{"type": "no-such-thing"}', "unknown event type"),
        ('{"type": "detection", "word": "snap", "onset": "soon", "end": 1, "confidence": 1}', "onset"),
        ('{"type": "detection", "word": "snap", "onset": 1, "end": 1, "confidence": 1, "x": 2}', "unknown field"),
        ("[1, 2]", "expected an object"),
    ],
)
def test_malformed_records_give_a_clear_error(line: str, message: str) -> None:
    with pytest.raises(events.EventError, match=message):
        events.loads(line)
