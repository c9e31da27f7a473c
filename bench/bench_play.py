"""The whole table: a recorded 4-player game through the real spotter, referee and loop.

* Ruling latency, in audio time: from the end of a spoken "snap" (the take's
  end in the scripted track) to the moment the table issues the ruling (the
  heard-clock position of the step that ruled), median and 95th percentile.
  The announcer adds its own flip/phrase-to-first-sample time on top (see the
  announcer rows); rulings are spoken at once unless another ruling is playing.
* Detection latency: word end to the call reaching the table (the spotter's share).
* CPU of the whole pipeline (audio source, spotter thread, game loop) fed in
  real time: idle listening (room noise only) and during play, as % of one core.
* Peak memory of the process (Vosk model included).

The game: tests/table_script.py plans a 4-player deal (alice, bob, cara, dev,
one microphone channel each; Vosk per channel, and the keyword model beside it
when installed, as play runs them) with snaps, a tie, a wrong call
and a pool claim, and builds the microphone track from held-out fixture takes.
"""

from __future__ import annotations

import os
import resource
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from . import Row, area_main, row_line

if TYPE_CHECKING:  # heavy modules are imported where they are used
    from voicesnap.keyword import KeywordModel
    from voicesnap.spotters import Spotter

ROOT = Path(__file__).resolve().parents[1]
PLAYERS4 = ("alice", "bob", "cara", "dev")


def _model() -> str | None:
    from voicesnap import models

    for candidate in (os.environ.get("VOICESNAP_VOSK_MODEL"),
                      "/root/.cache/voicesnap-ci/vosk-model-small-en-us-aar-0.3.45",
                      "/tmp/vm_0.3.45/x/assets/model-en-us"):
        if candidate and models.is_model(candidate):
            return candidate
    return None


