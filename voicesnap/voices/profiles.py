"""Saved voice profiles: what enrollment learnt, calibrated from the player's own takes.

Profiles are small JSON files under ``<data dir>/players/NAME.json``, written
atomically with mode 0600 and versioned: a damaged or old file is refused
with the way out, never half-read into a wrong attribution.
"""

from __future__ import annotations

import base64
import binascii
import dataclasses
import datetime as _dt
import json
import math
import shlex
import unicodedata
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Sequence

import numpy as np

from .. import encoder as E
from .. import features as F
from ..errors import UserError
from ..files import atomic_write_text, data_dir
from .near_miss import CONTRAST_WORDS
from .takes import Take
from .templates import TemplateBank, take_templates, voiceprint

PROFILE_VERSION = 2  # 2: voiceprint over frames within VOICE_RANGE_DB of the peak

NAME_MAX = 32
NAME_MARKS = " _.-"  # allowed in a name besides letters and digits (of any script)

# Threshold = THRESHOLD_FACTOR x the worst leave-one-out distance among takes.
THRESHOLD_FACTOR = 1.35
# Takes made in one sitting agree more closely than calls in a noisy game do;
# this absolute margin (per-frame cepstral distance) allows for that.
THRESHOLD_MARGIN = 1.0

VOICE_THRESHOLD_FACTOR = 1.6
# Takes made in one sitting agree too well; a voice is never held to less than this.
VOICE_MIN_THRESHOLD = 1.0
VOICE_SCALE_FLOOR = 1.0  # per-dimension spread never assumed smaller than this

SPEECH_MIN_COSINE = 0.65  # a speech sample's embedding to the player's call takes' centroid, at least


def speech_mismatch(calls: np.ndarray, sample: dict) -> str | None:
    """Why a speech sample (``speech_extra``) seems not to be the voice of these call takes' embeddings
    (someone else, noise), or None.

    A guard against gross mistakes, not a proof: on the real and fixture
    speakers a player's own sample sits at 0.69-0.82 to their takes, other
    people's at 0.46-0.76, on-off noise at 0.61-0.68 (docs/voices.md, "Speech sample").
    """
    if not len(calls):
        return None
    cos = float(unit(np.mean(calls, axis=0)) @ np.asarray(sample["embedding"], np.float32))
    if cos < SPEECH_MIN_COSINE:
        return (f"it does not sound like the voice of the calls (likeness {cos:.2f}, under {SPEECH_MIN_COSINE:.2f}): "
                "was someone else talking, or a noise? Only the player should talk")
    return None


def speech_extra(enc: E.Encoder, name: str, speech: np.ndarray) -> dict:
    """The profile's ``extra["speech"]`` for a checked speech sample (see ENC_SPEECH_CAP)."""
    try:
        e, seconds = enc.embed_speech(speech)
    except ValueError as exc:
        raise UserError(f"the speech sample of {name} cannot be used: {exc}") from exc
    return {"seconds": round(seconds, 1), "embedding": [round(float(v), 5) for v in e]}


def missing_speech(prof: Profile, enc: E.Encoder | None) -> bool:
    """Enrolled with this encoder but without a speech sample: ``voicesnap enroll NAME --speech-only`` can add one."""
    return enc is not None and prof.extra.get("encoder") == enc.fingerprint and "speech" not in prof.extra


def missing_contrast(prof: Profile) -> list[str]:
    """The contrast words enroll asks for with this profile's call word that it holds no takes of
    (``near_miss.CONTRAST_WORDS``): ``voicesnap enroll NAME --contrast-only`` adds them."""
    have = profile_contrast(prof)
    return [w for w in CONTRAST_WORDS.get(prof.word, ()) if w not in have]


# profiles


