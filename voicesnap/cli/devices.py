"""List the audio inputs and outputs PortAudio can open, and which ones are the defaults.

Pass a number or name from this list to --device in 'listen' and 'enroll', or to --input / --output in 'play'.
"""

from __future__ import annotations

import argparse
import json
import sys

from ..errors import UserError

NO_DEVICE_FIX = (
    "PortAudio sees no audio device. Plug in a microphone/headset, or start a sound server: "
    "on Linux install 'pulseaudio' (or pipewire-pulse) and 'libasound2-plugins' so PortAudio can "
    "reach it through ALSA, then run 'voicesnap devices' again"
)


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


def run(args: argparse.Namespace) -> int:
    devices, (default_in, default_out), apis = _query()
    inputs = [d for d in devices if d["max_input_channels"] > 0]
    outputs = [d for d in devices if d["max_output_channels"] > 0]
    if args.json:
        print(json.dumps({"devices": devices, "default_input": default_in, "default_output": default_out,
                          "host_apis": apis}, indent=2, default=str))
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
        if inputs or outputs:
            print("* = default; pick another with --device NUMBER or --device NAME", file=sys.stderr)
    if not inputs and not outputs:
        raise UserError(NO_DEVICE_FIX)
    if not inputs:
        raise UserError("there is no audio input (microphone); connect one, or check that the sound "
                        "server exposes a source (pactl list short sources)")
    return 0
