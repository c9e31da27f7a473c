"""The speech gate (voicesnap.spotters.gate): the recogniser hears only around speech, on the true clock."""

from __future__ import annotations

import numpy as np
import pytest

from voicesnap.audio import ArraySource
from voicesnap.corpus import load_corpus, score
from voicesnap.spotters.gate import EnergyTracker, SpeechGate

CORPUS = {f.name: f for f in load_corpus() if f.channels == 1}


def _opens(samples: np.ndarray, rate: int = 16000) -> list[int]:
    """Chunk indices (20 ms) where the tracker hears speech."""
    tracker = EnergyTracker()
    return [i for i, k in enumerate(range(0, len(samples) - 319, 320)) if tracker.update(samples[k:k + 320], rate) >= 0]


def test_the_tracker_stays_shut_in_room_tone_silence_and_steady_noise() -> None:
    room = CORPUS["long_quiet_room"].read()[:, 0]  # 60 s of a real room's tone (-58 dBFS, rumbling)
    noise = np.random.default_rng(3).normal(0, 32768 * 10 ** (-60 / 20), 16000 * 10).astype(np.int16)
    assert _opens(room) == []
    assert _opens(np.zeros(16000 * 5, dtype=np.int16)) == []
    assert _opens(noise) == []


def test_the_tracker_hears_every_call_within_the_preroll() -> None:
    """Every call in the clean, quiet and noisy fixtures opens the gate no later than 60 ms into the word."""
    for name in ("clean_alice", "clean_finn", "quiet_calls", "noisy_pink_10db", "clipped_calls"):
        fx = CORPUS[name]
        samples = fx.read()[:, 0]
        heard = np.array(_opens(samples)) * 320
        for seg in fx.targets(("snap", "snap pool")):
            near = heard[(heard >= seg.onset - 8000) & (heard <= seg.end)]
            assert len(near), f"{name}: the call at {seg.onset / 16000:.2f} s never opened the gate"
            assert near[0] <= seg.onset + int(0.06 * 16000), f"{name}: opened {(near[0] - seg.onset) / 16:.0f} ms late"


@pytest.fixture(scope="module")
def model():  # noqa: ANN201
    from table_script import model_or_skip

    from voicesnap.spotters.vosk_spotter import load_model

    return load_model(model_or_skip())


def test_gated_vosk_hears_the_calls_on_the_true_clock_and_decodes_a_fraction(model) -> None:  # noqa: ANN001
    """Calls after long quiet stretches: the recogniser hears under half the audio, and every onset
    (mapped back from its spliced clock) lands on the call in the stream."""
    from voicesnap.spotters.vosk_spotter import VoskSpotter

    room = CORPUS["long_quiet_room"].read()[:, :1]
    calls = CORPUS["clean_bob"]
    audio = calls.read()[:, :1]
    quiet = room[: 16000 * 20]
    track = np.concatenate([quiet, audio[: 16000 * 6], quiet, audio[16000 * 6:]])
    gate = SpeechGate(VoskSpotter(model, channel=0), channel=0)
    found = []
    for chunk in ArraySource(track, 16000, chunk_frames=320):
        found += gate.accept(chunk)
    found += gate.flush()
    assert gate.stats()["share"] < 0.5 and gate.stats()["bursts"] >= 2
    # the fixture's truth, moved to where its two halves sit in the track
    shifted = []
    for seg in calls.targets(("snap", "snap pool")):
        move = len(quiet) if seg.onset < 16000 * 6 else 2 * len(quiet)
        shifted.append((seg.text, (seg.onset + move) / 16000))
    calls_heard = [d for d in found if d.word in ("snap", "snap pool")]
    assert len(calls_heard) == len(shifted)
    for (word, onset), det in zip(shifted, sorted(calls_heard, key=lambda d: d.onset)):
        assert det.word == word and abs(det.onset - onset) < 0.02, (word, onset, det)
        assert det.detected_at is not None and det.end <= det.detected_at <= det.end + 2.0


def test_the_gate_makes_its_recogniser_on_first_speech_and_forwards_the_pool_flag(model) -> None:  # noqa: ANN001
    from voicesnap.spotters.vosk_spotter import VoskSpotter

    made = []

    def make() -> VoskSpotter:
        made.append(VoskSpotter(model, channel=0))
        return made[-1]

    gate = SpeechGate(make, channel=0)
    gate.set_pool_exists(False)
    room = CORPUS["long_quiet_room"].read()[: 16000 * 5, :1]
    for chunk in ArraySource(room, 16000, chunk_frames=320):
        assert gate.accept(chunk) == []
    assert made == [] and gate.flush() == []  # nothing said: no recogniser at all
    audio = CORPUS["clean_alice"].read()[: 16000 * 3, :1]
    for chunk in ArraySource(audio, 16000, chunk_frames=320):
        gate.accept(chunk)
    assert len(made) == 1 and made[0].pool_exists is False
