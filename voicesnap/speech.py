"""Speech rendering: announcement text to audio, once, then from a cache.

The announcer never speaks through a TTS engine's own playback: it renders
each phrase to samples and plays them itself (voicesnap.playback), so the
moment speech starts is a known position on the game's audio clock.

Rendering uses espeak-ng, the engine pyttsx3 drives on Linux, through
pyttsx3's own ctypes binding (``pyttsx3.drivers._espeak``) in synchronous
mode: about 1 ms per phrase, in process, no audio device needed. pyttsx3
2.91's public ``save_to_file`` is not used because it converts its temporary
WAV with an ``ffmpeg`` subprocess (not installed here: the file is never
written) and its ``runAndWait`` then hung on the second phrase. Where the
binding cannot load, the ``espeak-ng`` command line (``--stdout``) is the
fallback; both produce the same samples.

Clips are trimmed to the speech itself (leading/trailing silence removed) so
"playback started" means "speech started". They are cached per (voice, rate,
volume, text) in memory and as WAV files under ``<data dir>/cache/speech/``,
written atomically; a damaged cache file is re-rendered, never trusted.
"""

from __future__ import annotations

import ctypes
import difflib
import hashlib
import io
import shutil
import subprocess
import threading
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Iterable

import numpy as np

from .errors import UserError
from .files import atomic_write_bytes

__all__ = [
    "DEFAULT_VOICE", "ENGINE_RATE", "VoiceSettings", "Clip", "SpeechError", "NoSpeechEngine",
    "UnknownVoice", "available_voices", "close_voices", "check_voice", "render", "SpeechCache",
]

DEFAULT_VOICE = "gmw/en"  # pyttsx3's default espeak-ng voice (fixture announcer voice)
ENGINE_RATE = 22050  # espeak-ng's output rate
RATE_RANGE = (80, 450)  # espeak-ng words per minute
VOLUME_RANGE = (0.1, 2.0)  # 1.0 = espeak-ng amplitude 100 (pyttsx3's scale)
_SILENCE = 200  # |sample| at or below this is silence when trimming (~-44 dBFS)
_KEEP = int(0.010 * ENGINE_RATE)  # keep 10 ms after the last loud sample (decay)


class SpeechError(UserError):
    """Speech cannot be rendered; the game goes on in text."""


class NoSpeechEngine(SpeechError):
    pass


class UnknownVoice(SpeechError):
    pass


@dataclass(frozen=True)
class VoiceSettings:
    """How the announcer sounds. ``volume`` 1.0 is espeak-ng's normal amplitude."""

    voice: str = DEFAULT_VOICE
    rate: int = 200  # words per minute
    volume: float = 1.0

    def __post_init__(self) -> None:
        lo, hi = RATE_RANGE
        if not lo <= self.rate <= hi:
            raise SpeechError(f"speech rate {self.rate} is out of range: choose {lo}-{hi} words per minute")
        vlo, vhi = VOLUME_RANGE
        if not vlo - 1e-9 <= self.volume <= vhi + 1e-9:
            raise SpeechError(f"speech volume {self.volume} is out of range: choose {vlo}-{vhi} (1.0 is normal)")

    def adjusted(self, rate: int = 0, volume: float = 0.0) -> "VoiceSettings":
        """These settings with rate/volume moved by a step, clamped to the allowed range."""
        r = min(max(self.rate + rate, RATE_RANGE[0]), RATE_RANGE[1])
        v = round(min(max(self.volume + volume, VOLUME_RANGE[0]), VOLUME_RANGE[1]), 2)
        return replace(self, rate=r, volume=v)


@dataclass(frozen=True, eq=False)
class Clip:
    """A rendered phrase: int16 mono samples at ``rate``, speech from the first sample."""

    text: str
    samples: np.ndarray
    rate: int

    @property
    def duration(self) -> float:
        return len(self.samples) / self.rate


# --- the engines -------------------------------------------------------------

_LOCK = threading.Lock()  # espeak-ng has one global synthesiser per process


class _Binding:
    """espeak-ng in process through pyttsx3's ctypes binding (synchronous mode)."""

    def __init__(self) -> None:
        from pyttsx3.drivers import _espeak  # raises if libespeak-ng is missing

        self.e = _espeak
        self.chunks: list[bytes] = []
        if _espeak.Initialize(_espeak.AUDIO_OUTPUT_SYNCHRONOUS, 0) == -1:
            raise OSError("espeak-ng could not initialise")
        self.voice: str | None = None

    def _on_synth(self, wav: int, numsamples: int, events: int) -> int:
        if numsamples > 0:
            self.chunks.append(ctypes.string_at(wav, numsamples * 2))
        return 0

    def voices(self) -> list[tuple[str, str]]:
        out = []
        for v in self.e.ListVoices(None):
            ident = (v.identifier or b"").decode("utf-8", "replace")
            name = (v.name or b"").decode("utf-8", "replace")
            out.append((ident, name))
        return out

    def synth(self, text: str, s: VoiceSettings) -> np.ndarray:
        e = self.e
        if self.voice != s.voice:
            if e.SetVoiceByName(s.voice.encode("utf-8")) != e.EE_OK:
                self.voice = None
                raise UnknownVoice(_unknown_voice_message(s.voice, self.voices()))
            self.voice = s.voice
        e.SetParameter(e.RATE, int(s.rate), 0)
        e.SetParameter(e.VOLUME, int(round(s.volume * 100)), 0)
        self.chunks = []
        e.SetSynthCallback(self._on_synth)  # pyttsx3 may have set its own
        e.Synth(text.encode("utf-8"), flags=e.CHARS_UTF8 | e.ENDPAUSE)
        return np.frombuffer(b"".join(self.chunks), dtype=np.int16).copy()


