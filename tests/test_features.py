"""features.percentile_1d must equal numpy's percentile exactly (the spotter's noise floor relies on it),
and features.frame_levels numpy's logaddexp reduce (every template's level rests on it)."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from voicesnap.features import frame_levels, peak_level, percentile_1d
from voicesnap.voices.templates import TemplateBank


@settings(max_examples=300, deadline=None)
@given(arrays(np.float32, st.integers(1, 400), elements=st.floats(-120, 0, width=32)),
       st.sampled_from([0.0, 10.0, 20.0, 50.0, 90.0, 99.5, 100.0]))
def test_percentile_1d_is_numpys_percentile_bit_for_bit(a: np.ndarray, q: float) -> None:
    assert percentile_1d(a, q) == float(np.percentile(a, q))


@settings(max_examples=200, deadline=None)
@given(st.lists(arrays(np.float32, st.tuples(st.integers(2, 60), st.just(40)), elements=st.floats(-30, 10, width=32)),
                min_size=1, max_size=12))
def test_frame_levels_and_a_banks_peaks_are_numpys_reduce_bit_for_bit(mels: list[np.ndarray]) -> None:
    for m in mels:
        assert np.array_equal(frame_levels(m), np.logaddexp.reduce(m, axis=1))
        assert peak_level(m) == float(np.max(np.logaddexp.reduce(m, axis=1)))
    bank = TemplateBank([("p", "snap", m) for m in mels])
    assert np.array_equal(bank.peaks, np.array([float(np.max(np.logaddexp.reduce(m, axis=1))) for m in mels],
                                               np.float32))


def test_percentile_1d_refuses_an_empty_array() -> None:
    try:
        percentile_1d(np.zeros(0, np.float32), 10)
    except ValueError:
        return
    raise AssertionError("no error for an empty array")


def test_refine_onset_is_not_fooled_by_a_lone_bump_of_room_tone() -> None:
    """A 2 ms bump of the background over the threshold, 20 ms before the word, is not its onset when a
    run of blocks must hold (as the enrolled engine asks); a lone block would take it."""
    from voicesnap.features import HOP, refine_onset

    rng = np.random.default_rng(7)
    rate, start = 16000, 8000
    x = rng.normal(0.0, 10 ** (-60 / 20), 16000)  # room tone at -60 dBFS
    x[start:start + 4000] += rng.normal(0.0, 10 ** (-25 / 20), 4000)  # the word
    bump = start - int(0.020 * rate)
    x[bump:bump + 32] *= 10 ** (12 / 20)  # one 2 ms block 12 dB up
    pcm = np.clip(x * 32767, -32768, 32767).astype(np.int16)
    frame = start // HOP - 2
    assert abs(refine_onset(pcm, frame, -54.0, back_db=0.0, hold=5) - start) <= 32
    assert refine_onset(pcm, frame, -54.0) <= bump + 32
