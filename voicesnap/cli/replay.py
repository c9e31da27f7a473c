"""Re-judge a recorded session from its audio: the same spotter and referee, the same flips; show where the rulings agree and why any differ."""

from __future__ import annotations

import argparse
import dataclasses
import json
import shlex
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Collection

from ..errors import UserError
from ..text import counted, listed
from ..files import data_dir

if TYPE_CHECKING:
    from ..tablelog import TableSession

CLOSE = 0.002  # s: rulings this close in time (and alike otherwise) are the same ruling
RULED_DIFFERENTLY = "the same call, ruled differently"


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("dir", help="the session's folder: the one given to voicesnap play --record, or, for a game "
                        "played without it, its folder in the data folder's games/ (named by the date and time it "
                        "began; such a game kept no audio, so replay says so). A resumed session is re-judged "
                        "stretch by stretch, each from its own recording")
    parser.add_argument("--engine", choices=("same", "vosk", "enrolled", "keyword", "combined"), default="same",
                        help="re-judge with this engine (default: the one used live)")
    parser.add_argument("--model", help="Vosk model folder (default: $VOICESNAP_VOSK_MODEL or the data dir)")
    parser.add_argument("--json", action="store_true", help="print the comparison as JSON")


@dataclass(frozen=True)
class Ruling:
    t: float
    kind: str  # the event's wire name: snap-won, tie-to-pool, wrong-call, pool-won, call-ignored, ...
    who: str
    detail: str
    game: int = 1  # which game of the session it belongs to (a session of several games rules in each)
    at: int = dataclasses.field(default=-1, compare=False)  # its index in the records it came from

    def key(self) -> tuple[str, str]:
        return self.kind, self.who


def _rulings(records: list[Any], offset: float = 0.0, first_game: int = 0) -> list[Ruling]:
    """Each ruling in ``records``, its time on the stretch's own clock (the referee's less ``offset``), and
    its game: ``first_game`` games began before these records (a resumed stretch's), one more with each
    game-started record among them."""
    from ..rules import RULINGS, GameStarted

    out = []
    game = first_game
    for i, r in enumerate(records):
        if isinstance(r, GameStarted):
            game += 1
        elif isinstance(r, RULINGS):
            who = ",".join(getattr(r, "players", ())) or getattr(r, "player", "")
            detail = getattr(r, "reason", "") or str(getattr(r, "cards", getattr(r, "pool", "")))
            out.append(Ruling(round(r.t - offset, 4), getattr(r, "EVENT_TYPE"), who, detail,  # set by @event
                              max(game, 1), i))
    return out


def _calls(records: list[Any]) -> list[Any]:
    from ..table import TableStep

    return [r for r in records if isinstance(r, TableStep) and r.kind == "call"]


def compare(live: list[Any], again: list[Any], unprofiled: Collection[str] = (),
            offset: float = 0.0, first_game: int = 0, settings: TableSession | None = None,
            before: list[Any] | None = None) -> list[dict[str, Any]]:
    """Pair live and re-judged rulings; explain each one that has no partner (``unprofiled``: players the
    replay cannot tell by voice, having no profile in the data folder now). Times are on the stretch's own
    clock, its recording's (``offset``: a resumed stretch's, referee time less its audio clock). Each row
    names its game (``first_game``: games begun before the stretch); with ``settings``, each also says
    why it was ruled (``because``, ``calls``: see ``because``; ``before``: the log before the stretch, where
    the flip a resumed stretch's first call answered may lie)."""
    a, b = _rulings(live, offset, first_game), _rulings(again, offset, first_game)
    used: set[int] = set()
    rows: list[dict[str, Any]] = []
    for r in a:
        match = next((j for j, q in enumerate(b) if j not in used and q.key() == r.key()
                      and abs(q.t - r.t) <= CLOSE and q.detail == r.detail), None)
        if match is None:
            match = next((j for j, q in enumerate(b) if j not in used and q.key() == r.key()
                          and abs(q.t - r.t) <= 0.3), None)
        if match is not None:
            used.add(match)
            q = b[match]
            same = abs(q.t - r.t) <= CLOSE and q.detail == r.detail
            rows.append({"t": r.t, "game": r.game, "ruling": r.kind, "who": r.who, "live": r.detail,
                         "replay": q.detail, "agree": same, "why": "" if same else _why_shift(r, q),
                         **_explained(r, live, settings, offset, before)})
        else:
            rows.append({"t": r.t, "game": r.game, "ruling": r.kind, "who": r.who, "live": r.detail, "replay": None,
                         "agree": False, "why": _why_missing(r, live, again, "game", "replay", unprofiled, offset),
                         **_explained(r, live, settings, offset, before)})
    for j, q in enumerate(b):
        if j not in used:
            rows.append({"t": q.t, "game": q.game, "ruling": q.kind, "who": q.who, "live": None, "replay": q.detail,
                         "agree": False, "why": _why_missing(q, again, live, "replay", "game", (), offset),
                         **_explained(q, again, settings, offset, before)})
    rows.sort(key=lambda row: row["t"])
    for k, row in enumerate(rows):  # its card counts differ, most likely as an earlier ruling moved cards: say so
        first = next((e for e in rows[:k] if not e["agree"] and e["t"] < row["t"]), None)
        if row["why"] == RULED_DIFFERENTLY and first is not None:
            row["why"] += f" (an earlier ruling, at {_seconds(first['t'])}, already differed)"
    return rows


