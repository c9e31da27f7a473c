"""The announcer: game events become speech, earcons and plain text lines.

Players may never look at a screen, so everything the game knows is said
aloud, promptly: each flip the moment it happens, every ruling, eliminations,
results, whose turn and who deals. Three parts:

- ``phrase``/``describe``: pure wording of each event for a verbosity level.
- ``SpeechQueue``: pure priority rules. A flip supersedes older flips and
  information (they are cut or dropped, never left to pile up behind the
  game); rulings are never dropped or cut.
- ``Announcer``: the shell that renders (voicesnap.speech), plays
  (voicesnap.playback), prints ``--text`` lines, and reports when each
  announcement actually started on the audio clock.

Without speech or a speaker the game goes on: the announcer says why, once,
and keeps printing text.
"""

from __future__ import annotations

import enum
import math
import sys
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Sequence, TextIO

import numpy as np

from .cards import Card, Rank, Suit
from .events import event
from .rules import (
    NOT_A_CALL, POOL, SLAM, SLAP, SNAP, WRONG, CallIgnored, Dealt, Eliminated, Flipped, Forfeit, Game, GameOver, GameStarted,
    PoolTied, PoolWon, Refreshed, SnapWon, TableState, TieToPool, WrongCall,
)
from .session import GameScored, SessionOver, SuddenDeath
from .text import counted, listed

# Why a call was wrong, by its kind (a player who plays by ear heard only "wrong call": was nothing
# showing, or was it another player's noise?). The event carries the word said ("snap pool", "moo"):
# ``describe``'s ``kind_of`` asks the variant which kind that word is (rules.Game.call_kind).
_WRONG_WHY = {SNAP: ": no match", POOL: ": no pool match", SLAP: ": no Jack", SLAM: ": nothing to win",
              WRONG: ": not their call"}

__all__ = [
    "Verbosity", "Priority", "Announcement", "SpeechQueue", "Announcer", "describe", "earcon",
    "EARCONS", "ignored_words", "startup_phrases", "open_announcer", "rehearse", "for_table", "TableSpeaker", "Settings", "status_words", "score_words",
]


class Verbosity(enum.Enum):
    RANKS = "ranks"  # flips as the rank only: "Eight"
    NAMES = "names"  # flips with player and suit: "Alice, Eight of Hearts"
    ALL = "all"  # also whose turn, pile refreshes, ignored calls

    @classmethod
    def parse(cls, text: str) -> "Verbosity":
        try:
            return cls(text.strip().lower())
        except ValueError:
            from .errors import UserError

            raise UserError(
                f"unknown verbosity {text!r}: choose {', '.join(v.value for v in cls)}"
            ) from None


class Priority(enum.IntEnum):
    INFO = 0  # whose turn, refreshes, replies to commands: superseded by the next flip
    FLIP = 1  # a card: superseded by the next flip
    RULING = 2  # rulings, deals, results: never dropped, never cut


@event("announcement")
@dataclass(frozen=True)
class Announcement:
    """One thing to say. ``flip`` is the game's flip serial when it was made (staleness)."""

    id: int
    t: float  # clock time of the event that caused it
    kind: str  # the event's wire name, or "turn", "reply"
    priority: Priority
    text: str
    flip: int = 0
    earcon: str | None = None
    ends: str = ""  # a notice: how the earlier notice it makes stale begins ("lost", when back)
    answer: bool = False  # the answer to a command (status, help, ...): the next answer cuts it


# --- wording (pure) ----------------------------------------------------------


def _cards(n: int) -> str:
    return counted(n, "card")


def card_words(card: Card, verbosity: Verbosity) -> str:
    return card.face_name if verbosity is Verbosity.RANKS else card.spoken


def _top(cards: Sequence[Card]) -> str:
    return f", top card {cards[-1].spoken}" if cards else ""


# Why the engine's guard ended a game, in words a player can follow by ear (the bare reason,
# "Bob wins (repeat)", was read aloud as "Bob wins repeat").
_ENDED = {
    "flip cap": "the flip limit is reached",
    "repeat": "the same cards came round again",
    # (it said only "Game over. Ann wins." just after "Ann is out. Ben is out.")
    "all out": "the last players went out together",
}

