"""Keyboard play: a key per player for each call, and a key per voice command.

Keys become the same ``Detection`` records the spotters emit (engine
"keyboard", onset = the clock when the key arrived), so the table has one
input path and the referee judges a key press and a shout alike. The key
layout is pure data (tested); only ``RawKeyboard`` touches the terminal.

Seats use keyboard columns so that players sitting side by side do not
collide: seat 1 has q (snap), a (snap pool), z (slap); seat 2 has w/s/x; and
so on up to seat 6 (y/h/n). Silent Snap's slam is the snap key.
"""

from __future__ import annotations

import os
import select
import sys
from dataclasses import dataclass
from typing import Any, Callable, Mapping, Sequence

from .errors import UserError
from .spotters import Detection
from .vocabulary import COMMAND_PREFIX, COMMANDS, SLAP, SNAP, SNAP_POOL

__all__ = ["KeyCall", "KeyCommand", "Keymap", "RawKeyboard", "SEAT_KEYS", "DEFAULT_COMMAND_KEYS"]

# seat -> (snap, snap pool, slap)
SEAT_KEYS: tuple[tuple[str, str, str], ...] = (
    ("q", "a", "z"),
    ("w", "s", "x"),
    ("e", "d", "c"),
    ("r", "f", "v"),
    ("t", "g", "b"),
    ("y", "h", "n"),
)

# Used when the announcer's command keymap is not available; same command names
# as voicesnap.vocabulary.COMMANDS.
DEFAULT_COMMAND_KEYS: Mapping[str, str] = {
    " ": "flip",
    "p": "pause",
    "o": "resume",
    "l": "repeat",
    "i": "status",
    "k": "score",
    "-": "slower",
    "+": "faster",
    ">": "louder",
    "<": "quieter",
    "?": "help",
    "\x1b": "end",  # Esc
}


@dataclass(frozen=True)
class KeyCall:
    player: str
    kind: str  # "snap", "snap pool" or "slap"


@dataclass(frozen=True)
class KeyCommand:
    name: str  # a key of vocabulary.COMMANDS


def announcer_command_keys() -> dict[str, str] | None:
    """The announcer's keymap (key -> command), if its module offers one."""
    try:
        from . import commands  # announcer engineer's module
    except Exception:
        return None
    for attr in ("KEYMAP", "KEYS", "DEFAULT_KEYMAP"):
        keys = getattr(commands, attr, None)
        if isinstance(keys, Mapping) and keys:
            first_key, first_value = next(iter(keys.items()))
            if first_key in COMMANDS and isinstance(first_value, str):  # command -> key
                return {str(v): str(k) for k, v in keys.items()}
            return {str(k): str(getattr(v, "name", v)) for k, v in keys.items()}
    return None