def _explained(r: Ruling, records: list[Any], settings: TableSession | None, offset: float,
               before: list[Any] | None = None) -> dict[str, Any]:
    """A row's ``because`` and ``calls`` (see ``because``), from the side that made the ruling."""
    if settings is None:
        return {}
    words, calls = because(records, r.at, settings, offset, before or [])
    return {"because": words, "calls": calls}


def because(records: list[Any], at: int, settings: TableSession, offset: float = 0.0,
            before: list[Any] | None = None) -> tuple[str, list[dict[str, Any]]]:
    """Why the referee made the ruling ``records[at]``, in words a player disputing it can check, and
    the calls it weighed: who called what, when on the recording's clock (the referee's less ``offset``),
    who else called within the tie window, which flip the call answered, and what was ruled. A player
    asking "why did bob win that pile?" found only "same: bob won 4 cards": the referee's reasons were in
    the log alone. ``calls``: each call heard from ``tie_window`` before the ruling to a decision window
    after it, as {player, word, onset (the recording's clock), by ("voice" or "keyboard"), within_tie_window}."""
    from ..rules import Flipped, GameStarted, WrongCall

    ruling = records[at]
    t = ruling.t - offset
    who = tuple(getattr(ruling, "players", ())) or (getattr(ruling, "player", ""),)
    tie, window = settings.tie_window, settings.decision_window
    near = [c for c in _calls(records) if c.onset is not None and t - tie - 1e-6 <= c.onset <= t + window + 1e-6]
    calls = [{"player": c.player, "word": c.word, "onset": round(c.onset, 4),
              "by": "keyboard" if c.engine == "keyboard" else "voice",
              "within_tie_window": abs(c.onset - t) <= tie + 1e-6} for c in near]
    own = min((c for c in near if c.player == who[0]), key=lambda c: abs(c.onset - t), default=None)

    def said(c: Any) -> str:
        return f"{c.word!r}{' by keyboard' if c.engine == 'keyboard' else ''}"

    if own is None:  # (a ruling made on no logged call: the log holds no table steps, say)
        parts = []
    else:
        parts = [f"{own.player} called {said(own)} at {_seconds(own.onset)}"]
    others = [c for c in near if c is not own]
    if isinstance(ruling, WrongCall):
        others = []  # each call is judged alone: no tie on a wrong call
    for c in others:
        dt = (c.onset - (own.onset if own is not None else t)) * 1000
        inside = abs(c.onset - t) <= tie + 1e-6
        parts.append(f"{c.player} called {said(c)} {_later(dt)}, "
                     f"{'within' if inside else 'outside'} the tie window ({_seconds(tie)})")
    if own is not None and not others and not isinstance(ruling, WrongCall):
        parts.append(f"no one else called within the tie window ({_seconds(tie)})")
    serial = getattr(ruling, "flip", None)
    if serial is not None:
        flip = None
        # (its game's flips so far: back to its game-started record, through the log before a resumed stretch)
        for r in reversed([*(before or []), *records[:at]]):
            if isinstance(r, GameStarted):
                break
            if isinstance(r, Flipped) and r.flip == serial:
                flip = r
                break
        if serial == 0:
            parts.append("no card had been turned yet in this game")
        elif flip is not None:
            what = ("a match" if flip.match else "a match for the pool's top card" if flip.pool_match
                    else "no match")
            parts.append(f"the call answered flip {serial}, {flip.player}'s {flip.card.spoken}: {what}")
    parts.append(f"so {_verdict(ruling)}" if parts else _verdict(ruling))  # (no call logged: the verdict alone)
    return "; ".join(parts), calls


def _verdict(ruling: Any) -> str:
    """What the referee did, in words that do not repeat the ruling's own line."""
    from ..rules import PoolWon, SnapWon, TieToPool, WrongCall

    if isinstance(ruling, SnapWon):
        return f"{ruling.player}, first to call, won the {counted(ruling.cards, 'card')} in play"
    if isinstance(ruling, TieToPool):
        return "neither won: a tie sends the cards in play to the pool"
    if isinstance(ruling, WrongCall):
        paid = [counted(n, f"{side} card") for n, side in ((ruling.from_pile, "face-up"),
                                                             (ruling.from_stack, "face-down")) if n]
        return f"the referee ruled a wrong call: {ruling.player} paid {listed(paid) or 'no card'} into the pool"
    if isinstance(ruling, PoolWon):
        return f"{ruling.player}, first to claim it, won the pool"
    return "the referee ruled: " + ruling_words(getattr(ruling, "EVENT_TYPE"),
                                                ",".join(getattr(ruling, "players", ())) or getattr(ruling, "player", ""),
                                                getattr(ruling, "reason", ""))


def _seconds(t: float) -> str:
    """A time as a screen reader says it well: "13.6 seconds", not "13.600 s" ("thirteen point six zero
    zero s"); to the millisecond still."""
    return f"{f'{t:.3f}'.rstrip('0').rstrip('.')} seconds".replace("-0 seconds", "0 seconds")


