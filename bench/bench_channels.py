"""Per-player microphones through the Vosk path: does every shout end up as one call on its caller's mic?

``voicesnap play --channels`` runs one Vosk spotter per mic (voicesnap.spotters.channels),
and every mic also hears the other players (crosstalk). Measured with and without
the crosstalk rule:

* the multichannel fixtures (players/multichannel mc2, mc4: crosstalk -12 dB, 3 ms;
  each player alone, then pairs 30 ms apart on distinct mics);
* a two-mic track (alice, bob; a lone shout each, then a 30 ms tie) at several
  crosstalk levels, and with the tie's second caller quieter than the first, to
  show where the rule's margin stops telling a copy from a second caller.

And, with the keyword model installed, what it adds beside Vosk on each mic
(voicesnap.spotters.judges.JudgedSpotter, what play runs then): corpus files
as one player's mic with their copy 20 dB down on a second (``corpus_mic_rows``).

And whether the table's burst tracker (voicesnap.bursts) would be better fed
with the echo canceller's output than with the raw microphone: on the corpus
fixtures that hold the announcer, the bursts each stream shows (rows
"burst tracker on ...").
"""

from __future__ import annotations

import contextlib
import io
import json
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

import numpy as np

from . import Row, area_main

if TYPE_CHECKING:  # heavy modules are imported where they are used
    from voicesnap.audio import AudioChunk
    from voicesnap.bursts import SpeechBurst
    from voicesnap.keyword import KeywordModel
    from voicesnap.spotters import Spotter
    from voicesnap.spotters.channels import ChannelSpotters

ROOT = Path(__file__).resolve().parents[1]
AREA = "channels"


def _spot(model: object, track: np.ndarray, owners: dict[int, str], margin: float | None,
          keyword: KeywordModel | None = None) -> tuple[list, ChannelSpotters]:
    """Detections of Vosk per mic (and, given ``keyword``, the keyword model beside it) with the rule."""
    from voicesnap.audio import ArraySource
    from voicesnap.spotters.channels import ChannelSpotters
    from voicesnap.spotters.gate import SpeechGate
    from voicesnap.spotters.judges import JudgedSpotter
    from voicesnap.spotters.keyword import KeywordSpotter
    from voicesnap.spotters.vosk_spotter import VoskSpotter

    per: dict[int, Spotter] = {ch: SpeechGate(VoskSpotter(model, channel=ch), channel=ch) for ch in owners}
    if keyword is not None:
        per = {ch: JudgedSpotter(v, KeywordSpotter(keyword, channel=ch, gate=True)) for ch, v in per.items()}  # as play
    sp = ChannelSpotters(per, owners, margin_db=margin)
    found = []
    for chunk in ArraySource(track, 16000, chunk_frames=320):
        found += sp.accept(chunk)
    return sorted(found + sp.flush(), key=lambda d: d.onset), sp


def _score(found: list, truth: list[tuple[float, str, int]]) -> tuple[int, int, list[float]]:
    """(calls on the right mic and player, extra calls, onset errors of the right ones)."""
    left = list(truth)
    ok, errs = 0, []
    for d in found:
        near = [t for t in left if t[1] == d.player and t[2] == d.channel and abs(t[0] - d.onset) < 0.1]
        if near:
            ok += 1
            errs.append(abs(near[0][0] - d.onset))
            left.remove(near[0])
    return ok, len(found) - ok, errs


def _two_mics(bleed_db: float, second_db: float = 0.0) -> tuple[np.ndarray, list[tuple[float, str, int]]]:
    from tests import table_script as ts

    shouts = [("alice", 0, 0.5, 0.0), ("bob", 0, 2.5, 0.0), ("alice", 1, 4.5, 0.0), ("bob", 1, 4.53, second_db)]
    rng = np.random.default_rng(3)
    track = rng.normal(0.0, 32768 * 10 ** (-70 / 20), (7 * 16000, 2))
    lag = int(0.003 * 16000)
    for player, take, onset, gain in shouts:
        clip = ts.takes(player, "snap")[take].astype(np.float64) * 10 ** (gain / 20)
        mine = ("alice", "bob").index(player)
        a = int(round(onset * 16000))
        track[a:a + len(clip), mine] += clip
        track[a + lag:a + lag + len(clip), 1 - mine] += clip * 10 ** (bleed_db / 20)
    truth = [(onset, player, ("alice", "bob").index(player)) for player, _t, onset, _g in shouts]
    return np.clip(track, -32768, 32767).astype(np.int16), truth


