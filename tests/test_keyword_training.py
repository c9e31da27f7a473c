"""The keyword head's training recipe (models/train_keyword.py): what each 80 ms step is taught.

Training itself takes most of an hour, so these check the parts that decide what the head learns:
which steps are calls, which are ignored, and which near-miss steps weigh more.
"""

from __future__ import annotations

import importlib.util
import shutil
from pathlib import Path

import numpy as np
import pytest

from voicesnap.keyword import EMBED_SPAN, STEP

SCRIPT = Path(__file__).resolve().parent.parent / "models" / "train_keyword.py"
RATE = 16000


@pytest.fixture(scope="module")
def recipe():
    spec = importlib.util.spec_from_file_location("train_keyword", SCRIPT)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _step_at(seconds: float) -> int:
    """The first step whose audio ends at or after ``seconds``."""
    return int(np.ceil((seconds * RATE - EMBED_SPAN) / STEP))


def test_a_call_is_taught_after_its_end_and_a_near_miss_only_weighs_more(recipe):
    calls = [("snap", 2 * RATE, int(2.3 * RATE), None, None), ("near", 6 * RATE, int(6.3 * RATE), None, None)]
    steps = 120
    y = recipe.labels(calls, steps)
    w = recipe.weights(calls, steps, 3.0)
    assert set(np.nonzero(y == 1)[0]) == set(range(_step_at(2.3 + recipe.POS[0]),
                                                     _step_at(2.3 + recipe.POS[1] + 1e-6)))
    assert (y == 2).sum() == 0
    # the near miss is a "nothing" everywhere, never ignored, and counts three times over it and after it
    near = np.nonzero(w > 1)[0]
    assert near[0] == _step_at(6.0 + 1e-6) and near[-1] == _step_at(6.3 + recipe.NEAR_AFTER + 1e-6) - 1
    assert np.all(y[near] == 0) and np.all(w[near] == 3.0)
    assert np.all(w[: _step_at(5.9)] == 1.0)


def test_the_snap_of_a_snap_pool_is_taught_as_snap_until_pool_begins(recipe):
    snap_end, pool_at, end = int(1.3 * RATE), int(1.4 * RATE), int(1.8 * RATE)
    y = recipe.labels([("snap pool", RATE, end, snap_end, pool_at)], 80)
    assert np.any(y == 1) and np.any(y == 2)
    assert np.nonzero(y == 1)[0].max() < np.nonzero(y == 2)[0].min()


@pytest.mark.skipif(shutil.which("espeak-ng") is None, reason="training streams are spoken by espeak-ng")
def test_a_stream_lists_its_near_misses_apart_from_its_calls(recipe, monkeypatch):
    import soundfile as sf

    # Training takes its real talkers from ../shared/speech, which a clone elsewhere lacks; the
    # committed LibriSpeech clips stand in for them here.
    clips = sorted(recipe.CORPUS_REAL.glob("*/*.flac"))
    assert clips, f"no committed LibriSpeech clips under {recipe.CORPUS_REAL}"
    monkeypatch.setattr(recipe, "_REAL", [sf.read(c, dtype="float32")[0] for c in clips])
    kinds = set()
    for seed in range(4):
        pcm, calls = recipe.stream(seed)
        assert pcm.dtype == np.int16 and len(pcm) == int(recipe.SECONDS * RATE)
        kinds |= {c[0] for c in calls}
        again, same = recipe.stream(seed)
        assert same == calls and np.array_equal(again, pcm)  # a seed gives the same stream
    assert {"snap", "near"} <= kinds <= {"snap", "snap pool", "near"}


def test_a_training_seed_gives_the_same_head_and_another_seed_another(recipe):
    rng = np.random.default_rng(3)
    x = rng.standard_normal((600, 8)).astype(np.float32)
    y = (x[:, 0] > 0.5).astype(np.int64) + (x[:, 1] > 1.0)
    a, b, c = (recipe.train(x, y, 2, hidden=16, seed=s, log=lambda _m: None) for s in (0, 0, 1))
    assert all(np.array_equal(a[k], b[k]) for k in a)
    assert not np.allclose(a["W0"], c["W0"])


def test_compact_windows_scaled_per_batch_train_the_head_that_scaled_float32_windows_do(recipe):
    rng = np.random.default_rng(5)
    x = (rng.standard_normal((700, 8)) * 3 + 5).astype(np.float16)  # as the cached embeddings are stored
    y = (x[:, 0] > 6).astype(np.int64) + (x[:, 1] > 8)
    mu, sd = recipe.moments(x, rows=128)  # over several chunks
    wide = x.astype(np.float64)
    assert np.allclose(mu, wide.mean(0), atol=1e-5) and np.allclose(sd, wide.std(0) + 1e-3, atol=1e-5)
    scaled = (x.astype(np.float32) - mu) / sd
    a = recipe.train(x, y, 2, hidden=16, scale=(mu, sd), log=lambda _m: None)
    b = recipe.train(scaled, y, 2, hidden=16, log=lambda _m: None)
    assert all(np.allclose(a[k], b[k], atol=1e-6) for k in a)
    unscaled = recipe.train(x, y, 2, hidden=16, log=lambda _m: None)
    assert not np.allclose(a["W0"], unscaled["W0"])


def test_heads_of_other_seeds_are_joined_into_one_that_averages_them(recipe, tmp_path, monkeypatch):
    from voicesnap.keyword import Head

    rng = np.random.default_rng(4)
    x = rng.standard_normal((400, 2 * 96)).astype(np.float32)
    y = (x[:, 0] > 0.6).astype(np.int64) + (x[:, 1] > 1.1)
    mu, sd = np.zeros(x.shape[1], np.float32), np.ones(x.shape[1], np.float32)
    monkeypatch.setattr(recipe, "CONTEXT", 2)  # a small head for the test
    paths = []
    for seed in (0, 1):
        paths.append(tmp_path / f"head{seed}.npz")
        recipe.write(paths[-1], mu, sd, [recipe.train(x, y, 1, hidden=8, seed=seed, log=lambda _m: None)], {})
    recipe.join(paths, tmp_path / "both.npz")
    one, other, both = (Head.load((tmp_path / n).read_bytes()) for n in ("head0.npz", "head1.npz", "both.npz"))
    windows = x[:20].reshape(20, 2, 96)
    assert (one.members, both.members) == (1, 2)
    assert np.allclose(both.probs(windows), (one.probs(windows) + other.probs(windows)) / 2, atol=1e-6)
    assert not np.allclose(one.probs(windows), other.probs(windows))
    recipe.write(tmp_path / "shifted.npz", mu + 1, sd, [recipe.train(x, y, 1, hidden=8, log=lambda _m: None)], {})
    with pytest.raises(SystemExit, match="other streams"):
        recipe.join([paths[0], tmp_path / "shifted.npz"], tmp_path / "no.npz")
