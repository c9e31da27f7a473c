"""The variants of Snap, each a small subclass of ``Game`` selectable by name.

``get(name)`` gives the class, ``names()`` lists them, ``create(name, players,
seed, ...)`` builds a game, and ``from_started(GameStarted)`` rebuilds one from
a log. Each variant overrides only the hooks it needs; the rules for players
are in docs/rules.md.
"""

from __future__ import annotations

import difflib
from typing import Any, Mapping, Sequence

from .cards import Card, Rank, deck_themes, picture_deck
from .errors import UserError
from .vocabulary import game_word, spoken_word
from .rules import (
    POOL, SLAM, SLAP, SNAP, WRONG, Flipped, Forfeit, Game, GameStarted, Options, RulesError, View, _WORDS,
)

__all__ = [
    "UnknownVariant", "get", "names", "create", "from_started", "describe",
    "PictureSnap", "SpeedSnap", "DoubleSnap", "SinglePileSnap", "SlapjackSnap", "SilentSnap",
    "AnimalSnap", "ANIMAL_NOISES",
]


class UnknownVariant(UserError):
    """A variant name nobody knows."""


class PictureSnap(Game):
    """Themed decks; a match is an identical picture. Deck files: voicesnap/data/decks."""

    variant = "picture"
    title = "Picture Snap"

    def __init__(self, players: Sequence[str], seed: int, options: Options | None = None,
                 dealer: int = 0, t: float = 0.0, deck: str = "farm") -> None:
        self.theme = deck
        super().__init__(players, seed, options, dealer, t)

    def _new_deck(self) -> list[Card]:
        return picture_deck(self.theme)

    def rule_words(self) -> str:
        return f"Picture Snap with the {self.theme} deck: snap when two piles show the same picture."

    def config(self) -> tuple[tuple[str, str], ...]:
        return (("deck", self.theme),)

    @classmethod
    def config_kwargs(cls, config: Mapping[str, str]) -> dict[str, Any]:
        return {"deck": config.get("deck", "farm")}


class SpeedSnap(Game):
    """Everyone flips at once: one ``flip(t)`` turns a card for every player still in."""

    variant = "speed"
    title = "Speed Snap"

    def __init__(self, players: Sequence[str], seed: int, options: Options | None = None,
                 dealer: int = 0, t: float = 0.0) -> None:
        if options is not None and options.pool_claim == "flipper":  # (it played as "anyone", unsaid)
            raise RulesError("Speed Snap has no single flipper (everyone turns a card at once), so the pool "
                             "cannot be the flipper's alone: leave the pool claim to anyone")
        super().__init__(players, seed, options, dealer, t)

    def rule_words(self) -> str:
        return "Speed Snap: snap when two piles show the same rank, once everyone's card is turned."

    def whose_turn(self) -> str | None:
        return None  # everyone flips at once

    def flip(self, t: float) -> list[Any]:
        if self.over:
            raise RulesError("the game is over; start a new game to flip again")
        self.t = t
        out: list[Any] = []
        flipped: list[int] = []
        for step in range(self.n):  # listed clockwise from the dealer's left
            seat = (self.dealer + 1 + step) % self.n
            if self.out[seat]:
                continue
            if not self._flip_one(seat, t, out):
                break
            flipped.append(seat)
        # Judge the match flags on the table after everyone has flipped, not card by card.
        showing: dict[Any, int] = {}
        for top in self.tops:
            if top is not None:
                showing[top.face] = showing.get(top.face, 0) + 1
        for i, ev in enumerate(out):
            if isinstance(ev, Flipped) and ev.match != (showing[ev.card.face] > 1):
                out[i] = Flipped(ev.t, ev.seat, ev.player, ev.card, ev.flip, not ev.match, ev.pool_match)
        self.flipped = tuple(flipped)
        if not self.over:
            self._end_turn(t, out)
        self.events.extend(out)
        return out


