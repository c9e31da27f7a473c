"""The rules as a state machine: set-up, dealing, flipping, refresh, elimination, the end."""

from __future__ import annotations

import random

import pytest

from snaptable import NAMES, cards, kinds, play, rig, snap
from voicesnap.cards import standard_deck
from voicesnap.errors import UserError
from voicesnap.referee import Call
from voicesnap.rules import (
    Dealt, Eliminated, Flipped, Forfeit, Game, GameOver, GameStarted, Options, PoolWon, Refreshed, RulesError,
    SnapWon, TieToPool, WrongCall,
)


@pytest.mark.parametrize("players", [["Ann"], list(NAMES) + ["Gus"], []])
def test_player_count_outside_2_to_6_is_refused(players: list[str]) -> None:
    with pytest.raises(RulesError, match="2 to 6 players"):
        Game(players, seed=1)


def test_duplicate_names_are_refused_whatever_the_case() -> None:
    with pytest.raises(RulesError, match="different name"):
        Game(["Ann", "Ben", "ann"], seed=1)
    with pytest.raises(UserError):
        Game(["Ann", " "], seed=1)


@pytest.mark.parametrize("options", [
    dict(tie_window=-0.1), dict(tie_window=5), dict(pool_claim="nobody"), dict(max_flips=0),
])
def test_impossible_options_are_refused(options: dict) -> None:
    with pytest.raises(RulesError):
        Options(**options)


def test_bad_dealer_and_seed_are_refused() -> None:
    with pytest.raises(RulesError, match="dealer"):
        Game(["Ann", "Ben"], seed=1, dealer=2)
    with pytest.raises(RulesError, match="seed"):
        Game(["Ann", "Ben"], seed="x")  # type: ignore[arg-type]


