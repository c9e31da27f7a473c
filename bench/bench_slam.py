"""Silent Snap's slam spotter (voicesnap/spotters/slam.py): recall, onset error, false slams, CPU.

Three samples, all synthetic (no real slam is open data):

- the committed fixture ``tests/fixtures/audio/slams/slams.json``: 6 slams (-3 to -26 dBFS peak, alone,
  over talk, on the end of a "snap") among plosive words, talk, the announcer, claps and clatter;
- ``SLAMS`` more slams from the fixture's own generator (``generate_slams.slam``, levels drawn from
  -3 to -26 dBFS peak), each laid at a random place over the no-call hour's files
  (``bench_nocall``: talk, near-miss words, noise with clatter, strangers, the announcer in a room,
  a quiet table), one per 20 s: slams over whatever the table is doing;
- the no-call hour itself, untouched: every slam heard there is a false one (per hour), and the
  spotter's CPU time over it (real-time factor, one core).

``python3 -m bench.bench_slam [--minutes M]``; ``python3 -m bench --only slam`` (``--quick``: 12 min).
"""

from __future__ import annotations

import importlib.util
import math
import sys
import time
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np

from voicesnap.audio import AudioChunk
from voicesnap.corpus import load, percentile, score
from voicesnap.spotters.slam import SlamSpotter

from . import Row
from .bench_nocall import MINUTES, QUICK_MINUTES, render_stream
from .spotting import poisson_interval

AREA = "listening"
ROOT = Path(__file__).resolve().parent.parent
FIXTURE = ROOT / "tests" / "fixtures" / "audio" / "slams" / "slams.json"
GENERATOR = ROOT / "tests" / "fixtures" / "audio" / "generate_slams.py"
EVERY_S = 20.0  # one laid slam per this many seconds of the no-call stream
CHUNK = 320  # frames per chunk, as play reads a file


def _generator() -> ModuleType:
    sys.path.insert(0, str(GENERATOR.parent))
    spec = importlib.util.spec_from_file_location("generate_slams", GENERATOR)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _hear(x: np.ndarray, rate: int) -> tuple[list[Any], float]:
    """(slams heard in mono int16 ``x``, CPU seconds)."""
    spotter = SlamSpotter(channel=0)
    x = x.reshape(-1, 1)
    start = time.process_time()
    out = []
    for a in range(0, len(x), CHUNK):
        out += spotter.accept(AudioChunk(rate, 2, 1, a, x[a:a + CHUNK]))
    out += spotter.flush()
    return out, time.process_time() - start


def run(quick: bool, minutes: float | None = None) -> list[Row]:
    rows: list[Row] = []
    fx = load(FIXTURE)
    found, _cpu = _hear(fx.read(), fx.rate)
    s = score(fx, found, words=["slam"])
    errs = [abs(e) * 1000 for e in s.onset_errors]
    rows.append(Row(AREA, "slams (fixture): recall", s.recall, "", "",
                    f"slam: {len(s.hits)}/{s.targets}, {len(s.false)} false (plosives, talk, announcer, claps, "
                    f"clatter); onset error max {max(errs, default=math.nan):.1f} ms"))

    g = _generator()
    rng = np.random.default_rng(7)
    fixtures = render_stream(minutes or (QUICK_MINUTES if quick else MINUTES))
    laid = hits = false_laid = 0
    onset_errors: list[float] = []
    false = 0
    cpu = audio = 0.0
    non_target = 0.0
    for f in fixtures:
        x = f.read()
        x = x if x.ndim == 1 else x[:, 0]
        heard, used = _hear(x, f.rate)
        cpu += used
        audio += len(x) / f.rate
        non_target += f.duration
        false += len(heard)
        # the same file with slams laid over it, one per EVERY_S
        mixed = x.astype(np.float32) / 32768.0
        onsets = []
        for k in range(int(f.duration // EVERY_S)):
            hit = g.slam(rng, float(rng.uniform(-26.0, -3.0)))
            at = int((k * EVERY_S + rng.uniform(0.5, EVERY_S - 1.0)) * f.rate)
            end = min(len(mixed), at + len(hit))
            mixed[at:end] += hit[: end - at]
            onsets.append((at + g.first_above(hit)) / f.rate)
        pcm = np.clip(np.round(mixed * 32767), -32768, 32767).astype(np.int16)
        got, _ = _hear(pcm, f.rate)
        used_det: set[int] = set()
        for t in onsets:
            laid += 1
            near = [(abs(d.onset - t), i) for i, d in enumerate(got) if i not in used_det and abs(d.onset - t) <= 0.25]
            if near:
                err, i = min(near)
                used_det.add(i)
                hits += 1
                onset_errors.append(err * 1000)
        false_laid += len(got) - len(used_det)
    hours = non_target / 3600
    lo, hi = poisson_interval(false, hours)
    rows += [
        Row(AREA, "slams laid over the no-call stream: recall", hits / laid if laid else math.nan, "", "",
            f"slam: {hits}/{laid} (-3 to -26 dBFS peak, over talk, noise, the announcer, a quiet table); "
            f"{false_laid} other detections in those files"),
        Row(AREA, "slams laid over the no-call stream: onset error p95", percentile(onset_errors, 95), "ms", "<= 10",
            f"slam: median {percentile(onset_errors, 50):.1f} ms, max {max(onset_errors, default=math.nan):.1f} ms"),
        Row(AREA, "no-call hour: false slams per hour", false / hours if hours else math.nan, "/h", "<= 0.5",
            f"slam: {false} in {non_target / 60:.0f} min (95% interval {lo:.1f}-{hi:.1f}/h)"),
        Row(AREA, "slam spotter: CPU real-time factor (one core, one mic)", cpu / audio if audio else math.nan, "",
            "", f"slam: {cpu:.1f} CPU s / {audio / 60:.0f} min"),
    ]
    return rows


def main(argv: list[str] | None = None) -> int:
    import argparse

    parser = argparse.ArgumentParser(prog="python3 -m bench.bench_slam", description=__doc__.split("\n\n")[0])
    parser.add_argument("--minutes", type=float, default=MINUTES, help=f"length of the no-call stream (default {MINUTES:g})")
    args = parser.parse_args(argv)
    for row in run(False, args.minutes):
        value = f"{row.value:.3g}" if isinstance(row.value, float) else str(row.value)
        print(f"{row.metric:60} {value:>8} {row.unit:3} {row.note}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
