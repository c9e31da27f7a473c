"""The recorded-audio fixture corpus: typed ground truth, and scoring detections against it.

Each fixture is a WAV with a JSON sidecar (same basename + ".json") that says
who says what and where, in samples (see tests/fixtures/audio/README.md). Tests
and benchmarks judge every engine with the one ``score`` here, so "recall" and
"false calls per hour" mean the same thing everywhere.

Matching rule (stated once, used everywhere): a detection hits a ground-truth
segment when the word is the segment's text, the channel is the segment's
channel (multichannel fixtures only), and the detection's onset lies within
``tolerance`` seconds (default 0.25 s) of the segment's onset. Each segment
takes at most one detection and each detection at most one segment, pairing
the closest onsets first. Every other detection of a word in play is a false
call; one that overlaps a target of a different text (heard "snap" in "snap
pool") is also listed as a confusion.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Literal, Sequence

from .errors import UserError
from .spotters import Detection

__all__ = [
    "CORPUS_DIR", "DEFAULT_TOLERANCE", "CorpusError", "Segment", "Fixture", "Match", "Score",
    "load", "load_corpus", "score", "merge", "percentile",
]

CORPUS_DIR = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "audio" / "corpus"
DEFAULT_TOLERANCE = 0.25  # seconds between detected and true onset for a hit

Kind = Literal["call", "command", "nearmiss", "chatter", "announcement", "noise"]
KINDS: tuple[str, ...] = ("call", "command", "nearmiss", "chatter", "announcement", "noise")
CATEGORIES: tuple[str, ...] = (
    "clean", "noisy", "echo", "nearmiss", "snap_vs_pool", "overlap", "quiet", "clipped",
    "long_quiet", "commands", "chatter", "multichannel", "enroll", "heldout", "unknown", "nearmiss_noisy", "slam",
)
TARGET_KINDS: tuple[str, ...] = ("call", "command")


class CorpusError(UserError):
    """A sidecar that does not describe its WAV: the message names the file and the field."""


@dataclass(frozen=True)
class Segment:
    """One utterance or sound in a fixture; ``onset``/``end`` are first/last sample of the word."""

    speaker: str
    text: str
    kind: Kind
    onset: int
    end: int
    channel: int = 0
    note: str | None = None
    synth: dict[str, Any] | None = None  # how the generator rendered it (tests re-render)

    @property
    def is_target(self) -> bool:
        return self.kind in TARGET_KINDS


@dataclass(frozen=True)
class Fixture:
    """A fixture WAV and its ground truth."""

    path: Path  # the WAV
    rate: int
    channels: int
    frames: int
    category: str
    snr_db: float | None
    description: str
    segments: tuple[Segment, ...]
    reference: Path | None = None  # what the game played (dry, input clock), for echo cancelling

    @property
    def name(self) -> str:
        return self.path.stem

    @property
    def duration(self) -> float:
        return self.frames / self.rate

    def seconds(self, sample: int) -> float:
        return sample / self.rate

    def targets(self, words: Iterable[str] | None = None) -> list[Segment]:
        """Calls and commands that a detector should report (only ``words``, if given)."""
        allowed = None if words is None else set(words)
        return [s for s in self.segments if s.is_target and (allowed is None or s.text in allowed)]

    def non_target_seconds(self, words: Iterable[str] | None = None) -> float:
        """Audio time outside every target segment: the denominator of false calls per hour."""
        spans = sorted((s.onset, s.end + 1) for s in self.targets(words))
        covered, cur_lo = 0, 0  # cur_lo: read only once cur_hi is set (the open span)
        cur_hi: int | None = None
        for lo, hi in spans:
            if cur_hi is None or lo > cur_hi:
                if cur_hi is not None:
                    covered += cur_hi - cur_lo
                cur_lo, cur_hi = lo, hi
            else:
                cur_hi = max(cur_hi, hi)
        if cur_hi is not None:
            covered += cur_hi - cur_lo
        return (self.frames - covered) / self.rate

    def read(self) -> Any:
        """The audio as int16 ``(frames, channels)``, checked against the sidecar."""
        from .audio import read_wav

        samples, rate = read_wav(self.path, expect_rate=self.rate, expect_channels=self.channels)
        if samples.shape[0] != self.frames:
            raise CorpusError(
                f"{self.path}: has {samples.shape[0]} frames but its sidecar says {self.frames}; "
                "regenerate with python3 tests/fixtures/audio/generate.py"
            )
        return samples

    def read_reference(self) -> Any:
        """What the game played (the announcer, dry) as int16 ``(frames, 1)`` on this fixture's
        clock, or None when it played nothing; the echo canceller's reference."""
        if self.reference is None:
            return None
        from .audio import read_wav

        samples, _ = read_wav(self.reference, expect_rate=self.rate, expect_channels=1)
        if samples.shape[0] != self.frames:
            raise CorpusError(
                f"{self.reference}: has {samples.shape[0]} frames, its fixture {self.frames}; "
                "regenerate with python3 tests/fixtures/audio/generate.py"
            )
        return samples


