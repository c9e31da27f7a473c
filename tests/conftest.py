"""Suite-wide rules: how the tests share the machine's cores and its one sound server.

The suite runs on two workers (pytest-xdist: ``-n 2``). Every test that plays
into or records from the virtual sound server runs on one worker, one after
another, as it would alone: two at once would hear each other (they feed the
same virtual microphone) and each would judge the other's audio. The rest are
handed out one test at a time.

Those tests also carry the ``sound_server`` mark, so that ``tests/run`` (the
README's test command) can run them in a pass of their own at normal priority,
with every other test beside them at idle priority (``chrt --idle``): their
timing tests (announcements placed on the microphone's clock within 5-30 ms)
need the sound server to keep up. Beside the other worker at equal priority, a
2-core machine's server fell behind (speaker underflows) and they failed in runs
that passed alone; at ``nice 19``, and once at idle priority, the playback
loopback test still skipped for underflows, so it is marked ``alone`` and
``tests/run`` runs it last by itself. ``.ci/run`` also starts a fresh server
(``VOICESNAP_PULSE_FRESH``).
What still failed them (the mic delivering nothing, or starting late) was the
virtual devices' own: see .ci/pulse.sh and tests/virtual_mic.py.

xdist's own ``--dist loadgroup`` would do this from an ``xdist_group`` mark,
but with pytest 9 its worker can no longer rename the tests it groups (pytest
made a test's id read-only), so every test ran ungrouped; the grouping is
done here by module instead, with xdist's public scheduler hook.
"""

from __future__ import annotations

import os
from pathlib import Path, PurePosixPath

import pytest

# Modules with tests that open the virtual sound server (PortAudio streams, paplay/parec, pactl).
SOUND_SERVER_MODULES = frozenset({
    "test_device_loss", "test_doctor", "test_e2e_devices", "test_mic", "test_play_devices", "test_playback",
    "test_playback_underflow", "test_replay_reference", "test_source_moved", "test_table",
})
SOUND_SERVER = "sound-server"


def _module(nodeid: str) -> str:
    return PurePosixPath(nodeid.split("::", 1)[0]).stem


@pytest.hookimpl(tryfirst=True)  # before pytest's own -m selection reads the marks
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Mark the sound-server modules' tests ``sound_server``; a device test in a module the scheduler
    does not know would run beside the others: refuse."""
    for item in items:
        if _module(item.nodeid) in SOUND_SERVER_MODULES:
            item.add_marker(pytest.mark.sound_server)
    strays = sorted({_module(i.nodeid) for i in items
                     if i.get_closest_marker("audio_device") and _module(i.nodeid) not in SOUND_SERVER_MODULES})
    if strays:
        raise pytest.UsageError(f"tests/conftest.py: {', '.join(strays)} has audio_device tests; add it to "
                                f"SOUND_SERVER_MODULES so that they run one at a time with the other device tests")


@pytest.hookimpl(optionalhook=True)  # only called when pytest-xdist is installed
def pytest_xdist_make_scheduler(config: pytest.Config, log):  # noqa: ANN001, ANN201 (xdist's types)
    """Sound-server modules as one unit of work on one worker; every other test on its own."""
    if config.getvalue("dist") == "each":
        return None
    from xdist.scheduler import LoadScopeScheduling

    class SoundServerScheduling(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return SOUND_SERVER if _module(nodeid) in SOUND_SERVER_MODULES else nodeid

    return SoundServerScheduling(config, log)


def _folder_state(folder: Path) -> tuple:
    """Every file under ``folder`` with its size and modification time: a model folder changed in place
    is another model."""
    out = []
    for root, _dirs, files in os.walk(folder):
        for name in sorted(files):
            st = os.stat(os.path.join(root, name))
            out.append((os.path.relpath(os.path.join(root, name), folder), st.st_size, st.st_mtime_ns))
    return tuple(sorted(out))


@pytest.fixture(autouse=True, scope="session")
def _vosk_models_loaded_once():  # noqa: ANN202 (a generator fixture)
    """Each Vosk model folder is loaded once per test process, however many tests (and in-process
    ``play``, ``listen`` and ``replay`` commands) load it: a load costs 0.45 s, and the suite loaded the
    same model 88 times (40 s of CPU). A Vosk model is read-only once loaded (each recogniser keeps its
    own state), so a test gets what a fresh load gives; a folder changed in place, another path, the
    other ``tuned`` setting or a test's own TUNED_CONFIG or MFCC_CONFIG loads afresh, and a load that
    fails is not kept."""
    try:
        from voicesnap.spotters import vosk_spotter
    except ImportError:
        yield
        return
    load = vosk_spotter.load_model
    loaded: dict[tuple, object] = {}

    def load_once(path, *, tuned: bool = True):  # noqa: ANN001, ANN202 (load_model's own types)
        folder = Path(path).resolve()
        key = (str(folder), tuned, _folder_state(folder),
               repr(vosk_spotter.TUNED_CONFIG), repr(vosk_spotter.MFCC_CONFIG))
        if key not in loaded:
            loaded[key] = load(path, tuned=tuned)
        return loaded[key]

    vosk_spotter.load_model = load_once
    try:
        yield
    finally:
        vosk_spotter.load_model = load