@dataclass
class Profile:
    """Everything known about one player's voice (see the module docstring)."""

    name: str
    word: str
    templates: dict[str, list[np.ndarray]]  # phrase -> log-mel templates (frames, N_MELS)
    thresholds: dict[str, float]  # phrase -> DTW distance accepted as this call
    voiceprint: np.ndarray  # mean voice signature over takes
    voice_scale: np.ndarray  # per-dimension spread used to score voiceprints
    voice_threshold: float  # voiceprint distance accepted as this player
    channel: int | None = None
    created: str = ""
    version: int = PROFILE_VERSION
    extra: dict = field(default_factory=dict)

    def phrases(self) -> list[str]:
        return list(self.templates)

    def voice_distance(self, vp: np.ndarray) -> float:
        z = (vp - self.voiceprint) / self.voice_scale
        return float(np.sqrt(np.mean(z * z)))

    def to_json(self) -> str:
        return json.dumps({
            "format": "voicesnap-profile",
            "version": self.version,
            "name": self.name,
            "word": self.word,
            "channel": self.channel,
            "created": self.created,
            "thresholds": self.thresholds,
            "voiceprint": [round(float(v), 5) for v in self.voiceprint],
            "voice_scale": [round(float(v), 5) for v in self.voice_scale],
            "voice_threshold": self.voice_threshold,
            "templates": {ph: [np.round(t, 3).tolist() for t in ts]
                          for ph, ts in self.templates.items()},
            "extra": self.extra,
        }, separators=(",", ":"))

    @classmethod
    def from_json(cls, text: str, where: str = "profile") -> "Profile":
        name = Path(where).stem
        way_out = (f"enroll again with `voicesnap enroll {shlex.quote(name)}`, or delete it with "
                   f"`voicesnap players forget {shlex.quote(name)}`")
        try:
            data = json.loads(text)
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise UserError(f"voice profile {where} is damaged (not valid JSON: {exc}); {way_out}") from exc
        if not isinstance(data, dict) or data.get("format") != "voicesnap-profile":
            raise UserError(f"{where} is not a voicesnap voice profile; {way_out}")
        version = data.get("version")
        if version != PROFILE_VERSION:
            raise UserError(f"voice profile {where} has format version {version!r}, this voicesnap "
                            f"reads version {PROFILE_VERSION}; {way_out}")
        try:
            templates = {str(ph): [np.asarray(t, np.float32).reshape(-1, F.N_MELS) for t in ts]
                         for ph, ts in data["templates"].items()}
            prof = cls(
                name=str(data["name"]),
                word=str(data["word"]),
                templates=templates,
                thresholds={str(k): float(v) for k, v in data["thresholds"].items()},
                voiceprint=np.asarray(data["voiceprint"], np.float32),
                voice_scale=np.asarray(data["voice_scale"], np.float32),
                voice_threshold=float(data["voice_threshold"]),
                channel=None if data.get("channel") is None else int(data["channel"]),
                created=str(data.get("created", "")),
                extra=dict(data.get("extra") or {}),
            )
            profile_embeddings(prof)  # the speaker embeddings, when there, must be whole
            profile_speech(prof)
            profile_looped(prof)
            profile_takes(prof)
            profile_contrast(prof)
        except (KeyError, TypeError, ValueError, AttributeError) as exc:  # (AttributeError: a list or text where a table was)
            raise UserError(f"voice profile {where} is damaged ({type(exc).__name__}: {exc}); {way_out}") from exc
        if (not prof.word or prof.word not in prof.templates or any(len(t) < 2 for ts in prof.templates.values() for t in ts)
                or prof.voiceprint.shape != prof.voice_scale.shape or set(prof.thresholds) != set(prof.templates)
                or not all(math.isfinite(v) and v > 0 for v in prof.thresholds.values())
                or not math.isfinite(prof.voice_threshold) or (prof.channel is not None and prof.channel < 0)):
            raise UserError(f"voice profile {where} is damaged (inconsistent contents); {way_out}")
        return prof


def phrase_threshold(phrase: str, templates: Sequence[np.ndarray]) -> float:
    """The DTW distance accepted as this phrase: each take against the others, the worst, with room."""
    loo = []
    for i, tpl in enumerate(templates):
        others = [u for j, u in enumerate(templates) if j != i]
        bank = TemplateBank([("", phrase, u) for u in others])
        loo.append(min(h.distance for h in bank.match_log_mel(tpl)))
    return float(THRESHOLD_FACTOR * max(loo) + THRESHOLD_MARGIN)


def contrast_as_call(prof: Profile, word: str) -> Profile:
    """``prof`` with its takes of the contrast word ``word`` made a call phrase, for a variant where that
    word is a call (Slapjack's "slap"): as a contrast word it made every "slap" no call, and as nobody's
    phrase it was named to nobody. Unchanged when the player gave no (or too few) takes of it."""
    try:
        takes = profile_contrast(prof).get(word)
    except ValueError:
        return prof  # (a malformed contrast entry: the profile as it is; the check says so where it loads)
    if not takes or len(takes) < 2:
        return prof
    # (the contrast entry stays: a "snap" that fits these takes better is then this word, not no call)
    return dataclasses.replace(prof, templates={**prof.templates, word: takes},
                               thresholds={**prof.thresholds, word: phrase_threshold(word, takes)})