# What settled a tie-break (rules.Game.tiebreak_step), as said after "wins on the tie-break": "on the
# tie-break" alone left a player by ear to guess why a level game went to Ann.
_TIEBREAK = {
    "most cards won by calls": ", most cards won by calls",
    "the latest winning call": ", the latest to win cards",
    "lots": ", by drawing lots",
}


def _game_over(ev: GameOver, players: Sequence[str], tiebreak: str | None = None) -> str:
    why = _ENDED.get(ev.reason)
    if why is None:  # the last player holding cards: the win says it
        return f"Game over. {ev.winner} wins."
    if len(players) != len(ev.cards):  # (the display's short line has no seats to count)
        return f"Game over: {why}. {ev.winner} wins."
    held = dict(zip(players, ev.cards))
    most = all(n < held[ev.winner] for p, n in held.items() if p != ev.winner)
    how = f"with the most cards, {held[ev.winner]}" if most else "on the tie-break" + _TIEBREAK.get(tiebreak or "", "")
    return f"Game over: {why}. {ev.winner} wins {how}."


def describe(ev: Any, verbosity: Verbosity, state: TableState | None = None,
             players: Sequence[str] = (),
             kind_of: Callable[[str, str], str | None] | None = None,
             tiebreak: str | None = None) -> tuple[str, Priority, str | None] | None:
    """(text, priority, earcon) for one event, or None when this verbosity skips it.

    ``state`` is the table after the event (for the pool's top card). ``kind_of(player, word)``: the
    kind of call a word is for that player in this game (``rules.Game.call_kind``), for why a call was
    wrong; without it only the classic words are known ("snap", "snap pool"). ``tiebreak``: what
    settled a game the tie-break decided (``rules.Game.tiebreak_step``), for its game-over line.
    """
    all_ = verbosity is Verbosity.ALL
    if isinstance(ev, Flipped):
        words = card_words(ev.card, verbosity)
        text = words if verbosity is Verbosity.RANKS else f"{ev.player}, {words}"
        return text, Priority.FLIP, None
    if isinstance(ev, GameStarted):
        return (f"New game: {listed(ev.players)}." if all_ else "New game."), Priority.RULING, None
    if isinstance(ev, Dealt):
        names = state.players if state else players
        if names:
            return f"{names[ev.dealer]} deals. {names[ev.first]} goes first.", Priority.RULING, None
        return None
    if isinstance(ev, SnapWon):
        return f"{ev.player} wins {_cards(ev.cards)}.", Priority.RULING, "snap_won"
    if isinstance(ev, TieToPool):
        pool = state.pool if state else ()
        moved = sum(ev.counts)
        return (f"Tie between {listed(ev.players)}. {_cards(moved).capitalize()} to the pool; "
                f"the pool has {_cards(ev.pool)}{_top(pool)}."), Priority.RULING, "pool_formed"
    if isinstance(ev, PoolTied):
        return f"Pool tie between {listed(ev.players)}. The pool stays.", Priority.RULING, "pool_formed"
    if isinstance(ev, WrongCall):
        moved = ev.from_pile + ev.from_stack
        pool = state.pool if state else ()
        kind = kind_of(ev.player, ev.kind) if kind_of is not None else Game.words.get(ev.kind, ev.kind)
        why = _WRONG_WHY.get(kind or "", "")
        if kind == WRONG and kind_of is not None:  # Animal Snap: whose noise it was ("not their call" alone
            owners = [p for p in (state.players if state else players)  # left Ben to guess whose it is)
                      if p != ev.player and kind_of(p, ev.kind) not in (None, WRONG)]
            if owners:
                why = f": {ev.kind} is {listed(owners)}'s call"
        return (f"Wrong call by {ev.player}{why}. {_cards(moved).capitalize()} to the pool; "
                f"the pool has {_cards(ev.pool)}{_top(pool)}."), Priority.RULING, "wrong_call"
    if isinstance(ev, PoolWon):
        return f"{ev.player} wins the pool, {_cards(ev.cards)}.", Priority.RULING, "snap_won"
    if isinstance(ev, Forfeit):
        return f"{ev.player} forfeits {_cards(ev.cards)} to {ev.to}.", Priority.RULING, None
    if isinstance(ev, Eliminated):
        return f"{ev.player} is out.", Priority.RULING, "elimination"
    if isinstance(ev, GameOver):
        return _game_over(ev, state.players if state else players, tiebreak), Priority.RULING, None
    if isinstance(ev, GameScored):
        return f"Game {ev.game} to {ev.winner}. {score_words(players, ev.scores)}", Priority.RULING, None
    if isinstance(ev, SuddenDeath):  # (said only in the log's "sudden_death" before: the table went on unexplained)
        return (f"Sudden death: {listed(ev.players)} are level and play on; the next game's winner wins the session.",
                Priority.RULING, None)
    if isinstance(ev, SessionOver):
        return (f"{ev.winner} wins the session after {counted(ev.games, 'game')}. "
                f"{score_words(players, ev.scores)}"), Priority.RULING, None
    if isinstance(ev, Refreshed):
        if all_:
            return f"{ev.player} turns over {_cards(ev.cards)}.", Priority.INFO, None
        return None
    if isinstance(ev, CallIgnored):
        # a word that is no call in this game is said at every verbosity: in Animal or Silent Snap an
        # enrolled player's "snap" met silence, while an unknown voice's was told "no call in this game"
        if all_ or ev.reason.startswith(NOT_A_CALL):
            return ignored_words(ev), Priority.INFO, None
        return None
    return None


