"""The referee: calls judged at their onset, ties, pools, wrong calls, late and bad calls."""

from __future__ import annotations

import itertools

import pytest

from snaptable import cards, kinds, play, rig
from voicesnap.referee import Call, Referee
from voicesnap.rules import (
    CallError, CallIgnored, Options, PoolTied, PoolWon, RulesError, SnapWon, TieToPool, WrongCall,
)


def test_first_valid_snap_collects_the_matching_piles_under_the_stack() -> None:
    game = rig(["7H 2C", "7S 3C", "8D 4C"])
    out = play(game, 1.0, 2.0, Call("Cat", "snap", 2.4))
    assert out[-1] == SnapWon(2.4, "Cat", "snap", (0, 1), (1, 1), 2, 2)
    assert game.piles[0] == [] and game.piles[1] == []
    assert list(game.down[2])[-2:] == cards("7H 7S")  # face down, under Cat's stack


def test_calls_within_the_tie_window_send_the_piles_to_the_pool() -> None:
    game = rig(["7H", "7S", "8D"])
    out = play(game, 1.0, 2.0, Call("Ann", "snap", 2.30), Call("Cat", "snap", 2.39))
    assert out[-1] == TieToPool(2.30, ("Ann", "Cat"), "snap", (0, 1), (1, 1), 2, 2)
    assert game.pool == cards("7H 7S") and game.piles[0] == game.piles[1] == []


def test_a_rival_after_the_tie_window_is_ignored_not_wrong() -> None:
    game = rig(["7H", "7S", "8D"])
    out = play(game, 1.0, 2.0, Call("Ann", "snap", 2.30), Call("Cat", "snap", 2.41))
    assert kinds(out)[-2:] == ["SnapWon", "CallIgnored"]
    assert out[-2].player == "Ann" and out[-1] == CallIgnored(2.41, "Cat", "snap", "already taken")


def test_tie_window_is_an_option() -> None:
    game = rig(["7H", "7S", "8D"], options=Options(tie_window=0.2))
    out = play(game, 1.0, 2.0, Call("Ann", "snap", 2.30), Call("Cat", "snap", 2.45))
    assert isinstance(out[-1], TieToPool)


def test_rulings_do_not_depend_on_the_order_calls_arrive() -> None:
    calls = [Call("Ann", "snap", 2.30), Call("Ben", "snap", 2.38), Call("Cat", "snap", 2.55),
             Call("Cat", "snap pool", 2.6)]
    results = set()
    for order in itertools.permutations(calls):
        game = rig(["7H", "7S", "8D"])
        results.add(tuple(play(game, 1.0, 2.0, *order)))
    assert len(results) == 1


def test_wrong_call_moves_the_callers_pile_on_top_of_the_pool() -> None:
    game = rig(["7H 2C", "8S 3C"], pool="KD")
    out = play(game, 1.0, 2.0, Call("Ann", "snap", 2.3))
    assert out[-1] == WrongCall(2.3, "Ann", "snap", 1, 0, 2, 2)
    assert game.pool == cards("KD 7H") and game.piles[0] == []


def test_wrong_call_with_an_empty_pile_pays_the_top_face_down_card() -> None:
    game = rig(["7H 2C", "8S 3C"])
    out = play(game, 1.0, Call("Ben", "snap", 1.3))  # Ben has not flipped yet
    assert out[-1] == WrongCall(1.3, "Ben", "snap", 0, 1, 1, 1)
    assert game.pool == cards("8S") and game.down[1][0] == cards("3C")[0]


def test_snap_pool_wins_the_whole_pool() -> None:
    game = rig(["9H", "5S"], pool="2D 9C")
    out = play(game, 1.0, Call("Ben", "snap pool", 1.4))
    assert out[0].pool_match
    assert out[-1] == PoolWon(1.4, "Ben", 2, 1)
    assert game.pool == [] and list(game.down[1])[-2:] == cards("2D 9C")


