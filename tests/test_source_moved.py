"""A microphone that goes away while the sound server moves the game's stream to another live one.

PulseAudio moves a vanished source's record streams to another source and they go on delivering
audio, so neither a stall nor exact silence shows it: only the server knows (voicesnap.pulse).
The first tests hold SourceWatch's reading of the server's answers; the last one unplugs a real
virtual microphone under a real PortAudio stream (.ci/pulse.sh's live default source is where
the server moves it), and plugs it back in.
"""

from __future__ import annotations

import json
import threading
import time
from contextlib import ExitStack

import pytest

from voicesnap.audio import MicSource
from voicesnap.pulse import SourceWatch
from voicesnap.live import LiveInput

SOURCES = [{"index": 3, "name": "usb_mic"}, {"index": 5, "name": "laptop_mic"}]


def _server(sources: list[dict], on: int | None, pid: str = "42"):  # noqa: ANN202
    """A pactl that answers with ``sources`` and one record stream of process ``pid`` on source ``on``."""
    outputs = [] if on is None else [{"index": 9, "source": on, "properties": {"application.process.id": pid}},
                                     {"index": 10, "source": 5, "properties": {"application.process.id": "7"}}]

    def pactl(args: list[str]) -> str:
        return json.dumps(sources if args[-1] == "sources" else outputs)
    return pactl


def test_a_named_microphone_that_goes_away_pauses_the_game_and_names_where_the_stream_went() -> None:
    here = SourceWatch("usb_mic", pid=42, pactl=_server(SOURCES, on=3))
    assert here.check() is None
    gone = SourceWatch("usb_mic", pid=42, pactl=_server(SOURCES[1:], on=5))
    text, pause = gone.check()
    assert pause and "'usb_mic' went away" in text and "'laptop_mic'" in text and "resumes by itself" in text
    moved = SourceWatch("usb_mic", pid=42, pactl=_server(SOURCES, on=5))  # still there, stream moved by hand
    text, pause = moved.check()
    assert pause and "moved off the microphone 'usb_mic' to 'laptop_mic'" in text


def test_a_stream_listed_on_a_source_already_gone_is_asked_again_not_named_by_its_number() -> None:
    """The server can list our stream on a vanishing source after the source list dropped it (a CI
    run said the game was moved "to 'source 10'", the dying microphone): the watch asks again."""
    answers = [_server(SOURCES[1:], on=3), _server(SOURCES[1:], on=5)]  # mid-move, then settled
    calls: list[str] = []

    def pactl(args: list[str]) -> str:
        calls.append(args[-1])
        return answers[0 if len(calls) <= 2 else 1](args)
    text, pause = SourceWatch("usb_mic", pid=42, pactl=pactl).check()
    assert pause and "'usb_mic' went away" in text and "to 'laptop_mic'" in text and "source 3" not in text
    assert calls == ["source-outputs", "sources", "source-outputs", "sources"]
    # never settled: the move is said without a made-up name
    text, pause = SourceWatch("usb_mic", pid=42, pactl=_server(SOURCES[1:], on=3)).check()
    assert pause and "'usb_mic' went away" in text and "to 'another source'" in text
    # with the default microphone, a move seen half-way is judged at the next check
    answers = [_server(SOURCES, on=3), _server(SOURCES[1:], on=7), _server(SOURCES[1:], on=5)]
    calls.clear()
    state = {"phase": 0}
    watch = SourceWatch(None, pid=42, pactl=lambda args: answers[state["phase"]](args))
    assert watch.check() is None  # first seen: usb_mic
    state["phase"] = 1
    assert watch.check() is None  # on a source the list lacks: no opinion yet
    state["phase"] = 2
    text, pause = watch.check()
    assert not pause and "'usb_mic' went away" in text and "'laptop_mic'" in text


def test_a_default_microphone_that_changes_is_said_once_without_pausing() -> None:
    answers = {"on": 3, "sources": SOURCES}
    watch = SourceWatch(None, pid=42, pactl=lambda args: _server(answers["sources"], answers["on"])(args))
    assert watch.check() is None  # the first source seen is the one
    assert watch.check() is None
    answers.update(on=5, sources=SOURCES[1:])
    text, pause = watch.check()
    assert not pause and "'usb_mic' went away" in text and "'laptop_mic'" in text and "--input" in text
    assert watch.check() is None  # said once: the new source is the one now
    watch.reset()
    assert watch.check() is None