def ignored_words(ev: CallIgnored) -> str:
    """An ignored call in words, "Ann's snap ignored: out of the game.": --text printed "Ann 'snap' ignored:
    not a call in silent", quotes and the variant's id for a screen reader to read out."""
    reason = "not a call in this game" if ev.reason.startswith(NOT_A_CALL) else ev.reason
    return f"{ev.player}'s {ev.kind} ignored: {reason}."


def score_words(players: Sequence[str], scores: Sequence[int]) -> str:
    if not players or len(players) != len(scores):
        return "Scores: " + ", ".join(str(s) for s in scores) + "."
    return "Scores: " + ", ".join(f"{p} {s}" for p, s in zip(players, scores)) + "."


def status_words(state: TableState, turn: str | None = None) -> str:
    """Every player's card count and showing card, then the pool, then whose turn it is (``turn``,
    where one player flips next; the status command).

    In games with one shared face-up pile (Single Pile Snap) no player "shows"
    a card: the counts are of face-down cards and the centre pile is said once.
    """
    parts = []
    own = len(state.piles) == len(state.players)
    for seat, name in enumerate(state.players):
        if state.eliminated[seat]:
            parts.append(f"{name} is out")
            continue
        held = state.held(seat)
        if not own:
            parts.append(f"{name} {_cards(held)}")
            continue
        pile = state.piles[seat]
        showing = f", showing {pile[-1].spoken}" if pile else ", nothing showing"
        parts.append(f"{name} {_cards(held)}{showing}")
    if not own:
        centre = state.piles[0] if state.piles else ()
        parts.append(f"Centre pile {_cards(len(centre))}{_top(centre)}" if centre else "Centre pile empty")
    pool = f"Pool {_cards(len(state.pool))}{_top(state.pool)}." if state.pool else "Pool empty."
    return ". ".join(parts) + ". " + pool + (f" {turn}'s turn." if turn else "")


def startup_phrases(players: Sequence[str], verbosity: Verbosity, deck: Iterable[Card] | None = None) -> list[str]:
    """What the announcer renders before the first deal: every flip phrase it may need.

    Flips must start within a few milliseconds, so their audio is ready; in
    names mode the player's name and the card are separate clips joined at
    play time (players + 52 cards instead of players x 52 phrases).
    """
    cards = list(deck) if deck is not None else [Card(rank=r, suit=s) for r in Rank for s in Suit]
    out: list[str] = []
    for c in cards:
        text = card_words(c, verbosity)
        if text not in out:
            out.append(text)
    if verbosity is not Verbosity.RANKS:
        out.extend(p for p in players if p not in out)
    out.extend(["Paused.", "Resumed.", "Nothing to repeat yet."])
    return out


# --- earcons (generated, no files) -------------------------------------------