def tracker_over_announcer() -> list[Row]:
    """BurstTracker on the raw microphone vs on the echo canceller's output (fixtures with a reference)."""
    from voicesnap.audio import ArraySource
    from voicesnap.bursts import BurstTracker
    from voicesnap.corpus import load_corpus
    from voicesnap.echo import ArrayReference, EchoCancelled

    class Feed:
        name = "bursts"

        def __init__(self) -> None:
            self.tracker = BurstTracker()
            self.bursts: list[SpeechBurst] = []

        def accept(self, chunk: AudioChunk) -> list:
            self.bursts += self.tracker.accept(chunk)
            return []

        def flush(self) -> list:
            self.bursts += self.tracker.flush()
            return []

    @dataclass
    class Tally:
        alone: int = 0  # bursts with no call
        secs: float = 0.0  # their total length
        spans: list[tuple[float, float]] = field(default_factory=list)  # per call: starts early, ends late (s)

    stats = {"raw microphone": Tally(), "echo canceller output": Tally()}
    names = []
    for fx in load_corpus(categories=("echo", "noisy")):
        ref = fx.read_reference()
        if ref is None:
            continue
        names.append(fx.name)
        calls = [(s.onset / fx.rate, s.end / fx.rate) for s in fx.segments if s.kind == "call"]
        raw, out = Feed(), Feed()
        cancelled = EchoCancelled(out, ArrayReference(ref[:, 0]))
        for chunk in ArraySource(fx.read(), fx.rate, chunk_frames=320):
            raw.accept(chunk)
            cancelled.accept(chunk)
        raw.flush()
        cancelled.flush()
        for label, feed in (("raw microphone", raw), ("echo canceller output", out)):
            ended = [(b.onset, b.end) for b in feed.bursts if b.end is not None]  # (onset, end)
            alone = [(bo, be) for bo, be in ended if not any(bo < e + 0.05 and o < be for o, e in calls)]
            stats[label].alone += len(alone)
            stats[label].secs += sum(be - bo for bo, be in alone)
            for o, e in calls:  # the burst that holds a call: how early it starts (the announcer), how late it ends
                held = [(bo, be) for bo, be in ended if bo < e and o < be]
                if held:
                    stats[label].spans.append((o - min(bo for bo, _be in held), max(be for _bo, be in held) - e))
    rows = []
    for label, tally in stats.items():
        n, secs, spans = tally.alone, tally.secs, tally.spans
        early = np.median([a for a, _b in spans]) * 1000 if spans else float("nan")
        late = np.median([b for _a, b in spans]) * 1000 if spans else float("nan")
        rows.append(Row(AREA, f"burst tracker on the {label}: bursts with no call", n, "", "",
                        f"{secs:.1f} s of them; bursts holding a call start {early:.0f} ms before it and end "
                        f"{late:.0f} ms after its word (medians, {len(spans)} calls); {', '.join(names)}"))
    return rows


