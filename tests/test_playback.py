"""The output mixer's scheduling, the clock mapping, and the no-speaker message."""

from __future__ import annotations

import contextlib
import os
import random
import sys
import tempfile
from collections.abc import Iterator
from types import SimpleNamespace

import numpy as np
import pytest
import soundfile as sf

from voicesnap.playback import (
    AudioOutputError, ClockMap, DevicePlayback, Mixer, SpeechEnded, SpeechStarted, VirtualPlayback,
)
from voicesnap.speech import NoSpeechEngine, SpeechCache


def _tone(n: int, value: int) -> np.ndarray:
    return np.full(n, value, dtype=np.int16)


def _drain(mixer: Mixer) -> list[tuple[str, int, int]]:
    out = [(r.kind, r.id, r.frame) for r in mixer.reports]
    mixer.reports.clear()
    return out


def test_clips_play_back_to_back_with_exact_start_frames():
    m = Mixer(16000)
    m.enqueue(1, _tone(300, 1000))
    m.enqueue(2, _tone(200, 2000))
    out = np.zeros(1024, dtype=np.int16)
    m.fill(out[:256])
    m.fill(out[256:512])
    m.fill(out[512:])
    assert _drain(m) == [("started", 1, 0), ("finished", 1, 300), ("started", 2, 300), ("finished", 2, 500)]
    assert (out[:300] == 1000).all() and (out[300:500] == 2000).all() and (out[500:] == 0).all()
    assert not m.busy


def test_cancel_cuts_the_playing_clip_with_a_short_fade_and_the_next_starts_at_once():
    m = Mixer(16000, fade=0.004)
    m.enqueue(1, _tone(16000, 10000))
    out = np.zeros(256, dtype=np.int16)
    m.fill(out)
    m.cancel([1])
    m.enqueue(2, _tone(1000, 3000))
    m.fill(out)
    assert _drain(m) == [("started", 1, 0), ("cut", 1, 256), ("started", 2, 256)]
    fade = 64  # 4 ms at 16 kHz
    # clip 2 from the cut's first frame, plus clip 1's tail ramping down over 4 ms
    assert out[0] == 3000 + 10000 and out[fade] == 3000 and (out[fade:] == 3000).all()
    assert np.all(np.diff(out[:fade].astype(int)) <= 0)


def test_cancel_of_a_waiting_clip_drops_it_unplayed():
    m = Mixer(16000)
    m.enqueue(1, _tone(100, 1))
    m.enqueue(2, _tone(100, 2))
    m.enqueue(3, _tone(100, 3))
    m.cancel([2])
    out = np.zeros(400, dtype=np.int16)
    m.fill(out)
    kinds = _drain(m)
    assert ("dropped", 2, 0) in kinds and not any(k == "started" and i == 2 for k, i, _ in kinds)
    assert (out[:100] == 1).all() and (out[100:200] == 3).all()


def test_fill_writes_float32_and_multichannel_buffers():
    m = Mixer(48000)
    m.enqueue(1, _tone(10, 16384))
    out = np.zeros((16, 2), dtype=np.float32)
    m.fill(out)
    assert np.allclose(out[:10], 0.5) and np.allclose(out[10:], 0.0)


def test_virtual_playback_reports_start_times_on_the_input_clock(tmp_path):
    try:
        clip = SpeechCache(None, rate=16000).get("Eight")
    except NoSpeechEngine:
        pytest.skip("espeak-ng is not installed")
    pb = VirtualPlayback(16000, start=10.0, block=160, record=True)
    pb.advance_to(10.5)
    pb.play(7, "Eight", clip.samples)
    pb.advance_to(12.0)
    events = pb.poll()
    started = [e for e in events if isinstance(e, SpeechStarted)]
    ended = [e for e in events if isinstance(e, SpeechEnded)]
    assert started == [SpeechStarted(7, "Eight", 10.5)]
    assert ended[0].completed and ended[0].t == pytest.approx(10.5 + clip.duration, abs=1e-9)
    # the recording (what a speaker would have played) holds the clip at that frame
    path = tmp_path / "heard.wav"
    sf.write(path, pb.recording(), 16000, subtype="PCM_16")
    heard, _ = sf.read(path, dtype="int16")
    at = int(0.5 * 16000)
    assert np.array_equal(heard[at : at + len(clip.samples)], clip.samples)
    assert not heard[:at].any()


