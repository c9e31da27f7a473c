"""Check the set-up (PortAudio, espeak-ng, pyttsx3 voices, models, profiles, audio devices) and print the exact fix for each problem."""

from __future__ import annotations

import argparse
import importlib.metadata
import json
import os
import shlex
import shutil
import subprocess
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Callable

from ..files import data_dir
from ..text import counted, listed


@dataclass(frozen=True)
class Check:
    """One line of the report: what was checked, whether it is fine, and the fix if not.

    ``needed`` says whether play is impossible without it (an error) or only
    poorer (a warning: e.g. no Vosk model means enrolled calls only).
    """

    name: str
    ok: bool
    detail: str
    fix: str = ""
    needed: bool = True


def check_portaudio() -> Check:
    try:
        import sounddevice as sd  # noqa: F401
    except OSError as exc:
        return Check("PortAudio", False, f"the PortAudio library cannot be loaded ({exc})",
                     "install it: sudo apt-get install libportaudio2 (macOS: brew install portaudio)")
    except ImportError as exc:
        return Check("PortAudio", False, f"the sounddevice package is missing ({exc})",
                     'install it: python3 -m pip install "sounddevice>=0.4.6"')
    # without its build's git revision: 40 hex digits a screen reader reads out one by one
    version = sd.get_portaudio_version()[1].split(", revision")[0]
    return Check("PortAudio", True, f"sounddevice {sd.__version__}, {version}")


def check_espeak() -> Check:
    exe = shutil.which("espeak-ng") or shutil.which("espeak")
    if exe is None:
        return Check("espeak-ng", False, "espeak-ng is not on PATH, so the announcer cannot speak",
                     "install it: sudo apt-get install espeak-ng (the game still runs with --text)")
    try:
        out = subprocess.run([exe, "--version"], capture_output=True, text=True, timeout=10)
        version = (out.stdout or out.stderr).strip().splitlines()[0] if (out.stdout or out.stderr) else exe
    except (OSError, subprocess.SubprocessError) as exc:
        return Check("espeak-ng", False, f"{exe} does not run ({exc})", "reinstall it: sudo apt-get install --reinstall espeak-ng")
    return Check("espeak-ng", True, version)


def check_pyttsx3() -> Check:
    try:
        version = importlib.metadata.version("pyttsx3")
    except importlib.metadata.PackageNotFoundError:
        return Check("pyttsx3 voices", False, "pyttsx3 is not installed",
                     'install it: python3 -m pip install "pyttsx3==2.91"')
    if not version.startswith("2.91"):
        return Check("pyttsx3 voices", False, f"pyttsx3 {version} is installed; only 2.91 speaks reliably "
                     "(2.99 returns before speaking and overwrites files)",
                     'install the working version: python3 -m pip install "pyttsx3==2.91"')
    if shutil.which("espeak-ng") is None and shutil.which("espeak") is None:
        return Check("pyttsx3 voices", False, "pyttsx3 has no speech engine (espeak-ng is missing)",
                     "install it: sudo apt-get install espeak-ng")
    # Ask through voicesnap.speech, the one owner of the process's espeak-ng:
    # a second pyttsx3.init() in a process that already renders deadlocks
    # inside espeak-ng (seen: the driver hangs in SetVoiceByName).
    from .. import speech

    try:
        voices = speech.available_voices()
        speech.render("ready")
    except speech.SpeechError as exc:
        return Check("pyttsx3 voices", False, str(exc),
                     "install the speech engine: sudo apt-get install espeak-ng libespeak-ng1")
    except Exception as exc:  # the driver fails in many ways when the library is broken
        return Check("pyttsx3 voices", False, f"the speech engine cannot start ({exc})",
                     "install the speech library it drives: sudo apt-get install espeak-ng libespeak-ng1")
    if not voices:
        return Check("pyttsx3 voices", False, "the speech engine lists no voices",
                     "install voices: sudo apt-get install espeak-ng-data")
    return Check("pyttsx3 voices", True, f"pyttsx3 {version}, {len(voices)} voices")


