"""The rules of Snap as a pure, deterministic state machine (seed in, events out).

``Game`` is the table: face-down stacks, face-up piles, the Snap pool, whose
turn it is and who is out. It changes only through ``flip(t)`` and through
rulings the referee hands to ``apply(event)``; both return the typed events
that describe the change, stamped with audio-clock time ``t``. Replaying a
game's events through ``apply``/``flip`` rebuilds the same table (gamelog).

Timing is the referee's business (voicesnap.referee). The game offers it a
cheap ``view()`` of the table after each flip and judges a call against such a
view (``judge``), so late calls are ruled on the table as it was at their
onset. Every face-up pile keeps two counters of absolute positions: ``placed``
(cards ever laid on it) and ``base`` (cards ever taken off its bottom). A view
records each pile's ``placed``; a ruling made later takes only the cards that
were there at the view ("the pile as it was"), and a top card is *gone* once
a ruling has taken it (``ruled[p] >= view.pos[p]``).

Variants (voicesnap.variants) subclass ``Game`` and override a few hooks:
``_new_deck`` (what is dealt), ``_pile_count``/``pile_of`` (whose flips go
where), ``flip`` (who flips), ``call_kind`` (which words are calls),
``_judge_snap`` & co. (what counts as a match) and ``snap_won`` (extra
penalties).

All the rule choices are listed in docs/rules.md.
"""

from __future__ import annotations

import random
from collections import Counter, deque
from dataclasses import dataclass
from typing import Any, Iterable, Literal, NamedTuple, Sequence

from .cards import Card, standard_deck
from .errors import UserError
from .events import event

__all__ = [
    "RulesError", "CallError", "Options", "View", "TableState", "Game",
    "GameStarted", "Dealt", "Flipped", "Refreshed", "SnapWon", "TieToPool", "PoolTied",
    "WrongCall", "PoolWon", "CallIgnored", "Forfeit", "Eliminated", "GameOver",
    "MIN_PLAYERS", "MAX_PLAYERS", "CALL_KINDS", "NOT_A_CALL",
]

MIN_PLAYERS, MAX_PLAYERS = 2, 6

# Canonical call kinds the rules judge (variants map spoken words onto these).
SNAP, POOL, SLAP, SLAM = "snap", "pool", "slap", "slam"
WRONG = "wrong"  # a word that is a call in this variant, but not this player's
CALL_KINDS = (SNAP, POOL, SLAP, SLAM)
# Words the referee accepts as Call.kind -> canonical kind in the classic game.
_WORDS = {"snap": SNAP, "snap pool": POOL, "pool": POOL}


class RulesError(UserError):
    """An impossible game set-up or action (wrong player count, duplicate names, ...)."""


class CallError(RulesError):
    """A call the referee cannot accept: unknown player, or one already out."""


# --------------------------------------------------------------------------- options


@dataclass(frozen=True)
class Options:
    """Table rules a group can choose; defaults are the documented house rules."""

    tie_window: float = 0.100  # seconds between call onsets that count as "the same time"
    pool_claim: Literal["anyone", "flipper"] = "anyone"  # who may call "Snap pool!"
    flipper_may_call: bool = True  # may a player call on a card they just flipped?
    max_flips: int = 3000  # a game ends by the tiebreak after this many flips
    detect_repeats: bool = True  # end a game whose whole table repeats at a refresh

    def __post_init__(self) -> None:
        if not (0.0 <= self.tie_window <= 2.0):
            raise RulesError(f"tie window {self.tie_window} s is impossible; use 0 to 2 seconds (default 0.1)")
        if self.pool_claim not in ("anyone", "flipper"):
            raise RulesError(f"pool claim {self.pool_claim!r} is unknown; use 'anyone' or 'flipper'")
        if self.max_flips < 1:
            raise RulesError(f"max flips {self.max_flips} is impossible; use a positive number")


# --------------------------------------------------------------------------- events
# Every event carries ``t``: seconds on the audio clock.


@event("game-started")
@dataclass(frozen=True, slots=True)
class GameStarted:
    t: float
    players: tuple[str, ...]
    seed: int
    dealer: int
    variant: str
    options: Options
    config: tuple[tuple[str, str], ...] = ()  # variant settings (deck theme, animals)


@event("dealt")
@dataclass(frozen=True, slots=True)
class Dealt:
    t: float
    dealer: int
    cards: tuple[int, ...]  # face-down cards per seat after the deal
    first: int  # seat that flips first


