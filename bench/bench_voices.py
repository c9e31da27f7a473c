"""Voices: who called, measured on synthetic fixture players and on real human voices.

- Synthetic (text-dependent, the game's case): the six espeak-ng fixture
  players enroll 5 "snap" + 3 "snap pool" takes; their held-out calls (wider
  jitter, 15-25 dB noise) are attributed with 2, 4 or 6 of them enrolled. The
  calls of players not enrolled, the two strangers and the announcer are the
  unknown voices. Accuracy counts a call right only when the right player is
  named; false accepts are unknown calls given to anyone.
- Real voices (TEXT-INDEPENDENT: nobody in the open recordings says "snap"):
  Speech Commands speakers enroll 5 one-second words and are attributed on
  their other words by the voiceprint alone (templates of different words do
  not apply). This is a harder, different task than the game's; it shows how
  far the voiceprint alone goes on real voices. ``real-encoder``: the same
  protocol with the speaker encoder, alone and as Voices decides with it.
- Real voices, TEXT-DEPENDENT (the game's task on real speakers): LibriSpeech
  speakers' repeated short words ("the", "and", "of", cut with Vosk word
  timestamps, tests/fixtures/audio/real/words): a speaker with >= 5 takes of a
  word enrolls the first 5, and is attributed on the rest; every take of the
  speakers not enrolled is an unknown voice. Every set of 2 and 4 enrollable
  speakers (rotations) is run; the enrolled and combined engines' acceptance
  of the same held-out takes too.
- Equal error rate from all genuine vs impostor scores; time per attribution.
- Ties: the enrolled spotter over players/overlap (two players on one mic,
  0-200 ms apart) and players/multichannel (own mic each, 30 ms apart).
"""

from __future__ import annotations

import dataclasses
import itertools
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, cast

import numpy as np

from . import Row

if TYPE_CHECKING:  # heavy modules are imported where they are used
    from voicesnap.encoder import Encoder

AREA = "voices"
ROOT = Path(__file__).resolve().parent.parent
PLAYERS = ROOT / "tests" / "fixtures" / "audio" / "players"
SHARED = ROOT.parent / "shared" / "speech" / "speech_commands"
REAL_WORDS = ROOT / "tests" / "fixtures" / "audio" / "real" / "words"
ENROLL_TAKES = 5  # the game's own minimum (voices.MIN_CALL_TAKES)
NAMES = ("alice", "bob", "cara", "dev", "emma", "finn")


def _profiles():
    sys.path.insert(0, str(ROOT / "tests"))
    from voicefixtures import profile

    return {n: profile(n) for n in NAMES}


def _takes(name: str):
    """The fixture player's checked enrollment takes (voicefixtures.takes_of)."""
    sys.path.insert(0, str(ROOT / "tests"))
    from voicefixtures import takes_of

    return takes_of(name, "enroll")


def _calls():
    """(speaker, audio) for every held-out and unknown call, cut with 250 ms context."""
    from voicesnap.corpus import load

    out = []
    for folder in ("heldout", "unknown"):
        for side in sorted((PLAYERS / folder).glob("*.json")):
            fx = load(side)
            x = fx.read()[:, 0]
            for s in fx.segments:
                out.append((s.speaker, x[max(0, s.onset - 4000): s.end + 4000]))
    return out


def eer(genuine: list[float], impostor: list[float]) -> float:
    """Equal error rate: where false rejects of genuine scores equal false accepts of impostors."""
    if not genuine or not impostor:
        return float("nan")
    g, i = np.asarray(genuine), np.asarray(impostor)
    best = (2.0, 1.0)
    for t in np.unique(np.concatenate([g, i])):
        frr, far = float(np.mean(g < t)), float(np.mean(i >= t))
        if abs(frr - far) < best[0]:
            best = (abs(frr - far), (frr + far) / 2)
    return best[1]


# A trial: (players enrolled, the speaker is one of them, the closest voice is the speaker, its score).
Trial = tuple[int, bool, bool, float]


def stranger_line(trials: list[Trial], higher_closer: bool) -> float:
    """The score line that accepts only 2% of the strangers' trials (their closest voice's score)."""
    unknown = [sc for _k, known, _ok, sc in trials if not known]
    return float(np.percentile(unknown, 98 if higher_closer else 2)) if unknown else float("nan")


def at_line(trials: list[Trial], k: int, line: float, higher_closer: bool) -> tuple[float, int, int]:
    """With ``k`` players, at that line: (share of own takes named right, strangers accepted, strangers)."""
    inside = (lambda sc: sc > line) if higher_closer else (lambda sc: sc <= line)
    known = [(ok, sc) for kk, kn, ok, sc in trials if kk == k and kn]
    fa = [sc for kk, kn, _ok, sc in trials if kk == k and not kn]
    right = sum(ok and inside(sc) for ok, sc in known) / len(known) if known else float("nan")
    return right, sum(inside(sc) for sc in fa), len(fa)


# What fixture players "say" for enroll's speech sample, rendered in their espeak voice: table
# talk, about 20 s each, and each player other sentences (free speech differs from person to
# person; one text for all made the espeak voices' samples more alike than people's).
SPEECH_SENTENCES = (
    "Hello, I am glad to be playing tonight.", "We usually meet on Fridays after work.",
    "My favourite game is still snap, because it is quick and everyone shouts at once.",
    "Last week my brother won almost every round, so this time I have been practising.",
    "Shall we deal the cards and start now?", "I had a long day at the office and the train was late again.",
    "The weather has been cold and wet all week, but the garden looks lovely.",
    "Could somebody pass me a glass of water, please?", "I think the kitchen light needs a new bulb.",
    "My grandmother taught me this game when I was about seven years old.",
    "We should order some food before the shop closes.", "Remember to shuffle the deck properly this time.",
)


def synthetic_speech(name: str) -> np.ndarray:
    """A fixture player's free-speech sample: five of SPEECH_SENTENCES, in turn, in their espeak voice."""
    sys.path.insert(0, str(ROOT / "tests" / "fixtures" / "audio"))
    from generate_players import PLAYERS as VOICES_OF
    from generate_players import speak

    first = 2 * NAMES.index(name)
    text = " ".join(SPEECH_SENTENCES[(first + i) % len(SPEECH_SENTENCES)] for i in range(5))
    x = speak(text, VOICES_OF[name])
    return (x * (0.5 / float(np.max(np.abs(x))))).astype(np.float32)  # peak 0.5: safe to write as int16


def synthetic_speech_file(path: Path, name: str, seconds: float | None = None) -> Path:
    """``synthetic_speech(name)`` (its first ``seconds``) as a 16-bit WAV, for ``enroll --from-files``."""
    from voicesnap.audio import write_wav

    x = synthetic_speech(name)[: None if seconds is None else int(seconds * 16000)]
    return write_wav(path, np.round(x * 32767).astype(np.int16)[:, None], 16000)


