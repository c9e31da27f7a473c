"""Listening with and without the echo canceller, side by side (rows for bench_listening).

For every engine (vosk, enrolled, combined: whichever can run) the corpus runs
twice in the same benchmark run: as is, and through ``voicesnap.echo.
EchoCancelled`` fed with each fixture's reference track (what the game played;
fixtures without announcements get silence, so the canceller passes them
through). Rows: recall and false calls on ``noisy_over_announcer`` and
``echo_ranks`` and on the whole set, per engine and setting; echo return loss
enhancement on ``echo_ranks`` (linear filter alone, and with the residual
suppressor); the canceller's own CPU real-time factor; and players' calls laid
over the announcer's echo, for what the canceller's own-speech check costs
(``overlay_rows``), and the players' near-miss words laid over it, for what the
keyword model's lower line there costs. Every engine behind the canceller runs
with the check, as play does.

``python3 -m bench.echo_rows [--quick] [--engine NAME ...]`` prints the rows alone.
"""

from __future__ import annotations

import time
from typing import Any, Callable

import numpy as np

from voicesnap.audio import ArraySource
from voicesnap.corpus import Fixture, merge, score
from voicesnap.echo import ArrayReference, EchoCancelled, erle_db

from . import Row
from .spotting import CALL_WORDS, COMMAND_WORDS, run_engine, summarize

AREA = "listening"
ECHO_FILES = ("noisy_over_announcer", "echo_ranks")


def _reference(fx: Fixture) -> np.ndarray:
    ref = fx.read_reference()
    return np.zeros(0, np.float32) if ref is None else ref[:, 0]


def echo_factory(base: Callable[[], Any], fixtures: list[Fixture]) -> Callable[[], Any]:
    """A factory of echo-cancelled spotters for ``fixtures`` in order: the harness
    (bench.spotting.run_engine) makes one spotter per fixture, in list order."""
    refs = iter([_reference(f) for f in fixtures])

    def make() -> Any:
        return EchoCancelled(base(), ArrayReference(next(refs)))

    return make


class _Null:
    name = "null"

    def accept(self, chunk: Any) -> list:
        return []

    def flush(self) -> list:
        return []


