"""Run every benchmark and print one table: ``python -m bench [--quick] [--only AREA] [--json FILE]``."""

from __future__ import annotations

import argparse
import importlib
import json
import pkgutil
import sys
import time
import traceback
from dataclasses import asdict
from pathlib import Path

from . import Row


def _fmt(value: float | str) -> str:
    if isinstance(value, str):
        return value
    if value != value:
        return "n/a"
    if abs(value) >= 1000:
        return f"{value:,.0f}"
    if abs(value) >= 10:
        return f"{value:.1f}"
    return f"{value:.3g}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__)
    parser.add_argument("--quick", action="store_true", help="smaller samples, for a fast look")
    here = Path(__file__).parent
    names = sorted(m.name for m in pkgutil.iter_modules([str(here)]) if m.name.startswith("bench_"))
    areas = [n.removeprefix("bench_") for n in names]
    parser.add_argument("--only", action="append", default=[], metavar="AREA",
                        help=f"run only this area (repeatable; any case, so Engine is engine): {', '.join(areas)}")
    parser.add_argument("--json", type=Path, help="also write the rows as JSON to this file")
    args = parser.parse_args(argv)

    if args.only:
        only = {a.lower() for a in args.only}
        unknown = sorted(only.difference(areas))
        if unknown:  # it once printed an empty table and exited 0
            parser.error(f"no area {', '.join(unknown)}; the areas: {', '.join(areas)}")
        names = [n for n in names if n.removeprefix("bench_") in only]
    rows: list[Row] = []
    failed = 0
    for name in names:
        start = time.perf_counter()
        print(f"running {name} ...", file=sys.stderr, flush=True)
        try:
            module = importlib.import_module(f"bench.{name}")
            rows.extend(module.run(quick=args.quick))
        except Exception:  # one broken benchmark must not hide the others
            failed += 1
            traceback.print_exc()
            rows.append(Row(name.removeprefix("bench_"), "benchmark failed", "error", note="see stderr"))
        print(f"  {name}: {time.perf_counter() - start:.1f} s", file=sys.stderr, flush=True)

    headers = ("area", "metric", "value", "unit", "target", "note")
    table = [(r.area, r.metric, _fmt(r.value), r.unit, r.target, r.note) for r in rows]
    widths = [max(len(h), *(len(t[i]) for t in table)) if table else len(h) for i, h in enumerate(headers)]
    line = " | ".join(h.ljust(w) for h, w in zip(headers, widths))
    print(line)
    print("-+-".join("-" * w for w in widths))
    for t in table:
        print(" | ".join(c.ljust(w) for c, w in zip(t, widths)))
    if args.json:
        args.json.write_text(json.dumps([asdict(r) for r in rows], indent=2))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