def build_profile(name: str, word: str, takes: Sequence[Take], channel: int | None = None,
                  encoder: E.Encoder | None | str = "auto", speech: np.ndarray | None = None) -> Profile:
    """A profile from checked, trimmed takes (at least 2 per phrase; enroll asks for more).

    With a speaker encoder (``"auto"``: the installed one, if any) each take's
    embedding is kept in ``extra["embeddings"]``; profiles without them keep working.
    ``speech``: some seconds of the player talking freely (16 kHz float), kept
    as one embedding in ``extra["speech"]`` (see ENC_SPEECH_CAP); needs the encoder.
    The trimmed takes themselves are kept in ``extra["audio"]`` (``profile_takes``), so
    that what is learnt from them can be learnt again from the same voice: clipped the
    way a call is (``voices.loudness``).
    """
    name = check_name(name)
    by_phrase: dict[str, list[np.ndarray]] = {}
    for t in takes:
        by_phrase.setdefault(t.phrase, []).append(t.audio)
    if word not in by_phrase or len(by_phrase[word]) < 2:
        raise UserError(f"need at least 2 good takes of '{word}' to enroll {name}")
    templates = {ph: [take_templates(y) for y in ys] for ph, ys in by_phrase.items() if len(ys) >= 2}
    thresholds = {ph: phrase_threshold(ph, ts) for ph, ts in templates.items()}
    vps = np.stack([voiceprint(t.audio) for t in takes])
    center = vps.mean(axis=0)
    scale = np.maximum(vps.std(axis=0), VOICE_SCALE_FLOOR).astype(np.float32)
    dists = []
    for i in range(len(vps)):
        rest = np.delete(vps, i, axis=0)
        z = (vps[i] - rest.mean(axis=0)) / scale
        dists.append(float(np.sqrt(np.mean(z * z))))
    voice_thr = max(float(VOICE_THRESHOLD_FACTOR * max(dists)), VOICE_MIN_THRESHOLD)
    enc = E.load_encoder() if encoder == "auto" else encoder
    extra: dict = {"audio": [[t.phrase, encode_audio(t.audio)] for t in takes]}
    if isinstance(enc, E.Encoder):
        extra["encoder"] = enc.fingerprint
        extra["embeddings"] = _phrase_vectors(takes, enc.embed_many([t.audio for t in takes]))
        if speech is not None:
            extra["speech"] = speech_extra(enc, name, speech)
            extra["looped"] = looped_extra(enc, takes)
    return Profile(
        name=name, word=word, templates=templates, thresholds=thresholds,
        voiceprint=center.astype(np.float32), voice_scale=scale, voice_threshold=voice_thr,
        channel=channel, created=_dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        extra={"takes": {ph: len(v) for ph, v in by_phrase.items()},
               # every take's voiceprint, so a table can pool its players' spreads (Voices.rank_ratio);
               # optional: profiles without it are ranked by their own voice ratio
               "voiceprints": [[round(float(v), 4) for v in vp] for vp in vps], **extra},
    )


def profile_embeddings(prof: Profile) -> tuple[str, dict[str, np.ndarray]] | None:
    """(encoder fingerprint, phrase -> takes' embeddings) of a profile enrolled with the encoder, else None.

    Raises ValueError when they are there but malformed (a damaged profile).
    """
    raw = prof.extra.get("embeddings")
    if raw is None:
        return None
    fp = prof.extra.get("encoder")
    if not isinstance(fp, str) or not isinstance(raw, list) or not raw:
        raise ValueError("speaker embeddings without their encoder")
    return fp, _by_phrase(raw, "a speaker embedding")


def profile_looped(prof: Profile) -> dict[str, np.ndarray] | None:
    """Phrase -> the takes' embeddings of the word played twice (``Encoder.embed_looped``), kept at
    enrollment with the speech sample for the attribution's second look; None for a profile without
    them (takes only, or saved before they were kept). Raises ValueError when they are malformed."""
    raw = prof.extra.get("looped")
    if raw is None:
        return None
    if not isinstance(prof.extra.get("encoder"), str) or not isinstance(raw, list) or not raw:
        raise ValueError("looped embeddings without their encoder")
    return _by_phrase(raw, "a looped embedding")