class _Cli:
    """The espeak-ng command line: a fallback with the same voices and samples."""

    def __init__(self) -> None:
        exe = shutil.which("espeak-ng")
        if exe is None:
            raise FileNotFoundError("espeak-ng")
        self.exe = exe

    def voices(self) -> list[tuple[str, str]]:
        out = subprocess.run([self.exe, "--voices"], capture_output=True, text=True, timeout=10).stdout
        found = []
        for line in out.splitlines()[1:]:
            parts = line.split()
            if len(parts) >= 5:
                found.append((parts[4], parts[3]))
        return found

    def synth(self, text: str, s: VoiceSettings) -> np.ndarray:
        import soundfile as sf

        cmd = [self.exe, "-v", s.voice, "-s", str(int(s.rate)), "-a", str(int(round(s.volume * 100))),
               "--stdout", text]
        proc = subprocess.run(cmd, capture_output=True, timeout=30)
        if proc.returncode != 0 or not proc.stdout:
            if b"voice does not exist" in proc.stderr:
                raise UnknownVoice(_unknown_voice_message(s.voice, self.voices()))
            raise SpeechError(f"espeak-ng failed: {proc.stderr.decode(errors='replace').strip()}")
        data, _ = sf.read(io.BytesIO(proc.stdout), dtype="int16")
        return np.asarray(data, dtype=np.int16).reshape(-1)


_ENGINE: _Binding | _Cli | None = None
_ENGINE_KIND: str | None = None


def _engine(prefer: str | None = None) -> _Binding | _Cli:
    """The process's engine: the in-process binding, else the command line."""
    global _ENGINE, _ENGINE_KIND
    if prefer == "cli":
        try:
            return _Cli()
        except FileNotFoundError:
            raise NoSpeechEngine(_NO_ENGINE) from None
    if _ENGINE is None:
        try:
            _ENGINE, _ENGINE_KIND = _Binding(), "binding"
        except Exception:  # library missing or unloadable: try the command line
            try:
                _ENGINE, _ENGINE_KIND = _Cli(), "cli"
            except FileNotFoundError:
                raise NoSpeechEngine(_NO_ENGINE) from None
    return _ENGINE


def engine_kind() -> str:
    """'binding' or 'cli': which espeak-ng route this process renders with."""
    with _LOCK:
        _engine()
    return _ENGINE_KIND or "none"


_NO_ENGINE = (
    "speech is off: espeak-ng (the speech engine pyttsx3 uses) is not installed. "
    "Install it (Debian/Ubuntu: apt-get install espeak-ng; macOS: brew install espeak-ng); "
    "until then every announcement is printed as text."
)


def _unknown_voice_message(name: str, voices: list[tuple[str, str]]) -> str:
    close = _close(name, voices)
    hint = f" Close matches: {', '.join(close)}." if close else ""
    return (
        f"unknown voice {name!r}.{hint} Choose one with --voice (list them with `espeak-ng --voices=en`; "
        f"the default is {DEFAULT_VOICE}); until then announcements are printed as text."
    )


def _close(name: str, voices: list[tuple[str, str]], n: int = 5) -> list[str]:
    """Identifiers whose id, language part or name is spelled like ``name``."""
    keys: dict[str, list[str]] = {}
    for ident, nm in voices:
        plain = nm.replace("_", " ")
        for key in {ident, ident.split("/")[-1], plain, plain.split(" (")[0]}:
            keys.setdefault(key.lower(), []).append(ident)
    want = name.lower().strip()
    out: list[str] = []
    for pick in difflib.get_close_matches(want, list(keys), n=n * 3, cutoff=0.6):
        for ident in sorted(keys[pick], key=lambda i: (i.lower() != want, len(i))):
            if ident not in out:
                out.append(ident)
    for ident, nm in voices:  # a fragment ("scotland") names every voice containing it
        if want and (want in ident.lower() or want in nm.lower()) and ident not in out:
            out.append(ident)
    return out[:n]


def available_voices() -> list[tuple[str, str]]:
    """(identifier, name) of every espeak-ng voice, e.g. ("gmw/en", "English_(Great_Britain)")."""
    with _LOCK:
        return _engine().voices()


def close_voices(name: str, n: int = 5) -> list[str]:
    """Voice identifiers that look like ``name`` (for "did you mean")."""
    return _close(name, available_voices(), n)


