"""Voice commands: the prefix rule, the keymap, the gate, and real fixture audio through Vosk."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

from voicesnap.announcer import Announcer, Settings, Verbosity, rehearse
from voicesnap.audio import AudioChunk
from voicesnap.commands import (
    KEYMAP, Command, CommandGate, allowed, from_detection, help_text, is_call,
)
from voicesnap.corpus import CORPUS_DIR, load
from voicesnap.playback import VirtualPlayback
from voicesnap.rules import Game
from voicesnap.spotters import Detection
from voicesnap.vocabulary import CALLS, COMMAND_PREFIX, COMMANDS, command_phrases

MODEL_CANDIDATES = (
    os.environ.get("VOICESNAP_VOSK_MODEL", ""),
    "/root/.cache/voicesnap-ci/vosk-model-small-en-us-aar-0.3.45",
)


def _det(word: str, onset: float = 1.0, player: str | None = "alice", conf: float = 1.0) -> Detection:
    return Detection(word, onset, onset + 0.5, conf, player=player)


# --- the prefix rule and the keymap ----------------------------------------------


def test_only_exact_prefixed_phrases_are_commands():
    for name, phrase in command_phrases().items():
        cmd = from_detection(_det(phrase, 2.5))
        assert cmd == Command(name, 2.5, "alice", "voice", 1.0)
    for word in (*CALLS, COMMAND_PREFIX, *COMMANDS.values(), "dealer snap", "snap pause", "dealer dealer"):
        assert from_detection(_det(word)) is None, word


def test_calls_and_commands_never_cross():
    for call in CALLS:
        assert is_call(_det(call)) and from_detection(_det(call)) is None
    for phrase in command_phrases().values():
        assert not is_call(_det(phrase))
    assert not is_call(_det(COMMAND_PREFIX)) and not is_call(_det("pause"))


def test_every_command_has_one_key_and_none_clashes_with_call_keys():
    from voicesnap.keyboard import SEAT_KEYS, announcer_command_keys

    assert set(KEYMAP) == set(COMMANDS)
    assert len(set(KEYMAP.values())) == len(KEYMAP)
    assert not set(KEYMAP.values()) & {k for seat in SEAT_KEYS for k in seat}
    assert announcer_command_keys() == {k: n for n, k in KEYMAP.items()}  # the keyboard uses this map


def test_help_lists_what_can_be_said_now_without_saying_a_command():
    playing, paused = help_text(paused=False), help_text(paused=True)
    assert "pause" in playing and "resume" not in playing
    assert "resume" in paused and " pause," not in paused and "flip" not in paused
    for text in (playing, paused, help_text(False, keys=True)):
        words = text.replace(",", " ").replace(".", " ").split()
        for i, w in enumerate(words[:-1]):
            assert not (w == COMMAND_PREFIX and words[i + 1] in {v.split()[0] for v in COMMANDS.values()}), text


def test_gate_echo_refractory_and_confidence():
    spoken = [(5.0, 6.0)]
    gate = CommandGate(speaking=lambda t: any(a <= t <= b for a, b in spoken), min_confidence=0.5)
    assert gate.accept(_det("dealer pause", 5.5, player=None)) is None  # the announcer's own voice
    assert gate.accept(_det("dealer pause", 5.5, player="bob")).name == "pause"  # a player barging in
    assert gate.accept(_det("dealer pause", 6.0, player="bob")) is None  # same utterance again
    assert gate.accept(_det("dealer status", 8.0, conf=0.3)) is None
    assert gate.accept(_det("dealer status", 9.0)).name == "status"
    assert gate.counts == {"echo": 1, "repeat": 1, "low confidence": 1}


def test_state_rules():
    assert allowed("resume", paused=True) and not allowed("resume", paused=False)
    assert not allowed("flip", paused=True) and allowed("status", paused=True)


# --- real audio through the real Vosk spotter ----------------------------------------


@pytest.fixture(scope="module")
def vosk_model():
    path = next((p for p in MODEL_CANDIDATES if p and Path(p, "am").is_dir()), None)
    if path is None:
        pytest.skip("no Vosk English model (set VOICESNAP_VOSK_MODEL; .ci/run fetches one)")
    try:
        from voicesnap.spotters.vosk_spotter import load_model
    except ImportError as exc:
        pytest.skip(f"the Vosk spotter is not available ({exc})")
    return load_model(path)


def _spot(model, samples: np.ndarray, rate: int = 16000) -> list[Detection]:
    from voicesnap.spotters.vosk_spotter import VoskSpotter

    spotter = VoskSpotter(model)
    dets: list[Detection] = []
    block = rate // 10
    for i in range(0, len(samples), block):
        dets += spotter.accept(AudioChunk(rate, 2, 1, i, samples[i : i + block].reshape(-1, 1)))
    return dets + spotter.flush()


def _fixture(name: str):
    import soundfile as sf

    fx = load(CORPUS_DIR / f"{name}.json")
    data, rate = sf.read(fx.path, dtype="int16")
    return fx, data, rate


def _gate_for(data: np.ndarray, rate: int) -> CommandGate:
    return CommandGate(audio=lambda a, b: data[max(0, int(a * rate)) : max(0, int(b * rate))])


@pytest.mark.vosk_model
def test_each_voice_command_from_fixture_audio(vosk_model):
    # Two takes of all 12 commands by six fixture voices. The spotter's own
    # misses and confusions are measured in bench/bench_announcer.py; here:
    # most commands are heard as themselves at the right time, and whatever
    # the gate lets through is a command that was said there, or a confusion
    # of one command phrase with another (never chatter or a call).
    right, wrong, as_calls, total = set(), [], [], 0
    for name in ("commands_1", "commands_2"):
        fx, data, rate = _fixture(name)
        dets = _spot(vosk_model, data, rate)
        segs = [s for s in fx.segments if s.kind == "command"]
        total += len(segs)
        for c in _gate_for(data, rate).feed(dets):
            near = [s for s in segs if abs(s.onset / rate - c.t) < 0.25]
            assert near, f"{name}: {c} heard where no command was said"
            if near[0].text == command_phrases()[c.name]:
                right.add((name, c.name))
            else:
                wrong.append((name, near[0].text, c.name))
        as_calls += [(name, d.word, round(d.onset, 2)) for d in dets if is_call(d)
                     and any(s.onset / rate - 0.3 <= d.onset <= s.end / rate for s in segs)]
    assert len(right) >= 0.7 * total, (sorted(right), wrong)
    assert len({c for _, c in right}) >= 10, sorted(right)
    assert len(wrong) <= 2 and len(as_calls) <= 2, (wrong, as_calls)
    # The spotter's command pass: with call words boosted 100x in the main
    # grammar, "dealer status" was heard as "dealer snap" (a call inside a
    # command) and "dealer slower" as "dealer louder"; re-decoded with the
    # command phrases only, both are heard as said and nothing is a call.
    assert ("commands_2", "status") in right and ("commands_2", "slower") in right, (sorted(right), wrong)
    assert as_calls == [], as_calls
    # commands_2's "dealer score" (bob) was heard as "dealer slower": a question taken for a pace change.
    # Both takes of each are heard as said now (vosk_spotter.SCORE_GAP), and nothing else as "slower".
    assert {("commands_1", "score"), ("commands_2", "score"), ("commands_1", "slower")} <= right, (sorted(right), wrong)
    assert [w for w in wrong if w[2] == "slower"] == [], wrong


@pytest.mark.vosk_model
def test_no_command_fires_from_chatter(vosk_model):
    for name in ("bare_command_words", "chatter_players"):
        fx, data, rate = _fixture(name)
        commands = _gate_for(data, rate).feed(_spot(vosk_model, data, rate))
        assert commands == [], f"{name}: {commands}"


@pytest.mark.vosk_model
def test_no_command_or_call_fires_from_the_announcer(vosk_model, tmp_path, monkeypatch):
    from voicesnap.speech import NoSpeechEngine, SpeechCache

    monkeypatch.setenv("VOICESNAP_DATA_DIR", str(tmp_path))
    try:
        cache = SpeechCache.in_data_dir(tmp_path, rate=16000)
        cache.get("Eight")
    except NoSpeechEngine:
        pytest.skip("espeak-ng is not installed")
    pb = VirtualPlayback(16000, record=True)
    ann = Announcer(cache, pb, Settings(verbosity=Verbosity.ALL))
    game = Game(["alice", "bob", "cara"], seed=13)
    rehearse(game, ann, pb, seed=13, pace=1.2, max_flips=30)
    from voicesnap.commands import help_text as help_

    ann.say(help_(paused=False), ann.log[-1].priority, pb.now)
    pb.advance_to(pb.now + 8.0)
    audio = pb.recording()
    dets = _spot(vosk_model, audio)
    assert [d for d in dets if from_detection(d)] == []  # layer 1 alone: no echo gate needed
    assert [d for d in dets if d.word in CALLS] == []



@pytest.mark.vosk_model
@pytest.mark.parametrize("gated", [False, True])
def test_a_command_word_the_first_pass_cannot_place_is_heard_soon_behind_the_speech_gate(vosk_model, tmp_path,
                                                                                         gated):
    """espeak-ng's "dealer resume": the first pass hears "dealer" and then only "[unk]", and the command
    waited for that busy partial for 2 s; behind play's speech gate, which stops feeding 1 s after
    speech, it waited until someone spoke again (a live game stayed paused after "dealer resume")."""
    import shutil
    import subprocess

    import soundfile as sf

    from voicesnap.features import resample
    from voicesnap.spotters.gate import SpeechGate
    from voicesnap.spotters.vosk_spotter import VoskSpotter

    if shutil.which("espeak-ng") is None:
        pytest.skip("espeak-ng is not installed")
    subprocess.run(["espeak-ng", "-w", str(tmp_path / "r.wav"), "dealer resume"], check=True, timeout=30)
    said, rate = sf.read(tmp_path / "r.wav", dtype="float32")
    said = resample(said, rate)  # 16 kHz
    room = np.random.default_rng(0).normal(0, 30, 16000 * 8)
    start = 3 * 16000
    room[start : start + len(said)] += said * 16000
    audio = np.clip(room, -32768, 32767).astype(np.int16)
    spotter = SpeechGate(lambda: VoskSpotter(vosk_model)) if gated else VoskSpotter(vosk_model)
    found = []
    for i in range(0, len(audio), 320):
        found += spotter.accept(AudioChunk(16000, 2, 1, i, audio[i : i + 320].reshape(-1, 1)))
    resume = [d for d in found if d.word == "dealer resume"]
    assert len(resume) == 1, [(d.word, d.onset) for d in found]
    ended = (start + len(said)) / 16000
    assert resume[0].detected_at - ended < 0.6, (resume[0], ended)


def _espeak(text: str, voice: str, speed: int, pitch: int, seed: int = 0) -> np.ndarray:
    """``text`` said by espeak-ng, 16 kHz int16, peak at -8 dBFS, 1 s of faint room noise before, 2 s after."""
    import subprocess

    import soxr

    wav = subprocess.run(["espeak-ng", "-v", voice, "-s", str(speed), "-p", str(pitch), "--stdout", text],
                         capture_output=True, check=True, timeout=30).stdout
    x = soxr.resample(np.frombuffer(wav[44:], np.int16).astype(np.float32), 22050, 16000)  # espeak-ng: 22050 Hz
    x *= 10 ** (-8 / 20) * 32767 / (np.abs(x).max() + 1e-9)
    room = np.random.default_rng(seed).normal(0, 32767 * 10 ** (-60 / 20), 16000 * 3 + len(x))
    room[16000 : 16000 + len(x)] += x
    return np.clip(room, -32768, 32767).astype(np.int16)


@pytest.mark.vosk_model
def test_dealer_score_is_not_taken_for_the_pace_change(vosk_model):
    """"dealer score" by the fixture players' espeak-ng voices: alice's, cara's and emma's were heard as
    "dealer slower" (alice's and cara's with confidence 1.0), so asking for the score slowed the game down. The
    "s" of "score" is followed by the stop of its "k", that of "slower" by a voiced "l" at once: the spotter
    now hears the first as "score" and still hears every player's "dealer slower" as "slower"."""
    import json
    import shutil

    if shutil.which("espeak-ng") is None:
        pytest.skip("espeak-ng is not installed")
    players = json.loads((CORPUS_DIR.parent / "voices.json").read_text())["players"]
    heard: dict[str, list[str]] = {"dealer score": [], "dealer slower": []}
    for phrase in heard:
        for v in players.values():
            words = [d.word for d in _spot(vosk_model, _espeak(phrase, v["voice"], v["speed"], v["pitch"]))]
            heard[phrase].append(" / ".join(words))
    assert "dealer slower" not in heard["dealer score"], heard
    assert heard["dealer score"].count("dealer score") >= 5, heard  # (all 6 when measured)
    assert heard["dealer slower"] == ["dealer slower"] * 6, heard


