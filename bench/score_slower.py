"""Can "dealer score" be told from "dealer slower"? The probes behind ``vosk_spotter.SCORE_GAP``.

The command pass heard many espeak-ng voices' "dealer score" as "dealer slower" (a question taken for a
pace change; docs/announcer.md). Each take is a phrase rendered by espeak-ng as ``bench_announcer``'s
command rows render them (levels -14 to -4 dBFS peak over -50 dBFS noise, 1 s before, 2 s after), by
every one of 8 English accents x 12 voice variants per draw, at a random speed (120-200) and pitch
(20-80) per voice.

* ``ideas``: the command pass alone (the grammar of the 12 command phrases and "[unk]", over the whole
  take), and what each way of telling the two apart makes of its "slower": Vosk's alternatives (up to 4:
  "score" among them), its word confidence (under 0.9), decoy phrases that start like "score" ("dealer
  store", "dealer scar", ...: taken for "score"), the word's length, and the signal's gaps after the "s"
  (``Envelope.voice_after_s`` at SCORE_GAP). Counts of (said, heard) per way.
* ``noise``: the whole spotter (``VoskSpotter``, 20 ms chunks) on the same takes in pink noise at 20, 10
  and 5 dB SNR (against the phrase's level), with SCORE_GAP as shipped and off, and how many of the
  "slower"s it reports come under the table's SURE_PACE (those the table answers with how to go back).
* ``louder``: "dealer slower" and "dealer louder" by the same voices (the probes behind
  ``vosk_spotter.LOUDER_S``): what the command pass alone hears, whether ``Envelope.voice_after_s`` finds an
  "s" at the start of its "slower" or "louder", and the whole spotter with LOUDER_S as shipped and off (each
  take that either way gets wrong is listed, with its voice). ``--snr 20 10 5``: in pink noise instead.

``python3 -m bench.score_slower [ideas] [noise] [louder] [--draws N] [--snr DB ...]`` (needs espeak-ng and
VOICESNAP_VOSK_MODEL; ``ideas`` about 2 min a draw, ``noise`` about 8 min a draw, ``louder`` about 3.5 min a
draw and noise level, on a shared core).
"""

from __future__ import annotations

import argparse
import sys
import json
import os
import random
import subprocess
from collections import Counter, defaultdict
from typing import Any, Iterator

import numpy as np

ACCENTS = ("en-us", "en-gb", "en-gb-scotland", "en-gb-x-rp", "en-029", "en-us-nyc", "en-gb-x-gbclan", "en-gb-x-gbcwmd")
VARIANTS = ("m1", "m2", "m3", "m4", "m5", "m6", "m7", "f1", "f2", "f3", "f4", "f5")
PHRASES = ("dealer score", "dealer slower")
RATE = 16000
# Decoys that start like "score" (those the small model knows), for ``ideas``.
SK_DECOYS = ("sore", "core", "store", "scar", "skull", "scoop", "scold", "scoring", "scored", "scores", "scour",
             "skewer", "soar", "spore", "sport", "scorer")


def takes(draw: int, phrases: tuple[str, ...] = PHRASES) -> Iterator[tuple[str, str, np.ndarray]]:
    """(phrase, voice (espeak-ng's voice, speed and pitch; the peak level), int16 samples at 16 kHz) for every
    voice of one draw, each of ``phrases`` each (the
    voices, their speed, pitch and level, are the same whatever the phrases)."""
    import soxr

    rng = random.Random(draw)
    noise = np.random.default_rng(draw)
    for accent in ACCENTS:
        for variant in VARIANTS:
            speed, pitch, level = rng.randint(120, 200), rng.randint(20, 80), rng.uniform(-14, -4)
            for phrase in phrases:
                wav = subprocess.run(["espeak-ng", "-v", f"{accent}+{variant}", "-s", str(speed), "-p", str(pitch),
                                      "--stdout", phrase], capture_output=True, check=True).stdout
                x = soxr.resample(np.frombuffer(wav[44:], np.int16).astype(np.float32), 22050, RATE)
                x *= 10 ** (level / 20) * 32767 / (np.abs(x).max() + 1e-9)
                y = noise.normal(0, 32767 * 10 ** (-50 / 20), RATE * 3 + len(x))
                y[RATE : RATE + len(x)] += x
                yield phrase, f"{accent}+{variant} -s {speed} -p {pitch} at {level:.1f} dBFS", np.clip(y, -32768, 32767).astype(np.int16)


