"""The live microphone path through a real PortAudio device.

CI provides a virtual microphone (.ci/pulse.sh: a PulseAudio null sink whose
monitor is the default source). A fixture WAV is played into that sink with
``paplay`` once the input stream is open, captured through ``MicSource``, and
must come back intact (correlation) on a gap-free clock.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from pathlib import Path

import numpy as np
import pytest

from voicesnap.audio import MicSource, RecordingTap, read_wav, write_wav

pytestmark = pytest.mark.audio_device

FIXTURE = Path(__file__).parent / "fixtures" / "audio" / "corpus" / "clean_alice.wav"


def _mic_sink() -> str:
    sink = os.environ.get("VOICESNAP_TEST_MIC_SINK")
    if not sink:
        pytest.skip("no virtual microphone: VOICESNAP_TEST_MIC_SINK is unset (source .ci/pulse.sh first)")
    for tool in ("paplay", "pactl"):
        if shutil.which(tool) is None:
            pytest.skip(f"{tool} is not installed (apt-get install pulseaudio-utils)")
    if subprocess.run(["pactl", "info"], capture_output=True).returncode != 0:
        pytest.skip("no PulseAudio server reachable (start it with: source .ci/pulse.sh)")
    try:
        import sounddevice as sd
    except OSError as exc:
        pytest.skip(f"PortAudio library missing: {exc}")
    if not any(d["max_input_channels"] > 0 for d in sd.query_devices()):
        pytest.skip("PortAudio lists no input device (needs libasound2-plugins for the ALSA pulse device)")
    return sink


def _best_lag(captured: np.ndarray, played: np.ndarray) -> tuple[int, float]:
    """Lag of ``played`` inside ``captured`` and the normalised correlation there."""
    c = captured.astype(np.float64)
    p = played.astype(np.float64)
    n = len(c) + len(p)
    size = 1 << (n - 1).bit_length()
    xc = np.fft.irfft(np.fft.rfft(c, size) * np.conj(np.fft.rfft(p, size)), size)[: len(c) - len(p) + 1]
    lag = int(np.argmax(xc))
    seg = c[lag : lag + len(p)]
    corr = float(np.dot(seg, p) / (np.linalg.norm(seg) * np.linalg.norm(p) + 1e-9))
    return lag, corr


def test_mic_captures_played_wav_on_a_consecutive_clock(tmp_path: Path) -> None:
    sink = _mic_sink()
    samples, rate = read_wav(FIXTURE, expect_rate=16000)
    played = samples[: int(2.0 * rate), 0]  # 2 s holding one "snap"
    wav = write_wav(tmp_path / "played.wav", played, rate)
    recording = tmp_path / "heard.wav"

    chunks = []
    with MicSource(rate=16000, channels=1, block_frames=320) as mic, RecordingTap(recording) as rec:
        deadline = time.monotonic() + 0.3  # stream open and running before playback starts
        while time.monotonic() < deadline:
            chunk = mic.read(timeout=1.0)
            assert chunk is not None, "the microphone delivered nothing for 1 s"
            chunks.append(chunk)
            rec.write(chunk)
        player = subprocess.Popen(["paplay", f"--device={sink}", str(wav)])
        try:
            end = None
            while True:
                chunk = mic.read(timeout=1.0)
                assert chunk is not None, "the microphone stalled during playback"
                chunks.append(chunk)
                rec.write(chunk)
                if end is None and player.poll() is not None:
                    end = time.monotonic() + 0.5
                if end is not None and time.monotonic() > end:
                    break
                assert time.monotonic() < deadline + 15, "playback never finished"
        finally:
            if player.poll() is None:
                player.kill()
        stats = mic.stats()

    # The clock: every chunk starts where the previous one ended, nothing dropped.
    assert chunks[0].start == 0
    assert all(a.end == b.start for a, b in zip(chunks, chunks[1:]))
    assert stats["dropped_frames"] == 0 and stats["frames"] >= chunks[-1].end

    captured = np.concatenate([c.samples[:, 0] for c in chunks])
    lag, corr = _best_lag(captured, played)
    assert corr > 0.9, f"captured audio does not match the WAV (correlation {corr:.3f})"
    # The word lands at a real position on the clock, after playback began.
    assert lag >= int(0.25 * rate)

    # The recording tap kept exactly the frames heard.
    heard, heard_rate = read_wav(recording)
    assert heard_rate == 16000
    assert np.array_equal(heard[:, 0], captured)


def test_devices_lists_the_virtual_microphone(capsys: pytest.CaptureFixture[str]) -> None:
    _mic_sink()
    from voicesnap.cli import main

    assert main(["devices"]) == 0
    out = capsys.readouterr().out
    inputs = out.split("outputs:")[0]
    assert "*" in inputs and "(none)" not in inputs


def test_devices_without_any_device_says_how_to_get_one(tmp_path: Path) -> None:
    import subprocess
    import sys

    env = {k: v for k, v in os.environ.items() if k not in ("PULSE_SERVER", "XDG_RUNTIME_DIR")}
    env["PULSE_SERVER"] = f"unix:{tmp_path}/no-server"  # the sound server is gone
    proc = subprocess.run([sys.executable, "-m", "voicesnap", "devices"], env=env,
                          capture_output=True, text=True, timeout=60)
    if proc.returncode == 0:
        pytest.skip("this machine has audio hardware PortAudio can open without a sound server")
    assert proc.returncode == 2
    assert "PortAudio sees no audio device" in proc.stderr and "pulseaudio" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_listen_live_hears_a_call_through_the_microphone(tmp_path: Path) -> None:
    """End to end: paplay -> virtual mic -> PortAudio -> MicSource -> Vosk -> `voicesnap listen`."""
    import sys

    sink = _mic_sink()
    from voicesnap import models

    try:
        model = models.find_model("en", data=tmp_path / "data")
    except models.ModelError:
        pytest.skip("no English Vosk model (VOICESNAP_VOSK_MODEL unset; .ci/run sets it)")
    samples, rate = read_wav(FIXTURE, expect_rate=16000)
    wav = write_wav(tmp_path / "call.wav", samples[: int(1.8 * rate), 0], rate)  # one "snap" at 0.8 s
    env = dict(os.environ, VOICESNAP_DATA_DIR=str(tmp_path / "data"))
    listen = subprocess.Popen(
        [sys.executable, "-m", "voicesnap", "listen", "--seconds", "4", "--no-pool", "--model", str(model)],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert listen.stderr is not None
        banner = listen.stderr.readline()  # printed once the stream is open
        assert "listening on the microphone" in banner, banner
        subprocess.run(["paplay", f"--device={sink}", str(wav)], check=True, timeout=20)
        out, err = listen.communicate(timeout=30)
    finally:
        if listen.poll() is None:
            listen.kill()
    assert listen.returncode == 0, err
    heard = [line.split()[0] for line in out.splitlines()]
    assert heard == ["snap"], out
    onset = float(out.split("onset")[1].split()[0])
    # The word is 0.8 s into the WAV, which started after the stream opened: on the
    # stream's own clock its onset is at least 0.8 s (less the 20 ms onset tolerance).
    assert 0.78 <= onset < 4.0


PULSE_ORDER_6 = "front-left,front-right,front-center,lfe,rear-left,rear-right"  # the server's own 5.1 order


def _loudest_channels(monitor: str, sink: str, channel_map: str, n: int, columns: tuple[int, ...],
                      tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """A tone on each of ``columns`` of the sink in turn, heard through play's own way of opening
    the source (``route``, ``channel_plan``, ``MicSource``): the loudest channel during each."""
    import soundfile as sf

    from voicesnap.cli.devices import route
    from voicesnap.pulse import channel_plan

    # route() names the source in PULSE_SOURCE, as play's --input does: set here first so that the test's
    # end restores it (a later test in this process opened the default mic on this removed sink and failed)
    monkeypatch.setenv("PULSE_SOURCE", monitor)
    routed = route(monitor, "input")
    plan = channel_plan(routed, n)
    rate, part, gap = 16000, 8000, 4000
    tone = 0.3 * np.sin(2 * np.pi * 440 * np.arange(part) / rate)
    clip = np.zeros(((part + gap) * len(columns), len(channel_map.split(","))), np.float32)  # the sink's channels
    for i, c in enumerate(columns):
        clip[i * (part + gap): i * (part + gap) + part, c] = tone
    sf.write(tmp_path / "tones.wav", clip, rate)
    mic = MicSource(device=routed, channels=n, plan=plan).open()
    chunks = []
    try:
        time.sleep(0.2)
        subprocess.run(["paplay", f"--device={sink}", f"--channel-map={channel_map}", str(tmp_path / "tones.wav")],
                       check=True, timeout=20)
        time.sleep(0.3)
        end = mic.position  # (the room noise keeps the stream going: read what was captured up to now)
        while (chunk := mic.read(timeout=0.5)) is not None and chunk.start < end:
            chunks.append(chunk.samples.astype(np.float64))
    finally:
        mic.close()
    heard = np.concatenate(chunks)
    loud = np.sqrt(np.mean(heard[: len(heard) // 320 * 320].reshape(-1, 320, n) ** 2, axis=1))  # 20 ms frames
    frames = np.flatnonzero(loud.max(axis=1) > 1000)
    runs = np.split(frames, np.flatnonzero(np.diff(frames) > 5) + 1)  # one run of loud frames per tone
    return [int(np.argmax(loud[r].mean(axis=0))) for r in runs if len(r) > 10]


def test_a_six_mic_source_in_the_servers_own_order_reaches_each_mic_on_its_own_channel(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Through ALSA's pulse device a stream's channels are ALSA's positions: the source's third mic
    (front-center) arrived as channel 4 and was named to the fifth player (a QA host's 6-mic evening)."""
    from virtual_mic import virtual_mic

    _mic_sink()
    with virtual_mic("vs_six_mics", channels=6, channel_map=PULSE_ORDER_6) as monitor:
        got = _loudest_channels(monitor, "vs_six_mics", PULSE_ORDER_6, 6, (2, 4, 3), tmp_path, monkeypatch)
    assert got == [2, 4, 3]


