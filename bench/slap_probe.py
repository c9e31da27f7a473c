"""Can "slap" be told from "snap" after the hiss? The eighteenth round's probes (docs/listening.md).

Since a call must start with the hiss of its "s" (``onsets.HISS_MIN``), most false calls left on the
no-call hour are "slap" and "slap it down": words that start with "s" as well. Two probes, on the
corpus's 150 calls against the hour's "slap" words (true onsets, ground truth; no engine runs):

* ``vosk``: each word's span (0.1 s before to 0.25 s after) decoded on its own with a grammar that
  gives "slap" a weight of N beside the calls' BOOST (the shipped grammar has N = 1), and with no
  boost at all. How many calls still decode with "snap", how many "slap" words do.
* ``murmur``: what follows the hiss. A nasal ("sn") puts its energy under 500 Hz, a lateral ("sl")
  keeps more at 1-3 kHz: the low/mid ratio 5-35 ms after the hiss ends, percentiles per word and
  speaker, beside the corpus calls'.

``python3 -m bench.slap_probe [vosk] [murmur]`` (the no-call hour is rendered once and cached by
``bench.bench_nocall``; ``vosk`` needs VOICESNAP_VOSK_MODEL).
"""

from __future__ import annotations

import argparse
import json
import os
from collections import Counter, defaultdict
from typing import Iterator

import numpy as np

from voicesnap.corpus import Fixture

from .bench_nocall import render_stream
from .spotting import corpus

RATE = 16000
SLAP_WORDS = ("slap", "slap it down", "do not slap the table")


def spans(before: float = 0.1, after: float = 0.25) -> Iterator[tuple[str, str, str, np.ndarray, int]]:
    """(source, word, speaker, audio, onset in it) for every corpus call and every "slap" word of the hour;
    ``word`` is "CALL" for a call."""
    sources: list[tuple[str, list[Fixture]]] = [("corpus", corpus(False)), ("hour", render_stream())]
    for source, fixtures in sources:
        for fx in fixtures:
            x = fx.read()[:, 0]
            for s in fx.segments:
                if s.channel != 0 or fx.rate != RATE:
                    continue
                word = "CALL" if s.kind == "call" else s.text
                if word != "CALL" and (source != "hour" or word not in SLAP_WORDS):
                    continue
                a = max(0, s.onset - int(before * RATE))
                yield source, word, s.speaker, x[a: min(len(x), s.end + int(after * RATE))], s.onset - a


def vosk_probe(weights: tuple[int, ...] = (1, 3, 10, 30, 100)) -> None:
    import vosk

    from voicesnap.spotters.vosk_spotter import BOOST, DECOYS, grammar_words, load_model

    model = load_model(os.path.expanduser(os.environ["VOICESNAP_VOSK_MODEL"]))
    known = [w for w in grammar_words() if model.vosk_model_find_word(w) >= 0]
    extra = [d for d in DECOYS if d not in known and model.vosk_model_find_word(d) >= 0]
    calls = [w for w in known if w in ("snap", "pool")]
    items = [(w, spk, x.astype(np.int16).tobytes()) for _src, w, spk, x, _o in spans()]
    grammars = {f"slap x{n}": known + calls * (BOOST - 1) + extra + ["slap"] * (n - 1) + ["[unk]"] for n in weights}
    grammars["no boost"] = ["snap", "pool", "slap", "[unk]"]
    print(f"{'grammar':10} {'calls with snap':>16} {'calls with slap':>16}  slap words with snap")
    for name, grammar in grammars.items():
        text = json.dumps(grammar)
        got: Counter[str] = Counter()
        for word, _spk, audio in items:
            rec = vosk.KaldiRecognizer(model, RATE, text)
            rec.AcceptWaveform(audio)
            heard = json.loads(rec.FinalResult()).get("text", "").split()
            got[word] += 1
            got[word + " snap"] += "snap" in heard
            got[word + " slap"] += "slap" in heard
        slaps = ", ".join(f"{w} {got[w + ' snap']}/{got[w]}" for w in SLAP_WORDS if got[w])
        print(f"{name:10} {got['CALL snap']:>10}/{got['CALL']:<5} {got['CALL slap']:>10}/{got['CALL']:<5}  {slaps}")


def murmur(x: np.ndarray, onset: int) -> float | None:
    """Low (0.1-0.5 kHz) over mid (1-3 kHz) band, dB, 5-35 ms after the hiss that starts the word ends."""
    n, hop = 256, 80
    freqs = np.fft.rfftfreq(n, 1 / RATE)
    seg = x.astype(np.float64)
    if onset < int(0.3 * RATE):
        return None
    frames = np.lib.stride_tricks.sliding_window_view(seg, n)[::hop] * np.hanning(n)
    power = np.abs(np.fft.rfft(frames, axis=1)) ** 2
    t = (np.arange(len(power)) * hop + n / 2 - onset) / RATE
    over = np.maximum(power - np.percentile(power[t < -0.05], 30, axis=0), 0.0)  # what the word adds

    def band(lo: float, hi: float) -> np.ndarray:
        return over[:, (freqs >= lo) & (freqs < hi)].sum(axis=1)

    hiss = band(3500, 7800) > band(100, 1500)
    start = np.flatnonzero(hiss & (t >= -0.03) & (t <= 0.15))
    if not len(start):
        return None
    i = int(start[0])
    while i + 1 < len(hiss) and hiss[i + 1]:
        i += 1
    after = (t > t[i] + 0.005) & (t <= t[i] + 0.035)
    if not after.any():
        return None
    return float(10 * np.log10((band(100, 500)[after].mean() + 1e-9) / (band(1000, 3000)[after].mean() + 1e-9)))


def murmur_probe() -> None:
    values: dict[tuple[str, str], list[float]] = defaultdict(list)
    for _src, word, speaker, x, onset in spans(before=0.6, after=0.3):
        v = murmur(x, onset)
        if v is not None:
            values[(word, "all")].append(v)
            values[(word, speaker)].append(v)
    print(f"{'word':24} {'speaker':10} {'n':>4}  murmur dB: 5th / 50th / 95th percentile")
    for (word, speaker), vs in sorted(values.items()):
        p = np.percentile(vs, [5, 50, 95])
        print(f"{word:24} {speaker:10} {len(vs):4}  {p[0]:6.1f} / {p[1]:6.1f} / {p[2]:6.1f}")
    calls, slaps = np.array(values[("CALL", "all")]), np.array(values[("slap", "all")])
    for line in (5.0, 10.0, 15.0):  # a call under the line would be dropped, a "slap" over it kept
        print(f"murmur line {line:4.0f} dB: calls under it {int((calls < line).sum())}/{len(calls)}, "
              f"'slap' over it {int((slaps >= line).sum())}/{len(slaps)}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python3 -m bench.slap_probe", description=__doc__.splitlines()[0])
    parser.add_argument("probes", nargs="*", help="vosk, murmur (default: both)")
    args = parser.parse_args(argv)
    args.probes = args.probes or ["vosk", "murmur"]
    if set(args.probes) - {"vosk", "murmur"}:
        parser.error(f"unknown probe {sorted(set(args.probes) - {'vosk', 'murmur'})}: choose vosk or murmur")
    if "vosk" in args.probes:
        vosk_probe()
    if "murmur" in args.probes:
        murmur_probe()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
