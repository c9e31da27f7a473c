"""Sessions: several games in a row, scored best-of-N or first-to-N.

The winner of each game deals the next (so the player on their left flips
first). A best-of-N session ends as soon as someone has won more than half of
N games; if N games are played and the lead is shared (possible with three or
more players), the tied leaders play sudden-death games, just them, until one
of them wins one. First-to-N always has a single winner.
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass
from typing import Any, Sequence

from .events import event
from .rules import Game, Options, RulesError
from . import variants

__all__ = ["SessionError", "Format", "parse_format", "Session", "GameScored", "SessionOver", "SuddenDeath"]


class SessionError(RulesError):
    """An impossible session format or an out-of-order session action."""


@dataclass(frozen=True)
class Format:
    kind: str  # "best-of" or "first-to"
    n: int

    def __str__(self) -> str:
        return f"{self.kind}-{self.n}"

    def words(self) -> str:
        """The format as read aloud: "one game", "best of 3 games", "first to 4 games" ("best-of-1" was
        printed as is, an internal id a screen reader spells out)."""
        if self.n == 1:  # best of 1 and first to 1 are both one game ("each first to 1 game" read oddly)
            return "one game"
        return f"best of {self.n} games" if self.kind == "best-of" else f"first to {self.n} games"

    @property
    def target(self) -> int:
        """Wins that end the session at once."""
        return self.n // 2 + 1 if self.kind == "best-of" else self.n


def parse_format(text: str) -> Format:
    """ "best-of-3", "best of 5", "first-to-4", "single" (one game) -> Format."""
    key = text.strip().lower()
    if key in ("single", "one", "1"):
        return Format("best-of", 1)
    m = re.fullmatch(r"(best|first)[\s_-]?(of|to)[\s_-]?(\d+)", key)
    if not m or (m.group(1), m.group(2)) not in (("best", "of"), ("first", "to")):
        raise SessionError(f"session format {text!r} is unknown; use best-of-3, best-of-5 or first-to-N")
    n = int(m.group(3))
    if not 1 <= n <= 99:
        raise SessionError(f"session length {n} is impossible; use 1 to 99")
    return Format(f"{m.group(1)}-{m.group(2)}", n)


@event("game-scored")
@dataclass(frozen=True, slots=True)
class GameScored:
    t: float
    game: int  # 1-based game number in the session
    winner: str
    scores: tuple[int, ...]  # wins per session player, in seat order
    sudden_death: bool


@event("sudden-death")
@dataclass(frozen=True, slots=True)
class SuddenDeath:
    """A best-of session ended level: these tied leaders play on, and the next game's winner wins."""

    t: float
    players: tuple[str, ...]


@event("session-over")
@dataclass(frozen=True, slots=True)
class SessionOver:
    t: float
    winner: str
    scores: tuple[int, ...]
    games: int
    sudden_death: bool


class Session:
    """Deals each game of a session and keeps the score.

    ``new_game()`` builds the next game (its own seed drawn from the session
    seed, the last winner dealing); play it, then ``record(game)``.
    """

    def __init__(
        self,
        players: Sequence[str],
        format: str | Format = "best-of-3",
        seed: int = 0,
        variant: str = "classic",
        options: Options | None = None,
        **config: Any,
    ) -> None:
        self.format = format if isinstance(format, Format) else parse_format(format)
        self.players = tuple(players)
        self.variant = variants.get(variant).variant
        self.options = options
        self.config = config
        self.seed = seed
        self._rng = random.Random(seed)
        self.scores = [0] * len(self.players)
        self.games = 0
        self.dealer = self.players[0]
        self.contenders: tuple[str, ...] = self.players
        self.sudden_death = False
        self.winner: str | None = None
        self.events: list[Any] = []
        self._current: Game | None = None
        # Validate the players now (count, duplicates) with a throwaway game.
        variants.create(self.variant, self.players, 0, options, 0, **config)

    def is_over(self) -> bool:
        return self.winner is not None

    def new_game(self, t: float = 0.0) -> Game:
        if self.winner is not None:
            raise SessionError(f"the session is over: {self.winner} won; start a new session")
        if self._current is not None and not self._current.is_over():
            raise SessionError("finish (and record) the current game before dealing the next")
        seats = self.contenders
        dealer = seats.index(self.dealer) if self.dealer in seats else 0
        game = variants.create(self.variant, seats, self._rng.getrandbits(63), self.options,
                               dealer, t, **self.config)
        self._current = game
        return game

    def record(self, game: Game) -> list[Any]:
        """Score a finished game; returns GameScored and, at the end, SessionOver."""
        if game is not self._current or not game.is_over() or game.winner is None:
            raise SessionError("record the session's current game once it is over")
        self._current = None
        self.games += 1
        winner = game.winner
        self.scores[self.players.index(winner)] += 1
        self.dealer = winner
        t = game.t
        out: list[Any] = [GameScored(t, self.games, winner, tuple(self.scores), self.sudden_death)]
        if self.sudden_death:
            self.winner = winner
        elif max(self.scores) >= self.format.target:
            self.winner = winner
        elif self.format.kind == "best-of" and self.games >= self.format.n:
            best = max(self.scores)
            leaders = tuple(p for p, s in zip(self.players, self.scores) if s == best)
            if len(leaders) == 1:
                self.winner = leaders[0]
            else:
                self.sudden_death = True
                self.contenders = leaders
                out.append(SuddenDeath(t, leaders))
        if self.winner is not None:
            out.append(SessionOver(t, self.winner, tuple(self.scores), self.games, self.sudden_death))
        self.events.extend(out)
        return out