@pytest.mark.vosk_model
def test_dealer_slower_is_not_taken_for_the_volume_change(vosk_model):
    """"dealer slower" by espeak-ng's en-gb-x-gbcwmd+m1 at speed 195, pitch 32 (one of the voices of
    ``python3 -m bench.score_slower louder``'s first draw) was heard as "dealer louder": a player asking the
    dealer to slow down got a louder dealer. "louder" has no "s": a "louder" whose word starts with the hiss of
    one is "slower" now (vosk_spotter.LOUDER_S). The same voice's "dealer louder", and every fixture player's,
    are still heard as "louder", and the corpus's two "dealer louder"s too."""
    import json
    import shutil

    if shutil.which("espeak-ng") is None:
        pytest.skip("espeak-ng is not installed")
    heard = [d.word for d in _spot(vosk_model, _espeak("dealer slower", "en-gb-x-gbcwmd+m1", 195, 32))]
    assert heard == ["dealer slower"], heard
    voices = [("en-gb-x-gbcwmd+m1", 195, 32)]
    voices += [(v["voice"], v["speed"], v["pitch"]) for v in
               json.loads((CORPUS_DIR.parent / "voices.json").read_text())["players"].values()]
    louder = [" / ".join(d.word for d in _spot(vosk_model, _espeak("dealer louder", *v))) for v in voices]
    assert louder == ["dealer louder"] * len(voices), list(zip(voices, louder))
    for name in ("commands_1", "commands_2"):
        fx, data, rate = _fixture(name)
        dets = _spot(vosk_model, data, rate)
        for seg in fx.segments:
            if seg.text == "dealer louder":
                near = [d.word for d in dets if d.word.startswith("dealer ") and abs(d.onset - seg.onset / rate) < 0.25]
                assert near == ["dealer louder"], (name, near)


