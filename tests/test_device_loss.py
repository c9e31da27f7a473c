"""A microphone that goes silent mid-game (muted, or gone behind a stream that still runs) pauses
the table with a spoken and printed message, and the game resumes when real sound returns.

Real devices: a PulseAudio null sink of our own (fed faint room noise, as .ci/pulse.sh feeds the
CI's virtual microphone) whose monitor is the microphone, muted and unmuted with pactl while a
real `play_session` listens to it through `LiveInput` and PortAudio.
"""

from __future__ import annotations

import threading
import time

import pytest

from voicesnap import rules
from voicesnap.audio import MicSource
from voicesnap.live import LiveInput
from voicesnap.table import TableNote, TableSession, play_session

from virtual_mic import pactl, virtual_mic

pytestmark = pytest.mark.audio_device

SINK = "vs_loss_mic"


@pytest.fixture
def quiet_room_mic(monkeypatch: pytest.MonkeyPatch):  # noqa: ANN201
    """Our own virtual microphone with room noise on it; PortAudio's default input opens it."""
    try:
        import sounddevice  # noqa: F401
    except OSError as exc:
        pytest.skip(f"PortAudio library missing: {exc}")
    with virtual_mic(SINK) as monitor:
        monkeypatch.setenv("PULSE_SOURCE", monitor)  # read by libpulse when a stream connects
        yield monitor


def test_a_muted_microphone_pauses_the_game_with_a_spoken_notice_and_it_resumes(quiet_room_mic: str) -> None:
    source = quiet_room_mic
    live = LiveInput(lambda: MicSource(channels=1, option="--input").open(), lambda text: None)
    spoken: list[str] = []
    printed: list[str] = []
    marks: dict[str, float] = {}

    def heard() -> float:  # seconds the microphone has delivered (its clock)
        mic = live.source
        return (mic.position + live.offset) / mic.rate if mic is not None else 0.0

    def wait_for(t: float) -> None:
        deadline = time.monotonic() + 20
        while heard() < t and time.monotonic() < deadline and not live.closed.is_set():
            time.sleep(0.01)

    def script() -> None:  # what a player does to the microphone, on the microphone's clock
        wait_for(1.2)
        pactl("set-source-mute", source, "1")
        marks["muted"] = heard()
        wait_for(marks["muted"] + 3.0)
        marks["unmuting"] = heard()  # the sound returns between these two marks: pactl returns after the
        pactl("set-source-mute", source, "0")  # server unmuted, and on a slow machine frames flowed meanwhile
        marks["unmuted"] = heard()
        wait_for(marks["unmuted"] + 1.5)
        live.close()  # the session ends with the audio

    class Log(list):
        def write(self, *records: object) -> None:
            self.extend(records)

    log = Log()
    player = threading.Thread(target=script, daemon=True)
    settings = TableSession(players=("Ann", "Bob"), seed=3, pace=0.5)
    player.start()
    try:
        result = play_session(settings, log, chunks=live, spotter=None, lines=printed.append,
                              say=lambda text, priority, ev: spoken.append(text), tick=0.02)
    finally:
        pactl("set-source-mute", source, "0")
        live.close()
        player.join(timeout=10)
    assert result.reason == "audio ended"
    notes = [r for r in log if isinstance(r, TableNote)]
    lost = [n for n in notes if n.text.startswith(LiveInput.LOST)]
    back = [n for n in notes if n.text.startswith(LiveInput.BACK)]
    assert len(lost) == 1 and "no sound" in lost[0].text and "unmute" in lost[0].text, [n.text for n in notes]
    assert len(back) == 1 and back[0].now > lost[0].now, notes
    # spoken and printed, word for word
    assert lost[0].text in spoken and lost[0].text in printed and back[0].text in spoken
    # ~2 s of exact zeros after the mute (on the audio clock: the stream kept delivering them),
    # and sound again at once after the unmute
    flips = [r for r in log if isinstance(r, rules.Flipped)]
    assert 1.8 <= lost[0].now - marks["muted"] <= 2.8, (marks, lost[0])
    assert marks["unmuting"] <= back[0].now <= marks["unmuted"] + 0.5, (marks, back[0])
    # no card was turned while the microphone was gone; the game went on after it came back
    assert not [f for f in flips if lost[0].now < f.t <= back[0].now], flips
    assert [f for f in flips if f.t > back[0].now], flips
    assert [f for f in flips if f.t < lost[0].now], flips


def test_listen_says_when_the_microphone_goes_silent_and_when_it_is_back(quiet_room_mic: str, tmp_path) -> None:
    """`voicesnap listen` is how a player checks their set-up: a muted microphone is said on stderr
    (it had gone on listening to nothing without a word), and so is its return."""
    import os
    import subprocess
    import sys

    from voicesnap import models

    if not models.is_model(os.environ.get("VOICESNAP_KEYWORD_MODEL", ""), "keyword"):
        pytest.skip("no keyword model to listen with: set VOICESNAP_KEYWORD_MODEL (.ci/run fetches it)")
    env = dict(os.environ, VOICESNAP_DATA_DIR=str(tmp_path / "data"))
    listen = subprocess.Popen([sys.executable, "-m", "voicesnap", "listen", "--engine", "keyword", "--seconds", "7"],
                              env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert listen.stderr is not None
        banner = listen.stderr.readline()  # printed once the microphone delivers
        assert "listening on the microphone" in banner, banner
        time.sleep(1.0)
        pactl("set-source-mute", quiet_room_mic, "1")
        time.sleep(3.0)
        pactl("set-source-mute", quiet_room_mic, "0")
        out, err = listen.communicate(timeout=30)
    finally:
        pactl("set-source-mute", quiet_room_mic, "0")
        if listen.poll() is None:
            listen.kill()
    assert listen.returncode == 0, err
    lines = err.splitlines()
    lost = [i for i, line in enumerate(lines) if LiveInput.LOST in line]
    back = [i for i, line in enumerate(lines) if LiveInput.BACK in line]
    assert len(lost) == 1 and len(back) == 1 and lost[0] < back[0], err
    assert "no sound" in lines[lost[0]] and "game" not in lines[lost[0]], err  # there is no game to pause