def synthetic(quick: bool, encoder: Encoder | str | None = "auto", speech: bool = False) -> list[Row]:
    """``encoder``: Voices' default (the installed speaker encoder, if any), or None for the voiceprint only.

    ``speech``: the players also enroll a free-speech sample (``synthetic_speech``).
    """
    from voicesnap import encoder as E
    from voicesnap import voices as V

    enc = E.load_encoder() if encoder == "auto" else encoder
    how = " with the speaker encoder" if enc is not None else ", voiceprint only"
    profiles = _profiles()
    if speech:
        how += " and speech samples"
        profiles = {n: V.build_profile(n, p.word, _takes(n), encoder=enc, speech=synthetic_speech(n))
                    for n, p in profiles.items()}
    rival = V.announcer_profile("snap")
    calls = _calls()
    rows = []
    genuine: list[float] = []
    impostor: list[float] = []
    times: list[float] = []
    for k in (2, 4, 6):
        combos = list(itertools.combinations(NAMES, k))
        step = max(1, len(combos) // (2 if quick else 5))
        combos = combos[::step]
        right = known = fa = unknown = 0
        for combo in combos:
            vs = V.Voices([profiles[n] for n in combo], [rival] if rival else [], encoder=enc)
            for speaker, audio in calls:
                t0 = time.perf_counter()
                att = vs.attribute(audio)
                times.append(time.perf_counter() - t0)
                if speaker in combo:
                    known += 1
                    right += att.player == speaker
                else:
                    unknown += 1
                    fa += att.player is not None
                if k == 6:
                    for name, sc in att.scores.items():
                        (genuine if name == speaker else impostor).append(sc)
        target = ">= 0.95" if k == 4 else ""
        rows.append(Row(AREA, f"attribution accuracy, {k} players (synthetic{how}, held-out calls)",
                        right / known, "", target,
                        f"{right}/{known} calls over {len(combos)} player set(s); 5+3 takes each"))
        rows.append(Row(AREA, f"unknown voices accepted, {k} players (synthetic{how})", fa / unknown, "",
                        "<= 0.02", f"{fa}/{unknown}: strangers, announcer, players not enrolled"))
    rows.append(Row(AREA, f"equal error rate, 6 players (synthetic{how})", eer(genuine, impostor), "", "",
                    f"{len(genuine)} genuine, {len(impostor)} impostor scores"))
    rows.append(Row(AREA, f"time per attribution (median, synthetic{how})", 1000 * float(np.median(times)), "ms", "",
                    "one call with context, all enrolled players, incl. announcer rival"))
    return rows


def synthetic_both(quick: bool) -> list[Row]:
    """The synthetic rows as play runs them, and (full run, encoder installed) the voiceprint-only ones beside them."""
    from voicesnap import encoder as E

    rows = synthetic(quick)
    if not quick and E.load_encoder() is not None:
        rows += synthetic(quick, speech=True) + synthetic(quick, encoder=None)
    return rows


def corpus_calls(quick: bool) -> list[Row]:
    """Attribution of the listening corpus's calls (true spans, 250 ms context), 6 players enrolled."""
    from voicesnap import voices as V
    from voicesnap.corpus import load_corpus

    try:
        fixtures = load_corpus()
    except Exception as exc:
        return [Row(AREA, "corpus calls attributed", "n/a", note=f"skipped: {exc}")]
    rival = V.announcer_profile("snap")
    vs = V.Voices(list(_profiles().values()), [rival] if rival else [])
    right = wrong = nobody = 0
    by_cat: dict[str, list[int]] = {}
    for fx in fixtures:
        if fx.category == "overlap" or fx.channels != 1:
            continue
        calls = [s for s in fx.segments if s.kind == "call" and s.speaker in NAMES]
        if not calls:
            continue
        x = fx.read()[:, 0]
        for s in calls[: 3 if quick else None]:
            att = vs.attribute(x[max(0, s.onset - 4000): s.end + 4000])
            cat = by_cat.setdefault(fx.category, [0, 0])
            cat[1] += 1
            if att.player == s.speaker:
                right += 1
                cat[0] += 1
            elif att.player is None:
                nobody += 1
            else:
                wrong += 1
    total = right + wrong + nobody
    detail = ", ".join(f"{c} {a}/{n}" for c, (a, n) in sorted(by_cat.items()))
    return [
        Row(AREA, "corpus calls attributed to the right player (true spans)", right / total if total else float("nan"),
            "", "", f"{right}/{total}; {detail}"),
        Row(AREA, "corpus calls given to the WRONG player", wrong / total if total else float("nan"), "", "",
            f"{wrong}/{total} (and {nobody} called nobody's)"),
    ]


def speech_commands() -> dict[str, list[tuple[np.ndarray, np.ndarray, float]]]:
    """speaker -> [(whole 1 s clip as float, its trimmed word, SNR dB)] for Speech Commands speakers with >= 8 clips."""
    from voicesnap import features as F
    from voicesnap import voices as V
    from voicesnap.audio import read_wav

    speakers = {}
    for d in sorted(SHARED.iterdir()):
        files = sorted(d.glob("*.wav"))
        if len(files) >= 8:
            clips = []
            for f in files:
                x, rate = read_wav(f)
                y, _level, snr = V.trim(x[:, 0], rate)
                if len(y) > 1600:
                    clips.append((F.resample(x[:, 0], rate), y, snr))
            speakers[d.name] = clips
    return speakers


def speech_commands_combos(names: list[str], k: int, quick: bool) -> list[tuple[str, ...]]:
    """The same random player sets for every text-independent decider (3 quick, 10 full)."""
    combos = list(itertools.combinations(names, k))
    rng = np.random.default_rng(k)
    return [combos[i] for i in rng.choice(len(combos), min(len(combos), 3 if quick else 10), replace=False)]


def real(quick: bool) -> list[Row]:
    """Text-independent attribution by voiceprint on Speech Commands speakers."""
    from voicesnap import voices as V

    if not SHARED.is_dir():
        return [Row(AREA, "real voices", "n/a", note=f"skipped: {SHARED} is absent (../shared/speech)")]
    speakers = {n: [y for _x, y, _snr in clips] for n, clips in speech_commands().items()}
    names = sorted(speakers)
    prints = {n: [V.voiceprint(y) for y in clips] for n, clips in speakers.items()}
    rows = []
    genuine: list[float] = []
    impostor: list[float] = []
    trials: list[Trial] = []  # (k, known speaker, best model right, best ratio)
    for k in (2, 4, 6):
        combos = speech_commands_combos(names, k, quick)
        right = known = fa = unknown = 0
        for combo in combos:
            models = {}
            for n in combo:
                vps = np.stack(prints[n][:5])
                scale = np.maximum(vps.std(axis=0), V.VOICE_SCALE_FLOOR)
                center = vps.mean(axis=0)
                loo = [float(np.sqrt(np.mean(((vps[i] - np.delete(vps, i, 0).mean(0)) / scale) ** 2)))
                       for i in range(len(vps))]
                models[n] = (center, scale, V.VOICE_THRESHOLD_FACTOR * max(loo))
            for n in names:
                tests = prints[n][5:] if n in combo else prints[n]
                for vp in tests:
                    ratios = {m: float(np.sqrt(np.mean(((vp - c) / s) ** 2))) / t for m, (c, s, t) in models.items()}
                    who, r = min(ratios.items(), key=lambda kv: kv[1])
                    trials.append((k, n in combo, who == n, r))
                    got = who if r <= 1.0 else None
                    if n in combo:
                        known += 1
                        right += got == n
                    else:
                        unknown += 1
                        fa += got is not None
                    if k == 6:
                        for m, rr in ratios.items():
                            (genuine if m == n else impostor).append(-rr)
        rows.append(Row(AREA, f"attribution accuracy, {k} players (REAL voices, text-independent)",
                        right / known if known else float("nan"), "", "",
                        f"{right}/{known}; Speech Commands, enroll 5 words, test other words, voiceprint only"))
        rows.append(Row(AREA, f"unknown voices accepted, {k} players (REAL, text-independent)",
                        fa / unknown if unknown else float("nan"), "", "", f"{fa}/{unknown}"))
    rows.append(Row(AREA, "equal error rate, 6 players (REAL, text-independent)", eer(genuine, impostor), "", "",
                    f"{len(names)} speakers with >= 8 clips"))
    # calibration: the voice-ratio line that keeps unknown real voices <= 2% accepted, and its cost
    line = stranger_line(trials, higher_closer=False)
    for k in (2, 4, 6):
        share, fa, unknown = at_line(trials, k, line, higher_closer=False)
        rows.append(Row(AREA, f"REAL accuracy at the <= 2%-unknown voice line, {k} players", share, "", "",
                        f"line {line:.2f} (voice ratio); unknown accepted {fa}/{unknown}"))
    rows += _synthetic_at_voice_line(line)
    return rows


TI_LABEL = "REAL, text-independent"
TI_PHRASE = "word"  # the enrolled "call": the 5 enrollment words, all filed under one phrase


def _memo_encoder(enc):
    """The same encoder, remembering each stretch's embedding: the bench asks for one clip once per player set."""
    import copy

    memo: dict[tuple[bytes, bytes | None], np.ndarray] = {}
    inner = enc.embed
    out = copy.copy(enc)

    def embed(wav: np.ndarray, noise: np.ndarray | None = None) -> np.ndarray:
        key = (np.asarray(wav, np.float32).tobytes(), None if noise is None else np.asarray(noise, np.float32).tobytes())
        if key not in memo:
            memo[key] = inner(wav, noise=noise)
        return memo[key]

    out.embed = embed
    return out


def real_encoder(quick: bool) -> list[Row]:
    """The speaker encoder on the text-independent Speech Commands protocol (same speakers, sets, splits as ``real``).

    - encoder alone: WHO = the most alike enrolled embeddings (Voices.embedding_scores, no SNR gate),
      accepted when its cosine clears the player's threshold (median leave-one-out, capped at ENC_CAP);
    - Voices: what play decides (Voices.attribute on the whole 1 s clip) with profiles enrolled with the
      encoder from the first 5 words (build_profile, the 5 words filed as one phrase): the encoder's ratio
      averaged with the TEMPLATE ratio, and templates are of other words here.
    No announcer rival (the test words are not a call). EER from every score at 6 players.
    """
    from voicesnap import encoder as E
    from voicesnap import voices as V

    if not SHARED.is_dir():
        return [Row(AREA, f"speaker encoder ({TI_LABEL})", "n/a",
                    note=f"skipped: {SHARED} is absent (../shared/speech)")]
    enc = E.load_encoder()
    if enc is None:
        return [Row(AREA, f"speaker encoder ({TI_LABEL})", "n/a",
                    note="skipped: no encoder installed (voicesnap models download --kind encoder, "
                    "or VOICESNAP_ENCODER_MODEL)")]
    enc = _memo_encoder(enc)
    clips = speech_commands()
    names = sorted(clips)
    profiles = {n: V.build_profile(n, TI_PHRASE, [V.Take(TI_PHRASE, y) for _x, y, _snr in cs[:ENROLL_TAKES]],
                                   encoder=enc) for n, cs in clips.items()}
    kinds = ("encoder alone", "Voices")
    tally = {(kind, k): [0, 0, 0, 0, 0] for kind in kinds for k in (2, 4, 6)}  # right, known, fa, unknown, wrong
    scores: dict[str, tuple[list[float], list[float]]] = {kind: ([], []) for kind in kinds}
    trials: dict[str, list[Trial]] = {kind: [] for kind in kinds}  # k, known, right, score
    # why Voices named nobody where the encoder alone named the right player (known speakers)
    lost = {"gated": 0, "template": 0, "what": 0, "other": 0, "of": 0}
    own_templates: list[float] = []
    own_ratios: list[float] = []  # the encoder ratio of the speaker's own enrolled voice (1 = their threshold)
    fa_gate = [0, 0]  # unknown voices Voices accepted: by the encoder's rule, by the voiceprint under the SNR gate
    gated = sum(snr < V.ENC_MIN_SNR for cs in clips.values() for _x, _y, snr in cs)
    for k in (2, 4, 6):
        for combo in speech_commands_combos(names, k, quick):
            vs = V.Voices([profiles[n] for n in combo], encoder=enc)
            assert vs.encoder is not None, "profiles enrolled without the encoder"
            for spk in names:
                first = ENROLL_TAKES if spk in combo else 0
                for x, y, snr in clips[spk][first:]:
                    cos = vs.embedding_scores(y) or {}
                    who = max(cos, key=cos.__getitem__)
                    alone = who if vs.encoder_ratio(who, cos[who]) <= 1.0 else None
                    att = vs.attribute(x)
                    trials["encoder alone"].append((k, spk in combo, who == spk, cos[who]))
                    if att.details:
                        best = min(att.details, key=lambda p: att.details[p].get("rank", att.details[p]["combined"]))
                        trials["Voices"].append((k, spk in combo, best == spk, -att.details[best]["combined"]))
                    for kind, got in zip(kinds, (alone, att.player)):
                        t = tally[(kind, k)]
                        if spk in combo:
                            t[0] += got == spk
                            t[1] += 1
                            t[4] += got is not None and got != spk
                        else:
                            t[2] += got is not None
                            t[3] += 1
                    if spk not in combo and att.player is not None:
                        fa_gate[snr < V.ENC_MIN_SNR] += 1
                    if spk in combo:
                        own_ratios.append(vs.encoder_ratio(spk, cos[spk]))
                        d = att.details.get(spk) if att.details else None
                        if d is not None:
                            own_templates.append(d["template"])
                        if alone == spk and att.player is None:
                            lost["of"] += 1
                            reason = att.reason or ""
                            key = ("gated" if snr < V.ENC_MIN_SNR else "what" if "template and voiceprint" in reason
                                   else "template" if "template" in reason else "other")
                            lost[key] += 1
                        elif alone == spk:
                            lost["of"] += 1
                    if k == 6:
                        for kind, sc in (("encoder alone", cos), ("Voices", att.scores)):
                            for name, v in sc.items():
                                scores[kind][0 if name == spk else 1].append(v)
    rows = []
    for kind in kinds:
        how = ("encoder alone, cosine to enrolled words" if kind == "encoder alone"
               else "Voices with the encoder (WIRED: what play decides)")
        for k in (2, 4, 6):
            right, known, fa, unknown, wrong = tally[(kind, k)]
            rows.append(Row(AREA, f"{kind}: attribution accuracy, {k} players ({TI_LABEL})",
                            right / known if known else float("nan"), "", "",
                            f"{right}/{known} named right, {wrong} wrong; Speech Commands, enroll 5 words, test "
                            f"other words; {how}"))
            rows.append(Row(AREA, f"{kind}: unknown voices accepted, {k} players ({TI_LABEL})",
                            fa / unknown if unknown else float("nan"), "", "", f"{fa}/{unknown}"))
        g, i = scores[kind]
        rows.append(Row(AREA, f"{kind}: equal error rate, 6 players ({TI_LABEL})", eer(g, i), "", "",
                        f"{len(g)} genuine, {len(i)} impostor scores; {len(names)} speakers with >= 8 clips"))
        # the line (on the chosen player's score) that keeps unknown voices <= 2% accepted, and its cost
        line = stranger_line(trials[kind], higher_closer=True)
        what = (f"cosine > {line:.3f}" if kind == "encoder alone" else
                f"combined ratio < {-line:.2f} (play accepts <= {V.ACCEPT})")
        for k in (2, 4, 6):
            share, fa, unknown = at_line(trials[kind], k, line, higher_closer=True)
            rows.append(Row(AREA, f"{kind}: accuracy at the <= 2%-unknown line, {k} players ({TI_LABEL})",
                            share, "", "", f"line {what}; unknown accepted {fa}/{unknown}"))
    rows.append(Row(AREA, f"Voices named nobody where the encoder alone was right ({TI_LABEL})",
                    (lost["of"] and (lost["gated"] + lost["template"] + lost["what"] + lost["other"]) / lost["of"])
                    or 0.0, "", "",
                    f"of {lost['of']} own-voice trials the encoder alone named right: template over the limits "
                    f"{lost['template']}, template+voiceprint over ENC_WHAT_LIMIT {lost['what']}, under the "
                    f"{V.ENC_MIN_SNR:.0f} dB SNR gate {lost['gated']}, other {lost['other']}; own template ratio "
                    f"median {np.median(own_templates):.2f} (limit {V.R_LIMIT}); {gated} clips under the gate"))
    rows.append(Row(AREA, f"Voices: own words below the player's encoder threshold ({TI_LABEL})",
                    float(np.mean(np.array(own_ratios) > 1.0)), "", "",
                    f"encoder ratio > 1 on {sum(r > 1.0 for r in own_ratios)}/{len(own_ratios)} own-voice trials "
                    f"(median ratio {np.median(own_ratios):.2f}): the threshold is the median leave-one-out cosine "
                    f"of the enrollment takes (cap {V.ENC_CAP})"))
    rows.append(Row(AREA, f"Voices: unknown voices accepted by the voiceprint under the SNR gate ({TI_LABEL})",
                    fa_gate[1] / max(1, sum(fa_gate)), "", "",
                    f"{fa_gate[1]} of the {sum(fa_gate)} unknown voices accepted came from the {gated} clips under "
                    f"{V.ENC_MIN_SNR:.0f} dB SNR (the encoder is not asked; the voiceprint decides); "
                    f"{fa_gate[0]} by the encoder's rule"))
    return rows


ROOM_PAD = 0.3  # seconds of quiet room (-75 dBFS) each side of a real excerpt


def in_room(x: np.ndarray, seed: int) -> np.ndarray:
    """A cut word as a lone call: quiet room noise each side, so level checks and voice activity have a floor.

    The excerpts are cut from running speech (50 ms of the neighbouring
    sounds each side); without a quieter stretch around them the take checks
    find no level to trim against.
    """
    from voicesnap import features as F

    rng = np.random.default_rng(seed)
    pad = int(ROOM_PAD * F.RATE)
    room = rng.normal(0.0, 10 ** (-75 / 20), len(x) + 2 * pad).astype(np.float32)
    room[pad: pad + len(x)] += x
    return room


def real_words_takes(word: str) -> dict[str, list[tuple[np.ndarray, dict]]]:
    """speaker -> [(float audio in a quiet room, sidecar)] for one word of the real set, in source order."""
    import json

    from voicesnap import features as F
    from voicesnap.audio import read_wav

    out: dict[str, list[tuple[np.ndarray, dict]]] = {}
    for side in sorted((REAL_WORDS / word).glob("*.json")):
        meta = json.loads(side.read_text())
        x, rate = read_wav(side.with_suffix(".flac"), expect_rate=F.RATE)
        items = out.setdefault(meta["speaker"], [])
        items.append((in_room(F.to_float(x[:, 0]), len(items)), meta))
    return out


def real_words_profiles(word: str, takes: dict[str, list[tuple[np.ndarray, dict]]], speech: bool | str = False,
                        chosen: dict[str, list[int]] | None = None, root: Path | None = None):
    """Profiles of every speaker with enough takes (the first ENROLL_TAKES), and how many takes enrollment would refuse.

    ``speech``: each also enrolls SPEECH_SECONDS of free speech (``real_words_speech``; "paused": with pauses).
    ``chosen``: speaker -> the indices of the takes to enroll instead of the first ones (``real_words_draws``).
    ``root``: where the speech comes from (``real_words_speech``); tests pass their committed copies.
    """
    from voicesnap import voices as V

    profiles, refused = {}, 0
    for spk, items in takes.items():
        if len(items) < ENROLL_TAKES:
            continue
        picked = set(chosen[spk]) if chosen is not None else set(range(ENROLL_TAKES))
        enroll = []
        for x, _meta in (items[i] for i in sorted(picked)):
            y, problems = V.check_take(x, phrase=word)
            refused += bool(problems)
            enroll.append(V.Take(word, y if len(y) else x))
        held = [item for i, item in enumerate(items) if i not in picked]
        talk = real_words_speech(spk, held, paused=speech == "paused", root=root or LIBRISPEECH) if speech else None
        profiles[spk] = V.build_profile(spk, word, enroll, speech=talk)
    return profiles, refused


LIBRISPEECH = ROOT.parent / "shared" / "speech" / "librispeech"
SPEECH_SECONDS = 20.0  # of free speech per player: what enroll asks for (cli/enroll.SPEECH_SECONDS)


PAUSE_EVERY, PAUSE = 3.0, 0.7  # s: a talking person's pauses, put at the quietest point near each mark


def real_words_speech(speaker: str, held_out: list[tuple[np.ndarray, dict]],
                      paused: bool = False, root: Path = LIBRISPEECH) -> np.ndarray | None:
    """SPEECH_SECONDS of the speaker's LibriSpeech sentences, none that a held-out take was cut from.

    Stands in for enroll's "talk for a while" step (the same person, recorded
    in the same sitting as the takes). None when ../shared/speech is absent.
    ``root``: another folder of SPEAKER/ sentences (WAV or FLAC; the tests' committed copies).
    ``paused``: read sentences flow on; people talking pause. PAUSE s of room
    tone (-60 dBFS, over the whole sample) every PAUSE_EVERY s, at the
    quietest frame within 0.5 s of each mark (between words, not inside one).
    """
    from voicesnap import features as F
    from voicesnap.audio import read_wav

    folder = root / speaker
    if not folder.is_dir():
        return None
    held = {Path(meta["source"]).stem for _x, meta in held_out}  # sources are named librispeech/SPEAKER/ID.wav
    parts = [F.to_float(read_wav(f, expect_rate=F.RATE)[0][:, 0]) for f in sorted(folder.iterdir())
             if f.suffix in (".wav", ".flac") and f.stem not in held]
    if not parts:
        return None
    x = np.concatenate(parts)[: int(SPEECH_SECONDS * F.RATE)]
    if not paused:
        return x
    power = F.frame_energy_db(F.frames(x))
    cuts, mark = [0], int(PAUSE_EVERY * F.RATE)
    while mark < len(x) - F.RATE // 2:
        lo, hi = (mark - F.RATE // 2) // F.HOP, min(len(power), (mark + F.RATE // 2) // F.HOP)
        cuts.append((lo + int(np.argmin(power[lo:hi])) + 1) * F.HOP)
        mark = cuts[-1] + int(PAUSE_EVERY * F.RATE)
    gap = np.zeros(int(PAUSE * F.RATE), np.float32)
    y = np.concatenate([piece for a, b in zip(cuts, [*cuts[1:], len(x)]) for piece in (x[a:b], gap)])
    room = np.random.default_rng(int(speaker)).normal(0.0, 10 ** (-60 / 20), len(y))
    return (y + room).astype(np.float32)


REAL_LABEL = "real, text-dependent (LibriSpeech words)"


def real_words(quick: bool) -> list[Row]:
    """Attribution of real speakers' held-out takes of the word they enrolled (the game's task)."""
    from voicesnap import voices as V

    if not REAL_WORDS.is_dir():
        return [Row(AREA, REAL_LABEL, "n/a", note=f"skipped: {REAL_WORDS} is absent")]
    words = sorted(p.name for p in REAL_WORDS.iterdir() if p.is_dir())
    tally: dict[int, list[int]] = {}  # k -> [right, known, accepted unknown, unknown]
    notes: dict[int, list[str]] = {}
    genuine: list[float] = []
    impostor: list[float] = []
    spot = {"enrolled": [0, 0, 0, 0], "span": [0, 0, 0, 0]}  # right alone, wrong, none, right + another
    held_total = refused_total = 0
    trials: list[Trial] = []  # (k, known speaker, chosen right, chosen's combined ratio)
    for word in words:
        takes = real_words_takes(word)
        profiles, refused = real_words_profiles(word, takes)
        refused_total += refused
        if len(profiles) < 2:
            continue
        rival = V.announcer_profile(word)
        for k in (2, 4):
            for combo in itertools.combinations(sorted(profiles), k):
                vs = V.Voices([profiles[n] for n in combo], [rival] if rival else [])
                t = tally.setdefault(k, [0, 0, 0, 0])
                right = known = fa = unknown = 0
                for spk, items in takes.items():
                    tests = items[ENROLL_TAKES:] if spk in combo else items
                    for x, _meta in tests:
                        att = vs.attribute(x)
                        if att.details:
                            who = min((p for p in att.details if p not in vs.rivals),
                                      key=lambda p: att.details[p].get("rank", att.details[p]["combined"]))
                            trials.append((k, spk in combo, who == spk, att.details[who]["combined"]))
                        if spk in combo:
                            known += 1
                            right += att.player == spk
                        else:
                            unknown += 1
                            fa += att.player is not None
                        if len(combo) == len(profiles):
                            for name, sc in att.scores.items():
                                (genuine if name == spk else impostor).append(sc)
                t[0] += right
                t[1] += known
                t[2] += fa
                t[3] += unknown
                notes.setdefault(k, []).append(f"{word}:{'+'.join(combo)} {right}/{known}, unk {fa}/{unknown}")
        if not quick:
            s = _real_words_spotters(word, takes, profiles)
            for key in spot:
                spot[key] = [a + b for a, b in zip(spot[key], s[key])]
            held_total += sum(max(0, len(v) - ENROLL_TAKES) for n, v in takes.items() if n in profiles)
    rows = []
    for k in sorted(tally):
        right, known, fa, unknown = tally[k]
        rows.append(Row(AREA, f"attribution accuracy, {k} players ({REAL_LABEL})", right / known if known else
                        float("nan"), "", ">= 0.95" if k == 4 else "",
                        f"{right}/{known} held-out takes; enroll {ENROLL_TAKES} takes of the same word; "
                        + "; ".join(notes[k])))
        rows.append(Row(AREA, f"unknown voices accepted, {k} players ({REAL_LABEL})", fa / unknown if unknown
                        else float("nan"), "", "<= 0.02", f"{fa}/{unknown}: the same word by speakers not enrolled"))
    # calibration: the acceptance line (combined ratio of the chosen player) that keeps unknown
    # same-word voices <= 2% accepted, and what it leaves of the real speakers' own takes
    line = stranger_line(trials, higher_closer=False)
    for k in sorted(tally):
        share, fa, unknown = at_line(trials, k, line, higher_closer=False)
        rows.append(Row(AREA, f"accuracy at the <= 2%-unknown line, {k} players ({REAL_LABEL})", share, "", "",
                        f"line: combined ratio {line:.2f} (play accepts <= {V.ACCEPT}); unknown accepted "
                        f"{fa}/{unknown}"))
    rows.append(Row(AREA, f"equal error rate, all enrollable speakers ({REAL_LABEL})", eer(genuine, impostor), "", "",
                    f"{len(genuine)} genuine, {len(impostor)} impostor scores; {refused_total} enrollment "
                    "takes would have been refused by the take checks (used anyway)"))
    if not quick:
        for key, label in (("enrolled", "enrolled engine: held-out real takes detected as their speaker"),
                           ("span", "combined engine's attribution of the word's span: right speaker")):
            r, w, n, both = spot[key]
            rows.append(Row(AREA, f"{label} ({REAL_LABEL})", r / held_total if held_total else float("nan"), "", "",
                            f"right (alone) {r}, right plus another player {both}, wrong speaker {w}, "
                            f"nobody/no call {n} of {held_total}; all enrollable speakers of the word enrolled"))
    return rows


ENC_LABEL = "real same-word (LibriSpeech words)"


def real_words_encoder(quick: bool) -> list[Row]:
    """The speaker encoder against the voiceprint on the real same-word set: three deciders, same trials.

    - voiceprint: Voices without the encoder (templates + voiceprint: what play did before);
    - encoder alone: WHO = the most alike enrolled embeddings (cosine), accepted when it clears the
      player's threshold (median leave-one-out cosine of their takes, capped at voices.ENC_CAP);
    - encoder + templates: what Voices does with the encoder installed (Voices.decide_encoder);
    - with speech sample: the same, each player also enrolled with SPEECH_SECONDS of their other
      sentences (``real_words_speech``; needs ../shared/speech/librispeech).
    Strangers: every take of the speakers not enrolled (same word). 6 players: the set has 5 speakers,
    and only "the" has 4 with enough takes, so 2 and 4 only. EER from all scores of the trials with
    every enrollable speaker of the word enrolled.
    """
    from voicesnap import encoder as E
    from voicesnap import voices as V

    if not REAL_WORDS.is_dir():
        return [Row(AREA, ENC_LABEL, "n/a", note=f"skipped: {REAL_WORDS} is absent")]
    enc = E.load_encoder()
    if enc is None:
        return [Row(AREA, f"speaker encoder, {ENC_LABEL}", "n/a",
                    note="skipped: no speaker encoder installed (voicesnap models download --kind encoder, "
                    "or VOICESNAP_ENCODER_MODEL)")]
    words = sorted(p.name for p in REAL_WORDS.iterdir() if p.is_dir())
    kinds: tuple[str, ...] = ("voiceprint", "encoder alone", "encoder + templates", "with speech sample",
                              "speech sample with pauses")
    speech: tuple[bool | str, ...] = (True, "paused")  # real_words_profiles' speech= for kinds[3:]
    if not LIBRISPEECH.is_dir():
        kinds = kinds[:3]
    tally = {(kind, k): [0, 0, 0, 0] for kind in kinds for k in (2, 4)}  # right, known, accepted unknown, unknown
    scores: dict[str, tuple[list[float], list[float]]] = {kind: ([], []) for kind in kinds}
    times: list[float] = []
    trials: list[Trial] = []  # (k, known speaker, most alike is right, its cosine)
    for word in words:
        takes = real_words_takes(word)
        profiles, _refused = real_words_profiles(word, takes)
        if len(profiles) < 2:
            continue
        spoken = {kind: real_words_profiles(word, takes, speech=how)[0]
                  for kind, how in zip(kinds[3:], speech)}
        rival = V.announcer_profile(word)
        trimmed = {spk: [V.trim(x)[0] for x, _m in items] for spk, items in takes.items()}
        for k in (2, 4):
            for combo in itertools.combinations(sorted(profiles), k):
                old = V.Voices([profiles[n] for n in combo], [rival] if rival else [], encoder=None)
                new = V.Voices([profiles[n] for n in combo], [rival] if rival else [], encoder=enc)
                talk = {kind: V.Voices([ps[n] for n in combo], [rival] if rival else [], encoder=enc)
                        for kind, ps in spoken.items()}
                assert new.encoder is not None, "profiles enrolled without the encoder"
                every = len(combo) == len(profiles)
                for spk, items in takes.items():
                    first = ENROLL_TAKES if spk in combo else 0
                    for (x, _meta), y in list(zip(items, trimmed[spk]))[first:]:
                        t0 = time.perf_counter()
                        att_new = new.attribute(x)
                        times.append(time.perf_counter() - t0)
                        att_old = old.attribute(x)
                        cos = new.embedding_scores(y) or {}
                        who = max(cos, key=cos.__getitem__) if cos else None  # encoder alone: the most alike
                        alone = (who if who is not None and who not in new.rivals
                                 and new.encoder_ratio(who, cos[who]) <= 1.0 else None)
                        if who is not None:
                            trials.append((k, spk in combo, who == spk, cos[who] if who not in new.rivals else -1.0))
                        att_talk = {kind: vs.attribute(x) for kind, vs in talk.items()}
                        for kind, got in zip(kinds, (att_old.player, alone, att_new.player,
                                                     *(att_talk[kind].player for kind in kinds[3:]))):
                            t = tally[(kind, k)]
                            if spk in combo:
                                t[0] += got == spk
                                t[1] += 1
                            else:
                                t[2] += got is not None
                                t[3] += 1
                        if every:
                            for kind, sc in (("voiceprint", att_old.scores), ("encoder + templates", att_new.scores),
                                             ("encoder alone", {n: c for n, c in cos.items() if n in combo}),
                                             *((kind, att_talk[kind].scores) for kind in kinds[3:])):
                                for name, v in sc.items():
                                    scores[kind][0 if name == spk else 1].append(v)
    rows = []
    for kind in kinds:
        wired = " (WIRED into Voices)" if kind in ("encoder + templates", *kinds[3:]) else ""
        for k in (2, 4):
            right, known, fa, unknown = tally[(kind, k)]
            rows.append(Row(AREA, f"{kind}: accuracy, {k} players ({ENC_LABEL}){wired}",
                            right / known if known else float("nan"), "", ">= 0.95" if k == 4 else "",
                            f"{right}/{known} held-out takes named right; enroll {ENROLL_TAKES} takes of the word"))
            rows.append(Row(AREA, f"{kind}: strangers accepted, {k} players ({ENC_LABEL})",
                            fa / unknown if unknown else float("nan"), "", "<= 0.02",
                            f"{fa}/{unknown} takes of the same word by speakers not enrolled, at the calibrated threshold"))
        g, i = scores[kind]
        rows.append(Row(AREA, f"{kind}: equal error rate ({ENC_LABEL})", eer(g, i), "", "",
                        f"{len(g)} genuine, {len(i)} impostor scores"))
    # what a fixed line strict enough for <= 2% strangers would leave of the players' own takes
    line = stranger_line(trials, higher_closer=True)
    for k in (2, 4):
        share, fa, unknown = at_line(trials, k, line, higher_closer=True)
        rows.append(Row(AREA, f"encoder alone: accuracy at the <= 2%-stranger line, {k} players ({ENC_LABEL})",
                        share, "", "", f"line: cosine > {line:.3f} (pooled 2/4-player strangers); strangers "
                        f"accepted {fa}/{unknown}"))
    rows.append(Row(AREA, "time per attribution with the speaker encoder (median)", 1000 * float(np.median(times)),
                    "ms", "", "real same-word takes, Voices.attribute incl. the embedding"))
    return rows



DRAWS = 20  # enrollments drawn per word (the first: the first ENROLL_TAKES takes, as real_words does)


def real_words_draws(quick: bool) -> list[Row]:
    """The real same-word figures over many enrollments, not one: each speaker's ENROLL_TAKES enrollment
    takes drawn afresh (seeded) DRAWS times, the rest held out.

    Why: with one enrollment the 4-player figure is 28 held-out takes, and whether a player's five
    takes happen to be typical moves it by a take or two (26/28 = 93% against the 95% target). Drawn
    afresh, every take is held out in most draws; the spread over draws shows how much one
    enrollment's luck weighs. The trials of different draws share takes, so they are not
    independent: read the per-draw range beside the pooled share. Voices as play runs it (the
    encoder installed), with the takes only and with the 20 s speech sample that enroll asks for.
    """
    from voicesnap import encoder as E
    from voicesnap import voices as V

    label = "real same-word, enrollment drawn afresh"
    if not REAL_WORDS.is_dir():
        return [Row(AREA, label, "n/a", note=f"skipped: {REAL_WORDS} is absent")]
    enc = E.load_encoder()
    if enc is None:
        return [Row(AREA, label, "n/a", note="skipped: no speaker encoder installed (voicesnap models download "
                    "--kind encoder, or VOICESNAP_ENCODER_MODEL)")]
    kinds = ("takes only", "with speech sample") if LIBRISPEECH.is_dir() else ("takes only",)
    draws = 4 if quick else DRAWS
    tally = {(kind, k): [0, 0, 0, 0, 0] for kind in kinds for k in (2, 4)}  # right, known, wrong, accepted unk, unk
    per_draw: dict[str, list[float]] = {kind: [] for kind in kinds}  # 4 players: share named right
    for word in sorted(p.name for p in REAL_WORDS.iterdir() if p.is_dir()):
        takes = real_words_takes(word)
        enrollable = sorted(s for s, items in takes.items() if len(items) >= ENROLL_TAKES)
        if len(enrollable) < 2:
            continue
        rival = V.announcer_profile(word)
        for r in range(draws):
            rng = np.random.default_rng(r)
            chosen = {s: (list(range(ENROLL_TAKES)) if r == 0 else
                          sorted(int(i) for i in rng.choice(len(takes[s]), ENROLL_TAKES, replace=False)))
                      for s in enrollable}
            for kind in kinds:
                profiles = real_words_profiles(word, takes, speech=kind != "takes only", chosen=chosen)[0]
                for k in (2, 4):
                    if k > len(profiles):
                        continue
                    got = [0, 0]
                    for combo in itertools.combinations(sorted(profiles), k):
                        vs = V.Voices([profiles[n] for n in combo], [rival] if rival else [], encoder=enc)
                        t = tally[(kind, k)]
                        for spk, items in takes.items():
                            for i, (x, _meta) in enumerate(items):
                                if spk in combo and i in chosen[spk]:
                                    continue
                                player = vs.attribute(x).player
                                if spk in combo:
                                    t[0] += player == spk
                                    t[1] += 1
                                    t[2] += player not in (spk, None)
                                    got[0] += player == spk
                                    got[1] += 1
                                else:
                                    t[3] += player is not None
                                    t[4] += 1
                    if k == 4 and got[1]:
                        per_draw[kind].append(got[0] / got[1])
    rows = []
    for kind in kinds:
        for k in (2, 4):
            right, known, wrong, fa, unknown = tally[(kind, k)]
            if not known:
                continue
            spread = ""
            if k == 4 and per_draw[kind]:
                v = np.asarray(per_draw[kind])
                spread = (f"; per draw {v.min():.2f}-{v.max():.2f}, median {np.median(v):.2f}, "
                          f"{int(np.sum(v >= 0.95))} of {len(v)} at >= 0.95")
            rows.append(Row(AREA, f"{kind}: accuracy, {k} players ({label})", right / known, "",
                            ">= 0.95" if k == 4 else "",
                            f"{right}/{known} held-out takes over {draws} enrollments, {wrong} to a wrong "
                            f"player{spread}"))
            rows.append(Row(AREA, f"{kind}: strangers accepted, {k} players ({label})",
                            fa / unknown if unknown else float("nan"), "", "<= 0.02",
                            f"{fa}/{unknown} takes of the same word by speakers not enrolled"))
    return rows


def count_call(tally: list[int], speaker: str, enrolled: bool, player: str | None) -> None:
    """Add one attributed call to ``tally`` = [named right, wrong player, players' calls, strangers
    accepted, strangers' calls]; ``enrolled``: whether ``speaker`` is one of the table's players."""
    if enrolled:
        tally[0] += player == speaker
        tally[1] += player not in (None, speaker)
        tally[2] += 1
    else:
        tally[3] += player is not None
        tally[4] += 1


def without_takes(prof):
    """``prof`` as it was saved before profiles kept their takes' audio (voices.loudness cannot adapt it)."""
    return dataclasses.replace(prof, extra={k: v for k, v in prof.extra.items() if k != "audio"})


NOISE_LABEL = "real same-word in noise"
NOISE_SNR = 10.0  # dB under the RMS of the word itself


def _pink(n: int, rng: np.random.Generator) -> np.ndarray:
    f = np.fft.rfft(rng.normal(size=n))
    k = np.arange(len(f))
    k[0] = 1
    x = np.fft.irfft(f / np.sqrt(k), n)
    return x / np.sqrt(np.mean(x ** 2))


def _babble_source() -> np.ndarray | None:
    """Three-talker babble material: the PocketSphinx card phrases (a speaker not in the LibriSpeech set)."""
    from voicesnap import features as F
    from voicesnap.audio import read_wav

    files = sorted((SHARED.parent / "cards").glob("*.wav"))
    return np.concatenate([F.to_float(read_wav(f, expect_rate=F.RATE)[0][:, 0]) for f in files]) if files else None


def real_words_noise(quick: bool) -> list[Row]:
    """The real same-word set with its takes in pink noise or babble NOISE_SNR dB under the word.

    Enrollment is clean (enrollment refuses noisy takes); every held-out and
    stranger take is noisy. "before": the encoder stands aside below
    voices.ENC_MIN_SNR and the voiceprint decides (ENC_DENOISED_MIN_SNR set
    to infinity); "now": the encoder decides down to ENC_DENOISED_MIN_SNR on
    the word less its background (encoder.denoise). Same noisy audio for both.
    """
    from voicesnap import encoder as E
    from voicesnap import voices as V
    from voicesnap.voices import attribution

    if not REAL_WORDS.is_dir():
        return [Row(AREA, NOISE_LABEL, "n/a", note=f"skipped: {REAL_WORDS} is absent")]
    enc = E.load_encoder()
    if enc is None:
        return [Row(AREA, NOISE_LABEL, "n/a", note="skipped: no speaker encoder installed")]
    bab = _babble_source()
    rows = []
    for kind in ("pink", "babble"):
        if kind == "babble" and bab is None:
            rows.append(Row(AREA, f"{NOISE_LABEL} (babble)", "n/a", note="skipped: ../shared/speech/cards is absent"))
            continue
        rng = np.random.default_rng(11)
        tally: dict[tuple[str, int], list[int]] = {}  # (setting, k) -> right, wrong, known, accepted unknown, unknown
        for word in sorted(p.name for p in REAL_WORDS.iterdir() if p.is_dir()):
            takes = real_words_takes(word)
            profiles, _refused = real_words_profiles(word, takes)
            if len(profiles) < 2:
                continue
            spoken = real_words_profiles(word, takes, speech=True)[0] if LIBRISPEECH.is_dir() else None
            rival = V.announcer_profile(word)
            noisy: dict[str, list[np.ndarray]] = {}
            for spk, items in takes.items():
                for x, _meta in items:
                    y = V.trim(x)[0]
                    level = float(np.sqrt(np.mean(y.astype(np.float64) ** 2)))
                    if kind == "pink":
                        noise = _pink(len(x), rng)
                    else:
                        assert bab is not None, "babble without its source was skipped above"
                        # a sum of three slices: an array, never the empty sum's 0
                        noise = cast(np.ndarray, sum(bab[o: o + len(x)]
                                                     for o in rng.integers(0, len(bab) - len(x), 3)))
                        noise = noise / np.sqrt(np.mean(noise ** 2))
                    noisy.setdefault(spk, []).append((x + noise * level * 10 ** (-NOISE_SNR / 20)).astype(np.float32))
            settings = [("before", float("inf"), profiles), ("now", V.ENC_DENOISED_MIN_SNR, profiles)]
            if spoken:
                settings.append(("speech", V.ENC_DENOISED_MIN_SNR, spoken))
            for setting, floor, profs in settings:
                # set where attribution reads it: the package's copy of the name would change nothing
                saved = attribution.ENC_DENOISED_MIN_SNR
                attribution.ENC_DENOISED_MIN_SNR = floor
                try:
                    for k in (2, 4):
                        t = tally.setdefault((setting, k), [0, 0, 0, 0, 0])
                        for combo in itertools.combinations(sorted(profs), k):
                            vs = V.Voices([profs[n] for n in combo], [rival] if rival else [], encoder=enc)
                            for spk, xs in noisy.items():
                                for x in xs[ENROLL_TAKES if spk in combo else 0:]:
                                    count_call(t, spk, spk in combo, vs.attribute(x).player)
                finally:
                    attribution.ENC_DENOISED_MIN_SNR = saved
        for k in (2, 4):
            b, n = tally[("before", k)], tally[("now", k)]
            sp = tally.get(("speech", k))
            rows.append(Row(AREA, f"{NOISE_LABEL}: named right, {k} players ({kind} {NOISE_SNR:g} dB)",
                            n[0] / n[2] if n[2] else float("nan"), "", "",
                            f"now {n[0]}/{n[2]} (wrong player {n[1]}); before {b[0]}/{b[2]} (wrong player {b[1]})"
                            + (f"; with speech samples {sp[0]}/{sp[2]} (wrong player {sp[1]})" if sp else "")))
            rows.append(Row(AREA, f"{NOISE_LABEL}: strangers accepted, {k} players ({kind} {NOISE_SNR:g} dB)",
                            n[3] / n[4] if n[4] else float("nan"), "", "<= 0.02",
                            f"now {n[3]}/{n[4]}; before {b[3]}/{b[4]} (the voiceprint deciding below 20 dB)"
                            + (f"; with speech samples {sp[3]}/{sp[4]}" if sp else "")))
    return rows


def _real_words_spotters(word: str, takes, profiles) -> dict[str, list[int]]:
    """Held-out real takes through the enrolled spotter, and through its span attribution (what the combined engine does)."""
    from voicesnap import features as F
    from voicesnap.audio import ArraySource
    from voicesnap.spotters.enrolled import EnrolledSpotter

    rng = np.random.default_rng(7)
    out = {"enrolled": [0, 0, 0, 0], "span": [0, 0, 0, 0]}
    for spk, items in takes.items():
        if spk not in profiles:
            continue
        for x, meta in items[ENROLL_TAKES:]:
            pad = rng.normal(0, 10 ** (-75 / 20), int(0.2 * F.RATE)).astype(np.float32)
            y = np.concatenate([pad, x, pad])  # 0.5 s of quiet room each side (in_room gave 0.3 s)
            pcm = np.clip(y * 32768, -32768, 32767).astype(np.int16)[:, None]
            sp = EnrolledSpotter(list(profiles.values()))
            dets = []
            for ch in ArraySource(pcm, F.RATE, chunk_frames=320):
                dets += sp.accept(ch)
            on = 0.2 + ROOM_PAD + meta["word_start"] - meta["cut_start_sample"] / F.RATE
            end = 0.2 + ROOM_PAD + meta["word_end"] - meta["cut_start_sample"] / F.RATE
            _c, att, _rival = sp.attribute_span(on, end, word)
            dets += sp.flush()
            names = {d.player for d in dets}
            out["enrolled"][0 if names == {spk} else 3 if spk in names else 1 if names else 2] += 1
            out["span"][0 if att.player == spk else 2 if att.player is None else 1] += 1
    return out


def _synthetic_at_voice_line(line: float) -> list[Row]:
    """What the real-voice line would cost the game's own (synthetic) calls if it were enforced."""
    from voicesnap import voices as V

    profiles = _profiles()
    within = total = 0
    for speaker, audio in _calls():
        if speaker not in profiles:
            continue
        y, _level, _snr = V.trim(audio)
        p = profiles[speaker]
        total += 1
        within += p.voice_distance(V.voiceprint(y)) / p.voice_threshold <= line
    return [Row(AREA, "synthetic held-out calls whose own voice is within that line", within / total if total else
                float("nan"), "", "", f"{within}/{total}: the line is NOT enforced in play (V_LIMIT "
                f"{V.V_LIMIT}); see docs/voices.md")]


def ties(quick: bool) -> list[Row]:
    from voicesnap.audio import ArraySource
    from voicesnap.corpus import load
    from voicesnap.spotters.enrolled import EnrolledSpotter

    profiles = _profiles()
    rows = []

    def spot(fx) -> list:
        sp = EnrolledSpotter(list(profiles.values()))
        dets = []
        for ch in ArraySource(fx.read(), fx.rate, chunk_frames=320):
            dets += sp.accept(ch)
        return dets + sp.flush()

    both = close = pairs = tieable = tie_ok = 0
    errs: list[float] = []
    for side in sorted((PLAYERS / "overlap").glob("*.json")):
        fx = load(side)
        dets = spot(fx)
        segs = list(fx.segments)
        for a, b in zip(segs[0::2], segs[1::2]):
            pairs += 1
            ta, tb = a.onset / fx.rate, b.onset / fx.rate
            da = [d for d in dets if d.player == a.speaker and abs(d.onset - ta) < 0.25]
            db = [d for d in dets if d.player == b.speaker and abs(d.onset - tb) < 0.25]
            if tb - ta <= 0.1:  # the referee's default tie window
                tieable += 1
                tie_ok += bool(da and db and abs(db[0].onset - da[0].onset) <= 0.1)
            if da and db:
                both += 1
                ea, eb = abs(da[0].onset - ta), abs(db[0].onset - tb)
                errs += [ea, eb]
                close += max(ea, eb) <= 0.03
    rows.append(Row(AREA, "one-mic overlaps: both players heard", both / pairs, "", "",
                    f"{both}/{pairs} pairs, offsets 0-200 ms (players/overlap); {close} with both onsets within 30 ms"))
    rows.append(Row(AREA, "one-mic overlaps: onset error of each call, p95",
                    1000 * float(np.percentile(errs, 95)) if errs else float("nan"), "ms", "",
                    f"max {1000 * max(errs):.0f} ms over {len(errs)} calls" if errs else ""))
    rows.append(Row(AREA, "one-mic overlaps <= 100 ms apart heard as a tie", tie_ok / tieable if tieable else float("nan"),
                    "", "", f"{tie_ok}/{tieable}: both players, onsets within the 100 ms tie window"))
    # The same overlaps with one of the two callers NOT enrolled (a bystander shouting with a
    # player): the tie search pairs enrolled players only, so a stranger's half of the overlap
    # can be named as another enrolled player, who then shares a ruling they never called.
    named = known_ok = trials = 0
    for side in sorted((PLAYERS / "overlap").glob("*.json")):
        fx = load(side)
        segs = list(fx.segments)
        for a, b in zip(segs[0::2], segs[1::2]):
            for known, stranger in ((a, b), (b, a)):
                trials += 1
                sp = EnrolledSpotter([p for n, p in profiles.items() if n != stranger.speaker])
                dets = [d for ch in ArraySource(fx.read(), fx.rate, chunk_frames=320) for d in sp.accept(ch)]
                dets += sp.flush()
                t, tk = stranger.onset / fx.rate, known.onset / fx.rate
                named += any(d.player not in (None, known.speaker) and abs(d.onset - t) < 0.25 for d in dets)
                known_ok += any(d.player == known.speaker and abs(d.onset - tk) < 0.25 for d in dets)
    rows.append(Row(AREA, "one-mic overlaps with a stranger: stranger named as another player", named / trials,
                    "", "", f"{named}/{trials} (each caller of players/overlap in turn not enrolled); the enrolled "
                    f"caller still named right in {known_ok}/{trials}"))
    false_ties = singles = 0
    for folder in ("heldout", "unknown", "nearmiss"):
        for side in sorted((PLAYERS / folder).glob("*.json")):
            fx = load(side)
            dets = spot(fx)
            singles += len(list(fx.segments))
            false_ties += sum(1 for i, d in enumerate(dets) for e in dets[i + 1:]
                              if e.player != d.player and abs(e.onset - d.onset) <= 0.25)
    rows.append(Row(AREA, "false ties on lone calls (heldout, unknown voices, near misses)", false_ties, "", "",
                    f"two players reported within 250 ms where one voice spoke; {singles} segments"))
    ok = total = 0
    errs = []
    for name, chans in (("mc2", ["alice", "bob"]), ("mc4", ["alice", "bob", "cara", "dev"])):
        from voicesnap import voices as V

        profs = [V.Profile(**{**profiles[n].__dict__, "channel": i}) for i, n in enumerate(chans)]
        fx = load(PLAYERS / "multichannel" / f"{name}.json")
        sp = EnrolledSpotter(profs)
        dets = []
        for ch in ArraySource(fx.read(), fx.rate, chunk_frames=320):
            dets += sp.accept(ch)
        dets += sp.flush()
        for s in fx.segments:
            total += 1
            hit = [d for d in dets if d.channel == s.channel and abs(d.onset - s.onset / fx.rate) < 0.1]
            if hit and hit[0].player == s.speaker:
                ok += 1
                errs.append(abs(hit[0].onset - s.onset / fx.rate))
        extra = len(dets) - total
    rows.append(Row(AREA, "per-mic calls attributed to the right mic/player", ok / total, "", "",
                    f"{ok}/{total} on mc2+mc4 (crosstalk -12 dB, 3 ms); extra calls in mc4: {max(0, extra)}"))
    rows.append(Row(AREA, "per-mic onset error, p95", 1000 * float(np.percentile(errs, 95)) if errs else float("nan"),
                    "ms", "<= 10", "own-mic onset: where the channel stops being a neighbour's crosstalk"))
    return rows



# How loud the held-out calls are made: peak at this share of full scale (no clipping), or driven until
# this share of the call's samples passes full scale and clipped there
LOUD_CASES = (("peak", 0.5), ("peak", 0.99), ("clipped", 0.05), ("clipped", 0.2), ("clipped", 0.4))


def loud(quick: bool) -> list[Row]:
    """Held-out synthetic calls (and strangers') made louder than the takes or driven past full scale,
    attributed as play does (``voices.loudness``: the encoder also hears a loud call at the takes'
    level, a clipped one is matched against the takes clipped alike) and, beside it, as profiles
    saved without their takes are (no level to compare with, no takes to clip)."""
    from voicesnap import features as F
    from voicesnap import voices as V
    from voicesnap.voices.loudness import clip_share, clipped_like, rms_db

    profiles = _profiles()
    bare = {n: without_takes(p) for n, p in profiles.items()}
    rival = V.announcer_profile("snap")
    calls = [(spk, F.resample(x, F.RATE)) for spk, x in _calls()]
    takes_db = float(np.median([rms_db(t.audio) for n in NAMES for t in _takes(n)]))
    combos = list(itertools.combinations(NAMES, 4))[:: 15 if quick else 3]
    rows = []
    for kind, value in LOUD_CASES[1::2] if quick else LOUD_CASES:
        if kind == "peak":
            made = [(spk, (x * (value / float(np.max(np.abs(x))))).astype(np.float32)) for spk, x in calls]
            label = f"held-out calls peaking at {value:.0%} of full scale"
        else:
            made = [(spk, clipped_like(x, value * len(V.trim(x)[0]) / len(x))) for spk, x in calls]
            label = f"held-out calls clipped ({value:.0%} of their samples at full scale)"
        level = float(np.median([rms_db(V.trim(x)[0]) for _s, x in made]))
        share = float(np.median([clip_share(V.trim(x)[0]) for _s, x in made]))
        for how, table in (("loudness matched", profiles), ("takes saved without audio", bare)):
            t = [0, 0, 0, 0, 0]
            times = []
            for combo in combos:
                vs = V.Voices([table[n] for n in combo], [rival] if rival else [])
                for spk, x in made:
                    t0 = time.perf_counter()
                    att = vs.attribute(x)
                    times.append(time.perf_counter() - t0)
                    count_call(t, spk, spk in combo, att.player)
            right, wrong, known, fa, unknown = t
            rows.append(Row(AREA, f"{label}, 4 players, {how}: named right", right / known, "", "",
                            f"{right}/{known}, wrong player {wrong}; strangers accepted {fa}/{unknown}; "
                            f"{len(combos)} player sets; calls' median RMS {level:.0f} dBFS (takes {takes_db:.0f}), "
                            f"clipped share {share:.2f}; attribution median {1000 * float(np.median(times)):.0f} ms, "
                            f"worst {1000 * max(times):.0f} ms (the first call at a clip share learns the clipped takes)"))
    return rows

REAL_LOUDER_DB = (-12.0, 6.0, 12.0)  # real held-out takes called this much louder than the speaker enrolled


def loud_real(quick: bool) -> list[Row]:
    """The real same-word set's held-out takes (and strangers') called louder than enrolled, clipped at
    full scale where that is where it goes; players enrolled with the 20 s speech sample, as play asks."""
    from voicesnap import voices as V
    from voicesnap.voices.loudness import clip_share, rms_db

    if not REAL_WORDS.is_dir():
        return [Row(AREA, "real takes called louder", "n/a", note=f"skipped: {REAL_WORDS} is absent")]
    rows = []
    for gain_db in REAL_LOUDER_DB[1:] if quick else REAL_LOUDER_DB:
        g = 10 ** (gain_db / 20)
        tally = {how: [0, 0, 0, 0, 0] for how in ("loudness matched", "takes saved without audio")}  # right wrong n fa unk
        levels, clipped = [], []
        for word in sorted(p.name for p in REAL_WORDS.iterdir() if p.is_dir()):
            takes = real_words_takes(word)
            profiles, _refused = real_words_profiles(word, takes, speech=True)
            if len(profiles) < 2:
                continue
            bare = {n: without_takes(p) for n, p in profiles.items()}
            rival = V.announcer_profile(word)
            for k in (2, 4):
                for combo in itertools.combinations(sorted(profiles), k):
                    for how, table in (("loudness matched", profiles), ("takes saved without audio", bare)):
                        vs = V.Voices([table[n] for n in combo], [rival] if rival else [])
                        t = tally[how]
                        for spk, items in takes.items():
                            for x, _meta in (items[ENROLL_TAKES:] if spk in combo else items):
                                y = np.clip(x * g, -1.0, 1.0).astype(np.float32)
                                if how == "takes saved without audio" and k == 2:
                                    trimmed = V.trim(y)[0]
                                    levels.append(rms_db(trimmed))
                                    clipped.append(clip_share(trimmed))
                                count_call(t, spk, spk in combo, vs.attribute(y).player)
        for how, (right, wrong, n, fa, unk) in tally.items():
            louder = f"{abs(gain_db):.0f} dB {'louder' if gain_db > 0 else 'quieter'}"
            rows.append(Row(AREA, f"real same-word takes called {louder}, 2 and 4 players, {how}: "
                                  "named right", right / n if n else float("nan"), "", "",
                            f"{right}/{n}, wrong player {wrong}; strangers accepted {fa}/{unk}; with the speech "
                            f"sample; takes' median RMS {float(np.median(levels)):.0f} dBFS, "
                            f"{float(np.mean(np.asarray(clipped) >= 0.02)):.0%} of them 2% or more clipped"))
    return rows

LOOP_LABEL = "the word once or played twice"


def looped(quick: bool) -> list[Row]:
    """The speaker encoder alone on a word embedded once (``Encoder.embed``) or played twice
    (``Encoder.embed_looped``, the second look of voices.attribution.LOOP_GREY), each at its own cosine line
    keeping 2% of the strangers out: own takes named right at that line.

    Two sets, one decider (WHO = the closest centroid; accepted over the line):
    - Speech Commands (text-independent: 8 speakers, not the five below, the first 5 words enrolled,
      the same player sets as ``real``; no speech sample);
    - real "the" over the ``real_words_draws`` enrollments (4 speakers, with the 20 s speech sample
      mixed into each centroid, as play does; needs ../shared/speech/librispeech).
    Nothing was tuned on the first set.
    """
    from voicesnap import encoder as E
    from voicesnap.voices.profiles import unit

    enc = E.load_encoder()
    if enc is None:
        return [Row(AREA, LOOP_LABEL, "n/a", note="skipped: no speaker encoder installed")]
    views = {"once": lambda ys: enc.embed_many(ys), "twice": lambda ys: enc.embed_looped(ys)}
    rows = []

    def report(label: str, trials: dict[str, list[Trial]], sizes: tuple[int, ...]) -> None:
        for view in views:
            line = stranger_line(trials[view], higher_closer=True)
            for k in sizes:
                share, fa, unknown = at_line(trials[view], k, line, higher_closer=True)
                rows.append(Row(AREA, f"{label}, {k} players, {view} ({LOOP_LABEL})", share, "", "",
                                f"cosine line {line:.3f}; strangers accepted {fa}/{unknown}"))

    if SHARED.is_dir():
        words = {n: [y for _x, y, _snr in clips] for n, clips in speech_commands().items()}
        trials: dict[str, list[Trial]] = {}
        for view, embed in views.items():
            embs = {n: embed(ys) for n, ys in words.items()}
            t = trials.setdefault(view, [])
            for k in (2, 4):
                for combo in speech_commands_combos(sorted(words), k, quick):
                    cents = {n: unit(np.mean(embs[n][:ENROLL_TAKES], axis=0)) for n in combo}
                    for spk, es in embs.items():
                        for e in (es[ENROLL_TAKES:] if spk in combo else es):
                            cos = {n: float(c @ e) for n, c in cents.items()}
                            who = max(cos, key=lambda n: cos[n])
                            t.append((k, spk in combo, who == spk, cos[who]))
        report("Speech Commands words, encoder alone", trials, (2, 4))
    else:
        rows.append(Row(AREA, f"Speech Commands ({LOOP_LABEL})", "n/a", note=f"skipped: {SHARED} is absent"))
    if LIBRISPEECH.is_dir() and REAL_WORDS.is_dir():
        from voicesnap.voices.takes import trim

        takes = real_words_takes("the")
        ys = {s: [trim(x)[0] for x, _m in items] for s, items in takes.items()}
        enrollable = sorted(s for s, items in takes.items() if len(items) >= ENROLL_TAKES)
        embs2 = {view: {s: embed(v) for s, v in ys.items()} for view, embed in views.items()}
        trials = {view: [] for view in views}
        for r in range(4 if quick else DRAWS):
            rng = np.random.default_rng(r)
            chosen = {s: (list(range(ENROLL_TAKES)) if r == 0 else
                          sorted(int(i) for i in rng.choice(len(takes[s]), ENROLL_TAKES, replace=False)))
                      for s in enrollable}
            speech = {}
            for s in enrollable:
                talk = real_words_speech(s, [it for i, it in enumerate(takes[s]) if i not in chosen[s]])
                speech[s] = enc.embed_speech(talk)[0] if talk is not None else None
            for view in views:
                cents = {s: unit(unit(np.mean([embs2[view][s][i] for i in chosen[s]], axis=0))
                                 + (speech[s] if speech[s] is not None else 0.0)) for s in enrollable}
                for k in (2, 4):
                    for combo in itertools.combinations(enrollable, k):
                        for spk in ys:
                            for i, e in enumerate(embs2[view][spk]):
                                if spk in combo and i in chosen[spk]:
                                    continue
                                cos = {n: float(cents[n] @ e) for n in combo}
                                who = max(cos, key=lambda n: cos[n])
                                trials[view].append((k, spk in combo, who == spk, cos[who]))
        report('real "the" with the speech sample, encoder alone', trials, (2, 4))
    return rows


def run(quick: bool) -> list[Row]:
    return (synthetic_both(quick) + corpus_calls(quick) + real_words(quick) + real_words_encoder(quick)
            + real_words_draws(quick) + looped(quick) + real(quick)
            + real_encoder(quick) + real_words_noise(quick) + ties(quick) + loud(quick) + loud_real(quick))


PARTS = {"synthetic": synthetic_both, "corpus": corpus_calls, "real-words": real_words, "encoder": real_words_encoder,
         "real": real, "real-encoder": real_encoder, "noise": real_words_noise, "ties": ties,
         "loud": loud, "loud-real": loud_real, "draws": real_words_draws, "looped": looped}


def main(argv: list[str] | None = None) -> int:
    """``python3 -m bench.bench_voices [--quick] [PART ...]``: the rows of the parts named, or of all."""
    import argparse

    parser = argparse.ArgumentParser(
        prog="python3 -m bench.bench_voices", formatter_class=argparse.RawDescriptionHelpFormatter,
        description=__doc__, epilog=(
            "../shared/speech beside the clone (the project's shared folder) is read by real and\n"
            "real-encoder (without it, one n/a row each: 'skipped: ... is absent'), encoder and draws\n"
            "(their speech-sample rows are left out), noise (its babble row is n/a) and loud-real (its\n"
            "players enroll without the speech sample). The real words' takes are committed\n"
            "(tests/fixtures/audio/real/words)."))
    parser.add_argument("parts", nargs="*", metavar="PART",
                        help=f"run only these parts: {', '.join(PARTS)} (default: every part, as python3 -m bench "
                        "--only voices)")
    parser.add_argument("--quick", action="store_true", help="smaller samples, for a fast look")
    args = parser.parse_args(argv)  # --help and a stray word once ran every part (minutes)
    unknown = [a for a in args.parts if a not in PARTS]
    if unknown:
        parser.error(f"no part {', '.join(unknown)}; the parts: {', '.join(PARTS)}")
    rows = [r for a in args.parts for r in PARTS[a](args.quick)] if args.parts else run(args.quick)
    for row in rows:
        v = f"{row.value:.3g}" if isinstance(row.value, float) else str(row.value)
        print(f"{row.metric:70} {v:>8} {row.unit:3} {row.target:8} {row.note}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