# name -> ((frequency Hz, seconds), ...): distinct contours so they are told apart by ear
EARCONS: dict[str, tuple[tuple[float, float], ...]] = {
    "snap_won": ((660.0, 0.07), (990.0, 0.11)),  # rising fifth: good news
    "pool_formed": ((523.0, 0.06), (523.0, 0.06), (523.0, 0.06)),  # three even taps
    "wrong_call": ((196.0, 0.22),),  # one low buzz (with harmonics)
    "elimination": ((494.0, 0.09), (392.0, 0.09), (294.0, 0.16)),  # falling
    "your_turn": ((1175.0, 0.05),),  # a short high blip
}


def earcon(name: str, rate: int, volume: float = 1.0) -> np.ndarray:
    """The earcon as int16 mono samples: tones with 5 ms ramps and 20 ms gaps."""
    notes = EARCONS[name]
    parts = []
    ramp_n = max(1, int(0.005 * rate))
    for freq, seconds in notes:
        n = int(seconds * rate)
        t = np.arange(n) / rate
        wave = np.sin(2 * math.pi * freq * t)
        if name == "wrong_call":  # buzzier: odd harmonics
            wave = wave + 0.4 * np.sin(2 * math.pi * 3 * freq * t) + 0.2 * np.sin(2 * math.pi * 5 * freq * t)
            wave /= 1.6
        env = np.ones(n)
        env[:ramp_n] = np.linspace(0, 1, ramp_n)
        env[-ramp_n:] = np.linspace(1, 0, ramp_n)
        parts.append(wave * env)
        parts.append(np.zeros(int(0.02 * rate)))
    audio = np.concatenate(parts) * 0.35 * min(volume, 2.0) * 32767
    return np.clip(audio, -32768, 32767).astype(np.int16)


# --- the queue (pure) --------------------------------------------------------


class SpeechQueue:
    """Which announcements are still wanted; what a new one cancels.

    Rules: a flip cancels (cuts if playing, drops if waiting) every flip and
    information item from an *earlier* flip: flips of the same serial (Speed
    Snap, everyone at once) play in turn. A ruling cancels waiting/playing
    information, never a flip or another ruling. Rulings are never cancelled.
    A notice that ``ends`` another (the microphone is back) cancels that one
    (the microphone was lost): what the table said about itself is news only
    while it is true. An answer to a command cancels the answers before it: a
    player who asks for the score in the middle of the help (16 s of it) wants
    the score now, as a screen reader stops reading at the next key. So at any
    moment nothing stale is waiting behind the game.
    """

    def __init__(self) -> None:
        self.active: dict[int, Announcement] = {}
        self.latest_flip = 0
        self.dropped = 0

    def submit(self, ann: Announcement) -> list[int]:
        """Admit ``ann``; return the ids to cancel (in playback) because of it."""
        if ann.priority is Priority.FLIP:
            self.latest_flip = max(self.latest_flip, ann.flip)
            cancel = [i for i, a in self.active.items()
                      if a.priority < Priority.RULING and a.flip < ann.flip]
        elif ann.priority is Priority.RULING:
            cancel = [i for i, a in self.active.items() if a.priority is Priority.INFO]
        else:
            cancel = []
        if ann.ends:
            cancel += [i for i, a in self.active.items() if a.kind == "notice" and a.text.startswith(ann.ends)]
        if ann.answer:
            cancel += [i for i, a in self.active.items() if a.answer and i not in cancel]
        for i in cancel:
            del self.active[i]
        self.dropped += len(cancel)
        self.active[ann.id] = ann
        return cancel

    def ended(self, item_id: int) -> None:
        self.active.pop(item_id, None)

    def stale(self) -> int:
        """Items still wanted that an newer flip has made stale (must be zero)."""
        return sum(1 for a in self.active.values() if a.priority < Priority.RULING and a.flip < self.latest_flip)


# --- the shell ---------------------------------------------------------------


@dataclass
class Settings:
    verbosity: Verbosity = Verbosity.NAMES
    earcons: bool = True
    text: bool = False  # --text: one plain line per announcement


