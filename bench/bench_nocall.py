"""An hour at the table with no call in it: false calls per hour on a sample that can show a rate.

The corpus has 11.9 min of non-call audio, so one false call there is 5 per
hour and none at all would still leave the true rate anywhere up to 15 per
hour (95%): it cannot show the 0.5 per hour target either way. This stream
is long enough to measure rates of a few per hour. It is rendered here,
deterministically, from the corpus generator's own voices and rooms
(tests/fixtures/audio/generate.py), in two-minute files of six kinds, in
turn:

- ``talk``: the fixture players' table talk, half of it sentences with the
  near-miss words in them ("pass me a snack", "it's a trap");
- ``nearmiss``: the players say the near-miss words alone, as in the
  corpus's nearmiss files (but ten times as many);
- ``nearmiss_noisy``: the same over pink noise and table clatter at 20 and
  10 dB SNR;
- ``strangers``: talk in the two stranger voices (not enrolled);
- ``echo``: the game's announcer reads ranks, cards and rulings through a
  reverberant room (no echo canceller);
- ``quiet``: room tone, card slaps and cups, now and then a word of talk.

The files are cached under ``~/.cache/voicesnap-bench/`` (about 115 MB per
hour), keyed by the generator's source and the length, so a second run skips
the rendering. Needs espeak-ng, as the generator does.

``python3 -m bench.bench_nocall [ENGINE ...] [--minutes M] [--show]``: the rows for
those engines (default: combined and enrolled, the one-mic engines a game
runs; "vosk+keyword" is what listens on each mic of per-player microphones,
both behind the speech gate as play runs them, where every false call is
charged to the mic's player; "vosk+keyword+strict" is that with ``play --strict-calls``,
where the players' enrollment must hear the call too); ``python3 -m bench`` runs it with the
defaults (``--quick``: 12 min).
"""

from __future__ import annotations

import hashlib
import importlib.util
import math
import os
import shutil
import sys
import tempfile
from collections import Counter, defaultdict
from pathlib import Path
from types import ModuleType
from typing import Any, Callable

import numpy as np

from voicesnap.corpus import Fixture, load, merge, score

from . import Row, scratch_data_dir
from .spotting import CALL_WORDS, poisson_interval, run_engine

AREA = "listening"
ROOT = Path(__file__).resolve().parent.parent
GENERATOR = ROOT / "tests" / "fixtures" / "audio" / "generate.py"
CACHE = Path(os.environ.get("VOICESNAP_BENCH_CACHE", Path.home() / ".cache" / "voicesnap-bench"))
FILE_SECONDS = 120
KINDS = ("talk", "nearmiss", "nearmiss_noisy", "strangers", "echo", "quiet")
CATEGORY = {"talk": "chatter", "nearmiss": "nearmiss", "nearmiss_noisy": "nearmiss_noisy",
            "strangers": "chatter", "echo": "echo", "quiet": "long_quiet"}
MINUTES = 60.0
QUICK_MINUTES = 12.0
ENGINES = ("combined", "enrolled")
# Table talk with the near-miss words inside sentences, as people say them around a table.
NEAR_SENTENCES = [
    "pass me a snack", "stop that", "look at the map", "do not slap the table", "nice cap",
    "I need a nap", "it is a trap", "it might snow later", "that was a snack for later", "stop, stop",
    "the map is upside down", "slap it down", "put your cap on", "nap time", "a trap card", "let it snow",
    "is the pool big yet", "who has the pool", "that is cool",
]
ANNOUNCE_EXTRA = ["Queen of hearts", "Ten of clubs", "Seven of spades", "Ace of diamonds", "Alice, seven",
                  "Pool formed, top card five", "Bob wins twelve cards", "Your turn, Cara", "Wrong call by Dev",
                  "Tie! The pile goes to the pool", "Finn is out", "Emma wins the game"]


def _generator() -> ModuleType:
    """The corpus generator, loaded from its file (it is a script, not a package module)."""
    spec = importlib.util.spec_from_file_location("voicesnap_corpus_generate", GENERATOR)
    if spec is None or spec.loader is None:
        raise RuntimeError(f"cannot load {GENERATOR}")
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod  # dataclasses look their module up while the class is made
    spec.loader.exec_module(mod)
    return mod


