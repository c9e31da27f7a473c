"""The fixture generators still make the committed fixtures, byte for byte.

tests/fixtures/audio/README.md promises that re-running generate.py, generate_players.py and
generate_slams.py reproduces the committed audio exactly (on espeak-ng 1.51). A change to a generator
that silently changes its output would leave the committed fixtures unreproducible, or, once
someone regenerates, move the ground truth under every listening test and benchmark. Each test here
runs a script's own functions into tmp_path (its output folder redirected; nothing committed is
touched) and compares every file it writes with the committed one.
"""

from __future__ import annotations

import importlib.util
import re
import shutil
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import numpy as np
import pytest

AUDIO = Path(__file__).parent / "fixtures" / "audio"
ESPEAK_VERSION = "1.51"  # the version that made the committed fixtures (README.md)
# generate.py categories checked: together they run every shared function (player and announcer
# rendering with jitter, room tone, pink noise and clatter, reverb, the .ref.flac reference, real
# speech as babble, clipping) in about 2 s; clean, snap_vs_pool, nearmiss, commands and chatter
# (about 6 s more) only recombine those.
CORPUS_CATEGORIES = ("overlap", "echo", "quiet", "long_quiet", "noisy", "over_announcer", "nearmiss_noisy")


def _espeak_version() -> str | None:
    if shutil.which("espeak-ng") is None:
        return None
    out = subprocess.run(["espeak-ng", "--version"], capture_output=True, text=True).stdout
    m = re.search(r"text-to-speech:\s*(\S+)", out)
    return m.group(1) if m else out.strip()


def _needs_espeak_151() -> None:
    """espeak-ng renders differently from version to version, so only 1.51 can reproduce the files."""
    version = _espeak_version()
    if version is None:
        pytest.skip("espeak-ng is not installed (apt-get install espeak-ng); the fixtures were made with 1.51")
    if version != ESPEAK_VERSION:
        pytest.skip(f"espeak-ng {version} is installed; the committed fixtures were made with {ESPEAK_VERSION} "
                    "and only it reproduces them byte for byte")


def _load(script: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(f"fixture_{script}", AUDIO / f"{script}.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod  # dataclasses look their module up while the class is built
    spec.loader.exec_module(mod)
    return mod


def _same_as_committed(made: Path, committed: Path) -> list[str]:
    """Every file under ``made`` compared with its namesake under ``committed``; returns them, relative."""
    files = sorted(p.relative_to(made).as_posix() for p in made.rglob("*") if p.is_file())
    assert files, f"nothing was written under {made}"
    missing = [f for f in files if not (committed / f).is_file()]
    assert not missing, f"the generator now writes files that are not committed: {missing}"
    differ = [f for f in files if (made / f).read_bytes() != (committed / f).read_bytes()]
    assert not differ, (
        f"regenerated {len(differ)} of {len(files)} files differently from the committed ones: {differ[:8]}"
        f"{' ...' if len(differ) > 8 else ''} "
        f"(numpy {np.__version__}). A generator change moved the fixtures; if that is meant, regenerate "
        "them all and say so in the commit, since every listening test and benchmark reads them")
    return files


def test_corpus_categories_regenerate_byte_for_byte(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _needs_espeak_151()
    gen = _load("generate")
    monkeypatch.setattr(gen, "CORPUS", tmp_path)
    monkeypatch.syspath_prepend(str(AUDIO.parents[2]))  # as main() does, for voicesnap.vocabulary
    for name in CORPUS_CATEGORIES:
        gen.GENERATORS[name]()
    files = _same_as_committed(tmp_path, AUDIO / "corpus")
    assert {f for f in files if f.endswith(".ref.flac")} == {"echo_ranks.ref.flac", "noisy_over_announcer.ref.flac"}


def test_players_regenerate_byte_for_byte(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """All of players/: one seeded stream runs through it, so no part can be made alone (but the
    contrast takes, which have their own seed)."""
    _needs_espeak_151()
    gen = _load("generate_players")
    monkeypatch.setattr(gen, "OUT", tmp_path)
    assert gen.generate() == 104
    committed = AUDIO / "players"
    files = _same_as_committed(tmp_path, committed)
    assert files == sorted(p.relative_to(committed).as_posix() for p in committed.rglob("*") if p.is_file())


def test_slams_regenerate_byte_for_byte(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """No espeak-ng here: the slams are numpy noise around speech cut from the committed corpus."""
    gen = _load("generate_slams")
    monkeypatch.setattr(gen, "OUT", tmp_path)
    gen.gen_slams()
    gen.gen_two_mic()
    committed = AUDIO / "slams"
    files = _same_as_committed(tmp_path, committed)
    assert files == sorted(p.name for p in committed.iterdir() if p.is_file())