class Announcer:
    """Turns events into speech/text; holds the queue, the cache and the playback.

    ``speech`` is a voicesnap.speech.SpeechCache (None: text only);
    ``playback`` is a VirtualPlayback/DevicePlayback (None: text only). The
    rates of the two must agree (build the cache with the playback's rate).
    """

    def __init__(self, speech: Any | None, playback: Any | None, settings: Settings | None = None,
                 out: TextIO | None = None, notice: Callable[[str], None] | None = None) -> None:
        self.speech = speech
        self.playback = playback
        self.settings = settings or Settings()
        self.out = out if out is not None else sys.stdout
        self._notice = notice or (lambda msg: print(f"voicesnap: {msg}", file=sys.stderr))
        self.notices: list[str] = []
        self.queue = SpeechQueue()
        self.players: tuple[str, ...] = ()
        self.flip = 0  # the serial of the flip being announced (``flipped``)
        self._flip_t: float | None = None  # ...and when its cards were turned
        self._round: list[int] = []  # the ids of that flip's cards (several: a Speed Snap round)
        self._round_flip = 0
        self.log: list[Announcement] = []
        self.started: dict[int, float] = {}  # announcement id -> clock time its audio started
        self.paused = False
        self._next_id = 1
        self._gap: np.ndarray | None = None
        self.spoken: dict[int, list[float]] = {}  # id -> [start, end] on the clock (end inf: playing)

    # --- notices: say why speech is off, once
    def notice(self, message: str) -> None:
        if message not in self.notices:
            self.notices.append(message)
            self._notice(message)

    def disable_speech(self, reason: str) -> None:
        self.speech = None
        self.settings.text = True
        self.notice(reason + " (the game goes on; announcements are text only)")

    @property
    def ruling_active(self) -> bool:
        """A ruling is still waiting or playing (the play loop holds the next flip)."""
        return any(a.priority is Priority.RULING for a in self.queue.active.values())

    @property
    def round_said(self) -> float | None:
        """When the last flip's cards, if several were turned at once (Speed Snap), had all been said (clock
        time); ``math.inf`` while one is still waiting or playing; None for a single card. The play loop
        (table.Output) holds the next round until then and a moment more."""
        if len(self._round) < 2:
            return None
        if any(i in self.queue.active for i in self._round):
            return math.inf
        ends = [self.spoken[i][1] for i in self._round if i in self.spoken]
        return max(ends) if ends else None

    @property
    def speaking(self) -> bool:
        return self.speech is not None and self.playback is not None

    # --- input
    def handle(self, events: Iterable[Any], state: TableState | None = None, turn: bool = False) -> list[Announcement]:
        """Announce a batch of game events (one flip's or one ruling's output).

        ``state`` is the table afterwards (pool top card, whose turn);
        ``turn`` adds "<player>'s turn" (with the your-turn earcon) at ALL
        verbosity.
        """
        made = []
        for ev in events:
            if isinstance(ev, GameStarted):
                self.players = tuple(ev.players)
            if isinstance(ev, Flipped):
                self.flipped(ev)
            d = describe(ev, self.settings.verbosity, state, self.players)
            if d is None:
                continue
            text, priority, ear = d
            made.append(self.say(text, priority, getattr(ev, "t", 0.0), getattr(ev, "EVENT_TYPE", "event"),
                                 ear, card=ev if isinstance(ev, Flipped) else None))
        if turn and state is not None and not made_game_over(made) and self.settings.verbosity is Verbosity.ALL:
            t = made[-1].t if made else 0.0
            made.append(self.say(f"{state.players[state.active]}'s turn.", Priority.INFO, t, "turn", "your_turn"))
        return made

    def flipped(self, ev: Flipped) -> None:
        """Take ``ev``'s card as the flip now announced (its serial: ``SpeechQueue``). Cards turned at one
        moment (Speed Snap: everyone at once, each card its own flip number) are one flip, said in turn: by
        their own numbers each card cut the one before it, and only the last player's card was heard. The
        serial is the announcer's own count, not the game's: a session's next game counts its flips from 1
        again, and its cards must still cut the last game's."""
        if ev.t != self._flip_t:
            self.flip += 1
            self._flip_t = ev.t

    def say(self, text: str, priority: Priority, t: float, kind: str = "reply", ear: str | None = None,
            card: Flipped | None = None, ends: str = "", answer: bool = False) -> Announcement:
        ann = Announcement(self._next_id, t, kind, priority, text, self.flip, ear if self.settings.earcons else None,
                           ends, answer)
        self._next_id += 1
        self.log.append(ann)
        if self.settings.text:
            print(text, file=self.out, flush=True)
        if card is not None:  # a card turned: one of its flip's round
            if ann.flip != self._round_flip:
                self._round, self._round_flip = [], ann.flip
            self._round.append(ann.id)
        cancel = self.queue.submit(ann)
        speech, playback = self.speech, self.playback
        if speech is not None and playback is not None:  # self.speaking
            if cancel:
                playback.cancel(cancel)
            audio = self._audio(ann, card, speech)
            if audio is not None:
                playback.play(ann.id, ann.text, audio)
            else:
                self.queue.ended(ann.id)
        else:
            self.queue.ended(ann.id)
        return ann

    def _audio(self, ann: Announcement, card: Flipped | None, speech: Any) -> np.ndarray | None:
        """``speech``: this announcer's SpeechCache (``self.speech``, not None while speaking)."""
        from .speech import SpeechError

        try:
            parts: list[np.ndarray] = []
            rate = speech.rate
            if ann.earcon:
                parts.append(earcon(ann.earcon, rate, speech.settings.volume))
            if card is not None and self.settings.verbosity is not Verbosity.RANKS:
                # name + card from two pre-rendered clips, 60 ms apart
                parts += [speech.get(card.player).samples, self._silence(rate),
                          speech.get(card_words(card.card, self.settings.verbosity)).samples]
            else:
                parts.append(speech.get(ann.text).samples)
            return parts[0] if len(parts) == 1 else np.concatenate(parts)
        except SpeechError as exc:
            self.disable_speech(str(exc))
            return None

    def _silence(self, rate: int) -> np.ndarray:
        if self._gap is None or len(self._gap) != int(0.06 * rate):
            self._gap = np.zeros(int(0.06 * rate), dtype=np.int16)
        return self._gap

    def poll(self) -> list[Any]:
        """Playback events since the last poll (SpeechStarted/SpeechEnded on the clock)."""
        if self.playback is None:
            return []
        from .playback import SpeechEnded, SpeechStarted

        events = self.playback.poll()
        # gaps in speech (once a burst), and the speaker gone or back: told, not said
        for name in ("underflow_notice", "loss_notice"):
            check = getattr(self.playback, name, None)
            message = check() if check is not None else None
            if message:
                self._notice(message)
        for ev in events:
            if isinstance(ev, SpeechStarted):
                self.started[ev.id] = ev.t
                self.spoken[ev.id] = [ev.t, math.inf]
                if len(self.spoken) > 64:
                    del self.spoken[next(iter(self.spoken))]
            elif isinstance(ev, SpeechEnded):
                self.queue.ended(ev.id)
                if ev.id in self.spoken:
                    self.spoken[ev.id][1] = ev.t
        return events

    def hush(self) -> int:
        """Cut what is playing and drop everything waiting, rulings too; returns how many.

        For a game stopped by the players (Ctrl-C): rulings are never cancelled in play, so after a
        flood of calls they went on being said for 20 s after the stop, and the stop's own words,
        queued behind them, were never heard."""
        ids = list(self.queue.active)
        for i in ids:
            self.queue.ended(i)
        if ids and self.playback is not None:
            self.playback.cancel(ids)
        return len(ids)

    def change(self, rate: int = 0, volume: float = 0.0) -> str:
        """Move the speech rate or volume a step (start-up set re-rendered) and return the answer in words,
        unsaid: "Louder: volume 120 percent." ("Volume 120." said nothing of what the number was), and at
        either end of the range that it goes no further."""
        if self.speech is None:
            from .table import NO_VOICE_TO_CHANGE

            return NO_VOICE_TO_CHANGE
        old = self.speech.settings
        new = old.adjusted(rate=rate, volume=volume)
        self.speech.settings = new
        self.speech.prerender(startup_phrases(self.players, self.settings.verbosity))
        if rate:
            how = "faster" if rate > 0 else "slower"
            if new.rate == old.rate:
                return f"The announcer speaks as {how[:-2]} as it can: {new.rate} words a minute."
            return f"Speaking {how}: {new.rate} words a minute."
        up = volume > 0
        level = f"volume {int(round(new.volume * 100))} percent"
        if new.volume == old.volume:
            return f"The announcer is as {'loud' if up else 'quiet'} as it goes: {level}."
        return f"{'Louder' if up else 'Quieter'}: {level}."

    def prepare(self) -> float:
        """Render the start-up set now; returns seconds taken (0 with speech off)."""
        if self.speech is None:
            return 0.0
        from .speech import SpeechError

        try:
            return self.speech.prerender(startup_phrases(self.players, self.settings.verbosity))
        except SpeechError as exc:
            self.disable_speech(str(exc))
            return 0.0


