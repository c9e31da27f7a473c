"""The simulator: whole games with bots through the real referee, and honest statistics."""

from __future__ import annotations

import json
from collections import Counter

import pytest

from voicesnap import rules, simulate, variants
from voicesnap.cli import main

SEEDS = range(12)


def _cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(["simulate", *argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_same_seed_same_json_and_another_seed_differs(capsys: pytest.CaptureFixture[str]) -> None:
    args = ("--players", "2-4", "--games", "15", "--json")
    code, first, _ = _cli(capsys, *args, "--seed", "5")
    assert code == 0
    assert _cli(capsys, *args, "--seed", "5")[1] == first
    other = _cli(capsys, *args, "--seed", "6")[1]
    assert other != first
    data = json.loads(first)
    assert [r["players"] for r in data["results"]] == [2, 3, 4]
    assert all(r["games"] == 15 and sum(r["wins_by_seat"]) == 15 for r in data["results"])


def test_human_table_has_one_block_per_player_count(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _cli(capsys, "--players", "2,5", "--games", "5", "--pace", "2")
    assert code == 0
    assert "2 players" in out and "5 players" in out and "3 players" not in out
    assert "one flip every 2 seconds" in out and "wins by seat" in out


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--players", "7"], "2 to 6 players, not 7"),
        (["--players", "1"], "2 to 6 players, not 1"),
        (["--players", "2,7"], "not 7"),
        (["--players", ""], "not a player count"),
        (["--max-flips", "0"], "max flips 0 is impossible"),
        (["--tie-window", "-0.1"], "tie window"),
        (["--pace", "inf"], "positive number"),
        (["--players", "1-3"], "not 1"),
        (["--players", "two"], "not a player count"),
        (["--players", "5-2"], "runs backwards"),
        (["--games", "0"], "at least one game"),
        (["--pace", "-1"], "positive number"),
        (["--pace", "nan"], "positive number"),
        (["--variant", "snapple"], "no Snap variant called 'snapple'"),
        (["--tie-window", "9"], "tie window"),
    ],
)
def test_bad_options_get_a_clear_message_and_exit_2(
    capsys: pytest.CaptureFixture[str], argv: list[str], message: str
) -> None:
    code, out, err = _cli(capsys, *argv, "--games", "1") if "--games" not in argv else _cli(capsys, *argv)
    assert code == 2 and out == ""
    assert message in err and "Traceback" not in err


def _rulings(log: list) -> Counter:
    return Counter(type(ev).__name__ for ev in log)


@pytest.mark.parametrize("players", [2, 4, 6])
def test_statistics_agree_with_the_event_log(players: int) -> None:
    for seed in SEEDS:
        log: list = []
        res = simulate.play_game(players, seed, pace=1.5, log=log)
        kinds = _rulings(log)
        flips = [ev for ev in log if type(ev) is rules.Flipped]
        over = [ev for ev in log if type(ev) is rules.GameOver]
        assert len(over) == 1
        assert res.flips == len(flips) == kinds["Flipped"]
        assert res.matches == sum(ev.match for ev in flips)
        assert res.snaps_won + res.slaps_won == kinds["SnapWon"]
        assert res.ties == kinds["TieToPool"] + kinds["PoolTied"]
        assert res.wrong_calls == kinds["WrongCall"]
        assert res.pools_won == kinds["PoolWon"]
        assert res.ignored == kinds["CallIgnored"]
        # The pool can only be won as often as it formed (a win empties it).
        assert res.pools_won <= res.pools_formed
        # Conservation: what the players hold plus the pool is the whole deck.
        assert sum(over[0].cards) + res.pool_at_end == 52
        assert res.capped == (over[0].reason in ("flip cap", "repeat"))
        # Seats count from the dealer's left: seat 0 flips first, and the dealer is player 0.
        assert over[0].winner == simulate.bot_names(players)[(res.winner_seat + 1) % players]
        # The clock: one flip per pace at least, and the game ends at its last event.
        times = [ev.t for ev in flips]
        assert all(b - a >= 1.5 - 1e-9 for a, b in zip(times, times[1:]))
        assert res.seconds == over[0].t >= times[-1]


@pytest.mark.parametrize("variant", ["classic", "speed", "single-pile"])
def test_every_call_gets_exactly_one_ruling(variant: str) -> None:
    for seed in SEEDS:
        log: list = []
        res = simulate.play_game(4, seed, variant=variant, log=log)
        callers = sum(  # a tie rules on all its callers at once
            len(ev.players) if type(ev) in (rules.TieToPool, rules.PoolTied) else 1
            for ev in log
            if type(ev) in rules.RULINGS
        )
        assert callers == res.calls


def test_report_figures_come_from_their_own_games() -> None:
    both = simulate.simulate([2, 6], games=10, seed=3).to_data()["results"]
    alone = [simulate.simulate([n], games=10, seed=3).to_data()["results"][0] for n in (2, 6)]
    assert both == alone
    two = simulate.simulate([2], games=10, seed=3).counts[0].results
    assert both[0]["matches_per_flip"] == round(sum(r.matches for r in two) / sum(r.flips for r in two), 4)
    assert both[0]["flips_per_game"]["max"] == max(r.flips for r in two)
    assert 0 <= both[0]["share_5_to_15_minutes"] <= 1


@pytest.mark.parametrize("variant", variants.names())
def test_bots_play_every_variant_by_its_own_call_words(variant: str) -> None:
    for seed in range(4):
        log: list = []
        res = simulate.play_game(4, seed, variant=variant, log=log)
        assert res.winner_seat is not None and res.flips > 0
        reasons = Counter(ev.reason for ev in log if type(ev) is rules.CallIgnored)
        assert not [r for r in reasons if r.startswith("not a call")], reasons
        assert res.snaps_won + res.ties > 0  # the bots' words were heard as calls


def test_bots_keep_the_tables_options() -> None:
    barred = rules.Options(flipper_may_call=False, pool_claim="flipper")
    for seed in range(8):
        log: list = []
        simulate.play_game(3, seed, options=barred, log=log)
        barred_calls = [ev for ev in log if type(ev) is rules.CallIgnored and "flipper" in ev.reason]
        assert not barred_calls, barred_calls
        flipper_of = {ev.flip: ev.player for ev in log if type(ev) is rules.Flipped}
        for ev in log:
            if type(ev) is rules.PoolWon:
                assert ev.player == flipper_of[ev.flip]


def test_sessions_are_played_to_a_winner_and_counted() -> None:
    report = simulate.simulate([2, 4], games=12, seed=2, session="best-of-3")
    for count in report.counts:
        data = count.to_data()["sessions"]
        assert data["sessions"] == 12 and sum(data["wins_by_seat"]) == 12
        assert len(count.results) == sum(s.games for s in count.sessions)
        for s in count.sessions:
            # best-of-3: over after 2 or 3 games, plus sudden-death games when the lead is shared
            assert s.games >= 2 and (s.games <= 3 or s.sudden_death)
            assert s.sudden_death <= (count.players > 2)  # two players cannot share a 1-1-1 lead
        assert data["minutes"]["max"] * 60 <= sum(r.seconds for r in count.results) + 1e-6


def test_a_bad_session_format_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = _cli(capsys, "--session", "best-of-x", "--games", "1")
    assert code == 2 and "best-of-3" in err


@pytest.mark.parametrize("players", [2, 6])
def test_the_match_count_is_what_the_table_shows(players: int) -> None:
    """matches per flip rests on Flipped.match: check it against the table itself."""
    game = rules.Game(simulate.bot_names(players), seed=players)
    t = 0.0
    while not game.is_over():
        for ev in game.flip(t):
            if type(ev) is rules.Flipped:
                state = game.state
                mine = state.piles[ev.seat]
                others = [pile[-1].face for seat, pile in enumerate(state.piles) if seat != ev.seat and pile]
                assert mine[-1] == ev.card
                assert ev.match == (ev.card.face in others)
        t += 1.5


def test_tiebreak_wins_are_counted_apart(capsys: pytest.CaptureFixture[str]) -> None:
    """The guard-ended games are where a seat bias in the tiebreak would show
    (its fairness is tested in test_rules)."""
    data = simulate.simulate([2], games=100, seed=1).to_data()["results"][0]
    capped = data["wins_by_seat_capped"]
    assert sum(capped) == data["capped_games"] > 5
    assert all(c <= w for c, w in zip(capped, data["wins_by_seat"]))
    code, out, _ = _cli(capsys, "--players", "2", "--games", "100", "--seed", "1")
    # each count named by its seat, in words a screen reader reads (it printed "1:48  2:51", read "1 colon 48")
    assert code == 0 and f"of them by the tiebreak          seat 1: {capped[0]}, seat 2: {capped[1]}\n" in out
    assert "10th to 90th percentile " in out and "10-90%" not in out and "games of 5 to 15 minutes" in out


def test_default_bots_are_human_spread_and_tight_is_an_option(capsys: pytest.CaptureFixture[str]) -> None:
    """Wider, published reaction spread: fewer near-simultaneous calls, so ties fall
    relative to won snaps (tight bots: about 2.4 ties per won snap with 4 players)."""
    human = simulate.simulate([4], games=100, seed=2).to_data()
    tight = simulate.simulate([4], games=100, seed=2, spread="tight").to_data()
    assert (human["bots_spread"], tight["bots_spread"]) == ("human", "tight")
    h, t = human["results"][0], tight["results"][0]
    assert h["ties_per_game"] / h["snaps_won_per_game"] < 1.5 < t["ties_per_game"] / t["snaps_won_per_game"]
    code, out, _ = _cli(capsys, "--games", "2", "--spread", "tight")
    assert code == 0 and "bots: tight reaction spread (sigma 0.2" in out
    with pytest.raises(SystemExit) as info:  # argparse's own clear message
        _cli(capsys, "--games", "2", "--spread", "sloppy")
    err = capsys.readouterr().err
    assert info.value.code == 2 and "choose from 'human', 'tight'" in err and "Traceback" not in err


@pytest.mark.parametrize("variant", ["classic", "double", "single-pile", "animal"])
def test_a_simulated_games_log_replays_to_the_same_table(variant: str) -> None:
    from voicesnap import gamelog

    log: list = []
    simulate.play_game(4, 3, variant=variant, log=log)
    assert type(log[0]) is rules.GameStarted and type(log[1]) is rules.Dealt
    game = gamelog.replay(log)
    over = [ev for ev in log if type(ev) is rules.GameOver][0]
    assert game.is_over() and game.winner == over.winner
    assert tuple(game.holds(s) for s in range(4)) == over.cards


def test_ctrl_c_while_the_command_line_starts_up_stops_it_without_a_traceback(
        capsys: pytest.CaptureFixture[str]) -> None:
    """A real SIGINT while the command line builds its parser (it loads every command's module: about half
    a second of a command's start) reached the terminal as a Python traceback."""
    import signal
    import sys

    def interrupt(frame, event, _arg):  # type: ignore[no-untyped-def]
        if event == "call" and frame.f_code.co_name == "build_parser":
            sys.setprofile(None)
            signal.raise_signal(signal.SIGINT)  # Python's own handler: KeyboardInterrupt inside build_parser

    before = signal.signal(signal.SIGINT, signal.default_int_handler)  # as in a command (an xdist worker's may differ)
    sys.setprofile(interrupt)
    try:
        code = main(["simulate", "--games", "1"])
    except KeyboardInterrupt:
        pytest.fail("Ctrl-C while starting up escaped main(): the player saw a traceback")
    finally:
        sys.setprofile(None)
        signal.signal(signal.SIGINT, before)
    got = capsys.readouterr()
    assert code == 130 and got.err == "voicesnap: stopped.\n" and got.out == "", got


def test_a_mistyped_option_is_one_line_without_the_usage(capsys: pytest.CaptureFixture[str]) -> None:
    """argparse printed the command's whole usage before the mistake (15 lines of "[--pace PACE]" for play),
    which a screen reader reads out bracket by bracket: the mistake is now the one line, with where the
    options are listed."""
    for argv, said in ((["simulate", "--games", "x"], "voicesnap simulate: argument --games: invalid int value: 'x'"),
                       (["play", "--players", "A,B", "--verbosity", "loud"],
                        "voicesnap play: argument --verbosity: invalid choice: 'loud' (choose from 'ranks', 'names', "
                        "'all')"),
                       (["bogus"], "voicesnap: argument COMMAND: invalid choice: 'bogus'")):
        with pytest.raises(SystemExit) as stop:
            main(argv)
        err = capsys.readouterr().err
        assert stop.value.code == 2 and err.count("\n") == 1 and "usage:" not in err and "[" not in err, err
        assert err.startswith(said) and err.endswith(f"; {said.split(':')[0]} --help lists the options\n"), err


@pytest.mark.parametrize("variant", variants.names())
def test_the_report_reads_aloud_in_words_for_every_variant(variant: str, capsys: pytest.CaptureFixture[str]) -> None:
    """Read by a screen reader, the report said ids ("variant single-pile", "best-of-3"), symbols
    ("pools formed / won", "40%", "cycle/flip cap", "100 ms"), "flipper may call" in Speed Snap, where
    everyone flips at once, and counted Slapjack's slaps as "snaps won"."""
    code, out, _ = _cli(capsys, "--variant", variant, "--players", "2", "--games", "3", "--session", "best-of-3")
    title = variants.get(variant).title
    assert code == 0 and out.startswith(f"voicesnap simulate: {title}, 3 sessions, each best of 3 games, per "), out
    assert not any(sym in out for sym in ("/", "%", " ms", " s,", "best-of", variant + ",")), out
    assert "tie window 100 milliseconds" in out and "sessions with sudden death" in out
    assert ("the flipper may call" in out) == (variant != "speed"), out
    assert ("slaps won per game" in out) == (variant == "slapjack"), out
    # Speed Snap's one flip turns everyone's card: counted as rounds ("flips per game" read as single cards)
    assert ("rounds per game" in out and "matches per round" in out and "one round every" in out
            and "flip every" not in out) == (variant == "speed"), out
    won = simulate.simulate([2], games=5, seed=1, variant=variant).to_data()["results"][0]
    assert (won["slaps_won_per_game"] > 0) == (variant == "slapjack") and won["snaps_won_per_game"] > 0, won
