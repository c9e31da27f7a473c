"""Cards as small immutable values, with the names the announcer speaks.

A card's ``face`` is what Snap compares: the rank for a standard deck (suits
never matter), the picture for a Picture Snap deck. Decks are built once per
game and the same ``Card`` objects move between stacks, piles and the pool,
so the flip path never allocates cards.
"""

from __future__ import annotations

import enum
import json
from dataclasses import dataclass, field
from importlib import resources
from typing import Any, Union

__all__ = ["Rank", "Suit", "Card", "standard_deck", "picture_deck", "deck_themes", "DeckError"]

from .errors import UserError


class DeckError(UserError):
    """A themed deck is missing or malformed."""


class Rank(enum.IntEnum):
    ACE = 1
    TWO = 2
    THREE = 3
    FOUR = 4
    FIVE = 5
    SIX = 6
    SEVEN = 7
    EIGHT = 8
    NINE = 9
    TEN = 10
    JACK = 11
    QUEEN = 12
    KING = 13

    @property
    def spoken(self) -> str:
        """The rank as the announcer says it: "Ace", "Eight", "King"."""
        return self.name.capitalize()

    @property
    def code(self) -> str:
        return _RANK_CODES[self]


_RANK_CODES = {Rank.ACE: "A", Rank.JACK: "J", Rank.QUEEN: "Q", Rank.KING: "K"}
_RANK_CODES.update({r: str(int(r)) for r in Rank if r not in _RANK_CODES})
_CODE_RANKS = {v: k for k, v in _RANK_CODES.items()}


class Suit(enum.Enum):
    CLUBS = "clubs"
    DIAMONDS = "diamonds"
    HEARTS = "hearts"
    SPADES = "spades"

    @property
    def spoken(self) -> str:
        return self.value.capitalize()

    @property
    def code(self) -> str:
        return self.name[0]


_CODE_SUITS = {s.code: s for s in Suit}

Face = Union[Rank, str]


@dataclass(frozen=True, slots=True)
class Card:
    """One card: a rank and suit, or a picture with its spoken name.

    On the wire a standard card is its short code ("8H", "10S", "QD"); a
    picture card is ``{"picture": id, "spoken": name}``.
    """

    rank: Rank | None = None
    suit: Suit | None = None
    picture: str | None = None
    name: str | None = None  # spoken name of a picture
    face: Face = field(init=False, compare=False, repr=False)

    def __post_init__(self) -> None:
        if self.picture is None:
            if self.rank is None or self.suit is None:
                raise ValueError("a standard card needs a rank and a suit")
            object.__setattr__(self, "face", Rank(self.rank))
        else:
            object.__setattr__(self, "face", self.picture)

    @property
    def face_name(self) -> str:
        """What matters for a match, as spoken: "Eight", "Cow"."""
        if self.picture is not None:
            return self.name or self.picture
        assert self.rank is not None
        return self.rank.spoken

    @property
    def spoken(self) -> str:
        """The full name: "Eight of Hearts", or the picture's name."""
        if self.picture is not None or self.suit is None:
            return self.face_name
        return f"{self.face_name} of {self.suit.spoken}"

    @property
    def code(self) -> str:
        if self.picture is not None:
            return self.picture
        assert self.rank is not None and self.suit is not None
        return self.rank.code + self.suit.code

    def __str__(self) -> str:
        return self.code

    def to_data(self) -> Any:
        if self.picture is not None:
            return {"picture": self.picture, "spoken": self.name or self.picture}
        return self.code

    @classmethod
    def from_data(cls, data: Any) -> "Card":
        if isinstance(data, dict):
            if set(data) - {"picture", "spoken"} or not isinstance(data.get("picture"), str):
                raise ValueError(f"not a picture card: {data!r}")
            spoken = data.get("spoken")
            return cls(picture=data["picture"], name=spoken if isinstance(spoken, str) else None)
        if isinstance(data, str) and len(data) >= 2:
            rank, suit = _CODE_RANKS.get(data[:-1]), _CODE_SUITS.get(data[-1])
            if rank is not None and suit is not None:
                return cls(rank, suit)
        raise ValueError(f"not a card: {data!r} (expected a code like '8H', 'QS', '10D')")


_STANDARD: tuple[Card, ...] = tuple(Card(rank, suit) for suit in Suit for rank in Rank)


def standard_deck() -> list[Card]:
    """52 cards, no jokers, in a fixed order (shuffling is the game's job).

    Cards are immutable, so every deck shares the same 52 objects."""
    return list(_STANDARD)


def deck_themes() -> list[str]:
    """Names of the themed Picture Snap decks shipped in voicesnap/data/decks."""
    folder = resources.files("voicesnap").joinpath("data", "decks")
    return sorted(p.name[:-5] for p in folder.iterdir() if p.name.endswith(".json"))


def picture_deck(theme: str) -> list[Card]:
    """A themed deck: each picture repeated ``copies`` times, 52 cards or the file's size."""
    path = resources.files("voicesnap").joinpath("data", "decks", f"{theme}.json")
    if not path.is_file():
        raise DeckError(f"no picture deck called {theme!r}; choose one of: {', '.join(deck_themes())}")
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        copies = int(data.get("copies", 4))
        pictures = data["pictures"]
        cards = [Card(picture=str(p["id"]), name=str(p["spoken"])) for p in pictures for _ in range(copies)]
    except (ValueError, KeyError, TypeError) as exc:
        raise DeckError(f"picture deck {theme!r} is malformed ({exc}); reinstall voicesnap") from exc
    ids = [str(p["id"]) for p in pictures]
    if len(set(ids)) != len(ids) or len(cards) < 2:
        raise DeckError(f"picture deck {theme!r} repeats a picture id or is empty")
    return cards