def open_announcer(data_dir: Any, voice: Any = None, settings: Settings | None = None, *,
                   output_device: int | str | None = None, clock_map: Any = None, speech: bool = True,
                   out: TextIO | None = None, notice: Callable[[str], None] | None = None) -> Announcer:
    """An announcer on the real speaker, or, failing that, in text (never an exception).

    No speaker, no espeak-ng, an unknown voice: the reason is said once
    (``notice``, stderr by default) and announcements go on as text lines.
    """
    from .playback import AudioOutputError, DevicePlayback
    from .speech import SpeechCache, SpeechError, VoiceSettings, check_voice

    settings = settings or Settings()
    ann = Announcer(None, None, settings, out, notice)
    if not speech:
        settings.text = True
        return ann
    voice = voice or VoiceSettings()
    try:
        check_voice(voice)
    except SpeechError as exc:
        settings.text = True
        ann.notice(f"{exc}")
        return ann
    try:
        playback = DevicePlayback(device=output_device, clock_map=clock_map).open()
    except AudioOutputError as exc:
        settings.text = True
        ann.notice(f"{exc}; the game goes on and announcements are printed as text")
        return ann
    ann.speech = SpeechCache.in_data_dir(data_dir, voice, rate=playback.rate)
    ann.playback = playback
    ann.prepare()  # (while the speaker's new stream gets going)
    slow = playback.warm_up()  # the first announcement on a stream that runs: DevicePlayback.WARM_S
    if slow:
        ann.notice(slow)
    return ann


