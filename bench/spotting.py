"""The listening harness: run ANY Spotter over the fixture corpus and measure it.

Every engine is judged the same way:

- audio goes in as 20 ms chunks on the one clock, a fresh spotter per fixture
  (made by the engine's factory), ``flush()`` at the end of each file;
- ``detected_at`` is set by the harness to the end of the chunk whose
  ``accept`` (or the ``flush``) returned the detection, so latency is audio
  time from the word's last sample to the chunk that revealed it, whatever the
  engine claims;
- detections are scored with ``voicesnap.corpus.score`` (word + onset within
  0.25 s, closest first) against the calls and the voice commands;
- CPU is ``time.process_time()`` spent inside ``accept``/``flush`` only (all
  threads of the process, so it is CPU-seconds per audio-second: the real-time
  factor on one core); the engine's process is pinned to one CPU; model
  loading is timed separately;
- peak memory is the ``ru_maxrss`` growth of a forked child process that runs
  one engine over the whole set (baseline: the child's RSS right after the fork,
  with all fixture audio already loaded), so native memory (Vosk, PocketSphinx)
  counts too, which tracemalloc would miss.
"""

from __future__ import annotations

import dataclasses
import math
import multiprocessing
import os
import resource
import time
import traceback
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Protocol

import numpy as np

from voicesnap.audio import ArraySource
from voicesnap.corpus import Fixture, Score, Segment, load_corpus, merge, percentile, score
from voicesnap.spotters import Detection, Spotter, take_refusals
from voicesnap.vocabulary import SNAP, SNAP_POOL, command_phrases

from . import Row

CALL_WORDS: tuple[str, ...] = (SNAP, SNAP_POOL)  # the calls of Snap (slap is Slapjack's)
COMMAND_WORDS: tuple[str, ...] = tuple(command_phrases().values())
CHUNK_MS = 20
TIE_TOLERANCE = 0.010  # a tie is recovered when the detected offset is within 10 ms of the true one

# A small, varied subset for --quick (about 2 minutes of audio: four engines stay
# under a minute of CPU): clean, near misses, ties, babble, calls over the
# announcer (which is also the echo check), clipped, quiet and commands.
QUICK = (
    "clean_alice", "clean_dev", "nearmiss_bob", "overlap_050ms_dev_alice", "overlap_120ms_cara_finn",
    "noisy_babble_10db", "noisy_over_announcer", "clipped_calls", "quiet_calls", "commands_1",
)

Factory = Callable[[], Spotter]


class PoolSpotter(Spotter, Protocol):
    """A spotter told whether a Snap-pool claim is open (voicesnap.table.PoolClaim), as play tells it."""

    def set_pool_exists(self, value: bool) -> None: ...


PoolFactory = Callable[[], PoolSpotter]


@dataclass
class EngineRun:
    """Raw output of one engine over a set of fixtures (scored later, in the parent)."""

    engine: str
    detections: dict[str, list[Detection]] = field(default_factory=dict)
    cpu_seconds: float = 0.0
    audio_seconds: float = 0.0
    load_seconds: float = math.nan  # wall time of the first factory call (model loading)
    peak_rss_mb: float = math.nan
    error: str | None = None


def corpus(quick: bool) -> list[Fixture]:
    """The listening corpus (mono fixtures), or the quick subset."""
    fixtures = [f for f in load_corpus() if f.channels == 1]
    if quick:
        fixtures = [f for f in fixtures if f.name in QUICK]
    return fixtures


def feed(spotter: Spotter, samples: np.ndarray, rate: int, chunk_frames: int) -> tuple[list[Detection], float]:
    """Run one file through a spotter; returns detections (detected_at = emitting chunk's end) and CPU seconds."""
    found: list[Detection] = []
    cpu = 0.0
    end = 0
    for chunk in ArraySource(samples, rate, chunk_frames=chunk_frames):
        t0 = time.process_time()
        got = spotter.accept(chunk)
        cpu += time.process_time() - t0
        end = chunk.end
        found += [dataclasses.replace(d, detected_at=chunk.end / rate) for d in got]
    t0 = time.process_time()
    got = spotter.flush()
    cpu += time.process_time() - t0
    found += [dataclasses.replace(d, detected_at=end / rate) for d in got]
    return found, cpu


