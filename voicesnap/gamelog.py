"""Game logs: every event as one JSON line, written as it happens, and replayed.

``GameLog`` appends each event and flushes at once, so a crash loses at most
the line being written; ``read`` names the file and line of anything it cannot
use, and with ``torn_tail=True`` skips a half-written last line (what a crash
leaves). ``replay`` rebuilds each game from its ``GameStarted`` record by
re-running flips and rulings through the rules, and checks that every event
the rules produce is the one logged: same log, same final table, or an error
naming the first line where they part.

Records that are not game events (calls, detections, session scores) may be
interleaved; replay passes over them.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator

from . import events, referee, session, variants  # noqa: F401  (register every game event type)
from .errors import UserError
from .rules import (
    RULINGS, Dealt, Eliminated, Flipped, Forfeit, Game, GameOver, GameStarted, Refreshed, RulesError,
)

__all__ = ["LogError", "GameLog", "read", "replay", "replay_games"]


class LogError(UserError):
    """A game log that cannot be read or does not replay; the message names the line."""


class GameLog:
    """Append-only JSON Lines writer; each ``write`` reaches the OS before it returns."""

    def __init__(self, path: str | os.PathLike[str], fsync: bool = False) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._fsync = fsync
        try:
            self._mend_tail()
            # the player's only, as the recording beside it is (a game's names and rulings are theirs)
            self._file = open(os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600), "a", encoding="utf-8")
        except OSError as exc:
            raise LogError(f"cannot write the game log {self.path}: {exc.strerror}; "
                           "choose a writable --data-dir") from exc

    def _mend_tail(self) -> None:
        """A last line a crash cut off would sit between the records before it and those appended now,
        and the log would read as damaged from there (``read`` forgives a torn line only at the end):
        drop it, as ``read(torn_tail=True)`` already did. A whole record that lacks only its newline
        is kept and ended."""
        try:
            f = open(self.path, "r+b")
        except FileNotFoundError:
            return
        with f:
            size = f.seek(0, os.SEEK_END)
            if size == 0:
                return
            f.seek(max(0, size - 1))
            if f.read(1) == b"\n":
                return
            f.seek(0)
            data = f.read()
            start = data.rfind(b"\n") + 1
            try:
                events.loads(data[start:].decode("utf-8"))
            except (events.EventError, UnicodeDecodeError):
                f.truncate(start)
            else:
                f.write(b"\n")
            f.flush()
            if self._fsync:
                os.fsync(f.fileno())

    def write(self, *records: Any) -> None:
        """Append events (or lists of events) and flush."""
        lines = []
        for rec in records:
            for ev in (rec if isinstance(rec, (list, tuple)) else (rec,)):
                lines.append(events.dumps(ev) + "\n")
        self._file.write("".join(lines))
        self._file.flush()
        if self._fsync:
            os.fsync(self._file.fileno())

    def close(self) -> None:
        if not self._file.closed:
            self._file.close()

    def __enter__(self) -> "GameLog":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


# Modules whose records a played session's log holds beside the engine's events.
RECORD_MODULES = ("tablelog", "playback")


def read(path: str | os.PathLike[str], torn_tail: bool = False,
         notice: Callable[[str], None] | None = None) -> list[tuple[int, Any]]:
    """(line number, event) for each line; LogError names the first bad line. ``notice`` hears that a
    torn last line was left out, so that a replay or resume says it starts short of where the game stopped."""
    # A played session's log also holds the table's own records (settings,
    # resumes) and the speaker's (speech start and end times): register them,
    # so that reading a log never depends on what the caller happened to import.
    import importlib

    for module in RECORD_MODULES:
        importlib.import_module(f"{__package__}.{module}")
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise LogError(f"no game log at {path}") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise LogError(f"cannot read the game log {path}: {exc}") from exc
    lines = text.split("\n")
    torn = lines[-1] != ""  # the file does not end with a newline: the last line may be cut off
    if not torn:
        lines.pop()
    out: list[tuple[int, Any]] = []
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            out.append((number, events.loads(line, where=f"{path}:{number}")))
        except events.EventError as exc:
            if torn and torn_tail and number == len(lines):
                if notice is not None:
                    notice(f"{path}: its last line ({number}) was cut off as it was written (the game stopped "
                           "mid-write); read up to the record before it")
                break
            raise LogError(f"{exc}; the log is damaged from line {number} on") from exc
    return out


def _numbered(source: str | os.PathLike[str] | Iterable[Any]) -> list[tuple[int, Any]]:
    if isinstance(source, (str, os.PathLike)):
        return read(source)
    return [(i, ev) for i, ev in enumerate(source, start=1)]


_ACTIONS = (Flipped, Refreshed)
_FOLLOWERS = (Eliminated, GameOver)


def replay_games(source: str | os.PathLike[str] | Iterable[Any]) -> Iterator[Game]:
    """Every game in a log (path or events), rebuilt and checked event by event."""
    records = [(n, ev) for n, ev in _numbered(source) if _is_game_event(ev)]
    game: Game | None = None
    i = 0
    while i < len(records):
        number, ev = records[i]
        if isinstance(ev, GameStarted):
            if game is not None:
                yield game
            try:
                game = variants.from_started(ev)
            except UserError as exc:
                raise LogError(f"line {number}: cannot rebuild the game: {exc}") from exc
            produced = list(game.events)
        elif game is None:
            raise LogError(f"line {number}: {type(ev).__name__} before any game-started record")
        else:
            try:
                if isinstance(ev, _ACTIONS):
                    produced = game.flip(ev.t)
                elif isinstance(ev, RULINGS) or isinstance(ev, Forfeit):
                    produced = game.apply(ev)
                else:
                    raise LogError(f"line {number}: {type(ev).__name__} does not follow from the line before")
            except (RulesError, IndexError, KeyError) as exc:
                raise LogError(f"line {number}: {type(ev).__name__} cannot happen here: {exc}") from exc
        for k, want in enumerate(produced):
            if i + k >= len(records):
                if isinstance(want, _FOLLOWERS) or k > 0:
                    break  # a log cut short after the action; the table is still right
                raise LogError(f"line {number}: log ends early")
            got_number, got = records[i + k]
            if got != want:
                raise LogError(
                    f"line {got_number}: the log says {events.dumps(got)} but the rules give "
                    f"{events.dumps(want)}"
                )
        i += max(len(produced), 1)
    if game is not None:
        yield game


def replay(source: str | os.PathLike[str] | Iterable[Any]) -> Game:
    """The last game in a log, rebuilt to its final state."""
    game = None
    for game in replay_games(source):
        pass
    if game is None:
        raise LogError("the log holds no game (no game-started record)")
    return game


def _is_game_event(ev: Any) -> bool:
    return isinstance(ev, (GameStarted, Dealt, *_ACTIONS, *RULINGS, Forfeit, *_FOLLOWERS))
