"""The table for sighted players, as plain text lines.

A pure function from a small view record to lines, so it is tested without a
terminal and can never disturb the game: the table shell builds a
``TableView`` from the engine's state after every change and prints
``render(view)``. Every line fits the width given (80 columns by default);
names are shortened, never wrapped, so the layout stays readable.
"""

from __future__ import annotations

import unicodedata
from dataclasses import dataclass, field

from .text import counted

__all__ = ["PlayerView", "TableView", "render", "card_text", "cells"]

_SUITS = {"S": "\u2660", "H": "\u2665", "D": "\u2666", "C": "\u2663"}
_SUIT_WORDS = {"spades": "S", "hearts": "H", "diamonds": "D", "clubs": "C"}
_RANK_WORDS = {
    "ace": "A", "jack": "J", "queen": "Q", "king": "K", "ten": "10", "two": "2", "three": "3",
    "four": "4", "five": "5", "six": "6", "seven": "7", "eight": "8", "nine": "9",
}


@dataclass(frozen=True)
class PlayerView:
    """One seat: how many cards face down, the face-up pile and its top card."""

    name: str
    face_down: int
    face_up: int
    top: str | None = None  # the showing card, e.g. "8H" or "Q\u2660"; None when the pile is empty
    active: bool = False  # whose turn it is to flip
    out: bool = False  # eliminated
    wins: int = 0  # games won in this session


@dataclass(frozen=True)
class TableView:
    """Everything the screen shows; built by the table shell from the game state."""

    players: tuple[PlayerView, ...]
    pool: int = 0
    pool_top: str | None = None
    rulings: tuple[str, ...] = ()  # newest last
    title: str = "voicesnap"  # variant, game number, session
    clock: float = 0.0  # seconds on the audio clock
    notice: str = ""  # paused, device lost, overflow: shown prominently
    matches: tuple[str, ...] = field(default_factory=tuple)  # names whose piles match now
    keys: tuple[str, ...] = ()  # the keys, under the table (the redrawn screen wiped their first listing)
    answer: str = ""  # the last answer to a command (status, score, help, repeat): until the next, or a notice


def card_text(card: object, ascii_only: bool = False) -> str:
    """A card in three columns or fewer: ``10♥``, ``Q♠`` (``10H``, ``QS`` in ASCII).

    Accepts "QS"/"10H" strings, "queen of spades", or any object with ``rank``
    and ``suit`` attributes, so the display does not depend on the engine's
    card class beyond those two names.
    """
    if card is None:
        return "--"
    rank: str
    suit: str
    if isinstance(card, str):
        text = card.strip()
        words = text.lower().split()
        if len(words) == 3 and words[1] == "of":
            rank = _RANK_WORDS.get(words[0], words[0][:2].upper())
            suit = _SUIT_WORDS.get(words[2], words[2][:1].upper())
        elif len(text) >= 2 and text[-1].upper() in "SHDC" + "".join(_SUITS.values()):
            rank, suit = text[:-1].upper(), text[-1].upper()
        else:
            return text[:6]  # picture decks: a short name
    else:
        rank = _short_rank(getattr(card, "rank", "?"))
        suit = _short_suit(getattr(card, "suit", ""))
    if ascii_only:
        suit = next((k for k, v in _SUITS.items() if v == suit), suit)
    else:
        suit = _SUITS.get(suit, suit)
    return f"{rank}{suit}"


def _short_rank(rank: object) -> str:
    value = getattr(rank, "value", rank)
    if isinstance(value, int):
        return {1: "A", 11: "J", 12: "Q", 13: "K", 14: "A"}.get(value, str(value))
    text = str(getattr(rank, "name", value)).lower()
    return _RANK_WORDS.get(text, str(value).upper()[:2])


def _short_suit(suit: object) -> str:
    value = getattr(suit, "value", suit)
    text = str(getattr(suit, "name", value)).lower()
    if text in _SUIT_WORDS:
        return _SUIT_WORDS[text]
    return str(value).upper()[:1]


def cells(text: str) -> int:
    """Terminal columns ``text`` takes: a wide letter ("李") two, a combining accent none, others one.
    Python pads and cuts by code points, which put a column out of line after such a name."""
    return sum(0 if unicodedata.combining(c) else 2 if unicodedata.east_asian_width(c) in "WF" else 1
               for c in text)


def _clip(text: str, limit: int, mark: str) -> str:
    """``text`` cut to at most ``limit`` columns, ``mark`` showing where."""
    if cells(text) <= limit:
        return text
    kept, used = [], cells(mark)
    for c in text:
        used += cells(c)
        if used > limit:
            break
        kept.append(c)
    return "".join(kept) + mark


def _pad(text: str, columns: int) -> str:
    return text + " " * max(0, columns - cells(text))


def render(view: TableView, width: int = 80, ascii_only: bool = False) -> list[str]:
    """The table as lines no longer than ``width``: header, one row per seat, pool, rulings."""
    width = max(40, width)
    ell = "..." if ascii_only else "\u2026"

    def fit(text: str) -> str:
        return _clip(text, width, ell)

    lines = [fit(f"{view.title}  [{view.clock:7.1f} s]")]
    if view.notice:  # wrapped, not cut: a lost mic's notice ends with the way out ("plug it back in ...")
        import textwrap

        lines += [fit(("!! " if i == 0 else "   ") + part)
                  for i, part in enumerate(textwrap.wrap(view.notice, width - 3, break_on_hyphens=False))]
    name_w = min(14, max([4, *(cells(p.name) for p in view.players)]))
    header = f"   {'player':<{name_w}}  {'down':>4}  {'up':>3}  {'shows':<5}  wins"
    lines.append(fit(header))
    for p in view.players:
        mark = ">" if p.active and not p.out else " "
        name = _pad(_clip(p.name, name_w, "~" if ascii_only else "\u2026"), name_w)
        if p.out:
            row = f" {mark} {name}  {'out':>4}"
        else:
            shows = card_text(p.top, ascii_only) if p.top is not None else "--"
            match = "  = match" if p.name in view.matches else ""
            row = f" {mark} {name}  {p.face_down:>4}  {p.face_up:>3}  {shows:<5}  {p.wins:>4}{match}"
        lines.append(fit(row))
    pool_top = card_text(view.pool_top, ascii_only) if view.pool_top is not None else "--"
    lines.append(fit(f"   pool: {counted(view.pool, 'card')}, top {pool_top}"))
    for ruling in view.rulings[-4:]:
        lines.append(fit(f"   - {ruling}"))
    if view.answer:  # wrapped, not cut: a status or help answer is longer than a line, and all of it matters
        import textwrap

        wrapped = textwrap.wrap(view.answer, width - 5, break_on_hyphens=False)
        lines += [fit(("   > " if i == 0 else "     ") + part) for i, part in enumerate(wrapped)]
    if view.keys:
        lines.append("")
        lines += [fit(f"  {k}") for k in view.keys]
    return lines
