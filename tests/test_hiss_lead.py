"""Where a weak "s" starts under steady noise (``onsets.Envelope.hiss_lead``).

Real speakers' "s" can lie 25-40 dB under their vowel; in pink noise 10 dB under the word it stands
2-4 dB over the high band's floor, and the onset search (a 6 dB rise) finds the vowel after it, up to
0.25 s late. The walk-back over the "s" must not walk into what came before it: another speaker's word
(a one-mic tie), a breath, chatter. These tests use the committed real Speech Commands clips and the
corpus generator's own pink noise.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import soundfile as sf

from bench.bench_nocall import _generator
from bench.real_words import s_start
from voicesnap.onsets import RATE, Envelope

REAL = Path(__file__).parent / "fixtures" / "audio" / "real" / "commands"
LEVEL = 0.05  # each word's RMS over the clip


def _clip(path: Path) -> tuple[np.ndarray, float]:
    """The clip at LEVEL, and where its "s" starts (s; as the real-word bench marks it)."""
    x, _ = sf.read(path, dtype="float64")
    x = x if x.ndim == 1 else x[:, 0]
    quiet = int(np.argmin((np.lib.stride_tricks.sliding_window_view(x, 1600)[::160] ** 2).mean(axis=1))) * 160
    t = s_start(np.concatenate([np.tile(x[quiet: quiet + 1600], 8), x]), 8 * 1600) - 0.8
    return x / np.sqrt(np.mean(x ** 2)) * LEVEL, t


def _envelope(x: np.ndarray) -> Envelope:
    env = Envelope(seconds=len(x) / RATE + 1.0)
    env.push(0, np.clip(x * 32768, -32768, 32767).astype(np.int16))
    return env


def _noise(n: int, seed: int, snr_db: float) -> np.ndarray:
    return _generator().pink(n, np.random.default_rng(seed)) * LEVEL * 10 ** (-snr_db / 20)


@pytest.mark.parametrize("word", ["6a27a9bf/seven_0", "6a27a9bf/six_0", "37e8db82/seven_1"])
def test_a_weak_s_under_pink_noise_is_walked_back_to_from_its_vowel(word):
    """Asked 100 ms into the word (where the onset search finds these words' vowel in this noise), the
    walk-back lands within 35 ms of the start of the "s" (whose first tens of ms lie under the noise)."""
    y, t = _clip(REAL / f"{word}.flac")
    x = np.zeros(3 * RATE)
    at = RATE - int(t * RATE)
    x[at: at + len(y)] += y[: len(x) - at]
    x += _noise(len(x), 2, 10.0)
    lead = _envelope(x).hiss_lead(1.1)
    assert lead is not None and abs(lead - 1.0) <= 0.035, (word, lead)


@pytest.mark.parametrize("snr_db", [None, 10.0])
def test_the_walk_back_never_runs_into_another_speakers_word_before_the_s(snr_db):
    """A real "six", "seven" or "sheila" said 40-200 ms into another speaker's "no", "nine" or "marvin"
    (one mic, both at one level): asked at the s-word's onset or up to 60 ms after it, the walk-back
    stops at the s-word's own "s" (the other word is voiced; an "s" is not), never 30 ms or more before it."""
    s_words = [REAL / p for p in ("a8cb6dda/sheila_0.flac", "563aa4e6/seven_2.flac", "97f4c236/six_2.flac",
                                  "37e8db82/seven_1.flac")]
    others = [REAL / p for p in ("988e2f9a/no_0.flac", "a5609cce/marvin_0.flac", "6a27a9bf/nine_0.flac")]
    moved = 0
    for sp in s_words:
        y, t = _clip(sp)
        for op in others:
            o, _ = _clip(op)
            power = np.convolve(o ** 2, np.ones(160) / 160, "same")
            o = o[int(np.argmax(power > 0.1 * power.max())):]  # from where the word is loud
            for lag in (0.04, 0.08, 0.12, 0.2):
                x = np.zeros(3 * RATE)
                x[RATE: RATE + len(o)] += o[: 2 * RATE]
                at = RATE + int(lag * RATE) - int(t * RATE)
                x[max(at, 0): at + len(y)] += y[max(-at, 0): len(x) - at]
                if snr_db is not None:
                    x += _noise(len(x), 7, snr_db)
                env = _envelope(x)
                s = 1.0 + lag
                for late in (0.0, 0.03, 0.06):
                    lead = env.hiss_lead(s + late)
                    assert lead is None or lead >= s - 0.03, (sp.name, op.name, lag, late, lead - s)
                    moved += lead is not None
    assert moved, "the walk-back never moved an onset: the test no longer tests it"


def test_in_a_quiet_room_the_onset_of_a_real_s_stays_where_the_s_rises():
    """Clean: the line is 15 dB under the "s", so a room's faint hiss before the word is not walked into."""
    for sp in sorted(REAL.glob("*/s*.flac")):
        if sp.stem.startswith("stop"):
            continue  # its "s" ends in a closure: not the word a call is
        y, t = _clip(sp)
        x = np.zeros(3 * RATE)
        at = RATE - int(t * RATE)
        x[max(at, 0): at + len(y)] += y[max(-at, 0): len(x) - at]
        lead = _envelope(x).hiss_lead(1.0 + 0.01)
        assert lead is None or lead >= 1.0 - 0.02, (sp, lead)