def _key(minutes: float) -> str:
    digest = hashlib.sha256(GENERATOR.read_bytes() + Path(__file__).read_bytes()).hexdigest()[:12]
    return f"nocall-{minutes:g}min-{digest}"


def _talk(g: ModuleType, fx: Any, speakers: list[str], frames: int, near_share: float) -> None:
    """Table talk by ``speakers`` until ``frames``: TABLE_TALK lines and near-miss sentences."""
    at = int(g.RATE * 0.8)
    while True:
        near = fx.rng.uniform() < near_share
        text = str(fx.rng.choice(NEAR_SENTENCES if near else g.TABLE_TALK))
        who = str(fx.rng.choice(speakers))
        take = g.render(who, text, fx.rng)
        if at + len(take.samples) > frames - g.RATE // 2:
            return
        at = fx.place(at, take, who, text, "nearmiss" if near else "chatter") + fx.gap(0.3, 1.2)


def _words(g: ModuleType, fx: Any, frames: int) -> int:
    """The players say near-miss words alone (as the corpus's nearmiss files) until ``frames``."""
    at, n = int(g.RATE * 0.8), 0
    while True:
        who, word = str(fx.rng.choice(g.PLAYERS)), str(fx.rng.choice(g.NEAR_MISSES))
        take = g.render(who, word, fx.rng)
        if at + len(take.samples) > frames - g.RATE // 2:
            return n
        note = g.SLAP_NOTE if word == "slap" else None
        at = fx.place(at, take, who, word, "nearmiss", note=note) + fx.gap(0.7, 1.6)
        n += 1


def _echo(g: ModuleType, fx: Any, frames: int) -> None:
    """The announcer through a room, with pauses as between flips."""
    at = int(g.RATE * 0.6)
    phrases = list(g.RANKS) + ANNOUNCE_EXTRA
    while True:
        text = str(fx.rng.choice(phrases))
        dry = g.render("announcer", text, level_db=-18.0).samples
        wet = g.reverb(dry, fx.rng)
        if at + len(wet) > frames:
            return
        fx.place(at, wet, "announcer", text, "announcement", extent=(0, len(dry) - 1))
        at += len(wet) + fx.gap(0.4, 1.5)


def _quiet(g: ModuleType, fx: Any, frames: int) -> None:
    """Room tone with card slaps and cups, and a line of talk now and then."""
    at = int(g.RATE * 1.0)
    while at < frames - 2 * g.RATE:
        if fx.rng.uniform() < 0.2:
            who = str(fx.rng.choice(g.PLAYERS))
            text = str(fx.rng.choice(g.TABLE_TALK))
            at = fx.place(at, g.render(who, text, fx.rng), who, text, "chatter")
        else:
            burst = g.clatter(fx.rng) * 10 ** (fx.rng.uniform(-30, -14) / 20)
            fx.place(at, burst.astype(np.float32), "table", "", "noise")
            at += len(burst)
        at += fx.gap(1.0, 5.0)


def _kind(name: str) -> str:
    """A stream file's kind, from its name (``nocall_007_nearmiss`` -> ``nearmiss``)."""
    return name.split("_", 2)[2]


def _names(minutes: float) -> list[str]:
    count = max(len(KINDS), int(round(minutes * 60 / FILE_SECONDS)))
    return [f"nocall_{i:03d}_{KINDS[i % len(KINDS)]}" for i in range(count)]