def _field(data: dict[str, Any], key: str, kind: type | tuple[type, ...], where: str) -> Any:
    if key not in data:
        raise CorpusError(f"{where}: missing field {key!r}")
    value = data[key]
    if not isinstance(value, kind) or isinstance(value, bool) and kind is not bool:
        raise CorpusError(f"{where}: field {key!r} is {value!r}, not {kind}")
    return value


def _segment(data: Any, where: str, channels: int, frames: int) -> Segment:
    if not isinstance(data, dict):
        raise CorpusError(f"{where}: a segment must be an object")
    kind = _field(data, "kind", str, where)
    if kind not in KINDS:
        raise CorpusError(f"{where}: kind {kind!r} is not one of {KINDS}")
    onset = _field(data, "onset", int, where)
    end = _field(data, "end", int, where)
    channel = data.get("channel", 0)
    if not 0 <= onset <= end < frames:
        raise CorpusError(f"{where}: onset {onset} / end {end} must satisfy 0 <= onset <= end < frames ({frames})")
    if not isinstance(channel, int) or not 0 <= channel < channels:
        raise CorpusError(f"{where}: channel {channel!r} is not in 0..{channels - 1}")
    return Segment(
        speaker=_field(data, "speaker", str, where), text=_field(data, "text", str, where),
        kind=kind, onset=onset, end=end, channel=channel,
        note=data.get("note"), synth=data.get("synth"),
    )


def load(sidecar: str | Path) -> Fixture:
    """Read one sidecar (``NAME.json``, or the ``NAME.wav`` beside it) into a Fixture."""
    path = Path(sidecar)
    if path.suffix.lower() == ".wav":
        path = path.with_suffix(".json")
    try:
        data = json.loads(path.read_text())
    except FileNotFoundError as exc:
        raise CorpusError(f"{path}: no sidecar; every fixture WAV needs NAME.json beside it") from exc
    except json.JSONDecodeError as exc:
        raise CorpusError(f"{path}: not JSON ({exc.msg}, line {exc.lineno})") from exc
    if not isinstance(data, dict):
        raise CorpusError(f"{path}: expected a JSON object")
    where = str(path)
    rate = _field(data, "rate", int, where)
    channels = _field(data, "channels", int, where)
    frames = _field(data, "frames", int, where)
    category = _field(data, "category", str, where)
    if category not in CATEGORIES:
        raise CorpusError(f"{where}: category {category!r} is not one of {CATEGORIES}")
    if rate <= 0 or channels <= 0 or frames <= 0:
        raise CorpusError(f"{where}: rate, channels and frames must be positive")
    snr = data.get("snr_db")
    if snr is not None and not isinstance(snr, (int, float)):
        raise CorpusError(f"{where}: snr_db must be null or a number")
    raw = _field(data, "segments", list, where)
    segments = tuple(_segment(s, f"{where} segment {i}", channels, frames) for i, s in enumerate(raw))
    wav = path.with_name(_field(data, "file", str, where))
    ref = data.get("reference")
    if ref is not None and not isinstance(ref, str):
        raise CorpusError(f"{where}: field 'reference' is {ref!r}, not a file name")
    return Fixture(wav, rate, channels, frames, category, None if snr is None else float(snr),
                   str(data.get("description", "")), segments,
                   None if ref is None else path.with_name(ref))


def load_corpus(directory: str | Path | None = None, categories: Iterable[str] | None = None) -> list[Fixture]:
    """Every fixture in a folder (default: the listening corpus), sorted by name."""
    folder = Path(directory) if directory is not None else CORPUS_DIR
    if not folder.is_dir():
        raise CorpusError(f"{folder}: no fixture corpus here; run python3 tests/fixtures/audio/generate.py")
    wanted = None if categories is None else set(categories)
    out = [load(p) for p in sorted(folder.glob("*.json"))]
    return [f for f in out if wanted is None or f.category in wanted]


# --------------------------------------------------------------------------- scoring


@dataclass(frozen=True)
class Match:
    """A detection paired with the segment it found."""

    fixture: str
    segment: Segment
    detection: Detection
    onset_error: float  # detected minus true onset, seconds
    latency: float | None  # detected_at minus the word's end, seconds (audio time)


