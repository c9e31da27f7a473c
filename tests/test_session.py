"""Sessions: best-of-N and first-to-N, the winner deals next, sudden death settles a tie."""

from __future__ import annotations

import pytest

from voicesnap.referee import Call, Referee
from voicesnap.rules import Game, RulesError
from voicesnap.session import (
    Format, GameScored, Session, SessionError, SessionOver, SuddenDeath, parse_format,
)

PLAYERS = ("Ann", "Ben", "Cat")


def force_win(game: Game, winner: str) -> None:
    """Play the game out for real: everyone but ``winner`` makes wrong calls until out.

    A wrong call costs the caller their face-up pile (or a face-down card), so
    the others run out of cards and ``winner`` is the last player holding any.
    """
    ref = Referee(game, decision_window=0.2)
    t = 0.0
    while not game.is_over():
        t += 1.0
        ref.flip(t)
        for name in game.players:
            if name != winner and not game.out[game.seat_of[name]] and not game.legal_calls():
                ref.submit(Call(name, "snap", t + 0.5))
        ref.advance(t + 0.9)
        game.check()
    assert game.winner == winner


@pytest.mark.parametrize("text, fmt", [
    ("best-of-3", Format("best-of", 3)), ("Best of 5", Format("best-of", 5)),
    ("first-to-4", Format("first-to", 4)), ("single", Format("best-of", 1)),
])
def test_formats_parse(text: str, fmt: Format) -> None:
    assert parse_format(text) == fmt and parse_format(str(fmt)) == fmt


@pytest.mark.parametrize("text", ["best-to-3", "first-of-2", "best-of-0", "best-of-x", "marathon"])
def test_impossible_formats_are_refused(text: str) -> None:
    with pytest.raises(SessionError, match="best-of|impossible"):
        parse_format(text)


def test_bad_players_are_refused_when_the_session_starts() -> None:
    with pytest.raises(RulesError, match="2 to 6"):
        Session(["Ann"], "best-of-3")


def test_best_of_3_ends_at_two_wins_and_the_winner_deals_next() -> None:
    session = Session(PLAYERS, "best-of-3", seed=9)
    first = session.new_game()
    assert first.dealer == 0 and first.active == 1
    force_win(first, "Cat")
    assert session.record(first) == [GameScored(first.t, 1, "Cat", (0, 0, 1), False)]
    second = session.new_game()
    assert second.dealer == 2 and second.active == 0  # Cat deals, Ann flips first
    assert second.seed != first.seed
    force_win(second, "Cat")
    out = session.record(second)
    assert out[-1] == SessionOver(second.t, "Cat", (0, 0, 2), 2, False) and session.is_over()
    with pytest.raises(SessionError, match="over"):
        session.new_game()


def test_first_to_n_counts_wins_until_n() -> None:
    session = Session(PLAYERS[:2], "first-to-3", seed=1)
    for winner in ["Ann", "Ben", "Ben", "Ann", "Ann"]:
        assert not session.is_over()
        game = session.new_game()
        force_win(game, winner)
        session.record(game)
    assert session.winner == "Ann" and session.scores == [3, 2] and session.games == 5


def test_a_tied_best_of_3_is_settled_by_a_sudden_death_game_between_the_leaders() -> None:
    session = Session(PLAYERS, "best-of-3", seed=2)
    for winner in PLAYERS:
        game = session.new_game()
        force_win(game, winner)
        session.record(game)
    assert not session.is_over() and session.sudden_death and session.contenders == PLAYERS
    decider = session.new_game()
    assert decider.dealer == 2  # Cat won the last game
    force_win(decider, "Ben")
    out = session.record(decider)
    assert out == [GameScored(decider.t, 4, "Ben", (1, 2, 1), True),
                   SessionOver(decider.t, "Ben", (1, 2, 1), 4, True)]


def test_sudden_death_is_only_for_the_tied_leaders() -> None:
    from voicesnap.announcer import Verbosity, describe

    session = Session(("Ann", "Ben", "Cat", "Dan"), "best-of-4", seed=3)
    for winner in ["Ann", "Ben", "Ann", "Ben"]:
        game = session.new_game()
        force_win(game, winner)
        out = session.record(game)
    # the players are told, not left to wonder why a fifth game of a best-of-4 starts with two of them
    assert out == [GameScored(game.t, 4, "Ben", (2, 2, 0, 0), False), SuddenDeath(game.t, ("Ann", "Ben"))]
    words = describe(out[-1], Verbosity.RANKS, players=session.players)
    assert words is not None and words[0].startswith("Sudden death: Ann and Ben are level and play on"), words
    decider = session.new_game()
    assert decider.players == ("Ann", "Ben") and decider.dealer == 1


def test_games_must_be_finished_and_recorded_in_order() -> None:
    session = Session(PLAYERS, "best-of-3", seed=4)
    game = session.new_game()
    with pytest.raises(SessionError, match="finish"):
        session.new_game()
    with pytest.raises(SessionError, match="record"):
        session.record(game)


def test_sessions_are_deterministic_and_carry_the_variant() -> None:
    a = Session(PLAYERS, "best-of-3", seed=5, variant="picture", deck="fruit").new_game()
    b = Session(PLAYERS, "best-of-3", seed=5, variant="picture", deck="fruit").new_game()
    assert a.state == b.state and a.variant == "picture" and a.events[0].config == (("deck", "fruit"),)


@pytest.mark.parametrize("text, words", [("single", "one game"), ("best-of-3", "best of 3 games"),
                                         ("first-to-1", "one game"), ("first to 4", "first to 4 games")])
def test_a_format_in_words(text: str, words: str) -> None:
    """As play's first line reads it ("best-of-1" there was spelt out by a screen reader)."""
    assert parse_format(text).words() == words
