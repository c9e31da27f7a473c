"""Could waveform coherence tell a neighbour's crosstalk from a second caller on per-player mics?

The crosstalk rule (voicesnap/spotters/channels.py, MARGIN_DB) goes by level: a call >= 7 dB louder
on another mic is that mic's copy. A shout that reaches a neighbour's mic less than 7 dB down is a
call on both, ruled a tie; levels cannot do better, since a copy and a second caller 30 ms later have
the same envelope. A copy is the same waveform, delayed and filtered by the room; a second caller is
another voice. This probe measures the magnitude-squared coherence (Welch, 32 ms Hann windows, half
overlap, 300-4000 Hz weighted by power) between the two mics over the copy's span, and over a
30 ms tie's second caller's span (bob 3 dB quieter on his mic, alice's copy there too), with the
copy dry (as the fixtures render it) and through synthetic room reverberation (exponentially
decaying noise, RT60 and direct-to-reverberant ratio as listed).

``python3 -m bench.crosstalk_coherence`` (fixture takes; a second).
"""

from __future__ import annotations

import argparse

import numpy as np

RATE = 16000
ROOMS: tuple[tuple[float, float] | None, ...] = (None, (0.3, 0.0), (0.5, -3.0), (0.6, -6.0))  # (RT60 s, DRR dB)


def msc(x: np.ndarray, y: np.ndarray, n: int = 512) -> float:
    """Power-weighted mean magnitude-squared coherence of x and y over 300-4000 Hz."""
    h = np.hanning(n)
    sxy = np.zeros(n // 2 + 1, complex)
    sxx = np.zeros(n // 2 + 1)
    syy = np.zeros(n // 2 + 1)
    for a in range(0, len(x) - n, n // 2):
        fx, fy = np.fft.rfft(x[a:a + n] * h), np.fft.rfft(y[a:a + n] * h)
        sxy += fx * np.conj(fy)
        sxx += np.abs(fx) ** 2
        syy += np.abs(fy) ** 2
    c = np.abs(sxy) ** 2 / (sxx * syy + 1e-12)
    f = np.fft.rfftfreq(n, 1 / RATE)
    band = (f > 300) & (f < 4000)
    w = np.sqrt(sxx * syy)[band]
    return float((c[band] * w).sum() / w.sum())


def room(rt60: float, drr_db: float, rng: np.random.Generator) -> np.ndarray:
    """A direct path and a diffuse tail (exponential decay, ``drr_db`` under the direct sound)."""
    t = np.arange(int(rt60 * RATE)) / RATE
    tail = rng.normal(0.0, 1.0, len(t)) * np.exp(-6.9 * t / rt60)
    tail[: int(0.002 * RATE)] = 0.0
    tail *= 10 ** (-drr_db / 20) / np.sqrt((tail ** 2).sum())
    tail[0] = 1.0
    return tail


def rows() -> list[tuple[str, float, float]]:
    from tests import table_script as ts

    rng = np.random.default_rng(1)
    a = ts.takes("alice", "snap")[0].astype(float)
    b = ts.takes("bob", "snap")[0].astype(float)
    lag, tie = int(0.003 * RATE), int(0.030 * RATE)

    def noise(n: int) -> np.ndarray:
        return rng.normal(0.0, 32768 * 10 ** (-60 / 20), n)

    out = []
    for rev in ROOMS:
        for bleed in (-3.0, -6.0):
            n = len(a) + 8000
            x0, x1 = noise(n), noise(n)
            x0[: len(a)] += a
            copy = a if rev is None else np.convolve(a, room(*rev, rng))[: n - lag]
            x1[lag:lag + len(copy)] += copy[: n - lag] * 10 ** (bleed / 20)
            y0, y1 = x0.copy(), x1.copy()
            y1[tie:tie + len(b)] += b * 10 ** (-3 / 20)  # bob's own call, 30 ms after alice's
            y0[tie + lag:tie + lag + len(b)] += b * 10 ** (-20 / 20)  # and its copy on alice's mic
            label = "dry" if rev is None else f"RT60 {rev[0]:g} s, DRR {rev[1]:g} dB"
            out.append((f"{label}, copy {bleed:g} dB", msc(x0[: len(a)], x1[: len(a)]),
                        msc(y0[tie:tie + len(b)], y1[tie:tie + len(b)])))
    return out


def main() -> None:
    argparse.ArgumentParser(description=__doc__.splitlines()[0]).parse_args()
    print(f"{'crosstalk':36s} {'copy alone':>10s} {'tie (2nd caller)':>17s}")
    for label, copy, tie in rows():
        print(f"{label:36s} {copy:10.2f} {tie:17.2f}")


if __name__ == "__main__":
    main()
