"""The PulseAudio sound server: which source the game's microphone stream really records from.

When a PulseAudio source goes away (a USB microphone unplugged, a Bluetooth headset
out of range), the server moves every stream recording from it to another source and
the stream goes on delivering audio. If that other source is silent, ``LiveInput``'s
silence check pauses the game; if it is another live microphone (a laptop's own),
nothing in the audio says so, and the game would go on hearing the wrong room.
PortAudio cannot tell either (Debian's build reaches PulseAudio through ALSA's "pulse"
device), so this asks the server itself, with ``pactl``, which source the stream of
this process is on.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from dataclasses import dataclass
from typing import Callable

__all__ = ["ChannelPlan", "SourceWatch", "channel_plan", "pactl_json", "source_watch"]

Pactl = Callable[[list[str]], str]


def pactl_json(args: list[str]) -> str:
    """``pactl -f json ARGS``'s output ("" when the server or the tool does not answer)."""
    try:
        done = subprocess.run(["pactl", "-f", "json", *args], capture_output=True, text=True, timeout=3)
    except (OSError, subprocess.SubprocessError):
        return ""
    return done.stdout if done.returncode == 0 else ""


class SourceWatch:
    """Notices when the server moves this process's record stream to another source.

    ``named``: the source the player chose (``--input NAME``). Away from it the game
    pauses until it is back (reopening the stream fails while it is gone). With no
    name the player took the default, so a move is only said: the game goes on with
    the source the server chose. ``check`` costs one ``pactl`` call (about 5 ms of
    CPU); ``LiveInput`` calls it every few seconds from its reading thread, never
    from the audio callback.
    """

    def __init__(self, named: str | None = None, *, pid: int | None = None, pactl: Pactl = pactl_json) -> None:
        self.named = named
        self.pid = str(os.getpid() if pid is None else pid)
        self.pactl = pactl
        self.on: int | None = None  # the source index the stream was first seen on since the last reset
        self.on_name = ""  # and its name, read then: once the source is gone the server no longer says it

    def reset(self) -> None:
        """Forget where the stream was: call after (re)opening it."""
        self.on, self.on_name = None, ""

    def _names(self) -> dict[int, str]:
        try:
            return {int(s["index"]): str(s["name"]) for s in json.loads(self.pactl(["list", "short", "sources"]) or "[]")}
        except (ValueError, KeyError, TypeError):
            return {}

    def _ours(self) -> int | None:
        """The source index of this process's record stream (None: no stream of ours, or no answer)."""
        try:
            outputs = json.loads(self.pactl(["list", "source-outputs"]) or "[]")
            found = [int(o["source"]) for o in outputs
                     if str(o.get("properties", {}).get("application.process.id")) == self.pid]
        except (ValueError, KeyError, TypeError):
            return None
        return found[0] if found else None

    def _where(self, seen: int | None = None) -> tuple[int, dict[int, str]] | None:
        """The source index of our stream and the server's sources (None: no stream, or no answer).

        Read twice at most: between the two calls a vanishing source can leave the list while our
        stream is still listed on it (a CI run's message named 'source 10', the dying one, as
        where the game was moved), so an index the list lacks is asked again once."""
        where = self._read(seen)
        if where is not None and where[0] not in where[1]:
            where = self._read()
        return where

    def _read(self, seen: int | None = None) -> tuple[int, dict[int, str]] | None:
        """``seen``: our stream's source index as just read (not asked again)."""
        index = self._ours() if seen is None else seen
        if index is None:
            return None
        names = self._names()
        if not names:  # the server did not say which sources there are: no opinion
            return None
        return index, names

    def check(self) -> tuple[str, bool] | None:
        """None while the stream stays where it should; else (what to tell the players, pause?)."""
        if self.named is not None:
            where = self._where()
            if where is None:
                return None
            index, names = where
            if names.get(index) == self.named:
                self.on = index
                return None
            now = names.get(index, "another source")
            if self.named in names.values():
                why = f"the game's stream was moved off the microphone '{self.named}' to '{now}'"
            else:
                why = f"the microphone '{self.named}' went away and the sound server moved the game to '{now}'"
            return (f"{why}: the game is paused; plug it back in (or check 'voicesnap devices') and it "
                    "resumes by itself", True)
        seen = self._ours()
        if seen is None or seen == self.on:
            return None
        where = self._where(seen)
        if where is None or where[0] not in where[1]:  # moving: judged at the next check
            return None
        index, names = where
        if self.on is None:
            self.on, self.on_name = index, names[index]
            return None
        was, now = self.on_name, names[index]
        self.on, self.on_name = index, now
        gone = "went away" if was not in names.values() else "is no longer used"
        return (f"the microphone changed: '{was}' {gone} and the sound server now records the game from "
                f"'{now}'; if that is not the table's microphone, choose one with --input", False)


