"""The table's own records in a played session's log, beside the engine's events.

Their own module, not part of the live table (voicesnap.table): resume,
replay and ``gamelog.read`` need to know these records without loading the
shell that plays a game (threads, audio, the terminal). Each is a small
frozen event that round-trips to plain data (voicesnap.events).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .events import event

__all__ = ["TableStart", "TableStep", "TableNote", "TableSession", "TableResumed", "TableEnd"]


@event("table-start")
@dataclass(frozen=True)
class TableStart:
    """Opens a game's log: enough to rebuild the same referee from scratch."""

    players: tuple[str, ...]
    seed: int
    variant: str = "classic"
    game: int = 1  # game number within the session
    dealer: int = 0  # seat of the dealer
    pace: float = 2.0
    offset: float = 0.0  # referee time = audio clock + offset (resumed games)
    options: dict[str, Any] = field(default_factory=dict)


@event("table-step")
@dataclass(frozen=True)
class TableStep:
    """One thing the loop fed the referee: a call, a flip, or time passing.

    ``kind`` is "call" (player/word/onset), "flip" (at ``now``) or "advance".
    Replaying these in order into a fresh referee gives the same events.
    """

    kind: str
    now: float
    player: str | None = None
    word: str | None = None
    onset: float | None = None
    engine: str = ""
    heard: float | None = None  # how far the table had heard when this happened (latency)
    by: str = ""  # an advance: "rivals" (every possible rival was in) or "lag" (the worst-case lag)


@event("table-note")
@dataclass(frozen=True)
class TableNote:
    """Something the players were told that is not a game event (pause, device lost)."""

    now: float
    text: str


@event("table-session")
@dataclass(frozen=True)
class TableSession:
    """Opens a session's log: everything needed to deal the same games again."""

    players: tuple[str, ...]
    seed: int
    variant: str = "classic"
    format: str = "best-of-1"
    pace: float = 2.0  # seconds between flips; 0 = only on the flip command
    decision_window: float = 0.5
    tie_window: float = 0.1
    pool_claim: str = "anyone"
    flipper_may_call: bool = True
    config: dict[str, Any] = field(default_factory=dict)  # variant settings (animals, deck)
    engine: str = "keyboard"
    audio: str = ""  # the recording's file name, relative to the log
    lag: float = 0.0  # recognition allowance: the referee runs this far behind what was heard
    pool_lag: float = 0.0  # the same while a Snap pool exists (the spotter waits for "pool")
    channels: dict[str, int] = field(default_factory=dict)  # player -> input channel (own microphones)
    verbosity: str = "names"  # the announcer's: ranks, names or all (same words spoken and printed)
    # The speech gate was in front of the recogniser (replay rebuilds the same spotters: gating
    # moves Vosk's chunk boundaries, which can move a call). False in logs from before the gate.
    gate: bool = False
    # Each enrolled player's profile as the game heard them (its "created" stamp): replay reads today's
    # profiles, and says so when one was enrolled again since. {} in logs from before it was kept.
    voices: dict[str, str] = field(default_factory=dict)


@event("table-resumed")
@dataclass(frozen=True)
class TableResumed:
    """A crashed session continues: referee time = new audio clock + ``offset``."""

    offset: float
    audio: str = ""


# A stop's reason (TableEnd.reason, table.Stop), and the start of its notice, when the thread that hears
# the audio died of an error.
LISTENING_FAILED = "listening stopped"


@event("table-end")
@dataclass(frozen=True)
class TableEnd:
    """A game stopped: by its rules ("over"), the end command, Ctrl-C, the audio ending, or the thread
    that hears it failing (LISTENING_FAILED)."""

    game: int
    reason: str
    now: float