# Whether a Snap-pool claim is open while each part of a file plays (voicesnap.table.PoolClaim:
# the spotter then holds a "snap" to hear whether "pool" follows). "none": the usual case (a
# claim is open on about 1 flip in 13); "open": always (the worst case, and the old default);
# "mix": open only from 1.5 s before each true "snap pool" to 0.3 s after it, as in a game.
CLAIMS = ("none", "open", "mix")


def fixed_claim(value: bool) -> Callable[[float], bool]:
    """A claim state that never changes (``value`` bound now, not read from a loop's variable later)."""
    return lambda t: value


def claim_at(fx: Fixture, mode: str) -> Callable[[float], bool]:
    """Is a claim open at time t (s) of this fixture, in ``mode``."""
    if mode in ("none", "open"):
        return fixed_claim(mode == "open")
    spans = [(g.onset / fx.rate - 1.5, g.end / fx.rate + 0.3) for g in fx.targets((SNAP_POOL,))]
    return lambda t: any(a <= t <= b for a, b in spans)


def feed_claim(spotter: Any, samples: np.ndarray, rate: int, chunk_frames: int,
               claim: Callable[[float], bool]) -> list[Detection]:
    """``feed``, telling the spotter before each chunk whether a claim is open (as voicesnap play does)."""
    found: list[Detection] = []
    end = 0
    for chunk in ArraySource(samples, rate, chunk_frames=chunk_frames):
        spotter.set_pool_exists(claim(chunk.start / rate))
        end = chunk.end
        found += [dataclasses.replace(d, detected_at=chunk.end / rate) for d in spotter.accept(chunk)]
    found += [dataclasses.replace(d, detected_at=end / rate) for d in spotter.flush()]
    return found


def claim_rows(name: str, factory: Factory, fixtures: list[Fixture], audio: dict[str, np.ndarray],
               area: str = "listening", modes: Iterable[str] = CLAIMS, slowest: int = 0) -> list[Row]:
    """Detection latency (and what it costs in calls) with no claim open, a claim always open, and
    the game's mix, for an engine that takes ``set_pool_exists`` (others: no rows). ``slowest``: also
    print that many of each mode's slowest calls, which are what a p95 is made of."""
    probe = factory()
    if not callable(getattr(probe, "set_pool_exists", None)):
        return []
    rows: list[Row] = []
    for mode in modes:
        dets = {}
        for i, fx in enumerate(fixtures):
            spotter = probe if i == 0 else factory()
            dets[fx.name] = feed_claim(spotter, audio[fx.name], fx.rate, fx.rate * CHUNK_MS // 1000,
                                       claim_at(fx, mode))
        probe = factory()
        scores = {f.name: score(f, dets[f.name], words=CALL_WORDS) for f in fixtures}
        calls = merge(scores.values())
        lat = [x * 1000 for x in calls.latencies]
        false = [d for _, d in calls.false if d.word in CALL_WORDS]
        swaps = sum(1 for _, d, g in calls.confusions if d.word in CALL_WORDS and g.text in CALL_WORDS)
        if slowest:
            print_slowest(mode, fixtures, scores, slowest)
        label = {"none": "no claim open", "open": "claim open", "mix": "game mix"}[mode]
        rows.append(Row(area, f"latency word end -> event, {label}, median / p95",
                        f"{percentile(lat, 50):.0f} / {percentile(lat, 95):.0f}", "ms", "p95 <= 150",
                        f"{name}: {len(calls.hits)}/{calls.targets} calls, {len(false) - swaps} false, "
                        f"{swaps} snap/snap pool swaps"
                        + (" (with no claim every snap pool is heard as snap, by design)" if mode == "none" else "")))
    return rows