@pytest.mark.parametrize("n", range(2, 7))
@pytest.mark.parametrize("dealer", [0, 1])
def test_deal_one_at_a_time_clockwise_from_the_dealers_left(n: int, dealer: int) -> None:
    game = Game(NAMES[:n], seed=42, dealer=dealer)
    deck = standard_deck()
    random.Random(42).shuffle(deck)
    dealt: list[list] = [[] for _ in range(n)]
    for i, card in enumerate(deck):
        dealt[(dealer + 1 + i) % n].append(card)
    for seat in range(n):  # the first card dealt is at the bottom, the last on top
        assert list(game.down[seat]) == dealt[seat][::-1]
    counts = [len(d) for d in game.down]
    assert sum(counts) == 52 and max(counts) - min(counts) <= 1
    extra = 52 % n  # the first seats after the dealer hold one card more
    assert [counts[(dealer + 1 + k) % n] for k in range(n)] == [52 // n + 1] * extra + [52 // n] * (n - extra)
    assert game.active == (dealer + 1) % n
    assert kinds(game.events) == ["GameStarted", "Dealt"]
    assert game.events[1] == Dealt(0.0, dealer, tuple(counts), (dealer + 1) % n)


def test_same_seed_same_deal_other_seed_other_deal() -> None:
    assert Game(NAMES[:4], 7).state == Game(NAMES[:4], 7).state
    assert Game(NAMES[:4], 7).state != Game(NAMES[:4], 8).state


def test_flip_turns_the_top_card_and_passes_clockwise() -> None:
    game = rig(["7H 2C", "7S 3C", "8D"])
    ev = game.flip(1.0)
    assert ev == [Flipped(1.0, 0, "Ann", cards("7H")[0], 1, False, False)]
    assert game.piles[0] == cards("7H") and game.active == 1
    (ev,) = game.flip(2.0)
    assert ev.card == cards("7S")[0] and ev.match  # suits are ignored
    (ev,) = game.flip(3.0)
    assert not ev.match and game.active == 0
    game.check()


def test_refresh_turns_the_pile_over_without_shuffling() -> None:
    game = rig(["2H 3H 4H", "5S"], rest_to=1)
    for t in range(6):
        game.flip(float(t))
    assert not game.down[0] and game.piles[0] == cards("2H 3H 4H")
    out = game.flip(6.0)
    assert out[0] == Refreshed(6.0, 0, "Ann", 3)
    assert out[1].card == cards("2H")[0]  # the first card flipped comes round first
    assert list(game.down[0]) == cards("3H 4H") and game.piles[0] == cards("2H")
    game.check()


def test_no_cards_means_out_and_the_last_player_holding_cards_wins() -> None:
    game = rig(["9H", "5S 6S"], rest_to=1)
    out = play(game, 1.0, Call("Ann", "snap", 1.2))  # Ann's only card goes to the pool
    assert kinds(out) == ["Flipped", "WrongCall", "Eliminated", "GameOver"]
    assert out[-2] == Eliminated(1.2, 0, "Ann")
    assert out[-1].winner == "Ben" and out[-1].reason == "last player" and game.is_over()
    with pytest.raises(RulesError, match="over"):
        game.flip(3.0)


def test_eliminated_players_are_skipped_and_cannot_call() -> None:
    game = rig(["9H", "5S", "6D"], rest_to=2)
    out = play(game, 1.0, 2.0, Call("Ben", "snap", 2.2), ("advance", 3.0), 3.0, 4.0)
    assert "Eliminated" in kinds(out) and game.out == [False, True, False]
    flippers = [e.player for e in out if isinstance(e, Flipped)]
    assert flippers == ["Ann", "Ben", "Cat", "Ann"]
    assert game.active == 2  # Ben is passed over


def test_flip_cap_ends_the_game_by_most_cards() -> None:
    game = Game(NAMES[:3], seed=3, options=Options(max_flips=10))
    out = []
    while not game.is_over():
        out += game.flip(float(len(out)))
    assert game.flips == 10 and out[-1].reason == "flip cap"
    held = [game.holds(s) for s in range(3)]
    assert out[-1].cards == tuple(held) and held[game.seat_of[game.winner]] == max(held)
    assert held.count(max(held)) == 1 and game.tiebreak_step() == "most cards held"


def test_tiebreak_on_equal_holdings_and_nothing_won_draws_lots_from_the_seed() -> None:
    # Nothing separates them, so lots decide; for seed 3 the lot falls on the
    # first seat from the dealer's left whoever deals (fair across seeds: below).
    for dealer, winner in [(0, "Ben"), (1, "Ann")]:
        game = Game(NAMES[:2], seed=3, dealer=dealer, options=Options(max_flips=2))
        game.flip(1.0)
        out = game.flip(2.0)
        assert out[-1] == GameOver(2.0, winner, "flip cap", (26, 26))


def _capped(script: list, stacks: list[str], cap: int) -> tuple[Game, GameOver]:
    game = rig(stacks, options=Options(max_flips=cap))  # dealer Ben: Ann flips first
    out = play(game, *script)
    assert game.is_over() and out[-1].reason == "flip cap"
    return game, out[-1]


def test_tiebreak_on_equal_holdings_goes_to_most_cards_won_by_calls() -> None:
    # Ben snaps 2 cards, then pays 1 to the pool by a wrong call; Ann wins that 1
    # back with "snap pool": 26 each, but Ben won 2 cards by calls, Ann 1.
    game, over = _capped(
        [1.0, 2.0, snap("Ben", 2.4), ("advance", 2.95), 3.0, 4.0, snap("Ben", 4.4), ("advance", 4.95),
         5.0, snap("Ann", 5.4, "snap pool"), ("advance", 5.95), 6.0],
        ["7H 9C 5H", "7S 5D 3C"], cap=6,
    )
    assert over.cards == (26, 26) and game.won == [1, 2]
    assert over.winner == "Ben"  # the old rule (seat order) gave it to Ann
    assert game.tiebreak_order() == ["Ben", "Ann"] and game.tiebreak_step() == "most cards won by calls"


def test_tiebreak_on_equal_holdings_and_cards_won_goes_to_the_latest_winner() -> None:
    # Ann snaps the sevens (2 cards), then Ben snaps the nines, one card each: 26 all,
    # 2 cards won each, and Ben won last.
    game, over = _capped(
        [1.0, 2.0, snap("Ann", 2.4), ("advance", 2.95), 3.0, 4.0, snap("Ben", 4.4), ("advance", 4.95), 5.0],
        ["7H 9C 2C", "7S 9D 3C"], cap=5,
    )
    assert over.cards == (26, 26) and game.won == [2, 2]
    assert game.last_won == [2.4, 4.4]
    assert over.winner == "Ben" and game.tiebreak_step() == "the latest winning call"


def test_tiebreak_lots_favour_no_seat_and_replay_the_same() -> None:
    """With no calls two players keep 26 cards each and win nothing: every game is
    level to the last step. The old rule gave all of them to the first seat."""
    winners = []
    for seed in range(80):
        game = Game(NAMES[:2], seed)
        while not game.is_over():
            game.flip(float(game.flips))
        assert game.reason == "repeat" and [game.holds(0), game.holds(1)] == [26, 26]
        again = Game(NAMES[:2], seed)
        while not again.is_over():
            again.flip(float(again.flips))
        assert again.winner == game.winner and game.tiebreak_step() == "lots"
        winners.append(game.winner)
    first = winners.count("Ben") / len(winners)  # Ben sits on the dealer's left
    assert 0.3 <= first <= 0.7, first


def _table_key(game: Game) -> tuple:
    return (game.active, tuple(tuple(d) for d in game.down), tuple(tuple(p) for p in game.piles), tuple(game.pool))


def test_a_repeated_table_ends_the_game_exactly_where_the_cycle_closes() -> None:
    for seed in range(3):
        game = Game(NAMES[:4], seed)
        while not game.is_over():
            game.flip(float(game.flips))
        assert game.reason == "repeat"
        # The same deal without the guard: find the first refresh that repeats a table.
        free = Game(NAMES[:4], seed, Options(detect_repeats=False, max_flips=5000))
        seen = set()
        while True:
            out = free.flip(float(free.flips))
            if isinstance(out[0], Refreshed) and out[0].seat == 0:  # the guard watches the first seat in
                # the table right after the refresh, before the card was turned
                undo = free.copy()
                undo.piles[out[-1].seat].pop()
                undo.down[out[-1].seat].appendleft(out[-1].card)
                key = _table_key(undo)
                if key in seen:
                    break
                seen.add(key)
        assert free.flips - 1 == game.flips


def test_the_flipper_may_call_by_default() -> None:
    game = rig(["7H", "7S"])
    out = play(game, 1.0, 2.0, Call("Ben", "snap", 2.3))
    assert out[-1].player == "Ben" and kinds(out)[-1] == "SnapWon"


def test_state_snapshot_and_copy_are_independent() -> None:
    game = Game(NAMES[:3], seed=5)
    twin = game.copy()
    game.flip(1.0)
    assert twin.flips == 0 and twin.state.total == 52 and twin.piles[0] == []
    assert game.state.total == 52 and len(game.state.piles[1]) == 1
    assert twin.flip(1.0) == game.events[-1:]


def test_legal_calls_follow_the_live_table() -> None:
    game = rig(["7H 9C", "7S"], pool="9D")
    assert game.legal_calls() == set()
    game.flip(1.0)
    game.flip(2.0)
    assert game.legal_calls() == {"snap"} and game.call_is_valid("Ann", "snap")
    assert not game.call_is_valid("Ann", "snap pool")
    game.flip(3.0)  # 9C matches the pool's 9D; 7H is covered, so no snap
    assert game.legal_calls() == {"pool"}
    with pytest.raises(RulesError, match="not playing"):
        game.call_is_valid("Zed", "snap")


def test_public_view_follows_the_table() -> None:
    """showing/pile_index/is_out/pool_*/on_show: what bots, announcer and display read."""
    game = rig(["7H 9C", "7S"], pool="9D", rest_to=0)  # Ben holds only the 7S
    assert game.showing() == (None, None) and game.pool_size() == 1 and game.pool_top() == cards("9D")[0]
    assert [game.pile_index(s) for s in range(2)] == [0, 1]
    game.flip(1.0)
    game.flip(2.0)
    assert game.showing() == tuple(cards("7H 7S")) == tuple(p[-1] for p in game.state.piles)
    assert game.on_show("snap") and not game.on_show("pool")
    shown = game.showing()
    game.flip(3.0)  # 9C matches the pool; the snap on the sevens is covered
    assert shown == tuple(cards("7H 7S"))  # a snapshot, not the live table
    assert game.showing() == tuple(cards("9C 7S")) and game.on_show("pool") and not game.on_show("snap")
    assert game.eliminated() == (False, False) and not game.is_out(1)
    play(game, Call("Ben", "snap", 3.2))  # wrong: Ben's only card goes to the pool
    assert game.is_out(1) and game.eliminated() == (False, True) and game.is_over()
    assert game.pool_size() == 2 and game.pool_top() == cards("7S")[0]


def test_call_words_name_each_players_words() -> None:
    assert Game(NAMES[:2], seed=1).call_words(1) == {"snap": "snap", "pool": "snap pool"}


@pytest.mark.parametrize("ruling", [
    SnapWon(2.4, "Cat", "snap", (0, 1), (1, 99), 100, 2),  # the first pile is fine, the second is not
    SnapWon(2.4, "Cat", "snap", (0, 7), (1, 1), 2, 2),
    SnapWon(2.4, "Cat", "snap", (0, 0), (1, 1), 2, 2),
    TieToPool(2.4, ("Ann", "Ben"), "snap", (0, 1), (1, 2), 3, 2),
    WrongCall(2.4, "Ann", "snap", 5, 0, 5, 2),
    WrongCall(2.4, "Ann", "snap", 1, 3, 4, 2),
    Forfeit(2.4, "Ben", "Ann", 60),
    Forfeit(2.4, "Ben", "Ben", 1),
    PoolWon(2.4, "Zed", 0, 2),
])
def test_an_impossible_ruling_is_refused_before_it_changes_anything(ruling: object) -> None:
    game = rig(["7H 2C", "7S 3C", "8D 4C"])
    game.flip(1.0)
    game.flip(2.0)
    before = (game.state, game.version, len(game.events))
    with pytest.raises(RulesError):
        game.apply(ruling)
    assert (game.state, game.version, len(game.events)) == before
    game.check(full=True)


def test_game_started_records_everything_needed_to_rebuild() -> None:
    game = Game(NAMES[:3], seed=11, options=Options(pool_claim="flipper"), dealer=2, t=4.5)
    assert game.events[0] == GameStarted(4.5, NAMES[:3], 11, 2, "classic", Options(pool_claim="flipper"), ())


def test_the_invariant_check_catches_lost_and_doubled_cards() -> None:
    game = Game(NAMES[:3], seed=2)
    game.flip(1.0)
    lost = game.copy()
    lost.down[0].pop()
    with pytest.raises(AssertionError, match="51 cards"):
        lost.check()
    doubled = game.copy()
    doubled.down[1][-1] = doubled.down[2][0]  # one card twice, another gone: still 52
    doubled.check()
    with pytest.raises(AssertionError, match="cards changed"):
        doubled.check(full=True)
    broke = game.copy()
    broke.down[2].clear()
    broke.pool.extend(game.down[2])
    with pytest.raises(AssertionError, match="Cat holds no cards but is still in"):
        broke.check()


def test_options_must_be_options() -> None:
    with pytest.raises(RulesError, match="Options"):
        Game(NAMES[:2], seed=1, options={"tie_window": 0.2})  # type: ignore[arg-type]
