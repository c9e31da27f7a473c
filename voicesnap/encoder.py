"""Speaker encoder: a pretrained d-vector network that says how alike two voices are.

The model-free voiceprint (``voices.voiceprint``) tells synthetic voices apart
but not real people saying the same short word (LibriSpeech "the"/"and"/"of":
EER 0.32). A network trained on thousands of speakers does: this is the GE2E
voice encoder of **Resemblyzer 0.1.4** (Corentin Jemine / Resemble AI,
Apache-2.0, https://github.com/resemble-ai/Resemblyzer; after Wan et al.,
"Generalized End-to-End Loss for Speaker Verification", ICASSP 2018), whose
wheel on PyPI carries its weights (``resemblyzer/pretrained.pt``, 17 MB).

Resemblyzer needs torch (hundreds of MB) to run a 1.4 M-parameter LSTM, so
its weights are read here without torch and the network is reimplemented in
numpy from its ``voice_encoder.py``, ``audio.py`` and ``hparams.py``:

- front end: volume normalised to -30 dBFS (raised only, never lowered), then
  a 40-channel mel *power* spectrogram as ``librosa.feature.melspectrogram``
  makes it (25 ms Hann window, 10 ms hop at 16 kHz, centred frames with zero
  padding, Slaney mel scale and Slaney area normalisation), not logged;
- 3 LSTM layers of 256 (torch's gate order i, f, g, o; both biases added),
  Linear 256 -> 256 + ReLU on the last layer's final hidden state, L2-normalised.

Resemblyzer cuts long speech into 1.6 s partials and averages their
embeddings; a call word is one partial or less, so it is run whole
(``embed``); ``embed_utterance`` keeps the partials for long speech (the
validation on LibriSpeech sentences).

``pretrained.pt`` is torch's legacy (non-zip) serialization: pickles for the
magic number, protocol and system info, the checkpoint (tensors refer to
storages by persistent id), the storage keys, then each storage's raw bytes
after an int64 element count. A restricted unpickler that knows only the
names such a file needs (``collections.OrderedDict``,
``torch._utils._rebuild_tensor_v2``, ``torch.*Storage``) reads it: nothing in
it can run code. It is converted once to ``encoder.npz`` in a model folder
under the data directory's ``models/`` (``voicesnap models download --kind
encoder``), found like the Vosk models (``models.find_model("encoder")``,
environment variable ``VOICESNAP_ENCODER_MODEL``).
"""

from __future__ import annotations

import hashlib
import io
import os
import pickle
import zipfile
from collections import OrderedDict
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import BinaryIO, Callable, Sequence, TextIO

import numpy as np

from . import features as F
from .files import atomic_write_bytes
from .models import ModelError, fetch_pinned

__all__ = ["EncoderError", "Encoder", "WHEEL_URL", "WHEEL_SHA256", "WEIGHTS_FILE", "MODEL_NAME",
           "read_torch_legacy", "convert_pt", "install_from", "download", "mel_filterbank",
           "mel_spectrogram", "denoise", "load_encoder", "cosine"]

MODEL_NAME = "resemblyzer-0.1.4"  # the folder under models/
WEIGHTS_FILE = "encoder.npz"  # inside it (the marker models.is_model looks for)
WHEEL_URL = ("https://files.pythonhosted.org/packages/d9/b5/d897d5de5b2123a1ad5d32e8e007d83f76582f5c32c60992577263bd7c7e/"
             "Resemblyzer-0.1.4-py3-none-any.whl")
WHEEL_SHA256 = "8f12eb2f1a9982d32e8db7856de754709b59c93a77bcf0ff536584b619a9dd1f"
WHEEL_MEMBER = "resemblyzer/pretrained.pt"
LICENSE_MEMBER = "Resemblyzer-0.1.4.dist-info/LICENSE"