def print_slowest(mode: str, fixtures: list[Fixture], scores: dict[str, Score], n: int) -> None:
    """The ``n`` calls heard latest after their word ended, with who was named (``--slowest``), from
    each fixture's ``score`` of the calls."""
    late = []
    for fx in fixtures:
        for m in scores[fx.name].hits:
            if m.detection.detected_at is not None:
                late.append((m.detection.detected_at - m.segment.end / fx.rate, fx, m))
    for lag, fx, m in sorted(late, key=lambda t: -t[0])[:n]:
        print(f"SLOW  {mode:5} {lag * 1000:6.0f} ms  {fx.name:28} {m.segment.onset / fx.rate:7.2f}s "
              f"{m.segment.speaker:8} {m.segment.text:10} named {m.detection.player}")


def claim_open_row(run: EngineRun, fixtures: list[Fixture], area: str = "listening") -> list[Row]:
    """The main run's latency labelled as what it is for a spotter whose default holds "snap"
    for "pool" (VoskSpotter: pool_exists=True), beside ``claim_rows``' other modes."""
    if run.error:
        return []
    fixtures = [f for f in fixtures if f.name in run.detections]
    calls = merge(score(f, run.detections[f.name], words=CALL_WORDS) for f in fixtures)
    lat = [x * 1000 for x in calls.latencies]
    false = [d for _, d in calls.false if d.word in CALL_WORDS]
    swaps = sum(1 for _, d, g in calls.confusions if d.word in CALL_WORDS and g.text in CALL_WORDS)
    return [Row(area, "latency word end -> event, claim open, median / p95",
                f"{percentile(lat, 50):.0f} / {percentile(lat, 95):.0f}", "ms", "p95 <= 150",
                f"{run.engine}: the main run (a claim open throughout); {len(calls.hits)}/{calls.targets} calls, "
                f"{len(false) - swaps} false, {swaps} snap/snap pool swaps")]


def _current_rss_kb() -> float:
    with open("/proc/self/statm") as handle:
        return int(handle.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 1024


def _run(name: str, factory: Factory, fixtures: list[Fixture], audio: dict[str, np.ndarray]) -> EngineRun:
    out = EngineRun(name)
    try:
        t0 = time.perf_counter()
        first = factory()
        out.load_seconds = time.perf_counter() - t0
        for i, fx in enumerate(fixtures):
            spotter = first if i == 0 else factory()
            dets, cpu = feed(spotter, audio[fx.name], fx.rate, fx.rate * CHUNK_MS // 1000)
            out.detections[fx.name] = dets
            out.cpu_seconds += cpu
            out.audio_seconds += fx.duration
    except Exception:
        out.error = traceback.format_exc(limit=6)
    return out


def _child(conn: Any, name: str, factory: Factory, fixtures: list[Fixture], audio: dict[str, np.ndarray]) -> None:
    if hasattr(os, "sched_setaffinity"):  # one core, literally: a multithreaded engine cannot spread out
        os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})
    base = _current_rss_kb()
    result = _run(name, factory, fixtures, audio)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KiB on Linux
    result.peak_rss_mb = max(0.0, (peak - base) / 1024)
    conn.send(result)
    conn.close()


def run_engine(name: str, factory: Factory, fixtures: list[Fixture], *, isolate: bool = True,
               audio: dict[str, np.ndarray] | None = None) -> EngineRun:
    """Run one engine over ``fixtures``; in a forked child (for peak memory) when ``isolate``."""
    audio = audio if audio is not None else {f.name: f.read()[:, :1] for f in fixtures}
    if not isolate or "fork" not in multiprocessing.get_all_start_methods():
        return _run(name, factory, fixtures, audio)
    ctx = multiprocessing.get_context("fork")
    parent, child = ctx.Pipe(duplex=False)
    proc = ctx.Process(target=_child, args=(child, name, factory, fixtures, audio))
    proc.start()
    child.close()
    try:
        result = parent.recv()
    except EOFError:
        result = EngineRun(name, error=f"engine process died (exit code {proc.exitcode})")
    proc.join()
    return result


# --------------------------------------------------------------------------- metrics


