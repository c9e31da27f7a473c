"""The keyword model: "snap" and "snap pool" heard by a network trained for them.

Why it exists: Vosk's small model decodes a whole vocabulary and, in noise,
loses the call (half of the corpus's calls at 5 dB SNR). openWakeWord's
answer to the same problem is a speech embedding pretrained on a large body of
real speech, frozen, with a small classifier trained on top for the one
phrase, from synthetic speech. That is what this is:

- **front end** (not voicesnap's): openWakeWord 0.5.1's ``melspectrogram.onnx``
  (32 mel bands, 32 ms window, 10 ms hop) and ``embedding_model.onnx``, Google's
  ``speech_embedding`` (Apache-2.0; 76 mel frames, i.e. 0.78 s, to 96 numbers,
  every 8 frames = 80 ms), run with onnxruntime. The two files come from
  openWakeWord's wheel on PyPI (pinned sha256): ``voicesnap models download
  keyword``. openWakeWord's own wake-word models are not used (they are
  CC BY-NC-SA); neither is its code.
- **head** (voicesnap's, ``data/keyword_head.npz``): a two-layer MLP over the
  last 16 embeddings (2.0 s of audio) giving P(nothing), P(snap), P(snap
  pool) every 80 ms. It is trained by ``models/train_keyword.py`` on
  thousands of espeak-ng voices (none of the fixture players' or strangers'),
  in synthetic and real noise, against near-miss words (alone and inside
  sentences, their steps weighted in the loss), table talk, named cards and
  the announcer; see docs/listening.md for what it was measured on.

Times: frame i of the mel covers clock samples [160 i, 160 i + 512) from the
stream's first sample; step j (one embedding) covers frames [8 j, 8 j + 76),
so its audio ends at sample 1280 j + 12512, and that is the time of step j's
scores. ``KeywordStream`` computes what the whole recording would give (the mel
of a longer input is the same frames, once clamped as a whole recording is:
``TOP``), within 0.1 (0.07 in 10 dB babble, and the same steps over the call
line), so training, benchmarks and a live game see the same numbers.
"""

from __future__ import annotations

import io
import zipfile
from collections import deque
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np

from .files import atomic_write_bytes
from .models import ModelError, fetch_pinned

__all__ = ["KeywordError", "KeywordModel", "KeywordStream", "Scores", "load_keyword_model", "install_from",
           "download", "MODEL_NAME", "WHEEL_URL", "WHEEL_SHA256", "FILES", "HEAD_FILE", "CLASSES"]

MODEL_NAME = "openwakeword-0.5.1-features"  # the folder under models/
WHEEL_URL = ("https://files.pythonhosted.org/packages/00/b7/4bbef6bd840866579672eb7240c19f547dcb12dc685dbf725a67a6afbac3/"
             "openwakeword-0.5.1-py3-none-any.whl")
WHEEL_SHA256 = "015467e49f08b0ef8efa433690ce70566abb72f7c36501a6fa893762b4ddc559"
MEL_FILE = "melspectrogram.onnx"
EMBED_FILE = "embedding_model.onnx"
FILES = (MEL_FILE, EMBED_FILE)
WHEEL_DIR = "openwakeword/resources/models/"
LICENSE_MEMBER = "openwakeword-0.5.1.dist-info/LICENSE"
HEAD_FILE = "keyword_head.npz"  # in voicesnap/data
CLASSES = ("", "snap", "snap pool")  # the head's outputs; "" is "no call"

RATE = 16000
HOP = 160  # samples per mel frame
WINDOW = 512  # samples under one mel frame
N_MELS = 32
EMBED_FRAMES = 76  # mel frames under one embedding
STEP_FRAMES = 8  # mel frames between embeddings (80 ms)
STEP = HOP * STEP_FRAMES  # 1280 samples
EMBED_SPAN = HOP * (EMBED_FRAMES - 1) + WINDOW  # 12512 samples: the audio under one embedding
DIM = 96
# The mel network clamps every value to 80 dB under the loudest in its input (8.0 in these units):
# pieces of a stream each have their own loudest, so their quiet bins came out up to 16 dB lower than
# in the whole recording the head was trained on (measured in 10 dB babble; clean speech hardly). The
# stream clamps again under the loudest of the last PEAK_SECONDS (a training stream: 2 + 16 s).
TOP = 8.0
PEAK_SECONDS = 18.0
NOTHING = np.array([1.0, 0.0, 0.0], dtype=np.float32)  # the scores of a step skipped asleep (``KeywordStream.push``)


class KeywordError(ModelError):
    """The keyword model is missing or unusable; the message says how to get it."""


# --------------------------------------------------------------------------
# getting the front end