def looped_extra(enc: E.Encoder, takes: Sequence[Take]) -> list[list]:
    """A profile's ``extra["looped"]``: each take's embedding played twice, as ``extra["embeddings"]``
    keeps it played once. Computed at enrollment (about 0.1 s a take), never in the middle of a game."""
    return _phrase_vectors(takes, enc.embed_looped([t.audio for t in takes]))


def _phrase_vectors(takes: Sequence[Take], embs: Sequence[np.ndarray]) -> list[list]:
    """[[phrase, rounded values], ...] of each take's embedding, as a profile keeps them (``_by_phrase``)."""
    return [[t.phrase, [round(float(v), 5) for v in e]] for t, e in zip(takes, embs)]


def set_speech(prof: Profile, enc: E.Encoder, sample: dict) -> None:
    """Give ``prof`` the speech sample record ``sample`` (``speech_extra``), and with it, where the profile
    keeps its takes, their looped embeddings for the attribution's second look (``looped_extra``)."""
    prof.extra["speech"] = sample
    takes = profile_takes(prof)
    if takes:
        prof.extra["looped"] = looped_extra(enc, takes)
    else:
        prof.extra.pop("looped", None)


def _by_phrase(raw: list, what: str) -> dict[str, np.ndarray]:
    """[[phrase, values], ...] -> phrase -> stacked embeddings; ValueError naming ``what`` when malformed."""
    by: dict[str, list[np.ndarray]] = {}
    for item in raw:
        if not (isinstance(item, list) and len(item) == 2 and isinstance(item[0], str)):
            raise ValueError(f"{what} is not [phrase, values]")
        v = np.asarray(item[1], np.float32)
        if v.shape != (E.HIDDEN,) or not np.isfinite(v).all():
            raise ValueError(f"{what} has shape {v.shape}, not ({E.HIDDEN},)")
        by.setdefault(item[0], []).append(v)
    return {ph: np.stack(vs) for ph, vs in by.items()}


def encode_audio(y: np.ndarray) -> str:
    """A take's 16 kHz float audio as base64 of 16-bit little-endian PCM (as the microphone gave it)."""
    pcm = np.round(np.clip(y, -1.0, 32767 / 32768) * 32768).astype("<i2")
    return base64.b64encode(pcm.tobytes()).decode("ascii")


def profile_takes(prof: Profile) -> list[Take] | None:
    """The trimmed takes a profile was built from, or None for a profile saved without them
    (before they were kept). Raises ValueError when they are there but malformed."""
    raw = prof.extra.get("audio")
    if raw is None:
        return None
    if not isinstance(raw, list) or not raw:
        raise ValueError("the takes' audio is not a list of [phrase, PCM]")
    takes = []
    for item in raw:
        if not (isinstance(item, list) and len(item) == 2 and all(isinstance(v, str) for v in item)):
            raise ValueError("a take's audio is not [phrase, base64 PCM]")
        try:
            pcm = np.frombuffer(base64.b64decode(item[1], validate=True), "<i2")
        except binascii.Error as exc:
            raise ValueError(f"a take's audio is not base64 ({exc})") from exc
        if len(pcm) < F.FRAME:
            raise ValueError(f"a take's audio holds {len(pcm)} samples")
        takes.append(Take(item[0], pcm.astype(np.float32) / 32768.0))
    return takes


def profile_speech(prof: Profile) -> np.ndarray | None:
    """The embedding of a profile's free-speech sample, if it has one (ValueError when malformed)."""
    raw = prof.extra.get("speech")
    if raw is None:
        return None
    if not isinstance(raw, dict) or not isinstance(raw.get("seconds"), (int, float)):
        raise ValueError("the speech sample is not {seconds, embedding}")
    v = np.asarray(raw.get("embedding"), np.float32)
    if v.shape != (E.HIDDEN,) or not np.isfinite(v).all() or not np.linalg.norm(v) > 0:
        raise ValueError(f"the speech sample's embedding has shape {v.shape}, not ({E.HIDDEN},)")
    return v / np.linalg.norm(v)


def contrast_extra(takes: Sequence[Take]) -> dict[str, list[list[list[float]]]]:
    """A profile's ``extra["contrast"]``: per contrast word (``near_miss.CONTRAST_WORDS``), the DTW
    templates of the player's checked takes of it, rounded as the call templates are."""
    out: dict[str, list[list[list[float]]]] = {}
    for t in takes:
        out.setdefault(t.phrase, []).append(np.round(take_templates(t.audio), 3).tolist())
    return out