def _wrong_variable(name: str, kind: str) -> Check | None:
    """A model variable that names no model of its kind: play stops on it (models.find_model), rather than
    play without that model, so it is a failure, not the "not installed" warning (a download does not fix it)."""
    from .. import models

    k = models.KINDS[kind]
    value = os.environ.get(k.env)
    if not value or models.is_model(value, kind):
        return None
    stops = "voice play and enroll stop" if kind == "encoder" else "voice play stops"
    return Check(name, False, f"{k.env}={value} is not a {k.what} folder (it lacks {', '.join(k.markers)}), "
                 f"and {stops} on it",
                 f"fix or unset the variable: point {k.env} at the folder that holds {', '.join(k.markers)}, "
                 f"or unset {k.env} to use the models installed in the data folder")


def check_vosk_model(root: Path) -> Check:
    """The Vosk English model: without it the keyword model or the enrollment hears the calls alone, and
    no voice command is heard."""
    return _check_optional_model(
        "Vosk model", "en", root, lambda path: None,  # (a damaged Vosk model is vosk's own message, in play)
        "calls are heard by the keyword model or the enrollment alone, which miss more of "
        "them, and voice commands (dealer pause, dealer repeat) are given from the keyboard",
        "run: voicesnap models download   (Vosk's small English model, 40 MB from alphacephei.com)", "")


def _check_optional_model(name: str, kind: str, root: Path, load: Callable[[Path], object], missing: str,
                          fix_missing: str, fix_damaged: str, then: str = "") -> Check:
    """An optional model (a warning, not an error): found where a player's install looks (``kind``),
    then loaded (``load``: a damaged copy raises a UserError) so that play would not stop on it.
    Missing (``missing``: what play is without it), the fix is the download, then the other ways
    (models.other_ways), then what to do after (``then``): each once, not the download again in the
    search's own message."""
    from .. import models
    from ..errors import UserError

    wrong = _wrong_variable(name, kind)
    if wrong is not None:
        return wrong
    try:
        path = models.find_model(kind, None, root)
    except models.ModelError:
        looked = models.models_dir(root, create=False)
        return Check(name, False, f"not installed in {looked}: {missing}",
                     f"{fix_missing}; or {models.other_ways(models.KINDS[kind])}{then}", needed=False)
    try:
        load(path)
    except UserError as exc:
        return Check(name, False, str(exc).splitlines()[0], fix_damaged, needed=False)
    return Check(name, True, str(path), needed=False)


def check_encoder(root: Path) -> Check:
    """The speaker encoder: without it, real voices saying the same word are hard to tell apart."""
    from .. import encoder

    return _check_optional_model(
        "speaker encoder", "encoder", root,
        encoder.Encoder.from_file,  # the model folder: it reads the weights inside; damaged ones would stop enroll
        "real players' voices are told apart by the voiceprint alone, which "
        "takes most strangers for an enrolled player (docs/voices.md in voicesnap's source)",
        "run: voicesnap models download encoder   (16 MB from PyPI)",
        "run: voicesnap models download encoder   (it replaces the damaged copy)", "; then enroll each player again")


def check_keyword(root: Path) -> Check:
    """The keyword model: without it calls are heard by Vosk (or the enrollment) alone, far worse in noise."""
    from .. import keyword

    fix = "run: voicesnap models download keyword   (openWakeWord's feature models, 16 MB from PyPI)"
    return _check_optional_model(
        "keyword model", "keyword", root,
        keyword.KeywordModel,  # loads both networks and the head: damaged files, or no onnxruntime, raise
        "calls are heard by Vosk or the enrollment alone, and about half of the "
        "calls in loud noise are missed (docs/listening.md in voicesnap's source)",
        fix, fix)