def _later(ms: float) -> str:
    """How far apart two onsets are, in words: "40 milliseconds later", "at the same moment" (it said
    "-0 ms")."""
    n = round(ms)
    if n == 0:
        return "at the same moment"
    return f"{counted(abs(n), 'millisecond')} {'later' if n > 0 else 'earlier'}"


def _names(who: str) -> str:
    """A log's comma-joined callers ("alice,cara") as said aloud."""
    return listed(n for n in who.split(",") if n)


def _cards(detail: str) -> str:
    return counted(int(detail), "card") if detail.isdigit() else detail


# Each compared ruling's words, by the event's wire name ({names}: the callers, {cards}: its count)
_RULING_WORDS = {
    "snap-won": "{names} won {cards}",
    "tie-to-pool": "tie between {names}, the pool then had {cards}",
    "pool-tied": "tie for the pool between {names}",
    "wrong-call": "wrong call by {names}, the pool then had {cards}",
    "pool-won": "{names} won the pool, {cards}",
    "call-ignored": "{names}'s call ignored: {detail}",
}


def ruling_words(kind: str, who: str, detail: str) -> str:
    """A compared ruling in words, as a screen reader reads it ("tie between alice and cara, the pool
    then had 2 cards"); the rows keep the event's wire name and bare number for --json."""
    names = _names(who)
    if kind in _RULING_WORDS:
        return _RULING_WORDS[kind].format(names=names, cards=_cards(detail), detail=detail)
    return f"{kind.replace('-', ' ')}: {names}{', ' + detail if detail else ''}"


def _why_shift(r: Ruling, q: Ruling) -> str:
    dt = (q.t - r.t) * 1000
    if abs(dt) > CLOSE * 1000:
        return f"the same ruling, but the replay heard the call {_later(dt)}"
    return RULED_DIFFERENTLY


def _why_missing(r: Ruling, mine: list[Any], other: list[Any], me: str, them: str,
                 unprofiled: Collection[str] = (), offset: float = 0.0) -> str:
    players = set(r.who.split(","))
    near = [c for c in _calls(other) if c.player in players and abs((c.onset or 0) - r.t) <= 0.5]
    own = [c for c in _calls(mine) if c.player in players and abs((c.onset or 0) - r.t) <= 0.01]
    lost = sorted(players & set(unprofiled))
    if not near and lost and them == "replay":
        return (f"the replay cannot tell {listed(lost)}'s calls by voice: no voice profile in the data folder "
                "now (see the note above)")
    if not near:
        what = own[0].word if own else "a call"
        return (f"the {them} heard no call from {_names(r.who)} near {_seconds(r.t)}: the spotter did not hear "
                f"{what!r} there (the {me} heard it"
                f"{' from the keyboard' if own and own[0].engine == 'keyboard' else ''})")
    c = near[0]
    dt = ((c.onset or 0) - r.t) * 1000
    ties = [q for q in _rulings(other, offset) if q.kind == "tie-to-pool" and abs(q.t - r.t) < 0.2]
    if r.kind == "tie-to-pool" or ties:
        # the caller one side heard and the other did not, not whichever tied caller both heard: it named
        # alice, heard "at the same moment" on both sides, for a tie lost with cara's call
        unheard = sorted(p for p in players if not any(n.player == p for n in near))
        if r.kind == "tie-to-pool" and unheard:
            word = next((o.word for o in _calls(mine) if o.player in unheard and abs((o.onset or 0) - r.t) <= 0.5),
                        "a call")
            return (f"the {them} heard no call from {_names(','.join(unheard))} near {_seconds(r.t)} (the {me} "
                    f"heard {word!r}), so it ruled no tie there")
        tied = {p for q in ties for p in q.who.split(",")} - players
        rival = next((n for n in _calls(other) if n.player in tied and abs((n.onset or 0) - r.t) <= 0.5), None)
        if rival is not None:
            return (f"the {them} also heard {rival.player} say {rival.word!r} "
                    f"{_later(((rival.onset or 0) - r.t) * 1000)}, within the tie window, so it ruled a tie")
        return (f"the {them} heard {c.player} say {c.word!r} {_later(dt)}, which changes who was within "
                "the tie window")
    heard = f"the {them} heard {c.player} say {c.word!r} at {_seconds(c.onset or 0)} ({_later(dt)})"
    # what that side ruled of it, in words: "which the referee ruled otherwise" left the player to guess
    theirs = [q for q in _rulings(other, offset) if c.player in q.who.split(",") and abs(q.t - (c.onset or 0)) <= 0.5]
    if theirs:
        q = min(theirs, key=lambda q: abs(q.t - (c.onset or 0)))
        return f"{heard} and ruled: {ruling_words(q.kind, q.who, q.detail)}"
    return f"{heard} and made no ruling of it"