def source_watch(routed: object, named: str | None) -> SourceWatch | None:
    """A watch for play's microphone when it goes through PulseAudio (``routed``: what ``--input``
    became for PortAudio; ``named``: the PulseAudio source it names, or None for the default), else
    None: a PortAudio device of its own (hw:...) is not moved by any server."""
    if shutil.which("pactl") is None or not pactl_json(["info"]):
        return None
    if routed is None or routed in ("pulse", "default"):
        return SourceWatch(named if routed == "pulse" else None)
    return None


# The channel positions of a stream opened through ALSA's "pulse" device (Debian's PortAudio reaches
# the server only so), in order: a stream of n channels carries the first n (n = 2, 4, 5, 6 or 8; one
# channel is "mono", a mix of all). The server maps a source's channels onto them BY POSITION: a
# six-channel source in the server's own order (front-left, front-right, front-center, lfe, rear-left,
# rear-right) reached voicesnap with its third mic as channel 4, and a source of aux0..auxN (a
# multichannel interface's "Pro Audio" profile) as silence on every channel; 3 and 7 channels have no
# such order and are remixed (measured through PulseAudio 16 with null sinks: docs/table.md).
ALSA_ORDER = ("front-left", "front-right", "rear-left", "rear-right", "front-center", "lfe", "side-left",
              "side-right")
ALSA_COUNTS = (2, 4, 5, 6, 8)


@dataclass(frozen=True)
class ChannelPlan:
    """How to open a sound-server source so that channel k is the source's own k-th channel (the order
    ``pactl``, the desktop's sound settings and the interface itself number them in): open ``open``
    channels and take column ``order[k]`` as channel k."""

    source: str
    open: int
    order: tuple[int, ...]


def source_channel_map(name: str, pactl: Pactl = pactl_json) -> list[str] | None:
    """A source's channel positions, in its own order (None: no such source, or no answer)."""
    try:
        for s in json.loads(pactl(["list", "sources"]) or "[]"):
            if s.get("name") == name:
                return [c for c in str(s.get("channel_map", "")).split(",") if c]
    except (ValueError, TypeError, AttributeError):
        return None
    return None


def _default_source(pactl: Pactl) -> str | None:
    try:
        return str(json.loads(pactl(["info"]) or "{}").get("default_source_name") or "") or None
    except (ValueError, AttributeError):
        return None


def channel_plan(routed: object, needed: int, pactl: Pactl = pactl_json) -> ChannelPlan | None:
    """How to open the input ``routed`` (what ``devices.route`` made of --input) for ``needed`` channels,
    or None where no plan is needed or none can be known (one channel; a PortAudio device of its own such
    as hw:1, which no server remaps; no server that answers). A UserError, with the fix, where the
    source's channels cannot reach voicesnap one mic per channel."""
    if needed <= 1 or not (routed is None or routed in ("pulse", "default")):
        return None
    if shutil.which("pactl") is None:
        return None
    source = os.environ.get("PULSE_SOURCE") or _default_source(pactl)
    positions = source_channel_map(source, pactl) if source else None
    if not source or not positions:
        return None
    if needed > len(positions):
        return None  # (devices.input_channels refuses it, naming the channels there are)
    if any(p not in ALSA_ORDER for p in positions) or len(set(positions)) < len(positions):
        from .errors import UserError

        k = min(len(positions), len(ALSA_ORDER))  # (a copy holds 8 at most: the first 8)
        raise UserError(
            f"the sound server's input '{source}' names its channels {','.join(positions)}, and through the "
            f"server voicesnap can hear only channels named {','.join(ALSA_ORDER)} one by one (the others "
            "arrive mixed, or silent): make a copy of it with those names, once per session of the server, "
            f"`pactl load-module module-remap-source master={source} source_name={source}.voicesnap "
            f"master_channel_map={','.join(positions[:k])} channel_map={','.join(ALSA_ORDER[:k])} remix=no`, "
            f"and give --input {source}.voicesnap (its channel k is the input's k-th), or pick the interface "
            "itself from `voicesnap devices` (a hw: device)")
    # every channel of the source opened (none left to be remixed into the others), in ALSA's order
    stream = [ALSA_ORDER.index(p) for p in positions]
    count = max(max(stream) + 1, needed)
    opened = next(n for n in ALSA_COUNTS if n >= count)
    return ChannelPlan(source, opened, tuple(stream[:needed]))
