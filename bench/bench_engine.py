"""Engine benchmark: simulated flips and games per second, bots and referee included.

Whole classic games are played by voicesnap.simulate exactly as ``voicesnap
simulate`` plays them (bots call, the referee rules, the game keeps the
table), one process, one core. Time is the process's CPU time, so other work
on a shared machine does not count against the engine. A second row per
player count flips the bare Game with no calls at all, to show how much of
the cost is the table and how much the calls and rulings.
"""

from __future__ import annotations

import sys
import time

from voicesnap import rules, simulate

from . import Row, area_main, row_line

TARGET_FLIPS = 100_000


def _simulated(players: int, games: int) -> tuple[float, float, int]:
    start = time.process_time()
    flips = 0
    for i in range(games):
        flips += simulate.play_game(players, simulate.game_seed(0, players, i)).flips
    spent = time.process_time() - start
    return flips / spent, games / spent, flips


def _bare(players: int, games: int) -> float:
    names = simulate.bot_names(players)
    start = time.process_time()
    flips = 0
    for i in range(games):
        game = rules.Game(names, simulate.game_seed(0, players, i))
        t = 0.0
        while not game.over:
            game.flip(t)
            t += 1.5
        flips += game.flips
    return flips / (time.process_time() - start)


def run(quick: bool) -> list[Row]:
    games = 100 if quick else 1000
    rows: list[Row] = []
    for n in (2, 4, 6):
        flips_s, games_s, flips = _simulated(n, games)
        note = f"{games} classic games, {flips} flips, CPU time"
        rows.append(Row("engine", f"simulated flips/s, {n} players, bots+referee", flips_s, "flips/s",
                        f">= {TARGET_FLIPS}", note))
        rows.append(Row("engine", f"simulated games/s, {n} players, bots+referee", games_s, "games/s", "", note))
    for n in (2, 4, 6):
        rows.append(Row("engine", f"bare Game.flip, {n} players, no calls", _bare(n, games // 4),
                        "flips/s", "", f"{games // 4} games to the flip cap or repeat"))
    return rows


def main(argv: list[str] | None = None) -> int:
    """``python3 -m bench.bench_engine [--quick]``: this area's rows alone (without an entry point the module
    ran nothing, said nothing and exited 0)."""
    return area_main("bench.bench_engine", __doc__, run, row_line, argv)


if __name__ == "__main__":
    sys.exit(main())
