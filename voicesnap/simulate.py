"""Whole games of Snap with bot players, through the real referee, and their statistics.

The simulator is the rules' test bench: it answers "how do these rules play?"
(how long a game runs, how often a flip makes a match, how many ties, pools
and wrong calls there are, whether a seat is favoured) by playing many seeded
games with bots (voicesnap.bots) whose calls go through the same Referee a
real table uses. Everything comes from the seed: the same seed gives the same
report, number for number.

Time is the audio clock: the dealer flips every ``pace`` seconds, and when a
call is waiting for its ruling the next flip waits for the ruling too (as
the real dealer does). No time is added for gathering cards after a snap, so
game lengths are a lower bound for a real table at that pace.
"""

from __future__ import annotations

import hashlib
import statistics
from dataclasses import asdict, dataclass, field
from typing import Any, Sequence

from . import rules, variants
from .bots import DEFAULT_SPREAD, SPREADS, Bots
from .referee import Referee
from .rules import Flipped, Game
from .rules import SLAP
from .session import Format, Session, parse_format
from .text import counted

__all__ = [
    "GameResult", "SessionResult", "CountStats", "Report",
    "play", "play_game", "play_session", "simulate", "game_seed", "bot_names", "call_words",
]

DEFAULT_PACE = 1.5


def game_seed(seed: int, players: int, index: int) -> int:
    """A well-mixed 63-bit seed for one game, so neighbouring games share nothing."""
    digest = hashlib.blake2b(f"{seed}:{players}:{index}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big") >> 1


@dataclass(slots=True)
class GameResult:
    """What one game did, counted from its events and the table after each flip."""

    players: int
    flips: int = 0
    matches: int = 0  # flips whose card matched another pile's top (Flipped.match)
    snaps_won: int = 0
    slaps_won: int = 0  # Slapjack's slaps on a Jack, apart from its snaps (they were counted as snaps)
    ties: int = 0
    wrong_calls: int = 0
    pools_formed: int = 0  # times the centre went from empty to holding cards
    pools_won: int = 0
    ignored: int = 0
    calls: int = 0
    seconds: float = 0.0
    capped: bool = False  # ended by the repeat/flip-cap guard, not by play
    pool_at_end: int = 0  # cards left in the centre when the game ended
    winner_seat: int | None = None


@dataclass(slots=True)
class SessionResult:
    """What one session did: its games, length and winner."""

    games: int
    sudden_death: bool
    seconds: float
    winner_seat: int  # from the first dealer's left (0 flips first in game 1)


def _summary(values: Sequence[float]) -> dict[str, float]:
    ordered = sorted(values)
    n = len(ordered)

    def pct(q: float) -> float:
        return ordered[min(n - 1, int(q * n))]

    return {
        "mean": round(statistics.fmean(ordered), 3),
        "median": round(statistics.median(ordered), 3),
        "p10": round(pct(0.10), 3),
        "p90": round(pct(0.90), 3),
        "min": round(ordered[0], 3),
        "max": round(ordered[-1], 3),
    }


@dataclass
class CountStats:
    """The statistics for one player count over many games."""

    players: int
    results: list[GameResult] = field(default_factory=list)
    sessions: list[SessionResult] = field(default_factory=list)

    def to_data(self) -> dict[str, Any]:
        data = self._games()
        if self.sessions:
            ss = self.sessions
            wins = [0] * self.players
            for r in ss:
                wins[r.winner_seat] += 1
            data["sessions"] = {
                "sessions": len(ss),
                "games_per_session": _summary([r.games for r in ss]),
                "sudden_death_share": round(sum(r.sudden_death for r in ss) / len(ss), 3),
                "minutes": _summary([r.seconds / 60.0 for r in ss]),
                "wins_by_seat": wins,
            }
        return data

    def _games(self) -> dict[str, Any]:
        rs = self.results
        games = len(rs)
        flips = sum(r.flips for r in rs)
        minutes = [r.seconds / 60.0 for r in rs]
        wins = [0] * self.players
        capped_wins = [0] * self.players  # the tiebreak's share: where a seat bias would show
        for r in rs:
            if r.winner_seat is not None:
                wins[r.winner_seat] += 1
                if r.capped:
                    capped_wins[r.winner_seat] += 1

        def per_game(name: str) -> float:
            return round(sum(getattr(r, name) for r in rs) / games, 3)

        return {
            "players": self.players,
            "games": games,
            "flips_per_game": _summary([r.flips for r in rs]),
            "matches_per_flip": round(sum(r.matches for r in rs) / flips, 4) if flips else 0.0,
            "snaps_won_per_game": per_game("snaps_won"),
            "slaps_won_per_game": per_game("slaps_won"),
            "ties_per_game": per_game("ties"),
            "pools_formed_per_game": per_game("pools_formed"),
            "pools_won_per_game": per_game("pools_won"),
            "wrong_calls_per_game": per_game("wrong_calls"),
            "ignored_calls_per_game": per_game("ignored"),
            "minutes": _summary(minutes),
            "share_5_to_15_minutes": round(sum(1 for m in minutes if 5.0 <= m <= 15.0) / games, 3),
            "capped_games": sum(1 for r in rs if r.capped),
            "pool_at_end_per_game": per_game("pool_at_end"),
            "wins_by_seat": wins,
            "wins_by_seat_capped": capped_wins,
        }