@dataclass(frozen=True)
class Score:
    """What one engine got right and wrong on one or more fixtures."""

    hits: tuple[Match, ...] = ()
    misses: tuple[tuple[str, Segment], ...] = ()
    false: tuple[tuple[str, Detection], ...] = ()  # detections of words in play that hit nothing
    confusions: tuple[tuple[str, Detection, Segment], ...] = ()  # false ones lying on a target of another text
    ignored: tuple[tuple[str, Detection], ...] = ()  # words not in play (e.g. "slap" in Snap)
    seconds: float = 0.0  # audio scored
    non_target_seconds: float = 0.0

    @property
    def targets(self) -> int:
        return len(self.hits) + len(self.misses)

    @property
    def recall(self) -> float:
        return len(self.hits) / self.targets if self.targets else math.nan

    def false_per_hour(self, words: Iterable[str] | None = None) -> float:
        """False detections (of ``words`` only, if given) per hour of non-target audio."""
        allowed = None if words is None else set(words)
        n = sum(1 for _, d in self.false if allowed is None or d.word in allowed)
        return n / (self.non_target_seconds / 3600) if self.non_target_seconds else math.nan

    @property
    def onset_errors(self) -> list[float]:
        return [m.onset_error for m in self.hits]

    @property
    def latencies(self) -> list[float]:
        return [m.latency for m in self.hits if m.latency is not None]


def score(
    fixture: Fixture,
    detections: Sequence[Detection],
    *,
    words: Iterable[str] | None = None,
    tolerance: float = DEFAULT_TOLERANCE,
) -> Score:
    """Judge ``detections`` from one fixture against its ground truth (rule: module docstring).

    ``words`` are the words in play (e.g. the calls and commands of the game
    being measured); detections of other words are set aside as ``ignored``
    and targets with other texts are not expected. ``None`` means all.
    """
    allowed = None if words is None else set(words)
    targets = fixture.targets(allowed)
    multi = fixture.channels > 1
    kept = [d for d in detections if allowed is None or d.word in allowed]
    ignored = tuple((fixture.name, d) for d in detections if allowed is not None and d.word not in allowed)
    pairs = []
    for i, seg in enumerate(targets):
        t0 = fixture.seconds(seg.onset)
        for j, det in enumerate(kept):
            if det.word != seg.text or (multi and det.channel != seg.channel):
                continue
            err = det.onset - t0
            if abs(err) <= tolerance:
                pairs.append((abs(err), i, j, err))
    pairs.sort()
    used_seg: set[int] = set()
    used_det: set[int] = set()
    hits = []
    for _, i, j, err in pairs:
        if i in used_seg or j in used_det:
            continue
        used_seg.add(i)
        used_det.add(j)
        seg, det = targets[i], kept[j]
        latency = None if det.detected_at is None else det.detected_at - fixture.seconds(seg.end + 1)
        hits.append(Match(fixture.name, seg, det, err, latency))
    false = [(j, kept[j]) for j in range(len(kept)) if j not in used_det]
    confusions = []
    for _, det in false:
        for seg in fixture.targets(None):
            if seg.text != det.word and det.onset <= fixture.seconds(seg.end + 1) and det.end >= fixture.seconds(seg.onset):
                confusions.append((fixture.name, det, seg))
                break
    return Score(
        hits=tuple(sorted(hits, key=lambda m: m.segment.onset)),
        misses=tuple((fixture.name, targets[i]) for i in range(len(targets)) if i not in used_seg),
        false=tuple((fixture.name, d) for _, d in false),
        confusions=tuple(confusions),
        ignored=ignored,
        seconds=fixture.duration,
        non_target_seconds=fixture.non_target_seconds(allowed),
    )


def merge(scores: Iterable[Score]) -> Score:
    """One Score for many fixtures (sums counts and durations)."""
    parts = list(scores)
    return Score(
        hits=tuple(m for s in parts for m in s.hits),
        misses=tuple(m for s in parts for m in s.misses),
        false=tuple(f for s in parts for f in s.false),
        confusions=tuple(c for s in parts for c in s.confusions),
        ignored=tuple(i for s in parts for i in s.ignored),
        seconds=sum(s.seconds for s in parts),
        non_target_seconds=sum(s.non_target_seconds for s in parts),
    )


def percentile(values: Sequence[float], q: float) -> float:
    """The q-th percentile (0-100, linear interpolation), NaN for no values."""
    if not values:
        return math.nan
    ordered = sorted(values)
    pos = (len(ordered) - 1) * q / 100
    lo = math.floor(pos)
    hi = min(lo + 1, len(ordered) - 1)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (pos - lo)