def test_only_the_flipper_may_claim_the_pool_when_so_configured() -> None:
    game = rig(["9H", "5S"], pool="9C", options=Options(pool_claim="flipper"))
    out = play(game, 1.0, Call("Ben", "snap pool", 1.3), Call("Ann", "snap pool", 1.5))
    assert out[1] == CallIgnored(1.3, "Ben", "snap pool", "only the flipper may claim the pool")
    assert out[2] == PoolWon(1.5, "Ann", 1, 1)


def test_a_pool_claim_belongs_to_its_flip() -> None:
    game = rig(["9H", "5S"], pool="9C")
    out = play(game, 1.0, 2.0, Call("Ben", "snap pool", 2.3))  # after the next flip
    assert isinstance(out[-1], WrongCall) and out[-1].kind == "snap pool"


def test_a_tied_pool_claim_leaves_the_pool_and_spends_the_match() -> None:
    game = rig(["9H", "5S", "6D"], pool="9C")
    out = play(game, 1.0, Call("Ben", "snap pool", 1.30), Call("Cat", "snap pool", 1.35),
               Call("Ann", "snap pool", 1.6))
    assert out[1] == PoolTied(1.30, ("Ben", "Cat"), 1)
    assert out[2] == CallIgnored(1.6, "Ann", "snap pool", "already taken")
    assert game.pool == cards("9C")


def test_a_call_is_judged_on_the_table_at_its_onset_even_after_the_next_flip() -> None:
    game = rig(["7H 4C", "7S 5C"])
    ref = Referee(game, decision_window=0.5)
    ref.flip(1.0)
    ref.flip(2.0)
    ref.flip(2.2)  # Ann covers her 7 before the referee has ruled
    ref.submit(Call("Ben", "snap", 2.1))  # ... but Ben called before that flip
    ref.submit(Call("Ann", "snap", 2.25))  # Ann called after it: no match showing then
    out = ref.advance(3.0)
    assert out[0] == SnapWon(2.1, "Ben", "snap", (0, 1), (1, 1), 2, 2)  # the 4C stays with Ann
    assert out[1] == WrongCall(2.25, "Ann", "snap", 1, 0, 1, 3)  # ... until her wrong call
    assert game.pool == cards("4C") and list(game.down[1])[-2:] == cards("7H 7S")


def test_a_call_after_the_piles_were_taken_is_ignored_even_before_the_next_flip() -> None:
    game = rig(["7H 4C", "7S 5C", "8D"])
    out = play(game, 1.0, 2.0, Call("Ann", "snap", 2.2), Call("Cat", "snap", 2.9), 3.0)
    assert kinds(out) == ["Flipped"] * 3 + ["SnapWon", "CallIgnored"]
    assert out[-1] == CallIgnored(2.9, "Cat", "snap", "already taken")


def test_rulings_wait_for_the_decision_window() -> None:
    game = rig(["7H", "7S"])
    ref = Referee(game, decision_window=0.4)
    ref.flip(1.0)
    ref.flip(2.0)
    ref.submit(Call("Ann", "snap", 2.3))
    assert ref.pending == [Call("Ann", "snap", 2.3)] and ref.next_deadline == pytest.approx(2.7)
    assert ref.advance(2.6) == []
    assert [type(e) for e in ref.advance(2.7)] == [SnapWon]
    assert ref.pending == [] and ref.next_deadline is None


def test_a_call_heard_after_its_window_closed_is_ignored_as_late() -> None:
    game = rig(["7H", "7S"])
    ref = Referee(game, decision_window=0.5)
    ref.flip(1.0)
    ref.flip(2.0)
    ref.advance(4.0)
    assert ref.submit(Call("Ann", "snap", 2.3)) == [CallIgnored(2.3, "Ann", "snap", "late")]
    assert ref.advance(4.1) == [] and ref.pending == []
    assert game.piles[0] == cards("7H")


def test_the_same_call_twice_counts_once() -> None:
    game = rig(["7H", "7S", "8D"])
    out = play(game, 1.0, 2.0, Call("Ann", "snap", 2.3), Call("Ann", "snap", 2.3))
    assert kinds(out)[-1] == "SnapWon" and kinds(out).count("CallIgnored") == 0