RATE = 16000
N_FFT = 400  # 25 ms
HOP = 160  # 10 ms
N_MELS = 40
HIDDEN = 256
LAYERS = 3
PARTIAL_FRAMES = 160  # 1.6 s: Resemblyzer's partial utterance
NORM_DBFS = -30.0
SPEECH_WINDOW = 1.0  # s: pieces of free speech embedded one by one (Encoder.embed_speech)
LOOP_SHIFTS = (0, 80, 160)  # samples (0, 5, 10 ms): where each looped copy of a word starts (Encoder.embed_looped)
INT16_MAX = 2 ** 15 - 1

PARAMS = tuple([f"lstm.{w}_l{i}" for i in range(LAYERS) for w in ("weight_ih", "weight_hh", "bias_ih", "bias_hh")]
               + ["linear.weight", "linear.bias"])
SHAPES = {**{f"lstm.weight_ih_l{i}": (4 * HIDDEN, N_MELS if i == 0 else HIDDEN) for i in range(LAYERS)},
          **{f"lstm.weight_hh_l{i}": (4 * HIDDEN, HIDDEN) for i in range(LAYERS)},
          **{f"lstm.bias_{s}_l{i}": (4 * HIDDEN,) for i in range(LAYERS) for s in ("ih", "hh")},
          "linear.weight": (HIDDEN, HIDDEN), "linear.bias": (HIDDEN,)}


class EncoderError(ModelError):
    """The encoder's weights are missing or unusable; the message says how to get them."""


# --------------------------------------------------------------------------
# reading torch's legacy format without torch

_STORAGE_DTYPES = {"FloatStorage": np.float32, "DoubleStorage": np.float64, "HalfStorage": np.float16,
                   "LongStorage": np.int64, "IntStorage": np.int32, "ShortStorage": np.int16,
                   "CharStorage": np.int8, "ByteStorage": np.uint8, "BoolStorage": np.bool_}


@dataclass(frozen=True)
class _StorageRef:
    key: str
    dtype: type


@dataclass(frozen=True)
class _TensorRef:
    storage: _StorageRef
    offset: int
    size: tuple[int, ...]
    stride: tuple[int, ...]


def _rebuild_tensor_v2(storage: _StorageRef, offset: int, size: tuple, stride: tuple, *_rest: object) -> _TensorRef:
    return _TensorRef(storage, int(offset), tuple(int(s) for s in size), tuple(int(s) for s in stride))


class _Unpickler(pickle.Unpickler):
    """Only the names a saved state dict needs; anything else is refused, never imported."""

    def find_class(self, module: str, name: str) -> object:
        if (module, name) == ("collections", "OrderedDict"):
            return OrderedDict
        if (module, name) == ("torch._utils", "_rebuild_tensor_v2"):
            return _rebuild_tensor_v2
        if module == "torch" and name in _STORAGE_DTYPES:
            return _STORAGE_DTYPES[name]
        raise pickle.UnpicklingError(f"refusing {module}.{name}: not part of a plain weights file")

    def persistent_load(self, pid: object) -> _StorageRef:
        if not (isinstance(pid, tuple) and len(pid) >= 3 and pid[0] == "storage"):
            raise pickle.UnpicklingError(f"unexpected persistent id {pid!r}")
        dtype = pid[1]
        if isinstance(dtype, str):  # some torch versions pickle the name, others the class
            dtype = _STORAGE_DTYPES.get(dtype)
        if dtype not in _STORAGE_DTYPES.values():
            raise pickle.UnpicklingError(f"unsupported storage type {pid[1]!r}")
        return _StorageRef(str(pid[2]), dtype)


def _walk(obj: object, out: dict[str, _TensorRef], prefix: str = "") -> None:
    if isinstance(obj, _TensorRef):
        out[prefix] = obj
    elif isinstance(obj, dict):
        for k, v in obj.items():
            _walk(v, out, f"{prefix}.{k}" if prefix else str(k))


