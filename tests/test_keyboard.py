"""Keyboard play: a key per player and call, command keys, and real terminal-less reading."""

from __future__ import annotations

import os

import pytest

from voicesnap.errors import UserError
from voicesnap.keyboard import Keymap, KeyCall, KeyCommand, RawKeyboard, pump_keys


def test_each_seat_has_its_own_column_of_keys() -> None:
    km = Keymap(["Alice", "Bob", "Cara"])
    assert km.lookup("q") == KeyCall("Alice", "snap")
    assert km.lookup("S") == KeyCall("Bob", "snap pool")  # Caps Lock still works
    assert km.lookup("c") == KeyCall("Cara", "slap")
    assert km.lookup("r") is None  # seat 4 is empty
    assert km.lookup(" ") == KeyCommand("flip")


def test_a_key_becomes_the_same_record_a_spotter_emits() -> None:
    km = Keymap(["Alice", "Bob"])
    det = km.detection("w", 12.5)
    assert det is not None and (det.word, det.player, det.onset, det.engine) == ("snap", "Bob", 12.5, "keyboard")
    cmd = km.detection("\x1b", 3.0)
    assert cmd is not None and cmd.word == "dealer end game" and cmd.player is None


def test_too_many_players_or_clashing_keys_are_refused() -> None:
    with pytest.raises(UserError, match="at most 6"):
        Keymap([f"p{i}" for i in range(7)])
    with pytest.raises(ValueError, match="both"):
        Keymap(["Alice"], {"q": "pause"})
    with pytest.raises(ValueError, match="unknown"):
        Keymap(["Alice"], {"1": "dance"})


def test_help_fits_80_columns() -> None:
    lines = Keymap([f"Player{i}" for i in range(6)]).help_lines()
    assert all(len(l) <= 80 for l in lines) and len(lines) >= 7


def test_keys_from_a_pipe_are_stamped_with_the_clock() -> None:
    read_fd, write_fd = os.pipe()
    os.write(write_fd, b"qx?\n")
    os.close(write_fd)
    got = []
    ticks = iter([1.0, 2.0, 3.0])
    with os.fdopen(read_fd) as stream, RawKeyboard(stream) as kb:
        pump_keys(kb, Keymap(["Alice", "Bob"]), lambda: next(ticks), got.append, lambda: False)
    assert [(d.word, d.player, d.onset) for d in got] == [
        ("snap", "Alice", 1.0), ("slap", "Bob", 2.0), ("dealer help", None, 3.0)]
