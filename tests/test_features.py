"""features.percentile_1d must equal numpy's percentile exactly (the spotter's noise floor relies on it)."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from voicesnap.features import percentile_1d


@settings(max_examples=300, deadline=None)
@given(arrays(np.float32, st.integers(1, 400), elements=st.floats(-120, 0, width=32)),
       st.sampled_from([0.0, 10.0, 20.0, 50.0, 90.0, 99.5, 100.0]))
def test_percentile_1d_is_numpys_percentile_bit_for_bit(a: np.ndarray, q: float) -> None:
    assert percentile_1d(a, q) == float(np.percentile(a, q))


def test_percentile_1d_refuses_an_empty_array() -> None:
    try:
        percentile_1d(np.zeros(0, np.float32), 10)
    except ValueError:
        return
    raise AssertionError("no error for an empty array")
