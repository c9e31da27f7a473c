"""Small wording helpers for messages a player reads or hears (a screen reader reads "time(s)" as
"time open bracket s close bracket")."""

from __future__ import annotations

import re
from typing import Iterable

__all__ = ["aloud", "counted", "listed"]


def counted(n: int, noun: str, plural: str | None = None) -> str:
    """``n`` and the noun in the number it needs: "1 time", "2 times", "0 channels"; ``plural`` for a
    noun that does not just add "s" ("1 match", "2 matches")."""
    return f"{n} {noun if n == 1 else (plural or noun + 's')}"


def listed(names: Iterable[str]) -> str:
    """Names as said aloud: "alice", "alice and bob", "alice, bob and cara" ("alice, bob" is read as a
    list cut short)."""
    items = [str(n) for n in names]
    return ", ".join(items[:-1]) + " and " + items[-1] if len(items) > 1 else "".join(items)


_ASIDE = re.compile(r" *\([^()]*\)")


def aloud(text: str) -> str:
    """``text`` as a prompt says it: its bracketed asides left out ("too quiet (-52 dBFS): speak up" ->
    "too quiet: speak up"). Spoken, "open bracket minus fifty-two d b f s" tells a player nothing they can
    act on and comes between the fault and the fix; the printed line keeps the measurement."""
    return _ASIDE.sub("", text)