def _word_times(model, samples: np.ndarray, word: str) -> tuple[float, float] | None:
    """Where Vosk places ``word`` (a grammar of it alone), as the spotter's command pass places its words."""
    import json

    import vosk

    rec = vosk.KaldiRecognizer(model, 16000, json.dumps([word, "[unk]"]))
    rec.SetWords(True)
    rec.AcceptWaveform(np.clip(samples, -32768, 32767).astype(np.int16).tobytes())
    found = [w for w in json.loads(rec.FinalResult()).get("result", []) if w["word"] == word]
    return (found[0]["start"], found[0]["end"]) if found else None


@pytest.mark.vosk_model
def test_a_stop_after_the_s_is_told_from_a_voiced_sound(vosk_model):
    """``Envelope.voice_after_s``, the check behind SCORE_GAP, on words other than the commands: real
    people's "stop" (Speech Commands) and the corpus players' "stop" have the closure of a "t" after the
    "s"; real "six", "seven", "sheila" and the players' "slap" (an "s" into an "l", as in "slower"),
    "snack" and "snow" run into their voice at once."""
    import soundfile as sf

    from voicesnap.onsets import Envelope
    from voicesnap.spotters.vosk_spotter import SCORE_GAP

    assert SCORE_GAP is not None

    def stop_like(gaps: tuple[float, float | None] | None) -> bool:
        assert SCORE_GAP is not None
        return gaps is not None and gaps[0] >= SCORE_GAP[0] and gaps[1] is not None and gaps[1] >= SCORE_GAP[1]

    real: dict[str, list[bool]] = {}
    for path in sorted((CORPUS_DIR.parent / "real" / "commands").glob("*/*.flac")):
        word = path.stem.split("_")[0]
        if word not in ("stop", "six", "seven", "sheila"):
            continue
        x = sf.read(path, dtype="float32")[0] * 32767
        frames = np.lib.stride_tricks.sliding_window_view(x, 1600)[::160]
        quiet = int(np.argmin((frames.astype(np.float64) ** 2).mean(axis=1))) * 160
        y = np.concatenate([np.tile(x[quiet : quiet + 1600], 5), x])  # 0.5 s of the clip's own room before it
        env = Envelope()
        env.push(0, y.astype(np.float32))
        times = _word_times(vosk_model, y, word)
        real.setdefault(word, []).append(times is not None and stop_like(env.voice_after_s(*times)))
    assert sum(real["stop"]) >= 5 and len(real["stop"]) == 6, real  # one speaker's "stop" gives no sign of it
    assert not any(real["six"] + real["seven"] + real["sheila"]), real
    players: dict[str, list[bool]] = {}
    for name in ("alice", "bob", "cara", "dev", "emma", "finn"):
        fx, data, rate = _fixture(f"nearmiss_{name}")
        env = Envelope(seconds=len(data) / rate + 1.0)
        env.push(0, data.astype(np.float32))
        for seg in fx.segments:
            if seg.text in ("stop", "slap", "snack", "snow"):
                players.setdefault(seg.text, []).append(stop_like(env.voice_after_s(seg.onset / rate, seg.end / rate)))
    assert all(players["stop"]) and not any(players["slap"]), players
    assert sum(players["snack"] + players["snow"]) <= 1, players  # dev's "snow"


