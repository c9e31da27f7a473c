"""Properties over many seeds: cards are conserved, games end, rulings are deterministic."""

from __future__ import annotations

import random
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from voicesnap import gamelog, variants
from voicesnap.referee import Call, Referee
from voicesnap.rules import CallError
from voicesnap.rules import Flipped, Game, Options

NAMES = ("Ann", "Ben", "Cat", "Dan", "Eve", "Fay")
REASONS = {"last player", "flip cap", "repeat", "all out"}

tables = st.fixed_dictionaries({
    "variant": st.sampled_from(variants.names()),
    "players": st.integers(2, 6),
    "seed": st.integers(0, 2**63 - 1),
    "callers": st.integers(0, 2**32),
    "eagerness": st.floats(0.0, 1.0),
    "noise": st.floats(0.0, 0.3),
    "dealer": st.integers(0, 5),
    "tie_window": st.sampled_from([0.0, 0.1, 0.25]),
    "pool_claim": st.sampled_from(["anyone", "flipper"]),
    "flipper_may_call": st.booleans(),
})


def _words(game: Game, name: str) -> list[str]:
    own = getattr(game, "animals", {}).get(name)
    return [w for w in (own, "snap", "snap pool", "slap", "slam", "moo") if w]


def play(p: dict[str, Any], max_flips: int = 400, shuffle_arrivals: int | None = None) -> tuple[Game, list]:
    """A whole game: bots call on matches (and at random), calls arrive in batches."""
    n = p["players"]
    claim = "anyone" if p["variant"] == "speed" else p["pool_claim"]  # (everyone is Speed Snap's flipper)
    options = Options(tie_window=p["tie_window"], pool_claim=claim,
                      flipper_may_call=p["flipper_may_call"], max_flips=max_flips)
    game = variants.create(p["variant"], NAMES[:n], p["seed"], options, p["dealer"] % n)
    ref = Referee(game, decision_window=0.4)
    rng = random.Random(p["callers"])
    arrivals = random.Random(shuffle_arrivals)
    out: list[Any] = list(game.events)
    t = 0.0
    while not game.is_over():
        t += 1.0
        step = ref.flip(t)
        game.check()
        batch = []
        for ev in step:
            if not isinstance(ev, Flipped):
                continue
            for name in game.players:
                if game.out[game.seat_of[name]]:
                    continue
                on_match = (ev.match or ev.pool_match) and rng.random() < p["eagerness"]
                if on_match or rng.random() < p["noise"]:
                    batch.append(Call(name, rng.choice(_words(game, name)), t + rng.uniform(0.0, 0.9)))
        if shuffle_arrivals is not None:
            arrivals.shuffle(batch)
        for call in batch:
            ref.submit(call)
        step += ref.advance(t + 0.5)  # some calls are ruled after the next flip
        game.check()
        out += step
    out += ref.close()
    game.check(full=True)  # the very 52 cards dealt, none lost, none doubled
    return game, out


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(tables)
def test_every_state_holds_the_whole_deck_and_every_game_ends(p: dict[str, Any]) -> None:
    game, out = play(p)  # play() checks conservation after every flip and every ruling
    assert game.total() == game.size == 52
    # Speed Snap checks the cap after a whole round of simultaneous flips.
    assert game.is_over() and game.reason in REASONS and game.flips < 400 + game.n
    assert game.winner in game.players
    assert sum(1 for ev in out if type(ev).__name__ == "GameOver") == 1


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(tables, st.integers(0, 1000))
def test_same_inputs_same_rulings_whatever_order_calls_arrive_in(p: dict[str, Any], order: int) -> None:
    first, a = play(p)
    second, b = play(p, shuffle_arrivals=order)
    assert a == b and first.state == second.state


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(tables)
def test_the_event_list_replays_into_the_same_table(p: dict[str, Any]) -> None:
    game, out = play(p)
    again = gamelog.replay(out)
    assert again.state == game.state and again.reason == game.reason


@settings(max_examples=60, deadline=None)
@given(st.integers(2, 6), st.integers(0, 2**63 - 1))
def test_without_any_calls_the_guard_ends_the_game(n: int, seed: int) -> None:
    game = Game(NAMES[:n], seed)  # default options: repeat detection and the 3000-flip cap
    while not game.is_over():
        game.flip(float(game.flips))
        assert game.total() == 52
    assert game.reason in ("repeat", "flip cap") and game.flips <= 3000


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(tables, st.floats(0.0, 0.8), st.floats(0.1, 1.5))
def test_slow_recognition_rulings_stay_in_onset_order(p: dict[str, Any], latency: float, pace: float) -> None:
    """Calls reach the referee up to ``latency`` s late, often after the next flip;
    the referee ticks every 50 ms. Rulings come out in onset order, only calls
    heard after their window are 'late', and the deck is conserved throughout."""
    n = p["players"]
    game = variants.create(p["variant"], NAMES[:n], p["seed"], Options(max_flips=300), p["dealer"] % n)
    window = 0.5
    ref = Referee(game, decision_window=window)
    rng = random.Random(p["callers"])
    in_flight: list[tuple[float, Call]] = []  # (arrival, call)
    rulings: list[Any] = []
    now, next_flip = 0.0, pace
    while not game.is_over():
        now = round(now + 0.05, 6)
        for arrival, call in sorted(in_flight, key=lambda x: x[0]):
            if arrival <= now:
                out_at = game.out_at[game.seat_of[call.player]]
                if out_at is not None and out_at <= call.onset:
                    # calls made after a player went out are refused (the table drops them)
                    with pytest.raises(CallError):
                        ref.submit(call)
                    continue
                rulings += ref.submit(call)
        in_flight = [(a, c) for a, c in in_flight if a > now]
        rulings += [ev for ev in ref.advance(now) if type(ev).__name__ != "Eliminated"]
        game.check()
        if now >= next_flip and not game.is_over():
            next_flip += pace
            for ev in ref.flip(now):
                if isinstance(ev, Flipped) and (ev.match or ev.pool_match or rng.random() < p["noise"]):
                    for name in game.players:
                        if not game.out[game.seat_of[name]] and rng.random() < max(p["eagerness"], 0.3):
                            onset = now + rng.uniform(0.1, 0.7)
                            arrival = onset + rng.uniform(0.0, latency)
                            in_flight.append((arrival, Call(name, rng.choice(_words(game, name)), onset)))
            game.check()
    rulings += ref.close()
    game.check(full=True)
    judged = [ev for ev in rulings if getattr(ev, "reason", None) != "late" and hasattr(ev, "t")]
    onsets = [ev.t for ev in judged if type(ev).__name__ != "GameOver"]
    assert onsets == sorted(onsets)
    if latency + 0.05 < window:  # every call arrives inside its window: none can be late
        assert not any(getattr(ev, "reason", None) == "late" for ev in rulings)