def read_torch_legacy(f: BinaryIO, keep: Callable[[str], bool] = lambda name: True) -> dict[str, np.ndarray]:
    """Every tensor of a legacy ``torch.save`` file as numpy arrays, by dotted name.

    ``keep`` chooses which tensors to materialise (the checkpoint also holds
    the optimiser's state); storages nobody keeps are skipped, not read.
    """
    try:
        # every pickle through the restricted unpickler: plain pickle.load could run code
        magic = _Unpickler(f).load()
        if magic != 0x1950A86A20F9469CFC6C:
            raise EncoderError("not a torch legacy weights file (wrong magic number)")
        if _Unpickler(f).load() != 1001:
            raise EncoderError("unsupported torch serialization protocol")
        info = _Unpickler(f).load()
        if not info.get("little_endian", True):
            raise EncoderError("big-endian torch files are not supported")
        tree = _Unpickler(f).load()
        keys = _Unpickler(f).load()
        every: dict[str, _TensorRef] = {}
        _walk(tree, every)
        refs = {n: r for n, r in every.items() if keep(n)}
        dtypes = {r.storage.key: r.storage.dtype for r in every.values()}
        wanted = {r.storage.key for r in refs.values()}
        storages: dict[str, np.ndarray] = {}
        for key in keys:
            count = int(np.frombuffer(_read(f, 8), "<i8")[0])
            if key not in dtypes:
                raise EncoderError(f"storage {key} is used by no tensor; cannot tell its size")
            size = count * np.dtype(dtypes[key]).itemsize
            if key not in wanted:  # a storage no kept tensor uses (the optimiser's): skipped, not read
                f.seek(size, io.SEEK_CUR)
                continue
            storages[key] = np.frombuffer(_read(f, size), dtypes[key])
    except (pickle.UnpicklingError, EOFError, ValueError, AttributeError, TypeError) as exc:
        raise EncoderError(f"damaged or unexpected weights file ({type(exc).__name__}: {exc})") from exc
    out = {}
    for name, r in refs.items():
        base = storages[r.storage.key]
        item = base.itemsize
        view = np.lib.stride_tricks.as_strided(base[r.offset:], r.size, tuple(s * item for s in r.stride),
                                               writeable=False)
        out[name] = np.array(view)  # own the memory, contiguous
    return out


def _read(f: BinaryIO, n: int) -> bytes:
    data = f.read(n)
    if len(data) != n:
        raise EOFError(f"file ends {n - len(data)} bytes early")
    return data


def convert_pt(pt: BinaryIO | str | os.PathLike[str]) -> dict[str, np.ndarray]:
    """The encoder's parameters (float32, checked shapes) from Resemblyzer's ``pretrained.pt``."""
    if isinstance(pt, (str, os.PathLike)):
        with open(pt, "rb") as handle:
            return convert_pt(handle)
    state = read_torch_legacy(pt, keep=lambda n: n.startswith("model_state."))
    params = {n.removeprefix("model_state."): a for n, a in state.items()}
    missing = [p for p in PARAMS if p not in params]
    if missing:
        raise EncoderError(f"the weights file lacks {', '.join(missing)}: not Resemblyzer's voice encoder")
    for p in PARAMS:
        if params[p].shape != SHAPES[p]:
            raise EncoderError(f"{p} has shape {params[p].shape}, expected {SHAPES[p]}: not Resemblyzer 0.1.4's encoder")
    return {p: params[p].astype(np.float32) for p in PARAMS}


def _write_model(params: dict[str, np.ndarray], folder: Path, license_text: bytes | None) -> None:
    buf = io.BytesIO()
    np.savez(buf, **params)  # type: ignore[arg-type]  # numpy stubs: **kwds may be taken for allow_pickle
    folder.mkdir(parents=True, exist_ok=True)
    if license_text:
        atomic_write_bytes(folder / "LICENSE", license_text, mode=0o644)
    atomic_write_bytes(folder / "SOURCE", (
        f"Resemblyzer 0.1.4 voice encoder weights (resemblyzer/pretrained.pt), Apache-2.0,\n"
        f"by Corentin Jemine / Resemble AI, https://github.com/resemble-ai/Resemblyzer\n"
        f"from {WHEEL_URL}\nsha256 {WHEEL_SHA256}\nconverted to numpy by voicesnap.encoder\n").encode(), mode=0o644)
    atomic_write_bytes(folder / WEIGHTS_FILE, buf.getvalue(), mode=0o644)  # last: its presence means "complete"