@dataclass
class Report:
    """A whole simulation: one CountStats per player count."""

    seed: int
    variant: str
    pace: float
    games: int
    counts: list[CountStats]
    options: rules.Options = field(default_factory=rules.Options)
    session: str | None = None  # session format, when whole sessions were played
    spread: str = DEFAULT_SPREAD  # the bots' reaction-time spread (voicesnap.bots.SPREADS)

    def to_data(self) -> dict[str, Any]:
        return {
            "seed": self.seed,
            "variant": self.variant,
            "pace_seconds": self.pace,
            "games_per_count": self.games,
            "session": self.session,
            "bots_spread": self.spread,
            "options": asdict(self.options),
            "results": [c.to_data() for c in self.counts],
        }

    def render(self) -> str:
        """A plain table per player count, for people, in words a screen reader reads as meant: no ids
        ("single-pile", "best-of-3"), "/" or "%", and no option the variant has no use for."""
        game = variants.get(self.variant)
        if self.session:
            what = f"{counted(self.games, 'session')}, each {parse_format(self.session).words()},"
        else:
            what = counted(self.games, "game")
        sp = SPREADS[self.spread]
        o = self.options
        rules_line = [f"tie window {o.tie_window * 1000:g} milliseconds",
                      "the pool claimed by anyone" if o.pool_claim == "anyone" else "the pool claimed by the flipper only"]
        if not issubclass(game, variants.SpeedSnap):  # everyone flips at once there: no one flipper
            rules_line.append(f"the flipper {'may' if o.flipper_may_call else 'may not'} call")
        rules_line.append(f"a game ends by the tiebreak after {counted(o.max_flips, 'flip')}")
        # Speed Snap's one flip turns everyone's card: a round, and "flips per game" read as single cards
        flip = "round" if issubclass(game, variants.SpeedSnap) else "flip"
        lines = [
            f"voicesnap simulate: {game.title}, {what} per player count, "
            f"seed {self.seed}, one {flip} every {_measured(self.pace, 'second')}",
            ", ".join(rules_line),
            f"bots: {self.spread} reaction spread (sigma {sp.sigma:g}, skills {sp.skills[0]:g} to {sp.skills[1]:g}, "
            f"recogniser jitter {sp.jitter * 1000:g} milliseconds)",
            "",
        ]
        for c in self.counts:
            d = c.to_data()
            f, m = d["flips_per_game"], d["minutes"]
            rows = [
                (f"{flip}s per game", f"mean {f['mean']:.0f}, median {f['median']:.0f}, "
                                      f"10th to 90th percentile {f['p10']:.0f} to {f['p90']:.0f}, max {f['max']:.0f}"),
                (f"matches per {flip}", f"{d['matches_per_flip']:.3f}"),
                ("snaps won per game", f"{d['snaps_won_per_game']:.1f}"),
            ]
            if SLAP in game.words.values():  # Slapjack: its slaps apart, not counted as snaps
                rows.append(("slaps won per game", f"{d['slaps_won_per_game']:.1f}"))
            rows += [
                ("ties per game", f"{d['ties_per_game']:.2f}"),
                ("pools formed per game", f"{d['pools_formed_per_game']:.2f}"),
                ("pools won per game", f"{d['pools_won_per_game']:.2f}"),
                ("wrong calls per game", f"{d['wrong_calls_per_game']:.2f}"),
                ("game length, minutes", f"mean {m['mean']:.1f}, median {m['median']:.1f}, "
                                         f"10th to 90th percentile {m['p10']:.1f} to {m['p90']:.1f}"),
                ("games of 5 to 15 minutes", f"{100 * d['share_5_to_15_minutes']:.0f} percent"),
                ("ended by the flip cap or a repeat", f"{d['capped_games']} of {d['games']}"),
                ("cards left in the pool at the end", f"{d['pool_at_end_per_game']:.1f}"),
                ("wins by seat", _by_seat(d["wins_by_seat"])),
                ("  of them by the tiebreak", _by_seat(d["wins_by_seat_capped"])),
            ]
            if "sessions" in d:
                ss = d["sessions"]
                g, sm = ss["games_per_session"], ss["minutes"]
                rows += [
                    ("sessions", f"{ss['sessions']}, each {parse_format(self.session or '').words()}"),
                    ("games per session", f"mean {g['mean']:.1f}, max {g['max']:.0f}"),
                    ("sessions with sudden death", f"{100 * ss['sudden_death_share']:.0f} percent"),
                    ("session length, minutes", f"mean {sm['mean']:.1f}, 10th to 90th percentile {sm['p10']:.1f} to {sm['p90']:.1f}"),
                    ("sessions won by seat", _by_seat(ss["wins_by_seat"])),
                ]
            width = max(len(k) for k, _ in rows)
            lines.append(f"{c.players} players")
            lines.extend(f"  {k.ljust(width)}  {v}" for k, v in rows)
            lines.append("")
        return "\n".join(lines)


