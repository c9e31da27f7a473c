"""The listening harness measures what it says: clock-true latency, per-engine isolation, honest rows."""

from __future__ import annotations

import math

import pytest

from bench import spotting
from bench.spotting import EngineRun, feed, run_engine, summarize
from voicesnap.corpus import load_corpus, score
from voicesnap.spotters import Detection

FIXTURES = {f.name: f for f in load_corpus()}


def _rows(rows):
    return {(r.metric): r for r in rows}


def test_a_perfect_engine_scores_perfectly() -> None:
    """Ground truth fed back as detections: recall 1, no false calls, zero onset error, known latency."""
    names = ["clean_alice", "nearmiss_bob", "overlap_050ms_dev_alice", "commands_1"]
    fixtures = [FIXTURES[n] for n in names]
    run = EngineRun("oracle", audio_seconds=sum(f.duration for f in fixtures), cpu_seconds=1.0)
    for f in fixtures:
        run.detections[f.name] = [
            Detection(s.text, s.onset / f.rate, (s.end + 1) / f.rate, 1.0, detected_at=(s.end + 1) / f.rate + 0.1)
            for s in f.targets(spotting.CALL_WORDS + spotting.COMMAND_WORDS)
        ]
    rows = _rows(summarize(run, fixtures))
    assert rows["recall, calls"].value == 1.0
    assert rows["false calls per hour of non-call audio"].value == 0
    assert rows["recall, voice commands"].value == 1.0
    assert rows["onset error (absolute), p95"].value == pytest.approx(0, abs=1e-6)
    assert rows["latency word end -> event, p95"].value == pytest.approx(100)
    assert rows["overlapping calls: both heard, offset within 10 ms"].value == 1.0
    assert rows["CPU real-time factor (one core)"].value == pytest.approx(1.0 / run.audio_seconds)


def test_the_slowest_calls_are_listed_latest_first(capsys) -> None:
    """``--slowest``: each call's lag from its word's end, the latest first, with the player named."""
    fx = FIXTURES["clean_alice"]
    calls = fx.targets(spotting.CALL_WORDS)
    lags = [0.05 * (i + 1) for i in range(len(calls))]
    dets = {fx.name: [Detection(s.text, s.onset / fx.rate, s.end / fx.rate, 1.0, player="alice",
                                detected_at=s.end / fx.rate + lag) for s, lag in zip(calls, lags)]}
    spotting.print_slowest("none", [fx], {fx.name: score(fx, dets[fx.name], words=spotting.CALL_WORDS)}, 2)
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 2
    for line, lag, seg in zip(lines, sorted(lags, reverse=True), calls[::-1]):
        assert line.split()[:3] == ["SLOW", "none", f"{lag * 1000:.0f}"]
        assert f"{seg.onset / fx.rate:.2f}s" in line and line.endswith("named alice")


def test_a_deaf_engine_and_a_broken_one_are_reported() -> None:
    fixtures = [FIXTURES["clean_alice"], FIXTURES["long_quiet_room"]]
    run = EngineRun("deaf", detections={f.name: [] for f in fixtures}, audio_seconds=1.0)
    rows = _rows(summarize(run, fixtures))
    assert rows["recall, calls"].value == 0.0
    assert math.isnan(rows["onset error (absolute), median"].value)

    def broken():
        raise RuntimeError("model file is corrupt")

    result = run_engine("broken", broken, fixtures)
    assert "model file is corrupt" in (result.error or "")
    assert summarize(result, fixtures)[0].value == "error"


def test_peer_through_the_harness_gets_clock_true_latency() -> None:
    pytest.importorskip("pocketsphinx", reason="pocketsphinx is not installed (pip install -e '.[dev]')")
    from bench.peers import PocketSphinxSpotter

    fx = FIXTURES["clean_alice"]
    run = run_engine("pocketsphinx", PocketSphinxSpotter, [fx])
    assert run.error is None, run.error
    dets = run.detections[fx.name]
    assert dets, "the peer found nothing in six clean calls"
    chunk = fx.rate * spotting.CHUNK_MS // 1000
    for d in dets:
        assert d.detected_at is not None and d.detected_at >= d.end
        assert round(d.detected_at * fx.rate) % chunk == 0 or d.detected_at == fx.duration
    assert run.cpu_seconds > 0 and run.peak_rss_mb >= 0
    again, _ = feed(PocketSphinxSpotter(), fx.read()[:, :1], fx.rate, chunk)
    assert [(d.word, d.onset) for d in again] == [(d.word, d.onset) for d in dets]  # deterministic