def test_calls_from_strangers_and_players_who_are_out_are_refused() -> None:
    game = rig(["9H", "5S", "6D"], rest_to=2)
    ref = Referee(game)
    with pytest.raises(CallError, match="'Zed' is not playing"):
        ref.submit(Call("Zed", "snap", 0.5))
    ref.flip(1.0)
    ref.flip(2.0)
    ref.submit(Call("Ben", "snap", 2.2))  # wrong: Ben's only card goes to the pool
    ref.advance(3.0)
    assert game.out[1]
    with pytest.raises(CallError, match="Ben is out"):
        ref.submit(Call("Ben", "snap", 3.5))
    game.check()


@pytest.mark.parametrize("onset", [float("nan"), float("inf"), "soon"])
def test_calls_without_a_real_onset_are_refused(onset: object) -> None:
    with pytest.raises(CallError, match="finite onset"):
        Referee(rig(["7H", "7S"])).submit(Call("Ann", "snap", onset))  # type: ignore[arg-type]


def test_a_decision_window_shorter_than_the_tie_window_is_refused() -> None:
    with pytest.raises(RulesError, match="decision window"):
        Referee(rig(["7H", "7S"]), decision_window=0.05)


def test_flips_cannot_go_back_in_time() -> None:
    game = rig(["7H", "7S"])
    ref = Referee(game)
    ref.flip(1.0)
    ref.submit(Call("Ann", "snap", 1.5))
    ref.advance(3.0)
    with pytest.raises(RulesError, match="before a ruling"):
        ref.flip(1.2)


def test_the_flipper_may_be_barred_from_calling_on_their_own_flip() -> None:
    game = rig(["7H", "7S", "8D"], options=Options(flipper_may_call=False))
    out = play(game, 1.0, 2.0, Call("Ben", "snap", 2.3), Call("Cat", "snap", 2.5))
    assert out[-2] == CallIgnored(2.3, "Ben", "snap", "the flipper may not call")
    assert out[-1].player == "Cat"


def test_calls_after_the_game_is_over_are_ignored() -> None:
    game = rig(["9H", "5S 6S"], rest_to=1)
    out = play(game, 1.0, Call("Ann", "snap", 1.2), Call("Ben", "snap", 1.8))
    assert out[-1] == CallIgnored(1.8, "Ben", "snap", "game over")


def test_words_that_are_no_call_in_this_variant_are_ignored() -> None:
    game = rig(["7H", "7S"])
    out = play(game, 1.0, 2.0, Call("Ann", "slap", 2.2))
    assert out[-1] == CallIgnored(2.2, "Ann", "slap", "not a call in classic")


class _JudgeEveryCall(Referee):
    """The referee without its shortcuts: every call judged from scratch."""

    def _rule(self, call: Call) -> list:
        self._memo = (None, ("", ()))
        return super()._rule(call)


@pytest.mark.parametrize("variant", ["classic", "speed", "double", "single-pile", "slapjack", "animal"])
def test_the_cheap_paths_rule_exactly_as_judging_every_call(variant: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """The memo and the 'already taken' shortcut after a won snap must never change a ruling."""
    from voicesnap import simulate

    fast, slow = [], []
    for seed in range(6):
        log: list = []
        simulate.play_game(6, seed, variant=variant, log=log)
        fast.append(log)
    monkeypatch.setattr(simulate, "Referee", _JudgeEveryCall)
    for seed in range(6):
        log = []
        simulate.play_game(6, seed, variant=variant, log=log)
        slow.append(log)
    assert fast == slow
    taken = sum(1 for log in fast for ev in log if type(ev) is CallIgnored and ev.reason == "already taken")
    assert taken > 20  # the shortcut was exercised


def test_a_flip_without_a_real_time_is_refused() -> None:
    ref = Referee(rig(["7H", "7S"]))
    with pytest.raises(RulesError, match="not NaN"):
        ref.flip(float("nan"))
    assert ref.game.flips == 0
    ref.flip(1.0)
    with pytest.raises(RulesError, match="earlier than the previous flip"):
        ref.flip(0.5)