class DoubleSnap(Game):
    """The loser of a snap also gives the winner one face-down card.

    The loser is the player, other than the winner, whose card completed the
    match: the owner of the matched pile whose top card was flipped last.
    """

    variant = "double"
    title = "Double Snap"

    def rule_words(self) -> str:
        return ("Double Snap: whoever wins a snap also takes a face-down card from the player whose card "
                "made the match.")

    def view(self) -> View:
        return View(self.t, self.flips, tuple(self.tops), tuple(self.placed), self.flipped,
                    tuple(self.top_flip))

    def snap_won(self, t: float, player: str, kind: str, piles: Any, view: View) -> list[Any]:
        piles = tuple(piles)
        out = super().snap_won(t, player, kind, piles, view)
        if self.over:
            return out
        winner = self.seat_of[player]
        losers = [p for p in piles if p != winner]
        if losers:
            loser = max(losers, key=lambda p: view.extra[p] if view.extra else 0)
            if not self.out[loser] and self.down[loser]:  # a loser who is out has nothing to give
                out.extend(self.apply(Forfeit(t, self.players[loser], player, 1)))
        return out


class SinglePileSnap(Game):
    """One central pile: every flip lands on it; a match is the top card against the one below.

    Players hold only face-down cards, so there is no refresh: flipping your
    last card puts you out (as does a wrong call that costs your last card).
    """

    variant = "single-pile"
    title = "Single Pile Snap"

    def rule_words(self) -> str:
        return ("Single Pile Snap: every card goes on one centre pile; snap when the top card matches the card "
                "below it. Turning your last card puts you out.")

    def _pile_count(self) -> int:
        return 1

    def _pile_for(self, seat: int) -> int:
        return 0

    def holds(self, seat: int) -> int:
        return len(self.down[seat])

    def view(self) -> View:
        pile = self.piles[0]
        return View(self.t, self.flips, tuple(self.tops), tuple(self.placed), self.flipped,
                    (pile[-2] if len(pile) > 1 else None,))

    def _judge_snap(self, view: View) -> tuple[str, tuple[int, ...]]:
        top, below = view.tops[0], view.extra[0]
        if top is None or below is None or top.face != below.face:
            return ("wrong", ())
        if self.ruled[0] >= view.pos[0] - 1:  # taken: for this flip (ignored) or before it (wrong)
            return ("taken", ()) if self.ruled_flip[0] == view.flip else ("wrong", ())
        return ("valid", (0,))

    def _flip_one(self, seat: int, t: float, out: list[Any]) -> bool:
        assert self.down[seat], "a single-pile player with no cards should be out"
        pile = self.piles[0]
        below = pile[-1] if pile else None
        ok = super()._flip_one(seat, t, out)
        if ok:  # a match here is the card below, not another pile
            ev = out[-1]
            match = below is not None and below.face == ev.card.face
            if match != ev.match:
                out[-1] = type(ev)(ev.t, ev.seat, ev.player, ev.card, ev.flip, match, ev.pool_match)
        return ok


class SlapjackSnap(Game):
    """Slapjack crossover: "Slap!" on any Jack showing wins every pile topped by a Jack.

    Snap is played as usual; a slap needs no match, only a Jack on top. A slap
    with no Jack showing is a wrong call.
    """

    variant = "slapjack"
    title = "Slapjack"
    words = {**_WORDS, "slap": SLAP}

    def rule_words(self) -> str:
        return ("Slapjack: call slap whenever any pile shows a Jack, to win every pile a Jack tops; a slap with "
                "no Jack showing is a wrong call. Snap and snap pool as usual.")

    def _judge_slap(self, view: View) -> tuple[str, tuple[int, ...]]:
        valid: list[int] = []
        taken = False
        for face, p, gone in self._live_tops(view):
            if face == Rank.JACK:
                if gone:
                    taken = True
                else:
                    valid.append(p)
        if valid:
            return ("valid", tuple(valid))
        return ("taken", ()) if taken else ("wrong", ())


class SilentSnap(Game):
    """The call is a slam on the table, not a word; spoken calls are ignored.

    A slam claims a snap if one is showing, else the pool if the flip matches it.
    """

    variant = "silent"
    title = "Silent Snap"
    words = {"slam": SLAM}

    def rule_words(self) -> str:
        return "Silent Snap: the only call is a slam on the table, for a snap or the pool; spoken calls are ignored."


ANIMAL_NOISES = ("moo", "woof", "meow", "baa", "oink", "quack")