def profile_contrast(prof: Profile) -> dict[str, list[np.ndarray]]:
    """A profile's contrast templates, word -> log-mel templates ({} for a profile without them, as
    every profile saved before they were asked for). Raises ValueError when they are malformed."""
    raw = prof.extra.get("contrast")
    if raw is None:
        return {}
    if not isinstance(raw, dict) or not raw:
        raise ValueError("the contrast takes are not {word: [templates]}")
    out: dict[str, list[np.ndarray]] = {}
    for word, ts in raw.items():
        if not isinstance(ts, list) or not ts:
            raise ValueError(f"the contrast takes of {word!r} are not a list of templates")
        out[str(word)] = [np.asarray(t, np.float32).reshape(-1, F.N_MELS) for t in ts]
        if any(len(t) < 2 or not np.isfinite(t).all() for t in out[str(word)]):
            raise ValueError(f"a contrast template of {word!r} is shorter than 2 frames or not finite")
    return out


def unit(v: np.ndarray) -> np.ndarray:
    return v / max(float(np.linalg.norm(v)), 1e-9)


def check_name(name: str) -> str:
    """The name as kept: NFC, so "José" is one name however a keyboard or a file system spells its
    accent. Letters and digits of any script ("Zoë", "Søren", "李"), spaces, '-', '_' and '.', starting
    with a letter or digit: it is also the profile's file name, so no '/' and no leading dot."""
    kept = unicodedata.normalize("NFC", name or "")
    if not (1 <= len(kept) <= NAME_MAX and kept[0].isalnum()
            and all(c.isalnum() or c in NAME_MARKS for c in kept)):
        raise UserError(f"player name {name!r} is not usable: use 1-{NAME_MAX} letters, digits, spaces, "
                        "'-', '_' or '.', starting with a letter or digit")
    return kept


def players_dir(option: str | None = None) -> Path:
    return data_dir(option) / "players"


def profile_path(name: str, option: str | None = None) -> Path:
    return players_dir(option) / f"{check_name(name)}.json"


def save_profile(profile: Profile, option: str | None = None) -> Path:
    """Write atomically, readable only by the user (0600)."""
    return atomic_write_text(profile_path(profile.name, option), profile.to_json(), mode=0o600)


def load_profile(name: str, option: str | None = None) -> Profile:
    path = profile_path(name, option)
    if not path.exists():
        raise UserError(f"no voice profile for {name!r} in {path.parent}; enroll with "
                        f"`voicesnap enroll {shlex.quote(name)}`")
    return load_profile_file(path)


def load_profile_file(path: Path) -> Profile:
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise UserError(f"cannot read voice profile {path} ({exc}); enroll again with "
                        f"`voicesnap enroll {shlex.quote(path.stem)}` or `voicesnap players forget {shlex.quote(path.stem)}`") from exc
    prof = Profile.from_json(text, str(path))
    stem = unicodedata.normalize("NFC", path.stem)
    if unicodedata.normalize("NFC", prof.name) != stem:
        # a copied or hand-renamed file: listed, identified and forgotten under one name, seated under the other
        raise UserError(f"voice profile {path} holds {prof.name!r}'s profile, not {stem!r}'s (a copied or renamed "
                        f"file); give it back its own file name ({prof.name}.json; `voicesnap players rename` renames a player), "
                        f"or delete it with `voicesnap players forget {shlex.quote(stem)}`")
    return prof


def same_player(name: str, option: str | None = None) -> str | None:
    """An enrolled player whose name differs from ``name`` only in case, or None.

    Play gives a seat typed "alice" the enrolled "Alice"'s profile (the seat keeps the spelling typed:
    ``cli.play.enrolled_names``), so two profiles so named could not both be seated, and would be one
    file on a case-insensitive file system."""
    kept = check_name(name)
    return next((n for n in list_players(option) if n != kept and n.casefold() == kept.casefold()), None)


def list_players(option: str | None = None) -> list[str]:
    d = players_dir(option)
    if not d.exists():
        return []
    return sorted(unicodedata.normalize("NFC", p.stem) for p in d.glob("*.json") if not p.name.startswith("."))


def load_all(option: str | None = None, on_damaged: Callable[[str], None] | None = None) -> list[Profile]:
    """Every enrolled player's profile. ``on_damaged``: told why a damaged one is left out (else it
    stops the caller): one damaged file must not stop identifying everyone else."""
    out = []
    for name in list_players(option):
        try:
            out.append(load_profile(name, option))
        except UserError as exc:
            if on_damaged is None:
                raise
            on_damaged(str(exc))
    return out