def poisson_interval(k: int, hours: float, level: float = 0.95) -> tuple[float, float]:
    """The exact (Garwood) interval for a rate of ``k`` events in ``hours``, per hour."""
    if hours <= 0:
        return math.nan, math.nan

    def cdf(n: int, mu: float) -> float:
        term = total = math.exp(-mu)
        for i in range(1, n + 1):
            term *= mu / i
            total += term
        return total

    def solve(n: int, p: float) -> float:  # the mu where P(X <= n) = p (decreasing in mu)
        lo, hi = 0.0, 10.0 + 5.0 * n
        for _ in range(100):
            mid = 0.5 * (lo + hi)
            lo, hi = (mid, hi) if cdf(n, mid) > p else (lo, mid)
        return 0.5 * (lo + hi)

    tail = (1.0 - level) / 2
    lower = 0.0 if k == 0 else solve(k - 1, 1.0 - tail)
    return lower / hours, solve(k, tail) / hours


def _by_category(fixtures: Iterable[Fixture], scores: dict[str, Score]) -> dict[str, Score]:
    groups: dict[str, list[Score]] = {}
    for fx in fixtures:
        key = fx.category
        if fx.category == "noisy":  # noisy20/10/5 by SNR; the rest by name (over_announcer)
            key = f"noisy{int(fx.snr_db)}" if fx.snr_db is not None else fx.name.removeprefix("noisy_")
        groups.setdefault(key, []).append(scores[fx.name])
    return {k: merge(v) for k, v in groups.items()}


def _ties(fixtures: Iterable[Fixture], scores: dict[str, Score]) -> tuple[int, int]:
    """Overlap fixtures where both calls were heard and their offset came out within 10 ms."""
    ok = total = 0
    for fx in fixtures:
        if fx.category != "overlap":
            continue
        total += 1
        hits = [m for m in scores[fx.name].hits if m.segment.text in CALL_WORDS]
        if len(hits) == 2:
            a, b = sorted(hits, key=lambda m: m.segment.onset)
            true = (b.segment.onset - a.segment.onset) / fx.rate
            got = b.detection.onset - a.detection.onset
            ok += abs(got - true) <= TIE_TOLERANCE
    return ok, total


def named_as(hits: Iterable[Any]) -> dict[int, str | None]:
    """The player each hit's call counts as named to (by ``id`` of the hit): its detection's, except that
    two calls whose true onsets are within TIE_TOLERANCE of each other (two players at once on one mic)
    have no order to get right, so when their two detections name the two callers between them, each
    counts as named right. The scorer pairs calls and detections by onset only: finn's and emma's calls
    at the same instant, detected as finn's 0 ms and emma's 5 ms after it, were paired crosswise and
    counted as two calls named to the wrong player."""
    hits = list(hits)
    out: dict[int, str | None] = {id(m): m.detection.player for m in hits}
    for i, a in enumerate(hits):
        for b in hits[i + 1:]:
            if (a.fixture == b.fixture and a.segment.speaker != b.segment.speaker
                    and abs((a.detection.onset - a.onset_error) - (b.detection.onset - b.onset_error)) <= TIE_TOLERANCE
                    and {a.detection.player, b.detection.player} == {a.segment.speaker, b.segment.speaker}):
                out[id(a)], out[id(b)] = a.segment.speaker, b.segment.speaker
    return out


def _game_view(engine: str, calls: Score, false_calls: list[tuple[str, Detection]], non_call_s: float,
               area: str) -> list[Row]:
    """What a one-mic game acts on, for engines that name the caller (enrolled, combined).

    ``voicesnap play`` ignores a call from an unknown voice (voicesnap.table), so a
    call named to nobody is lost to the game however well it was heard, and a false
    call named to nobody never reaches the referee. The plain recall and false-call
    rows count every detection; these count what the referee would judge.
    """
    if not any(m.detection.player for m in calls.hits) and not any(d.player for _, d in false_calls):
        return []  # an engine that never names a caller (vosk, pocketsphinx): a game needs per-player mics
    named = named_as(calls.hits)
    right = sum(1 for m in calls.hits if named[id(m)] == m.segment.speaker)
    nobody = sum(1 for m in calls.hits if m.detection.player is None)
    wrong = len(calls.hits) - right - nobody
    named_false = [d for _, d in false_calls if d.player is not None]
    per_hour = len(named_false) / (non_call_s / 3600) if non_call_s else math.nan
    return [
        Row(area, "one mic, as the game acts on it: calls given to the right player", right / calls.targets
            if calls.targets else math.nan, "", "",
            f"{engine}: {right}/{calls.targets}; heard but named to nobody (ignored) {nobody}, to the wrong "
            f"player {wrong}"),
        Row(area, "one mic, as the game acts on it: false calls named to a player, per hour", per_hour, "/h",
            "<= 0.5", f"{engine}: {len(named_false)} of the {len(false_calls)} false calls"
            + (f" ({', '.join(sorted({d.player or '' for d in named_false}))})" if named_false else "")),
    ]


