#!/usr/bin/env python3
"""Train the keyword model's head: ``python3 models/train_keyword.py``.

Writes ``voicesnap/data/keyword_head.npz`` (voicesnap.keyword.Head): a
two-layer MLP over the last 16 speech embeddings (openWakeWord's front end,
``voicesnap models download keyword``) that gives P(nothing), P(snap) and
P(snap pool) every 80 ms.

Training audio is made here, deterministically (a seed per stream), as
16-second "table streams": one to four espeak-ng voices (8 English accents x
~90 variants, random pitch and speed; never the fixture players' or
strangers' voice+variant, tests/fixtures/audio/voices.json) say calls, near
misses (the issue's list and ~40 more words that share sounds with "snap"
or "pool", a third of them inside a sentence of table talk), cards named
("seven of clubs", "my jack"), voice commands, table talk, and real
LibriSpeech speech (the ``../shared/speech`` utterances the corpus does not
use); the announcer (the game's own espeak-ng voice) says ranks and rulings
through a room. Then reverb, a microphone's tilt, and one background: room
tone, pink, white or brown noise, real babble (the same LibriSpeech
utterances), synthetic babble, with table clatter, at -2 to 25 dB SNR; a few
streams are clipped. Two calls by two voices up to 250 ms apart are in the mix
too.

Labels, per 80 ms step (the audio under a step ends at its time): the call
class from 40 ms to 360 ms after a call's last sample (so the head hears the
whole word before it fires; "snap" of a "snap pool" until "pool" starts);
ignored while a call is being said and for a while after; "nothing"
everywhere else, and a near miss's steps (from its onset to 0.5 s after it,
where a false call would fire) weigh ``--near-weight`` times as much in the
loss. The fixture corpus, its voices (which also speak bench/bench_nocall.py's
hour) and Speech Commands are never used, so the benchmarks measure held-out
voices, noise and real words.

Needs espeak-ng, onnxruntime and the keyword model's front end; about 16
minutes on two cores to render the default 6000 streams (``--workers``) and 7
to train a head (12000 streams: 15 minutes and 13 GB); the embeddings are
cached per shard under ``--work`` so training can be re-run alone. Heads of
other seeds (``--seed``) differ by up to 11 corpus calls; ``--seed 0 1 2`` or
``--join`` makes one head that averages several (docs/listening.md, "Fifteenth
round").
"""

from __future__ import annotations

import argparse
import io
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import soundfile as sf
import soxr

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

RATE = 16000
SECONDS = 16.0
ACCENTS = ["en-us", "en-gb", "en-gb-scotland", "en-gb-x-rp", "en-gb-x-gbclan", "en-gb-x-gbcwmd", "en-029",
           "en-us-nyc"]
VARIANTS = ("Alex Alicia Andrea Andy Annie AnxiousAndy Denis Diogo Gene Gene2 Henrique Hugo Jacky Lee Marco Mario "
            "Michael Mike Nguyen RicishayMax RicishayMax2 Storm Tweaky adam anika antonio aunty belinda benjamin boris "
            "caleb croak david ed edward edward2 f1 f2 f3 f4 f5 grandma grandpa gustave iven iven2 iven3 iven4 john "
            "kaukovalta klatt klatt2 klatt3 klatt4 linda m1 m2 m3 m4 m5 m6 m7 m8 marcelo max michel miguel norbert "
            "pablo paul pedro quincy rob robert sandro shelby steph steph2 steph3 travis victor whisper whisperf "
            "zac").split()
NEAR = ["snack", "stop", "map", "slap", "cap", "nap", "trap", "snow",  # the list first
        "snag", "snatch", "snip", "sap", "scrap", "strap", "snail", "span", "spam", "swap", "knap", "nab", "flap",
        "clap", "tap", "lap", "sack", "snack bar", "step", "shop", "snub", "sniff", "snob", "snare", "sleep",
        "sling", "snoop", "spool", "pool", "cool", "stool", "school", "rule", "stop it", "slap it", "map pool",
        "snack pool", "nap time", "trap door", "what", "yes", "no", "pass"]
RANKS = ["ace", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "jack", "queen", "king"]
CARDS = [f"{r} of {s}" for r in RANKS for s in ("hearts", "spades", "clubs", "diamonds")] + \
        [f"{w} {r}" for r in RANKS for w in ("my", "a", "another", "the")]