class Keymap:
    """Which key means what for a given table of players."""

    def __init__(
        self,
        players: Sequence[str],
        command_keys: Mapping[str, str] | None = None,
        snap_words: Mapping[str, str] | None = None,
        calls: Sequence[str] = (SNAP, SNAP_POOL, SLAP),
    ) -> None:
        """``snap_words``: a player's word for the snap key when it is not "snap"
        (Silent Snap's "slam", Animal Snap's own noise). ``calls``: which of each seat's three keys
        the variant has (the slap key only in Slapjack; Silent Snap's slam is the snap key alone):
        a key the game only ignores was listed, and a player pressed it for nothing."""
        if len(players) > len(SEAT_KEYS):
            raise UserError(f"keyboard play supports at most {len(SEAT_KEYS)} players, got {len(players)}")
        if command_keys is None:
            command_keys = announcer_command_keys() or DEFAULT_COMMAND_KEYS
        commands = dict(command_keys)
        unknown = sorted(set(commands.values()) - set(COMMANDS))
        if unknown:
            raise ValueError(f"command keymap names unknown commands {unknown}")
        self.keys: dict[str, KeyCall | KeyCommand] = {}
        for seat, name in enumerate(players):
            snap = (snap_words or {}).get(name, SNAP)
            for key, kind, call in zip(SEAT_KEYS[seat], (snap, SNAP_POOL, SLAP), (SNAP, SNAP_POOL, SLAP)):
                if call in calls:
                    self.keys[key] = KeyCall(name, kind)
        for key, command in commands.items():
            if key.lower() in self.keys or key in self.keys:
                raise ValueError(f"key {key!r} is both a player's call and the {command!r} command")
            self.keys[key] = KeyCommand(command)
        self.players = tuple(players)

    def lookup(self, key: str) -> KeyCall | KeyCommand | None:
        """What a key press means; letters are case-insensitive (Caps Lock)."""
        return self.keys.get(key) or self.keys.get(key.lower())

    def detection(self, key: str, onset: float) -> Detection | None:
        """A key press as the same record a spotter emits, at ``onset`` on the clock."""
        meaning = self.lookup(key)
        if meaning is None:
            return None
        if isinstance(meaning, KeyCall):
            return Detection(meaning.kind, onset, onset, 1.0, player=meaning.player,
                             score=1.0, engine="keyboard", detected_at=onset)
        return Detection(f"{COMMAND_PREFIX} {COMMANDS[meaning.name]}", onset, onset, 1.0,
                         engine="keyboard", detected_at=onset)

    def call_keys(self) -> str:
        """Each seat's call keys in words, for help said aloud: "Alice q for snap, a for snap pool; Bob w for
        snap, ...". (Said as "Alice q snap, a snap pool", the key a was heard as the word "a".)"""
        parts = []
        for seat, name in enumerate(self.players):
            keys = [f"{k} for {self.keys[k].kind}" for k in SEAT_KEYS[seat] if k in self.keys]  # type: ignore[union-attr]
            parts.append(f"{name} {', '.join(keys)}")
        return "; ".join(parts)

    def help_lines(self) -> list[str]:
        """One short line per seat and one for the commands (fits 80 columns)."""
        lines = []
        for seat, name in enumerate(self.players):
            keys = [f"{k}={self.keys[k].kind}" for k in SEAT_KEYS[seat] if k in self.keys]  # type: ignore[union-attr]
            lines.append(f"{name}: {' '.join(keys)}")
        shown = {" ": "space", "\x1b": "esc"}
        parts = [f"{shown.get(k, k)}={v.name}" for k, v in self.keys.items() if isinstance(v, KeyCommand)]
        line = ""
        for part in parts:
            if len(line) + len(part) + 1 > 78:
                lines.append(line)
                line = ""
            line = f"{line} {part}".strip()
        if line:
            lines.append(line)
        return lines


class RawKeyboard:
    """Single key presses from a terminal, without Enter and without echo.

    A context manager that puts stdin in cbreak mode and restores it on exit
    (also on Ctrl-C). When stdin is not a terminal, keys are read line by
    line, each character a press, so ``printf 'q\\n' | voicesnap play`` works.
    """

    def __init__(self, stream=None) -> None:
        self.stream = stream or sys.stdin
        self._saved: list[Any] | None = None  # termios attributes to restore

    def __enter__(self) -> "RawKeyboard":
        try:
            fd = self.stream.fileno()
        except (AttributeError, OSError, ValueError):
            return self
        if os.isatty(fd):
            import termios
            import tty

            self._saved = termios.tcgetattr(fd)
            tty.setcbreak(fd)
        return self

    def __exit__(self, *exc: object) -> None:
        if self._saved is not None:
            import termios

            termios.tcsetattr(self.stream.fileno(), termios.TCSADRAIN, self._saved)
            self._saved = None

    def read(self, timeout: float) -> str | None:
        """The next key, or None after ``timeout`` seconds; "" at end of input."""
        try:
            ready, _, _ = select.select([self.stream], [], [], timeout)
        except (OSError, ValueError):
            return ""
        if not ready:
            return None
        if self._saved is not None:
            return os.read(self.stream.fileno(), 1).decode("utf-8", "replace")
        return self.stream.read(1)


def pump_keys(
    keyboard: RawKeyboard,
    keymap: Keymap,
    clock: Callable[[], float],
    put: Callable[[Detection], None],
    stopped: Callable[[], bool],
) -> None:
    """Thread body: stamp each key with the clock the moment it arrives and hand it on."""
    while not stopped():
        key = keyboard.read(0.05)
        if key is None or key in ("\n", "\r"):
            continue
        if key == "":
            return
        found = keymap.detection(key, clock())
        if found is not None:
            put(found)