def run(quick: bool) -> list[Row]:
    sys.path.insert(0, str(ROOT))
    from bench.bench_play import _model
    from voicesnap.audio import read_wav
    from voicesnap.spotters.channels import MARGIN_DB
    from voicesnap.spotters.vosk_spotter import load_model

    path = _model()
    if path is None:
        return [Row(AREA, "per-mic calls through Vosk", "skipped", note="no Vosk English model (VOICESNAP_VOSK_MODEL)")]
    model = load_model(path)
    rows: list[Row] = []
    fixtures = ROOT / "tests" / "fixtures" / "audio" / "players" / "multichannel"
    from voicesnap.keyword import load_keyword_model

    try:
        keyword = load_keyword_model(None, None)
    except Exception:  # noqa: BLE001 (a damaged install: corpus_mic_rows says why)
        keyword = None
    cases: list[tuple[float | None, str, KeywordModel | None]] = [
        (None, "no crosstalk rule", None), (MARGIN_DB, f"crosstalk rule {MARGIN_DB:g} dB", None)]
    if keyword is not None:
        cases.append((MARGIN_DB, f"crosstalk rule {MARGIN_DB:g} dB, with the keyword model", keyword))
    for margin, label, kw in cases:
        ok = extra = total = moved = 0
        errs: list[float] = []
        for name in ("mc2", "mc4"):
            meta = json.loads((fixtures / f"{name}.json").read_text())
            track, rate = read_wav(fixtures / f"{name}.wav")
            truth = [(s["onset"] / rate, s["speaker"], s["channel"]) for s in meta["segments"]]
            found, sp = _spot(model, track, {s["channel"]: s["speaker"] for s in meta["segments"]}, margin, kw)
            a, b, e = _score(found, truth)
            ok, extra, total, errs, moved = ok + a, extra + b, total + len(truth), errs + e, moved + len(sp.moved)
        rows.append(Row(AREA, f"mc2+mc4 per mic, {label}: calls on the right mic/player",
                        f"{ok}/{total}", "", f"{total}/{total}",
                        f"extra calls {extra}; onset error p95 {1000 * float(np.percentile(errs, 95)):.0f} ms; "
                        f"moved to the loud mic {moved}"))
    levels = (-20.0, -12.0) if quick else (-20.0, -12.0, -9.0, -6.0)
    for bleed in levels:
        track, truth = _two_mics(bleed)
        cells = []
        for margin in (None, MARGIN_DB):
            found, _sp = _spot(model, track, {0: "alice", 1: "bob"}, margin)
            a, b, _e = _score(found, truth)
            cells.append(f"{a}/{len(truth)} +{b}")
        rows.append(Row(AREA, f"2 mics, crosstalk {bleed:g} dB: right calls +extra, no rule | rule",
                        " | ".join(cells), "", "4/4 +0", "lone alice, lone bob, a 30 ms tie"))
    quieter = (0.0, -6.0) if quick else (0.0, -3.0, -6.0, -9.0)
    for gain in quieter:
        track, truth = _two_mics(-20.0, gain)
        found, _sp = _spot(model, track, {0: "alice", 1: "bob"}, MARGIN_DB)
        a, b, _e = _score(found, truth)
        tie = [d for d in found if d.onset > 4.0]
        rows.append(Row(AREA, f"30 ms tie, second caller {gain:g} dB quieter: right calls +extra (rule)",
                        f"{a}/{len(truth)} +{b}", "", "4/4 +0",
                        f"tie calls {[(d.player, round(d.onset, 3)) for d in tie]}; crosstalk -20 dB"))
    return rows + corpus_mic_rows(model, quick) + tracker_over_announcer()


MIC_CATEGORIES = ("clean", "noisy", "nearmiss", "snap_vs_pool", "quiet", "clipped", "echo")
CALLS = ("snap", "snap pool")


