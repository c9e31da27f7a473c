"""Cards: the standard deck, spoken names, wire codes, and the themed picture decks."""

from __future__ import annotations

import pytest

from voicesnap import events
from voicesnap.cards import Card, DeckError, Rank, Suit, deck_themes, picture_deck, standard_deck
from voicesnap.errors import UserError


def test_standard_deck_is_52_distinct_cards_without_jokers() -> None:
    deck = standard_deck()
    assert len(deck) == 52 and len(set(deck)) == 52
    assert {c.rank for c in deck} == set(Rank) and {c.suit for c in deck} == set(Suit)
    assert all(sum(1 for c in deck if c.face == r) == 4 for r in Rank)


def test_only_rank_is_the_face_of_a_standard_card() -> None:
    assert Card(Rank.EIGHT, Suit.HEARTS).face == Card(Rank.EIGHT, Suit.SPADES).face
    assert Card(Rank.EIGHT, Suit.HEARTS) != Card(Rank.EIGHT, Suit.SPADES)
    assert Card(Rank.EIGHT, Suit.HEARTS).face != Card(Rank.NINE, Suit.HEARTS).face


@pytest.mark.parametrize(
    "card, face_name, spoken, code",
    [
        (Card(Rank.ACE, Suit.SPADES), "Ace", "Ace of Spades", "AS"),
        (Card(Rank.EIGHT, Suit.HEARTS), "Eight", "Eight of Hearts", "8H"),
        (Card(Rank.TEN, Suit.DIAMONDS), "Ten", "Ten of Diamonds", "10D"),
        (Card(Rank.QUEEN, Suit.CLUBS), "Queen", "Queen of Clubs", "QC"),
        (Card(picture="cow", name="Cow"), "Cow", "Cow", "cow"),
    ],
)
def test_spoken_names_and_codes(card: Card, face_name: str, spoken: str, code: str) -> None:
    assert card.face_name == face_name and card.spoken == spoken and card.code == code
    assert Card.from_data(card.to_data()) == card


def test_every_card_round_trips_through_an_event() -> None:
    from voicesnap.rules import Flipped

    for card in standard_deck() + picture_deck("fruit"):
        ev = Flipped(1.5, 0, "Ann", card, 1, False, False)
        assert events.loads(events.dumps(ev)) == ev


@pytest.mark.parametrize("bad", ["", "8", "1H", "8X", "KHH", 8, {"picture": 3}, {"rank": 8}])
def test_bad_card_data_is_refused_clearly(bad: object) -> None:
    with pytest.raises(ValueError, match="card"):
        Card.from_data(bad)


def test_a_standard_card_needs_rank_and_suit() -> None:
    with pytest.raises(ValueError):
        Card(Rank.ACE)


def test_at_least_two_themed_decks_with_spoken_names() -> None:
    themes = deck_themes()
    assert len(themes) >= 2 and {"farm", "fruit"} <= set(themes)
    for theme in themes:
        deck = picture_deck(theme)
        assert len(deck) == 52
        faces = {c.face for c in deck}
        assert len(faces) == 13 and all(sum(1 for c in deck if c.face == f) == 4 for f in faces)
        assert all(c.spoken and c.spoken[0].isupper() and c.rank is None for c in deck)


def test_unknown_theme_lists_the_real_ones() -> None:
    with pytest.raises(DeckError, match="farm") as info:
        picture_deck("dinosaurs")
    assert isinstance(info.value, UserError)