def _pct(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


class _Memory(list):
    def write(self, *records: object) -> None:
        self.extend(records)


def _keyword() -> KeywordModel | None:
    """The keyword model when installed (play then judges each mic with it beside Vosk), else None."""
    try:
        from voicesnap.keyword import load_keyword_model

        return load_keyword_model(None, None)
    except Exception:  # noqa: BLE001 (not installed, onnxruntime missing: Vosk alone, as play then runs)
        return None


def _spotter(model: str, channels: int, pool_flag: list, gate: bool = True, keyword: bool = True) -> object:
    """The spotter play builds for one mic per player: Vosk per mic and, when installed (and ``keyword``),
    the keyword model beside it (``judges.JudgedSpotter``), both behind the speech gate unless not ``gate``."""
    from voicesnap.spotters.channels import ChannelSpotters
    from voicesnap.spotters.gate import SpeechGate
    from voicesnap.spotters.vosk_spotter import VoskSpotter, load_model
    from voicesnap.table import PoolClaim

    loaded = load_model(model)
    pool = PoolClaim(pool_flag)  # as voicesnap play does

    # behind the speech gate, as voicesnap play runs it unless --no-gate
    per: dict[int, Spotter] = {ch: VoskSpotter(loaded, channel=ch, pool_exists=pool) for ch in range(channels)}
    if gate:
        per = {ch: SpeechGate(sp, channel=ch) for ch, sp in per.items()}
    kw = _keyword() if keyword else None
    if kw is not None:
        from voicesnap.spotters.judges import JudgedSpotter
        from voicesnap.spotters.keyword import KeywordSpotter

        per = {ch: JudgedSpotter(sp, KeywordSpotter(kw, channel=ch, pool_exists=pool, gate=gate))
               for ch, sp in per.items()}
    return ChannelSpotters(per, {i: p for i, p in enumerate(PLAYERS4[:channels])})


def _session(pace: float, lag: float, pool_lag: float):  # noqa: ANN202
    from voicesnap.table import TableSession

    return TableSession(players=PLAYERS4, seed=0, pace=pace, engine="vosk", lag=lag, pool_lag=pool_lag,
                        channels={p: i for i, p in enumerate(PLAYERS4)})


def _cpu_run(source, spotter, settings, seconds: float) -> float:  # noqa: ANN001
    """% of one core used by the table while ``source`` plays in real time."""
    from voicesnap.table import play_session

    pool_flag: list = []
    stop = threading.Timer(seconds, lambda: None)
    start_wall, start_cpu = time.monotonic(), time.process_time()
    play_session(settings, _Memory(), chunks=source, spotter=spotter, lines=lambda _s: None, pool_flag=pool_flag)
    wall = time.monotonic() - start_wall
    stop.cancel()
    return 100.0 * (time.process_time() - start_cpu) / wall



def _game(model: str, settings, track: Path) -> list:  # noqa: ANN001
    from voicesnap.audio import FileSource
    from voicesnap.table import play_session

    pool_flag: list = []
    log = _Memory()
    play_session(settings, log, chunks=FileSource(track, chunk_frames=320),
                 spotter=_spotter(model, 4, pool_flag), lines=lambda _s: None, pool_flag=pool_flag)
    return log


def _word_ends(ts, script, rate: int) -> dict[tuple[str, float], float]:  # noqa: ANN001
    """(player, onset) -> end of the take render() used for that shout (takes are used in turn)."""
    used: dict[tuple[str, str], int] = {}
    ends = {}
    for s in script.shouts:
        options = ts.takes(s.player, s.word)
        i = used.get((s.player, s.word), 0)
        used[(s.player, s.word)] = i + 1
        ends[(s.player, round(s.onset, 3))] = s.onset + len(options[i % len(options)]) / rate
    return ends


def _ms(values: list[float], q: float) -> float:
    return _pct(values, q) * 1000 if values else float("nan")


def _measure(log: list, ends: dict[tuple[str, float], float]) -> dict:
    """Ruling and detection latencies (s, audio clock) and how each ruling was reached, from a game log."""
    from voicesnap.rules import RULINGS, PoolTied, TieToPool
    from voicesnap.table import TableStep

    out: dict = {"rulings": [], "plain": [], "pool": [], "detect": [], "by": [], "kinds": [], "ruled": 0}
    heard_at = None
    by = ""
    for r in log:
        if isinstance(r, TableStep) and r.heard is not None:
            heard_at = r.heard
            by = r.by if r.kind == "advance" else ""
            if r.kind == "call":
                near = [(k, v) for k, v in ends.items() if k[0] == r.player and abs(k[1] - (r.onset or 0)) < 0.3]
                if near:
                    out["detect"].append(r.heard - near[0][1])
        if isinstance(r, RULINGS):
            out["ruled"] += 1
            out["by"].append(by or "at once")
            who = r.players[0] if isinstance(r, (TieToPool, PoolTied)) else r.player
            out["kinds"].append((type(r).__name__, who))
            match = [v for k, v in ends.items() if k[0] == who and abs(k[1] - r.t) < 0.3]
            if match and heard_at is not None:
                out["rulings"].append(heard_at - match[0])
                pool = type(r).__name__ in ("PoolWon", "PoolTied")
                out["pool" if pool else "plain"].append(heard_at - match[0])
    return out

def _as_scripted(log: list, script) -> tuple[int, int, list[str]]:  # noqa: ANN001
    """How many of the script's rulings the game made, at the call's onset, and the rest in words.

    The script says what each shout should be ruled; a missed call also changes what comes after it
    (the pile it should have taken is still there), so each difference is named with what was ruled."""
    from voicesnap.rules import RULINGS

    want = script.rulings()
    got = [(getattr(r, "EVENT_TYPE"), ",".join(sorted(getattr(r, "players", None) or (getattr(r, "player"),))), r.t)
           for r in log if isinstance(r, RULINGS)]
    good, off = 0, []
    for kind, who, t in want:
        if any(g[:2] == (kind, who) and abs(g[2] - t) < 0.05 for g in got):
            good += 1
            continue
        there = [f"{g[0]} {g[1]}" for g in got if abs(g[2] - t) < 0.5]
        off.append(f"{kind} {who} at {t:.1f} s ({', '.join(there) or 'no ruling'})")
    return good, len(want), off


def run(quick: bool) -> list[Row]:
    sys.path.insert(0, str(ROOT))
    from tests import table_script as ts
    from voicesnap.audio import ArraySource, FileSource, read_wav
    from voicesnap.rules import RULINGS
    from voicesnap.table import VOICE_LAG, VOICE_POOL_LAG, TableStep, play_session

    model = _model()
    if model is None:
        return [Row("play", "recorded 4-player game", "skipped", note="no Vosk English model (VOICESNAP_VOSK_MODEL)")]
    rows: list[Row] = []
    pace = 2.5
    wanted = ["snap-won", "tie-to-pool", "wrong-call", "snap-won", "pool-won"] + ["snap-won"] * (2 if quick else 8)
    script = ts.plan(seed=11, pace=pace, players=PLAYERS4, max_flips=120, wanted=wanted)
    with tempfile.TemporaryDirectory() as tmp:
        track = ts.render(script, Path(tmp) / "mic.wav", per_player=True)
        samples, rate = read_wav(track)
        settings = _session(pace, VOICE_LAG, VOICE_POOL_LAG)
        settings = type(settings)(**{**settings.__dict__, "seed": script.seed})
        t0 = time.process_time()
        log = _game(model, settings, track)
        cpu = time.process_time() - t0
        audio_s = len(samples) / rate
        m = _measure(log, _word_ends(ts, script, rate))
        n = len(script.shouts)
        good, total, off = _as_scripted(log, script)
        rows += [
            Row("play", "ruling latency after word end, median", _ms(m["rulings"], 0.5),
                "ms", "", f"audio time; {len(m['rulings'])} rulings; lag floor {VOICE_LAG}/{VOICE_POOL_LAG} s; "
                "speech start not included"),
            Row("play", "ruling latency after word end, p95", _ms(m["rulings"], 0.95), "ms", "<= 300",
                f"4 players, Vosk per mic channel, {n} scripted calls, {m['ruled']} rulings"),
            Row("play", "ruling latency, snap rulings only, median / max",
                f"{_ms(m['plain'], 0.5):.0f} / {_ms(m['plain'], 1.0):.0f}" if m["plain"] else "n/a", "ms", "",
                f"{len(m['plain'])} rulings that are not on a pool claim"),
            Row("play", "ruling latency, pool-claim rulings, max", _ms(m["pool"], 1.0) if m["pool"] else "n/a", "ms", "",
                f"{len(m['pool'])} rulings on a snap-pool claim"),
            Row("play", "rulings as scripted", f"{good} of {total}", "", "all",
                "not as scripted: " + "; ".join(off) if off else "every call ruled as the script says"),
            Row("play", "rulings made by the fallback (worst-case) lag",
                f"{m['by'].count('lag')} of {len(m['by'])}", "", "",
                "the rest were ruled as soon as every rival that could tie was in (voicesnap.bursts)"),
            Row("play", "detection latency after word end, median", _ms(m["detect"], 0.5),
                "ms", "", "the spotter's share: call reaches the table"),
            Row("play", "detection latency after word end, p95", _ms(m["detect"], 0.95), "ms", ""),
            Row("play", "pipeline real-time factor (as fast as possible)", cpu / audio_s, "", "",
                f"{audio_s:.0f} s of 4-channel audio, 4 Vosk recognisers"),
        ]
        # The same game with crosstalk: every microphone also hears the other players, 20 dB down.
        bled = ts.render(script, Path(tmp) / "mic-bleed.wav", per_player=True, bleed_db=-20.0)
        bled_log = _game(model, settings, bled)
        mb = _measure(bled_log, _word_ends(ts, script, rate))
        bgood, btotal, boff = _as_scripted(bled_log, script)
        rows += [
            Row("play", "ruling latency with crosstalk (-20 dB), median / p95",
                f"{_ms(mb['rulings'], 0.5):.0f} / {_ms(mb['rulings'], 0.95):.0f}", "ms", "p95 <= 300",
                f"fallback lag {mb['by'].count('lag')} of {len(mb['by'])}"),
            Row("play", "rulings as scripted with crosstalk (-20 dB)", f"{bgood} of {btotal}", "", "all",
                "not as scripted: " + "; ".join(boff) if boff else "every call ruled as the script says"),
        ]
        # CPU in real time: idle listening (noise only), then play (the scripted track)
        idle_s = 5.0 if quick else 15.0
        noise = np.random.default_rng(1).normal(0, 32768 * 10 ** (-60 / 20), (int(idle_s * rate), 4))
        idle = ArraySource(np.clip(noise, -32768, 32767).astype(np.int16), rate, chunk_frames=320, realtime=True)
        idle_settings = type(settings)(**{**settings.__dict__, "pace": 0.0})
        kw = "and the keyword model " if _keyword() is not None else ""
        rows.append(Row("play", "CPU while idle-listening (4 mics)",
                        _cpu_run(idle, _spotter(model, 4, []), idle_settings, idle_s), "% of one core", "< 10",
                        f"{idle_s:.0f} s real time, 4 Vosk recognisers {kw}behind the speech gate, as play runs them"))
        if kw:
            idle = ArraySource(np.clip(noise, -32768, 32767).astype(np.int16), rate, chunk_frames=320, realtime=True)
            rows.append(Row("play", "CPU while idle-listening (4 mics, Vosk alone: --no-keyword)",
                            _cpu_run(idle, _spotter(model, 4, [], keyword=False), idle_settings, idle_s),
                            "% of one core", "< 10", f"{idle_s:.0f} s real time, 4 Vosk recognisers behind the gate"))
        idle = ArraySource(np.clip(noise, -32768, 32767).astype(np.int16), rate, chunk_frames=320, realtime=True)
        rows.append(Row("play", "CPU while idle-listening (4 mics, --no-gate)",
                        _cpu_run(idle, _spotter(model, 4, [], gate=False), idle_settings, idle_s), "% of one core",
                        "", f"{idle_s:.0f} s real time, 4 Vosk recognisers {kw}on every frame"))
        mono = ArraySource(np.clip(noise[:, :1], -32768, 32767).astype(np.int16), rate, chunk_frames=320,
                           realtime=True)
        rows.append(Row("play", "CPU while idle-listening (1 mic)",
                        _cpu_run(mono, _spotter(model, 1, []), idle_settings, idle_s), "% of one core", "< 10",
                        f"{idle_s:.0f} s real time, 1 Vosk recogniser {kw}behind the speech gate"))
        play_s = 15.0 if quick else 40.0
        part = samples[: int(play_s * rate)]
        live = ArraySource(part, rate, chunk_frames=320, realtime=True)
        rows.append(Row("play", "CPU during play (4 mics)",
                        _cpu_run(live, _spotter(model, 4, []), settings, play_s), "% of one core", "",
                        f"first {play_s:.0f} s of the scripted game, real time, Vosk {kw}per mic"))
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    rows.append(Row("play", "peak memory (process)", peak, "MB", "", "Vosk small model loaded; whole bench run"))
    return rows


def main(argv: list[str] | None = None) -> int:
    """``python3 -m bench.bench_play [--quick]``: this area's rows alone (without an entry point the module
    ran nothing, said nothing and exited 0)."""
    return area_main("bench.bench_play", __doc__, run, row_line, argv)


if __name__ == "__main__":
    sys.exit(main())