ANNOUNCE = [r.capitalize() for r in RANKS] + ["Queen of hearts", "Alice, seven", "Pool formed, top card five",
                                               "Bob wins the pile", "Tie! The pile goes to the pool", "Cara, king",
                                               "Dev is out", "Your turn"]
WORDS = ("the a and to of in is it you that he was for on are with as his they be at one have this from or had by "
         "hot word but what some we can out other were all there when up use your how said an each she which do "
         "their time if will way about many then them write would like so these her long make thing see him two has "
         "look more day could go come did number sound no most people my over know water than call first who may "
         "down side been now find any new work part take get place made live where after back little only round man "
         "year came show every good me give our under name very through just form sentence great think say help low "
         "line differ turn cause much mean before move right boy old too same tell does set three want air well also "
         "play small end put home read hand port large spell add even land here must big high such follow act why "
         "ask men change went light kind off need house picture try us again animal point mother world near build "
         "self earth father card cards deal pile hearts spades clubs diamonds seven queen shuffle winner lucky match "
         "pair again nice oh wow come on quick hurry slow wait really funny tea coffee cake biscuit pass").split()
SHARED = ROOT.parent / "shared" / "speech" / "librispeech"
CORPUS_REAL = ROOT / "tests" / "fixtures" / "audio" / "real" / "librispeech"
# Positive steps: from POS[0] to POS[1] s after a call's last sample. Earlier (from 60 ms before the end)
# fired ~90 ms sooner but took twice the corpus's near misses for calls (docs/listening.md).
POS = (0.04, 0.36)
IGNORE_AFTER = 0.9  # s after a call during which steps are neither positive nor negative
NEAR_AFTER = 0.5  # s after a near miss during which its "nothing" steps weigh NEAR_WEIGHT
NEAR_WEIGHT = 6.0
CONTEXT = 16  # embeddings the head sees


def _held_out() -> set[tuple[str, str]]:
    voices = json.loads((ROOT / "tests" / "fixtures" / "audio" / "voices.json").read_text())
    out = set()
    for group in ("players", "strangers"):
        for v in voices[group].values():
            accent, _, variant = v["voice"].partition("+")
            out.add((accent, variant))
    return out


HELD_OUT = _held_out()


# --------------------------------------------------------------------------- audio


def espeak(text: str, voice: str, speed: int, pitch: int, amp: int) -> np.ndarray:
    out = subprocess.run(["espeak-ng", "-v", voice, "-s", str(speed), "-p", str(pitch), "-a", str(amp), "--stdout",
                          text], check=True, capture_output=True).stdout
    data, rate = sf.read(io.BytesIO(out), dtype="float32")
    x = soxr.resample(data, rate, RATE, quality="HQ").astype(np.float32)
    peak = float(np.max(np.abs(x))) if x.size else 0.0
    idx = np.nonzero(np.abs(x) > peak * 0.005)[0]  # the corpus's trim: the word's first and last sample
    return x[idx[0]: idx[-1] + 1] if idx.size else x[:0]


def rms(x: np.ndarray) -> float:
    return float(np.sqrt(np.mean(np.square(x, dtype=np.float64)) + 1e-20))


def pink(n: int, rng: np.random.Generator) -> np.ndarray:
    spec = np.fft.rfft(rng.standard_normal(n))
    f = np.fft.rfftfreq(n, 1 / RATE)
    f[0] = f[1]
    x = np.fft.irfft(spec / np.sqrt(f), n)
    return (x / rms(x)).astype(np.float32)


def brown(n: int, rng: np.random.Generator) -> np.ndarray:
    x = np.cumsum(rng.standard_normal(n))
    c = np.cumsum(np.concatenate([[0.0], x]))
    i = np.arange(n)
    x = x - (c[np.minimum(i + 400, n)] - c[np.maximum(i - 400, 0)]) / 800  # drift removed
    return (x / rms(x)).astype(np.float32)


def clatter(rng: np.random.Generator) -> np.ndarray:
    n = int(RATE * rng.uniform(0.02, 0.2))
    x = rng.standard_normal(n) * np.exp(-np.arange(n) / (n / rng.uniform(2, 10)))
    k = int(rng.integers(1, 8))
    x = np.convolve(x, np.ones(k) / k, mode="same")
    return (x / np.max(np.abs(x))).astype(np.float32)


