"""List the audio inputs and outputs PortAudio can open, and which ones are the defaults.

Pass a number or name from this list to --device in 'listen' and 'enroll', or to --input / --output in 'play'.
"""

from __future__ import annotations

import argparse
import json
import sys

from ..errors import UserError
from ..text import counted

NO_DEVICE_FIX = (
    "PortAudio sees no audio device. Plug in a microphone/headset, or start a sound server: "
    "on Linux install 'pulseaudio' (or pipewire-pulse) and 'libasound2-plugins' so PortAudio can "
    "reach it through ALSA, then run 'voicesnap devices' again"
)


def _device(value: str | None) -> int | str | None:
    if value is None:
        return None
    return int(value) if value.strip().isdigit() else value


def _pactl_short(kind: str) -> list[list[str]] | None:
    """The columns of each line of ``pactl list short KIND`` ("sources", "sinks"), or None without pactl
    or a server that answers: the name is column 1, a source's sample spec ("s16le 2ch 16000Hz") column 3."""
    import shutil
    import subprocess

    if shutil.which("pactl") is None:
        return None
    try:
        listed = subprocess.run(["pactl", "list", "short", kind], capture_output=True, text=True, timeout=5).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    return [line.split("\t") for line in listed.splitlines() if "\t" in line]


def route(value: str | None, kind: str) -> int | str | None:
    """A device option (play's --input/--output, listen's and enroll's --device) as PortAudio takes it
    (``kind`` "input" or "output").

    A PulseAudio source or sink name (what ``pactl list short sinks`` and the
    desktop's sound settings show) is no PortAudio device on Linux: Debian's
    PortAudio has no PulseAudio host API and sees only ALSA's "pulse" device.
    Such a name is routed through that device with PULSE_SINK/PULSE_SOURCE,
    which libpulse reads when the stream connects. Anything else is left for
    the device's opener to accept or explain.
    """
    device = _device(value)
    if not isinstance(device, str):
        return device
    try:
        import sounddevice as sd

        sd.query_devices(device, kind)
        return device  # PortAudio knows it
    except (ImportError, OSError, ValueError):
        pass
    listed = _pactl_short("sinks" if kind == "output" else "sources")
    if listed is None:
        return device
    try:
        sd.query_devices("pulse", kind)
    except (OSError, ValueError, NameError):
        return device
    if device not in [cols[1] for cols in listed]:
        return device
    import os

    os.environ["PULSE_SINK" if kind == "output" else "PULSE_SOURCE"] = device
    return "pulse"


def input_channels(routed: int | str | None) -> int | None:
    """How many channels the input ``route`` gave has, where that can be known: a sound-server source
    (PULSE_SOURCE, else the server's default source, from its sample spec), or a PortAudio device other
    than ALSA's "pulse"/"default" (those open any count, upmixing: a --channels entry past the source's own
    read exact silence, or, on a mono source, a copy of its one channel)."""
    import os
    import re
    import shutil

    source = None
    if routed in (None, "pulse", "default"):
        # the server's default source when none is named: a mono default mic was opened as two channels,
        # the server copied it into both, and every call on "Alice=0,Bob=1" was both players' (a tie)
        from ..pulse import _default_source, pactl_json

        source = os.environ.get("PULSE_SOURCE") or (_default_source(pactl_json) if shutil.which("pactl") else None)
    if source:
        for cols in _pactl_short("sources") or []:
            if len(cols) >= 4 and cols[1] == source:
                found = re.search(r"(\d+)ch", cols[3])
                return int(found.group(1)) if found else None
        return None
    if routed is None or routed in ("pulse", "default"):
        return None
    try:
        import sounddevice as sd

        return int(sd.query_devices(routed, "input")["max_input_channels"])
    except Exception:  # (no PortAudio, or no such device: the opener says so, with the fix)
        return None


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--json", action="store_true", help="print the device list as JSON")


def _query() -> tuple[list[dict], tuple[int, int], list[str]]:
    try:
        import sounddevice as sd
    except OSError as exc:
        raise UserError(f"the PortAudio library cannot be loaded ({exc}); on Debian/Ubuntu: "
                        "sudo apt-get install libportaudio2 (macOS: brew install portaudio)") from exc
    devices = [dict(d) for d in sd.query_devices()]
    default_in, default_out = sd.default.device
    apis = [a["name"] for a in sd.query_hostapis()]
    return devices, (int(default_in), int(default_out)), apis


def pulse_names(devices: list[dict]) -> dict[str, list[str]]:
    """The sound server's source and sink names, which ``route`` takes where PortAudio sees only ALSA's
    "pulse" device ({} without one or without pactl): the list showed no name a player could give."""
    if not any(d["name"] == "pulse" for d in devices):
        return {}
    names: dict[str, list[str]] = {}
    for kind in ("sources", "sinks"):
        listed = _pactl_short(kind)
        if listed is None:
            return {}
        names[kind] = [cols[1] for cols in listed]
    return names


def source_channels(names: list[str]) -> dict[str, int]:
    """Each sound-server source's own channel count (from its sample spec), for ``--channels``: the list
    showed only names, and ALSA's "pulse" device's "32 ch", so a table setting up a mic per player could not
    tell which input had how many mics."""
    import re

    counts: dict[str, int] = {}
    for cols in _pactl_short("sources") or []:
        found = re.search(r"(\d+)ch", cols[3]) if len(cols) >= 4 else None
        if found and cols[1] in names:
            counts[cols[1]] = int(found.group(1))
    return counts


def run(args: argparse.Namespace) -> int:
    devices, (default_in, default_out), apis = _query()
    inputs = [d for d in devices if d["max_input_channels"] > 0]
    outputs = [d for d in devices if d["max_output_channels"] > 0]
    pulse = pulse_names(devices)
    channels = source_channels(pulse.get("sources", []))
    if args.json:
        print(json.dumps({"devices": devices, "default_input": default_in, "default_output": default_out,
                          "host_apis": apis, "pulse_sources": pulse.get("sources", []),
                          "pulse_source_channels": channels,
                          "pulse_sinks": pulse.get("sinks", [])}, indent=2, default=str))
    else:
        for title, group, default, key in (("inputs", inputs, default_in, "max_input_channels"),
                                          ("outputs", outputs, default_out, "max_output_channels")):
            print(f"{title}:")
            if not group:
                print("  (none)")
            for d in group:
                mark = "*" if d["index"] == default else " "
                api = apis[d["hostapi"]] if 0 <= d["hostapi"] < len(apis) else "?"
                print(f"  {mark} {d['index']:>3}  {d['name']}  [{api}, {d[key]} ch, "
                      f"{int(d['default_samplerate'])} Hz]")
        for kind, title in (("sources", "sound server inputs"), ("sinks", "sound server outputs")):
            if pulse.get(kind):
                print(f"{title} (by name, through the 'pulse' device):")
                for name in pulse[kind]:
                    n = channels.get(name) if kind == "sources" else None
                    # (a channel's number, as play's --channels and enroll's --channel take it)
                    mics = "" if n is None else f"  [{counted(n, 'channel')}" + (
                        f", numbered 0 to {n - 1} for --channels]" if n > 1 else "]")
                    print(f"        {name}{mics}")
        if inputs or outputs:
            print("* = default; pick another by number or name: --input / --output in play, --device in listen "
                  "and enroll", file=sys.stderr)
    if not inputs and not outputs:
        raise UserError(NO_DEVICE_FIX)
    if not inputs:
        raise UserError("there is no audio input (microphone); connect one, or check that the sound "
                        "server exposes a source (pactl list short sources)")
    return 0
