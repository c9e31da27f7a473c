"""Small wording helpers for messages a player reads or hears (a screen reader reads "time(s)" as
"time open bracket s close bracket")."""

from __future__ import annotations

from typing import Iterable

__all__ = ["counted", "listed"]


def counted(n: int, noun: str, plural: str | None = None) -> str:
    """``n`` and the noun in the number it needs: "1 time", "2 times", "0 channels"; ``plural`` for a
    noun that does not just add "s" ("1 match", "2 matches")."""
    return f"{n} {noun if n == 1 else (plural or noun + 's')}"


def listed(names: Iterable[str]) -> str:
    """Names as said aloud: "alice", "alice and bob", "alice, bob and cara" ("alice, bob" is read as a
    list cut short)."""
    items = [str(n) for n in names]
    return ", ".join(items[:-1]) + " and " + items[-1] if len(items) > 1 else "".join(items)