@pytest.mark.vosk_model
def test_table_talk_is_no_command_in_a_game_and_listen_says_why(vosk_model, tmp_path, monkeypatch, capsys):
    """The game acted on every command phrase its spotter reported: the gate above ran only in the
    benchmark and these tests, so "... the dealer louder ..." in bare_command_words' table talk (15.1 s)
    would have turned the announcer up. The game's spotter (``cli.play.build_spotter``, which listen builds
    for enrolled players as play does) now runs it, and listen says why the phrase was no command. Every
    command of commands_1 is still heard."""
    import json

    from voicesnap.cli import main

    from voicefixtures import enroll_files

    monkeypatch.setenv("VOICESNAP_DATA_DIR", str(tmp_path / "data"))
    for name in ("alice", "bob"):
        assert main(["enroll", name, "--no-speech", "--contrast-takes", "0", "--from-files", *enroll_files(name)]) == 0
    capsys.readouterr()
    assert main(["listen", "--json", "--file", str(CORPUS_DIR / "bare_command_words.wav")]) == 0
    said = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert not [s for s in said if s["type"] == "detection" and s["word"].startswith(COMMAND_PREFIX)], said
    refused = [s for s in said if s["type"] == "refusal" and s["word"] == "dealer louder"]
    assert len(refused) == 1 and "in the middle of talk" in refused[0]["reason"], said
    assert main(["listen", "--file", str(CORPUS_DIR / "commands_1.wav")]) == 0
    out = capsys.readouterr().out
    assert sum(line.startswith(COMMAND_PREFIX) for line in out.splitlines()) == 11 and "not a command" not in out, out


