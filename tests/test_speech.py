"""Speech rendering and its cache, against real espeak-ng output saved to files."""

from __future__ import annotations

import shutil
import sys

import numpy as np
import pytest
import soundfile as sf

from voicesnap import speech
from voicesnap.speech import (
    ENGINE_RATE, NoSpeechEngine, SpeechCache, SpeechError, UnknownVoice, VoiceSettings, cache_key, render,
)


def _engine_or_skip() -> None:
    try:
        speech.engine_kind()
    except NoSpeechEngine:
        pytest.skip("espeak-ng is not installed (apt-get install espeak-ng)")


@pytest.fixture(autouse=True)
def data_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("VOICESNAP_DATA_DIR", str(tmp_path / "data"))
    return tmp_path / "data"


def test_render_gives_trimmed_speech_at_engine_rate():
    _engine_or_skip()
    samples, rate = render("Eight")
    assert rate == ENGINE_RATE and samples.dtype == np.int16 and samples.ndim == 1
    assert 0.2 < len(samples) / rate < 1.2
    # trimmed: speech from the first sample, no long silent tail
    assert abs(int(samples[0])) > speech._SILENCE
    tail = np.flatnonzero(np.abs(samples.astype(np.int32)) > speech._SILENCE)[-1]
    assert len(samples) - tail <= speech._KEEP + 1


def _envelope(x: np.ndarray, hop: int = 220) -> np.ndarray:
    n = len(x) // hop
    return np.sqrt(np.mean(np.square(x[: n * hop].astype(np.float64).reshape(n, hop)), axis=1))


def test_binding_and_command_line_say_the_same():
    # espeak-ng keeps a little state between utterances in one process, so two
    # renders of a phrase can differ by ~1% in length (one reason to render once
    # and cache): compare duration and loudness contour, not samples.
    _engine_or_skip()
    if shutil.which("espeak-ng") is None:
        pytest.skip("espeak-ng command line not on PATH")
    for text in ("Queen of Hearts", "alice wins 6 cards."):
        a, _ = render(text)
        b, _ = render(text, engine="cli")
        assert abs(len(a) - len(b)) < 0.03 * len(b), text
        ea, eb = _envelope(a), _envelope(b)
        n = min(len(ea), len(eb))
        assert np.corrcoef(ea[:n], eb[:n])[0, 1] > 0.9, text


def test_rate_and_volume_change_the_audio():
    _engine_or_skip()
    slow, _ = render("Seven of Clubs", VoiceSettings(rate=120))
    fast, _ = render("Seven of Clubs", VoiceSettings(rate=300))
    assert len(fast) < 0.7 * len(slow)
    quiet, _ = render("Seven", VoiceSettings(volume=0.5))
    loud, _ = render("Seven", VoiceSettings(volume=1.5))
    assert np.abs(loud.astype(np.int32)).max() > 1.5 * np.abs(quiet.astype(np.int32)).max()


def test_cache_writes_wav_files_and_reloads_them(data_dir):
    _engine_or_skip()
    cache = SpeechCache.in_data_dir(data_dir)
    clip = cache.get("King of Spades")
    path = cache.path("King of Spades")
    assert path is not None and path.parent == data_dir / "cache" / "speech"
    saved, rate = sf.read(path, dtype="int16")
    assert rate == ENGINE_RATE and np.array_equal(saved, clip.samples)
    assert not [p for p in path.parent.iterdir() if p.name.endswith(".tmp")]  # atomic: no leftovers
    assert cache.get("King of Spades") is clip and cache.hits == 1 and cache.misses == 1

    again = SpeechCache.in_data_dir(data_dir)  # a new run: from disk, not rendered
    clip2 = again.get("King  of Spades")  # whitespace does not matter
    assert again.disk_hits == 1 and again.misses == 0
    assert np.array_equal(clip2.samples, clip.samples)


def test_cache_key_separates_voice_rate_volume_and_text():
    base = VoiceSettings()
    keys = {
        cache_key(base, "Ace"),
        cache_key(VoiceSettings(rate=250), "Ace"),
        cache_key(VoiceSettings(volume=1.2), "Ace"),
        cache_key(VoiceSettings(voice="gmw/en-US"), "Ace"),
        cache_key(base, "Two"),
    }
    assert len(keys) == 5


def test_damaged_cache_file_is_rendered_again(data_dir):
    _engine_or_skip()
    cache = SpeechCache.in_data_dir(data_dir)
    path = cache.path("Jack")
    path.parent.mkdir(parents=True)
    path.write_bytes(b"RIFF\x00\x00 not a wav")
    clip = cache.get("Jack")
    assert cache.misses == 1 and len(clip.samples) > 1000
    assert sf.info(path).samplerate == ENGINE_RATE  # overwritten with a good file


def test_cache_resamples_once_to_the_output_rate(data_dir):
    _engine_or_skip()
    native = SpeechCache(None).get("Nine")
    at16 = SpeechCache(None, rate=16000).get("Nine")
    assert at16.rate == 16000
    assert abs(at16.duration - native.duration) < 0.002


def test_prerender_fills_the_memory_cache(data_dir):
    _engine_or_skip()
    cache = SpeechCache.in_data_dir(data_dir)
    texts = ["Ace", "Two", "Three", "alice", "bob"]
    seconds = cache.prerender(texts)
    assert seconds > 0 and all(cache.cached(t) for t in texts)
    assert len(list((data_dir / "cache" / "speech").glob("*.wav"))) == len(texts)


def test_unknown_voice_names_close_matches_and_says_text_goes_on():
    _engine_or_skip()
    with pytest.raises(UnknownVoice) as err:
        render("Eight", VoiceSettings(voice="gmw/en-uss"))
    message = str(err.value)
    assert "gmw/en-US" in message and "text" in message and "--voice" in message
    assert "gmw/en-GB-scotland" in speech.close_voices("scotland")
    assert speech.close_voices("english")[0] == "gmw/en"


def test_out_of_range_settings_are_refused_with_the_range():
    with pytest.raises(SpeechError, match="80-450"):
        VoiceSettings(rate=20)
    with pytest.raises(SpeechError, match="0.1-2.0"):
        VoiceSettings(volume=5)
    assert VoiceSettings(rate=440).adjusted(rate=50).rate == 450  # steps clamp, never raise


def test_no_espeak_ng_gives_the_install_command(monkeypatch):
    # What a machine without espeak-ng looks like to this module: the binding
    # cannot load its library and there is no command on PATH.
    monkeypatch.setattr(speech, "_ENGINE", None)
    import pyttsx3.drivers

    monkeypatch.setitem(sys.modules, "pyttsx3.drivers._espeak", None)
    monkeypatch.delattr(pyttsx3.drivers, "_espeak", raising=False)
    monkeypatch.setenv("PATH", "")
    with pytest.raises(NoSpeechEngine) as err:
        render("Eight")
    assert "apt-get install espeak-ng" in str(err.value) and "text" in str(err.value)