class _Keys:
    """Puts the live session's key presses back, each once the audio has reached it."""

    name = "keys"

    def __init__(self, inner: Any, keys: list[Any]) -> None:
        from ..spotters import Detection

        self.inner = inner
        # per-microphone spotters (ChannelSpotters): the table then tracks speech bursts per
        # channel, as it did live; without this a replay mixed the channels and ruled a first
        # call before a rival on another microphone was in whenever the rival came a chunk later
        self.spotters = getattr(inner, "spotters", None)
        self.pending = sorted(
            (Detection(k.word or "", k.onset or 0.0, k.onset or 0.0, 1.0, player=k.player, engine="keyboard")
             for k in keys), key=lambda d: d.onset)

    def undecided(self) -> float | None:  # as the live table had it (spotters.undecided_from)
        from ..spotters import undecided_from

        return undecided_from(self.inner)

    def take_refusals(self) -> list[Any]:
        from ..spotters import take_refusals

        return take_refusals(self.inner)

    def accept(self, chunk: Any) -> list[Any]:
        out = list(self.inner.accept(chunk)) if self.inner is not None else []
        now = chunk.end / chunk.rate
        while self.pending and self.pending[0].onset <= now:
            out.append(self.pending.pop(0))
        return out

    def flush(self) -> list[Any]:
        out = list(self.inner.flush()) if self.inner is not None else []
        out.extend(self.pending)
        self.pending = []
        return out


@dataclass
class Stretch:
    """One stretch of a session, re-judged on its own: the game as first played (number 1), or what
    followed a ``play --resume``, heard from a recording of its own (``audio``) on a clock of its own
    that starts at 0 with that recording. The log's steps (flips, calls, key presses) are on that
    clock; its rulings and game ends on the referee's, which is it plus ``offset``."""

    number: int
    of: int  # how many stretches the session has
    audio: str  # its recording's file name in the session folder ("" where none was made)
    offset: float
    records: list[Any]  # its own part of the log
    before: list[Any]  # the log before it: what play --resume dealt the game again from

    @property
    def name(self) -> str:
        return f"stretch {self.number} of {self.of}"


def stretches(live: list[Any], settings: TableSession) -> list[Stretch]:
    """The session's stretches: one, or one more after each resume (its table-resumed record names
    its recording and offset)."""
    from ..tablelog import TableResumed

    cuts = [i for i, r in enumerate(live) if isinstance(r, TableResumed)]
    bounds = [0, *cuts, len(live)]
    out = []
    for k in range(len(bounds) - 1):
        a, b = bounds[k], bounds[k + 1]
        head = live[a] if k else None
        out.append(Stretch(k + 1, len(bounds) - 1, head.audio if isinstance(head, TableResumed) else settings.audio,
                           head.offset if isinstance(head, TableResumed) else 0.0, live[a:b], live[:a]))
    return out


def read_session(folder: Path) -> tuple[TableSession, list[Any]]:
    """The session's settings and its whole log (a killed game's recordings moved into place first)."""
    from .. import gamelog
    from ..files import recover_sound_files
    from ..tablelog import TableSession

    log_path = folder / "log.jsonl"
    # a game killed mid-recording left it under a temporary name
    recover_sound_files(folder, tell=lambda text: print(text, file=sys.stderr))
    live = [ev for _, ev in gamelog.read(log_path, torn_tail=True, notice=lambda text: print(f"({text})", file=sys.stderr))]
    settings = next((r for r in live if isinstance(r, TableSession)), None)
    if settings is None:
        raise UserError(f"{log_path} is not a voicesnap play log (no table-session record)")
    return settings, live


