"""Play many games of Snap with bot players and print statistics per player count.

The bots call through the same referee as a real table, with human-like
reaction times, misses and false calls, so the figures say how the rules
play: how long games run at a given flip pace, how often a flip makes a
match, how many ties, pools and wrong calls there are, and who wins by seat.
"""

from __future__ import annotations

import argparse
import json
import os
import sys

from ..errors import UserError

MIN_PLAYERS, MAX_PLAYERS = 2, 6


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--players", default="4", metavar="N",
        help="players per game, 2-6; a range (2-6) or list (2,4,6) prints a table for each (default 4)",
    )
    parser.add_argument("--games", type=int, default=200, metavar="G", help="games per player count (default 200)")
    parser.add_argument("--seed", type=int, default=1, metavar="S", help="seed for deals and bots (default 1)")
    from .. import variants  # pure Python, cheap: lets --help list the names

    parser.add_argument(
        "--variant", default="classic", metavar="V",
        help=f"rules variant: {', '.join(variants.names())} (default classic)",
    )
    parser.add_argument(
        "--pace", type=float, default=1.5, metavar="SECONDS",
        help="seconds between flips, for game length (default 1.5)",
    )
    parser.add_argument(
        "--tie-window", type=float, default=None, metavar="SECONDS",
        help="calls this close together tie (default: the rules' 0.1)",
    )
    parser.add_argument(
        "--pool-claim", choices=("anyone", "flipper"), default=None,
        help="who may claim the Snap pool (default: the rules' choice)",
    )
    parser.add_argument("--max-flips", type=int, default=None, metavar="N",
                        help="end a game by the tiebreak after this many flips (default: the rules' cap)")
    parser.add_argument(
        "--session", default=None, metavar="FORMAT",
        help="play whole sessions (best-of-3, best-of-5, first-to-N): --games then counts sessions",
    )
    parser.add_argument(
        "--spread", choices=("human", "tight"), default="human",
        help="bots' reaction-time spread: human (published figures, the default) or tight "
             "(the first bots: about +-90 ms, for comparison)",
    )
    parser.add_argument("--json", action="store_true", help="print the statistics as JSON for machines")


def parse_players(text: str) -> list[int]:
    """'4' -> [4]; '2-6' -> [2..6]; '2,4,6' -> [2, 4, 6]; anything else is a UserError."""
    counts: list[int] = []
    try:
        for part in text.split(","):
            part = part.strip()
            if "-" in part:
                lo, hi = (int(x) for x in part.split("-", 1))
                if lo > hi:
                    raise UserError(f"--players {text}: the range {part} runs backwards; write {hi}-{lo}")
                counts.extend(range(lo, hi + 1))
            else:
                counts.append(int(part))
    except ValueError:
        raise UserError(
            f"--players {text!r} is not a player count: give a number 2-6, a range like 2-6 or a list like 2,4,6"
        ) from None
    for n in counts:
        if not MIN_PLAYERS <= n <= MAX_PLAYERS:
            raise UserError(f"--players {text}: Snap is for {MIN_PLAYERS} to {MAX_PLAYERS} players, not {n}")
    return sorted(set(counts))


def run(args: argparse.Namespace) -> int:
    from .. import simulate

    counts = parse_players(str(args.players))
    if args.games < 1:
        raise UserError(f"--games {args.games}: play at least one game")
    if not 0 < args.pace < float("inf"):
        raise UserError(f"--pace {args.pace}: give the seconds between flips as a positive number, e.g. 1.5")
    from .. import rules, session, variants

    variants.get(args.variant)  # an unknown name fails here, with the names to choose from
    changes = {
        "tie_window": args.tie_window,
        "pool_claim": args.pool_claim,
        "max_flips": args.max_flips,
    }
    options = rules.Options(**{k: v for k, v in changes.items() if v is not None})
    if args.session:
        session.parse_format(args.session)  # a bad format fails here, before any game
    report = simulate.simulate(counts, args.games, args.seed, args.variant, args.pace, options, args.session,
                               args.spread)
    text = json.dumps(report.to_data(), indent=2) + "\n" if args.json else report.render()
    try:
        sys.stdout.write(text)
        sys.stdout.flush()
    except BrokenPipeError:  # e.g. piped into head: the reader has all it wanted
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    return 0
