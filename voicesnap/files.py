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
import shutil
import tempfile
from collections.abc import Callable
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


def writable_folder(path: str | os.PathLike[str], what: str) -> Path:
    """``path``, made if missing, once a file could be written in it; else a UserError naming it and why.
    Asked before work a player would lose at the end (a live enrollment's takes are recorded for two
    minutes, then saved), not only when the file is written."""
    folder = Path(path)
    try:
        folder.mkdir(parents=True, exist_ok=True, mode=0o700)
        fd, probe = tempfile.mkstemp(prefix=".voicesnap-write-check.", dir=folder)
        os.close(fd)
        os.unlink(probe)
    except OSError as exc:
        raise UserError(f"{what} {folder} cannot be written ({exc.strerror or exc}): give a folder you can "
                        "write to (--data-dir or VOICESNAP_DATA_DIR), or fix its permissions") from exc
    return folder


def os_error_message(exc: OSError) -> str:
    """An OSError with a file name, in words a player can act on (the command line's last resort: every
    place that writes cannot be asked first)."""
    where = exc.filename if exc.filename2 is None else f"{exc.filename} -> {exc.filename2}"
    return (f"{where}: {exc.strerror or exc}; check that the folder exists and can be written "
            "(--data-dir, --record), and that the disk has room")


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


def swap_folder(new: str | os.PathLike[str], target: str | os.PathLike[str]) -> Path:
    """Put the finished folder ``new`` where ``target`` is; the old one is deleted only after the
    rename, so a failure part way leaves the old folder or the new one, never neither or half of one.
    ``new`` must be on ``target``'s file system (made beside it)."""
    new, target = Path(new), Path(target)
    old = new.with_name(f"{new.name}-old")
    if target.exists():
        os.replace(target, old)
    os.replace(new, target)
    shutil.rmtree(old, ignore_errors=True)
    return target


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
        # held until the file is finished: it tells recover_sound_files (replay, play --resume in another
        # terminal) that a game is still recording here, not a killed one's leftover (the kernel lets go
        # of it when the process dies)
        self._lock = fd
        _lock(fd)
        self.tmp = Path(tmp)
        self._file = sf.SoundFile(tmp, "w", samplerate=rate, channels=channels, subtype="PCM_16", format=format)

    def write(self, block: object) -> None:
        self._file.write(block)

    def finish(self) -> Path:
        """Close the file and move it into place; returns ``path``."""
        self._file.close()
        os.replace(self.tmp, self.path)
        self._unlock()
        return self.path

    def discard(self) -> None:
        self._file.close()
        self.tmp.unlink(missing_ok=True)
        self._unlock()

    def _unlock(self) -> None:
        if self._lock >= 0:
            os.close(self._lock)
            self._lock = -1


def _lock(fd: int, wait: bool = True) -> bool:
    """An exclusive lock on the open file ``fd``; without ``wait``, False at once if another holds it.
    (Where there is no flock, every file reads as free, as before.)"""
    try:
        import fcntl
    except ImportError:  # (not a POSIX system)
        return True
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | (0 if wait else fcntl.LOCK_NB))
    except BlockingIOError:
        return False
    except OSError:
        return True  # a file system without locks: as before
    return True


def still_recording(tmp: Path) -> bool:
    """Whether a live game is still writing the temporary recording ``tmp`` (AtomicSoundFile's lock)."""
    try:
        fd = os.open(tmp, os.O_RDONLY)
    except OSError:
        return False
    try:
        return not _lock(fd, wait=False)
    finally:
        os.close(fd)


def recordings_in_progress(folder: str | os.PathLike[str]) -> list[str]:
    """The recordings (their final names: "audio.wav") a game still running is writing in ``folder``."""
    return sorted(_final_name(tmp) for tmp in Path(folder).glob(".*.tmp.*") if still_recording(tmp))


def _final_name(tmp: Path) -> str:
    """The name AtomicSoundFile's temporary ``tmp`` takes when finished: ".audio.wav.x1y2.tmp.wav" -> "audio.wav"."""
    return tmp.name[1:].rsplit(".", 3)[0]


def recover_sound_files(folder: str | os.PathLike[str], tell: Callable[[str], None] | None = None) -> list[Path]:
    """Move into place the recordings a crash left under their temporary names (AtomicSoundFile):
    ``.audio.wav.x1y2.tmp.wav`` becomes ``audio.wav`` when there is none, so a killed game's audio
    can still be replayed. libsndfile reads such a file to its end (its header's sizes were never
    written); it is copied whole under the right header. Returns the files recovered; ``tell``
    is told of each. A recording a game still running is writing is left alone: replay in a second
    terminal took it from under the game, which then lost its audio and ended in an error."""
    import soundfile as sf

    got: list[Path] = []
    for tmp in sorted(Path(folder).glob(".*.tmp.*"), key=lambda p: p.stat().st_mtime):
        name = _final_name(tmp)
        target = tmp.with_name(name)
        kind = tmp.suffix[1:].upper()
        if target.exists() or kind not in ("WAV", "FLAC") or still_recording(tmp):
            continue
        try:
            if kind == "WAV":
                _wav_sizes_to_end(tmp)
            with sf.SoundFile(tmp) as src:
                out = AtomicSoundFile(target, src.samplerate, src.channels, kind)
                kept = 0
                try:
                    while True:
                        try:
                            block = src.read(16384, dtype="int16", always_2d=True)
                        except (RuntimeError, sf.LibsndfileError):
                            break  # an unfinished FLAC reads up to its last whole frame, then fails
                        out.write(block)
                        kept += len(block)
                        if len(block) < 16384:
                            break
                except BaseException:
                    out.discard()
                    raise
            if not kept:
                out.discard()
                continue
            out.finish()
        except (RuntimeError, OSError, sf.LibsndfileError):
            continue  # not readable: left as it is
        tmp.unlink(missing_ok=True)
        got.append(target)
        if tell is not None:
            tell(f"(recovered {target.name}: the game was stopped before its recording was closed)")
    return got


def _wav_sizes_to_end(path: Path) -> None:
    """Set a WAV file's RIFF and data sizes to what the file holds (a writer killed before it closed
    the file never wrote them; libsndfile then reads none, or the first block only)."""
    import struct

    with open(path, "r+b") as f:
        head = f.read(4096)
        at = head.find(b"data", 12)
        if head[:4] != b"RIFF" or head[8:12] != b"WAVE" or at < 0:
            return
        fmt = head.find(b"fmt ", 12)
        align = struct.unpack_from("<H", head, fmt + 20)[0] if 0 <= fmt < at else 2
        size = f.seek(0, os.SEEK_END)
        data = (size - at - 8) // max(1, align) * max(1, align)
        f.seek(4)
        f.write(struct.pack("<I", at + 8 + data - 8))
        f.seek(at + 4)
        f.write(struct.pack("<I", data))