def reverb(x: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    n = int(RATE * rng.uniform(0.15, 0.7))
    tail = rng.standard_normal(n) * np.exp(-6.9 * np.arange(n) / n)
    tail[: int(rng.uniform(0.002, 0.01) * RATE)] = 0
    ir = np.concatenate([[1.0], tail[1:] * rng.uniform(0.1, 0.6) / np.sqrt(np.sum(tail ** 2))])
    size = len(x) + len(ir) - 1
    nfft = 1 << (size - 1).bit_length()
    y = np.fft.irfft(np.fft.rfft(x, nfft) * np.fft.rfft(ir, nfft), nfft)[:size]
    return y[: len(x) + n // 2].astype(np.float32)


def colour(x: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """A microphone's tilt: a random spectral slope (dB per octave from 1 kHz), with a low cut."""
    n = len(x)
    f = np.fft.rfftfreq(n, 1 / RATE)
    f[0] = 1.0
    slope, cut = rng.uniform(-4, 3), rng.uniform(50, 300)
    g = 10 ** (slope * np.log2(f / 1000.0) / 20) / np.sqrt(1 + (cut / f) ** 4)
    return np.fft.irfft(np.fft.rfft(x) * g, n).astype(np.float32)


_REAL: list[np.ndarray] | None = None


def real_speech() -> list[np.ndarray]:
    """The LibriSpeech utterances in ../shared/speech that the fixture corpus does not use."""
    global _REAL
    if _REAL is None:
        used = {p.stem for p in CORPUS_REAL.glob("*/*.flac")}
        _REAL = [sf.read(p, dtype="float32")[0] for p in sorted(SHARED.glob("*/*.wav")) if p.stem not in used]
        if not _REAL:
            raise SystemExit(f"no LibriSpeech utterances under {SHARED} (the shared speech folder)")
    return _REAL


def voice(rng: np.random.Generator) -> dict:
    while True:
        accent, variant = ACCENTS[rng.integers(len(ACCENTS))], VARIANTS[rng.integers(len(VARIANTS))]
        if (accent, variant) not in HELD_OUT:
            return {"voice": f"{accent}+{variant}", "pitch": int(rng.integers(10, 95)),
                    "speed": int(rng.integers(120, 215)), "amp": int(rng.integers(90, 140))}


def say(v: dict, text: str, rng: np.random.Generator) -> np.ndarray:
    speed = int(np.clip(v["speed"] * rng.uniform(0.85, 1.15), 80, 260))
    pitch = int(np.clip(v["pitch"] + rng.integers(-10, 11), 0, 99))
    return espeak(text, v["voice"], speed, pitch, v["amp"])


def talk(rng: np.random.Generator, lo: int = 2, hi: int = 9) -> str:
    return " ".join(WORDS[i] for i in rng.integers(len(WORDS), size=int(rng.integers(lo, hi))))


# --------------------------------------------------------------------------- one stream


def stream(seed: int) -> tuple[np.ndarray, list[tuple]]:
    """One table stream (int16) and its calls: (class, onset, end, snap's end, pool's onset) in samples.

    Near misses and named cards are listed too, as class "near", so that training can weight them.
    """
    rng = np.random.default_rng(seed)
    n = int(SECONDS * RATE)
    speech = np.zeros(n + 2 * RATE, np.float32)
    calls: list[tuple] = []
    voices = [voice(rng) for _ in range(int(rng.integers(1, 5)))]
    level = rng.uniform(-38, -14)

    def put(x: np.ndarray, at: int, lev: float) -> np.ndarray:
        x = x * (10 ** (lev / 20) / rms(x))
        speech[at: at + len(x)] += x[: len(speech) - at]
        return x

    at = int(rng.uniform(0.2, 1.5) * RATE)
    while at < n - RATE:
        v = voices[rng.integers(len(voices))]
        r = rng.random()
        lev = level + rng.uniform(-6, 6)
        if r < 0.25:  # "snap", sometimes with a second voice close behind
            x = put(say(v, ["snap", "snap!", "Snap.", "snap"][rng.integers(4)], rng), at, lev)
            calls.append(("snap", at, at + len(x), None, None))
            if rng.random() < 0.15:
                d = int(rng.uniform(0.0, 0.25) * RATE)
                y = put(say(voice(rng), "snap", rng), at + d, lev + rng.uniform(-4, 4))
                calls.append(("snap", at + d, at + d + len(y), None, None))
                x = np.zeros(max(len(x), d + len(y)))
        elif r < 0.39:  # "snap pool": two words with a gap, or one phrase
            if rng.random() < 0.5:
                a, b = say(v, "snap", rng), say(v, "pool", rng)
                gain = 10 ** (lev / 20) / rms(np.concatenate([a, b]))
                pool_at = at + len(a) + int(rng.uniform(0.0, 0.25) * RATE)
                speech[at: at + len(a)] += a * gain
                speech[pool_at: pool_at + len(b)] += b * gain
                calls.append(("snap pool", at, pool_at + len(b), at + len(a), pool_at))
                x = np.zeros(pool_at + len(b) - at)
            else:
                x = put(say(v, ["snap pool", "snap pool!", "Snap, pool!"][rng.integers(3)], rng), at, lev)
                calls.append(("snap pool", at, at + len(x), None, None))
        elif r < 0.69:  # listed as "near", to be weighted
            if r < 0.66:  # a near miss, half of them from the list, some inside a sentence
                text = NEAR[rng.integers(8)] if rng.random() < 0.5 else NEAR[rng.integers(len(NEAR))]
                if rng.random() < 0.35:
                    text = " ".join([talk(rng, 1, 4), text] + ([talk(rng, 1, 3)] if rng.random() < 0.5 else []))
            else:  # a card named by a player, as players do at a table
                text = CARDS[rng.integers(len(CARDS))]
            x = put(say(v, text, rng), at, lev)
            calls.append(("near", at, at + len(x), None, None))
        elif r < 0.76:
            x = put(say(v, "dealer " + ["pause", "resume", "status", "help", "score", "repeat", "louder", "quieter",
                                        "faster", "slower", "flip", "end game"][rng.integers(12)], rng), at, lev)
        elif r < 0.84:  # the announcer, through a room
            x = espeak(ANNOUNCE[rng.integers(len(ANNOUNCE))], "gmw/en", 200, 50, 100)
            x = reverb(x, rng) * (10 ** ((lev + rng.uniform(-3, 6)) / 20) / rms(x))
            speech[at: at + len(x)] += x[: len(speech) - at]
        elif r < 0.89:  # a real person talking near the microphone
            y = real_speech()[rng.integers(len(real_speech()))]
            s0 = int(rng.integers(0, max(1, len(y) - 3 * RATE)))
            x = put(y[s0: s0 + int(rng.uniform(1, 4) * RATE)].copy(), at, lev)
        else:
            x = put(say(v, talk(rng), rng), at, lev)
        at += len(x) + int(rng.uniform(0.15, 1.8) * RATE)
    speech = speech[:n]
    if rng.random() < 0.5:
        speech = reverb(speech, rng)[:n]
    if rng.random() < 0.4:
        speech = colour(speech, rng)
    said = [(o, e) for c, o, e, _, _ in calls if c != "near"]
    power = np.mean([rms(speech[o:e]) ** 2 for o, e in said]) if said else (10 ** (level / 20)) ** 2
    t = np.arange(n) / RATE
    room = pink(n, rng) + 0.3 * np.sin(2 * np.pi * rng.choice([50, 60]) * t).astype(np.float32)
    bed = room / rms(room) * 10 ** (rng.uniform(-75, -50) / 20)
    kind = rng.choice(["room", "pink", "babble", "synthbabble", "white", "brown", "room"])
    if kind != "room":
        if kind == "pink":
            noise = pink(n, rng)
        elif kind == "white":
            noise = rng.standard_normal(n).astype(np.float32)
        elif kind == "brown":
            noise = brown(n, rng)
        elif kind == "babble":
            real = np.concatenate([real_speech()[i] for i in rng.permutation(len(real_speech()))])
            s0 = int(rng.integers(0, len(real) - n))
            noise = real[s0: s0 + n].copy()
            if rng.random() < 0.5:  # two talkers
                s1 = int(rng.integers(0, len(real) - n))
                noise += real[s1: s1 + n]
        else:
            noise = np.zeros(n, np.float32)
            a = 0
            while a < n:
                y = say(voice(rng), talk(rng), rng)
                noise[a: a + len(y)] += (y / rms(y))[: n - a]
                a = max(a + len(y) + int(rng.uniform(-0.5, 0.6) * RATE), a + 1)
        if rng.random() < 0.5:
            a = int(rng.integers(0, RATE))
            while a < n - RATE // 4:
                c = clatter(rng) * rng.uniform(2, 8)
                noise[a: a + len(c)] += c[: n - a]
                a += int(rng.uniform(0.4, 3) * RATE)
        snr = rng.uniform(-2, 25)
        bed = bed + noise / rms(noise) * np.sqrt(power / 10 ** (snr / 10))
    audio = speech + bed
    if rng.random() < 0.05:
        audio = np.clip(audio * 10 ** (rng.uniform(8, 18) / 20), -1, 1)
    return np.clip(np.round(audio * 32767), -32768, 32767).astype(np.int16), calls


def _step_ends(steps: int) -> np.ndarray:
    """The clock sample at which each step's audio ends."""
    from voicesnap.keyword import EMBED_SPAN, STEP

    return STEP * np.arange(steps) + EMBED_SPAN


def labels(calls: list[tuple], steps: int, pos: tuple[float, float] = POS) -> np.ndarray:
    """Per step: 0 nothing, 1 snap, 2 snap pool, -1 not trained on (see module docstring)."""
    end = _step_ends(steps)
    y = np.zeros(steps, np.int8)
    calls = [c for c in calls if c[0] != "near"]  # near misses are "nothing"; ``weights`` weighs them
    for _cls, onset, last, _s, _p in calls:
        y[(end > onset) & (end <= last + int(IGNORE_AFTER * RATE)) & (y == 0)] = -1
    lo, hi = int(pos[0] * RATE), int(pos[1] * RATE)
    for cls, _onset, last, snap_end, pool_at in calls:
        y[(end >= last + lo) & (end <= last + hi)] = 1 if cls == "snap" else 2
        if snap_end is not None:  # the "snap" of a "snap pool", until "pool" begins
            y[(end >= snap_end + lo) & (end <= min(snap_end + hi, pool_at + int(0.04 * RATE)))] = 1
    return y


def weights(calls: list[tuple], steps: int, near: float) -> np.ndarray:
    """Per step: how much its loss counts; ``near`` from a near miss's onset to NEAR_AFTER s after it.

    The head fires 40-360 ms after a word, so its false calls land on a near miss's end: there a
    "nothing" step is worth more than one of silence (docs/listening.md, "Fourteenth round").
    """
    end = _step_ends(steps)
    w = np.ones(steps, np.float32)
    for cls, onset, last, _s, _p in calls:
        if cls == "near":
            w[(end > onset) & (end <= last + int(NEAR_AFTER * RATE))] = near
    return w


_MODEL = None


def _embed(seed: int) -> tuple[np.ndarray, list[tuple]]:
    global _MODEL
    if _MODEL is None:
        from voicesnap.keyword import Head, KeywordModel
        from voicesnap.models import find_model

        # no head yet: only the front end is used here
        _MODEL = KeywordModel(find_model("keyword"), head=Head(np.zeros(1), np.ones(1), (), (), CONTEXT))
    pcm, calls = stream(seed)
    pad = (np.random.default_rng(seed).standard_normal(2 * RATE) * 3).astype(np.int16)  # as a stream starts
    emb = _MODEL.features(np.concatenate([pad, pcm]))
    shift = 2 * RATE
    return emb.astype(np.float16), [(c, o + shift, e + shift, s and s + shift, p and p + shift)
                                    for c, o, e, s, p in calls]


# --------------------------------------------------------------------------- training


def windows(emb: np.ndarray, y: np.ndarray, w: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    idx = np.arange(CONTEXT - 1, len(emb))
    keep = idx[y[idx] >= 0]
    # float16, as the embeddings are cached: exact, and half the memory of 12000 streams' windows
    x = np.stack([emb[j - CONTEXT + 1: j + 1].reshape(-1) for j in keep]).astype(np.float16)
    return x, y[keep], w[keep]


def moments(x: np.ndarray, rows: int = 65536) -> tuple[np.ndarray, np.ndarray]:
    """Per-column mean and standard deviation (+1e-3), in float64 over chunks: no float32 copy of ``x``."""
    total, square = np.zeros(x.shape[1]), np.zeros(x.shape[1])
    for s in range(0, len(x), rows):
        c = x[s: s + rows].astype(np.float64)
        total += c.sum(0)
        square += np.square(c).sum(0)
    mu = total / len(x)
    return mu.astype(np.float32), (np.sqrt(np.maximum(square / len(x) - mu * mu, 0)) + 1e-3).astype(np.float32)


def train(x: np.ndarray, y: np.ndarray, epochs: int, sw: np.ndarray | None = None, seed: int = 0,
          hidden: int = 128, lr: float = 1e-3, decay: float = 1e-4, drop: float = 0.3,
          scale: tuple[np.ndarray, np.ndarray] | None = None, log=print) -> dict[str, np.ndarray]:
    """A ReLU MLP (two hidden layers) by Adam on class-weighted cross-entropy ("nothing" weighted x2).

    ``sw``: a weight per step on top of its class's (see ``weights``). ``scale``: (mu, sd) applied to
    each batch, so that ``x`` can stay as compact as it was made.
    """
    rng = np.random.default_rng(seed)
    dims = [x.shape[1], hidden, hidden, 3]
    w = [(rng.standard_normal((a, b)) * np.sqrt((2 if i < 2 else 1) / a)).astype(np.float32)
         for i, (a, b) in enumerate(zip(dims, dims[1:]))]
    b = [np.zeros(d, np.float32) for d in dims[1:]]
    params = w + b
    m1 = [np.zeros_like(p) for p in params]
    m2 = [np.zeros_like(p) for p in params]
    count = np.bincount(y, minlength=3)
    weight = (count.sum() / (3 * count)).astype(np.float32)
    weight[0] *= 2.0
    t = 0
    for epoch in range(epochs):
        order = rng.permutation(len(x))
        total = 0.0
        for s in range(0, len(x), 512):
            ib = order[s: s + 512]
            acts = [x[ib].astype(np.float32)]
            if scale is not None:
                acts[0] = (acts[0] - scale[0]) / scale[1]
            h = acts[0]
            for i in range(2):
                h = np.maximum(h @ w[i] + b[i], 0) * ((rng.random((len(ib), hidden)) > drop) / (1 - drop))
                acts.append(h)
            z = h @ w[2] + b[2]
            z -= z.max(1, keepdims=True)
            p = np.exp(z)
            p /= p.sum(1, keepdims=True)
            yb = y[ib]
            wt = weight[yb] if sw is None else weight[yb] * sw[ib]
            wt = wt / wt.sum()
            total += float(-(wt * np.log(p[np.arange(len(ib)), yb] + 1e-9)).sum()) * len(ib)
            g = p
            g[np.arange(len(ib)), yb] -= 1
            g *= wt[:, None]
            gw, gb = [None] * 3, [None] * 3
            for i in (2, 1, 0):
                gw[i], gb[i] = acts[i].T @ g + decay * w[i], g.sum(0)
                if i:
                    g = (g @ w[i].T) * (acts[i] > 0)
            t += 1
            for k, (prm, grd) in enumerate(zip(params, gw + gb)):
                m1[k] = 0.9 * m1[k] + 0.1 * grd
                m2[k] = 0.999 * m2[k] + 0.001 * grd * grd
                prm -= lr * (m1[k] / (1 - 0.9 ** t)) / (np.sqrt(m2[k] / (1 - 0.999 ** t)) + 1e-8)
        log(f"epoch {epoch + 1}/{epochs}: loss {total / len(x):.4f}")
    return {"W0": w[0], "W1": w[1], "W2": w[2], "b0": b[0], "b1": b[1], "b2": b[2]}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python3 models/train_keyword.py", description=__doc__.split("\n\n")[0])
    parser.add_argument("--streams", type=int, default=6000)
    parser.add_argument("--shard", type=int, default=500, help="streams per cached shard")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--epochs", type=int, default=15)
    parser.add_argument("--seed", type=int, nargs="+", default=[0],
                        help="the head's initial weights, dropout and batch order; several seeds train one head "
                        "each, written as one whose probabilities are their mean (voicesnap.keyword.Head)")
    parser.add_argument("--join", type=Path, nargs="+", metavar="HEAD",
                        help="write heads already trained on the same streams as one averaged head; no training")
    parser.add_argument("--positive", type=float, nargs=2, default=POS, metavar=("FROM", "TO"),
                        help="s after a call's end between which steps are taught as the call")
    parser.add_argument("--near-weight", type=float, default=NEAR_WEIGHT,
                        help="loss weight of the steps over and just after a near miss")
    parser.add_argument("--work", type=Path, default=Path("/tmp/voicesnap-keyword-train"))
    parser.add_argument("--out", type=Path, default=ROOT / "voicesnap" / "data" / "keyword_head.npz")
    args = parser.parse_args(argv)
    if args.join:
        return join(args.join, args.out)
    from multiprocessing import Pool

    args.work.mkdir(parents=True, exist_ok=True)
    xs, ys, ws = [], [], []
    for lo in range(0, args.streams, args.shard):
        seeds = range(lo, min(lo + args.shard, args.streams))
        path = args.work / f"streams-{seeds.start}-{seeds.stop}.npz"
        if not path.is_file():
            with Pool(args.workers) as pool:
                got = pool.map(_embed, seeds, chunksize=4)
            np.savez(path, **{f"e{s}": e for s, (e, _c) in zip(seeds, got)},
                     calls=json.dumps({str(s): c for s, (_e, c) in zip(seeds, got)}))
            print(f"made {path.name}", flush=True)
        data = np.load(path)
        calls = json.loads(str(data["calls"]))
        for s in seeds:
            emb = data[f"e{s}"].astype(np.float32)
            said = [tuple(c) for c in calls[str(s)]]
            y, w = labels(said, len(emb), tuple(args.positive)), weights(said, len(emb), args.near_weight)
            x, y, w = windows(emb, y, w)
            xs.append(x)
            ys.append(y)
            ws.append(w)
    x, y, sw = np.concatenate(xs), np.concatenate(ys), np.concatenate(ws)
    del xs, ys, ws  # the per-stream copies: as large as ``x`` itself
    print(f"{len(x)} training steps: {np.bincount(y, minlength=3).tolist()} (nothing, snap, snap pool)", flush=True)
    mu, sd = moments(x)
    members = []
    for seed in args.seed:
        print(f"seed {seed}", flush=True)
        members.append(train(x, y, args.epochs, sw, seed=seed, scale=(mu, sd), log=lambda m: print(m, flush=True)))
    recipe = {"streams": args.streams, "epochs": args.epochs, "seeds": args.seed, "positive": list(args.positive),
              "near_weight": args.near_weight, "near_after": NEAR_AFTER}
    write(args.out, mu, sd, members, recipe)
    return 0


def write(out: Path, mu: np.ndarray, sd: np.ndarray, members: list[dict[str, np.ndarray]], recipe: dict) -> None:
    """One head file (voicesnap.keyword.Head): each layer's members stacked on a first axis."""
    buf = io.BytesIO()
    np.savez_compressed(buf, mu=mu.astype(np.float32), sd=sd.astype(np.float32), K=CONTEXT,
                        **{k: np.stack([m[k] for m in members]).astype(np.float32) for k in members[0]},
                        recipe=json.dumps(recipe))
    from voicesnap.files import atomic_write_bytes

    atomic_write_bytes(out, buf.getvalue(), mode=0o644)
    print(f"wrote {out} ({len(members)} member{'s' * (len(members) > 1)})")


def join(heads: list[Path], out: Path) -> int:
    """Heads trained on the same streams (so the same input scaling) written as one averaged head."""
    from voicesnap.keyword import Head

    members, recipes, first = [], [], None
    for path in heads:
        raw = np.load(path)
        if first is None:
            first = raw
        elif not (np.array_equal(raw["mu"], first["mu"]) and np.array_equal(raw["sd"], first["sd"])):
            raise SystemExit(f"{path}: trained on other streams than {heads[0]} (its input scaling differs)")
        head = Head.load(path.read_bytes())  # its layers as (members, ...), however many it holds
        members += [{**{f"W{j}": w[i] for j, w in enumerate(head.weights)},
                     **{f"b{j}": b[i] for j, b in enumerate(head.biases)}} for i in range(head.members)]
        recipes.append(json.loads(str(raw["recipe"])) if "recipe" in raw.files else {})
    write(out, first["mu"], first["sd"], members, {"joined": recipes})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