def summarize(run: EngineRun, fixtures: list[Fixture], area: str = "listening") -> list[Row]:
    """Benchmark rows for one engine run."""
    if run.error:
        last = run.error.strip().splitlines()[-1]
        return [Row(area, "engine failed", "error", note=f"{run.engine}: {last}")]
    fixtures = [f for f in fixtures if f.name in run.detections]
    words = (*CALL_WORDS, *COMMAND_WORDS)
    scores = {f.name: score(f, run.detections[f.name], words=words) for f in fixtures}
    calls = {f.name: score(f, run.detections[f.name], words=CALL_WORDS) for f in fixtures}
    every = merge(scores.values())
    call_score = merge(calls.values())
    cats = _by_category(fixtures, calls)
    e = run.engine
    rows: list[Row] = []

    breakdown = ", ".join(f"{k} {v.recall:.2f}" for k, v in sorted(cats.items()) if v.targets)
    rows.append(Row(area, "recall, calls", call_score.recall, "", ">= 0.98",
                    f"{e}: {len(call_score.hits)}/{call_score.targets}; {breakdown}"))

    false_calls = [(n, d) for n, d in every.false if d.word in CALL_WORDS]
    where = Counter(next(f.category for f in fixtures if f.name == n) for n, _ in false_calls)
    conf = sum(1 for _, d, s in every.confusions if d.word in CALL_WORDS and s.text in CALL_WORDS)
    lo, hi = poisson_interval(len(false_calls), every.non_target_seconds / 3600)
    rows.append(Row(area, "false calls per hour of non-call audio", every.false_per_hour(CALL_WORDS), "/h", "<= 0.5",
                    f"{e}: {len(false_calls)} in {every.non_target_seconds / 60:.1f} min (95% interval "
                    f"{lo:.1f}-{hi:.1f}/h)"
                    + (f"; {', '.join(f'{k} {v}' for k, v in where.most_common())}" if where else "")
                    + (f"; {conf} snap/snap pool swaps" if conf else "")))

    cmd_hits = [m for m in every.hits if m.segment.text in COMMAND_WORDS]
    cmd_targets = sum(1 for f in fixtures for s in f.targets(COMMAND_WORDS))
    if cmd_targets:
        rows.append(Row(area, "recall, voice commands", len(cmd_hits) / cmd_targets, "", "",
                        f"{e}: {len(cmd_hits)}/{cmd_targets}"))
    false_cmds = [(n, d) for n, d in every.false if d.word in COMMAND_WORDS]
    cross = sum(1 for _, d, s in every.confusions if (d.word in COMMAND_WORDS) != (s.text in COMMAND_WORDS))
    rows.append(Row(area, "false commands per hour of non-call audio", every.false_per_hour(COMMAND_WORDS), "/h", "",
                    f"{e}: {len(false_cmds)}; calls<->commands confused {cross}"))

    errs = [abs(x) * 1000 for x in call_score.onset_errors]
    bias = float(np.median([x * 1000 for x in call_score.onset_errors])) if errs else math.nan
    rows.append(Row(area, "onset error (absolute), median", percentile(errs, 50), "ms", "",
                    f"{e}: signed median {bias:+.0f} ms"))
    over = sum(1 for x in errs if x > 10.0)
    rows.append(Row(area, "onset error (absolute), p95", percentile(errs, 95), "ms", "<= 10",
                    f"{e}: {over} of {len(errs)} calls over 10 ms, worst {max(errs, default=math.nan):.0f} ms"))
    lat = [x * 1000 for x in call_score.latencies]
    rows.append(Row(area, "latency word end -> event, median", percentile(lat, 50), "ms", "", f"{e}: audio time, {CHUNK_MS} ms chunks"))
    split = {w: [m.latency * 1000 for m in call_score.hits if m.segment.text == w and m.latency is not None]
             for w in CALL_WORDS}
    rows.append(Row(area, "latency word end -> event, p95", percentile(lat, 95), "ms", "<= 150",
                    f"{e}: " + ", ".join(f"{w} {percentile(v, 95):.0f} ms" for w, v in split.items() if v)))

    rows += _game_view(e, call_score, false_calls, every.non_target_seconds, area)

    ok, total = _ties(fixtures, calls)
    if total:
        rows.append(Row(area, "overlapping calls: both heard, offset within 10 ms", ok / total, "", "",
                        f"{e}: {ok}/{total} pairs (0-200 ms apart)"))
    rtf = run.cpu_seconds / run.audio_seconds if run.audio_seconds else math.nan
    rows.append(Row(area, "CPU real-time factor (one core)", rtf, "", "<= 0.05 (model-free)",
                    f"{e}: {run.cpu_seconds:.1f} CPU s / {run.audio_seconds / 60:.1f} min audio"))
    rows.append(Row(area, "peak memory (RSS growth)", run.peak_rss_mb, "MB", "",
                    f"{e}: ru_maxrss of a forked child minus its RSS at start"))
    rows.append(Row(area, "load time (first spotter)", run.load_seconds, "s", "", e))
    ignored = Counter(d.word for _, d in every.ignored)
    if ignored:
        rows.append(Row(area, "detections of words not in play (ignored)", sum(ignored.values()), "", "",
                        f"{e}: " + ", ".join(f"{w} {n}" for w, n in ignored.most_common())))
    return rows