def test_an_aux_channel_source_is_refused_with_the_copy_that_fixes_it(tmp_path: Path,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """A multichannel interface's "Pro Audio" profile names its inputs aux0..auxN: through ALSA's pulse
    device every channel of a stream of 2 or more read silence, and the game heard nobody."""
    import shlex

    from virtual_mic import virtual_mic

    from voicesnap.errors import UserError
    from voicesnap.pulse import channel_plan

    _mic_sink()
    aux = "aux0,aux1,aux2,aux3"
    with virtual_mic("vs_aux_mics", channels=4, channel_map=aux) as monitor:
        monkeypatch.setenv("PULSE_SOURCE", monitor)
        with pytest.raises(UserError) as refused:
            channel_plan("pulse", 3)
        text = str(refused.value)
        assert "aux0,aux1,aux2,aux3" in text and f"--input {monitor}.voicesnap" in text, text
        command = shlex.split(text.split("`")[1])  # the fix, as given
        module = subprocess.run(command, capture_output=True, text=True, timeout=10, check=True).stdout.strip()
        try:
            got = _loudest_channels(f"{monitor}.voicesnap", "vs_aux_mics", aux, 3, (1, 2, 0), tmp_path, monkeypatch)
        finally:
            subprocess.run(["pactl", "unload-module", module], capture_output=True, timeout=10)
    assert got == [1, 2, 0]