def test_clock_map_with_exact_anchors():
    cm = ClockMap()
    for k in range(10):  # input callbacks: ADC time of each block's first frame
        cm.observe(1000.0 + 0.02 * k, 5.0 + 0.02 * k)
    assert cm.to_clock(1003.25) == pytest.approx(8.25, abs=1e-9)


def test_clock_map_envelope_removes_polling_lag():
    # Polled anchors lag by 0..one 20 ms block; the envelope converges on the truth.
    rng = random.Random(3)
    true_offset = -1234.5
    cm = ClockMap(window=64)
    for k in range(64):
        pa = 2000.0 + 0.1 * k
        lag = rng.uniform(0.0, 0.02)
        cm.observe(pa + lag, pa + true_offset)
    assert cm.offset == pytest.approx(true_offset, abs=0.002)
    assert cm.offset <= true_offset + 1e-12  # never ahead of the truth


def test_no_anchor_is_taken_before_the_input_stream_delivers_its_first_frames():
    """An input stream that waits 0.6 s for its first audio: the polls before it must not anchor the map
    (each would put the speaker's sounds up to 0.6 s late on the microphone's clock)."""
    from voicesnap.playback import anchor_from_input

    stream = SimpleNamespace(time=0.0, latency=0.04)
    cm = ClockMap()
    opened, first_audio, offset = 500.0, 500.6, 30  # the reopened mic's position starts at 30 s of earlier input
    for k in range(100):  # polls every 10 ms from the open; 20 ms blocks from 0.6 s on, each one latency late
        stream.time = opened + 0.01 * k
        delivered = max(0, int((stream.time - stream.latency - first_audio) / 0.02)) * 320
        anchor_from_input(cm, stream, offset * 16000 + delivered, 16000, delivered=delivered)
    truth = offset - first_audio  # input clock = stream time + truth
    assert cm.offset == pytest.approx(truth, abs=0.025)  # within the polling lag of one block
    assert cm.offset <= truth + 1e-9
    early = ClockMap()  # a map polled only before the first frames has no anchor at all
    anchor_from_input(early, stream, offset * 16000, 16000, delivered=0)
    assert not early.ready


def test_find_onset_locates_a_probe_in_noise_and_refuses_silence():
    from voicesnap.playback import find_onset

    rng = np.random.default_rng(1)
    probe = (rng.standard_normal(800) * 4000).astype(np.int16)
    rec = (rng.standard_normal(16000) * 300).astype(np.int16)
    rec[5123 : 5123 + 800] += probe
    assert find_onset(rec, probe, 16000, start=16000) == pytest.approx((16000 + 5123) / 16000)
    assert find_onset(np.zeros(16000, np.int16), probe, 16000) is None
    assert find_onset((rng.standard_normal(16000) * 300).astype(np.int16), probe, 16000) is None


def test_calibration_is_the_median_of_recent_probes():
    cm = ClockMap(offset=-100.0)
    assert cm.calibrate(5.0, 5.040) == pytest.approx(0.040)
    cm.calibrate(6.0, 6.038)
    cm.calibrate(7.0, 7.500)  # one probe drowned out by a shout
    assert cm.correction == pytest.approx(0.040)
    assert cm.to_clock(200.0) == pytest.approx(100.040)


def test_device_playback_maps_dac_times_onto_the_input_clock():
    # The PortAudio callback is driven by hand here (what sounddevice calls):
    # a clip starting 100 frames into a buffer whose DAC time is 50.0 s is
    # heard at 50.0 + 100/48000 s of stream time, i.e. that minus the offset
    # on the input clock.
    cm = ClockMap(offset=-40.0)  # input clock = stream time - 40 s
    pb = DevicePlayback(rate=48000, clock_map=cm)
    buf = np.zeros((256, 1), dtype=np.int16)
    pb._callback(buf[:100], 100, SimpleNamespace(outputBufferDacTime=50.0), None)
    pb.play(1, "Eight", _tone(480, 100))
    pb._callback(buf, 256, SimpleNamespace(outputBufferDacTime=50.0 + 100 / 48000), None)
    pb._callback(buf, 256, SimpleNamespace(outputBufferDacTime=50.0 + 356 / 48000), None)
    started, ended = pb.poll()
    assert started == SpeechStarted(1, "Eight", pytest.approx(10.0 + 100 / 48000, abs=1e-9))
    assert ended.t == pytest.approx(10.0 + 580 / 48000, abs=1e-9) and ended.completed


