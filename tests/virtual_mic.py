"""A PulseAudio null sink made into a virtual microphone that behaves like a real one.

Two quirks of a null sink's monitor (PulseAudio 16.1, measured 2026-12-03), which .ci/pulse.sh
works around the same way for CI's default microphone:

- With nothing playing into the sink, its monitor delivers nothing, which stalls an open input
  stream: faint room noise (white, about -70 dBFS) is kept playing into it. Not digital silence:
  voicesnap takes seconds of exact zeros for a muted or vanished microphone.
- A record stream that connects to a monitor nobody else is recording waits 0.5-2 s for its first
  audio (14 of 18 processes' first PortAudio streams did; the timing tests failed on it): a keeper records
  the monitor at 20 ms for the sink's life, and the sink is handed over only once a new record
  stream gets audio within 0.15 s.
"""

from __future__ import annotations

import shutil
import subprocess
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

import pytest

RATE = 16000
FIRST_AUDIO_S = 0.15  # a new record stream on a warm monitor gets its first 20 ms within this
WARM_UP_S = 10.0


def pactl(*args: str, env: dict | None = None) -> str:
    return subprocess.run(["pactl", *args], env=env, capture_output=True, text=True, timeout=10,
                          check=True).stdout.strip()


def load_null_sink(sink: str, channels: int = 1, channel_map: str | None = None, env: dict | None = None) -> str:
    """A fresh null sink ``sink`` (one a killed run left is unloaded first); its module's index."""
    for line in pactl("list", "short", "modules", env=env).splitlines():
        if f"sink_name={sink} " in line + " ":
            subprocess.run(["pactl", "unload-module", line.split()[0]], env=env, capture_output=True, timeout=10)
    mapping = [f"channel_map={channel_map}"] if channel_map else []
    return pactl("load-module", "module-null-sink", f"sink_name={sink}", f"rate={RATE}", f"channels={channels}",
                 *mapping, env=env)


def _record(monitor: str, channels: int, env: dict | None, out: int | None) -> subprocess.Popen:
    return subprocess.Popen(["parec", f"--device={monitor}", "--raw", "--format=s16le", f"--rate={RATE}",
                             f"--channels={channels}", "--latency-msec=20"], env=env, stdout=out,
                            stderr=subprocess.DEVNULL)


def first_audio_s(monitor: str, channels: int = 1, env: dict | None = None, limit: float = 5.0) -> float:
    """Seconds until a new record stream on ``monitor`` delivers its first 20 ms (``limit`` if never)."""
    began = time.monotonic()
    probe = _record(monitor, channels, env, subprocess.PIPE)
    got: list[bytes] = []
    reader = threading.Thread(target=lambda: got.append(probe.stdout.read(RATE // 50 * 2 * channels)), daemon=True)
    reader.start()
    reader.join(timeout=limit)
    took = time.monotonic() - began if got and got[0] else limit
    probe.kill()
    probe.wait(timeout=5)
    return took


def warm(monitor: str, channels: int = 1, env: dict | None = None) -> None:
    """Wait until a new record stream on ``monitor`` (kept recorded by a keeper) gets audio at once."""
    deadline = time.monotonic() + WARM_UP_S
    tries = []
    while time.monotonic() < deadline:
        tries.append(first_audio_s(monitor, channels, env))
        if tries[-1] < FIRST_AUDIO_S:
            return
    pytest.fail(f"the virtual microphone {monitor} never delivered audio within {FIRST_AUDIO_S} s of a stream "
                f"opening (PulseAudio null-sink monitor; waits: {', '.join(f'{t:.2f}' for t in tries)} s)")


@contextmanager
def virtual_mic(sink: str, *, channels: int = 1, channel_map: str | None = None,
                env: dict | None = None) -> Iterator[str]:
    """A null sink ``sink`` with room noise in and a keeper on its monitor; yields the monitor's name."""
    for tool in ("pactl", "pacat", "parec", "sox"):
        if shutil.which(tool) is None:
            pytest.skip(f"{tool} is not installed (apt-get install pulseaudio-utils sox)")
    if subprocess.run(["pactl", "info"], env=env, capture_output=True, timeout=10).returncode != 0:
        pytest.skip("no PulseAudio server reachable (start it with: source .ci/pulse.sh)")
    module = load_null_sink(sink, channels, channel_map, env)
    noise = subprocess.Popen(["sox", "-q", "-n", "-t", "raw", "-r", str(RATE), "-c", str(channels), "-b", "16",
                              "-e", "signed-integer", "-", "synth", "whitenoise", "vol", "0.001"],
                             stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    writer = subprocess.Popen(["pacat", "--playback", f"--device={sink}", "--format=s16le", f"--rate={RATE}",
                               f"--channels={channels}", *([f"--channel-map={channel_map}"] if channel_map else []),
                               "--latency-msec=20"], stdin=noise.stdout, env=env, stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL)
    noise.stdout.close()  # pacat holds it now; sox ends when pacat does
    monitor = f"{sink}.monitor"
    keeper = _record(monitor, channels, env, subprocess.DEVNULL)
    try:
        warm(monitor, channels, env)
        yield monitor
    finally:
        for p in (keeper, writer, noise):
            p.kill()
            p.wait(timeout=5)
        subprocess.run(["pactl", "unload-module", module], env=env, capture_output=True, timeout=10)