@pytest.mark.vosk_model
def test_a_command_said_over_the_announcer_is_not_refused_for_its_speech(vosk_model):
    """The gate's lead-in rule (the quarter second before "dealer" 10 dB quieter than the command) would
    refuse a command said as the announcer speaks, for the announcer's own words before it: behind the
    echo canceller a lead-in where the game's own speech was removed is not held against it. Commands of
    commands_1 and commands_2 laid 0.15 s into each of echo_ranks' announcements (one room, as
    bench.echo_rows lays calls, after the game's first four announcements without them): the gate loses
    none of those heard without it (12); without its echo rule, several (3)."""
    from bench.echo_rows import MIX_SCALE, WARM, one_room
    from voicesnap.audio import ArraySource
    from voicesnap.echo import ArrayReference, EchoCancelled
    from voicesnap.spotters.command_gate import CommandGated
    from voicesnap.spotters.vosk_spotter import VoskSpotter

    er, _, rate = _fixture("echo_ranks")
    ref = er.read_reference()[:, 0]
    room = one_room(er.read()[:, 0].astype(np.float64), ref.astype(np.float64))
    takes = []
    for name in ("commands_1", "commands_2"):
        fx, data, _ = _fixture(name)
        takes += [(data[s.onset - 800: s.end + 800].astype(np.float64), s.text) for s in fx.segments
                  if s.kind == "command"]
    mixed, truth = room.copy(), []
    for i, s in enumerate(s for s in er.segments if s.kind == "announcement"):
        take, text = takes[i % len(takes)]
        at = s.onset + int(0.15 * rate)
        mixed[at - 800: at - 800 + len(take)] += take
        truth.append((len(room) + at, text))
    # the game's opening announcements first, without commands: the canceller has begun to learn the room
    lead = [s.onset for s in er.segments if s.kind == "announcement"][WARM]
    truth = [(t - len(room) + lead, text) for t, text in truth]
    pcm = np.clip(np.round(np.concatenate([room[:lead], mixed]) * MIX_SCALE), -32768, 32767).astype(np.int16)[:, None]
    played = np.concatenate([ref[:lead], ref]) * MIX_SCALE

    def heard(gated: bool, echo_rule: bool = True) -> int:
        inner = VoskSpotter(vosk_model, channel=None, pool_exists=False)
        if gated:
            inner = CommandGated(inner)
            inner.gate.echo_db = inner.gate.echo_db if echo_rule else float("inf")
        spotter = EchoCancelled(inner, ArrayReference(played))
        dets = [d for c in ArraySource(pcm, rate, chunk_frames=rate // 50) for d in spotter.accept(c)]
        dets += spotter.flush()
        return sum(any(d.word == text and abs(d.onset - t / rate) < 0.3 for d in dets) for t, text in truth)

    plain, gated, without_rule = heard(False), heard(True), heard(True, echo_rule=False)
    assert plain >= 8 and gated == plain and without_rule <= plain - 2, (plain, gated, without_rule)