def test_no_audio_output_is_a_clear_message():
    with pytest.raises(AudioOutputError) as err:
        DevicePlayback(device="no such speaker 1234").open()
    message = str(err.value)
    assert "no audio output" in message and "voicesnap devices" in message
    # the fix names the option of the command the player ran (play's is --output)
    assert "pick one with --output," in message and "--output-device" not in message


# --- a real output stream, heard by a real input stream ------------------------------


def _virtual_devices_or_skip() -> str:
    import os
    import subprocess

    sink = os.environ.get("VOICESNAP_TEST_MIC_SINK")
    if not sink:
        pytest.skip("no virtual microphone sink (VOICESNAP_TEST_MIC_SINK; .ci/pulse.sh sets it up)")
    if subprocess.run(["pactl", "info"], capture_output=True).returncode != 0:
        pytest.skip("PulseAudio is not running (.ci/pulse.sh starts it)")
    return sink


def _loopback(clips: list[np.ndarray], texts: tuple[str, ...]) -> dict:
    """Play ``clips`` 1.5 s apart into the virtual microphone (PULSE_SINK set by the caller) while
    recording it; what was heard, the mapped SpeechStarted events, and how the devices behaved."""
    import threading
    import time

    from voicesnap.audio import MicSource
    from voicesnap.playback import anchor_from_input

    cm = ClockMap()
    chunks = []
    with _alsa_log() as alsa, MicSource(rate=16000, block_frames=320) as mic:
        stop = threading.Event()

        def reader() -> None:
            while not stop.is_set():
                c = mic.read(timeout=0.2)
                if c is not None:
                    chunks.append(c)

        th = threading.Thread(target=reader, daemon=True)
        th.start()
        pb = DevicePlayback(rate=48000, clock_map=cm).open()
        starts: list[SpeechStarted] = []
        try:
            def wait(seconds: float) -> None:
                end = time.monotonic() + seconds
                while time.monotonic() < end:
                    anchor_from_input(cm, mic._stream, mic.position, 16000)
                    starts.extend(e for e in pb.poll() if isinstance(e, SpeechStarted))
                    time.sleep(0.01)

            wait(1.0)  # let the output settle (first buffers may underrun)
            settled, began, at = pb.underflows, time.monotonic(), mic.position
            alsa_settled = os.lseek(2, 0, os.SEEK_CUR)  # what ALSA said so far (into _alsa_log's file)
            for i, clip in enumerate(clips):
                pb.play(i, texts[i], clip)
                wait(1.5)
            pace = (mic.position - at) / 16000 / (time.monotonic() - began)  # s of input per s
            underflows = pb.underflows - settled
        finally:
            pb.close()
            stop.set()
            th.join()
        overflows = mic.overflows
    rec = np.concatenate([c.samples[:, 0] for c in chunks])
    said = alsa["text"][alsa_settled:].decode(errors="replace")
    xruns = sum(said.count(word) for word in ("underrun occurred", "overrun occurred"))
    return {"clock_map": cm, "starts": sorted(starts, key=lambda ev: ev.id), "rec": rec, "base": chunks[0].start,
            "underflows": underflows + xruns, "overflows": overflows, "pace": pace}


@contextlib.contextmanager
def _alsa_log() -> Iterator[dict]:
    """What ALSA wrote to stderr meanwhile (bytes in ``["text"]``, after the block), passed on to stderr too.

    ALSA reports an xrun it recovered from ("snd_pcm_recover) underrun occurred") on stderr even when
    PortAudio does not raise its underflow flag for it (a CI run on 2026-12-05: the last clip 10 ms
    later than the rest, and only that line to tell why)."""
    sys.stderr.flush()
    saved = os.dup(2)
    with tempfile.TemporaryFile() as log:
        os.dup2(log.fileno(), 2)
        found: dict = {"text": b""}
        try:
            yield found
        finally:
            sys.stderr.flush()
            os.dup2(saved, 2)
            os.close(saved)
            log.seek(0)
            found["text"] = log.read()
            sys.stderr.write(found["text"].decode(errors="replace"))


LOOPBACK_TRIES = 3
# The virtual sound server, on a loaded 2-core machine, sometimes runs the speaker dry or the microphone
# slow (measured 2026-12-02, 12 runs: 4 with speaker underflows during the clips, one of them a clip
# 43 ms off; one with none flagged but a clip garbled past recognition, a gap inside the server). The
# mapping cannot be judged on such a run; the game's own remedies (a longer buffer after an underflow,
# the echo reference placed afresh) are tested elsewhere.
MIN_PACE = 0.97  # s of microphone input per second a judged run must have had


