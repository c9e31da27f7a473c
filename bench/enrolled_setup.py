"""The enrolled and combined engines for the listening benchmark (bench/spotting.py).

``engines(tmpdir)`` enrolls the six fixture players (tests/fixtures/audio/
players/enroll: 5 takes of "snap", 3 of "snap pool" and 3 of "slap" each (without "slap":
VOICESNAP_BENCH_CONTRAST=0), through the same
``voicesnap enroll --from-files`` code path a player uses) into ``tmpdir`` and
returns Spotter factories: "enrolled" (model-free); with the keyword model,
"keyword+enrolled" (the keyword model for what, enrollment for who); with a
Vosk English model, "combined" (Vosk and, when it is installed, the keyword
model for what, enrollment for who: what play runs) and "combined-vosk"
(Vosk alone for what, as before the keyword model).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

ROOT = Path(__file__).resolve().parent.parent
ENROLL = ROOT / "tests" / "fixtures" / "audio" / "players" / "enroll"
NAMES = ("alice", "bob", "cara", "dev", "emma", "finn")


def fixture_profiles(tmpdir: str | Path, speech: bool | None = None) -> list:
    """The six fixture players enrolled from their files into ``tmpdir``.

    ``speech`` (default: $VOICESNAP_BENCH_SPEECH=1): each also gives enroll a
    speech sample (bench_voices.synthetic_speech), as a live enrollment with the
    speaker encoder installed asks for.
    """
    import os

    from voicesnap import voices as V
    from voicesnap.cli import main

    if speech is None:
        speech = os.environ.get("VOICESNAP_BENCH_SPEECH") == "1"
    for name in NAMES:
        files = [str(ENROLL / f"{name}_snap_{k}.wav") for k in range(1, 6)]
        files += [str(ENROLL / f"{name}_snappool_{k}.wav") for k in range(1, 4)]
        if os.environ.get("VOICESNAP_BENCH_CONTRAST", "1") != "0":  # the "slap" takes enroll asks for
            files += [str(ENROLL / f"{name}_slap_{k}.wav") for k in range(1, 4)]
        if speech:
            from .bench_voices import synthetic_speech_file

            files.append(str(synthetic_speech_file(Path(tmpdir) / f"{name}_speech.wav", name)))
        rc = main(["--data-dir", str(tmpdir), "enroll", name, "--from-files", *files])
        if rc:
            raise RuntimeError(f"enrolling fixture player {name} failed ({rc})")
    return V.load_all(str(tmpdir))


def engines(tmpdir: str | Path) -> dict[str, Callable[[], Any]]:
    import contextlib
    import io

    from voicesnap.spotters.enrolled import EnrolledSpotter
    from voicesnap.voices import announcer_profile

    with contextlib.redirect_stdout(io.StringIO()):
        profiles = fixture_profiles(tmpdir)
    rival = announcer_profile("snap")
    out: dict[str, Callable[[], Any]] = {
        "enrolled": lambda: EnrolledSpotter(profiles, announcer=rival or False),
    }
    from voicesnap.spotters.combined import CombinedSpotter

    from .bench_listening import _keyword_factory, _vosk_factory

    vosk_factory, _why = _vosk_factory()
    keyword_factory, _why = _keyword_factory()
    if keyword_factory is not None:
        out["keyword+enrolled"] = lambda: CombinedSpotter(
            keyword_factory(), EnrolledSpotter(profiles, announcer=rival or False))
    if vosk_factory is not None:
        out["combined"] = lambda: CombinedSpotter(
            vosk_factory(), EnrolledSpotter(profiles, announcer=rival or False),
            keyword=keyword_factory() if keyword_factory is not None else None)
        if keyword_factory is not None:
            out["combined-vosk"] = lambda: CombinedSpotter(
                vosk_factory(), EnrolledSpotter(profiles, announcer=rival or False))
    return out