def _decode(model: Any, grammar: list[str], x: np.ndarray, alternatives: int = 0) -> dict[str, Any]:
    import vosk

    rec = vosk.KaldiRecognizer(model, RATE, json.dumps(grammar))
    rec.SetWords(True)
    if alternatives:
        rec.SetMaxAlternatives(alternatives)
    rec.AcceptWaveform(x.tobytes())
    result: dict[str, Any] = json.loads(rec.FinalResult())
    return result


def ideas(model: Any, draws: int) -> None:
    from voicesnap.onsets import Envelope
    from voicesnap.spotters.vosk_spotter import SCORE_GAP
    from voicesnap.vocabulary import command_phrases

    assert SCORE_GAP is not None
    base = [*command_phrases().values(), "[unk]"]
    decoyed = base[:-1] + [f"dealer {w}" for w in SK_DECOYS if model.vosk_model_find_word(w) >= 0] + ["[unk]"]
    out: dict[str, Counter[tuple[str, str]]] = defaultdict(Counter)
    lengths: dict[tuple[str, str], list[float]] = defaultdict(list)
    gaps: dict[str, list[tuple[float, float | None]]] = defaultdict(list)
    for draw in range(1, draws + 1):
        for phrase, _voice, x in takes(draw):
            x = x[RATE - RATE // 10 : RATE * 3]  # from 0.1 s before the phrase, as the command pass starts
            words = _decode(model, base, x).get("result", [])
            word = words[1]["word"] if len(words) > 1 and words[0]["word"] == "dealer" else ""
            out["command pass"][(phrase, word)] += 1
            if not word:
                continue
            lengths[(phrase, word)].append(words[1]["end"] - words[1]["start"])
            alts = [a["text"] for a in _decode(model, base, x, 4).get("alternatives", [])]
            text = _decode(model, decoyed, x).get("text", "").split()
            env = Envelope()
            env.push(0, x.astype(np.float32))
            gap = env.voice_after_s(words[1]["start"], words[1]["end"])
            if word == "slower" and gap is not None:
                gaps[phrase].append(gap)
            long_gaps = gap is not None and gap[0] >= SCORE_GAP[0] and gap[1] is not None and gap[1] >= SCORE_GAP[1]
            slower = word == "slower"
            out["'score' among 4 alternatives"][(phrase, "score" if slower and "dealer score" in alts else word)] += 1
            out["confidence under 0.9"][(phrase, "score" if slower and words[1]["conf"] < 0.9 else word)] += 1
            decoy = text[1] if len(text) > 1 else ""
            out["decoys like 'score' taken for it"][(phrase, "score" if decoy in SK_DECOYS else decoy)] += 1
            out["gaps after the 's' (SCORE_GAP)"][(phrase, "score" if slower and long_gaps else word)] += 1
    for way, counts in out.items():
        print(f"{way}: " + ", ".join(f"'{p}' as '{w or 'nothing'}' {n}" for (p, w), n in sorted(counts.items())))
    for (phrase, word), v in sorted(lengths.items()):
        if len(v) > 3:
            print(f"word length, '{phrase}' heard as '{word}': 10/50/90th percentile "
                  + " / ".join(f"{q:.2f}" for q in np.percentile(v, [10, 50, 90])) + " s")
    for phrase, g in gaps.items():
        low = [a * 1000 for a, _ in g if a >= SCORE_GAP[0]]
        voiced = [b * 1000 for a, b in g if a >= SCORE_GAP[0] and b is not None]
        print(f"heard 'slower', said '{phrase}': {len(g)} checked; low-band gap >= {SCORE_GAP[0] * 1000:.0f} ms"
              f" in {len(low)}; their voicing gaps " + (f"{min(voiced):.0f}-{max(voiced):.0f} ms" if voiced else "-"))


LOUDER_PHRASES = ("dealer slower", "dealer louder")


def louder(model: Any, draws: int, snr: int | None = None) -> None:
    """"dealer slower" heard as "dealer louder" (a pace change taken for a volume change) and the other way
    round: the command pass alone over both phrases by the same voices, what it hears, and what the "s" check
    (``Envelope.voice_after_s`` finds an "s" at the start of the word: ``vosk_spotter.LOUDER_S``) makes of its
    "louder"s; then the whole spotter with LOUDER_S as shipped and off. With ``snr``, in pink noise that many dB
    under the phrase's level (as ``noise``)."""
    from voicesnap.audio import AudioChunk
    from voicesnap.onsets import Envelope
    from voicesnap.spotters import vosk_spotter
    from voicesnap.vocabulary import command_phrases

    base = [*command_phrases().values(), "[unk]"]
    heard: dict[str, Counter[tuple[str, str]]] = defaultdict(Counter)
    found_s: dict[tuple[str, str], list[tuple[float, float | None] | None]] = defaultdict(list)
    misheard: list[str] = []
    shipped = vosk_spotter.LOUDER_S
    rng = np.random.default_rng(snr)
    for draw in range(1, draws + 1):
        for phrase, voice, x in takes(draw, LOUDER_PHRASES):
            if snr is not None:
                x = _in_pink(x, rng, snr)
            y = x[RATE - RATE // 10 : RATE * 3]  # from 0.1 s before the phrase, as the command pass starts
            words = _decode(model, base, y).get("result", [])
            word = words[1]["word"] if len(words) > 1 and words[0]["word"] == "dealer" else ""
            heard["command pass"][(phrase, word)] += 1
            if word in ("slower", "louder"):
                env = Envelope()
                env.push(0, y.astype(np.float32))
                gaps = env.voice_after_s(words[1]["start"], words[1]["end"])
                found_s[(phrase, word)].append(gaps)
                checked = "slower" if word == "louder" and gaps is not None else word
                heard["command pass, a 'louder' that starts with an 's' taken for 'slower'"][(phrase, checked)] += 1
            else:
                heard["command pass, a 'louder' that starts with an 's' taken for 'slower'"][(phrase, word)] += 1
            said: dict[bool, str] = {}
            for on in (shipped, False):
                vosk_spotter.LOUDER_S = on
                samples = x.reshape(-1, 1)
                spotter = vosk_spotter.VoskSpotter(model)
                got = []
                for i in range(0, len(samples), 320):
                    got += spotter.accept(AudioChunk(RATE, 2, 1, i, samples[i : i + 320]))
                commands = [d.word for d in got + spotter.flush() if d.word.startswith("dealer ")]
                said[on] = commands[0].removeprefix("dealer ") if commands else ""
                heard[f"whole spotter, LOUDER_S {on}"][(phrase, said[on])] += 1
            if said[shipped] != said[False] or said[False] != phrase.removeprefix("dealer "):
                misheard.append(f"draw {draw} {voice}: '{phrase}' heard as '{said[False] or 'nothing'}', "
                                f"with LOUDER_S as '{said[shipped] or 'nothing'}'")
            vosk_spotter.LOUDER_S = shipped
    print(f"{'quiet' if snr is None else f'pink noise {snr} dB'}, {draws} draws:")
    for way, counts in heard.items():
        print(f"{way}: " + ", ".join(f"'{p}' as '{w or 'nothing'}' {n}" for (p, w), n in sorted(counts.items())))
    for (phrase, word), g in sorted(found_s.items()):
        with_s = [v for v in g if v is not None]
        voiced = sorted(round(v[1] * 1000) for v in with_s if v[1] is not None)
        print(f"'{phrase}' heard as '{word}': {len(g)}, an 's' found in {len(with_s)}"
              + (f", voicing {voiced[0]}-{voiced[-1]} ms after it" if voiced else ""))
    print(*misheard, sep="\n")


def _pink(rng: np.random.Generator, n: int) -> np.ndarray:
    f = np.fft.rfftfreq(n, 1.0 / RATE)
    spec = np.fft.rfft(rng.normal(size=n))
    spec[1:] /= np.sqrt(f[1:])
    spec[0] = 0
    x = np.fft.irfft(spec, n)
    return np.asarray(x / x.std())


def _in_pink(x: np.ndarray, rng: np.random.Generator, snr: int) -> np.ndarray:
    """A take (1 s before the phrase, 2 s after) in pink noise ``snr`` dB under the phrase's level."""
    y = x.astype(np.float64)
    said = y[RATE:-2 * RATE]
    level = np.sqrt(np.mean(said[np.abs(said) > 0.05 * np.abs(said).max()] ** 2))
    return np.clip(y + _pink(rng, len(y)) * level * 10 ** (-snr / 20), -32768, 32767).astype(np.int16)


def noise(model: Any, draws: int) -> None:
    from voicesnap.audio import AudioChunk
    from voicesnap.spotters import vosk_spotter
    from voicesnap.table import TableLoop

    shipped = vosk_spotter.SCORE_GAP
    for snr in (20, 10, 5):
        for gap in (shipped, None):
            vosk_spotter.SCORE_GAP = gap
            rng = np.random.default_rng(snr)
            heard: Counter[tuple[str, str]] = Counter()
            unsure: Counter[str] = Counter()
            for draw in range(1, draws + 1):
                for phrase, _voice, x in takes(draw):
                    samples = _in_pink(x, rng, snr).reshape(-1, 1)
                    spotter = vosk_spotter.VoskSpotter(model)
                    got = []
                    for i in range(0, len(samples), 320):
                        got += spotter.accept(AudioChunk(RATE, 2, 1, i, samples[i : i + 320]))
                    commands = [d for d in got + spotter.flush() if d.word.startswith("dealer ")]
                    heard[(phrase, commands[0].word if commands else "")] += 1
                    if commands and commands[0].word == "dealer slower" and commands[0].confidence < TableLoop.SURE_PACE:
                        unsure[phrase] += 1
            print(f"pink noise {snr} dB, SCORE_GAP {gap}: "
                  + ", ".join(f"'{p}' as '{w or 'nothing'}' {n}" for (p, w), n in sorted(heard.items()))
                  + "; 'dealer slower' under SURE_PACE: "
                  + ", ".join(f"said '{p}' {unsure[p]} of {heard[(p, 'dealer slower')]}" for p in PHRASES))
    vosk_spotter.SCORE_GAP = shipped


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python3 -m bench.score_slower", description=__doc__.split("\n")[0])
    # the choices checked here: argparse checks a nargs="*" positional's default (or, with none, []) against
    # them as one value, so the documented `python3 -m bench.score_slower` stopped with "invalid choice: ['ideas']"
    probes = ("ideas", "noise", "louder")
    ap.add_argument("probes", nargs="*", metavar="{" + ",".join(probes) + "}", help="what to measure (default: ideas)")
    ap.add_argument("--draws", type=int, default=4, help="draws of 96 voices (ideas; noise: at most 2 by default)")
    ap.add_argument("--snr", type=int, nargs="*", default=[], help="louder: in pink noise at these SNRs (dB) instead of quiet")
    args = ap.parse_args(argv)
    unknown = [p for p in args.probes if p not in probes]
    if unknown:
        ap.error(f"no probe {', '.join(unknown)}; the probes: {', '.join(probes)}")
    args.probes = args.probes or ["ideas"]
    from voicesnap.spotters.vosk_spotter import load_model

    model = load_model(os.environ.get("VOICESNAP_VOSK_MODEL") or "/root/.cache/voicesnap-ci/vosk-model-small-en-us-aar-0.3.45")
    if "ideas" in args.probes:
        ideas(model, args.draws)
    if "noise" in args.probes:
        noise(model, min(args.draws, 2))
    if "louder" in args.probes:
        for snr in args.snr or [None]:
            louder(model, args.draws, snr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