class TableSpeaker:
    """The announcer as voicesnap.table's Output wants it: ``say(text, priority, event)``,
    ``setting(name)``, ``close()``; plus ``poll()`` for when speech started.

    The table writes its own wording (and its own --text lines); this speaks
    it. A flip (``event`` is Flipped) is played from the pre-rendered name and
    card clips so it starts at once, whatever the table's wording.
    Table priorities: 1 flip, 2 info, 3 ruling.
    """

    _PRIORITY = {1: Priority.FLIP, 2: Priority.INFO, 3: Priority.RULING}

    def __init__(self, announcer: Announcer, reasons: list[str] | None = None) -> None:
        self.announcer = announcer
        self.reasons = reasons if reasons is not None else []  # the announcer's notices, in order
        self._told = len(self.reasons)  # notices passed on so far (the start's own are the caller's)
        self._stopped = False

    def say(self, text: str, priority: int = 2, event: Any = None) -> None:
        ann = self.announcer
        prio = self._PRIORITY.get(int(priority), Priority.INFO)
        if isinstance(event, GameStarted):
            ann.players = tuple(event.players)
            ann.prepare()
        if isinstance(event, Flipped):
            ann.flipped(event)
            ann.say(text, prio, event.t, getattr(event, "EVENT_TYPE"), None, card=event)  # set by @event
            return
        ear = None
        if event is not None:
            d = describe(event, ann.settings.verbosity)
            ear = d[2] if d else None
        ann.say(text, prio, getattr(event, "t", 0.0), getattr(event, "EVENT_TYPE", "reply"), ear,
                ends=getattr(event, "ends", ""),  # a table Notice: the notice it makes stale
                answer=bool(getattr(event, "answer", False)))  # a table Say answering a command

    def setting(self, name: str) -> str | None:
        """Change the voice (louder, quieter, slower, faster) and return the answer for the table to say,
        print and show as it does every answer (the announcer said it itself, so --text never printed it)."""
        steps = {"slower": (-25, 0.0), "faster": (25, 0.0), "louder": (0, 0.2), "quieter": (0, -0.2)}
        if name not in steps:
            return None
        rate, volume = steps[name]
        return self.announcer.change(rate=rate, volume=volume)

    def poll(self) -> list[Any]:
        from .playback import SPEAKER_GONE, SpeakerNotice, SpeechStopped

        events = self.announcer.poll()
        if not self._stopped and not self.announcer.speaking:  # speech failed mid-game: said once
            self._stopped = True
            self._told = len(self.reasons)
            events.append(SpeechStopped(self.reasons[-1] if self.reasons else "speech stopped"))
        # The speaker gone or back, or running dry: for the table to print and show (they went into
        # ``reasons`` alone, so nobody was told that the speaker had gone after a sound-server restart).
        for text in self.reasons[self._told:]:
            events.append(SpeakerNotice(text, lost=text.startswith(SPEAKER_GONE)))
        self._told = len(self.reasons)
        return events

    def close(self) -> None:
        pb = self.announcer.playback
        if pb is not None and hasattr(pb, "close"):
            pb.close()