def _render(g: ModuleType, i: int) -> None:
    """File ``i`` of the stream into ``g.CORPUS`` (its audio depends on ``i`` alone)."""
    kind = KINDS[i % len(KINDS)]
    name = f"nocall_{i:03d}_{kind}"
    frames = FILE_SECONDS * g.RATE
    fx = g.new(name, CATEGORY[kind], f"no-call stream ({kind}): nothing here is a call")
    bed = g.room_tone(frames, fx.rng)
    if kind == "talk":
        _talk(g, fx, g.PLAYERS, frames, near_share=0.5)
    elif kind == "strangers":
        _talk(g, fx, list(g.VOICES["strangers"]), frames, near_share=0.5)
    elif kind in ("nearmiss", "nearmiss_noisy"):
        _words(g, fx, frames)
        if kind == "nearmiss_noisy":
            snr = 20.0 if (i // len(KINDS)) % 2 == 0 else 10.0
            fx.snr_db = snr
            power = np.mean([np.mean(np.square(s)) for _, s, _ in fx.parts])
            noise = g.pink_with_clatter(fx, frames)
            bed = (noise * np.sqrt(power / np.mean(np.square(noise)) / 10 ** (snr / 10))).astype(np.float32)
    elif kind == "echo":
        _echo(g, fx, frames)
    else:
        _quiet(g, fx, frames)
    fx.write(frames, bed)


def render_file(i: int, folder: Path) -> Fixture:
    """File ``i`` of the stream alone, written into ``folder`` (tests: one stretch, no hour)."""
    g = _generator()
    setattr(g, "CORPUS", folder)  # a script's global: ModuleType declares no attributes to assign
    _render(g, i)
    return load(folder / f"nocall_{i:03d}_{KINDS[i % len(KINDS)]}.json")


def render_stream(minutes: float = MINUTES, cache: Path = CACHE) -> list[Fixture]:
    """The no-call stream's files (rendered on first use, then read from the cache)."""
    folder = cache / _key(minutes)
    names = _names(minutes)
    if not all((folder / f"{n}.json").is_file() for n in names):
        g = _generator()
        cache.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=".render-", dir=cache))
        setattr(g, "CORPUS", tmp)  # Fixture.write puts the files there
        for i in range(len(names)):
            _render(g, i)
        if folder.exists():  # another run finished first: keep its files
            shutil.rmtree(tmp, ignore_errors=True)
        else:
            os.replace(tmp, folder)  # whole or not at all: a run cut short leaves no half stream
    return [load(folder / f"{n}.json") for n in names]


def rows_for(name: str, factory: Callable[[], Any], fixtures: list[Fixture], show: bool = False) -> list[Row]:
    """One engine's rows over the stream (``show``: print each false call as it is scored)."""
    run = run_engine(name, factory, fixtures)
    if run.error:
        return [Row(AREA, "no-call hour: engine failed", "error", note=f"{name}: {run.error.strip().splitlines()[-1]}")]
    scores = {f.name: score(f, run.detections[f.name], words=CALL_WORDS) for f in fixtures}
    every = merge(scores.values())
    hours = every.non_target_seconds / 3600
    false = list(every.false)
    lo, hi = poisson_interval(len(false), hours)
    by_kind: Counter[str] = Counter(_kind(n) for n, _ in false)
    kind_hours: defaultdict[str, float] = defaultdict(float)
    for f in fixtures:
        kind_hours[_kind(f.name)] += f.duration / 3600
    by_name = {f.name: f for f in fixtures}
    per_kind = ", ".join(f"{k} {by_kind[k]} ({by_kind[k] / kind_hours[k]:.0f}/h)" for k in KINDS if kind_hours.get(k))
    named = [d for _, d in false if d.player]
    words = [s for f in fixtures for s in f.segments if s.kind == "nearmiss"]
    hit_words: Counter[str] = Counter()
    for n, d in false:
        fx = by_name[n]
        over = [s for s in fx.segments if s.kind == "nearmiss" and s.onset / fx.rate - 0.25 <= d.onset <= s.end / fx.rate]
        if over:
            hit_words[over[0].text] += 1
    said = Counter(s.text for s in words)
    if show:
        for n, d in false:
            fx = by_name[n]
            near = [s for s in fx.segments if s.onset / fx.rate - 0.3 <= d.onset <= s.end / fx.rate + 0.1]
            what = f"{near[0].speaker} {near[0].text!r}" if near else "(no segment)"
            print(f"FALSE {name:10} {n:28} {d.onset:7.2f}s {d.word!r} conf {d.confidence:.2f} "
                  f"named {d.player} over {what}")
    rows = [
        Row(AREA, "no-call hour: false calls per hour", len(false) / hours if hours else math.nan, "/h", "<= 0.5",
            f"{name}: {len(false)} in {every.non_target_seconds / 60:.0f} min (95% interval {lo:.1f}-{hi:.1f}/h); "
            f"{per_kind}"),
        Row(AREA, "no-call hour: near-miss words and sentences taken for a call",
            sum(hit_words.values()) / len(words) if words else math.nan, "", "",
            f"{name}: {sum(hit_words.values())} of {len(words)}"
            + (f" ({', '.join(f'{w} {c}/{said[w]}' for w, c in hit_words.most_common())})" if hit_words else "")),
    ]
    if any(d.player for f in fixtures for d in run.detections[f.name]) or named:
        lo, hi = poisson_interval(len(named), hours)
        rows.append(Row(AREA, "no-call hour: false calls named to a player, per hour", len(named) / hours, "/h",
                        "<= 0.5", f"{name}: {len(named)} (95% interval {lo:.1f}-{hi:.1f}/h)"
                        + (f"; {', '.join(f'{p} {c}' for p, c in Counter(d.player for d in named).most_common())}"
                           if named else "")))
    rtf = run.cpu_seconds / run.audio_seconds if run.audio_seconds else math.nan
    rows.append(Row(AREA, "no-call hour: CPU real-time factor (one core)", rtf, "", "",
                    f"{name}: {run.cpu_seconds:.0f} CPU s / {run.audio_seconds / 60:.0f} min"))
    return rows