def install_from(source: str | os.PathLike[str], dest_root: Path, name: str = MODEL_NAME) -> Path:
    """Install the encoder from Resemblyzer's wheel (.whl) or its ``pretrained.pt`` into ``dest_root/name``."""
    src = Path(source).expanduser()
    if not src.is_file():
        raise EncoderError(f"{src}: no such file; give Resemblyzer-0.1.4-py3-none-any.whl or its "
                           "resemblyzer/pretrained.pt")
    license_text = None
    if zipfile.is_zipfile(src):
        try:
            with zipfile.ZipFile(src) as wheel:
                names = set(wheel.namelist())
                if WHEEL_MEMBER not in names:
                    raise EncoderError(f"{src}: no {WHEEL_MEMBER} inside; give Resemblyzer's wheel "
                                       f"({WHEEL_URL.rsplit('/', 1)[-1]})")
                params = convert_pt(io.BytesIO(wheel.read(WHEEL_MEMBER)))
                if LICENSE_MEMBER in names:
                    license_text = wheel.read(LICENSE_MEMBER)
        except zipfile.BadZipFile as exc:
            raise EncoderError(f"{src}: damaged archive ({exc}); download it again") from exc
    elif src.suffix.lower() in (".whl", ".zip"):  # named as an archive but not one: a damaged download
        raise EncoderError(f"{src}: damaged or not a zip archive at all (its contents are not a zip's); "
                           "download Resemblyzer's wheel again")
    else:
        try:
            params = convert_pt(src)
        except EncoderError as exc:  # named, with what this kind takes (it once said neither)
            raise EncoderError(f"{src}: {exc}; give Resemblyzer-0.1.4-py3-none-any.whl or its "
                               "resemblyzer/pretrained.pt") from exc
        lic = src.parent.parent / LICENSE_MEMBER
        license_text = lic.read_bytes() if lic.is_file() else None
    target = dest_root / name
    _write_model(params, target, license_text)
    return target


def download(dest_root: Path, name: str = MODEL_NAME, url: str = WHEEL_URL, sha256: str = WHEEL_SHA256,
             progress: TextIO | None = None) -> Path:
    """Fetch Resemblyzer's wheel from PyPI (checked against its pinned sha256) and install the encoder."""
    with fetch_pinned(url, sha256, dest_root, what="the speaker encoder", error=EncoderError,
                      by_hand=("`pip download resemblyzer==0.1.4 --no-deps`",
                               "voicesnap models install Resemblyzer-0.1.4-py3-none-any.whl --kind encoder"),
                      progress=progress) as wheel:
        return install_from(wheel, dest_root, name)


# --------------------------------------------------------------------------
# front end


def _hz_to_mel(f: np.ndarray | float) -> np.ndarray:
    """Slaney's mel scale (librosa's default, htk=False): linear to 1 kHz, logarithmic above."""
    f = np.asarray(f, np.float64)
    f_sp = 200.0 / 3
    min_log_hz, logstep = 1000.0, np.log(6.4) / 27.0
    mels = f / f_sp
    return np.where(f >= min_log_hz, min_log_hz / f_sp + np.log(np.maximum(f, 1e-10) / min_log_hz) / logstep, mels)


def _mel_to_hz(m: np.ndarray) -> np.ndarray:
    m = np.asarray(m, np.float64)
    f_sp = 200.0 / 3
    min_log_hz, logstep = 1000.0, np.log(6.4) / 27.0
    min_log_mel = min_log_hz / f_sp
    return np.where(m >= min_log_mel, min_log_hz * np.exp(logstep * (m - min_log_mel)), f_sp * m)