def check_voice(settings: VoiceSettings) -> None:
    """Raise NoSpeechEngine/UnknownVoice now (at start-up), not at the first flip."""
    render("", settings)
    render("ok", settings)


def trim(samples: np.ndarray) -> np.ndarray:
    """The speech only: drop leading silence and trailing silence beyond a 10 ms tail."""
    loud = np.flatnonzero(np.abs(samples.astype(np.int32)) > _SILENCE)
    if loud.size == 0:
        return samples[:0]
    return samples[loud[0] : min(len(samples), loud[-1] + 1 + _KEEP)]


def render(text: str, settings: VoiceSettings = VoiceSettings(), engine: str | None = None) -> tuple[np.ndarray, int]:
    """Speak ``text`` to int16 mono samples at espeak-ng's rate (no device, no cache).

    ``engine`` forces "cli" (the command line) for cross-checks; default is the
    in-process binding with the command line as fallback.
    """
    text = " ".join(text.split())
    with _LOCK:
        eng = _engine(engine)
        if not text:
            if isinstance(eng, _Binding):  # still validate the voice
                eng.synth("", settings)
            return np.zeros(0, dtype=np.int16), ENGINE_RATE
        raw = eng.synth(text, settings)
    return trim(raw), ENGINE_RATE


# --- the cache ---------------------------------------------------------------


def cache_key(settings: VoiceSettings, text: str) -> str:
    """File name stem for one (voice, rate, volume, text); stable across runs."""
    raw = f"{settings.voice}|{settings.rate}|{settings.volume:.2f}|{' '.join(text.split())}"
    return hashlib.sha1(raw.encode("utf-8")).hexdigest()


class SpeechCache:
    """Rendered phrases in memory and on disk, resampled once to the output rate.

    ``get`` is what the announcer calls on every event: a memory hit is a dict
    lookup; a miss renders (~1 ms), writes the WAV atomically and keeps it.
    """

    def __init__(self, folder: Path | None, settings: VoiceSettings = VoiceSettings(), rate: int = ENGINE_RATE):
        self.folder = folder
        self.settings = settings
        self.rate = rate
        self._memory: dict[tuple[VoiceSettings, str], Clip] = {}
        self.hits = self.misses = self.disk_hits = 0

    @classmethod
    def in_data_dir(cls, data_dir: Path, settings: VoiceSettings = VoiceSettings(), rate: int = ENGINE_RATE) -> "SpeechCache":
        return cls(Path(data_dir) / "cache" / "speech", settings, rate)

    def path(self, text: str, settings: VoiceSettings | None = None) -> Path | None:
        if self.folder is None:
            return None
        return self.folder / f"{cache_key(settings or self.settings, text)}.wav"

    def get(self, text: str, settings: VoiceSettings | None = None) -> Clip:
        s = settings or self.settings
        key = (s, " ".join(text.split()))
        clip = self._memory.get(key)
        if clip is not None:
            self.hits += 1
            return clip
        samples = self._load(text, s)
        if samples is None:
            self.misses += 1
            samples, _ = render(text, s)
            self._store(text, s, samples)
        else:
            self.disk_hits += 1
        clip = Clip(key[1], self._resample(samples), self.rate)
        self._memory[key] = clip
        return clip

    def cached(self, text: str, settings: VoiceSettings | None = None) -> bool:
        return ((settings or self.settings), " ".join(text.split())) in self._memory

    def prerender(self, texts: Iterable[str], settings: VoiceSettings | None = None) -> float:
        """Render (or load) every phrase now; returns the seconds it took."""
        start = time.perf_counter()
        for text in texts:
            self.get(text, settings)
        return time.perf_counter() - start

    def _resample(self, samples: np.ndarray) -> np.ndarray:
        if self.rate == ENGINE_RATE or samples.size == 0:
            return samples
        import soxr

        out = soxr.resample(samples.astype(np.float32) / 32768.0, ENGINE_RATE, self.rate)
        return np.clip(np.round(out * 32768.0), -32768, 32767).astype(np.int16)

    def _load(self, text: str, s: VoiceSettings) -> np.ndarray | None:
        path = self.path(text, s)
        if path is None or not path.exists():
            return None
        import soundfile as sf

        try:
            data, rate = sf.read(path, dtype="int16")
        except Exception:  # damaged or truncated: render again and overwrite
            return None
        if rate != ENGINE_RATE or data.ndim != 1:
            return None
        return np.asarray(data, dtype=np.int16)

    def _store(self, text: str, s: VoiceSettings, samples: np.ndarray) -> None:
        path = self.path(text, s)
        if path is None:
            return
        import soundfile as sf

        buf = io.BytesIO()
        sf.write(buf, samples, ENGINE_RATE, subtype="PCM_16", format="WAV")
        try:
            atomic_write_bytes(path, buf.getvalue(), mode=0o644)
        except OSError:  # a read-only data dir costs a re-render next run, nothing more
            pass
