"""The referee: time-stamped calls in, rulings out, the same every time.

Speech recognition is slow and threads are unordered, so a call reaches the
referee late (``submit``) and possibly after a later call or even after the
next flip. The design:

* **Judged at the onset.** After every flip the referee keeps the game's
  ``View`` (tops and pile counters, a few tuples). A call is judged against the
  view in force at its onset, with every ruling on an earlier call already
  applied: a second caller after the piles were taken is *ignored*, not wrong;
  a call made before the next flip still wins even if that flip happened
  before the ruling (it takes the piles as they were at the call).
* **A decision window.** A call is ruled once ``now >= onset +
  decision_window`` (``advance(now)``), in onset order (ties of onset broken by
  player name, then kind). Any valid rival call of the same kind on the same
  match with an onset within ``options.tie_window`` of the first is a tie.
  So the window must cover the tie window plus the recogniser's latency;
  the default 0.5 s is generous for Vosk's streaming results.
* **Late calls.** A call submitted after its own window had closed (``onset +
  decision_window <=`` the latest ``now`` passed to ``advance``) cannot be ruled
  in order any more and is ignored with the reason "late". Hence rulings
  depend only on the calls and the ``advance`` times, never on the order in
  which calls arrived between two ``advance`` calls.
* **Flips are immediate.** ``flip(t)`` changes the table at once (the card is
  announced the moment it is turned); a flip may not be older than a ruling
  already made.
"""

from __future__ import annotations

import bisect
import math
from dataclasses import dataclass
from typing import Any

from .events import event
from .rules import NOT_A_CALL, POOL, SLAM, WRONG, CallError, Game, RulesError, View

__all__ = ["Call", "Referee", "DEFAULT_DECISION_WINDOW", "make_call"]

DEFAULT_DECISION_WINDOW = 0.5


@event("call")
@dataclass(frozen=True, slots=True)
class Call:
    """A call as heard: who, which word ("snap", "snap pool", "slap", "slam", an
    animal noise), and its onset in seconds on the audio clock."""

    player: str
    kind: str
    onset: float


def _call_factory() -> Any:
    """A Call maker for bots and spotters in hot loops: sets the slots directly
    (as rules' Flipped maker does); the result is an ordinary Call."""
    new = object.__new__
    a, b, c = (getattr(Call, n).__set__ for n in Call.__slots__)

    def make(player: str, kind: str, onset: float) -> Call:
        call = new(Call)
        a(call, player)
        b(call, kind)
        c(call, onset)
        return call

    return make


make_call = _call_factory()