def rejudge_stretch(folder: Path, root: Path, settings: TableSession, stretch: Stretch, engine: str = "same",
                    model: str | None = None, notes: list[str] | None = None,
                    unprofiled: list[str] | None = None) -> tuple[list[Any], list[Any]]:
    """(live records, re-judged records) for one stretch of a recorded session, from its own recording;
    what the player should know about how it was re-judged (the echo reference) is appended to ``notes``,
    and the players it cannot tell by voice (no profile in ``root`` now) to ``unprofiled``. A UserError
    says why it cannot be re-judged."""
    from ..audio import AudioFileError, FileSource
    from ..table import TableEnd, TableStep, play_session, rebuild
    from ..tablelog import LISTENING_FAILED, TableNote
    from .play import build_spotter

    log_path = folder / "log.jsonl"
    live = stretch.records
    offset = stretch.offset
    resumed = None
    if stretch.number > 1:
        # dealt again from the log before it, as play --resume did, on the clock the resume logged
        # (play's offset is the rebuilt last time + 1 s; x - 1 + 1 is x exactly for x >= 1)
        resumed = dataclasses.replace(rebuild(stretch.before), last_t=offset - 1.0)
    audio = folder / (stretch.audio or "audio.wav")
    if not stretch.audio:  # play records audio only for a game heard through a microphone
        if settings.engine in ("none", "keyboard"):
            raise UserError(f"{folder} was played by keyboard only, so there is no audio to re-judge: its rulings "
                            f"came from the key presses in {log_path.name}")
        if stretch.number > 1:
            raise UserError(f"{stretch.name} has no recording (it was resumed without --record {folder}, or with no "
                            "microphone): its rulings came from the key presses alone")
        raise UserError(f"{folder} holds no recorded audio; record a session with "
                        "voicesnap play --record DIR to be able to replay it")
    if stretch.number > 1 and stretch.audio == settings.audio:
        raise UserError(f"{stretch.name}'s record names {stretch.audio}, the first stretch's recording (a "
                        "voicesnap from before 2026-12-07 named no resumed stretch's own recording), so its "
                        "own cannot be told apart")
    if not audio.is_file():
        from ..files import recordings_in_progress

        if audio.name in recordings_in_progress(folder):  # (recover_sound_files left it to the game)
            raise UserError(f"the game in {folder} is still being played (its recording {audio.name} is still "
                            "being written): replay it once the game has ended or been stopped")
        raise UserError(f"{audio} is missing: the game's log names it as its recording; put the file back in "
                        f"{folder} to replay the game")
    flips = [r.now + offset for r in live if isinstance(r, TableStep) and r.kind == "flip"]  # on the referee's clock
    ends = [r.now for r in live if isinstance(r, TableEnd)]
    keys = [r for r in live if isinstance(r, TableStep) and r.engine == "keyboard" and r.kind in ("call", "command")]
    pool_flag: list[Any] = []
    name = settings.engine if engine == "same" else engine
    spotter = None
    if name not in ("none", "keyboard"):
        # a session logged as "combined" was heard without the keyword model ("combined+keyword": with it)
        args = argparse.Namespace(model=model, no_gate=not settings.gate,
                                  no_keyword=engine == "same" and name == "combined")
        if notes is not None:
            notes.append(f"speech gate: {'on' if settings.gate else 'off'}, as in the game")
        missing = _without_profiles(name, settings, root, live, folder, notes if notes is not None else [])
        if unprofiled is not None:
            unprofiled.extend(missing)
        spotter, _ = build_spotter(name, args, root, settings.players, dict(settings.channels), pool_flag,
                                   settings.variant)

    if spotter is not None:
        spotter = _with_reference(spotter, folder, live, notes if notes is not None else [], stretch.audio)

    class Memory(list):
        def write(self, *records: Any) -> None:
            self.extend(records)

    again = Memory()
    try:
        source = FileSource(audio, chunk_frames=320)
    except AudioFileError as exc:
        if not exc.reason:
            raise
        # the reader's advice (re-record or re-export it, convert it) is for a file the player makes; a
        # game's recording cannot be made again
        what = "this stretch" if stretch.of > 1 else "the game"
        raise UserError(f"{audio} is damaged ({exc.reason}), so {what} cannot be re-judged") from exc
    if settings.channels and source.channels <= max(settings.channels.values()):
        far = max(settings.channels, key=lambda p: settings.channels[p])
        raise UserError(f"{audio} has {counted(source.channels, 'channel')}, and the game heard {far} on channel "
                        f"{settings.channels[far]}: it is not this game's recording (one microphone per player, "
                        f"{counted(len(settings.channels), 'channel')}); put the game's own back")
    result = play_session(settings, again, chunks=source,
                          spotter=_Keys(spotter, keys), lines=lambda _s: None, schedule=flips, stop_at=ends,
                          pool_flag=pool_flag, resumed=resumed)
    if result.reason == "interrupted":  # (the table turns Ctrl-C into a stop): half a replay is no verdict
        raise KeyboardInterrupt
    if result.reason == LISTENING_FAILED:
        why = next((r.text for r in again if isinstance(r, TableNote) and r.text.startswith(LISTENING_FAILED)), "")
        raise UserError(f"{why or LISTENING_FAILED} part way through {audio}; no rulings compared")
    until = _comparable_until(live, settings, source.duration, audio.name, notes if notes is not None else [],
                              offset)
    if until is None:
        return live, list(again)
    window = settings.decision_window
    return ([r for r in live if not _ruled_after(r, until, window, offset)],
            [r for r in again if not _ruled_after(r, until, window, offset)])


def _without_profiles(name: str, settings: TableSession, root: Path, live: list[Any], folder: Path,
                      notes: list[str]) -> list[str]:
    """The players an engine that tells callers by their enrolled voices cannot tell now: replay reads the
    profiles in the data folder (a session folder keeps no voices: forgetting a player deletes theirs), so
    one renamed or forgotten since the game, or another data folder, changes who is heard. None of the
    players left: a UserError (play's advice, --channels or --engine none, means nothing to a replay);
    some: a note, and the rulings on them differ."""
    from .play import STRICT, enrolled_names

    strict = name.endswith(STRICT)
    if not strict and (settings.channels or name not in ("enrolled", "keyword", "combined", "combined+keyword")):
        return []  # a microphone per player names the caller; no voice is needed for that
    players = tuple(settings.channels) if strict and settings.channels else settings.players
    known = enrolled_names(root, players)
    missing = [p for p in players if p not in known]
    _changed_profiles(settings, root, notes)
    if not missing:
        return []
    voiced = sorted({c.player for c in _calls(live) if c.engine != "keyboard" and c.player in missing})
    names = listed(missing)
    has = "has" if len(missing) == 1 else "have"
    heard = (f" (the game heard {listed(voiced)} by voice: renamed or forgotten since, or not the data folder "
             "the game used?)" if voiced else "")
    enroll = "; ".join(f"voicesnap enroll {shlex.quote(p)}" for p in missing)
    fix = (f"enroll {'them' if len(missing) > 1 else missing[0]} again ({enroll}), or replay with the data folder "
           f"the game used: voicesnap --data-dir DIR replay {shlex.quote(str(folder))}")
    if strict or len(missing) == len(players):
        raise UserError(f"{names} {has} no voice profile in {root} now{heard}, and this game told who called by "
                        f"the players' enrolled voices: {fix}")
    whose = "their" if len(missing) > 1 else f"{missing[0]}'s"
    notes.append(f"{names} {has} no voice profile in {root} now{heard}: the replay cannot tell {whose} calls by "
                 f"voice, so rulings on their calls differ; {fix}")
    return missing