def _measured(x: float, noun: str) -> str:
    """A measure and its unit in the number it needs: "1 second", "1.5 seconds" (``text.counted`` is for
    whole counts)."""
    return f"{x:g} {noun if x == 1 else noun + 's'}"


def _by_seat(counts: Sequence[int]) -> str:
    """ "seat 1: 21, seat 2: 29" (it was "1:21  2:29", which a screen reader read as "1 colon 21 2 colon 29")."""
    return ", ".join(f"seat {i + 1}: {n}" for i, n in enumerate(counts))


def simulate(
    counts: Sequence[int],
    games: int,
    seed: int,
    variant: str = "classic",
    pace: float = DEFAULT_PACE,
    options: rules.Options | None = None,
    session: str | None = None,
    spread: str = DEFAULT_SPREAD,
) -> Report:
    """Play ``games`` games (or sessions of format ``session``) per player count; gather statistics."""
    options = options or rules.Options()
    if spread not in SPREADS:
        raise rules.RulesError(f"no bot spread called {spread!r}; choose one of: {', '.join(SPREADS)}")
    fmt = parse_format(session) if session else None
    out = []
    for n in counts:
        stats = CountStats(n)
        for i in range(games):
            if fmt is None:
                stats.results.append(play_game(n, game_seed(seed, n, i), variant, pace, options, spread=spread))
            else:
                stats.sessions.append(play_session(n, fmt, game_seed(seed, n, i), variant, pace, options,
                                                   stats.results, spread))
        out.append(stats)
    return Report(seed=seed, variant=variant, pace=pace, games=games, counts=out, options=options,
                  session=str(fmt) if fmt else None, spread=spread)


def play_session(
    players: int,
    format: str | Format,
    seed: int,
    variant: str = "classic",
    pace: float = DEFAULT_PACE,
    options: rules.Options | None = None,
    results: list[GameResult] | None = None,
    spread: str = DEFAULT_SPREAD,
) -> SessionResult:
    """One whole session with bots (winner deals next, sudden death on a tie); its games go to ``results``."""
    names = bot_names(players)
    session = Session(names, format, seed, variant, options)
    seconds = 0.0
    while not session.is_over():
        game = session.new_game()
        res = play(game, game.seed, pace, spread=spread)
        seconds += res.seconds
        session.record(game)
        if results is not None:
            results.append(res)
    assert session.winner is not None
    return SessionResult(session.games, session.sudden_death, seconds, (names.index(session.winner) - 1) % players)


def bot_names(players: int) -> tuple[str, ...]:
    return tuple(f"bot{i + 1}" for i in range(players))


def call_words(game: Game) -> dict[str, dict[str, str]]:
    """Each player's word for each canonical call kind, as the variant hears it."""
    return {name: game.call_words(seat) for seat, name in enumerate(game.players)}


def play_game(
    players: int,
    seed: int,
    variant: str = "classic",
    pace: float = DEFAULT_PACE,
    options: rules.Options | None = None,
    log: list[Any] | None = None,
    spread: str = DEFAULT_SPREAD,
) -> GameResult:
    """One whole game with bots through the referee; every event goes to ``log`` if given."""
    return play(variants.create(variant, bot_names(players), seed, options), seed, pace, log, spread)