def test_the_false_call_interval_is_the_exact_poisson_one() -> None:
    """Garwood's 95% limits (tabulated: 0 -> 0-3.689, 1 -> 0.0253-5.572, 4 -> 1.090-10.242), per hour."""
    assert spotting.poisson_interval(0, 1.0) == pytest.approx((0.0, 3.689), abs=1e-3)
    assert spotting.poisson_interval(1, 1.0) == pytest.approx((0.0253, 5.572), abs=1e-3)
    assert spotting.poisson_interval(4, 0.5) == pytest.approx((2.180, 20.484), abs=2e-3)
    assert all(math.isnan(v) for v in spotting.poisson_interval(3, 0.0))


def test_the_no_call_stream_is_rendered_once_holds_no_call_and_is_scored(tmp_path, monkeypatch) -> None:
    """The long no-call stream: six kinds of file, nothing a detector should report, the same audio from
    the same code, a second run reads the cache; false calls are counted word by word and by player."""
    import shutil

    if shutil.which("espeak-ng") is None:
        pytest.skip("espeak-ng is not installed (apt-get install espeak-ng)")
    from bench import bench_nocall as N

    monkeypatch.setattr(N, "FILE_SECONDS", 8)
    fixtures = N.render_stream(0.8, cache=tmp_path / "a")
    assert [f.name.split("_", 2)[2] for f in fixtures] == list(N.KINDS)
    assert all(f.duration == 8 and not f.targets() for f in fixtures)
    assert {s.kind for f in fixtures for s in f.segments} >= {"chatter", "nearmiss", "announcement"}
    assert [f.path for f in N.render_stream(0.8, cache=tmp_path / "a")] == [f.path for f in fixtures]  # cached
    assert len(list((tmp_path / "a").iterdir())) == 1  # no half-written render left beside it
    again = N.render_stream(0.8, cache=tmp_path / "b")
    assert all((f.read() == g.read()).all() for f, g in zip(fixtures, again))  # deterministic

    class Deaf:
        name = "deaf"

        def accept(self, chunk):
            return []

        def flush(self):
            return []

    rows = {r.metric: r for r in N.rows_for("deaf", Deaf, fixtures)}
    assert rows["no-call hour: false calls per hour"].value == 0
    said = [s for f in fixtures for s in f.segments if s.kind == "nearmiss"]
    run = EngineRun("eager", audio_seconds=sum(f.duration for f in fixtures))
    for f in fixtures:  # "snap" at every near-miss word, named to alice
        run.detections[f.name] = [Detection("snap", s.onset / f.rate, s.end / f.rate, 0.9, player="alice")
                                  for s in f.segments if s.kind == "nearmiss"]
    monkeypatch.setattr(N, "run_engine", lambda name, factory, fx: run)
    rows = {r.metric: r for r in N.rows_for("eager", Deaf, fixtures)}
    hours = sum(f.duration for f in fixtures) / 3600
    assert rows["no-call hour: false calls per hour"].value == pytest.approx(len(said) / hours)
    assert rows["no-call hour: near-miss words and sentences taken for a call"].value == 1.0
    assert rows["no-call hour: false calls named to a player, per hour"].value == pytest.approx(len(said) / hours)
    assert f"{len(said)} in " in rows["no-call hour: false calls per hour"].note


def test_two_calls_at_the_same_instant_named_crosswise_count_as_named_right() -> None:
    """emma and finn call at the same instant on one mic (overlap_000ms_emma_finn); an engine that names
    both, finn's detection 0 ms and emma's 5 ms after the true onset, is paired crosswise by the scorer
    (onset only), and the game view counted two calls given to the wrong player. Two calls within
    TIE_TOLERANCE have no order to get right: each counts as named right. 20 ms apart (cara before dev)
    the order is there to get right, and a swap still counts as wrong."""
    def run(name: str, named: dict[str, float]):
        f = FIXTURES[name]
        end = max(s.end for s in f.segments) / f.rate
        dets = [Detection("snap", t, end, 1.0, player=p, detected_at=end + 0.2) for p, t in named.items()]
        calls = score(f, dets, words=spotting.CALL_WORDS)
        rows = spotting._game_view("combined", calls, [], 60.0, "listening")
        return _rows(rows)["one mic, as the game acts on it: calls given to the right player"]

    row = run("overlap_000ms_emma_finn", {"finn": 0.800, "emma": 0.805})
    assert row.value == 1.0 and "to the wrong player 0" in row.note, row
    row = run("overlap_020ms_cara_dev", {"dev": 0.800, "cara": 0.815})  # cara called 20 ms first
    assert row.value == 0.0 and "to the wrong player 2" in row.note, row
    row = run("overlap_020ms_cara_dev", {"cara": 0.800, "dev": 0.805})
    assert row.value == 1.0, row