def for_table(device: int | str | None = None, data_dir: Any = None, voice: Any = None,
              verbosity: Verbosity = Verbosity.NAMES, clock_map: Any = None,
              earcons: bool = True) -> TableSpeaker:
    """The real announcer for ``voicesnap play`` (what cli/play.py looks for).

    Raises UserError (no speaker, no espeak-ng, unknown voice) so the caller
    says why once and goes on in text.
    """
    from .errors import UserError
    from .files import data_dir as _data_dir

    reasons: list[str] = []
    settings = Settings(verbosity=verbosity, earcons=earcons, text=False)
    ann = open_announcer(_data_dir(data_dir), voice, settings, output_device=device, clock_map=clock_map,
                         out=None, notice=reasons.append)
    if not ann.speaking:
        raise UserError(reasons[0] if reasons else "speech could not start")
    ann.settings.text = False  # the table prints its own lines
    return TableSpeaker(ann, reasons)


def rehearse(game: Any, announcer: Announcer, playback: Any, seed: int, pace: float = 1.0,
             max_flips: int = 60, call_rate: float = 0.8, wrong_rate: float = 0.05,
             on_step: Callable[[float], None] | None = None) -> list[Any]:
    """A seeded game with scripted callers, announced on a virtual clock.

    Deterministic for a seed: flips every ``pace`` seconds (later while a
    ruling, or a Speed Snap round, is still being spoken, as the play loop does), a random player
    calls "snap" 0.35-0.6 s after a match (sometimes two within the tie
    window), now and then someone calls wrongly. Returns the game events in
    order. Used by the tests and the benchmark to check the timeline.
    """
    import random

    from .referee import Call, Referee

    rng = random.Random(seed)
    ref = Referee(game)
    log: list[Any] = list(game.events)
    announcer.handle(game.events, game.state)

    def run_to(when: float) -> None:
        playback.advance_to(when)
        announcer.poll()
        if on_step is not None:
            on_step(when)

    from .table import Output

    def settle(now: float) -> float:  # as play's table does: wait for rulings, and a round, to be said
        while announcer.ruling_active or (announcer.round_said or -math.inf) + Output.ROUND_GAP > now:
            now += 0.05
            run_to(now)
        return now

    t = settle(pace)
    for _ in range(max_flips):
        if game.is_over():
            break
        run_to(t)
        evs = ref.flip(t)
        log += evs
        announcer.handle(evs, game.state, turn=True)
        live = [p for i, p in enumerate(game.players) if not game.is_out(i)]
        if any(isinstance(e, Flipped) and e.match for e in evs) and rng.random() < call_rate:
            who = rng.choice(live)
            onset = t + rng.uniform(0.35, 0.6)
            ref.submit(Call(who, "snap", onset))
            if len(live) > 1 and rng.random() < 0.25:
                other = rng.choice([p for p in live if p != who])
                ref.submit(Call(other, "snap", onset + rng.uniform(0.0, 0.08)))
        elif rng.random() < wrong_rate:
            ref.submit(Call(rng.choice(live), "snap", t + rng.uniform(0.3, 0.6)))
        step, nxt = t, t + pace
        while step < nxt - 1e-9:  # the referee rules as time passes (every 50 ms)
            step = min(nxt, step + 0.05)
            run_to(step)
            evs = ref.advance(step)
            if evs:
                log += evs
                announcer.handle(evs, game.state)
        t = settle(nxt)
    evs = ref.close()
    log += evs
    announcer.handle(evs, game.state)
    t = settle(t + 0.05)
    run_to(t + 5.0)
    return log


def made_game_over(made: Sequence[Announcement]) -> bool:
    return any(a.kind in ("game-over", "session-over") for a in made)
