"""The speaker side without gaps: DevicePlayback's latency and its underflow count.

Announcements are how a low-vision player follows the game, so a gap in them
is a fault. The device test plays a tone to the virtual speaker
(.ci/pulse.sh: VOICESNAP_TEST_SPEAKER_SINK) and captures its monitor.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from types import SimpleNamespace

import numpy as np
import pytest

from bench.bench_playback import CAP_RATE, MonitorCapture, heard_and_gaps
from voicesnap.playback import DevicePlayback


def _flags(value: int):
    sd = pytest.importorskip("sounddevice", reason="sounddevice (PortAudio) is needed for its callback flags")
    return sd.CallbackFlags(value)


def _call(pb: DevicePlayback, status) -> None:
    out = np.zeros((256, 1), np.int16)
    pb._callback(out, 256, SimpleNamespace(outputBufferDacTime=0.0), status)


def test_output_underflows_are_counted_from_portaudios_flags() -> None:
    pb = DevicePlayback(rate=16000)
    _call(pb, _flags(0))
    _call(pb, _flags(0x4))  # paOutputUnderflow
    _call(pb, _flags(0x2))  # paInputOverflow: not ours
    _call(pb, _flags(0x4 | 0x8))  # underflow and overflow together
    assert pb.underflows == 2
    assert pb.mixer.frame == 4 * 256  # the buffers were still filled


def test_underflows_are_told_once_per_burst_with_what_to_do() -> None:
    pb = DevicePlayback(rate=16000)
    assert pb.underflow_notice(now=0.0) is None  # none yet
    pb.underflows = 3
    first = pb.underflow_notice(now=10.0)
    assert first is not None and "breaking up" in first and "--output" in first
    pb.underflows = 5
    assert pb.underflow_notice(now=12.0) is None  # the same burst
    assert pb.underflow_notice(now=30.0) is None  # nothing new
    pb.underflows = 6
    assert "breaking up" in (pb.underflow_notice(now=30.0) or "")  # 18 s since the last: a new burst


def test_the_announcer_passes_the_notice_on() -> None:
    from voicesnap.announcer import Announcer

    said: list[str] = []
    pb = DevicePlayback(rate=16000)
    ann = Announcer(None, pb, notice=said.append)
    pb.underflows = 1
    ann.poll()
    ann.poll()
    assert len(said) == 1 and "breaking up" in said[0] and len(said[0]) <= 140  # (read whole by a screen reader)


def test_a_frame_older_than_every_kept_dac_time_is_placed_by_extrapolation() -> None:
    """The echo reference pulls up to 4 s of the mixer's output, but only the last 256 buffers'
    DAC times are kept (1-2 s with PortAudio's small buffers): an older frame was put at the
    oldest kept buffer's time, i.e. too late by the frames in between (0.7 s seen in a game)."""
    from voicesnap.playback import ClockMap

    pb = DevicePlayback(rate=48000, clock_map=ClockMap(offset=-40.0))
    buf = np.zeros((100, 1), np.int16)
    for k in range(300):  # 300 buffers of 100 frames, DAC times at the stream's pace
        pb._callback(buf, 100, SimpleNamespace(outputBufferDacTime=50.0 + k * 100 / 48000), None)
    assert pb._dac[0][0] == 4400  # the oldest anchors are gone
    assert pb.frame_to_clock(1000) == pytest.approx(10.0 + 1000 / 48000, abs=1e-9)
    assert pb.frame_to_clock(20000) == pytest.approx(10.0 + 20000 / 48000, abs=1e-9)


def test_the_speaker_starts_at_low_latency_and_falls_back_to_high() -> None:
    pb = DevicePlayback()
    assert (pb.latency, pb.fallback_latency) == ("low", "high")


def test_without_an_open_stream_an_underflow_changes_nothing_but_is_told() -> None:
    pb = DevicePlayback(rate=16000)
    pb.underflows = 1
    assert "breaking up" in (pb.underflow_notice(now=0.0) or "")
    assert pb.latency == "low"


_REOPEN = """
import json, time
import numpy as np
from voicesnap.playback import DevicePlayback
pb = DevicePlayback(rate=48000).open()
try:
    low = float(pb._stream.latency)
    pb.play(1, "tone", np.full(48000 * 2, 3000, np.int16))
    time.sleep(0.3)
    before = pb.mixer.frame
    pb.underflows += 1  # as PortAudio's flag would count it
    told = pb.underflow_notice(now=100.0)
    after_latency, active, high = pb.latency, bool(pb._stream.active), float(pb._stream.latency)
    time.sleep(0.3)
    moved = pb.mixer.frame - before
    pb.underflows += 1
    again = pb.underflow_notice(now=101.0)
finally:
    pb.close()
print(json.dumps(dict(low=low, told=told, latency=after_latency, active=active, high=high, moved=moved,
                      again=again)))
"""


@pytest.mark.audio_device
def test_the_first_underflow_reopens_the_speaker_with_a_longer_buffer(monkeypatch) -> None:
    """A gap in the announcer is worse than 30 ms more latency: after the first underflow the
    stream is reopened once at the fallback latency, and the mixer (its items, its clock) carries on.
    (In its own process: a reopened PortAudio stream left the next test's capture short.)"""
    import json
    import sys

    sink = os.environ.get("VOICESNAP_TEST_SPEAKER_SINK")
    if not sink:
        pytest.skip("no virtual speaker sink (VOICESNAP_TEST_SPEAKER_SINK; .ci/pulse.sh sets it up)")
    env = {**os.environ, "PULSE_SINK": sink}
    out = subprocess.run([sys.executable, "-c", _REOPEN], capture_output=True, text=True, env=env, timeout=60)
    assert out.returncode == 0, out.stderr
    got = json.loads(out.stdout.strip().splitlines()[-1])
    # the game's own remedy, not told: "the speaker's sound broke up" at nearly every start read as a fault
    assert got["told"] is None
    assert got["latency"] == "high" and got["active"] and got["high"] > got["low"]
    assert got["moved"] > 0  # the same mixer keeps playing on the new stream
    assert got["again"] is None  # (the same burst)


def _tone_through(sink: str, seconds: float, rate: int = 48000) -> dict:
    """Play a tone with DevicePlayback ("high" latency), capture the sink's monitor: what was heard."""
    tone = (6000 * np.sin(2 * np.pi * 500 * np.arange(int(seconds * rate)) / rate)).astype(np.int16)
    capture = MonitorCapture(sink)
    began = time.monotonic()
    try:
        time.sleep(0.5)  # the capture runs before the first sample plays
        pb = DevicePlayback(rate=rate, latency="high").open()  # the fallback's own wholeness
        try:
            time.sleep(0.3)
            pb.play(1, "tone", tone)
            deadline = time.monotonic() + seconds + 5
            finished = False
            while not finished and time.monotonic() < deadline:
                time.sleep(0.05)
                finished = any(getattr(e, "completed", False) for e in pb.poll())
            # "finished" means handed to PortAudio; the sound server may still hold seconds of it,
            # which closing the stream drops: wait until the last buffer's DAC time has passed.
            last_dac = pb._dac[-1][1] if pb._dac else 0.0
            settle = time.monotonic() + seconds + 5
            while pb.stream_time < last_dac + 0.3 and time.monotonic() < settle:
                time.sleep(0.05)
            time.sleep(0.5)  # the last buffers reach the sink
            underflows = pb.underflows
            dac_wait = last_dac - pb.stream_time
        finally:
            pb.close()
    finally:
        ended = time.monotonic()
        raw = capture.stop()
    heard, gaps = heard_and_gaps(raw, CAP_RATE)
    return {"finished": finished, "heard": heard, "gaps": gaps, "underflows": underflows, "dac_wait": dac_wait,
            "sink_pace": len(raw) / 2 / CAP_RATE / (ended - began)}


TONE_TRIES = 3
# s of monitor capture per s of wall time under which a run shows the sound server behind, not our
# stream (a server keeping up delivers 0.99-1.0). The skips seen at 0.21-0.24 until 2026-12-03 were this
# test's own: the capture went into a pipe nobody read until the end, which holds 2 s of it.
MONITOR_PACE = 0.95


@pytest.mark.audio_device
def test_a_tone_reaches_the_virtual_speaker_whole(monkeypatch) -> None:
    """6 s of tone through DevicePlayback ("high", the fallback latency) and the ALSA pulse plugin: the
    speaker's monitor holds 6 s of it, without gaps.

    On a busy machine the sound server itself can fall behind real time (its monitor then
    delivers less than a second per second, whatever our stream does), and with a core spinning and the
    load average above 2.5 even "high" latency had 50-90 ms of gaps in 2 of 3 runs ("low":
    0.2-0.7 s in every run; bench/bench_playback.py): a run that is not whole is measured once
    more (up to TONE_TRIES runs), and only runs whose monitor kept pace are judged.
    """
    sink = os.environ.get("VOICESNAP_TEST_SPEAKER_SINK")
    if not sink:
        pytest.skip("no virtual speaker sink (VOICESNAP_TEST_SPEAKER_SINK; .ci/pulse.sh sets it up)")
    if shutil.which("parec") is None or subprocess.run(["pactl", "info"], capture_output=True).returncode != 0:
        pytest.skip("PulseAudio is not running or parec is missing (.ci/pulse.sh; apt-get install pulseaudio-utils)")
    monkeypatch.setenv("PULSE_SINK", sink)
    seconds = 6.0

    def whole(got: dict) -> bool:
        return got["finished"] and abs(got["heard"] - seconds) <= 0.03 and got["gaps"] <= 0.01

    tries: list[dict] = []
    while len(tries) < TONE_TRIES and not (tries and whole(tries[-1])):
        tries.append(_tone_through(sink, seconds))
    figures = "; ".join(f"heard {t['heard']:.2f} s, gaps {t['gaps']:.2f} s, underflows {t['underflows']}, "
                        f"monitor {t['sink_pace']:.2f} s per second" for t in tries)
    got = tries[-1]
    if not whole(got):
        # Only a run the sound server kept up with says anything about our stream.
        kept_up = [t for t in tries if t["sink_pace"] >= MONITOR_PACE]
        if not kept_up:
            pytest.skip(f"the virtual sound server fell behind real time in every run ({figures}): the "
                        "speaker stream cannot be judged on this sound server now")
        got = kept_up[-1]
    assert isinstance(got["underflows"], int)
    assert got["finished"], f"the tone never finished playing: {figures}"
    assert got["heard"] == pytest.approx(seconds, abs=0.03), figures
    assert got["gaps"] <= 0.01, f"gaps in the tone in every run: {figures}"


class _StallingStream:
    """A fake output stream on a simulated clock, as ALSA's pulse plugin opens one on the virtual
    speaker (measured): PREFILL buffers at once, then nothing for ``stall`` s, then one buffer per
    buffer's length; ``underflow_after`` flags the buffer that long after the stall as an underflow.
    ``sleep`` advances the clock and calls the callback for every buffer due meanwhile."""

    PREFILL = 5

    def __init__(self, pb: DevicePlayback, stall: float, block: int = 160, underflow_after: float | None = None):
        self.pb, self.stall, self.block, self.underflow_after = pb, stall, block, underflow_after
        self.now = 0.0
        self.opened = 0.0
        self.calls = 0
        self.active = True

    def open(self, at: float) -> None:
        self.opened, self.calls, self.active = at, 0, True

    def _due(self, k: int) -> float:
        if k < self.PREFILL:
            return self.opened
        return self.opened + self.stall + (k - self.PREFILL) * self.block / self.pb.rate

    def sleep(self, dt: float) -> None:
        self.now += dt
        while self.active and self._due(self.calls) <= self.now:
            due = self._due(self.calls)
            flag = (self.underflow_after is not None and self.calls >= self.PREFILL
                    and due >= self.opened + self.stall + self.underflow_after)
            if flag:
                self.underflow_after = None  # once
            self.pb._callback(np.zeros((self.block, 1), np.int16), self.block,
                              SimpleNamespace(outputBufferDacTime=max(due, self.opened) + 0.01), _flags(0x4 if flag else 0))
            self.calls += 1


def _stalling(stall: float, underflow_after: float | None = None) -> tuple[DevicePlayback, _StallingStream]:
    from voicesnap.playback import ClockMap

    pb = DevicePlayback(rate=16000, clock_map=ClockMap(offset=0.0))
    fake = _StallingStream(pb, stall, underflow_after=underflow_after)
    pb._stream = fake

    def start(sd, rate) -> None:  # the fallback's reopen: a new stream, which stalls again
        fake.open(fake.now)
        pb._stream = fake

    pb._start = start  # type: ignore[method-assign]
    pb.close = lambda: setattr(fake, "active", False)  # type: ignore[method-assign]
    return pb, fake


def test_the_first_announcement_waits_for_the_speaker_to_run_and_plays_whole() -> None:
    """Measured on the virtual speaker: a new output stream takes a few buffers and then stalls 0.6-1.9 s.
    An announcement given to it at once was cut by the stall (heard with a gap, its echo reference
    laid apart from it). warm_up() waits until WARM_S has played at real-time pace: the announcement
    then plays on without a jump in its DAC times, and the wait is the stall and WARM_PACE of WARM_S."""
    pb, fake = _stalling(1.5)
    assert pb.warm_up(clock=lambda: fake.now, sleep=fake.sleep) is None
    assert pb.warmed == pytest.approx(1.5 + pb.WARM_PACE * pb.WARM_S, abs=0.02)
    pb.play(1, "Seven of Hearts", np.full(8000, 3000, np.int16))
    fake.sleep(1.0)
    (started, ended) = pb.poll()
    assert ended.completed and ended.t - started.t == pytest.approx(0.5, abs=0.011)  # 0.5 s of audio: no gap


def test_a_stream_that_underflows_while_warming_is_reopened_then_and_warmed_again() -> None:
    """The stall's underflow (a busy machine) reopened the stream at "high" when the announcer next
    polled, i.e. during the first announcement, and the new stream stalled 1.9 s in it. While
    warming up, it is reopened at once and the new stream is waited for too."""
    pb, fake = _stalling(0.8, underflow_after=0.1)
    assert pb.warm_up(clock=lambda: fake.now, sleep=fake.sleep) is None
    assert pb.latency == "high"
    assert pb.warmed == pytest.approx(0.8 + 0.1 + 0.8 + pb.WARM_PACE * pb.WARM_S, abs=0.02)
    assert pb.underflow_notice(now=100.0) is None  # dealt with: not reopened again at the first poll


def test_a_speaker_that_never_runs_is_told_and_the_wait_is_bounded() -> None:
    pb, fake = _stalling(60.0)
    told = pb.warm_up(limit=2.0, clock=lambda: fake.now, sleep=fake.sleep)
    assert told is not None and "slow to start" in told and "--output" in told
    assert pb.warmed == pytest.approx(2.0, abs=0.02)


def test_the_announcer_warms_the_speaker_before_its_first_words(monkeypatch, tmp_path) -> None:
    from voicesnap import announcer, speech

    calls: list[str] = []
    monkeypatch.setattr(DevicePlayback, "open", lambda self: self)
    monkeypatch.setattr(DevicePlayback, "warm_up", lambda self: calls.append("warm") or "the speaker is slow to start")
    monkeypatch.setattr(announcer.Announcer, "prepare", lambda self: calls.append("prepare") or 0.0)
    monkeypatch.setattr(speech, "check_voice", lambda voice: None)
    notices: list[str] = []
    ann = announcer.open_announcer(tmp_path, notice=notices.append)
    assert calls == ["prepare", "warm"] and ann.playback is not None
    assert notices == ["the speaker is slow to start"]
