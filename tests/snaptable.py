"""Test helpers for the rules tests: arranged tables and scripted play.

``rig`` deals a real game and then rearranges the real deck's cards so a test
can say which cards lie where; every card of the deck is still on the table,
so conservation checks stay meaningful.
"""

from __future__ import annotations

from collections import deque
from typing import Any, Sequence

from voicesnap.cards import Card
from voicesnap.rules import Game, Options
from voicesnap.referee import Call, Referee

NAMES = ("Ann", "Ben", "Cat", "Dan", "Eve", "Fay")


def card(code: str | Card) -> Card:
    """ "7H" is a standard card, "@cow" the picture card "cow" (spoken "Cow")."""
    if isinstance(code, Card):
        return code
    if code.startswith("@"):
        return Card(picture=code[1:], name=code[1:].capitalize())
    return Card.from_data(code)


def cards(codes: Sequence[str | Card] | str) -> list[Card]:
    if isinstance(codes, str):
        codes = codes.split()
    return [card(c) for c in codes]


def rig(
    stacks: Sequence[Sequence[str] | str],
    cls: type[Game] = Game,
    options: Options | None = None,
    pool: Sequence[str] | str = (),
    rest_to: int | None = None,
    dealer: int | None = None,
    **kw: Any,
) -> Game:
    """A game whose face-down stacks start with the given cards (top first).

    The deck's other cards go under the stacks round-robin, or all under
    ``rest_to``'s stack. ``dealer`` defaults to the last seat so seat 0 flips first.
    """
    n = len(stacks)
    game = cls(NAMES[:n], seed=0, options=options, dealer=n - 1 if dealer is None else dealer, **kw)
    everything = [c for d in game.down for c in d]
    wanted = [cards(s) for s in stacks]
    in_pool = cards(pool)
    rest = list(everything)
    for c in [c for s in wanted for c in s] + in_pool:
        rest.remove(c)  # ValueError if a card is asked for twice
    down = [deque(s) for s in wanted]
    for i, c in enumerate(rest):
        down[rest_to if rest_to is not None else i % n].append(c)
    game.down = down
    game.pool = in_pool
    game.check()
    return game


def play(game: Game, *script: Any, window: float = 0.5) -> list[Any]:
    """Run a script through a real Referee: a float flips at that time, a Call is
    submitted, ("advance", now) rules; everything left is ruled at the end."""
    ref = Referee(game, window)
    out: list[Any] = []
    for step in script:
        if isinstance(step, (int, float)):
            out.extend(ref.flip(float(step)))
        elif isinstance(step, Call):
            ref.submit(step)
        else:
            out.extend(ref.advance(step[1]))
        game.check()
    out.extend(ref.close())
    game.check()
    return out


def snap(player: str, onset: float, kind: str = "snap") -> Call:
    return Call(player, kind, onset)


def kinds(events: Sequence[Any]) -> list[str]:
    return [type(e).__name__ for e in events]