def run(quick: bool, engines: tuple[str, ...] = ENGINES, minutes: float | None = None,
        show: bool = False) -> list[Row]:
    from .bench_listening import engine_factories

    fixtures = render_stream(minutes or (QUICK_MINUTES if quick else MINUTES))
    rows: list[Row] = []
    with scratch_data_dir() as tmp:
        factories, why = engine_factories(tmp)
        if "vosk-gated" in factories and "keyword-gated" in factories:
            from voicesnap.spotters.judges import JudgedSpotter

            from voicesnap import voices as V
            from voicesnap.spotters.channels import ChannelSpotters, OwnWordCheck, with_contrast

            # per-player mics: both judges behind the speech gate, as play runs each mic; with the players'
            # "slap" takes (enroll asks for them) a call that fits one better than any call take is refused
            vosk, keyword = factories["vosk-gated"], factories["keyword-gated"]
            profiles = V.load_all(str(tmp)) if "enrolled" in factories else []

            def per_mic(inner: Any) -> Any:
                return with_contrast(inner, profiles)

            factories["vosk+keyword"] = lambda: per_mic(JudgedSpotter(vosk(), keyword()))
            if "enrolled" in factories:  # per-player mics with --strict-calls: the enrollment must hear the call
                enrolled = factories["enrolled"]
                factories["vosk+keyword+strict"] = lambda: OwnWordCheck(
                    per_mic(ChannelSpotters({0: JudgedSpotter(vosk(), keyword())}, {0: "the mic's player"})),
                    enrolled())
        for name in engines:
            if name not in factories:
                rows.append(Row(AREA, "no-call hour", "n/a", note=f"{name}: {why.get(name, 'not available')}"))
                continue
            rows += rows_for(name, factories[name], fixtures, show)
    return rows


def main(argv: list[str] | None = None) -> int:
    """``python3 -m bench.bench_nocall [ENGINE ...] [--minutes M] [--show]``."""
    import argparse

    parser = argparse.ArgumentParser(prog="python3 -m bench.bench_nocall", description=__doc__.split("\n\n")[0])
    from .bench_listening import ENGINE_NAMES

    names = (*ENGINE_NAMES, "vosk+keyword", "vosk+keyword+strict")  # (the last two: per-player mics, built in run)
    parser.add_argument("engines", nargs="*", default=list(ENGINES),
                        help=f"engine names (default: {' '.join(ENGINES)}): {', '.join(names)}")
    parser.add_argument("--minutes", type=float, default=MINUTES, help=f"length of the stream (default {MINUTES:g})")
    parser.add_argument("--show", action="store_true", help="list every false call")
    args = parser.parse_args(argv)
    if args.minutes <= 0:
        parser.error("--minutes must be more than 0")
    unknown = [e for e in args.engines if e not in names]
    if unknown:  # (a typo rendered the hour's stream first, then printed "n/a ...: not available")
        parser.error(f"no engine {', '.join(unknown)}; the engines: {', '.join(names)}")
    for row in run(False, tuple(args.engines), args.minutes, args.show):
        value = f"{row.value:.3g}" if isinstance(row.value, float) else str(row.value)
        print(f"{row.metric:60} {value:>8} {row.unit:3} {row.note}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
