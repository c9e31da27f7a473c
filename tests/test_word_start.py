"""Where a call starts when a card slap or a click came just before it (``onsets.Envelope.word_start``).

A recogniser's word can take in what came 0.1-0.4 s before it (real Speech Commands clips: clicks,
a thump); the onset search then finds the rise there, and a tie would be judged on the slap. These
tests lay a slap louder than the call before real corpus calls and hold the rule to the call's own
ground-truth onset; and check that it moves nothing where nothing parts a sound from the word.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from bench.bench_nocall import _generator
from voicesnap import corpus
from voicesnap.onsets import RATE, Envelope

CORPUS = Path(__file__).parent / "fixtures" / "audio" / "corpus"


def _clatter(seed: int) -> np.ndarray:
    """A card slap as the corpus generator makes them."""
    return _generator().clatter(np.random.default_rng(seed))


def _calls(name: str) -> tuple[np.ndarray, list[corpus.Segment]]:
    fx = corpus.load(CORPUS / f"{name}.json")
    return fx.read()[:, 0].astype(np.float64), [s for s in fx.segments if s.kind == "call"]


def _envelope(x: np.ndarray) -> Envelope:
    env = Envelope(seconds=len(x) / RATE + 1.0)
    env.push(0, x.astype(np.float32))
    return env


@pytest.mark.parametrize("name", ["clean_alice", "clean_dev", "snap_vs_pool_1"])
def test_a_slap_louder_than_the_call_and_parted_from_it_is_not_its_onset(name):
    x, calls = _calls(name)
    slap = _clatter(7) * np.max(np.abs(x)) * 1.5  # louder than the loudest call
    starts = []
    for i, s in enumerate(calls):
        at = s.onset - int((0.12 + 0.04 * (i % 5)) * RATE) - len(slap)  # a 120-280 ms gap after it
        x[at: at + len(slap)] += slap
        starts.append(at)
    env = _envelope(x)
    for s, at in zip(calls, starts):
        moved = env.word_start(at / RATE, s.end / RATE)
        assert moved is not None and abs(moved - s.onset / RATE) <= 0.01, (s, at / RATE, moved)


@pytest.mark.parametrize("gain", [1.5, 0.5])
def test_a_slap_before_calls_in_pink_noise_is_not_their_onset(gain):
    """In pink noise at 20 dB the gap after this slap ends 150 ms before one call's "s" (a swell of the
    noise ends it). The onset is then searched for up to the word's vowel: within the search's usual
    0.1 s only the noise's swell rose, and that call was placed 149 ms early, on it."""
    x, calls = _calls("noisy_pink_20db")
    slap = _clatter(9) * np.max(np.abs(x)) * gain
    starts = []
    for i, s in enumerate(calls):
        at = s.onset - int((0.12 + 0.04 * (i % 5)) * RATE) - len(slap)
        x[at: at + len(slap)] += slap
        starts.append(at)
    env = _envelope(x)
    for s, at in zip(calls, starts):
        moved = env.word_start(at / RATE, s.end / RATE)
        assert moved is not None and abs(moved - s.onset / RATE) <= 0.01, (s, at / RATE, moved)


@pytest.mark.parametrize("name", ["clean_bob", "snap_vs_pool_2", "noisy_pink_10db", "noisy_babble_20db"])
def test_nothing_is_moved_from_a_call_found_at_its_own_start(name):
    """At a call's true onset nothing parts the word from its vowel: not the "p" of "snap" before
    "pool", not noise or chatter."""
    x, calls = _calls(name)
    env = _envelope(x)
    for s in calls:
        assert env.word_start(s.onset / RATE, s.end / RATE) is None, s


def test_a_slap_that_runs_on_into_the_call_is_left_alone():
    """With no quiet gap between them the slap and the call are one sound to this rule: it does not
    guess."""
    x, calls = _calls("clean_cara")
    slap = _clatter(7) * np.max(np.abs(x)) * 1.5
    s = calls[0]
    at = s.onset - len(slap) + int(0.02 * RATE)  # its tail under the "s"
    x[at: at + len(slap)] += slap
    assert _envelope(x).word_start(at / RATE, s.end / RATE) is None
