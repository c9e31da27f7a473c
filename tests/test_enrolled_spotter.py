"""The model-free spotter on the player fixtures, streamed chunk by chunk."""

from __future__ import annotations

from pathlib import Path

import pytest

from voicesnap import corpus as C
from voicesnap.audio import ArraySource
from voicesnap.spotters.enrolled import EnrolledSpotter

from voicefixtures import NAMES, PLAYERS_DIR, profile

WORDS = ["snap", "snap pool"]


@pytest.fixture(scope="module")
def spotter_factory():
    profiles = [profile(n) for n in NAMES]
    return lambda **kw: EnrolledSpotter(profiles, **kw)


def detect(spotter, fx, chunk=320):
    dets = []
    for ch in ArraySource(fx.read(), fx.rate, chunk_frames=chunk):
        dets += spotter.accept(ch)
    return dets + spotter.flush()


@pytest.mark.parametrize("name", ["bob", "finn"])
def test_heldout_calls_found_with_player_and_precise_onsets(spotter_factory, name):
    fx = C.load(PLAYERS_DIR / "heldout" / f"{name}.json")
    dets = detect(spotter_factory(), fx)
    sc = C.score(fx, dets, words=WORDS)
    assert len(sc.hits) >= 8 and not sc.false, (sc.misses, sc.false)
    assert all(m.detection.player == name and m.detection.engine == "enrolled" for m in sc.hits)
    assert max(abs(e) for e in sc.onset_errors) <= 0.015
    assert all(d.detected_at >= d.end for d in dets)


def test_chunk_size_does_not_change_results(spotter_factory):
    fx = C.load(PLAYERS_DIR / "heldout" / "cara.json")
    a = [(d.word, d.onset, d.player) for d in detect(spotter_factory(), fx, 160)]
    b = [(d.word, d.onset, d.player) for d in detect(spotter_factory(), fx, 4000)]
    assert a == b and len(a) >= 8


@pytest.mark.parametrize("who", ["stranger1", "announcer"])
def test_unknown_voices_give_no_calls(spotter_factory, who):
    fx = C.load(PLAYERS_DIR / "unknown" / f"{who}.json")
    assert detect(spotter_factory(), fx) == []


def test_animal_snap_calls_any_word():
    """Each player's animal noise, enrolled from 4 takes, is found in their 5th take,
    and in noise with wider jitter most calls are found, none misattributed, and
    the same players' plain "snap" is not their call."""
    from voicesnap import voices as V
    from voicefixtures import takes_of

    words = {"alice": "woof", "bob": "meow", "cara": "moo"}
    profiles = [V.build_profile(n, w, takes_of(n, "animal")[:4]) for n, w in words.items()]
    for name, word in words.items():
        fx = C.load(PLAYERS_DIR / "animal" / f"{name}_{word}_5.json")
        dets = detect(EnrolledSpotter(profiles), fx)
        assert [(d.word, d.player) for d in dets] == [(word, name)]
        assert abs(dets[0].onset - fx.segments[0].onset / 16000) <= 0.015
    full = [V.build_profile(n, w, takes_of(n, "animal")) for n, w in words.items()]
    fx = C.load(PLAYERS_DIR / "animal" / "heldout.json")
    dets = detect(EnrolledSpotter(full), fx)
    sc = C.score(fx, dets, words=list(words.values()))
    assert len(sc.hits) >= 5 and not sc.false, (sc.misses, sc.false)
    assert all(m.detection.player == m.segment.speaker for m in sc.hits)