@lru_cache(maxsize=4)
def mel_filterbank(rate: int = RATE, n_fft: int = N_FFT, n_mels: int = N_MELS) -> np.ndarray:
    """``librosa.filters.mel(sr, n_fft, n_mels)`` with its defaults: Slaney scale, Slaney area norm."""
    fft_freqs = np.linspace(0.0, rate / 2, 1 + n_fft // 2)
    mel_f = _mel_to_hz(np.linspace(_hz_to_mel(0.0), _hz_to_mel(rate / 2), n_mels + 2))
    fdiff = np.diff(mel_f)
    ramps = mel_f[:, None] - fft_freqs[None, :]
    lower = -ramps[:-2] / fdiff[:-1, None]
    upper = ramps[2:] / fdiff[1:, None]
    weights = np.maximum(0.0, np.minimum(lower, upper))
    weights *= (2.0 / (mel_f[2:] - mel_f[:-2]))[:, None]
    return weights.astype(np.float32)


@lru_cache(maxsize=1)
def _hann() -> np.ndarray:
    n = np.arange(N_FFT)
    return (0.5 - 0.5 * np.cos(2 * np.pi * n / N_FFT)).astype(np.float32)  # periodic, as librosa's stft


def volume_gain(wav: np.ndarray, target_dbfs: float = NORM_DBFS) -> float:
    """The factor that raises quiet audio to ``target_dbfs`` RMS (1 for loud audio), as Resemblyzer does."""
    rms = float(np.sqrt(np.mean((wav.astype(np.float64) * INT16_MAX) ** 2))) if len(wav) else 0.0
    if rms <= 0.0:
        return 1.0
    change = target_dbfs - 20.0 * np.log10(rms / INT16_MAX)
    return 1.0 if change < 0 else float(10 ** (change / 20.0))


def normalize_volume(wav: np.ndarray, target_dbfs: float = NORM_DBFS) -> np.ndarray:
    """Raise quiet audio to ``target_dbfs`` RMS (never lower loud audio), as Resemblyzer does."""
    g = volume_gain(wav, target_dbfs)
    return wav if g == 1.0 else (wav * g).astype(np.float32)


def mel_spectrogram(wav: np.ndarray) -> np.ndarray:
    """(frames, 40) mel power spectrogram of 16 kHz float audio, as Resemblyzer's ``wav_to_mel_spectrogram``."""
    x = np.asarray(wav, np.float32)
    pad = N_FFT // 2
    x = np.pad(x, (pad, pad))  # centred frames (librosa's center=True, zero padding)
    if len(x) < N_FFT:
        x = np.pad(x, (0, N_FFT - len(x)))
    n = 1 + (len(x) - N_FFT) // HOP
    fr = np.lib.stride_tricks.as_strided(x, (n, N_FFT), (x.strides[0] * HOP, x.strides[0]), writeable=False)
    spec = np.fft.rfft(fr * _hann(), axis=1)
    power = (spec.real ** 2 + spec.imag ** 2).astype(np.float32)
    return power @ mel_filterbank().T


NOISE_PERCENTILE = 20.0  # the background per band: a low percentile of the frames around a call
NOISE_OVER = 3.0  # over-subtraction factor (a percentile sits under the mean of noise)
NOISE_KEEP = 0.02  # never below this fraction of the word's own power (no holes, no negatives)


def denoise(mel: np.ndarray, around: np.ndarray) -> np.ndarray:
    """Spectral subtraction in the mel power domain: the word's frames less the background of ``around``.

    A low percentile of ``around``'s frames, not their mean, so that speech
    near the call (the announcer, another player) does not count as background
    unless it fills more than 80% of ``around``.
    """
    bg = np.percentile(around, NOISE_PERCENTILE, axis=0).astype(np.float32)
    return np.maximum(mel - NOISE_OVER * bg, NOISE_KEEP * mel).astype(np.float32)


# --------------------------------------------------------------------------
# the network


def _sigmoid(x: np.ndarray) -> np.ndarray:
    return 0.5 * (np.tanh(0.5 * x) + 1.0)  # no overflow warnings for large |x|


def cosine(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Cosine similarity of embeddings (rows of ``b`` against ``a``); encoder outputs are unit length."""
    a, b = np.asarray(a, np.float32), np.asarray(b, np.float32)
    return (b @ a) / np.maximum(np.linalg.norm(b, axis=-1) * np.linalg.norm(a), 1e-9)


class Encoder:
    """The voice encoder with loaded weights: ``embed(audio)`` -> a unit 256-vector."""

    def __init__(self, params: dict[str, np.ndarray]):
        missing = [p for p in PARAMS if p not in params or params[p].shape != SHAPES[p]]
        if missing:
            raise EncoderError(f"encoder weights lack or misshape {', '.join(missing)}; "
                               "install them again with 'voicesnap models download --kind encoder'")
        self.w_ih = [np.ascontiguousarray(params[f"lstm.weight_ih_l{i}"].T) for i in range(LAYERS)]
        # the recurrent weights per gate (i, f, g, o): four (256, 256) products per frame stay
        # under OpenBLAS's threading size (features.matmul), where one (256, 1024) product
        # spread over threads that mostly spin on a busy machine (28 ms per word vs 5 ms)
        self.w_hh = [[np.ascontiguousarray(params[f"lstm.weight_hh_l{i}"][k * HIDDEN:(k + 1) * HIDDEN].T)
                      for k in range(4)] for i in range(LAYERS)]
        self.bias = [params[f"lstm.bias_ih_l{i}"] + params[f"lstm.bias_hh_l{i}"] for i in range(LAYERS)]
        self.lin_w = np.ascontiguousarray(params["linear.weight"].T)
        self.lin_b = params["linear.bias"]
        # which weights made an embedding: a profile's embeddings are only comparable with the same ones
        self.fingerprint = hashlib.sha256(b"".join(np.ascontiguousarray(params[p], "<f4").tobytes()
                                                   for p in ("linear.weight", "linear.bias"))).hexdigest()[:16]

    @classmethod
    def from_file(cls, path: str | os.PathLike[str]) -> "Encoder":
        p = Path(path)
        if p.is_dir():
            p = p / WEIGHTS_FILE
        try:
            with np.load(p, allow_pickle=False) as data:
                params = {k: data[k].astype(np.float32) for k in data.files}
        except (OSError, ValueError, EOFError, zipfile.BadZipFile) as exc:  # EOFError: an empty file
            raise EncoderError(f"cannot read the speaker encoder's weights {p} ({type(exc).__name__}: {exc}); "
                               "install them again with 'voicesnap models download --kind encoder'") from exc
        return cls(params)  # its own EncoderError for missing or misshapen arrays

    def forward(self, mels: np.ndarray, lengths: Sequence[int] | None = None) -> np.ndarray:
        """Embeddings of a batch of mel spectrograms, (batch, frames, 40) -> (batch, 256).

        ``lengths``: each item's own number of frames, the rest of it padding; its state stops
        there, so that its embedding is the one it gets alone. The recurrence is one step per
        frame whatever the batch, but each step's products are cut for one BLAS thread
        (``features.matmul``: three rows at a time), so nine takes cost about 0.6 of nine runs.
        """
        x = np.asarray(mels, np.float32)
        b, t, _ = x.shape
        live = None
        if lengths is not None and min(lengths) < t:
            live = np.arange(t)[:, None] < np.asarray(lengths)[None, :]  # (frames, batch)
        for layer in range(LAYERS):
            # the input projection for every frame at once; only the recurrence is per frame
            gates_x = F.matmul(x.reshape(b * t, -1), self.w_ih[layer]) + self.bias[layer]
            gx = [gates_x[:, k * HIDDEN:(k + 1) * HIDDEN].reshape(b, t, HIDDEN) for k in range(4)]
            h = np.zeros((b, HIDDEN), np.float32)
            c = np.zeros((b, HIDDEN), np.float32)
            last = layer == LAYERS - 1
            seq = None if last else np.empty((b, t, HIDDEN), np.float32)
            w_i, w_f, w_g, w_o = self.w_hh[layer]
            for k in range(t):  # torch's gate order: input, forget, cell (g), output
                i = _sigmoid(gx[0][:, k] + F.matmul(h, w_i))
                f = _sigmoid(gx[1][:, k] + F.matmul(h, w_f))
                g = np.tanh(gx[2][:, k] + F.matmul(h, w_g))
                o = _sigmoid(gx[3][:, k] + F.matmul(h, w_o))
                if live is None or live[k].all():
                    c = f * c + i * g
                    h = o * np.tanh(c)
                else:  # items already ended keep their last state
                    on = live[k][:, None]
                    c = np.where(on, f * c + i * g, c)
                    h = np.where(on, o * np.tanh(c), h)
                if seq is not None:
                    seq[:, k] = h
            if seq is not None:
                x = seq
        raw = np.maximum(h @ self.lin_w + self.lin_b, 0.0)
        return (raw / np.maximum(np.linalg.norm(raw, axis=1, keepdims=True), 1e-9)).astype(np.float32)

    def embed(self, wav: np.ndarray, noise: np.ndarray | None = None) -> np.ndarray:
        """One embedding of a short stretch of 16 kHz float speech (a call word), run whole.

        ``noise``: audio around the call (speech in it allowed; callers hand over
        at least 0.1 s, and under one analysis window, 25 ms, it is ignored). Its
        background is subtracted from the word's mel power first (``denoise``):
        noise pulls every voice towards the same point, so that in pink noise at
        10 dB a real player's own takes fall below their threshold (median cosine
        0.83 -> 0.87 with it; at 5 dB 0.79 -> 0.84, EER 0.22 -> 0.12, the right
        speaker most alike in 40/41 takes instead of 32/41: scratch measurement
        on the real same-word set, see docs/voices.md).
        """
        return self.embed_many([wav], [noise])[0]

    def embed_many(self, wavs: Sequence[np.ndarray], noises: Sequence[np.ndarray | None] | None = None
                   ) -> list[np.ndarray]:
        """``embed`` of each stretch, run as one batch (``forward``'s ``lengths``): the same embeddings
        within 2e-7, for less CPU (a profile's 8-9 takes: 0.30 s instead of 0.51 on the slower machine)."""
        mels = []
        for k, wav in enumerate(wavs):
            x = np.asarray(wav, np.float32)
            gain = volume_gain(x)
            mel = mel_spectrogram(x if gain == 1.0 else (x * gain).astype(np.float32))
            noise = None if noises is None else noises[k]
            if noise is not None and len(noise) >= N_FFT:
                mel = denoise(mel, mel_spectrogram(np.asarray(noise, np.float32) * np.float32(gain)))
            mels.append(mel)
        if not mels:
            return []
        lengths = [len(m) for m in mels]
        batch = np.zeros((len(mels), max(lengths), N_MELS), np.float32)
        for k, m in enumerate(mels):
            batch[k, :len(m)] = m
        return list(self.forward(batch, lengths))

    def embed_looped(self, wavs: Sequence[np.ndarray]) -> list[np.ndarray]:
        """A second view of each short word: the word played twice in a row, from each of
        LOOP_SHIFTS, the embeddings averaged (unit length).

        The encoder's state after a 0.2-0.6 s word has seen too few frames to settle: the same
        word run twice tells voices apart better than once. Encoder alone, cosine line at the
        2%-stranger point (scratch measurements, docs/voices.md "The word played
        twice"; ``python3 -m bench.bench_voices looped``): real "the" (LibriSpeech, 4 players,
        with the speech sample) 91% -> 95% of own takes named; Speech Commands one-second words
        (8 other speakers, 5 words enrolled, text-independent) 50% -> 58% of 4 players' own words.
        """
        pieces = []
        for wav in wavs:
            x = np.asarray(wav, np.float32)
            pieces += [np.concatenate([x[s:], x[s:]]) if len(x) > s + N_FFT else np.concatenate([x, x])
                       for s in LOOP_SHIFTS]
        embs = self.embed_many(pieces)
        n = len(LOOP_SHIFTS)
        out = []
        for k in range(len(wavs)):
            m = np.mean(embs[k * n:(k + 1) * n], axis=0)
            out.append((m / max(float(np.linalg.norm(m)), 1e-9)).astype(np.float32))
        return out

    def embed_speech(self, wav: np.ndarray) -> tuple[np.ndarray, float]:
        """(unit embedding, seconds of voice used) of a player's free speech, for enrollment.

        One short call word carries little of a voice: five takes of it leave
        strangers saying the same word as alike as the player (real same-word
        set: 22 of 172 accepted). Some seconds of the player talking fix the
        voice itself. Its voiced parts (pauses cut: ``features.voiced_speech``)
        are embedded in SPEECH_WINDOW pieces, near the length of a call, so
        that it is compared on the same footing as one (whole utterances in
        1.6 s partials agreed less with calls: docs/voices.md).
        """
        from .features import voiced_speech

        x, _snr = voiced_speech(np.asarray(wav, np.float32))
        n, hop = int(SPEECH_WINDOW * RATE), int(SPEECH_WINDOW * RATE) // 2
        if len(x) < n:
            raise ValueError(f"need at least {SPEECH_WINDOW:g} s of voice, heard {len(x) / RATE:.1f} s")
        mean = np.mean(self.embed_many([x[s:s + n] for s in range(0, len(x) - n + 1, hop)]), axis=0)
        return (mean / np.linalg.norm(mean)).astype(np.float32), len(x) / RATE

    def embed_utterance(self, wav: np.ndarray, rate: float = 1.3, min_coverage: float = 0.75) -> np.ndarray:
        """Resemblyzer's ``embed_utterance`` for long speech: 1.6 s partials, their mean, normalised."""
        wav = normalize_volume(np.asarray(wav, np.float32))
        n_frames = int(np.ceil((len(wav) + 1) / HOP))
        step = max(1, int(round((RATE / rate) / HOP)))
        starts = list(range(0, max(1, n_frames - PARTIAL_FRAMES + step + 1), step))
        last = starts[-1] * HOP
        coverage = (len(wav) - last) / (PARTIAL_FRAMES * HOP)
        if coverage < min_coverage and len(starts) > 1:
            starts = starts[:-1]
        need = (starts[-1] + PARTIAL_FRAMES) * HOP
        if need >= len(wav):
            wav = np.pad(wav, (0, need - len(wav)))
        mel = mel_spectrogram(wav)
        batch = np.stack([mel[s:s + PARTIAL_FRAMES] for s in starts])
        mean = self.forward(batch).mean(axis=0)
        return (mean / np.linalg.norm(mean)).astype(np.float32)


@lru_cache(maxsize=2)
def _load_cached(path: str) -> Encoder:
    return Encoder.from_file(path)


def load_encoder(option: str | os.PathLike[str] | None = None, data: str | os.PathLike[str] | None = None,
                 required: bool = False) -> Encoder | None:
    """The installed encoder (option, $VOICESNAP_ENCODER_MODEL, the data dir), or None when there is none.

    ``required``: raise the models module's error (with the ways to get it) instead of None (as where the
    player named one: ``models.named``).
    """
    from .models import ModelError, find_model, named

    try:
        folder = find_model("encoder", option, data)
    except ModelError:
        if required or named("encoder", option):
            raise
        return None
    return _load_cached(str(Path(folder) / WEIGHTS_FILE))