def _write_model(files: dict[str, bytes], folder: Path, license_text: bytes | None) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    if license_text:
        atomic_write_bytes(folder / "LICENSE", license_text, mode=0o644)
    atomic_write_bytes(folder / "SOURCE", (
        "openWakeWord 0.5.1's feature models (openwakeword/resources/models/melspectrogram.onnx and\n"
        "embedding_model.onnx), Apache-2.0, by David Scripka, https://github.com/dscripka/openWakeWord;\n"
        "the embedding network is Google's speech_embedding (https://tfhub.dev/google/speech_embedding/1,\n"
        f"Apache-2.0), re-implemented there.\nfrom {WHEEL_URL}\nsha256 {WHEEL_SHA256}\n").encode(), mode=0o644)
    for name in sorted(files, key=lambda n: n == EMBED_FILE):  # the marker last: its presence means complete
        atomic_write_bytes(folder / name, files[name], mode=0o644)


def install_from(source: str | Path, dest_root: Path, name: str = MODEL_NAME) -> Path:
    """Install the feature models from openWakeWord's wheel, or a folder holding the two .onnx files."""
    src = Path(source).expanduser()
    files: dict[str, bytes] = {}
    license_text = None
    if src.is_dir():
        for f in FILES:
            hit = next(iter(sorted(src.rglob(f))), None)
            if hit is None:
                raise KeywordError(f"{src}: no {f} inside; give openwakeword-0.5.1-py3-none-any.whl or a "
                                   f"folder holding {' and '.join(FILES)}")
            files[f] = hit.read_bytes()
    elif zipfile.is_zipfile(src):
        try:
            with zipfile.ZipFile(src) as wheel:
                names = set(wheel.namelist())
                missing = [f for f in FILES if WHEEL_DIR + f not in names]
                if missing:
                    raise KeywordError(f"{src}: no {', '.join(WHEEL_DIR + f for f in missing)} inside; give "
                                       f"openWakeWord's wheel ({WHEEL_URL.rsplit('/', 1)[-1]})")
                files = {f: wheel.read(WHEEL_DIR + f) for f in FILES}
                if LICENSE_MEMBER in names:
                    license_text = wheel.read(LICENSE_MEMBER)
        except zipfile.BadZipFile as exc:
            raise KeywordError(f"{src}: damaged archive ({exc}); download it again") from exc
    elif src.is_file():
        raise KeywordError(f"{src}: not openWakeWord's wheel (not a zip archive) nor a folder")
    else:
        raise KeywordError(f"{src}: no such file or folder; give openwakeword-0.5.1-py3-none-any.whl")
    target = dest_root / name
    _write_model(files, target, license_text)
    return target


def download(dest_root: Path, name: str = MODEL_NAME) -> Path:
    """Fetch openWakeWord's wheel from PyPI (pinned sha256) and install its two feature models."""
    with fetch_pinned(WHEEL_URL, WHEEL_SHA256, dest_root, what="the keyword model's front end",
                      error=KeywordError, by_hand=("`pip download openwakeword==0.5.1 --no-deps`",
                                                   "voicesnap models install openwakeword-0.5.1-py3-none-any.whl "
                                                   "--kind keyword")) as wheel:
        return install_from(wheel, dest_root, name)


# --------------------------------------------------------------------------
# the model


def _session(path: Path) -> Any:
    try:
        import onnxruntime as ort
    except ImportError as exc:
        raise KeywordError(f"the keyword model needs onnxruntime ({exc}); pip install onnxruntime") from exc
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = 1  # one core: the game's other engines share the machine
    opts.inter_op_num_threads = 1
    opts.log_severity_level = 3
    try:
        return ort.InferenceSession(str(path), opts, providers=["CPUExecutionProvider"])
    except Exception as exc:  # onnxruntime raises its own exception types for a damaged file
        raise KeywordError(f"{path}: cannot be loaded ({exc}); install it again with "
                           "'voicesnap models download keyword'") from exc


@dataclass(frozen=True)
class Head:
    """voicesnap's classifier over the last ``context`` embeddings: one MLP, or several averaged.

    Each layer's weights are (members, in, out) and biases (members, out). Heads trained on the same
    streams with other seeds disagree by several corpus calls (docs/listening.md, "Fifteenth round"),
    so the file may hold a few and their probabilities are averaged; a file of 2-D arrays is one.
    """

    mean: np.ndarray
    scale: np.ndarray
    weights: tuple[np.ndarray, ...]
    biases: tuple[np.ndarray, ...]
    context: int

    @classmethod
    def load(cls, source: Any = None) -> "Head":
        if source is None:
            source = resources.files("voicesnap").joinpath("data", HEAD_FILE).read_bytes()
        raw = np.load(io.BytesIO(source) if isinstance(source, bytes) else source)
        layers = sorted(k for k in raw.files if k.startswith("W"))

        def members(a: np.ndarray, ndim: int) -> np.ndarray:
            return (a[None] if a.ndim == ndim else a).astype(np.float32)

        return cls(raw["mu"].astype(np.float32), (1.0 / raw["sd"]).astype(np.float32),
                   tuple(members(raw[k], 2) for k in layers),
                   tuple(members(raw["b" + k[1:]], 1) for k in layers), int(raw["K"]))

    @property
    def members(self) -> int:
        return len(self.weights[0]) if self.weights else 0

    def probs(self, windows: np.ndarray) -> np.ndarray:
        """(n, context, 96) embeddings -> (n, 3) class probabilities (the members' mean)."""
        h = ((windows.reshape(len(windows), -1) - self.mean) * self.scale)[None]
        for w, b in zip(self.weights[:-1], self.biases[:-1]):
            h = np.maximum(h @ w + b[:, None], 0.0)
        z = h @ self.weights[-1] + self.biases[-1][:, None]
        z -= z.max(axis=2, keepdims=True)
        e = np.exp(z)
        return (e / e.sum(axis=2, keepdims=True)).mean(axis=0)


