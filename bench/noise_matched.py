"""Would centroids of noisy takes tell real voices apart in noise better than clean ones?

``python3 -m bench.noise_matched [SNR_DB]`` (a few seconds; needs the speaker encoder and
tests/fixtures/audio/real/words). Not part of ``python3 -m bench``: it measures an idea that
was not built (docs/voices.md, "Noise-matched centroids").

In noise the encoder's cosine to a player's centroid falls for the player and for strangers
alike. If the fall were what hides the player, a centroid made from the player's own takes
in the same noise (the call's background laid over each take at the call's SNR, then
subtracted as the call's is, ``encoder.denoise``) would fit the player's noisy calls better
than strangers'. Real same-word takes (LibriSpeech "the", "and", "of"): a speaker with >= 6
takes enrolls the first 5; genuine trials are their other takes, impostor trials every take
of the other speakers of the word; every trial take is in pink noise or 3-talker babble
SNR_DB under the word (default 10), with 0.5 s of the same noise as its background.
Printed: the genuine and impostor cosines and the equal error rate, per centroid.
"""

from __future__ import annotations


import numpy as np

from .bench_voices import NOISE_SNR, REAL_WORDS, _babble_source, _pink, eer, real_words_takes

ENROLL = 5


def _unit(v: np.ndarray) -> np.ndarray:
    return v / np.linalg.norm(v)


def main(argv: list[str] | None = None) -> int:
    import argparse

    parser = argparse.ArgumentParser(prog="python3 -m bench.noise_matched", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("snr", nargs="?", type=float, default=NOISE_SNR, metavar="SNR_DB",
                        help=f"dB of the noise under the word (default {NOISE_SNR:g})")
    snr = parser.parse_args(argv).snr  # (--help was taken for the SNR, with a traceback)
    from voicesnap import encoder as E
    from voicesnap import voices as V

    enc = E.load_encoder()
    babble = _babble_source()
    if enc is None or babble is None or not REAL_WORDS.is_dir():
        print("needs the speaker encoder (voicesnap models download encoder), ../shared/speech/cards and "
              f"{REAL_WORDS}")
        return 2
    rng = np.random.default_rng(3)

    def noise(n: int, kind: str) -> np.ndarray:
        if kind == "pink":
            return _pink(n, rng)
        z = sum(babble[o:o + n] for o in rng.integers(0, len(babble) - n, 3))
        return z / np.sqrt(np.mean(z ** 2))

    def noisy(y: np.ndarray, kind: str) -> tuple[np.ndarray, np.ndarray]:
        """(the take under noise SNR dB below it, 0.5 s of that noise alone: the background)."""
        n = noise(len(y) + 8000, kind) * np.sqrt(np.mean(y.astype(np.float64) ** 2)) * 10 ** (-snr / 20)
        return (y + n[:len(y)]).astype(np.float32), n[len(y):].astype(np.float32)

    def embed_noisy(ys: list[np.ndarray], kind: str) -> np.ndarray:
        pairs = [noisy(y, kind) for y in ys]
        return np.array(enc.embed_many([p[0] for p in pairs], [p[1] for p in pairs]))

    print(f"{'noise':7} {'centroid':9} {'genuine median / p10':>21} {'impostor median / p98':>22} {'EER':>6}  trials")
    for kind in ("pink", "babble"):
        cos: dict[str, tuple[list[float], list[float]]] = {"clean": ([], []), "matched": ([], [])}
        for word in sorted(p.name for p in REAL_WORDS.iterdir() if p.is_dir()):
            trimmed = {s: [V.trim(x)[0] for x, _m in items] for s, items in real_words_takes(word).items()}
            trials = {s: embed_noisy(ys, kind) for s, ys in trimmed.items()}
            for spk in (s for s, ys in trimmed.items() if len(ys) > ENROLL):
                takes = trimmed[spk][:ENROLL]
                cents = {"clean": _unit(np.array(enc.embed_many(takes)).mean(axis=0)),
                         "matched": _unit(embed_noisy(takes, kind).mean(axis=0))}
                for other, embs in trials.items():
                    for e in embs[ENROLL:] if other == spk else embs:
                        for name, c in cents.items():
                            cos[name][0 if other == spk else 1].append(float(e @ c))
        for name, (g, i) in cos.items():
            print(f"{kind:7} {name:9} {np.median(g):13.3f} / {np.percentile(g, 10):.3f} "
                  f"{np.median(i):14.3f} / {np.percentile(i, 98):.3f} {eer(g, i):6.3f}  {len(g)} / {len(i)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