def _disturbed(run: dict, probes: list[np.ndarray]) -> str | None:
    """Why the devices did not keep up in ``run`` (None: they did): underflows (PortAudio's flag or
    ALSA's xrun report), overflows, a slow
    microphone, or a clip that is nowhere whole in the recording (a gap, not a timing error)."""
    from voicesnap.playback import find_onset

    garbled = [i for i, p in enumerate(probes) if find_onset(run["rec"], p, 16000) is None]
    if run["underflows"] or run["overflows"] or run["pace"] < MIN_PACE or garbled:
        return (f"{run['underflows']} speaker underflows, {run['overflows']} microphone overflows, "
                f"{run['pace']:.2f} s of input per second, clips nowhere whole: {garbled}")
    return None


@pytest.mark.audio_device
@pytest.mark.alone  # beside the other tests, even at idle priority, the virtual speaker underflowed: it skipped
def test_mapped_start_times_match_what_the_microphone_hears(monkeypatch):
    """Loopback: the announcer's output goes into the virtual microphone, so the
    input clock shows when each clip really arrived; the mapped SpeechStarted
    time must agree with it (after calibrating on three clips) within 10 ms.
    Judged on the first run the devices kept up with (up to LOOPBACK_TRIES); skipped if none did."""
    import soxr

    from voicesnap.playback import find_onset

    sink = _virtual_devices_or_skip()
    monkeypatch.setenv("PULSE_SINK", sink)  # our "speaker" plays into the mic sink
    try:
        cache = SpeechCache(None, rate=48000)
        texts = ("Eight", "Queen of Hearts", "alice", "Seven", "bob", "King")
        clips = [cache.get(t).samples for t in texts]
    except NoSpeechEngine:
        pytest.skip("espeak-ng is not installed")
    probes = [soxr.resample(clip.astype(np.float32), 48000, 16000) for clip in clips]
    troubles = []
    for _ in range(LOOPBACK_TRIES):
        run = _loopback(clips, texts)
        trouble = _disturbed(run, probes)
        if trouble is None:
            break
        troubles.append(trouble)
    else:
        pytest.skip(f"the virtual sound server did not keep up in {LOOPBACK_TRIES} runs ({'; '.join(troubles)}): "
                    f"the mapping cannot be judged on this sound server now")
    cm, starts, rec, base = run["clock_map"], run["starts"], run["rec"], run["base"]
    assert [ev.id for ev in starts] == list(range(len(clips))), f"one SpeechStarted per clip: {starts}"
    raw = []
    for ev, probe in zip(starts, probes):
        at = int(ev.t * 16000) - base
        lo = max(0, at - 4000)
        heard = find_onset(rec[lo : at + 4000 + len(probe)], probe, 16000, start=lo + base)
        if heard is None:
            anywhere = find_onset(rec, probe, 16000, start=base)
            pytest.fail(f"clip {ev.id} ({ev.text!r}, mapped start {ev.t:.3f} s) was not found within 0.25 s of it; "
                        f"in the whole recording ({base / 16000:.3f}-{(base + len(rec)) / 16000:.3f} s): {anywhere}; "
                        f"mapped starts {[round(e.t, 3) for e in starts]}; runs disturbed before: {troubles}")
        raw.append(heard - ev.t)  # ev.t was mapped with no correction yet
    # calibrate on the first three clips, then predict the rest
    for ev, r in zip(starts[:3], raw[:3]):
        cm.calibrate(ev.t, ev.t + r)
    errors = [r - cm.correction for r in raw[3:]]
    report = f"raw errors (ms): {', '.join(f'{r * 1000:.1f}' for r in raw)}; after calibration {errors}; " \
             f"runs disturbed before: {troubles}"
    # PortAudio's per-block DAC time wanders through PulseAudio on a loaded machine (the same cause as
    # in test_e2e_devices): CI runs saw raw offsets of -30 to -39 ms, and after calibration one clip
    # 7 ms off, and in another run two of three (6.8 and 7.3 ms; 2026-12-03). So none as far as 10 ms:
    # a broken mapping is tens of ms off (a map anchored before the mic had started: 640 ms).
    assert all(abs(e) < 0.010 for e in errors), report