class KeywordModel:
    """The front end's two networks and the head; shared by every stream (it holds no stream state)."""

    def __init__(self, folder: str | Path, head: Head | None = None) -> None:
        folder = Path(folder)
        self.folder = folder
        self._mel = _session(folder / MEL_FILE)
        self._embed = _session(folder / EMBED_FILE)
        self.head = head or Head.load()
        # what the embedding history holds before a stream has 2 s of its own: quiet room tone
        quiet = np.random.default_rng(0).standard_normal(EMBED_SPAN + STEP * (self.head.context - 1)) * 3.0
        self.quiet = self.embed(self.mel(quiet))[-1]

    def mel(self, samples: np.ndarray) -> np.ndarray:
        """Mel frames (n, 32) of 16 kHz audio on the int16 scale; frame i covers samples [160 i, 160 i + 512)."""
        if len(samples) < WINDOW:
            return np.zeros((0, N_MELS), dtype=np.float32)
        out = self._mel.run(None, {"input": np.asarray(samples, dtype=np.float32)[None]})[0]
        return (out.reshape(-1, N_MELS) / 10.0 + 2.0).astype(np.float32)  # openWakeWord's scaling

    def embed(self, mel: np.ndarray) -> np.ndarray:
        """One embedding (n, 96) per 8 mel frames: embedding j covers frames [8 j, 8 j + 76)."""
        n = (len(mel) - EMBED_FRAMES) // STEP_FRAMES + 1
        if n <= 0:
            return np.zeros((0, DIM), dtype=np.float32)
        idx = np.arange(n)[:, None] * STEP_FRAMES + np.arange(EMBED_FRAMES)[None]
        out = self._embed.run(None, {"input_1": mel[idx][..., None]})[0]
        return out.reshape(n, DIM)

    def features(self, samples: np.ndarray) -> np.ndarray:
        """The embeddings of a whole recording (what ``KeywordStream`` gives it piece by piece)."""
        return self.embed(self.mel(samples))


@dataclass(frozen=True)
class Scores:
    """The head's view of the audio up to ``time`` (s on the clock): P(no call), P(snap), P(snap pool)."""

    time: float
    probs: np.ndarray
    asleep: bool = False  # not computed: the stream was asleep (``KeywordStream.push``), no speech around

    @property
    def call(self) -> float:
        return float(self.probs[1] + self.probs[2])