def _changed_profiles(settings: TableSession, root: Path, notes: list[str]) -> None:
    """A note for each player enrolled again since the game (their profile's stamp is not the logged one):
    the replay hears them with today's profile, so rulings on their calls may differ, unsaid before.
    (A player with no profile now is _without_profiles' to say.)"""
    from .play import seat_profiles

    now = seat_profiles(root, tuple(settings.voices))
    changed = [f"{seat} (enrolled {stamp or 'earlier'} for the game, {now[seat].created} now)"
               for seat, stamp in settings.voices.items() if seat in now and now[seat].created != stamp]
    if changed:
        notes.append(f"enrolled again since the game: {'; '.join(changed)}. The replay hears them with today's "
                     "profile, so rulings on their calls may differ from the game's")


def _ruled_after(record: Any, until: float, window: float, offset: float = 0.0) -> bool:
    """A ruling the referee made past ``until`` (the stretch's own clock: the referee's less ``offset``): it
    rules a call once it reaches onset + decision window."""
    from ..rules import RULINGS

    return isinstance(record, RULINGS) and record.t - offset + window > until + 1e-9


def _comparable_until(live: list[Any], settings: TableSession, audio_seconds: float, audio_name: str,
                      notes: list[str], offset: float = 0.0) -> float | None:
    """How far (the stretch's own clock: its recording's, the referee's less ``offset``) both the live game
    and the replay surely ruled, or None for the whole stretch.

    A game killed mid-play logged no end: its referee surely got as far as its last logged advance, or its
    last flip less the lag (it rules up to there before turning a card), and the replay, which goes on to
    the end of the audio, would rule calls the game never reached. An audio file shorter than the log
    (cut, or copied short) cannot re-judge what the game heard after it ends. Rulings past either are left
    out of the comparison, and a note says where it stops.
    """
    from ..rules import RULINGS, GameStarted
    from ..table import TableEnd, TableStep

    lag = max(settings.lag, settings.pool_lag)
    window = settings.decision_window
    ends = [i for i, r in enumerate(live) if isinstance(r, TableEnd)]
    after_end = live[ends[-1] + 1:] if ends else live
    until = float("inf")
    if any(isinstance(r, (TableStep, GameStarted, *RULINGS)) for r in after_end):  # its end not logged
        reached = [r.now for r in live if isinstance(r, TableStep) and r.kind == "advance"]
        reached += [r.now - lag for r in live if isinstance(r, TableStep) and r.kind == "flip"]
        reached += [r.now - offset for r in live if isinstance(r, TableEnd)]  # (a game's end is on the referee's)
        until = max(reached, default=0.0)
        last = max((r.now - offset if isinstance(r, TableEnd) else r.now
                    for r in live if isinstance(r, (TableStep, TableEnd))), default=0.0)
        notes.append(f"the log stops at {_seconds(last)} without the game's end (the game was cut off): only "
                     f"rulings on calls up to {_seconds(until - window)}, which the live referee had surely reached, are compared")
    heard = [r.heard for r in live if isinstance(r, TableStep) and r.heard is not None]
    heard += [r.now - offset for r in live if isinstance(r, TableEnd)]
    log_heard = max(heard, default=0.0)
    if log_heard > audio_seconds + 0.02:  # (a chunk's end is what was heard; the recorder wrote it first)
        until = min(until, audio_seconds - lag)
        if until - window <= 0:  # (it said "up to -1.174 s")
            notes.append(f"{audio_name} ends at {_seconds(audio_seconds)}, before what the game heard "
                         f"({_seconds(log_heard)}), too soon for any ruling to be re-judged from it")
        else:
            notes.append(f"{audio_name} ends at {_seconds(audio_seconds)}, before what the game heard "
                         f"({_seconds(log_heard)}): only rulings on calls up to {_seconds(until - window)} can be re-judged from it, and are "
                         "compared")
    return None if until == float("inf") else until


def _with_reference(spotter: Any, folder: Path, live: list[Any], notes: list[str], audio: str = "audio.wav") -> Any:
    """The spotter behind the echo canceller fed with the reference recorded beside ``audio``, as in the
    game; without one, the spotter alone, with a note when the announcer spoke during the game."""
    from ..echo_record import load_reference, reference_name
    from ..playback import SpeechStarted

    name = reference_name(audio)
    path = folder / name
    if path.is_file():
        from ..echo import ArrayReference, EchoCancelled

        reference = load_reference(path)  # (a damaged one raises: no note that it was used)
        notes.append(f"echo cancellation: on, with the recorded reference ({name}), as in the game")
        return EchoCancelled(spotter, ArrayReference(reference))
    if any(isinstance(r, SpeechStarted) for r in live):
        cut = any(folder.glob(f".{name}.*.tmp.*"))  # a crash left it unreadable (recover_sound_files)
        why = ("its recording was cut off by a crash and cannot be read" if cut
               else "recorded with --no-echo-cancel or by an older voicesnap")
        notes.append(f"echo cancellation: off: {folder} has no {name} ({why}), so calls made over the "
                     "announcer may be heard differently than in the game")
    return spotter


