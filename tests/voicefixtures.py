"""Shared helpers for the voice tests: enroll fixture players from their takes."""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

from voicesnap import voices as V
from voicesnap.audio import read_wav

PLAYERS_DIR = Path(__file__).parent / "fixtures" / "audio" / "players"
NAMES = ("alice", "bob", "cara", "dev", "emma", "finn")


def takes_of(name: str, folder: str = "enroll", spare: bool = False, contrast: bool = False) -> list[V.Take]:
    """A fixture player's checked takes of their call phrases; ``contrast``: of the contrast words
    ("slap") instead."""
    out = []
    for f in sorted((PLAYERS_DIR / folder).glob(f"{name}_*.wav")):
        if f.stem.endswith("_6") and not spare:
            continue  # the spare take is held out
        phrase = "snap pool" if "snappool" in f.stem else f.stem.split("_")[1]
        if (phrase in V.CONTRAST_WORDS["snap"]) != contrast:
            continue
        samples, rate = read_wav(f)
        y, problems = V.check_take(samples[:, 0], rate, phrase)
        assert not problems, (f, problems)
        out.append(V.Take(phrase, y, f.name))
    return out


def enroll_files(name: str, snaps: int = 5, pools: int = 3) -> list[str]:
    """Paths of a fixture player's enrollment takes, as given to `voicesnap enroll --from-files`."""
    e = PLAYERS_DIR / "enroll"
    return ([str(e / f"{name}_snap_{k}.wav") for k in range(1, snaps + 1)]
            + [str(e / f"{name}_snappool_{k}.wav") for k in range(1, pools + 1)])


def contrast_files(name: str) -> list[str]:
    """Paths of a fixture player's takes of the contrast word "slap" (enroll asks for them with "snap")."""
    return [str(PLAYERS_DIR / "enroll" / f"{name}_slap_{k}.wav") for k in range(1, V.CONTRAST_TAKES + 1)]


@lru_cache(maxsize=None)
def profile(name: str, folder: str = "enroll", channel: int | None = None) -> V.Profile:
    word = "snap" if folder == "enroll" else {"alice": "woof", "bob": "meow", "cara": "moo"}[name]
    return V.build_profile(name, word, takes_of(name, folder), channel=channel)


def wav(rel: str):
    samples, rate = read_wav(PLAYERS_DIR / rel)
    return samples, rate


def encoder_or_skip() -> None:
    """Skip a test whose figures were measured with the speaker encoder (the profiles' speech
    samples), where it is not installed: without it the attribution is another, weaker one."""
    import pytest

    from voicesnap import encoder

    if encoder.load_encoder() is None:
        pytest.skip("needs the speaker encoder: voicesnap models download encoder (.ci/run installs it), "
                    "or set VOICESNAP_ENCODER_MODEL")