def test_multichannel_attributes_by_mic_and_drops_crosstalk():
    profiles = [profile(n, channel=i) for i, n in enumerate(["alice", "bob"])]
    fx = C.load(PLAYERS_DIR / "multichannel" / "mc2.json")
    dets = detect(EnrolledSpotter(profiles), fx)
    sc = C.score(fx, dets, words=WORDS)
    assert len(sc.hits) == len(fx.segments) == 6, (sc.misses, sc.false)
    assert not sc.false  # crosstalk on the other mic is not a second call
    for m in sc.hits:
        assert m.detection.channel == m.segment.channel
        assert m.detection.player == m.segment.speaker
    # the pairs 30 ms apart on two mics keep two onsets each for the referee
    onsets = sorted(m.detection.onset for m in sc.hits)[2:]
    for first, second in (onsets[0:2], onsets[2:4]):
        assert second - first == pytest.approx(0.030, abs=0.005)


# --- the combined engine (needs a real Vosk English model) -----------------------------


@pytest.fixture(scope="module")
def vosk_model():
    import os
    import tempfile

    from voicesnap import models

    data = os.environ.get("VOICESNAP_DATA_DIR") or tempfile.mkdtemp(prefix="voicesnap-test-data-")
    try:
        path = models.find_model("en", data=data)
    except models.ModelError:
        pytest.skip("no English Vosk model: set VOICESNAP_VOSK_MODEL or run 'voicesnap models download' "
                    "(.ci/run fetches one from Maven Central)")
    from voicesnap.spotters.vosk_spotter import load_model

    return load_model(path)


CORPUS = PLAYERS_DIR.parent / "corpus"


@pytest.mark.vosk_model
@pytest.mark.parametrize("name", ["clean_bob", "echo_ranks"])
def test_combined_names_the_caller_and_stays_quiet_on_echo(vosk_model, name):
    from voicesnap.spotters.combined import CombinedSpotter
    from voicesnap.spotters.vosk_spotter import VoskSpotter

    if not (CORPUS / f"{name}.json").exists():
        pytest.skip(f"corpus fixture {name} is missing (python3 tests/fixtures/audio/generate.py)")
    fx = C.load(CORPUS / f"{name}.json")
    profiles = [profile(n) for n in NAMES]
    dets = detect(CombinedSpotter(VoskSpotter(vosk_model), EnrolledSpotter(profiles)), fx)
    sc = C.score(fx, dets, words=WORDS)
    assert not sc.false, sc.false
    assert len(sc.hits) == len(fx.targets(WORDS))
    for m in sc.hits:
        assert m.detection.engine == "combined" and m.detection.player == m.segment.speaker


def test_no_pool_makes_snap_final_sooner(spotter_factory):
    fx = C.load(PLAYERS_DIR / "heldout" / "emma.json")
    waiting = {round(d.onset, 3): d.detected_at - d.end for d in detect(spotter_factory(), fx) if d.word == "snap"}
    eager = {round(d.onset, 3): d.detected_at - d.end
             for d in detect(spotter_factory(pool_exists=False), fx) if d.word == "snap"}
    assert set(eager) >= set(waiting) and len(waiting) >= 5
    assert all(eager[k] < waiting[k] for k in waiting)


@pytest.mark.vosk_model
def test_combined_gives_strangers_calls_to_nobody(vosk_model):
    from voicesnap.spotters.combined import CombinedSpotter
    from voicesnap.spotters.vosk_spotter import VoskSpotter

    fx = C.load(PLAYERS_DIR / "unknown" / "stranger1.json")
    dets = detect(CombinedSpotter(VoskSpotter(vosk_model), EnrolledSpotter([profile(n) for n in NAMES])), fx)
    assert len(C.score(fx, dets, words=WORDS).hits) >= 6  # Vosk hears the calls...
    assert all(d.player is None for d in dets)  # ...and nobody enrolled made them


def _pairs(fx):
    segs = list(fx.segments)
    return [(a, b) for a, b in zip(segs[0::2], segs[1::2])]