def play(game: Game, seed: int, pace: float = DEFAULT_PACE, log: list[Any] | None = None,
         spread: str = DEFAULT_SPREAD) -> GameResult:
    """Play ``game`` to its end with one bot per player, flipping every ``pace`` seconds."""
    # Only the game's public view (showing, pile_index, eliminated, on_show,
    # call_words, pool_size, is_over) is read here: the internals may change.
    names = game.players
    players = len(names)
    ref = Referee(game)
    bots = Bots.for_game(game, seed, spread=spread)
    res = GameResult(players)
    pile_of = tuple(game.pile_index(s) for s in range(players))
    showing, eliminated, on_show = game.showing, game.eliminated, game.on_show
    has_slap = any(rules.SLAP in game.call_words(s) for s in range(players))
    flip, react, submit, advance = ref.flip, bots.react, ref.submit, ref.advance
    if log is not None:
        log.extend(game.events)  # game-started and dealt: what makes the log replayable
    flips = matches = 0
    snap_on = False
    out = eliminated()  # changes only with a ruling or a flip that puts someone out
    t = game.t
    # The hot loop of the simulator and the engine benchmark: most flips are one
    # Flipped event and no call, so that path touches as little as it can.
    while True:
        evs = flip(t)
        if len(evs) == 1 and log is None:
            ev = evs[0]
            flips += 1
            flippers: Sequence[int] = (ev.seat,)
            flipped: Sequence[int] = (pile_of[ev.seat],)
            pool_on = ev.pool_match
            fresh = ev.match
            matches += fresh
        else:  # a refresh, Speed Snap's many flips, the end of the game, or a log to keep
            flippers, flipped = [], []
            pool_on = fresh = False
            for ev in evs:
                if type(ev) is Flipped:
                    flips += 1
                    flippers.append(ev.seat)
                    flipped.append(pile_of[ev.seat])
                    if ev.match:
                        matches += 1
                        fresh = True
                    pool_on = pool_on or ev.pool_match
            _count(res, evs, log)
            if game.is_over():
                break
            out = eliminated()
        if fresh:
            snap_on = True
        elif snap_on:  # a match nobody claimed stays on show until it is covered
            snap_on = on_show(rules.SNAP)
        horizon = t + pace
        slap_on = has_slap and on_show(rules.SLAP)
        calls = react(t, horizon, out, flippers, snap_on, pool_on, slap_on, showing, flipped)
        if calls:
            res.calls += len(calls)
            for call in calls:
                submit(call)
            deadline = ref.next_deadline
            if deadline is not None and deadline > horizon:
                horizon = deadline  # the dealer waits for the ruling before flipping again
            evs = advance(horizon)
            _count(res, evs, log)
            if game.is_over():
                break
            if evs:
                out = eliminated()
                if snap_on:
                    snap_on = on_show(rules.SNAP)
        t = horizon
    res.flips, res.matches = flips, matches
    _count(res, ref.close(), log)
    res.pool_at_end = game.pool_size()
    if game.winner is not None:
        # Seats are reported from the dealer's left (seat 1 flips first).
        res.winner_seat = (game.players.index(game.winner) - game.dealer - 1) % players
    return res


def _count(res: GameResult, evs: Sequence[Any], log: list[Any] | None) -> None:
    if log is not None:
        log.extend(evs)
    for ev in evs:
        kind = type(ev)
        if kind is Flipped or kind is rules.Refreshed:
            continue
        if kind is rules.SnapWon:
            if ev.kind == rules.SLAP:
                res.slaps_won += 1
            else:
                res.snaps_won += 1
        elif kind is rules.TieToPool:
            res.ties += 1
            if ev.pool == sum(ev.counts):
                res.pools_formed += 1
        elif kind is rules.PoolTied:
            res.ties += 1
        elif kind is rules.WrongCall:
            res.wrong_calls += 1
            moved = ev.from_pile + ev.from_stack
            if moved and ev.pool == moved:
                res.pools_formed += 1
        elif kind is rules.PoolWon:
            res.pools_won += 1
        elif kind is rules.CallIgnored:
            res.ignored += 1
        elif kind is rules.GameOver:
            res.seconds = ev.t
            res.capped = ev.reason in ("flip cap", "repeat")