def check_profiles(root: Path) -> Check:
    """The enrolled players: a damaged profile, and what each lacks (speech sample, "slap" takes)."""
    from .. import encoder
    from .. import voices

    try:
        names = voices.list_players(str(root))
    except Exception as exc:
        return Check("profiles", False, f"cannot read the profiles in {root}: {exc}",
                     "run: voicesnap players   (it names the bad profile and how to re-enroll it)", needed=False)
    try:
        enc = encoder.load_encoder(data=root)
    except Exception:  # damaged weights: check_encoder reports them
        enc = None
    bad, mute, unlike = [], [], []
    for name in names:
        try:
            prof = voices.load_profile(name, str(root))
        except Exception as exc:
            bad.append(f"{name} ({exc})")
            continue
        if voices.missing_speech(prof, enc):
            mute.append(name)
        if voices.missing_contrast(prof):
            unlike.append(name)
    if bad:
        first = bad[0].split(" ")[0]
        return Check("profiles", False, f"unreadable {'profile' if len(bad) == 1 else 'profiles'}: " + "; ".join(bad),
                     f"re-enroll: voicesnap enroll {shlex.quote(first)}   (or forget it: voicesnap players forget {shlex.quote(first)})",
                     needed=False)
    if not names:
        return Check("profiles", False, f"no players enrolled in {root}",
                     "enroll each player once: voicesnap enroll NAME (or play; it offers enrollment)",
                     needed=False)
    shown = listed(names)
    gaps, fixes = [], []
    if mute:
        gaps.append(f"without a speech sample: {listed(mute)} (a stranger saying the call word is more often "
                    "taken for them)")
        fixes.append("; ".join(f"voicesnap enroll {shlex.quote(n)} --speech-only" for n in mute) + "   (20 seconds of talking each)")
    if unlike:
        gaps.append(f"without takes of 'slap': {listed(unlike)} (a 'slap' is more often heard as their 'snap')")
        fixes.append("; ".join(f"voicesnap enroll {shlex.quote(n)} --contrast-only" for n in unlike) + "   (3 takes each)")
    if gaps:
        return Check("profiles", False, f"{len(names)} enrolled: {shown}; " + "; ".join(gaps), "; ".join(fixes),
                     needed=False)
    return Check("profiles", True, f"{len(names)} enrolled: {shown}", needed=False)


def check_devices() -> list[Check]:
    try:
        import sounddevice as sd
    except (OSError, ImportError):
        return [Check("audio devices", False, "cannot list devices without PortAudio", "fix PortAudio first (above)")]
    try:
        devices = sd.query_devices()
    except Exception as exc:
        return [Check("audio devices", False, f"PortAudio cannot list devices ({exc})",
                      "restart the sound server: pulseaudio --start (or reboot)")]
    inputs = [d for d in devices if d["max_input_channels"] > 0]
    outputs = [d for d in devices if d["max_output_channels"] > 0]
    server = ("start the sound server: pulseaudio --start (Debian: sudo apt-get install pulseaudio "
              "libasound2-plugins); then check: voicesnap devices")
    out = []
    if inputs:
        out.append(Check("microphone", True, f"{counted(len(inputs), 'input')}, e.g. {inputs[0]['name']}"))
    else:
        out.append(Check("microphone", False, "no audio input device is visible", "plug in a microphone, or " + server + "; keyboard play "
                         "still works: voicesnap play --players A,B --text"))
    if outputs:
        out.append(Check("speaker", True, f"{counted(len(outputs), 'output')}, e.g. {outputs[0]['name']}", needed=False))
    else:
        out.append(Check("speaker", False, "no audio output device is visible",
                         "plug in speakers or headphones, or " + server + "; the game still runs with --text", needed=False))
    return out


def check_source_watch() -> Check:
    """Whether play can notice the sound server swapping the microphone for another one (voicesnap.pulse):
    it asks ``pactl`` (PulseAudio 16 or newer, or PipeWire's pulse server) which source it records from."""
    import shutil
    import subprocess

    from ..pulse import pactl_json

    name = "microphone watch"
    if shutil.which("pactl") is None:
        if shutil.which("pulseaudio") is None and shutil.which("pipewire-pulse") is None:
            return Check(name, True, "no PulseAudio server here: no sound server can swap the microphone", needed=False)
        return Check(name, False, "pactl is not installed, so a microphone unplugged while another one is there "
                     "(the sound server then records the game from that one) is not noticed",
                     "install it: sudo apt-get install pulseaudio-utils", needed=False)
    if pactl_json(["info"]):  # what play asks (voicesnap.pulse.source_watch)
        return Check(name, True, "play notices when the sound server moves the microphone's stream to another "
                     "microphone (pactl)", needed=False)
    try:  # no JSON answer: no server, or a pactl too old to give one
        answered = subprocess.run(["pactl", "info"], capture_output=True, text=True, timeout=5).returncode == 0
    except (OSError, subprocess.SubprocessError):
        answered = False
    if not answered:
        return Check(name, True, "no PulseAudio server answers: nothing to watch (see microphone above)", needed=False)
    return Check(name, False, "this pactl cannot answer in JSON (it needs PulseAudio 16 or newer), so a "
                 "microphone unplugged while another one is there is not noticed",
                 "update pulseaudio-utils, or name the microphone with --input and check it is "
                 "the one in use (voicesnap devices)", needed=False)