class Referee:
    """Rules on calls for one game; see the module docstring for the timing design."""

    def __init__(self, game: Game, decision_window: float = DEFAULT_DECISION_WINDOW) -> None:
        if decision_window < game.options.tie_window:
            raise RulesError(
                f"decision window {decision_window} s is shorter than the tie window "
                f"{game.options.tie_window} s; rivals inside the tie window could not be heard"
            )
        self.game = game
        self.window = decision_window
        self.horizon = float("-inf")  # latest ``now`` given to advance()
        self.last_ruled = float("-inf")  # onset of the latest ruling
        self._times: list[float] = [float("-inf")]
        self._views: list[View] = [game.view()]
        self._pending: list[tuple[float, str, str, Call]] = []
        self._memo: tuple[Any, tuple[str, tuple[int, ...]]] = (None, ("", ()))

    # ------------------------------------------------------------------ inputs

    def flip(self, t: float) -> list[Any]:
        """Flip now (the game's active player, or everyone in Speed Snap)."""
        if t < self.last_ruled:
            raise RulesError(
                f"flip at {t:.3f} s comes before a ruling already made at {self.last_ruled:.3f} s; "
                "flip before advancing past it"
            )
        if not t >= self._times[-1]:  # (written so that a NaN time is refused too)
            raise RulesError(f"flip at {t:.3f} s is earlier than the previous flip at {self._times[-1]:.3f} s"
                             if t == t else "a flip needs a time in seconds on the audio clock, not NaN")
        events = self.game.flip(t)
        self._times.append(t)
        self._views.append(self.game.view())
        if len(self._times) > 16:
            self._prune()
        return events

    def submit(self, call: Call) -> list[Any]:
        """Queue a call; it is ruled by ``advance`` once its decision window has closed.

        Returns what is decided at once: nothing, or the "late" ignore for a call
        whose window has already closed. Raises CallError for a stranger, for a
        player already out at the call's onset, and for a call without a real onset.
        """
        game = self.game
        onset, player, kind = call.onset, call.player, call.kind
        if not isinstance(kind, str) or not (type(onset) is float or isinstance(onset, (int, float))) or not (
            -math.inf < onset < math.inf
        ):
            raise CallError(f"a call needs a word and a finite onset in seconds, not {call!r}")
        seat = game._seat(player)  # CallError for strangers
        out_at = game.out_at[seat]
        if out_at is not None and out_at <= onset:
            raise CallError(f"{player} is out of this game and can no longer call")
        if onset + self.window <= self.horizon:  # its window closed at an earlier advance
            return game.ignored(onset, player, kind, "late")
        pending = self._pending
        key = (onset, player, kind)
        i = bisect.bisect_left(pending, key)
        if i < len(pending) and pending[i][:3] == key:
            return []  # the same call twice (e.g. from two engines): once is enough
        pending.insert(i, (onset, player, kind, call))
        return []

    def advance(self, now: float) -> list[Any]:
        """Rule on every call whose decision window has closed by ``now``."""
        if now > self.horizon:
            self.horizon = now
        out: list[Any] = []
        pending = self._pending
        window = self.window
        while pending and pending[0][0] + window <= now:
            call = pending.pop(0)[3]
            out.extend(self._rule(call))
        return out

    def close(self) -> list[Any]:
        """Rule on everything still pending (end of game or of the audio)."""
        return self.advance(float("inf"))

    @property
    def pending(self) -> list[Call]:
        return [entry[3] for entry in self._pending]

    @property
    def next_deadline(self) -> float | None:
        """When the earliest pending call can be ruled (call ``advance`` then)."""
        return self._pending[0][0] + self.window if self._pending else None

    # ------------------------------------------------------------------ ruling

    def _view_at(self, onset: float) -> View:
        i = bisect.bisect_right(self._times, onset) - 1
        return self._views[max(i, 0)]

    def _prune(self) -> None:
        keep_from = self.horizon - self.window
        if self._pending:
            keep_from = min(keep_from, self._pending[0][0])
        i = bisect.bisect_right(self._times, keep_from) - 1
        if i > 0:
            del self._times[:i]
            del self._views[:i]

    def _rule(self, call: Call) -> list[Any]:
        game = self.game
        onset, player = call.onset, call.player
        self.last_ruled = max(self.last_ruled, onset)
        if game.over:
            return game.ignored(onset, player, call.kind, "game over")
        seat = game.seat_of[player]
        if game.out[seat]:
            return game.ignored(onset, player, call.kind, "out of the game")
        kind = game.call_kind(seat, call.kind)
        if kind is None:
            return game.ignored(onset, player, call.kind, f"{NOT_A_CALL}{game.variant}")
        view = self._view_at(onset)
        if kind == WRONG:
            return game.wrong_call(onset, player, call.kind, view)
        if not game.options.flipper_may_call and seat in view.flippers and len(view.flippers) == 1:
            return game.ignored(onset, player, call.kind, "the flipper may not call")
        if kind == POOL or kind == SLAM:  # may depend on who calls (pool_claim="flipper")
            status, piles = game.judge(kind, seat, view)
        else:  # the rivals after a won snap all get the same answer: judge once
            key = (view.flip, kind, game.version)
            if self._memo[0] != key:
                self._memo = (key, game.judge(kind, seat, view))
            status, piles = self._memo[1]
        if status == "wrong":
            return game.wrong_call(onset, player, call.kind, view)
        if status == "taken":
            return game.ignored(onset, player, call.kind, "already taken")
        if status != "valid":
            return game.ignored(onset, player, call.kind, status)
        rivals = self._rivals(call, kind, piles, view)
        if rivals:
            out = game.tie(onset, (player, *rivals), kind, piles, view)
        elif piles:
            out = game.snap_won(onset, player, kind, piles, view)
        else:
            return game.pool_won(onset, player, view)
        # The cheap path for the rivals still queued on this flip (most rulings with
        # many players): the ruling took every matched pile showing at this view, so
        # until the table changes again any call of this kind at this view is
        # "already taken" (judge would say so, at a cost).
        if kind != SLAM and kind != POOL:  # (those two are never memoised)
            self._memo = ((view.flip, kind, game.version), ("taken", ()))
        return out

    def _rivals(self, call: Call, kind: str, piles: tuple[int, ...], view: View) -> list[str]:
        """Valid calls on the same claim within the tie window; they are used up by the tie."""
        game = self.game
        limit = call.onset + game.options.tie_window
        rivals: list[str] = []
        keep: list[tuple[float, str, str, Call]] = []
        for entry in self._pending:
            other = entry[3]
            if other.onset > limit:
                keep.append(entry)
                continue
            oseat = game.seat_of[other.player]
            if other.player == call.player or game.out[oseat] or other.player in rivals:
                keep.append(entry)
                continue
            okind = game.call_kind(oseat, other.kind)
            if okind is None or okind == WRONG:
                keep.append(entry)
                continue
            oview = self._view_at(other.onset)
            if not game.options.flipper_may_call and oseat in oview.flippers and len(oview.flippers) == 1:
                keep.append(entry)
                continue
            if oview is view and okind == kind and kind != POOL:
                status, opiles = "valid", piles  # same flip, same claim, nothing ruled since
            else:
                status, opiles = game.judge(okind, oseat, oview)
            if status == "valid" and opiles == piles:
                rivals.append(other.player)
            else:
                keep.append(entry)
        if rivals:
            self._pending[:] = keep
        return rivals