def canceller_rows(fixtures: list[Fixture], audio: dict[str, np.ndarray]) -> list[Row]:
    """ERLE on echo_ranks and the canceller's CPU cost (no recogniser behind it)."""
    rows: list[Row] = []
    cpu = seconds = live = 0.0
    for fx in fixtures:
        ref = _reference(fx)
        mic = audio[fx.name]
        for suppress in ((True, False) if fx.name == "echo_ranks" else (True,)):
            wrap = EchoCancelled(_Null(), ArrayReference(ref), suppress=suppress)
            outs = []
            t0 = time.process_time()
            for chunk in ArraySource(mic, fx.rate, chunk_frames=fx.rate // 50):
                got = wrap.cancel(chunk)
                if got is not None:
                    outs.append(got.samples[:, 0])
            spent = time.process_time() - t0
            if suppress:
                cpu += spent
                seconds += fx.duration
                live += float(np.count_nonzero(np.convolve(np.abs(ref) > 0, np.ones(8000), "same"))) / fx.rate if len(ref) else 0.0
            if fx.name != "echo_ranks":
                continue
            out = np.concatenate(outs)
            m = mic[: len(out), 0]
            echo = np.zeros(len(out), bool)  # the announcements and their room tails (0.35 s)
            for s in fx.segments:
                if s.kind == "announcement":
                    echo[s.onset: min(len(out), s.end + int(0.35 * fx.rate))] = True
            half = len(out) // 2
            what = "linear filter + residual suppressor" if suppress else "linear filter alone"
            rows.append(Row(AREA, f"echo return loss enhancement, echo_ranks ({what})",
                            round(erle_db(m[echo], out[echo]), 1), "dB", "",
                            f"over the announcements and their tails; second half of the file "
                            f"{erle_db(m[half:][echo[half:]], out[half:][echo[half:]]):.1f} dB"))
    if seconds:
        rows.append(Row(AREA, "echo canceller CPU real-time factor (one core)", cpu / seconds, "", "",
                        f"{cpu:.1f} CPU s / {seconds / 60:.1f} min ({len(fixtures)} files; "
                        f"reference live in {live / 60:.1f} min of it, pass-through elsewhere)"))
    return rows


OVERLAY_GAINS = (0.5, 1.0, 2.0)  # the call 6 dB under its clean level, at it, 6 dB over
OVERLAY_OFFSETS = (0.0, 0.15, 0.3)  # s after the announcement starts
MIX_SCALE = 1 / 3


def one_room(fixture_mic: np.ndarray, ref: np.ndarray) -> np.ndarray:
    """The announcer's reference through one room for the whole stream (the corpus generator's
    ``reverb``, seed 7), as loud as ``fixture_mic``: the fixtures draw a new tail for every
    announcement, which no adaptive filter can learn; a real room keeps its tail."""
    from .bench_nocall import _generator

    room = _generator().reverb((ref / 32768).astype(np.float32), np.random.default_rng(7))[: len(ref)]
    room = room.astype(np.float64) * (np.abs(fixture_mic).max() / max(float(np.abs(room).max()), 1e-9))
    return room + np.random.default_rng(3).standard_normal(len(room)) * 30  # room tone


def second_mic(mic: np.ndarray) -> np.ndarray:
    """What a second player's mic hears of ``mic``'s loudspeaker: 3 dB weaker, 2 ms later."""
    return np.concatenate([np.zeros(32), 0.7 * mic[:-32]])


def per_mic_factory() -> Callable[[], Any] | None:
    """Two per-player mics as ``play --channels p0=0,p1=1`` hears them (Vosk and the keyword model
    judging each mic; with the players enrolled in the data directory with their "slap" takes, the
    check of them: channels.ContrastCheck), or None without both models."""
    from voicesnap import models
    from voicesnap import voices as V
    from voicesnap.keyword import load_keyword_model
    from voicesnap.spotters.channels import ChannelSpotters, with_contrast
    from voicesnap.spotters.gate import SpeechGate
    from voicesnap.spotters.judges import JudgedSpotter
    from voicesnap.spotters.keyword import KeywordSpotter
    from voicesnap.spotters.vosk_spotter import VoskSpotter, load_model

    try:
        vosk, keyword = load_model(models.find_model("en", None, None)), load_keyword_model(None, None)
    except Exception:  # noqa: BLE001 (any way of not having them: the row says skipped)
        return None
    if keyword is None:
        return None

    profiles = V.load_all()

    def make() -> Any:
        per = {ch: JudgedSpotter(SpeechGate(VoskSpotter(vosk, channel=ch), channel=ch),
                                 KeywordSpotter(keyword, channel=ch, gate=True)) for ch in (0, 1)}
        return with_contrast(ChannelSpotters(per, {0: "p0", 1: "p1"}), profiles)

    return make


WARM = 4  # announcements of echo_ranks (5.7 s) played without calls first: a game's opening and first flips


def overlay_rows(fixtures: list[Fixture], name: str, factory: Callable[[], Any],
                 per_mic: Callable[[], Any] | None = None) -> list[Row]:
    """``overlay_row`` over the fixture's own echo and over one room for the whole stream, on one
    mic with ``factory`` and on two per-player mics with ``per_mic``."""
    by_name = {f.name: f for f in fixtures}
    if "echo_ranks" not in by_name or not any(n.startswith("clean_") for n in by_name):
        return [Row(AREA, "calls over the announcer's echo", "skipped", note="needs echo_ranks and clean_* fixtures")]
    er = by_name["echo_ranks"]
    mic = er.read()[:, 0].astype(np.float64)
    rooms = (("the fixture's room, a new tail for every announcement", mic),
             ("one room for the whole stream", one_room(mic, _reference(er).astype(np.float64))))
    rows = []
    for i, (room, echo) in enumerate(rooms):
        rows += overlay_row(fixtures, name, factory, echo, room, plain=i == 0)
    for room, echo in rooms:
        rows += overlay_row(fixtures, name, factory, echo, room, plain=False, mid_game=True)
    # a game's opening words and first flips (about 6 s of the announcer) before its first call
    rows += overlay_row(fixtures, name, factory, rooms[1][1], rooms[1][0], plain=False, warm=WARM)
    for mid_game in (False, True):  # near-miss words over the announcer: no call in them
        rows += overlay_row(fixtures, name, factory, rooms[1][1], rooms[1][0], plain=False, mid_game=mid_game,
                            nearmiss=True)
    if per_mic is None:
        return rows + [Row(AREA, "calls over the announcer's echo, two per-player mics", "skipped",
                           note="needs the Vosk and keyword models")]
    for mid_game in (False, True):
        for room, echo in rooms:
            rows += overlay_row(fixtures, "vosk+keyword per mic", per_mic, echo, room, plain=False, mics=2,
                                mid_game=mid_game)
    rows += overlay_row(fixtures, "vosk+keyword per mic", per_mic, rooms[1][1], rooms[1][0], plain=False, mics=2,
                        mid_game=True, nearmiss=True)
    return rows


def overlay_row(fixtures: list[Fixture], name: str, factory: Callable[[], Any], mic: np.ndarray, room: str,
                plain: bool = True, mics: int = 1, mid_game: bool = False, warm: int | None = None,
                nearmiss: bool = False) -> list[Row]:
    """Players' clean calls laid over the announcer's echo: what the own-speech check costs.

    Each rank and ruling of ``echo_ranks`` gets one player's clean "snap" (the six players in
    turn; those of the run's fixtures) at ``OVERLAY_OFFSETS`` after it starts and
    ``OVERLAY_GAINS`` of its clean level: 9 streams of 19 calls, each through ``name`` behind the
    canceller with the check off. For every detection the check's measures are read when the
    detection comes out (``EchoCancelled.removed_db``, ``own_mic_db``), so one run shows both.
    With ``mics=2`` mic 1 hears the loudspeaker 3 dB weaker and 2 ms later, the calls go to the
    mics' owners in turn ("p0", "p1"), each also heard 15 dB down on the other mic, and a call
    counts only when named to its owner.

    ``mid_game``: the announcements are played once without calls before the stream with them, as in
    a game under way, so the canceller has learnt the room when the first call comes (without it
    every announcement has a call over it from the first, and a call said as the first announcements
    start meets a canceller that has learnt nothing yet).
    ``warm``: instead, only the stream's first ``warm`` announcements are played without calls first,
    as a game's opening words and first flips are (how soon a game is "under way").
    ``nearmiss``: the players' near-miss words ("slap", "snack", "nap", ...: the ``nearmiss_*`` files'
    words, each stream going on through the list) are laid over instead, and every call heard is
    false: what the lower keyword line over the announcer (``judges.KEYWORD_VETO_ECHO``) costs."""
    from voicesnap.echo import OWN_SPEECH_DB, is_own_speech

    by_name = {f.name: f for f in fixtures}
    er = by_name["echo_ranks"]
    ref = _reference(er)
    takes = []
    pad = int(0.05 * er.rate)
    for f in (by_name[n] for n in sorted(by_name) if n.startswith("nearmiss_" if nearmiss else "clean_")):
        if nearmiss and f.category != "nearmiss":
            continue  # the near-miss files in noise: their words carry noise of their own
        x = f.read()[:, 0].astype(np.float64)
        words = [s for s in f.segments
                 if (s.kind == "nearmiss" if nearmiss else s.kind == "call" and s.text == "snap")]
        takes += [(x[max(0, s.onset - pad): s.end + pad], pad) for s in (words if nearmiss else words[:1])]
    starts = [s.onset for s in er.segments if s.kind == "announcement"]
    far = second_mic(mic)

    def spot(spotter: Any, pcm: np.ndarray) -> list[tuple[Any, float | None, float | None]]:
        """(call, dB removed, own mic's margin) as the check reads them when the call comes out."""
        removed = getattr(spotter, "removed_db", lambda d: None)
        own_mic = getattr(spotter, "own_mic_db", lambda d: None)
        measured = []  # read as each call comes out: the levels are a 20 s ring, the stream 32 s
        for c in ArraySource(pcm, er.rate, chunk_frames=er.rate // 50):
            measured += [(d, removed(d), own_mic(d)) for d in spotter.accept(c) if d.word in CALL_WORDS]
        return measured + [(d, removed(d), own_mic(d)) for d in spotter.flush() if d.word in CALL_WORDS]

    calls = heard = heard_plain = dropped = named = named_dropped = false = false_dropped = 0
    streams = false_named = 0
    by_offset = dict.fromkeys(OVERLAY_OFFSETS, 0)
    removed_real: list[float] = []
    onset_errors: list[float] = []
    for gain in OVERLAY_GAINS:
        for offset in OVERLAY_OFFSETS:
            y = np.stack([mic, far], axis=1)[:, :mics].copy()
            truth: list[tuple[float, str | None]] = []
            for i, at in enumerate(starts):
                take, pad = takes[(i + (streams * len(starts) if nearmiss else 0)) % len(takes)]
                begin = at + int(offset * er.rate) - pad
                own = i % mics
                y[begin: begin + len(take), own] += gain * take
                if mics > 1:  # the neighbour's mic hears the call too
                    y[begin + 16: begin + 16 + len(take), 1 - own] += gain * 10 ** (-15 / 20) * take
                truth.append(((begin + pad) / er.rate, f"p{own}" if mics > 1 else None))
            played = ref
            if mid_game or warm:
                lead = len(mic) if not warm else starts[warm]  # the whole stream, or its first announcements
                y = np.concatenate([np.stack([mic, far], axis=1)[:lead, :mics], y])
                truth = [(t + lead / er.rate, owner) for t, owner in truth]
                played = np.concatenate([ref[:lead], ref])
            # the fixture's echo peaks at full scale: a third of it leaves the sum room not to clip
            pcm = np.clip(np.round(y * MIX_SCALE), -32768, 32767).astype(np.int16)
            without = spot(factory(), pcm) if plain else []
            found = spot(EchoCancelled(factory(), ArrayReference(played * MIX_SCALE), own_speech_db=None), pcm)

            def its(d: Any, t: float, owner: str | None) -> bool:
                return abs(d.onset - t) <= 0.25 and (owner is None or d.player == owner)

            calls += len(truth)
            streams += 1
            if nearmiss:
                truth = []  # no call was laid: every call heard is false
            for t, owner in truth:
                heard_plain += any(its(d, t, owner) for d, _, _ in without)
                # a call named to a player is what the game acts on: where the same call also came out
                # as nobody's (a one-mic tie's unnamed caller, combined.TIE_UNNAMED), it is judged named
                mine = sorted(((d, r, m) for d, r, m in found if its(d, t, owner)),
                              key=lambda x: x[0].player is None)
                if not mine:
                    continue
                d, removed, own_mic = mine[0]
                drop = is_own_speech(d, removed, own_mic=own_mic)
                onset_errors.append(abs(d.onset - t))
                heard += 1
                by_offset[offset] += 1
                dropped += drop
                named += d.player is not None
                named_dropped += drop and d.player is not None
                if removed is not None:
                    removed_real.append(removed)
            for d, removed, own_mic in found:
                if not any(its(d, t, owner) for t, owner in truth):
                    drop = is_own_speech(d, removed, own_mic=own_mic)
                    false += 1
                    false_dropped += drop
                    false_named += d.player is not None and not drop
    worst = sorted(removed_real)[-3:]
    where = (f"{room}{', two per-player mics' if mics > 1 else ''}{', mid-game' if mid_game and not warm else ''}"
             f"{f', after {warm} announcements without calls' if warm else ''}")
    if nearmiss:
        return [Row(AREA, f"near misses over the announcer's echo ({where}): taken for calls / dropped by the "
                          f"own-speech check", f"{false}/{calls} / {false_dropped}", "", "0",
                    f"{name}+echo; {len(takes)} words of the nearmiss files in turn; {false_named} of those "
                    f"kept named to {'their mic' if mics > 1 else 'a player'}; gains {OVERLAY_GAINS}, "
                    f"offsets {OVERLAY_OFFSETS} s")]
    return [
        Row(AREA, f"calls over the announcer's echo ({where}): heard / dropped by the own-speech check",
            f"{heard}/{calls} / {dropped}", "", "",
            f"{name}+echo{f' ({heard_plain}/{calls} without the canceller)' if plain else ''}; at "
            f"{' / '.join(f'{o:g}' for o in OVERLAY_OFFSETS)} s into the announcement "
            f"{' / '.join(str(n) for n in by_offset.values())} of {calls // len(OVERLAY_OFFSETS)}; "
            f"{named} named to {'their owner' if mics > 1 else 'a player'}, {named_dropped} of them dropped; "
            f"dB removed at a call's loudest frames: median {np.median(removed_real):.1f}, highest "
            f"{', '.join(f'{w:.1f}' for w in worst)} (line {OWN_SPEECH_DB:g}); gains {OVERLAY_GAINS}, "
            f"offsets {OVERLAY_OFFSETS} s"),
        Row(AREA, f"calls over the announcer's echo ({where}): onset error median / p95",
            f"{1000 * np.median(onset_errors):.1f} / {1000 * np.percentile(onset_errors, 95):.0f}" if onset_errors else "n/a",
            "ms", "<= 10 (p95)", f"{name}+echo; over 10 ms {sum(e > 0.010 for e in onset_errors)}, over 50 ms "
                                f"{sum(e > 0.050 for e in onset_errors)} of {len(onset_errors)} calls heard"),
        Row(AREA, f"calls over the announcer's echo ({where}): other detections / dropped by the check",
            f"{false} / {false_dropped}", "", "", f"{name}+echo" + (" (another mic's call, or the game's own speech)"
                                                                   if mics > 1 else "")),
    ]


def echo_rows(fixtures: list[Fixture], audio: dict[str, np.ndarray],
              engines: dict[str, Callable[[], Any]], plain: dict[str, Any] | None = None) -> list[Row]:
    """Every engine with and without the canceller, on the echo files and the whole set
    (``plain``: runs without it already made in the same benchmark, reused)."""
    plain = plain or {}
    rows = canceller_rows([f for f in fixtures if f.name in ECHO_FILES] or fixtures[:1], audio)
    for name in ("vosk", "enrolled", "combined"):
        if name not in engines:
            continue
        runs = {name: plain.get(name) or run_engine(name, engines[name], fixtures, audio=audio),
                f"{name}+echo": run_engine(f"{name}+echo", echo_factory(engines[name], fixtures), fixtures,
                                           audio=audio)}
        for label, result in runs.items():
            if result.error:
                rows += summarize(result, fixtures, AREA)
                continue
            for fname in ECHO_FILES:
                fx = next((f for f in fixtures if f.name == fname), None)
                if fx is None:
                    continue
                s = score(fx, result.detections[fname], words=CALL_WORDS)
                errs = ", ".join(f"{abs(m.onset_error) * 1000:.0f}" for m in s.hits)
                rows.append(Row(AREA, f"{fname}: calls heard / false calls", f"{len(s.hits)}/{s.targets} / {len(s.false)}",
                                "", "all / 0", f"{label}; onset errors {errs or '-'} ms"))
            every = merge(score(f, result.detections[f.name], words=(*CALL_WORDS, *COMMAND_WORDS))
                          for f in fixtures)
            calls = merge(score(f, result.detections[f.name], words=CALL_WORDS) for f in fixtures)
            false = sum(1 for _, d in every.false if d.word in CALL_WORDS)
            rows.append(Row(AREA, "whole set: recall, calls / false calls per hour",
                            f"{calls.recall:.3f} / {every.false_per_hour(CALL_WORDS):.1f}", "", ">= 0.98 / <= 0.5",
                            f"{label}: {len(calls.hits)}/{calls.targets} calls, {false} false in "
                            f"{every.non_target_seconds / 60:.1f} min; RTF {result.cpu_seconds / max(result.audio_seconds, 1e-9):.3f}"))
    best = next((n for n in ("combined", "vosk", "enrolled") if n in engines), None)
    if best is not None:
        rows += overlay_rows(fixtures, best, engines[best], per_mic_factory())
    return rows


def main(argv: list[str] | None = None) -> int:
    import argparse
    import os
    import tempfile

    from .bench_listening import engine_factories
    from .spotting import corpus

    parser = argparse.ArgumentParser(prog="python3 -m bench.echo_rows", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="only the two echo files")
    parser.add_argument("--engine", action="append", default=[], help="vosk, enrolled, combined (default: all)")
    args = parser.parse_args(argv)
    fixtures = corpus(False)
    if args.quick:
        fixtures = [f for f in fixtures if f.name in ECHO_FILES]
    audio = {f.name: f.read()[:, :1] for f in fixtures}
    with tempfile.TemporaryDirectory(prefix="voicesnap-bench-") as tmp:
        os.environ["VOICESNAP_DATA_DIR"] = tmp  # enrollment never touches a player's real data dir
        engines, _why = engine_factories(tmp)
        if args.engine:
            engines = {k: v for k, v in engines.items() if k in args.engine}
        for row in echo_rows(fixtures, audio, engines):
            value = f"{row.value:.3g}" if isinstance(row.value, float) else str(row.value)
            print(f"{row.metric:60} {value:>14} {row.unit:3} {row.note}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
