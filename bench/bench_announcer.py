"""Announcer benchmark: flip-to-first-sample latency, start-up rendering, Speed Snap backlog,
and voice-command false triggers on the fixture corpus.

Latency is measured from the moment the play loop hands the Flipped event to
the announcer until the output callback has written the flip's first sample
into a buffer (the callback is run at once, as if the device asked then). On
a real speaker add up to one output block plus the device's output latency;
``DevicePlayback`` reports the true DAC time, and a device row is printed
when an output device exists.
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from . import Row, area_main, row_line

AREA = "announcer"


def _pct(xs: list[float], q: float) -> float:
    return float(np.percentile(np.asarray(xs), q)) if xs else float("nan")


def _flip_latency(cache, n: int, fresh: str) -> list[float]:
    """Seconds from handle(Flipped) to the first sample in an output buffer."""
    from voicesnap.announcer import Announcer, Settings, Verbosity
    from voicesnap.cards import Card, Rank, Suit
    from voicesnap.playback import VirtualPlayback
    from voicesnap.rules import Flipped

    pb = VirtualPlayback(cache.rate)
    ann = Announcer(cache, pb, Settings(verbosity=Verbosity.RANKS))
    buf = np.zeros(256, dtype=np.int16)
    cards = [Card(rank=r, suit=s) for r in Rank for s in Suit]
    out = []
    for i in range(n):
        card = cards[i % len(cards)]
        if fresh == "uncached":  # memory and disk both cold: render + atomic write
            cache._memory.clear()
            if cache.folder is not None and cache.folder.exists():
                shutil.rmtree(cache.folder)
        elif fresh == "disk":  # memory cold, the WAV on disk (a later run)
            cache._memory.clear()
        ev = Flipped(float(i), 0, "alice", card, i + 1, False, False)
        t0 = time.perf_counter()
        ann.handle([ev])
        while True:
            pb.mixer.fill(buf)
            if any(r.kind == "started" for r in pb.mixer.reports):
                break
        out.append(time.perf_counter() - t0)
        pb.mixer.reports.clear()
        pb.mixer.cancel([a.id for a in ann.log])
    return out


def _device_latency(cache, n: int) -> list[float] | None:
    """Flip to DAC time of the first sample on a real output, if there is one."""
    try:
        import sounddevice as sd

        if not any(d["max_output_channels"] > 0 for d in sd.query_devices()):
            return None
    except Exception:
        return None
    from voicesnap.announcer import Announcer, Settings, Verbosity
    from voicesnap.cards import Card, Rank, Suit
    from voicesnap.playback import AudioOutputError, DevicePlayback, SpeechStarted
    from voicesnap.rules import Flipped
    from voicesnap.speech import SpeechCache

    try:
        pb = DevicePlayback().open()
    except AudioOutputError:
        return None
    try:
        dev_cache = SpeechCache(None, cache.settings, rate=pb.rate)
        ann = Announcer(dev_cache, pb, Settings(verbosity=Verbosity.RANKS))
        ann.prepare()
        time.sleep(0.3)
        out = []
        pb._frame_to_clock(0)  # fixes the stream-time origin the events are reported against
        for i in range(n + 3):  # the first three are a warm-up (stream start-up)
            pb.poll()
            first = pb._dac[0][1] if pb._dac else None
            t_handle = pb.stream_time
            # each flip at its own time: cards turned at one moment are one flip to the announcer (Speed Snap),
            # said in turn, so flips all at 0.0 queued behind each other and read 150 ms here, not ~10
            ann.handle([Flipped(float(i), 0, "alice", Card(rank=Rank.EIGHT, suit=Suit.HEARTS), i + 1, False, False)])
            deadline = time.perf_counter() + 2
            started = None
            while started is None and time.perf_counter() < deadline:
                time.sleep(0.005)
                started = next((e for e in pb.poll() if isinstance(e, SpeechStarted)), None)
            if started is not None and first is not None and i >= 3:
                origin = pb._first_dac
                assert origin is not None, "set by _frame_to_clock(0) above"
                out.append(started.t - (t_handle - origin))
            time.sleep(0.1)
        return out
    finally:
        pb.close()


def _backlog(cache, quick: bool) -> dict[str, float]:
    from voicesnap.announcer import Announcement, Announcer, Priority, Settings, Verbosity, rehearse
    from voicesnap.playback import VirtualPlayback
    from voicesnap.variants import SpeedSnap

    worst = {"stale": 0, "queue": 0, "cut": 0, "dropped": 0, "rulings": 0, "rulings_played": 0, "flips": 0,
             "late_flip_p95": 0.0}
    delays: list[float] = []
    for seed in range(2 if quick else 6):
        pb = VirtualPlayback(cache.rate, block=256)
        ann = Announcer(cache, pb, Settings(verbosity=Verbosity.NAMES))
        seen: list[tuple[int, int]] = []
        game = SpeedSnap(["alice", "bob", "cara", "dev"], seed=seed)
        rehearse(game, ann, pb, seed=seed, pace=0.5, max_flips=60 if quick else 150,
                 on_step=lambda now: seen.append((ann.queue.stale(), len(ann.queue.active))))
        worst["stale"] = max(worst["stale"], max(s for s, _ in seen))
        worst["queue"] = max(worst["queue"], max(q for _, q in seen))
        worst["cut"] += pb.cut
        worst["dropped"] += pb.dropped
        rulings = [a for a in ann.log if a.priority is Priority.RULING]
        worst["rulings"] += len(rulings)
        worst["rulings_played"] += sum(a.id in ann.started for a in rulings)
        flips = [a for a in ann.log if a.kind == "flipped"]
        worst["flips"] += len(flips)
        # first card of each flip serial: how long after the flip it was heard
        firsts: dict[int, Announcement] = {}
        for a in flips:
            firsts.setdefault(a.flip, a)
        delays += [ann.started[a.id] - a.t for a in firsts.values() if a.id in ann.started]
    worst["late_flip_p95"] = _pct(delays, 95)
    return worst


def _commands(quick: bool) -> list[Row] | None:
    model = os.environ.get("VOICESNAP_VOSK_MODEL") or "/root/.cache/voicesnap-ci/vosk-model-small-en-us-aar-0.3.45"
    if not Path(model, "am").is_dir():
        return [Row(AREA, "voice commands on the corpus", "n/a", note="no Vosk model (VOICESNAP_VOSK_MODEL)")]
    import soundfile as sf

    from voicesnap.audio import AudioChunk
    from voicesnap.commands import CommandGate, from_detection, is_call
    from voicesnap.corpus import load_corpus
    from voicesnap.spotters.vosk_spotter import VoskSpotter, load_model
    from voicesnap.vocabulary import command_phrases

    vmodel = load_model(model)
    cats = ["commands", "chatter"] if quick else None
    fixtures = load_corpus(categories=cats)
    said = heard = confused = as_call = false_cmd = false_raw = 0
    other_seconds = 0.0
    for fx in fixtures:
        if fx.channels != 1:
            continue
        data, rate = sf.read(fx.path, dtype="int16")
        spotter = VoskSpotter(vmodel)
        dets = []
        for i in range(0, len(data), 1600):
            dets += spotter.accept(AudioChunk(rate, 2, 1, i, data[i : i + 1600].reshape(-1, 1)))
        dets += spotter.flush()
        gate = CommandGate(audio=lambda a, b: data[max(0, int(a * rate)) : max(0, int(b * rate))])
        cmds = gate.feed(dets)
        segs = [s for s in fx.segments if s.kind == "command"]
        if not segs:
            other_seconds += fx.frames / fx.rate
            false_cmd += len(cmds)
            false_raw += sum(1 for d in dets if from_detection(d))
            continue
        said += len(segs)
        for s in segs:
            got = [c for c in cmds if abs(c.t - s.onset / rate) < 0.25]
            if any(command_phrases()[c.name] == s.text for c in got):
                heard += 1
            elif got:
                confused += 1
            as_call += sum(1 for d in dets if is_call(d) and s.onset / rate - 0.3 <= d.onset <= s.end / rate)
    hours = other_seconds / 3600
    scope = "commands+chatter fixtures" if quick else "whole corpus"
    return [
        Row(AREA, "voice commands heard as themselves", heard / said if said else float("nan"), "fraction",
            ">= 0.9", f"{heard}/{said}, Vosk spotter + gate"),
        Row(AREA, "voice command heard as another command", confused, "count", "0", f"of {said}"),
        Row(AREA, "voice command taken for a call", as_call, "count", "0", f"of {said}"),
        Row(AREA, "commands fired from non-command audio (gate)", false_cmd / hours if hours else float("nan"),
            "per hour", "0", f"{false_cmd} in {other_seconds:.0f} s, {scope}"),
        Row(AREA, "commands fired from non-command audio (prefix only)", false_raw / hours if hours else float("nan"),
            "per hour", "", f"{false_raw} in {other_seconds:.0f} s without the lead-in gate"),
    ]


# Voices for the command-voices rows: espeak-ng's English accents, each with a few of its variants.
ACCENTS = ("en-us", "en-gb", "en-gb-scotland", "en-gb-x-rp", "en-029", "en-us-nyc", "en-gb-x-gbclan", "en-gb-x-gbcwmd")
VARIANTS = ("m1", "m3", "m7", "f2", "f3", "f4")


def _command_voices(quick: bool, seed: int = 1) -> list[Row]:
    """Every command said by many synthetic voices (the corpus has two takes of each): which are
    heard as themselves, as another command, or not at all. Found "dealer score" -> "slower"."""
    model = os.environ.get("VOICESNAP_VOSK_MODEL") or "/root/.cache/voicesnap-ci/vosk-model-small-en-us-aar-0.3.45"
    if not Path(model, "am").is_dir():
        return [Row(AREA, "voice commands, many espeak-ng voices", "n/a", note="no Vosk model (VOICESNAP_VOSK_MODEL)")]
    import random
    import subprocess

    import soxr

    from voicesnap.audio import AudioChunk
    from voicesnap.spotters.vosk_spotter import VoskSpotter, load_model
    from voicesnap.vocabulary import command_phrases

    vmodel = load_model(model)
    rng = random.Random(seed)
    noise = np.random.default_rng(seed)
    per_accent = 1 if quick else 3
    rows: list[Row] = []
    for name, phrase in command_phrases().items():
        right = other = nothing = 0
        heard_as: dict[str, int] = {}
        for accent in ACCENTS:
            for variant in rng.sample(VARIANTS, per_accent):
                wav = subprocess.run(["espeak-ng", "-v", f"{accent}+{variant}", "-s", str(rng.randint(140, 190)),
                                      "-p", str(rng.randint(30, 70)), "--stdout", phrase],
                                     capture_output=True, check=True).stdout
                raw = np.frombuffer(wav[44:], np.int16).astype(np.float32)  # espeak-ng: 22050 Hz mono PCM
                x = soxr.resample(raw, 22050, 16000)
                x *= 10 ** (rng.uniform(-12, -4) / 20) * 32767 / (np.abs(x).max() + 1e-9)
                y = noise.normal(0, 32767 * 10 ** (-50 / 20), 16000 * 3 + len(x))
                y[16000:16000 + len(x)] += x
                samples = np.clip(y, -32768, 32767).astype(np.int16).reshape(-1, 1)
                spotter = VoskSpotter(vmodel)
                got = []
                for i in range(0, len(samples), 320):
                    got += spotter.accept(AudioChunk(16000, 2, 1, i, samples[i:i + 320]))
                words = [d.word for d in got + spotter.flush() if d.word.startswith("dealer ")]
                if phrase in words:
                    right += 1
                elif words:
                    other += 1
                    heard_as[words[0]] = heard_as.get(words[0], 0) + 1
                else:
                    nothing += 1
        n = right + other + nothing
        worst = max(heard_as, key=heard_as.__getitem__) if heard_as else ""
        rows.append(Row(AREA, f"'{phrase}', espeak-ng voices: heard as itself", right / n, "fraction", ">= 0.9",
                        f"{right}/{n}; as another command {other}" + (f" (most: '{worst}')" if worst else "")
                        + f", nothing {nothing}"))
    return rows


def run(quick: bool) -> list[Row]:
    from voicesnap.announcer import Verbosity, startup_phrases
    from voicesnap.speech import SpeechCache, VoiceSettings, engine_kind

    rows: list[Row] = []
    tmp = Path(tempfile.mkdtemp(prefix="vs-bench-announcer-"))
    try:
        n = 40 if quick else 200
        settings = VoiceSettings()
        cache = SpeechCache(tmp / "cache" / "speech", settings, rate=48000)
        cache.prerender(startup_phrases([], Verbosity.RANKS))
        kind = engine_kind()
        for fresh, label in (("cached", "cached (memory)"), ("disk", "cached on disk only"),
                             ("uncached", "uncached (render + atomic write)")):
            lat = _flip_latency(cache, n, fresh)
            rows.append(Row(AREA, f"flip to first sample, {label}, p50", _pct(lat, 50) * 1000, "ms", "<= 20",
                            f"n={n}, 48 kHz, espeak-ng via {kind}"))
            rows.append(Row(AREA, f"flip to first sample, {label}, p95", _pct(lat, 95) * 1000, "ms", "<= 20",
                            "+ one output block and device latency on a speaker"))
        dev = _device_latency(cache, 10 if quick else 30)
        if dev:
            rows.append(Row(AREA, "flip to first sample at the DAC, real output, p50", _pct(dev, 50) * 1000, "ms",
                            "<= 20", f"n={len(dev)}, PortAudio outputBufferDacTime, default device"))
            rows.append(Row(AREA, "flip to first sample at the DAC, real output, p95", _pct(dev, 95) * 1000, "ms",
                            "<= 20", "(reported DAC time; the loopback test found it 38 ms late on pulse)"))
        else:
            rows.append(Row(AREA, "flip to first sample at the DAC, real output", "n/a", note="no audio output"))
        for players, verb in ((3, Verbosity.RANKS), (6, Verbosity.NAMES)):
            names = ["alice", "bob", "cara", "dev", "emma", "finn"][:players]
            texts = startup_phrases(names, verb)
            folder = tmp / f"startup-{players}"
            cold = SpeechCache(folder, settings, rate=48000).prerender(texts)
            warm = SpeechCache(folder, settings, rate=48000).prerender(texts)
            rows.append(Row(AREA, f"pre-render start-up set, {verb.value}, {players} players, cold", cold * 1000,
                            "ms", "", f"{len(texts)} phrases, render + resample + atomic write"))
            rows.append(Row(AREA, f"pre-render start-up set, {verb.value}, {players} players, from disk",
                            warm * 1000, "ms", "", f"{len(texts)} phrases"))
        back = _backlog(SpeechCache(None, settings, rate=16000), quick)
        rows.append(Row(AREA, "Speed Snap backlog: stale items waiting (max)", back["stale"], "items", "0",
                        "4 players, a flip every 0.5 s, names verbosity"))
        rows.append(Row(AREA, "Speed Snap: most announcements wanted at once", back["queue"], "items", "",
                        f"{back['flips']} cards flipped"))
        rows.append(Row(AREA, "Speed Snap: card announcements cut or dropped", back["cut"] + back["dropped"], "items",
                        "0", "the next round waits for a round to be said (table.Output.ROUND_GAP after it)"))
        rows.append(Row(AREA, "Speed Snap: rulings spoken", f"{back['rulings_played']}/{back['rulings']}", "",
                        "all", "never dropped"))
        rows.append(Row(AREA, "Speed Snap: first card of a flip heard after the flip, p95",
                        back["late_flip_p95"] * 1000, "ms", "", "virtual clock, 256-frame blocks at 16 kHz"))
        rows.extend(_commands(quick) or [])
        rows.extend(_command_voices(quick))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return rows


def main(argv: list[str] | None = None) -> int:
    """``python3 -m bench.bench_announcer [--quick]``: this area's rows alone (without an entry point the module
    ran nothing, said nothing and exited 0)."""
    return area_main("bench.bench_announcer", __doc__, run, row_line, argv)


if __name__ == "__main__":
    sys.exit(main())