@event("flipped")
@dataclass(frozen=True, slots=True)
class Flipped:
    t: float
    seat: int
    player: str
    card: Card
    flip: int  # 1-based serial of this flip in the game
    match: bool  # the card shows the same face as another pile (a snap is on)
    pool_match: bool  # the card matches the pool's top card


def _flipped_factory() -> Any:
    """A Flipped maker for the hot path: sets the slots directly (about twice as
    fast as the generated frozen __init__); the result is an ordinary Flipped."""
    new = object.__new__
    a, b, c, d, e, f, g = (getattr(Flipped, n).__set__ for n in Flipped.__slots__)

    def make(t: float, seat: int, player: str, card: Card, flip: int, match: bool, pool_match: bool) -> Flipped:
        ev = new(Flipped)
        a(ev, t)
        b(ev, seat)
        c(ev, player)
        d(ev, card)
        e(ev, flip)
        f(ev, match)
        g(ev, pool_match)
        return ev

    return make


_make_flipped = _flipped_factory()


@event("refreshed")
@dataclass(frozen=True, slots=True)
class Refreshed:
    t: float
    seat: int
    player: str
    cards: int  # face-up cards turned over as the new face-down stack


@event("snap-won")
@dataclass(frozen=True, slots=True)
class SnapWon:
    t: float  # onset of the winning call
    player: str
    kind: str  # "snap" (or "slap" in Slapjack, "slam" in Silent Snap)
    piles: tuple[int, ...]  # piles collected
    counts: tuple[int, ...]  # cards taken from each of them
    cards: int
    flip: int = 0  # the flip the call answered (the table at its onset)


@event("tie-to-pool")
@dataclass(frozen=True, slots=True)
class TieToPool:
    t: float  # onset of the first of the tied calls
    players: tuple[str, ...]
    kind: str
    piles: tuple[int, ...]
    counts: tuple[int, ...]
    pool: int  # pool size afterwards
    flip: int = 0


@event("pool-tied")
@dataclass(frozen=True, slots=True)
class PoolTied:
    t: float
    players: tuple[str, ...]
    flip: int  # the flip whose pool match is spent


@event("wrong-call")
@dataclass(frozen=True, slots=True)
class WrongCall:
    t: float
    player: str
    kind: str
    from_pile: int  # face-up cards moved to the pool
    from_stack: int  # face-down cards moved to the pool (when the face-up pile was empty)
    pool: int  # pool size afterwards
    flip: int = 0


@event("pool-won")
@dataclass(frozen=True, slots=True)
class PoolWon:
    t: float
    player: str
    cards: int
    flip: int


@event("call-ignored")
@dataclass(frozen=True, slots=True)
class CallIgnored:
    t: float
    player: str
    kind: str
    reason: str


def _ignored_factory() -> Any:
    """A CallIgnored maker, as for Flipped: ignored calls are most rulings with many players."""
    new = object.__new__
    a, b, c, d = (getattr(CallIgnored, n).__set__ for n in CallIgnored.__slots__)

    def make(t: float, player: str, kind: str, reason: str) -> CallIgnored:
        ev = new(CallIgnored)
        a(ev, t)
        b(ev, player)
        c(ev, kind)
        d(ev, reason)
        return ev

    return make


_make_ignored = _ignored_factory()


@event("forfeit")
@dataclass(frozen=True, slots=True)
class Forfeit:
    """Double Snap: the loser of a snap gives the winner a face-down card."""

    t: float
    player: str
    to: str
    cards: int


@event("eliminated")
@dataclass(frozen=True, slots=True)
class Eliminated:
    t: float
    seat: int
    player: str


@event("game-over")
@dataclass(frozen=True, slots=True)
class GameOver:
    t: float
    winner: str
    reason: str  # "last player", "flip cap", "repeat", "all out"
    cards: tuple[int, ...]  # cards held per seat at the end


RULINGS = (SnapWon, TieToPool, PoolTied, WrongCall, PoolWon, CallIgnored)
NOT_A_CALL = "not a call in "  # a CallIgnored's reason, then the variant: a word this game does not take as a call


# --------------------------------------------------------------------------- views


class View(NamedTuple):
    """The table after one flip, as the referee needs it to judge late calls."""

    t: float
    flip: int
    tops: tuple[Card | None, ...]  # top card of each face-up pile
    pos: tuple[int, ...]  # each pile's ``placed`` counter
    flippers: tuple[int, ...]  # seats that flipped at this flip
    extra: tuple[Any, ...] = ()  # what a variant needs besides (Single Pile: the card below)


_new_tuple = tuple.__new__


