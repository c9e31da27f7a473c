"""When the table rules: as soon as every rival that could tie is in (voicesnap.bursts), with the
worst-case lag only as the floor. Positions are on the audio clock, never wall time.

* The pure part (RivalWatch in TableLoop): a rival whose speech started inside the tie window
  holds the ruling until its call arrives, however late; speech without a call holds it until
  the spotter had its latency; with no speech about, the call is ruled when it arrives.
* The whole table on real audio (real VoskSpotter per channel, BurstTracker, referee): a lone
  "snap" is ruled within RULED_WITHIN_S of the end of the word, and two calls 30 ms apart
  on two microphones still tie.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

from voicesnap import rules
from voicesnap.audio import ArraySource, FileSource
from voicesnap.bursts import BurstTracker, RivalWatch, SpeechBurst
from voicesnap.referee import Call, Referee
from voicesnap.spotters import Detection
from voicesnap.table import (
    Log, SPOTTER_LATENCY, TableLoop, TableSession, TableStep, VOICE_LAG, VOICE_POOL_LAG, describe,
    play_session,
)

sys.path.insert(0, str(Path(__file__).parent))
import table_script as ts  # noqa: E402

PLAYERS = ("Alice", "Bob", "Cara")
RULED_WITHIN_S = 0.30  # the target: the ruling starts within 300 ms of the word's end


@pytest.fixture(autouse=True)
def _tmp_data(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("VOICESNAP_DATA_DIR", str(tmp_path / "data"))


def _first_match(seed: int) -> float:
    probe = rules.Game(PLAYERS, seed)
    for k in range(1, 200):
        if any(isinstance(e, rules.Flipped) and e.match for e in probe.flip(float(k))):
            return float(k)
    raise AssertionError("no match in 200 flips")


def _loop(seed: int, rivals: RivalWatch | None) -> TableLoop:
    game = rules.Game(PLAYERS, seed)
    return TableLoop(Referee(game, 0.5), PLAYERS, pace=1.0, make_call=Call, describe=describe,
                     is_over=lambda ev: isinstance(ev, rules.GameOver), lag=VOICE_LAG, rivals=rivals)


def _ruled(loop: TableLoop, until: float, feed: dict[float, tuple[list, list]]) -> list[tuple[float, object, str]]:
    """Step every 20 ms; ``feed`` maps a time to (detections, bursts) arriving then.
    Returns (heard position, ruling, by) for every ruling."""
    out = []
    t, keys = 0.0, sorted(feed)
    while t <= until + 1e-9:
        dets: list = []
        bursts: list = []
        while keys and keys[0] <= t + 1e-9:
            d, b = feed[keys.pop(0)]
            dets += d
            bursts += b
        by = ""
        for a in loop.step(round(t, 4), dets, bursts):
            if isinstance(a, Log) and isinstance(a.record, TableStep) and a.record.kind == "advance":
                by = a.record.by
            if isinstance(a, Log) and isinstance(a.record, rules.RULINGS):
                out.append((round(t, 4), a.record, by))
        t += 0.02
    return out


def _call(player: str, ch: int, onset: float, length: float = 0.35) -> Detection:
    return Detection("snap", onset, onset + length, 0.9, channel=ch, player=player, engine="vosk")


def test_a_lone_call_is_ruled_when_it_arrives_not_after_the_worst_case_lag() -> None:
    t = _first_match(7)
    call = _call("Alice", 0, t + 0.3, length=0.45)  # arrives after onset + decision window
    arrive = round(call.end + 0.1, 2)
    feed = {round(call.onset + 0.04, 2): ([], [SpeechBurst(0, call.onset)]),
            arrive: ([call], [SpeechBurst(0, call.onset, call.end)])}
    fast = _ruled(_loop(7, RivalWatch(SPOTTER_LATENCY)), t + 2, feed)
    slow = _ruled(_loop(7, None), t + 2, feed)
    assert [type(r).__name__ for _, r, _ in fast] == ["SnapWon"] == [type(r).__name__ for _, r, _ in slow]
    assert fast[0][0] == pytest.approx(arrive, abs=0.021) and fast[0][2] == "rivals"
    assert slow[0][0] >= call.onset + 0.5 + VOICE_LAG - 1e-6  # the old worst case, for comparison


def test_a_rival_that_started_inside_the_tie_window_is_waited_for() -> None:
    t = _first_match(7)
    first, rival = _call("Alice", 0, t + 0.3), _call("Cara", 2, t + 0.37, length=0.55)
    late = round(rival.end + 0.25, 2)  # a long word, slowly recognised (still inside the lag floor)
    bursts = {round(first.onset + 0.04, 2): ([], [SpeechBurst(0, first.onset)]),
              round(rival.onset + 0.04, 2): ([], [SpeechBurst(2, rival.onset)]),
              round(first.end + 0.08, 2): ([first], [SpeechBurst(0, first.onset, first.end)]),
              round(rival.end + 0.12, 2): ([], [SpeechBurst(2, rival.onset, rival.end)])}
    got = _ruled(_loop(7, RivalWatch(SPOTTER_LATENCY)), t + 3, {**bursts, late: ([rival], [])})
    assert [(type(r).__name__, by) for _, r, by in got] == [("TieToPool", "rivals")]
    assert got[0][0] == pytest.approx(late, abs=0.021)
    # Without the rival's burst the first call is ruled as soon as it is in, and the rival is late:
    # it is the burst that keeps it in time, nothing else.
    unseen = {k: (d, [x for x in b if x.channel != 2]) for k, (d, b) in bursts.items()}
    alone = _ruled(_loop(7, RivalWatch(SPOTTER_LATENCY)), t + 3, {**unseen, late: ([rival], [])})
    assert [type(r).__name__ for _, r, _ in alone] == ["SnapWon", "CallIgnored"]


def test_talk_on_another_microphone_without_a_call_holds_the_ruling_only_until_it_is_judged() -> None:
    t = _first_match(7)
    call = _call("Alice", 0, t + 0.3)
    talk_on, talk_end = t + 0.2, t + 0.9  # someone speaking over it on channel 1, no call
    feed = {round(talk_on + 0.04, 2): ([], [SpeechBurst(1, talk_on)]),
            round(call.onset + 0.04, 2): ([], [SpeechBurst(0, call.onset)]),
            round(call.end + 0.1, 2): ([call], [SpeechBurst(0, call.onset, call.end)]),
            round(talk_end + 0.12, 2): ([], [SpeechBurst(1, talk_on, talk_end)])}
    got = _ruled(_loop(7, RivalWatch(SPOTTER_LATENCY)), t + 3, feed)
    assert [type(r).__name__ for _, r, _ in got] == ["SnapWon"]
    assert got[0][0] == pytest.approx(talk_end + SPOTTER_LATENCY, abs=0.021)


def test_crosstalk_of_a_call_on_other_microphones_does_not_hold_the_ruling_but_a_rival_does() -> None:
    t = _first_match(7)
    call = _call("Alice", 0, t + 0.3, length=0.45)
    arrive = round(call.end + 0.1, 2)
    base = {round(call.onset + 0.04, 2): ([], [SpeechBurst(0, call.onset), SpeechBurst(1, call.onset + 0.003)]),
            arrive: ([call], [SpeechBurst(0, call.onset, call.end, 80.0)])}
    faint = {**base, round(call.end + 0.12, 2): ([], [SpeechBurst(1, call.onset + 0.003, call.end + 0.01, 62.0)])}
    got = _ruled(_loop(7, RivalWatch(SPOTTER_LATENCY)), t + 3, faint)
    assert [(type(r).__name__, by) for _, r, by in got] == [("SnapWon", "rivals")]
    assert got[0][0] == pytest.approx(call.end + 0.12, abs=0.021)  # when the faint burst is seen to end
    # As loud as the call on its own microphone: a voice there, which may yet be a call.
    loud = {**base, round(call.end + 0.12, 2): ([], [SpeechBurst(1, call.onset + 0.003, call.end + 0.01, 78.0)])}
    got = _ruled(_loop(7, RivalWatch(SPOTTER_LATENCY)), t + 3, loud)
    assert got[0][0] == pytest.approx(call.end + 0.01 + SPOTTER_LATENCY, abs=0.021)


def test_a_call_the_tracker_did_not_see_falls_back_to_the_worst_case_lag() -> None:
    """A call with no burst of its own: the tracker is missing speech (too faint, too noisy), so a
    rival may be missed the same way: rulings go back to the worst-case lag for a while."""
    t = _first_match(7)
    seen = _call("Alice", 0, t + 0.3, length=0.45)
    unseen = _call("Bob", 1, t + 0.3, length=0.45)
    feed = {round(t + 0.1, 2): ([], [SpeechBurst(0, t + 0.05, t + 0.08, 40.0)]),  # the tracker is running
            round(t + 0.34, 2): ([], [SpeechBurst(0, seen.onset)]),
            round(seen.end + 0.1, 2): ([seen], [SpeechBurst(0, seen.onset, seen.end, 70.0)])}
    got = _ruled(_loop(7, RivalWatch(SPOTTER_LATENCY)), t + 3, feed)
    assert got[0][2] == "rivals"
    blind = {k: v for k, v in feed.items() if k != round(t + 0.34, 2)}
    blind[round(seen.end + 0.1, 2)] = ([unseen], [])
    got = _ruled(_loop(7, RivalWatch(SPOTTER_LATENCY)), t + 3, blind)
    assert got[0][2] == "lag" and got[0][0] >= unseen.onset + 0.5 + VOICE_LAG - 1e-6


def test_a_call_said_in_two_bursts_resolves_both() -> None:
    """"snap ... pool" with a pause longer than the tracker's hangover makes two bursts; the one
    "snap pool" detection stands for both (its "pool" half does not wait for the spotter latency)."""
    t = _first_match(7)
    call = Detection("snap pool", t + 0.3, t + 1.0, 0.9, channel=0, player="Alice", engine="vosk")
    feed = {round(t + 0.34, 2): ([], [SpeechBurst(0, t + 0.3)]),
            round(t + 0.78, 2): ([], [SpeechBurst(0, t + 0.3, t + 0.6), SpeechBurst(0, t + 0.78)]),
            round(t + 1.1, 2): ([call], [SpeechBurst(0, t + 0.78, t + 1.0)])}
    got = _ruled(_loop(7, RivalWatch(1.2)), t + 3, feed)
    assert got and got[0][0] == pytest.approx(t + 1.1, abs=0.021) and got[0][2] == "rivals"


def test_the_burst_tracker_finds_each_take_on_its_own_channel() -> None:
    take = ts.takes("alice", "snap")[0]
    rate = ts.RATE
    track = np.random.default_rng(0).normal(0, 3, (3 * rate, 2))
    a = int(1.0 * rate)
    track[a : a + len(take), 1] += take
    track[a + 48 : a + len(take), 0] += take[:-48] * 0.1  # crosstalk on the other microphone, 20 dB down
    tracker = BurstTracker([0, 1])
    got: list[SpeechBurst] = []
    for chunk in ArraySource(np.clip(track, -32768, 32767).astype(np.int16), rate, chunk_frames=320):
        got += tracker.accept(chunk)
    got += tracker.flush()
    ends = {b.channel: b for b in got if b.end is not None}
    assert sorted(ends) == [0, 1] and len(got) == 4  # one start and one end on each
    assert abs(ends[1].onset - 1.0) < 0.03
    assert abs(ends[1].end - (1.0 + len(take) / rate)) < 0.08
    assert ends[1].peak - ends[0].peak == pytest.approx(20.0, abs=1.0)


class _Memory(list):
    def write(self, *records: object) -> None:
        self.extend(records)


def _play(script: ts.Script, tmp: Path, model: str) -> list:
    from voicesnap.spotters.channels import ChannelSpotters
    from voicesnap.spotters.vosk_spotter import VoskSpotter, load_model
    from voicesnap.table import PoolClaim

    track = ts.render(script, tmp / "mic.wav", per_player=True)
    loaded = load_model(model)
    pool_flag: list = []
    per = {ch: VoskSpotter(loaded, channel=ch, pool_exists=PoolClaim(pool_flag))
           for ch in range(len(script.players))}
    spotter = ChannelSpotters(per, dict(enumerate(script.players)))
    settings = TableSession(players=script.players, seed=script.seed, pace=script.pace, engine="vosk",
                            lag=VOICE_LAG, pool_lag=VOICE_POOL_LAG,
                            channels={p: i for i, p in enumerate(script.players)})
    log = _Memory()
    play_session(settings, log, chunks=FileSource(track, chunk_frames=320), spotter=spotter,
                 lines=lambda _s: None, pool_flag=pool_flag)
    return log


def _ruling_positions(log: list) -> list[tuple[object, float]]:
    heard, out = None, []
    for r in log:
        if isinstance(r, TableStep) and r.heard is not None:
            heard = r.heard
        if isinstance(r, rules.RULINGS):
            out.append((r, heard))
    return out


@pytest.mark.vosk_model
def test_a_lone_snap_through_vosk_is_ruled_within_300_ms_of_its_end(tmp_path: Path) -> None:
    model = ts.model_or_skip()
    script = ts.plan(seed=11, pace=2.0, players=("alice", "bob", "cara"), max_flips=40, wanted=["snap-won"])
    (shout,) = script.shouts
    end = shout.onset + len(ts.takes(shout.player, "snap")[0]) / ts.RATE
    got = _ruling_positions(_play(script, tmp_path, model))
    assert [(type(r).__name__, r.player) for r, _ in got] == [("SnapWon", shout.player)]
    assert 0 <= got[0][1] - end <= RULED_WITHIN_S, got[0][1] - end


@pytest.mark.vosk_model
def test_two_calls_30_ms_apart_on_two_microphones_still_tie(tmp_path: Path) -> None:
    model = ts.model_or_skip()
    script = ts.plan(seed=11, pace=2.0, players=("alice", "bob", "cara"), max_flips=40, wanted=["tie-to-pool"])
    a, b = script.shouts
    assert round(b.onset - a.onset, 3) == 0.03
    got = _ruling_positions(_play(script, tmp_path, model))
    assert [(type(r).__name__, sorted(r.players)) for r, _ in got] == [("TieToPool", sorted([a.player, b.player]))]


def test_a_call_the_referee_refuses_is_noted_and_the_game_goes_on() -> None:
    """A call the referee refuses outright (here a voice the game does not seat; in play, a player
    already out, or crosstalk heard on an out player's microphone) is logged, never a crash."""
    from voicesnap.table import TableNote

    game = rules.Game(PLAYERS, 7)
    loop = TableLoop(Referee(game, 0.5), PLAYERS + ("Dan",), pace=1.0, make_call=Call, describe=describe,
                     is_over=lambda ev: isinstance(ev, rules.GameOver))
    t = _first_match(7)
    actions = loop.step(t + 0.6, [_call("Dan", 3, t + 0.3), _call("Alice", 0, t + 0.32)])
    notes = [a.record.text for a in actions if isinstance(a, Log) and isinstance(a.record, TableNote)]
    assert len(notes) == 1 and "Dan" in notes[0] and "not judged" in notes[0]
    actions += loop.step(t + 1.5)
    assert [type(a.record).__name__ for a in actions if isinstance(a, Log)
            and isinstance(a.record, rules.RULINGS)] == ["SnapWon"]


def test_a_spotter_that_fails_stops_the_game_instead_of_freezing_it() -> None:
    """The audio is the game's clock: when the thread that hears it died of an error, nothing more was
    heard, no card was turned and the game waited for ever (a replay hung). It now stops, says why and
    logs it, and can be resumed."""
    from voicesnap.table import LISTENING_FAILED, TableEnd, TableNote

    class Breaks:
        def __init__(self) -> None:
            self.chunks = 0

        def accept(self, chunk):  # noqa: ANN001, ANN202
            self.chunks += 1
            if self.chunks == 250:  # 5 s in
                raise RuntimeError("the model's file went away")
            return []

        def flush(self) -> list:
            return []

    quiet = np.zeros((16000 * 60, 1), dtype=np.int16)
    log, shown = _Memory(), []
    settings = TableSession(players=PLAYERS, seed=3, pace=1.0, engine="vosk", lag=VOICE_LAG, pool_lag=VOICE_POOL_LAG)
    result = play_session(settings, log, chunks=ArraySource(quiet, 16000, chunk_frames=320), spotter=Breaks(),
                          lines=shown.append)
    assert result.reason == LISTENING_FAILED and result.winner is None
    notes = [r.text for r in log if isinstance(r, TableNote)]
    assert any(n.startswith(LISTENING_FAILED) and "the model's file went away" in n for n in notes), notes
    assert [r.reason for r in log if isinstance(r, TableEnd)] == [LISTENING_FAILED]
    assert any("the model's file went away" in line for line in shown), shown