def main(argv: list[str] | None = None) -> int:
    """``python3 -m bench.spotting ENGINE [--category C ...] [--quick] [--show] [--claims [--slowest N]]``: one
    engine, with its mistakes."""
    import argparse
    import tempfile

    from .bench_listening import ENGINE_NAMES, engine_factories

    parser = argparse.ArgumentParser(prog="python3 -m bench.spotting", description=main.__doc__)
    # (all named: the help named only vosk and pocketsphinx, the rest were in bench/enrolled_setup.py's source)
    parser.add_argument("engine", help=f"one of {', '.join(ENGINE_NAMES)}")
    parser.add_argument("--category", action="append", default=[], help="only fixtures of these categories")
    parser.add_argument("--quick", action="store_true", help="the --quick subset")
    parser.add_argument("--show", action="store_true", help="list every miss and false detection")
    parser.add_argument("--claims", action="store_true",
                        help="only detection latency with no claim open, a claim open, and the game's mix")
    parser.add_argument("--slowest", type=int, default=0, metavar="N",
                        help="with --claims: list each mode's N calls heard latest")
    args = parser.parse_args(argv)
    if args.engine not in ENGINE_NAMES:  # (before the corpus is read and the fixture players enrolled)
        parser.error(f"no engine {args.engine}; the engines: {', '.join(ENGINE_NAMES)}")
    fixtures = [f for f in corpus(args.quick) if not args.category or f.category in args.category]
    with tempfile.TemporaryDirectory(prefix="voicesnap-bench-") as tmp:
        os.environ["VOICESNAP_DATA_DIR"] = tmp  # enrollment never touches a player's real data dir
        factories, why = engine_factories(tmp)
        if args.engine not in factories:
            print(f"no engine {args.engine!r}: {why.get(args.engine, 'unknown name')}; available: {', '.join(factories)}")
            return 2
        if args.claims:
            audio = {f.name: f.read()[:, :1] for f in fixtures}
            for row in claim_rows(args.engine, factories[args.engine], fixtures, audio, slowest=args.slowest):
                print(f"{row.metric:52} {row.value:>12} {row.unit:5} {row.note}")
            return 0
        result = run_engine(args.engine, factories[args.engine], fixtures)
    for row in summarize(result, fixtures):
        value = f"{row.value:.3g}" if isinstance(row.value, float) else str(row.value)
        print(f"{row.metric:52} {value:>8} {row.unit:5} {row.note}")
    if args.show and not result.error:
        words = (*CALL_WORDS, *COMMAND_WORDS)
        for fx in fixtures:
            s = score(fx, result.detections[fx.name], words=words)
            for _, seg in s.misses:
                print(f"MISS  {fx.name:28} {seg.onset / fx.rate:7.2f}s {seg.speaker:8} {seg.text}")
            for _, det in s.false:
                print(f"FALSE {fx.name:28} {det.onset:7.2f}s {det.word!r} conf {det.confidence:.2f}")
            names = any(d.player for f in fixtures for d in result.detections[f.name])
            named = named_as(s.hits)
            for m in s.hits if names else ():  # an engine that names callers: whom it did not name
                if m.detection.word in CALL_WORDS and named[id(m)] != m.segment.speaker:
                    print(f"{'NOBODY' if m.detection.player is None else 'WRONG':5} {fx.name:28} "
                          f"{m.segment.onset / fx.rate:7.2f}s {m.segment.speaker:8} {m.segment.text}"
                          + (f" (named {m.detection.player})" if m.detection.player else ""))
    return 0


