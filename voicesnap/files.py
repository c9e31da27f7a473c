"""Where voicesnap keeps a player's data, and how it writes it without loss.

Everything a player saved (voice profiles, models, the speech cache, game
logs) lives under one data directory, chosen by ``--data-dir``, then the
``VOICESNAP_DATA_DIR`` environment variable, then the platform's user data
folder. Tests always set it, so they never touch a player's real profiles.
Files are written atomically: a crash leaves the old file or the new one,
never half of one.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import platformdirs

from .errors import UserError

DATA_DIR_ENV = "VOICESNAP_DATA_DIR"


def data_dir(option: str | os.PathLike[str] | None = None, create: bool = True) -> Path:
    """The data directory: option, then environment variable, then the OS default."""
    chosen = option or os.environ.get(DATA_DIR_ENV) or platformdirs.user_data_dir("voicesnap")
    path = Path(chosen).expanduser()
    where = "--data-dir" if option else DATA_DIR_ENV if os.environ.get(DATA_DIR_ENV) else "the data folder"
    if path.exists() and not path.is_dir():
        raise UserError(f"{where} {path} is a file, not a folder: give a folder for voicesnap's players, "
                        "models and games (it is made if missing)")
    if create:
        try:
            path.mkdir(parents=True, exist_ok=True, mode=0o700)
        except OSError as exc:
            raise UserError(f"{where} {path} cannot be made ({exc.strerror or exc}): give a folder you "
                            "can write to") from exc
    return path


def atomic_write_bytes(path: str | os.PathLike[str], data: bytes, mode: int = 0o600) -> Path:
    """Write ``data`` to ``path`` so that readers see the old or the new file, never a mix."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, target)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise
    try:  # make the rename itself durable
        dir_fd = os.open(target.parent, os.O_RDONLY)
        try:
            os.fsync(dir_fd)
        finally:
            os.close(dir_fd)
    except OSError:
        pass
    return target


def atomic_write_text(path: str | os.PathLike[str], text: str, mode: int = 0o600) -> Path:
    return atomic_write_bytes(path, text.encode("utf-8"), mode)


class AtomicSoundFile:
    """A 16-bit sound file written block by block under a temporary name beside ``path``
    and moved into place whole by ``finish``: recordings grow for a whole game, and a crash
    must leave no half-written file where a finished one is expected (the temporary one
    keeps what was heard). ``format``: a libsndfile major format ("WAV", "FLAC")."""

    def __init__(self, path: str | os.PathLike[str], rate: int, channels: int, format: str = "WAV") -> None:
        import soundfile as sf

        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{self.path.name}.", suffix=f".tmp.{format.lower()}",
                                   dir=self.path.parent)
        os.close(fd)
        self.tmp = Path(tmp)
        self._file = sf.SoundFile(tmp, "w", samplerate=rate, channels=channels, subtype="PCM_16", format=format)

    def write(self, block: object) -> None:
        self._file.write(block)

    def finish(self) -> Path:
        """Close the file and move it into place; returns ``path``."""
        self._file.close()
        os.replace(self.tmp, self.path)
        return self.path

    def discard(self) -> None:
        self._file.close()
        self.tmp.unlink(missing_ok=True)