def test_no_stream_of_ours_or_no_answer_is_no_opinion() -> None:
    assert SourceWatch("usb_mic", pid=42, pactl=_server(SOURCES, on=None)).check() is None
    assert SourceWatch("usb_mic", pid=43, pactl=_server(SOURCES, on=5)).check() is None  # another process's
    assert SourceWatch("usb_mic", pid=42, pactl=lambda args: "").check() is None  # no server
    assert SourceWatch("usb_mic", pid=42, pactl=lambda args: "{not json").check() is None
    # the stream is listed but the sources are not (a failed second call): no pause on half an answer
    outputs = _server(SOURCES, on=5)
    assert SourceWatch("usb_mic", pid=42, pactl=lambda args: "" if args[-1] == "sources" else outputs(args)
                       ).check() is None


@pytest.mark.audio_device
def test_an_unplugged_microphone_whose_stream_moves_to_a_live_one_pauses_and_resumes(
        monkeypatch: pytest.MonkeyPatch) -> None:
    try:
        import sounddevice  # noqa: F401
    except OSError as exc:
        pytest.skip(f"PortAudio library missing: {exc}")
    from virtual_mic import pactl, virtual_mic

    sink = "vs_moved_mic"
    monitor = f"{sink}.monitor"
    default = pactl("get-default-source")
    if not default or default == monitor:
        pytest.skip("no other live default source to move to (source .ci/pulse.sh)")
    monkeypatch.setenv("PULSE_SOURCE", monitor)  # as play's --input NAME routes it (cli.devices.route)

    def run(watch: SourceWatch | None, stack: ExitStack) -> tuple[list[tuple[float, str]], dict[str, float]]:
        """Unplug the mic after 1 s of its audio, plug it back in 3 s later; (reports, marks) in wall s."""
        began = time.monotonic()
        reports: list[tuple[float, str]] = []
        live = LiveInput(lambda: MicSource(channels=1, option="--input").open(),
                         lambda text: reports.append((time.monotonic() - began, text)), watch=watch, watch_every=0.5)
        heard: list[float] = []  # wall time of each chunk
        reader = threading.Thread(target=lambda: [heard.append(time.monotonic() - began) for _ in live], daemon=True)
        reader.start()
        marks: dict[str, float] = {}
        try:
            deadline = time.monotonic() + 10
            while len(heard) < 50 and time.monotonic() < deadline:  # 1 s of 20 ms chunks
                time.sleep(0.02)
            assert len(heard) >= 50, "the virtual microphone delivered no audio"
            stack.close()  # unplugged: its module unloaded, the server moves the stream
            marks["unplugged"] = time.monotonic() - began
            time.sleep(3.0)
            marks["plugging"] = time.monotonic() - began
            stack.enter_context(virtual_mic(sink))
            marks["plugged"] = time.monotonic() - began
            time.sleep(2.5)
        finally:
            live.close()
            reader.join(timeout=5)
        marks["chunks after the unplugging"] = sum(marks["unplugged"] + 0.5 < t < marks["plugging"] for t in heard)
        return reports, marks

    with ExitStack() as stack:  # without the watch: the moved stream goes on as if nothing happened
        stack.enter_context(virtual_mic(sink))
        reports, marks = run(None, stack)
    assert not [r for r in reports if r[1].startswith(LiveInput.LOST)], reports
    assert marks["chunks after the unplugging"] > 50, marks  # audio from the other, live, microphone

    with ExitStack() as stack:
        stack.enter_context(virtual_mic(sink))
        reports, marks = run(SourceWatch(monitor), stack)
    assert reports, "nothing was reported"
    (t_lost, lost), *after = reports
    assert lost.startswith(LiveInput.LOST) and f"'{monitor}' went away" in lost and f"'{default}'" in lost, reports
    assert marks["unplugged"] <= t_lost <= marks["unplugged"] + 1.5, (marks, reports)
    assert marks["chunks after the unplugging"] == 0, marks  # paused: nothing from the wrong microphone
    # back once it is plugged in again (a fresh null sink's monitor can hold a new stream's first audio
    # for up to 2 s, tests/virtual_mic.py: then a stall is reported and the next reopening is back)
    assert after and all(t >= marks["plugging"] for t, _r in after), (marks, reports)
    assert after[-1][1].startswith(LiveInput.BACK), reports
