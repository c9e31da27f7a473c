"""voicesnap benchmarks: ``python -m bench`` runs them all and prints one table.

Each ``bench/bench_<area>.py`` module defines ``run(quick: bool) -> list[Row]``.
Benchmarks are measurements, never pass/fail tests: the machines are shared
and noisy, so targets are printed beside the figures, not asserted.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Row:
    area: str  # "engine", "listening", "voices", "announcer", "play"
    metric: str  # what was measured, with its conditions
    value: float | str
    unit: str = ""
    target: str = ""  # e.g. ">= 100000", "<= 0.05"; empty when there is none
    note: str = ""  # engine/peer name, sample size, anything needed to read the figure