def corpus_mic_rows(vosk_model: object, quick: bool) -> list[Row]:
    """Vosk alone vs Vosk and the keyword model on each mic: every corpus file of MIC_CATEGORIES (noisy
    only with --quick) as mic 0, its copy 20 dB down as mic 1; a call counts when its word is heard on
    mic 0 within 100 ms of its onset."""
    import time

    from voicesnap import corpus as C
    from voicesnap.audio import ArraySource
    from voicesnap.keyword import KeywordError, load_keyword_model
    from voicesnap import voices as V
    from voicesnap.spotters.channels import ChannelSpotters, OwnWordCheck, with_contrast
    from voicesnap.spotters.enrolled import EnrolledSpotter
    from voicesnap.spotters.gate import SpeechGate
    from voicesnap.spotters.judges import JudgedSpotter
    from voicesnap.spotters.keyword import KeywordSpotter
    from voicesnap.spotters.vosk_spotter import VoskSpotter

    from . import scratch_data_dir

    try:
        keyword = load_keyword_model(None, None)
    except KeywordError as e:
        return [Row(AREA, "per-mic calls, Vosk + keyword model", "skipped", note=str(e))]
    if keyword is None:
        return [Row(AREA, "per-mic calls, Vosk + keyword model", "skipped",
                    note="no keyword model (VOICESNAP_KEYWORD_MODEL, voicesnap models download keyword)")]

    def build(judged: bool) -> ChannelSpotters:
        per: dict[int, object] = {}
        for ch in (0, 1):
            v = SpeechGate(VoskSpotter(vosk_model, channel=ch, pool_exists=True), channel=ch)
            per[ch] = JudgedSpotter(v, KeywordSpotter(keyword, channel=ch, pool_exists=True, gate=True)) if judged else v
        return ChannelSpotters(per, {0: "me", 1: "other"})

    profiles: list = []  # the six fixture players, for --strict-calls (channels.OwnWordCheck)
    with scratch_data_dir() as tmp, contextlib.redirect_stdout(io.StringIO()):  # (enroll's own report)
        from .enrolled_setup import fixture_profiles

        try:
            profiles = fixture_profiles(tmp)
        except Exception:  # noqa: BLE001 (the strict row is left out)
            profiles = []

    told = any(V.profile_contrast(p) for p in profiles)  # their "slap" takes (channels.ContrastCheck)

    def contrast() -> Any:
        return with_contrast(build(True), profiles)

    def strict() -> OwnWordCheck:
        return OwnWordCheck(contrast(), EnrolledSpotter(profiles))  # as play builds it

    cats = ("noisy",) if quick else MIC_CATEGORIES
    fixtures = C.load_corpus(categories=cats)
    rows = []
    kinds: list[tuple[Callable[[], Any], str]] = [(lambda: build(False), "Vosk alone"),
                                                   (lambda: build(True), "Vosk + keyword model")]
    if told:
        kinds.append((contrast, "Vosk + keyword model, with the players' 'slap' takes (as play runs it)"))
    if profiles:
        kinds.append((strict, "Vosk + keyword model, --strict-calls (the enrollment must hear the call too)"))
    for make, label in kinds:
        hits = calls = false = 0
        errs: list[float] = []
        lat: list[float] = []
        cpu = audio = 0.0
        for fx in fixtures:
            x = fx.read()[:, 0]
            track = np.stack([x, np.round(0.1 * x.astype(np.float32)).astype(np.int16)], axis=1)
            sp = make()
            t0 = time.process_time()
            found = []
            for chunk in ArraySource(track, fx.rate, chunk_frames=320):
                found += sp.accept(chunk)
            found += sp.flush()
            cpu += time.process_time() - t0
            audio += len(x) / fx.rate
            found = [d for d in found if d.word in CALLS]
            mine = [d for d in found if d.player == "me"]  # on mic 0, its owner's; every other call is false
            got = C.score(fx, mine, words=CALLS, tolerance=0.1)
            errs += [abs(e) for e in got.onset_errors]
            lat += got.latencies
            hits, calls, false = hits + len(got.hits), calls + len(got.hits) + len(got.misses), false + len(got.false) + len(found) - len(mine)
        rows.append(Row(AREA, f"per-mic corpus calls ({'noisy' if quick else 'lone-call'} files), {label}",
                        f"{hits}/{calls}", "", "",
                        f"false calls {false}; onset error p95 {1000 * float(np.percentile(errs, 95)):.1f} ms; "
                        f"latency median/p95 {1000 * float(np.median(lat)):.0f}/"
                        f"{1000 * float(np.percentile(lat, 95)):.0f} ms; RTF (two mics) {cpu / audio:.3f}"))
    return rows


def _line(row: Row) -> str:
    v = f"{row.value:.3g}" if isinstance(row.value, float) else str(row.value)
    return f"{row.metric:75} {v:>12} {row.target:8} {row.note}"


def main(argv: list[str] | None = None) -> int:
    return area_main("bench.bench_channels", __doc__, run, _line, argv)


if __name__ == "__main__":
    sys.exit(main())