def tail_noise_rows(name: str, factory: Factory, fixtures: list[Fixture], area: str = "listening") -> list[Row]:
    """Is a call still heard with a noise over its end (a hand slapping the pile, a chair)? And is a
    near-miss word ("snack", "nap", ...) with the same noise over its end taken for a call? Once its
    end is masked a near miss sounds like the call, so the two rows are the two sides of one trade.
    White noise over the last 80 or 150 ms of the word and 200 ms after it, at 30, 20 and 10 dB under
    its peak, one word at a time: each clean "snap" in its whole file; each near-miss word of the
    clean near-miss files in its own 1 s either side. The near-miss check (``Voices.near_miss``)
    judges a call by its end; its refusals of the calls are counted too."""
    dbs = (-30, -20, -10)
    heard, refused, false = ({db: 0 for db in dbs} for _ in range(3))
    tried = near = 0

    def noisy(x: np.ndarray, seg: Segment, db: int, tail_ms: int, rate: int, seed: int) -> np.ndarray:
        y = x.copy()
        peak = float(np.abs(x[seg.onset:seg.end]).max())
        a, b = seg.end - tail_ms * rate // 1000, min(len(y), seg.end + rate // 5)
        y[a:b, 0] += np.random.default_rng(seed).normal(0.0, peak * 10 ** (db / 20), b - a)
        return np.clip(y, -32768, 32767).astype(np.int16)

    for fx in fixtures:
        if fx.channels != 1 or not (fx.name.startswith("clean_") or fx.category == "nearmiss"):
            continue
        x = fx.read()[:, :1].astype(np.float64)
        for seg in fx.segments:
            call = fx.name.startswith("clean_")
            if (seg.text != SNAP) if call else (seg.text in CALL_WORDS or seg.speaker == "announcer"):
                continue
            for db in dbs:
                for tail_ms in (80, 150):
                    y = noisy(x, seg, db, tail_ms, fx.rate, tried + near)
                    spotter = factory()
                    if call:
                        dets, _cpu = feed(spotter, y, fx.rate, fx.rate * CHUNK_MS // 1000)
                        tried += 1
                        heard[db] += any(d.word == SNAP and abs(d.onset * fx.rate - seg.onset) <= 0.1 * fx.rate
                                         for d in dets)
                        refused[db] += any(r.onset * fx.rate < seg.end and seg.onset < r.end * fx.rate
                                           for r in take_refusals(spotter))
                    else:
                        lo, hi = max(0, seg.onset - fx.rate), min(len(y), seg.end + fx.rate)
                        dets, _cpu = feed(spotter, y[lo:hi], fx.rate, fx.rate * CHUNK_MS // 1000)
                        near += 1
                        false[db] += any(d.word in CALL_WORDS for d in dets)
    each, near_each = tried // len(dbs), near // len(dbs)
    return [Row(area, "calls with noise over their end, heard at 30 / 20 / 10 dB under the peak",
                " / ".join(str(heard[db]) for db in dbs), f"of {each} each", "",
                f"{name}: clean calls, white noise over the last 80 or 150 ms and 200 ms after; "
                f"refused as near misses {' / '.join(str(refused[db]) for db in dbs)}"),
            Row(area, "near-miss words with noise over their end, taken for calls at 30 / 20 / 10 dB",
                " / ".join(str(false[db]) for db in dbs), f"of {near_each} each", "",
                f"{name}: each near-miss word of the clean near-miss files, the same noise, 1 s either side")]


def settle_rows(name: str, factory: PoolFactory, fixtures: list[Fixture], audio: dict[str, np.ndarray],
                area: str = "listening") -> list[Row]:
    """How the table's line (voicesnap.bursts.RivalWatch, with the fallback lag) fares on this engine's
    named calls, with no claim open and with one open.

    A named call that reaches the table after the line passed its onset (by more than the tie
    window) would be refused as late if a later caller's call were ruled first. Two lines are kept
    in one pass: with the spotter's ``undecided`` (as `voicesnap play` feeds it) and without.
    Ruling-ready: from the end of the call's word to when the line passes its onset + tie window.
    """
    from voicesnap.bursts import BurstTracker, RivalWatch
    from voicesnap.spotters import undecided_from
    from voicesnap.table import POOL_WAIT, SPOTTER_LATENCY, VOICE_LAG, VOICE_POOL_LAG

    rows = []
    for mode, pool, latency, lag in (("no claim open", False, SPOTTER_LATENCY, VOICE_LAG),
                                      ("claim open", True, POOL_WAIT, VOICE_POOL_LAG)):
        late = {"with": 0, "without": 0}
        ready: dict[str, list[float]] = {"with": [], "without": []}
        total = 0
        for fx in fixtures:
            if fx.channels != 1:
                continue
            spotter = factory()
            spotter.set_pool_exists(pool)
            tracker = BurstTracker()
            watches = {"with": RivalWatch(latency), "without": RivalWatch(latency)}
            line = {k: float("-inf") for k in watches}
            waiting: dict[str, list[Detection]] = {k: [] for k in watches}
            for chunk in ArraySource(audio[fx.name], fx.rate, chunk_frames=fx.rate * CHUNK_MS // 1000):
                dets = [d for d in spotter.accept(chunk) if d.word in CALL_WORDS and d.player is not None]
                bursts = tracker.accept(chunk)
                now = chunk.end / chunk.rate
                total += len(dets)
                for key, watch in watches.items():
                    late[key] += sum(d.onset < line[key] for d in dets)
                    watch.heard(bursts, dets, undecided_from(spotter) if key == "with" else None)
                    settled = watch.settled(now)
                    # the table's horizon: the rivals' line, never behind its fallback lag
                    fallback = now - lag - watch.decision_window
                    line[key] = max(line[key], fallback,
                                    settled - watch.tie_window if settled is not None else fallback)
                    waiting[key] += dets
                    for d in [d for d in waiting[key] if line[key] >= d.onset]:
                        ready[key].append((now - d.end) * 1000)
                        waiting[key].remove(d)
        rows += [
            Row(area, f"named calls reaching the table behind its line, {mode}, with / without the spotter's undecided",
                f"{late['with']} / {late['without']}", f"of {total}", "0",
                f"{name}, one mic: each would be refused as late if a later call were ruled first"),
            Row(area, f"ruling-ready after word end, {mode}, median / p95, with (without) undecided",
                f"{percentile(ready['with'], 50):.0f} / {percentile(ready['with'], 95):.0f} "
                f"({percentile(ready['without'], 50):.0f} / {percentile(ready['without'], 95):.0f})", "ms", "",
                f"{name}: when the table's line lets the referee rule the call"),
        ]
    return rows


if __name__ == "__main__":
    raise SystemExit(main())