class AnimalSnap(Game):
    """Each player's snap call is their own animal noise; "snap pool" claims the pool.

    Saying another player's noise is a wrong call; saying "snap" is ignored.
    """

    variant = "animal"
    title = "Animal Snap"

    def __init__(self, players: Sequence[str], seed: int, options: Options | None = None,
                 dealer: int = 0, t: float = 0.0, animals: Mapping[str, str] | None = None) -> None:
        players = tuple(players)
        chosen = dict(animals or {})
        unknown = sorted(set(chosen) - set(players))
        if unknown:
            raise RulesError(f"animal noises given for {', '.join(unknown)}, who are not playing")
        spare = [a for a in ANIMAL_NOISES if a not in chosen.values()]
        for name in players:
            if name not in chosen:
                if not spare:
                    raise RulesError("not enough animal noises to go round; give each player one")
                chosen[name] = spare.pop(0)
        noises = [spoken_word(chosen[p]) for p in players]
        if len(set(noises)) != len(noises):
            raise RulesError("two players share an animal noise; each player needs their own")
        for noise in noises:
            why = "it is empty" if not noise else game_word(noise)
            if why is not None:
                raise RulesError(f"{chosen[players[noises.index(noise)]]!r} cannot be an animal noise ({why}); "
                                 "pick a word like 'moo'")
        self.animals = dict(zip(players, noises))
        self._noise_of = noises
        self._seat_of_noise = {noise: s for s, noise in enumerate(noises)}
        super().__init__(players, seed, options, dealer, t)

    def rule_words(self) -> str:
        return ("Animal Snap: call your own animal noise instead of snap; another player's noise is a wrong "
                "call, and snap pool claims the pool.")

    def config(self) -> tuple[tuple[str, str], ...]:
        return tuple(self.animals.items())

    @classmethod
    def config_kwargs(cls, config: Mapping[str, str]) -> dict[str, Any]:
        return {"animals": dict(config)}

    def _spoken(self) -> tuple[str, ...]:
        return (*self._noise_of, *_WORDS)

    def call_kind(self, seat: int, word: str) -> str | None:
        if word == self._noise_of[seat]:
            return SNAP
        if word in self._seat_of_noise:
            return WRONG
        if _WORDS.get(word) == POOL:
            return POOL
        return None


_VARIANTS: dict[str, type[Game]] = {
    "classic": Game,
    "picture": PictureSnap,
    "speed": SpeedSnap,
    "double": DoubleSnap,
    "single-pile": SinglePileSnap,
    "slapjack": SlapjackSnap,
    "silent": SilentSnap,
    "animal": AnimalSnap,
}
_ALIASES = {"standard": "classic", "snap": "classic", "single": "single-pile", "single pile": "single-pile"}


def names() -> list[str]:
    """Every variant name, classic first."""
    return list(_VARIANTS)


def describe(name: str) -> str:
    """The variant's one-line rule, for help texts."""
    doc = (get(name).__doc__ or "").strip()
    return doc.splitlines()[0] if doc else name


def get(name: str) -> type[Game]:
    """The game class for a variant name (case and "snap" suffix forgiven)."""
    key = name.strip().lower().replace("_", "-")
    key = key.removesuffix(" snap").removesuffix("-snap") or key
    key = _ALIASES.get(key, key)
    if key in _VARIANTS:
        return _VARIANTS[key]
    close = difflib.get_close_matches(key, list(_VARIANTS), n=1)
    hint = f" Did you mean {close[0]!r}?" if close else ""
    raise UnknownVariant(f"no Snap variant called {name!r}.{hint} Choose one of: {', '.join(_VARIANTS)}")


def create(name: str, players: Sequence[str], seed: int, options: Options | None = None,
           dealer: int = 0, t: float = 0.0, **config: Any) -> Game:
    """Build a game of the named variant; ``config`` is the variant's own settings
    (``deck="fruit"`` for picture, ``animals={"Ann": "moo"}`` for animal)."""
    cls = get(name)
    try:
        return cls(players, seed, options, dealer, t, **config)
    except TypeError as exc:
        if config:
            raise RulesError(f"variant {cls.variant!r} takes no {'setting' if len(config) == 1 else 'settings'} {sorted(config)}") from exc
        raise


def from_started(ev: GameStarted) -> Game:
    """Rebuild the game a log's ``GameStarted`` record describes (before any flip)."""
    cls = get(ev.variant)
    kwargs: dict[str, Any] = {}
    if ev.config:
        to_kwargs = getattr(cls, "config_kwargs", None)
        if to_kwargs is None:
            raise RulesError(f"variant {ev.variant!r} takes no settings, the log gives {ev.config!r}")
        kwargs = to_kwargs(dict(ev.config))
    return cls(ev.players, ev.seed, ev.options, ev.dealer, ev.t, **kwargs)


def themes() -> list[str]:
    """Picture Snap deck themes."""
    return deck_themes()
