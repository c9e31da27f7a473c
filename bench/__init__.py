"""voicesnap benchmarks: ``python -m bench`` runs them all and prints one table.

Each ``bench/bench_<area>.py`` module defines ``run(quick: bool) -> list[Row]``.
Benchmarks are measurements, never pass/fail tests: the machines are shared
and noisy, so targets are printed beside the figures, not asserted.
"""

from __future__ import annotations

import os
import tempfile
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Callable, Iterator


@dataclass(frozen=True)
class Row:
    area: str  # "engine", "listening", "voices", "announcer", "play"
    metric: str  # what was measured, with its conditions
    value: float | str
    unit: str = ""
    target: str = ""  # e.g. ">= 100000", "<= 0.05"; empty when there is none
    note: str = ""  # engine/peer name, sample size, anything needed to read the figure


@contextmanager
def scratch_data_dir() -> Iterator[str]:
    """A temporary VOICESNAP_DATA_DIR for a benchmark's enrollments, so that a player's real data dir
    is never touched; the variable is put back as it was afterwards (later benchmarks run in the
    same process)."""
    with tempfile.TemporaryDirectory(prefix="voicesnap-bench-") as tmp:
        old = os.environ.get("VOICESNAP_DATA_DIR")
        os.environ["VOICESNAP_DATA_DIR"] = tmp
        try:
            yield tmp
        finally:
            if old is None:
                os.environ.pop("VOICESNAP_DATA_DIR", None)
            else:
                os.environ["VOICESNAP_DATA_DIR"] = old


def row_line(row: Row) -> str:
    """One row as a line of ``python3 -m bench.<area>``'s output: metric, value and unit, target, note."""
    value = f"{row.value:.3g}" if isinstance(row.value, float) else str(row.value)
    return f"{row.metric:60} {value:>10} {row.unit:14} {row.target:10} {row.note}"


def area_main(prog: str, doc: str | None, run: Callable[[bool], list[Row]], show: Callable[[Row], str],
              argv: list[str] | None = None) -> int:
    """``python3 -m bench.<area> [--quick]`` for an area module: its rows, one per line (with no parser,
    --help ran the benchmark)."""
    import argparse

    parser = argparse.ArgumentParser(prog=f"python3 -m {prog}", description=doc,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="the shorter run that python3 -m bench --quick makes")
    for row in run(parser.parse_args(argv).quick):
        print(show(row))
    return 0