def test_one_mic_ties_give_both_players_their_own_onsets(spotter_factory):
    """Two players' "snap" mixed on one mic, 0-200 ms apart: both calls, each onset within 30 ms."""
    heard = []
    for pair in ("alice_bob", "cara_dev"):
        fx = C.load(PLAYERS_DIR / "overlap" / f"{pair}.json")
        dets = detect(spotter_factory(), fx)
        for a, b in _pairs(fx):
            ok = all(any(d.player == s.speaker and abs(d.onset - s.onset / fx.rate) <= 0.03 for d in dets)
                     for s in (a, b))
            heard.append(((b.onset - a.onset) // 16, ok))
    assert sum(ok for _, ok in heard) >= 9, heard


@pytest.mark.parametrize("folder, name", [("unknown", "stranger1"), ("unknown", "stranger2"),
                                          ("heldout", "alice"), ("heldout", "dev"), ("nearmiss", "dev")])
def test_lone_voices_are_not_split_into_ties(spotter_factory, folder, name):
    fx = C.load(PLAYERS_DIR / folder / f"{name}.json")
    dets = detect(spotter_factory(), fx)
    ties = [(d.player, e.player, d.onset) for i, d in enumerate(dets) for e in dets[i + 1:]
            if e.player != d.player and abs(e.onset - d.onset) <= 0.25]
    assert not ties, ties


@pytest.mark.parametrize("name", ["alice", "bob", "cara", "dev", "emma", "finn"])
def test_near_miss_snack_is_refused_and_own_calls_still_heard(spotter_factory, name):
    """A player's "snack" fits their "snap" template as a whole (it was taken as a call
    on every player's near-miss file), but not at its end (Voices.near_miss); the
    same player's calls in the clean corpus file are all still heard, as theirs."""
    near = C.load(C.CORPUS_DIR / f"nearmiss_{name}.json")
    snacks = [s for s in near.segments if s.text == "snack"]
    assert snacks
    sp = spotter_factory()
    dets = detect(sp, near)
    taken = [d for s in snacks for d in dets if d.word in WORDS and abs(d.onset - s.onset / near.rate) <= 0.25]
    assert taken == [], taken
    # and each refusal is kept with its reason, so "why was that not a call?" has an answer
    refused = sp.take_refusals()
    for s in snacks:
        assert any(r.player == name and r.word == "snap" and "its end fits" in r.reason
                   and r.onset - 0.1 <= s.onset / near.rate <= r.end for r in refused), (s, refused)
    assert sp.take_refusals() == []  # handed over once
    clean = C.load(C.CORPUS_DIR / f"clean_{name}.json")
    sc = C.score(clean, detect(spotter_factory(), clean), words=WORDS)
    assert not sc.misses and not sc.false, (sc.misses, sc.false)
    assert all(m.detection.player == name for m in sc.hits)


def test_another_engines_span_is_judged_on_the_stream_clock_when_the_stream_starts_late(spotter_factory):
    """Spans handed in by another engine (``attribute_span``, ``call_in_span``) are seconds on the
    stream's clock. A stream whose first chunk is not at sample 0 (here 3 s) must give the same
    answers as one that starts at 0; the spans used to be taken as if it did (every call nobody's)."""
    fx = C.load(C.CORPUS_DIR / "snap_vs_pool_1.json")
    answers = {}
    for start in (0, 3 * fx.rate):
        sp = spotter_factory()
        t0 = start / fx.rate
        todo = [(s.onset / fx.rate + t0, s.end / fx.rate + t0, s.text) for s in fx.segments]
        named, found = [], []
        for ch in ArraySource(fx.read()[:, :1], fx.rate, chunk_frames=320, start=start):
            sp.accept(ch)
            while todo and todo[0][1] + 0.15 <= sp.position:  # asked as the combined engine asks
                a, b, word = todo.pop(0)
                named.append(sp.attribute_span(a, b, word)[1].player)
                d = sp.call_in_span(a - 0.3, b + 0.3)
                found.append((d.player, round(d.onset - t0, 4)) if d else None)
        answers[start] = (named, found)
    assert answers[0] == answers[3 * fx.rate], answers
    assert sum(p is not None for p in answers[0][0]) >= 6, answers  # the check says something


@pytest.fixture(scope="module")
def saved_players(tmp_path_factory):
    """A data dir with the six fixture players' profiles saved, as `voicesnap enroll` leaves it."""
    from voicesnap import voices

    data = tmp_path_factory.mktemp("data")
    for n in NAMES:
        voices.save_profile(profile(n), str(data))
    return data


def test_listen_says_why_a_near_miss_was_not_a_call(saved_players, capsys):
    """`voicesnap listen` is how a player checks their set-up: a "snack" that looked like their
    call is shown as not a call, with the reason, in text and as a typed JSON record."""
    from voicesnap import events
    from voicesnap.cli import main
    from voicesnap.spotters import Detection, Refusal

    data = saved_players
    wav = str(C.CORPUS_DIR / "nearmiss_cara.wav")
    snacks = [s for s in C.load(C.CORPUS_DIR / "nearmiss_cara.json").segments if s.text == "snack"]
    assert main(["--data-dir", str(data), "listen", "--engine", "enrolled", "--file", wav, "--json"]) == 0
    records = [events.loads(line) for line in capsys.readouterr().out.splitlines()]
    refused = [r for r in records if isinstance(r, Refusal)]
    assert len(refused) == len(snacks) and all(r.player == "cara" for r in refused), records
    assert all(isinstance(r, (Detection, Refusal)) for r in records)
    assert main(["--data-dir", str(data), "listen", "--engine", "enrolled", "--file", wav]) == 0
    lines = [ln for ln in capsys.readouterr().out.splitlines() if ln.startswith("(not a call)")]
    assert len(lines) == len(snacks) and all("like cara's 'snap' was taken for another word" in ln for ln in lines)


def test_a_game_log_keeps_why_a_near_miss_was_not_a_call(saved_players, tmp_path):
    """In a game the refusal goes into the log, so that after the game "why was my 'snap' not
    counted?" can be answered from it (nothing is said aloud: most near misses are chatter)."""
    import json

    from voicesnap.cli import main

    data, folder = saved_players, tmp_path / "game"
    wav = str(C.CORPUS_DIR / "nearmiss_cara.wav")
    snack = next(s for s in C.load(C.CORPUS_DIR / "nearmiss_cara.json").segments if s.text == "snack")
    assert main(["--data-dir", str(data), "play", "--players", "cara,dev", "--engine", "enrolled",
                 "--input-file", wav, "--quiet", "--text", "--no-keyboard", "--seed", "3",
                 "--record", str(folder)]) == 0
    log = [json.loads(line) for line in (folder / "log.jsonl").read_text().splitlines()]
    notes = [i for i, r in enumerate(log) if r["type"] == "table-note" and "taken for another word" in r["text"]]
    assert len(notes) == 1 and "cara's 'snap'" in log[notes[0]]["text"], notes
    assert abs(log[notes[0]]["now"] - snack.onset / 16000) <= 0.1
    # logged as the game went on (before the next card), not only when the audio ended
    assert any(r["type"] == "flipped" and r["t"] > snack.end / 16000 for r in log[notes[0]:]), log[notes[0]:]


def _with_noise_over_its_end(fx, seg, seed: int):
    """1 s either side of ``seg``, with white noise 20 dB under its peak over its last 80 ms and 200 ms
    after (a hand slapping the pile as the player shouts)."""
    import numpy as np

    x = fx.read()[:, :1].astype(np.float64)
    peak = float(np.abs(x[seg.onset:seg.end]).max())
    a, b = seg.end - 80 * fx.rate // 1000, seg.end + fx.rate // 5
    x[a:b, 0] += np.random.default_rng(seed).normal(0.0, peak * 0.1, b - a)
    lo, hi = seg.onset - fx.rate, min(len(x), seg.end + fx.rate)
    return np.clip(x[lo:hi], -32768, 32767).astype(np.int16)


def test_a_call_with_a_noise_over_its_end_is_still_heard(monkeypatch):
    """The 24 clean "snap"s of the corpus, each with a loud noise over its end: the stretch runs
    into the noise and its cepstral mean with it, so the call no longer fits; matched again cut to
    the best fit (voices.attribution.CROP_LOUD_DB), most are heard, each as its player, at its onset."""
    import numpy as np

    profiles = [profile(n) for n in NAMES]
    corpus = PLAYERS_DIR.parent / "corpus"

    def heard() -> int:
        n_heard = 0
        for name in NAMES:
            fx = C.load(corpus / f"clean_{name}.json")
            for i, seg in enumerate(s for s in fx.segments if s.text == "snap"):
                sp = EnrolledSpotter(profiles)
                y = _with_noise_over_its_end(fx, seg, i)
                dets = [d for ch in ArraySource(y, fx.rate, chunk_frames=320) for d in sp.accept(ch)] + sp.flush()
                assert all(d.player == name for d in dets), dets  # never another player
                n_heard += any(d.word == "snap" and abs(d.onset - 1.0) <= 0.03 for d in dets)
        return n_heard

    # measured 14 of 24 without the speaker encoder, 12 with it (CI: two calls fall just under its
    # line, whether it hears the whole stretch, slap included, or since 4a17af6 only the call)
    assert heard() >= 10
    from voicesnap.voices import attribution

    monkeypatch.setattr(attribution, "CROP_LOUD", float(np.inf))  # without the second match: 4 of 24 (2 with the encoder)
    assert heard() <= 6


def test_the_model_free_engine_hears_hard_clipped_calls_against_takes_clipped_alike(spotter_factory):
    """The corpus's six calls driven 12-18 dB past full scale fit no clean take: the engine without a
    model heard none of them. A stretch with 2% or more of its samples at full scale is matched against
    the takes clipped the same way (voices.loudness): four are heard (measured), each as its own caller."""
    fx = C.load(C.CORPUS_DIR / "clipped_calls.json")
    sc = C.score(fx, detect(spotter_factory(), fx), words=WORDS)
    assert len(sc.hits) >= 3 and not sc.false, (sc.misses, sc.false)
    assert all(m.detection.player == m.segment.speaker for m in sc.hits)


def test_calls_one_after_another_in_table_chatter_are_each_heard(spotter_factory):
    """Chatter 20 dB under the calls joins each call's stretch to what follows. The engine held a
    "snap" for a possible "pool", judged it with the chatter after it as one stretch, lost it when
    that fitted nothing, and hid the next calls inside the growing stretch; the speaker encoder also
    heard the chatter with the call. Measured on the corpus file: with the encoder none of its six
    calls heard before, the three "snap"s of cara, dev and finn now (without the encoder 2 -> 3), each
    named right; bob's and emma's "snap pool" fail the near-miss check, alice's "snap" its template."""
    fx = C.load(C.CORPUS_DIR / "noisy_babble_20db.json")
    dets = detect(spotter_factory(), fx)
    sc = C.score(fx, dets, words=WORDS)
    assert len(sc.hits) >= 3 and all(m.detection.player == m.segment.speaker for m in sc.hits), sc.misses
    # nothing invented from the chatter (without the encoder bob's "snap pool" is heard as his "snap")
    said = [seg.onset / fx.rate for seg in fx.segments]
    assert all(min(abs(d.onset - t) for t in said) <= 0.1 for d in dets), dets


CORPUS = PLAYERS_DIR.parent / "corpus"


def test_calls_in_noise_are_placed_at_their_rise(spotter_factory):
    """Pink noise 20 dB under the calls: every call heard within 10 ms of its onset. The template's start
    is moved to the energy rise near it, as the other spotters place theirs; before, emma's "snap pool"
    was placed 33 ms early and two more 12-15 ms."""
    fx = C.load(CORPUS / "noisy_pink_20db.json")
    sc = C.score(fx, detect(spotter_factory(), fx), words=WORDS)
    assert len(sc.hits) == 6 and not sc.false, (sc.misses, sc.false)
    assert max(abs(e) for e in sc.onset_errors) <= 0.010, [round(e * 1000, 1) for e in sc.onset_errors]


def test_one_mic_ties_of_the_corpus_keep_both_onsets_within_10_ms(spotter_factory):
    """The corpus's 18 one-mic overlaps (0-200 ms apart): a tie moves by its first caller's shift to the
    energy rise, the second keeping its offset. With these profiles both callers are named within 10 ms
    in 12 (11 before: bob's and alice's 200 ms pair was placed 20-25 ms early); of the rest, four lose
    or swap a caller and two are placed 15 ms off on the templates' 10 ms grid."""
    within = []
    for path in sorted(CORPUS.glob("overlap_*.json")):
        fx = C.load(path)
        dets = detect(spotter_factory(), fx)
        calls = [s for s in fx.segments if s.kind == "call"]
        within.append(all(any(d.player == s.speaker and abs(d.onset - s.onset / fx.rate) <= 0.010 for d in dets)
                          for s in calls))
    assert len(within) == 18 and sum(within) >= 12, within


def _heard(profiles, rel: str):
    from voicefixtures import wav

    samples, rate = wav(rel)
    sp = EnrolledSpotter(profiles)
    dets, refused = [], []
    for chunk in ArraySource(samples, rate, chunk_frames=320):
        dets += sp.accept(chunk)
        refused += sp.take_refusals()
    return dets + sp.flush(), refused + sp.take_refusals()


def test_a_players_slap_is_told_from_their_snap_by_their_own_slap_takes():
    """Without a model the enrollment alone decides what was called, and alice's "slap" (players/nearmiss)
    fits her "snap" takes: a call. With her three "slap" takes (enroll asks for them) it fits those better
    than any call take, and is refused with that reason; her real call and dev's are still heard."""
    import dataclasses

    from voicesnap import voices as V

    from voicefixtures import encoder_or_skip, takes_of

    encoder_or_skip()
    plain = [profile(n) for n in NAMES]
    told = [dataclasses.replace(p, extra={**p.extra, "contrast": V.contrast_extra(takes_of(p.name, contrast=True))})
            for p in plain]
    for who in ("alice", "dev"):
        fx = C.load(PLAYERS_DIR / "nearmiss" / f"{who}.json")
        slap = next(g for g in fx.segments if g.text == "slap")
        call = next(g for g in fx.segments if g.text == "snap")
        over = lambda d, g: d.onset < g.end / fx.rate and g.onset / fx.rate < d.end
        before, _ = _heard(plain, f"nearmiss/{who}.wav")
        after, refused = _heard(told, f"nearmiss/{who}.wav")
        assert [d.player for d in after if over(d, call)] == [who]
        if who == "alice":
            assert [d.player for d in before if over(d, slap)] == ["alice"]
            assert not [d for d in after if over(d, slap)], after
            assert any(over(r, slap) and "alice's 'slap' takes" in r.reason for r in refused), refused
        # dev's "slap" was no call before either; everything else he said is heard as before
        assert [(d.word, d.player, d.onset) for d in after if not over(d, slap)] == \
            [(d.word, d.player, d.onset) for d in before if not over(d, slap)]


def test_one_damaged_profile_does_not_stop_listen_for_the_others(saved_players, capsys):
    """A damaged profile stopped `voicesnap listen` for everyone (exit 2); it is left out, and said."""
    from voicesnap.cli import main

    data = saved_players
    (Path(data) / "players" / "bob.json").write_text("{")
    wav = str(C.CORPUS_DIR / "clean_cara.wav")
    assert main(["--data-dir", str(data), "listen", "--engine", "enrolled", "--file", wav]) == 0
    got = capsys.readouterr()
    assert "bob.json is damaged" in got.err and "left out" in got.err, got.err
    assert "player cara" in got.out, got.out
    # each number named ("conf 0.50  ch 0  player cara 0.72" read aloud as bare numbers)
    line = next(ln for ln in got.out.splitlines() if "player cara" in ln)
    assert ", confidence " in line and ", channel 0, player cara, voice match 0." in line, line
    assert " conf " not in line and " ch 0 " not in line, line


def test_an_animal_noise_is_not_put_to_the_near_miss_check_measured_on_snap() -> None:
    """bob's own enrollment takes of "meow", played back over a room at -62 dBFS, were each refused as
    "another word" (their gliding ends fit his takes 2.4x as badly as the takes fit each other): in a
    hands-free Animal Snap game his call was never heard. The check was measured on "snap"'s near
    misses ("snack", "nap"); a noise has none known."""
    import numpy as np

    from voicesnap.audio import read_wav

    takes = sorted((PLAYERS_DIR / "animal").glob("bob_meow_[1-5].wav"))
    rng = np.random.default_rng(5)
    track = rng.normal(0.0, 32768 * 10 ** (-62 / 20), 16000 * (3 * len(takes) + 1))
    for k, f in enumerate(takes):
        x = read_wav(f)[0][:, 0].astype(np.float64)
        track[16000 * (1 + 3 * k):16000 * (1 + 3 * k) + len(x)] += x
    spotter = EnrolledSpotter([profile("bob", "animal"), profile("cara", "animal")])
    found = []
    for chunk in ArraySource(np.clip(track, -32768, 32767).astype(np.int16), 16000, chunk_frames=320):
        found += spotter.accept(chunk)
    found += spotter.flush()
    assert [(d.word, d.player) for d in found] == [("meow", "bob")] * len(takes), found


def test_listen_hears_a_stereo_recording_of_one_mic_once_and_one_channel_alone(saved_players, tmp_path, capsys):
    """A file's channels are heard as one mix, as play hears a microphone: the enrolled engine, which hears
    each channel it is given on its own, showed every call of a stereo recording twice (channel 0 and 1)."""
    import json

    import numpy as np
    import soundfile as sf

    from voicesnap.audio import read_wav
    from voicesnap.cli import main

    data = saved_players
    mono = C.CORPUS_DIR / "clean_alice.wav"
    x, rate = read_wav(mono)
    stereo = tmp_path / "stereo.wav"
    sf.write(stereo, np.concatenate([x, x], axis=1), rate, subtype="PCM_16")

    def heard(wav) -> list[tuple[str, float, int]]:
        assert main(["--data-dir", str(data), "listen", "--engine", "enrolled", "--file", str(wav), "--json"]) == 0
        lines = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
        return [(d["word"], d["onset"], d["channel"]) for d in lines if d.get("type") != "refusal"]

    once = heard(mono)
    assert len(once) == len(C.load(C.CORPUS_DIR / "clean_alice.json").segments)
    assert heard(stereo) == once
    # --channel 1 hears channel 1 alone: where it is 10 dB under channel 0, the engine kept each call on the
    # louder channel 0 and listen, filtering to channel 1, showed none (Vosk and the keyword model showed all)
    quiet = (x.astype(np.float32) * 10 ** (-10 / 20)).astype(np.int16)
    uneven = tmp_path / "uneven.wav"
    sf.write(uneven, np.concatenate([x, quiet], axis=1), rate, subtype="PCM_16")
    sf.write(tmp_path / "quiet.wav", quiet, rate, subtype="PCM_16")
    on_one = heard(tmp_path / "quiet.wav")  # channel 1 as a file of its own
    assert len(on_one) == len(once)

    def on_channel(n: int) -> list[tuple[str, float, int]]:
        assert main(["--data-dir", str(data), "listen", "--engine", "enrolled", "--file", str(uneven), "--json",
                     "--channel", str(n)]) == 0
        lines = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
        return [(d["word"], d["onset"], d["channel"]) for d in lines if d.get("type") != "refusal"]

    assert on_channel(1) == [(w, t, 1) for w, t, _c in on_one]
    assert on_channel(0) == once
