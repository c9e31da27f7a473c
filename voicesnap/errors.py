"""Errors a player can act on.

Anything raised as ``UserError`` reaches the terminal as one clear message
(what went wrong and what to do), never as a traceback.
"""

from __future__ import annotations


class UserError(Exception):
    """A problem with the player's input or set-up, with the fix in the message."""

    exit_code = 2