def check_channels(root: Path) -> list[Check]:
    """Players enrolled on their own mic channel (``enroll --channel``): which, the --channels that plays
    them so, and whether the default input has that many channels (the doctor said nothing of them, so a
    table setting up a mic per player learnt of a missing channel only from play's refusal)."""
    from .devices import _pactl_short
    from .. import voices

    own: dict[str, int] = {}
    for entry in voices.list_players(str(root)):
        name = getattr(entry, "name", entry)
        try:
            channel = getattr(voices.load_profile(name, str(root)), "channel", None)
        except Exception:  # noqa: BLE001 (unreadable: check_profiles says so)
            continue
        if isinstance(channel, int):
            own[name] = channel
    if not own:
        return []
    mics = listed(f"{n} on channel {c}" for n, c in own.items())
    play = "--channels " + ",".join(f"{n}={c}" for n, c in own.items())
    from ..pulse import _default_source, pactl_json

    source = os.environ.get("PULSE_SOURCE") or (_default_source(pactl_json) if shutil.which("pactl") else None)
    has = None
    for cols in _pactl_short("sources") or []:
        if source and len(cols) >= 4 and cols[1] == source and "ch" in cols[3]:
            has = int(cols[3].split("ch")[0].split()[-1])
    if has is None:
        return [Check("player microphones", True, f"{mics}; play them so with {play}", needed=False)]
    past = [n for n, c in own.items() if c >= has]
    if past:
        return [Check("player microphones", False, f"{mics}, and the default microphone ({source}) has "
                      f"{counted(has, 'channel')}, none for {listed(past)}",
                      "give play an input with more channels: --input NAME (voicesnap devices lists each input's "
                      f"channels), or enroll {listed(past)} again with their channel on this one "
                      f"(voicesnap enroll NAME --channel N)", needed=False)]
    return [Check("player microphones", True, f"{mics}; the default microphone ({source}) has "
                  f"{counted(has, 'channel')}: play them with {play}", needed=False)]


def run_checks(root: Path) -> list[Check]:
    steps: list[Callable[[], Check | list[Check]]] = [
        check_portaudio, check_espeak, check_pyttsx3,
        lambda: check_vosk_model(root), lambda: check_keyword(root), lambda: check_encoder(root),
        lambda: check_profiles(root), check_devices, lambda: check_channels(root), check_source_watch,
    ]
    results: list[Check] = []
    for step in steps:
        try:
            got = step()
        except Exception as exc:  # a checker must never crash the doctor
            got = Check(getattr(step, "__name__", "check"), False, f"check failed: {exc}",
                        "report this as a bug with the message above")
        results.extend(got if isinstance(got, list) else [got])
    return results


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--json", action="store_true", help="print the checks as JSON")


def run(args: argparse.Namespace) -> int:
    root = data_dir(getattr(args, "data_dir", None))
    checks = run_checks(root)
    if args.json:
        print(json.dumps([asdict(c) for c in checks], indent=2))
    else:
        for c in checks:
            mark = "ok  " if c.ok else ("FAIL" if c.needed else "warn")
            print(f"{mark} {c.name}: {c.detail}")
            if not c.ok and c.fix:
                print(f"     fix: {c.fix}")
        bad = [c for c in checks if not c.ok and c.needed]
        print("ready to play" if not bad else f"{counted(len(bad), 'problem stops', 'problems stop')} voice play; keyboard play "
              "(--text) may still work")
    return 1 if any(not c.ok and c.needed for c in checks) else 0