def run(args: argparse.Namespace) -> int:
    folder = Path(args.dir)
    if not (folder / "log.jsonl").is_file():
        raise UserError(_not_a_game(folder, data_dir(args.data_dir, create=False)))
    root = data_dir(args.data_dir)
    try:
        settings, live = read_session(folder)
        parts = stretches(live, settings)
        if len(parts) == 1:
            notes: list[str] = []
            unprofiled: list[str] = []
            try:
                live, again = rejudge_stretch(folder, root, settings, parts[0], args.engine, args.model, notes,
                                              unprofiled)
            except UserError as exc:
                # what the game ruled, and why, from its log: a keyboard game, or one whose recording is
                # gone, left a player disputing a ruling with only the reason replay could not re-judge it
                logged = logged_rows(parts[0].records, settings)
                if args.json:  # the JSON still comes, as for a resumed game's stretches (it printed none)
                    print(json.dumps({"rulings": [], "agree": 0, "total": 0, "notes": [], "error": str(exc),
                                      "logged": logged}, indent=2))
                else:
                    several = _several_games(settings)
                    _print_logged(logged, several, "the session" if several else "the game")
                raise
        else:
            done = _rejudge_stretches(folder, root, settings, parts, args.engine, args.model)
            several = _several_games(settings)
    except KeyboardInterrupt:
        print(f"voicesnap replay: stopped before the end of {folder}'s audio; no rulings compared", file=sys.stderr)
        return 130
    if len(parts) > 1:
        return _report_stretches(folder, done, args.json, several)
    rows = compare(live, again, unprofiled, settings=settings)
    agree = sum(1 for r in rows if r["agree"])
    if args.json:
        print(json.dumps({"rulings": rows, "agree": agree, "total": len(rows), "notes": notes}, indent=2))
    else:
        for note in notes:
            print(f"({note})")
        print(f"replay of {folder}: {_agreeing(agree, len(rows))}")
        _print_rows(rows, _several_games(settings))
    return 0 if agree == len(rows) else 1


def _not_a_game(folder: Path, root: Path) -> str:
    """Why ``folder`` is no game to replay, and where the games are: a mistyped folder was said to "have no
    log.jsonl", the log file itself too, and "the data folder's games/" named no place to look."""
    if folder.name == "log.jsonl" and folder.is_file():
        return f"{folder} is the game's log: give its folder, voicesnap replay {shlex.quote(str(folder.parent))}"
    what = (f"there is no folder {folder}" if not folder.exists() else
            f"{folder} is a file, not a game's folder" if not folder.is_dir() else
            f"{folder} holds no game (no log.jsonl in it)")
    return (f"{what}; give the folder you passed to voicesnap play --record, or a game's folder in "
            f"{root / 'games'} (each named by the date and time the game began)")


def _agreeing(agree: int, total: int) -> str:
    """"5 of 5 rulings agree", "1 of 1 ruling agrees", "1 of 5 rulings agrees", each in its number; "no
    ruling to compare: nobody called in the game or the replay" where there is none ("0 of 0 rulings agree")."""
    if total == 0:
        return "no ruling to compare: nobody called in the game or the replay"
    return f"{agree} of {counted(total, 'ruling')} {'agrees' if agree == 1 else 'agree'}"


def logged_rows(records: list[Any], settings: TableSession, offset: float = 0.0,
                first_game: int = 0, before: list[Any] | None = None) -> list[dict[str, Any]]:
    """Each ruling the log holds, with its game and why it was made (``because``, ``calls``), for a stretch
    that could not be re-judged."""
    return [{"t": r.t, "game": r.game, "ruling": r.kind, "who": r.who, "live": r.detail,
             **_explained(r, records, settings, offset, before)} for r in _rulings(records, offset, first_game)]


def _print_logged(rows: list[dict[str, Any]], games: bool, whose: str = "the game") -> None:
    """The log's rulings, each with why, where they could not be re-judged."""
    if not rows:
        return
    print(f"{whose}'s {counted(len(rows), 'ruling')}, as the log gives {'it' if len(rows) == 1 else 'them'} "
          "(not re-judged):")
    for r in rows:
        game = f"game {r['game']}, " if games else ""
        print(f"  {game}at {_seconds(r['t'])}, {ruling_words(r['ruling'], r['who'], r['live'])}")
        print(f"    because: {r['because']}")


def _several_games(settings: TableSession) -> bool:
    """A session played to more than one game (best of 3, first to 2): its rulings say their game."""
    return settings.format != "best-of-1"


def _print_rows(rows: list[dict[str, Any]], games: bool = False) -> None:
    """One line of words per ruling (with ``games``, its game first: "game 2, at 30 seconds"), then why it
    was ruled, then why it differs: it printed "DIFF  7.600 s  tie-to-pool alice,cara  live: 2  replay:
    None", the event's wire name and a bare number read out as they were."""
    for r in rows:
        def said(detail: str) -> str:
            return ruling_words(r["ruling"], r["who"], detail)

        game = f"game {r['game']}, " if games else ""
        line = f"  {'same' if r['agree'] else 'different'}: {game}at {_seconds(r['t'])}, "
        if r["agree"] or r["live"] == r["replay"]:
            line += said(r["live"])
        elif r["replay"] is None:
            line += f"the game ruled: {said(r['live'])}; the replay did not"
        elif r["live"] is None:
            line += f"the replay ruled: {said(r['replay'])}; the game did not"
        else:
            line += f"the game ruled: {said(r['live'])}; the replay: {said(r['replay'])}"
        print(line)
        if r["why"]:  # (the difference first: it is what the player reads the line for)
            print(f"    why: {r['why']}")
        if r.get("because"):
            print(f"    because: {r['because']}")