@dataclass(frozen=True)
class TableState:
    """A read-only snapshot of the table, for display, tests and bots."""

    players: tuple[str, ...]
    stacks: tuple[tuple[Card, ...], ...]  # face-down, top first
    piles: tuple[tuple[Card, ...], ...]  # face-up, bottom first (top last)
    pool: tuple[Card, ...]  # bottom first
    active: int
    eliminated: tuple[bool, ...]
    flips: int
    winner: str | None

    @property
    def total(self) -> int:
        return sum(map(len, self.stacks)) + sum(map(len, self.piles)) + len(self.pool)

    def held(self, seat: int) -> int:
        """Cards a player holds: their stack and, in games with own piles, their pile."""
        own_pile = len(self.piles[seat]) if len(self.piles) == len(self.players) else 0
        return len(self.stacks[seat]) + own_pile


# --------------------------------------------------------------------------- game


class Game:
    """One game of Snap. ``Game(players, seed, options, dealer)`` deals at once."""

    variant = "classic"
    title = "Classic Snap"  # the variant's name as read aloud (``variant`` is its id: "single-pile")
    words: dict[str, str] = _WORDS

    def __init__(
        self,
        players: Sequence[str],
        seed: int,
        options: Options | None = None,
        dealer: int = 0,
        t: float = 0.0,
    ) -> None:
        players = tuple(players)
        if not (MIN_PLAYERS <= len(players) <= MAX_PLAYERS):
            raise RulesError(f"Snap needs {MIN_PLAYERS} to {MAX_PLAYERS} players, not {len(players)}")
        for name in players:
            if not isinstance(name, str) or not name.strip():
                raise RulesError(f"player names must be non-empty text, not {name!r}")
        folded = [p.casefold() for p in players]
        dupes = sorted({p for p in players if folded.count(p.casefold()) > 1})
        if dupes:
            raise RulesError(f"every player needs a different name; {', '.join(dupes)} appears twice")
        if not isinstance(dealer, int) or not (0 <= dealer < len(players)):
            raise RulesError(f"dealer must be a seat from 0 to {len(players) - 1}, not {dealer!r}")
        if not isinstance(seed, int):
            raise RulesError(f"seed must be a whole number, not {seed!r}")
        self.players = players
        self.seat_of = {p: i for i, p in enumerate(players)}
        self.seed = seed
        if options is not None and not isinstance(options, Options):
            raise RulesError(f"options must be voicesnap.rules.Options, not {type(options).__name__}")
        self.options = options or Options()
        self.dealer = dealer
        n = len(players)
        self.n = n
        npiles = self._pile_count()
        self.pile_of: list[int] = [self._pile_for(s) for s in range(n)]
        self._shared_piles = npiles != n
        self._solo = [(s,) for s in range(n)]
        self.max_flips = self.options.max_flips
        self.down: list[deque[Card]] = [deque() for _ in range(n)]
        self.piles: list[list[Card]] = [[] for _ in range(npiles)]
        self.tops: list[Card | None] = [None] * npiles
        self.top_flip: list[int] = [0] * npiles  # flip serial of each top card
        self.placed: list[int] = [0] * npiles
        self.base: list[int] = [0] * npiles
        self.ruled: list[int] = [0] * npiles  # ``base`` after the last ruling on the pile
        self.ruled_flip: list[int] = [-1] * npiles  # the flip that ruling answered
        self.pool: list[Card] = []
        self.pool_spent = -1  # flip whose pool match was already claimed
        self.version = 0  # counts rulings that changed the table (for the referee's memo)
        self.out: list[bool] = [False] * n
        self.out_at: list[float | None] = [None] * n
        # For the tiebreak: cards each seat won by calls this game, and when it last won.
        self.won: list[int] = [0] * n
        self.last_won: list[float | None] = [None] * n
        self.flips = 0
        self.flipped: tuple[int, ...] = ()  # seats that made the latest flip
        self.t = t
        self.over = False
        self.winner: str | None = None
        self.reason: str | None = None
        self._seen: set[Any] = set()
        self.events: list[Any] = []
        deck = self._new_deck()
        self._deck = tuple(deck)
        self.size = len(deck)
        random.Random(seed).shuffle(deck)
        for i, card in enumerate(deck):  # one at a time, clockwise from the dealer's left
            self.down[(dealer + 1 + i) % n].appendleft(card)  # each new card lands on top
        self.active = (dealer + 1) % n
        self.events.append(
            GameStarted(t, players, seed, dealer, self.variant, self.options, self.config())
        )
        self.events.append(Dealt(t, dealer, tuple(len(d) for d in self.down), self.active))

    # ------------------------------------------------------------------ hooks

    def _new_deck(self) -> list[Card]:
        return standard_deck()

    def _pile_count(self) -> int:
        return self.n

    def _pile_for(self, seat: int) -> int:
        return seat

    def config(self) -> tuple[tuple[str, str], ...]:
        """Variant settings needed to rebuild this game from its log."""
        return ()

    def call_kind(self, seat: int, word: str) -> str | None:
        """The canonical kind of a spoken call, ``WRONG`` for a call that is not this
        player's, or None when the word is no call in this variant (ignored)."""
        return self.words.get(word)

    def _spoken(self) -> tuple[str, ...]:
        """Every word that may be a call in this variant (for ``call_words``)."""
        return tuple(self.words)

    # ------------------------------------------------------------------ public view
    # What bots, the announcer and the display may read. These accessors are the
    # stable interface; the attributes behind them (tops, pile_of, out, words,
    # animals, ...) are the engine's to change.

    def showing(self) -> tuple[Card | None, ...]:
        """The top face-up card of each pile (None where a pile is empty), by pile index."""
        return tuple(self.tops)

    def pile_index(self, seat: int) -> int:
        """The pile a seat's flips land on: its own, or 0 in Single Pile Snap."""
        return self.pile_of[seat]

    def is_out(self, seat: int) -> bool:
        """Whether the player in ``seat`` is out of this game (and may no longer call)."""
        return self.out[seat]

    def whose_turn(self) -> str | None:
        """The player who turns the next card, or None: the game is over, or (a variant) nobody's turn."""
        return None if self.over else self.players[self.active]

    def eliminated(self) -> tuple[bool, ...]:
        """``is_out`` for every seat at once."""
        return tuple(self.out)

    def pool_size(self) -> int:
        """Cards in the Snap pool (the centre), which belong to nobody."""
        return len(self.pool)

    def pool_top(self) -> Card | None:
        """The pool's top card, the one a flip must match for "Snap pool!"."""
        return self.pool[-1] if self.pool else None

    def call_words(self, seat: int) -> dict[str, str]:
        """The word this player says for each call they can make: canonical kind
        ("snap", "pool", "slap") -> word ("snap", "snap pool", "moo", "slam").

        Asking the variant (``call_kind``) rather than assuming "snap" keeps
        callers honest in Animal Snap (own noise) and Silent Snap (a slam for
        both a snap and the pool).
        """
        mine: dict[str, str] = {}
        for word in self._spoken():
            kind = self.call_kind(seat, word)
            if kind in (SNAP, POOL, SLAP):
                mine.setdefault(kind, word)
            elif kind == SLAM:
                mine.setdefault(SNAP, word)
                mine.setdefault(POOL, word)
        return mine

    def rule_words(self) -> str:
        """This variant's rule in one spoken sentence, said at the start of a sitting and by help: a player
        by ear heard only "Ann deals; Ben goes first" in Slapjack, never that "slap" wins a Jack. Classic
        Snap says nothing ("" here): the calls, said with the help, are its rule."""
        return ""

    def on_show(self, kind: str) -> bool:
        """Would a call of this canonical kind win on the table as it is now?
        (By anyone: "pool" with ``pool_claim="flipper"`` is judged for the flipper.)"""
        seat = self.flipped[0] if self.flipped else self.active
        return self.judge(kind, seat, self.view())[0] == "valid"

    # ------------------------------------------------------------------ queries

    def is_over(self) -> bool:
        return self.over

    def holds(self, seat: int) -> int:
        """Cards a player holds (face-down stack and own face-up pile)."""
        held = len(self.down[seat])
        if len(self.piles) == self.n:
            held += len(self.piles[seat])
        return held

    def total(self) -> int:
        """Cards on the table: always the deck size (conservation)."""
        return sum(map(len, self.down)) + sum(map(len, self.piles)) + len(self.pool)

    def check(self, full: bool = False) -> None:
        """Raise AssertionError unless the invariants hold: the deck size on the table
        (with ``full``, the very cards dealt), counters in step, and exactly the
        players still in holding cards."""
        if self.total() != self.size:
            raise AssertionError(f"{self.total()} cards on the table, expected {self.size}")
        if full:
            here = Counter(c for part in (*self.down, *self.piles, self.pool) for c in part)
            if here != Counter(self._deck):
                raise AssertionError(f"cards changed: {here - Counter(self._deck)} appeared")
        for p, pile in enumerate(self.piles):
            if self.placed[p] - self.base[p] != len(pile):
                raise AssertionError(f"pile {p}'s counters are out of step")
            if self.tops[p] is not (pile[-1] if pile else None):
                raise AssertionError(f"pile {p}'s top card is out of step")
        for s in range(self.n):
            if self.out[s] != (self.out_at[s] is not None):
                raise AssertionError(f"{self.players[s]}'s out time is out of step")
            if self.out[s] == (self.holds(s) > 0):
                state = "is out but holds cards" if self.out[s] else "holds no cards but is still in"
                raise AssertionError(f"{self.players[s]} {state}")

    @property
    def state(self) -> TableState:
        return TableState(
            players=self.players,
            stacks=tuple(tuple(d) for d in self.down),
            piles=tuple(tuple(p) for p in self.piles),
            pool=tuple(self.pool),
            active=self.active,
            eliminated=tuple(self.out),
            flips=self.flips,
            winner=self.winner,
        )

    def view(self) -> View:
        # tuple.__new__ skips the namedtuple's Python-level __new__: this runs every flip.
        return _new_tuple(View, (self.t, self.flips, tuple(self.tops), tuple(self.placed), self.flipped, ()))

    def legal_calls(self, seat: int | None = None) -> set[str]:
        """Canonical kinds that would win right now (live table, no timing)."""
        view = self.view()
        seat = self.active if seat is None else seat
        return {k for k in (SNAP, POOL, SLAP) if self.judge(k, seat, view)[0] == "valid"}

    def call_is_valid(self, player: str, word: str) -> bool:
        """Would this call win (or tie) on the table as it is now?"""
        seat = self._seat(player)
        kind = self.call_kind(seat, word)
        if kind is None or kind == WRONG or self.out[seat]:
            return False
        return self.judge(kind, seat, self.view())[0] == "valid"

    def copy(self) -> "Game":
        """An independent copy (cards are immutable and shared)."""
        new = object.__new__(type(self))
        new.__dict__.update(self.__dict__)
        new.down = [deque(d) for d in self.down]
        new.piles = [list(p) for p in self.piles]
        for name in ("tops", "top_flip", "placed", "base", "ruled", "ruled_flip", "pool", "out", "out_at",
                     "won", "last_won", "events"):
            setattr(new, name, list(getattr(self, name)))
        new._seen = set(self._seen)
        return new

    def _seat(self, player: str) -> int:
        try:
            return self.seat_of[player]
        except KeyError:
            raise CallError(
                f"{player!r} is not playing; the players are {', '.join(self.players)}"
            ) from None

    # ------------------------------------------------------------------ flipping

    def flip(self, t: float) -> list[Any]:
        """The active player turns their top card face up; play passes clockwise."""
        if self.over:
            raise RulesError("the game is over; start a new game to flip again")
        self.t = t
        seat = self.active
        out: list[Any] = []
        if self._flip_one(seat, t, out):
            self.flipped = self._solo[seat]
            self._end_turn(t, out)
        self.events.extend(out)
        return out

    def _flip_one(self, seat: int, t: float, out: list[Any]) -> bool:
        """Flip one card for ``seat``; False when a repeat ended the game instead."""
        stack = self.down[seat]
        p = self.pile_of[seat]
        pile = self.piles[p]
        if not stack:
            # Refresh: turn the face-up pile over, unshuffled, as the new stack.
            count = len(pile)
            stack.extend(pile)
            pile.clear()
            self.base[p] += count
            self.tops[p] = None
            out.append(Refreshed(t, seat, self.players[seat], count))
            # A cycle of the whole table passes through the refreshes of every seat
            # in it, so checking one seat's refreshes finds it at a fraction of the cost.
            if self.options.detect_repeats and seat == self.out.index(False) and self._repeated(out):
                return False
        card = stack.popleft()
        face = card.face
        tops = self.tops
        tops[p] = None  # the card it covers cannot match it
        match = False
        for top in tops:
            if top is not None and top.face == face:
                match = True
                break
        pile.append(card)
        tops[p] = card
        self.placed[p] += 1
        flips = self.flips = self.flips + 1
        self.top_flip[p] = flips
        pool = self.pool
        out.append(_make_flipped(t, seat, self.players[seat], card, flips, match,
                                 bool(pool) and pool[-1].face == face))
        return True

    def _end_turn(self, t: float, out: list[Any]) -> None:
        if self.over:
            return
        if self._shared_piles:  # no own piles: a player who flipped their last card is out
            gone = [s for s in self.flipped if not self.out[s] and not self.down[s]]
            if gone:
                self._eliminate(gone, t, out)
            if self.over:
                return
        seat = self.active + 1
        if seat == self.n:
            seat = 0
        self.active = seat if not self.out[seat] else self._next_seat(seat)
        if self.flips >= self.max_flips:
            self._finish(t, "flip cap", out)

    def _next_seat(self, seat: int) -> int:
        """The first seat still in, clockwise after ``seat``."""
        for step in range(1, self.n + 1):
            s = (seat + step) % self.n
            if not self.out[s]:
                return s
        return seat

    def _repeated(self, out: list[Any]) -> bool:
        """True (and the game ended) when this exact table was seen at an earlier refresh."""
        key = (
            self.active,
            tuple(tuple(map(id, d)) for d in self.down),
            tuple(tuple(map(id, p)) for p in self.piles),
            tuple(map(id, self.pool)),
        )
        if key in self._seen:
            self._finish(self.t, "repeat", out)
            return True
        self._seen.add(key)
        return False

    # ------------------------------------------------------------------ judging

    def judge(self, kind: str, seat: int, view: View) -> tuple[str, tuple[int, ...]]:
        """Judge a canonical call at ``view``: ("valid", piles) | ("taken", ()) | ("wrong", ()).

        "taken" means the call was right when made but a ruling on an earlier
        call already took the cards: the referee ignores it.
        """
        if kind == SNAP:
            return self._judge_snap(view)
        if kind == POOL:
            return self._judge_pool(seat, view)
        if kind == SLAP:
            return self._judge_slap(view)
        if kind == SLAM:  # a slam claims whatever is there: a snap first, else the pool
            result = self._judge_snap(view)
            if result[0] == "valid":
                return result
            pool = self._judge_pool(seat, view)
            return pool if pool[0] != "wrong" else result
        return ("wrong", ())

    def _live_tops(self, view: View) -> list[tuple[Any, int, bool]]:
        """(face, pile, gone) for each pile showing a card at the view.

        A top a ruling took while answering this same flip is "gone" (a late
        rival is ignored, not wrong); one taken while answering an earlier flip
        was simply not there any more at this view.
        """
        ruled, ruled_flip = self.ruled, self.ruled_flip
        pos = view.pos
        return [
            (top.face, p, ruled[p] >= pos[p])
            for p, top in enumerate(view.tops)
            if top is not None and not (ruled[p] >= pos[p] and ruled_flip[p] < view.flip)
        ]

    def _judge_snap(self, view: View) -> tuple[str, tuple[int, ...]]:
        groups: dict[Any, list[tuple[int, bool]]] = {}
        for face, p, gone in self._live_tops(view):
            group = groups.get(face)
            if group is None:
                groups[face] = [(p, gone)]
            else:
                group.append((p, gone))
        if len(groups) == sum(map(len, groups.values())):
            return ("wrong", ())  # every face differs: the common false call
        valid: list[int] = []
        taken = False
        for group in groups.values():
            if len(group) < 2:
                continue
            live = [p for p, gone in group if not gone]
            if len(live) >= 2:
                valid.extend(live)
            else:
                taken = True
        if valid:
            return ("valid", tuple(sorted(valid)))
        return ("taken", ()) if taken else ("wrong", ())

    def _judge_pool(self, seat: int, view: View) -> tuple[str, tuple[int, ...]]:
        if view.flip == self.pool_spent:
            return ("taken", ())
        if not self.pool:
            return ("wrong", ())
        face = self.pool[-1].face
        for s in view.flippers:
            p = self.pile_of[s]
            top = view.tops[p]
            if top is not None and top.face == face and self.ruled[p] < view.pos[p]:
                if self.options.pool_claim == "flipper" and seat not in view.flippers:
                    return ("only the flipper may claim the pool", ())
                return ("valid", ())
        return ("wrong", ())

    def _judge_slap(self, view: View) -> tuple[str, tuple[int, ...]]:
        return ("wrong", ())

    # ------------------------------------------------------------------ rulings

    def snap_won(self, t: float, player: str, kind: str, piles: Iterable[int], view: View) -> list[Any]:
        piles = tuple(piles)
        counts = tuple(max(0, view.pos[p] - self.base[p]) for p in piles)
        return self.apply(SnapWon(t, player, kind, piles, counts, sum(counts), view.flip))

    def tie(self, t: float, players: Sequence[str], kind: str, piles: Iterable[int], view: View) -> list[Any]:
        piles = tuple(piles)
        if kind == POOL or not piles:
            return self.apply(PoolTied(t, tuple(players), view.flip))
        counts = tuple(max(0, view.pos[p] - self.base[p]) for p in piles)
        pool = len(self.pool) + sum(counts)
        return self.apply(TieToPool(t, tuple(players), kind, piles, counts, pool, view.flip))

    def pool_won(self, t: float, player: str, view: View) -> list[Any]:
        return self.apply(PoolWon(t, player, len(self.pool), view.flip))

    def wrong_call(self, t: float, player: str, kind: str, view: View) -> list[Any]:
        seat = self._seat(player)
        from_pile = from_stack = 0
        if len(self.piles) == self.n:
            p = self.pile_of[seat]
            from_pile = max(0, view.pos[p] - self.base[p])
        if from_pile == 0 and self.down[seat]:
            from_stack = 1
        pool = len(self.pool) + from_pile + from_stack
        return self.apply(WrongCall(t, player, kind, from_pile, from_stack, pool, view.flip))

    def ignored(self, t: float, player: str, kind: str, reason: str) -> list[Any]:
        ev = _make_ignored(t, player, kind, reason)  # changes nothing: skip apply()
        self.events.append(ev)
        return [ev]

    def apply(self, ev: Any) -> list[Any]:
        """Apply one ruling event; returns it plus what follows (eliminations, game over)."""
        if type(ev) is CallIgnored:
            self.events.append(ev)
            return [ev]
        if self.over:
            raise RulesError("the game is over; no more rulings")
        self._check_ruling(ev)  # all of it first: a bad ruling must not half-change the table
        self.version += 1
        out: list[Any] = [ev]
        touched: list[int] = []
        if isinstance(ev, SnapWon):
            seat = self._seat(ev.player)
            stack = self.down[seat]
            for p, count in zip(ev.piles, ev.counts):
                stack.extend(self._take(p, count, ev.flip))
                touched.extend(self._owners(p))
            self._won(seat, ev.cards, ev.t)
        elif isinstance(ev, TieToPool):
            for p, count in zip(ev.piles, ev.counts):
                self.pool.extend(self._take(p, count, ev.flip))
                touched.extend(self._owners(p))
        elif isinstance(ev, PoolTied):
            self.pool_spent = ev.flip
        elif isinstance(ev, PoolWon):
            seat = self._seat(ev.player)
            if ev.cards != len(self.pool):
                raise RulesError(f"pool holds {len(self.pool)} cards, the ruling says {ev.cards}")
            self.down[seat].extend(self.pool)
            self.pool.clear()
            self.pool_spent = ev.flip
            self._won(seat, ev.cards, ev.t)
        elif isinstance(ev, WrongCall):
            seat = self._seat(ev.player)
            if ev.from_pile:
                p = self.pile_of[seat]
                self.pool.extend(self._take(p, ev.from_pile, ev.flip))
            if ev.from_stack:
                self.pool.append(self.down[seat].popleft())
            touched.append(seat)
        elif isinstance(ev, Forfeit):
            giver, taker = self._seat(ev.player), self._seat(ev.to)
            for _ in range(ev.cards):
                self.down[taker].append(self.down[giver].popleft())
            touched.append(giver)
        elif not isinstance(ev, CallIgnored):
            raise RulesError(f"{type(ev).__name__} is not a ruling")
        gone = [s for s in sorted(set(touched)) if not self.out[s] and self.holds(s) == 0]
        if gone and not self.over:
            self._eliminate(gone, ev.t, out)
        self.events.extend(out)
        return out

    def _won(self, seat: int, cards: int, t: float) -> None:
        self.won[seat] += cards
        last = self.last_won[seat]
        if last is None or t > last:
            self.last_won[seat] = t

    def _check_ruling(self, ev: Any) -> None:
        """Raise RulesError unless ``ev`` can be applied to the table as it is."""
        kind = type(ev)  # (events are final dataclasses: dispatch on the exact type, cheaply)
        if kind is SnapWon or kind is TieToPool:
            piles, counts = ev.piles, ev.counts
            if len(piles) != len(counts) or len(set(piles)) != len(piles):
                raise RulesError(f"the ruling names piles {piles} with counts {counts}")
            for p, count in zip(piles, counts):
                if type(p) is not int or not 0 <= p < len(self.piles):
                    raise RulesError(f"there is no pile {p!r}")
                if type(count) is not int or not 0 <= count <= len(self.piles[p]):
                    raise RulesError(f"pile {p} holds {len(self.piles[p])} cards, the ruling takes {count!r}")
            if kind is TieToPool:
                return
        if kind is SnapWon or kind is PoolWon or kind is WrongCall:
            seat = self._seat(ev.player)
            if self.out[seat]:
                raise RulesError(f"{ev.player} is out of this game")
            if kind is WrongCall:
                pile = self.piles[self.pile_of[seat]] if len(self.piles) == self.n else []
                if type(ev.from_pile) is not int or not 0 <= ev.from_pile <= len(pile):
                    raise RulesError(f"{ev.player}'s pile holds {len(pile)} cards, the ruling moves {ev.from_pile!r}")
                if ev.from_stack not in (0, 1) or ev.from_stack > len(self.down[seat]):
                    raise RulesError(f"{ev.player}'s stack holds {len(self.down[seat])} cards, "
                                     f"the ruling moves {ev.from_stack!r}")
        elif kind is Forfeit:
            giver, taker = self._seat(ev.player), self._seat(ev.to)
            if type(ev.cards) is not int or not 0 <= ev.cards <= len(self.down[giver]) or giver == taker:
                raise RulesError(f"{ev.player} cannot give {ev.to} {ev.cards!r} face-down cards")

    def _owners(self, p: int) -> list[int]:
        if len(self.piles) == self.n:
            return [p]
        return []

    def _take(self, p: int, count: int, flip: int) -> list[Card]:
        """Take the bottom ``count`` cards of pile ``p`` (the pile as it was at the call)."""
        pile = self.piles[p]
        if count > len(pile) or count < 0:
            raise RulesError(f"pile {p} holds {len(pile)} cards, the ruling takes {count}")
        taken = pile[:count]
        del pile[:count]
        self.base[p] += count
        self.ruled[p] = self.base[p]
        self.ruled_flip[p] = flip
        self.tops[p] = pile[-1] if pile else None
        return taken

    def _eliminate(self, seats: list[int], t: float, out: list[Any]) -> None:
        for seat in seats:
            self.out[seat] = True
            self.out_at[seat] = t
            out.append(Eliminated(t, seat, self.players[seat]))
        left = [s for s in range(self.n) if not self.out[s]]
        if len(left) == 1:
            self._finish(t, "last player", out, winner=left[0])
        elif not left:
            self._finish(t, "all out", out)
        elif self.out[self.active] and not self.over:
            self.active = self._next_seat(self.active)

    def _finish(self, t: float, reason: str, out: list[Any], winner: int | None = None) -> None:
        if winner is None:
            winner = self._tiebreak()
        self.over = True
        self.winner = self.players[winner]
        self.reason = reason
        out.append(GameOver(t, self.winner, reason, tuple(self.holds(s) for s in range(self.n))))

    def _tiebreak(self) -> int:
        """Who wins a game the guard ended (or that put the last players out together).

        In order, each step only among those still level after the one before:

        1. most cards held (face-down stack plus own face-up pile);
        2. most cards won by calls in this game (snaps, slaps, slams, pools);
        3. the most recent winning call (the player who won cards last);
        4. lots drawn from the game's seed (so a replay draws the same).

        Steps 2 and 3 reward play. Step 4 replaces the old "seat nearest the
        dealer's left", which gave the first seat every level game: with 2
        players the guard ends about 15% of games, a third of those with equal
        holdings, most of them dead deals where no flip ever matches and nobody
        won anything. Only a draw is fair there. When everyone went out
        together, "held" is zero for all, and only those out last are considered.
        """
        return self._ranked()[0]

    def tiebreak_order(self) -> list[str]:
        """The players the tiebreak considers, best first (for display and tests)."""
        return [self.players[s] for s in self._ranked()]

    def tiebreak_step(self) -> str | None:
        """What settled a game the tiebreak decided, for players: "most cards held",
        "most cards won by calls", "the latest winning call" or "lots"; None while
        the game runs or when it was won outright (the last player holding cards)."""
        if not self.over or self.reason == "last player":
            return None
        return self._ranking()[1]

    def _ranked(self) -> list[int]:
        return self._ranking()[0]

    def _ranking(self) -> tuple[list[int], str | None]:
        order = [(self.dealer + 1 + i) % self.n for i in range(self.n)]
        last_out = max((t for t in self.out_at if t is not None), default=None)
        candidates = [s for s in order if not self.out[s]] or [s for s in order if self.out_at[s] == last_out]
        never = float("-inf")

        def key(s: int) -> tuple[int, int, float]:
            last = self.last_won[s]
            return (self.holds(s), self.won[s], never if last is None else last)

        ranked = sorted(candidates, key=key, reverse=True)  # stable: seat order within a level
        if len(ranked) < 2:
            return ranked, None
        best, second = key(ranked[0]), key(ranked[1])
        steps = ("most cards held", "most cards won by calls", "the latest winning call")
        step = next((steps[i] for i in range(3) if best[i] != second[i]), "lots")
        level = [s for s in ranked if key(s) == best]
        if len(level) > 1:
            pick = level[random.Random(f"tiebreak:{self.seed}").randrange(len(level))]
            ranked.remove(pick)
            ranked.insert(0, pick)
        return ranked, step