class KeywordStream:
    """16 kHz audio in, the head's scores every 80 ms out, on the stream's clock."""

    def __init__(self, model: KeywordModel) -> None:
        self.model = model
        self._origin: int | None = None  # clock index of the stream's first sample
        self._audio = np.zeros(0, dtype=np.float32)  # samples from mel frame self._frames on
        self._frames = 0  # mel frames computed so far
        self._mel = np.zeros((0, N_MELS), dtype=np.float32)  # mel frames from frame self._mel_first on
        self._mel_first = 0
        self._steps = 0  # embeddings computed so far
        context = model.head.context
        self._history: deque[np.ndarray] = deque([model.quiet] * context, maxlen=context)
        self._end = 0  # clock index one past the newest sample
        self._emitted = 0  # steps scored so far (asleep: as "nothing")
        self._peaks: deque[tuple[int, float]] = deque()  # (mel frame, its loudest) falling: a sliding max
        self.skipped = 0  # steps not embedded because the stream was asleep

    @property
    def position(self) -> float:
        """Seconds on the clock up to which audio has been taken."""
        return self._end / RATE

    def push(self, start: int, samples: np.ndarray, awake: bool = True) -> list[Scores]:
        """Audio at clock index ``start`` (16 kHz, any shape that flattens to mono, int16 scale).

        ``awake`` False (no speech around: the caller's energy gate) runs neither network and gives
        "nothing" scores for those steps. The audio of the last ``context`` steps is kept, so on
        waking those steps are computed first: every step scored after that sees exactly the
        context an always-awake stream gives it (the mel of a longer input is the same frames).
        """
        x = np.asarray(samples, dtype=np.float32).ravel()
        origin = self._origin
        if origin is None or start != self._end:  # first audio, or a gap: start again there
            self._restart(start)
            origin = start  # (the new self._origin)
        self._end = start + len(x)
        self._audio = np.concatenate([self._audio, x])
        context = self.model.head.context
        if not awake:
            return self._sleep(context, origin)
        n = (len(self._audio) - WINDOW) // HOP + 1
        if n <= 0:
            return []
        new = self._clamped(self.model.mel(self._audio[: HOP * (n - 1) + WINDOW]))
        self._audio = self._audio[HOP * n:]
        self._frames += n
        self._mel = np.concatenate([self._mel, new])
        out: list[Scores] = []
        # embedding j needs frames [8 j, 8 j + 76)
        ready = (self._frames - EMBED_FRAMES) // STEP_FRAMES + 1
        if ready > self._steps:
            lo = self._steps * STEP_FRAMES - self._mel_first
            emb = self.model.embed(self._mel[lo: (ready - 1) * STEP_FRAMES + EMBED_FRAMES - self._mel_first])
            windows = []
            for e in emb:
                self._history.append(e)
                windows.append(np.stack(self._history))
            probs = self.model.head.probs(np.stack(windows))
            for k, p in enumerate(probs):
                j = self._steps + k
                if j >= self._emitted:  # (steps before it were scored asleep)
                    out.append(Scores((origin + STEP * j + EMBED_SPAN) / RATE, p))
            self._emitted = max(self._emitted, ready)
            self._steps = ready
            keep = self._steps * STEP_FRAMES - self._mel_first  # frames still needed start at 8 * steps
            self._mel = self._mel[keep:]
            self._mel_first += keep
        return out

    def _clamped(self, mel: np.ndarray) -> np.ndarray:
        """New mel frames (from frame ``_frames``) clamped as a whole recording's are: TOP under the
        loudest of the last PEAK_SECONDS, these frames included."""
        peaks = self._peaks
        span = int(PEAK_SECONDS * RATE / HOP)
        for i, v in enumerate(mel.max(axis=1)):
            while peaks and peaks[-1][1] <= v:
                peaks.pop()
            peaks.append((self._frames + i, float(v)))
        newest = self._frames + len(mel) - 1
        while peaks[0][0] <= newest - span:
            peaks.popleft()
        return np.maximum(mel, peaks[0][1] - TOP)

    def _sleep(self, context: int, origin: int) -> list[Scores]:
        """``push`` asleep: "nothing" for the steps due, and only the audio and mel frames of the last
        ``context`` steps kept, unembedded, for a wake-up to embed first. ``origin``: ``self._origin``."""
        n = max(0, (len(self._audio) - WINDOW) // HOP + 1)  # mel frames the audio held could give
        ready = (self._frames + n - EMBED_FRAMES) // STEP_FRAMES + 1
        out = [Scores((origin + STEP * j + EMBED_SPAN) / RATE, NOTHING, True)
               for j in range(self._emitted, ready)]
        self._emitted = max(self._emitted, ready)
        keep_from = max(self._steps, ready - context)
        if keep_from > self._steps:
            self.skipped += keep_from - self._steps
            self._steps = keep_from
            first = keep_from * STEP_FRAMES  # the first mel frame still needed
            cut = min(max(0, first - self._mel_first), len(self._mel))
            self._mel, self._mel_first = self._mel[cut:], self._mel_first + cut
            if first > self._frames:  # nor computed yet: drop its audio instead
                self._audio = self._audio[HOP * (first - self._frames):]
                self._frames = self._mel_first = first
        return out

    def _restart(self, start: int) -> None:
        self._origin = start
        self._audio = np.zeros(0, dtype=np.float32)
        self._frames = self._steps = self._mel_first = self._emitted = 0
        self._peaks.clear()
        self._mel = np.zeros((0, N_MELS), dtype=np.float32)
        self._history.extend([self.model.quiet] * self._history.maxlen)  # type: ignore[operator]


@lru_cache(maxsize=2)
def _load_cached(path: str) -> KeywordModel:
    return KeywordModel(path)


def load_keyword_model(option: str | Path | None = None, data: str | Path | None = None,
                       required: bool = False) -> KeywordModel | None:
    """The installed keyword model (option, $VOICESNAP_KEYWORD_MODEL, the data dir), or None.

    ``required``: raise the error that says how to get it instead of None (as where the player named one).
    """
    from .models import find_model, named

    try:
        folder = find_model("keyword", option, data)
        return _load_cached(str(folder))
    except ModelError:
        if required or named("keyword", option):
            raise
        return None