@dataclass
class _Done:
    """A stretch re-judged (its compared rulings), or why it could not be (``error``)."""

    stretch: Stretch
    rows: list[dict[str, Any]]
    notes: list[str]
    error: str = ""
    logged: list[dict[str, Any]] = dataclasses.field(default_factory=list)  # its log's rulings, when not re-judged


def _rejudge_stretches(folder: Path, root: Path, settings: TableSession, parts: list[Stretch], engine: str,
                       model: str | None) -> list[_Done]:
    """Every stretch of a resumed session, each from its own recording; one that cannot be re-judged (its
    recording missing or damaged) is said and the others go on."""
    from ..rules import GameStarted

    done = []
    for part in parts:
        notes: list[str] = []
        unprofiled: list[str] = []
        begun = sum(1 for r in part.before if isinstance(r, GameStarted))  # games begun before this stretch
        try:
            live, again = rejudge_stretch(folder, root, settings, part, engine, model, notes, unprofiled)
        except UserError as exc:  # (its notes say how it was being re-judged: it was not, so only the reason)
            logged = [{**row, "stretch": part.number}
                      for row in logged_rows(part.records, settings, part.offset, begun, part.before)]
            done.append(_Done(part, [], [], str(exc), logged))
            continue
        rows = compare(live, again, unprofiled, part.offset, begun, settings, part.before)
        done.append(_Done(part, [{**row, "stretch": part.number} for row in rows], notes))
    return done


def _none_rejudged(done: list[_Done]) -> str:
    """Why no stretch could be re-judged: the one reason, or each stretch's."""
    reasons = list(dict.fromkeys(d.error for d in done))
    if len(reasons) == 1:
        return reasons[0]
    return "no stretch of the game could be re-judged: " + "; ".join(f"{d.stretch.name}: {d.error}" for d in done)


def _times(n: int) -> str:
    return "once" if n == 1 else "twice" if n == 2 else f"{n} times"


def _report_stretches(folder: Path, done: list[_Done], as_json: bool, games: bool = False) -> int:
    """Each stretch's rulings and agreement, then the whole game's (with ``games``, the whole session's,
    each ruling naming its game: a best of 3 was summed up as "the whole game"); exit 0 only when every
    stretch was re-judged and every ruling agrees. None could be: the reason, as a UserError (exit 2),
    after the JSON that gives each stretch's with ``as_json``."""
    n = len(done)
    what = "session" if games else "game"
    about = (f"the {what} was resumed {_times(n - 1)}, so it has {n} stretches, each with its own recording: each "
             "is re-judged from its own, and its times are counted from the start of that recording")
    rows = [row for d in done for row in d.rows]
    agree = sum(1 for r in rows if r["agree"])
    failed = [d for d in done if d.error]
    notes = [about]
    for d in done:  # (a note every stretch gives, such as the speech gate, is said once)
        notes.extend(note for note in d.notes if note not in notes)
        if d.error:
            notes.append(f"{d.stretch.name} ({d.stretch.audio or 'no recording'}) was not re-judged: {d.error}")
    if as_json:
        print(json.dumps({"rulings": rows, "agree": agree, "total": len(rows), "notes": notes, "stretches": [
            {"stretch": d.stretch.number, "audio": d.stretch.audio, "agree": sum(1 for r in d.rows if r["agree"]),
             "total": len(d.rows), "notes": d.notes, "error": d.error, "logged": d.logged} for d in done]}, indent=2))
    if len(failed) == n:  # the reason on stderr, and the log's rulings in text
        if not as_json:
            for d in done:
                _print_logged(d.logged, games, f"{d.stretch.name} ({d.stretch.audio or 'no recording'})")
        raise UserError(_none_rejudged(done))
    if not as_json:
        print(f"replay of {folder} ({about})")
        said: list[str] = [about]
        for d in done:
            for note in d.notes:
                # one stretch's own note names it: "the log stops at 39.72 seconds" before stretch 2's
                # line read as stretch 1's, on the other recording's clock
                common = all(note in e.notes for e in done)
                line = f"({note})" if common else f"({d.stretch.name}: {note})"
                if line not in said:
                    said.append(line)
                    print(line)
            if d.error:
                # (the folder is said once, above and in the last line: a long path per stretch is a long listen)
                print(f"{d.stretch.name} ({d.stretch.audio or 'no recording'}): not re-judged, because {d.error}")
                _print_logged(d.logged, games, d.stretch.name)
                continue
            own = sum(1 for r in d.rows if r["agree"])
            print(f"{d.stretch.name} ({d.stretch.audio}): {_agreeing(own, len(d.rows))}")
            _print_rows(d.rows, games)
        whole = f"replay of {folder}, the whole {what}: {_agreeing(agree, len(rows))}"
        if failed:
            names = ", ".join(d.stretch.name for d in failed)
            whole += (f" in the {counted(n - len(failed), 'stretch', 'stretches')} of {n} re-judged; "
                      f"not re-judged: {names}")
        print(whole)
    return 0 if agree == len(rows) and not failed else 1
