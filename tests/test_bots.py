"""Bots call like seeded people: right reaction times, misses, false calls, the table's rules."""

from __future__ import annotations

import math
import statistics

import pytest

from voicesnap.bots import Bots, profile_for
from voicesnap.cards import Card, Rank, Suit
from voicesnap.referee import Call

NAMES = ("ann", "bob", "cat", "dan")
NOBODY_OUT = [False] * 4


def _many(bots: Bots, rounds: int, **kw) -> list[list[Call]]:
    kw = {"out": NOBODY_OUT, "flippers": [0], "snap": True, "pool": False, **kw}
    return [bots.react(float(i), float(i) + 10.0, **kw) for i in range(rounds)]


def test_same_seed_same_calls_and_another_seed_differs() -> None:
    a = _many(Bots(NAMES, seed=7), 200)
    b = _many(Bots(NAMES, seed=7), 200)
    c = _many(Bots(NAMES, seed=8), 200)
    assert a == b
    assert a != c


def test_skill_sets_median_reaction_and_errors() -> None:
    slow, fast = profile_for("s", 0.0), profile_for("f", 1.0)
    assert (slow.median, fast.median) == (pytest.approx(0.60), pytest.approx(0.35))
    assert fast.miss < slow.miss and fast.near_miss < slow.near_miss and fast.false_call < slow.false_call
    with pytest.raises(ValueError, match="between 0 and 1"):
        profile_for("x", 1.5)


def test_reaction_times_follow_each_bots_log_normal() -> None:
    bots = Bots(("ann", "bob"), seed=1, skills=[0.0, 1.0], spread="tight")  # the first bots' spread
    for seat, median in ((0, 0.60), (1, 0.35)):
        draws = [bots.reaction(seat) for _ in range(4000)]
        assert min(draws) >= 0.15
        assert statistics.median(draws) == pytest.approx(median, rel=0.05)
        spread = statistics.stdev(math.log(d) for d in draws)
        assert spread == pytest.approx(0.20, rel=0.1)


def test_default_spread_is_the_published_human_one() -> None:
    """Within-person SD of choice RT ~100-150 ms around 0.5-0.7 s means (see bots.py), plus
    the recogniser's onset jitter; the tight spread (the first bots) is narrower."""
    human = Bots(("ann", "bob"), seed=1, skills=[0.0, 1.0])
    tight = Bots(("ann", "bob"), seed=1, skills=[0.0, 1.0], spread="tight")
    for seat, median, (lo, hi) in ((0, 0.60, (0.16, 0.22)), (1, 0.35, (0.09, 0.13))):
        draws = [human.reaction(seat) for _ in range(6000)]
        assert min(draws) >= 0.15
        assert statistics.median(draws) == pytest.approx(median, rel=0.05)
        sd = statistics.stdev(draws)
        assert lo <= sd <= hi, sd
        assert sd > 1.3 * statistics.stdev(tight.reaction(seat) for _ in range(6000))
    # Between people: default skills span 0-1 (medians 0.35-0.60 s), the tight ones 0.2-1.
    skills = [p.skill for seed in range(200) for p in Bots(NAMES, seed).profiles]
    assert min(skills) < 0.05 and max(skills) > 0.95
    assert min(p.skill for seed in range(200) for p in Bots(NAMES, seed, spread="tight").profiles) >= 0.2
    with pytest.raises(ValueError, match="tight"):
        Bots(NAMES, 1, spread="sloppy")


def test_onsets_come_after_the_flip_and_before_the_horizon() -> None:
    bots = Bots(NAMES, seed=3)
    for i in range(300):
        t = 10.0 * i
        for call in bots.react(t, t + 0.5, NOBODY_OUT, [0], snap=True, pool=False):
            assert t + 0.15 <= call.onset < t + 0.5
    # With a horizon too close for any human, nobody gets a call in.
    assert all(not calls for calls in (bots.react(0.0, 0.1, NOBODY_OUT, [0], True, False) for _ in range(200)))


def test_misses_match_the_profiles() -> None:
    bots = Bots(NAMES, seed=5, skills=[0.0, 0.0, 0.0, 0.0])  # miss rate 0.20 each
    rounds = _many(bots, 2000)
    made = sum(len(r) for r in rounds) / (2000 * 4)
    assert made == pytest.approx(0.80, abs=0.03)


def test_false_calls_are_rare_and_likelier_on_near_misses() -> None:
    def false_calls(tops: list[Card | None]) -> int:
        bots = Bots(NAMES, seed=11, skills=[0.0] * 4)
        return sum(
            len(bots.react(float(i), float(i) + 10, NOBODY_OUT, [0], False, False, False, tops, [0]))
            for i in range(20000)
        )

    seven, eight, king = Card(Rank.SEVEN, Suit.HEARTS), Card(Rank.EIGHT, Suit.CLUBS), Card(Rank.KING, Suit.SPADES)
    far = false_calls([seven, king, None, None])
    near = false_calls([seven, eight, None, None])
    # Per-flip rates: 4 bots x 0.003 far, 4 x 0.025 near.
    assert far / 20000 == pytest.approx(0.012, abs=0.004)
    assert near / 20000 == pytest.approx(0.100, abs=0.012)


def test_out_players_and_a_barred_flipper_never_call() -> None:
    bots = Bots(NAMES, seed=2, flipper_may_call=False)
    out = [False, True, False, False]
    for calls in _many(bots, 500, out=out, flippers=[2]):
        assert {c.player for c in calls} <= {"ann", "dan"}
    assert any(_many(bots, 50, out=out, flippers=[2]))


def test_only_the_flipper_claims_a_flippers_pool() -> None:
    bots = Bots(NAMES, seed=4, pool_claim="flipper")
    rounds = _many(bots, 500, snap=False, pool=True, flippers=[3])
    assert {(c.player, c.kind) for r in rounds for c in r} == {("dan", "snap pool")}
    anyone = _many(Bots(NAMES, seed=4), 500, snap=False, pool=True, flippers=[3])
    assert {c.player for r in anyone for c in r} == set(NAMES)


def test_bots_say_their_own_words() -> None:
    words = {"ann": {"snap": "moo"}, "bob": {"snap": "woof"}}
    bots = Bots(("ann", "bob"), seed=9, words=words)
    said = {(c.player, c.kind) for r in _many(bots, 300, out=[False, False]) for c in r}
    assert ("ann", "moo") in said and ("bob", "woof") in said
    assert not {k for _, k in said} & {"snap"}


def test_slap_on_show_gets_slaps() -> None:
    rounds = _many(Bots(NAMES, seed=6), 100, snap=False, slap=True)
    assert {c.kind for r in rounds for c in r} == {"slap"}


def test_bots_for_a_game_take_its_words_and_options() -> None:
    from voicesnap import variants
    from voicesnap.rules import Options

    game = variants.create("animal", NAMES, seed=1, options=Options(flipper_may_call=False, pool_claim="flipper"))
    bots = Bots.for_game(game, seed=3)
    said = {(c.player, c.kind) for r in _many(bots, 300, flippers=[1]) for c in r}
    # each says their own noise (now and then "snap pool" by a slip); Bob flipped, so is quiet
    assert {k for _, k in said} - {"snap pool"} == {"moo", "meow", "baa"} and "bob" not in {p for p, _ in said}
    game = variants.create("silent", NAMES, seed=1, options=Options(pool_claim="flipper"))
    bots = Bots.for_game(game, seed=3)
    pool = {(c.player, c.kind) for r in _many(bots, 300, snap=False, pool=True, flippers=[2]) for c in r}
    assert pool == {("cat", "slam")}
