"""The words the game listens for: calls and voice commands.

One place defines them so that the Vosk grammar (spotters), the command layer
(announcer/commands) and the fixture corpus agree. Commands start with a
prefix word so that ordinary table talk ("pause", "help") and calls never
trigger them; calls are single short words so they stay fast.
"""

from __future__ import annotations

import re
from types import MappingProxyType

# Calls, as the referee knows them (kind -> spoken phrase).
SNAP = "snap"
SNAP_POOL = "snap pool"
SLAP = "slap"  # Slapjack crossover
CALLS: tuple[str, ...] = (SNAP, SNAP_POOL, SLAP)

# The word that makes the next words a command, not a call or table talk.
COMMAND_PREFIX = "dealer"


def spoken_word(text: str) -> str:
    """A call word as the game compares it: lower case, punctuation dropped, one space between words
    ("Moo!" and "moo" are one noise; two players given them could not be told apart)."""
    return " ".join(re.sub(r"[^\w']+", " ", text.lower()).split())


def game_word(word: str) -> str | None:
    """Why ``word`` (spoken_word) cannot be a player's own call, or None: it is already one of the game's
    own calls, or a voice command (heard as a command, never as the call)."""
    if word in (*CALLS, "pool", "slam"):
        return f"'{word}' is one of the game's own calls"
    if word.split()[:1] == [COMMAND_PREFIX]:
        return f"'{word}' starts like a voice command ('{COMMAND_PREFIX} ...')"
    return None

# Command name -> spoken words after the prefix.
COMMANDS = MappingProxyType(
    {
        "pause": "pause",
        "resume": "resume",
        "repeat": "repeat",
        "status": "status",
        "score": "score",
        "slower": "slower",
        "faster": "faster",
        "louder": "louder",
        "quieter": "quieter",
        "help": "help",
        "end": "end game",
        "flip": "flip",
    }
)


def command_phrases() -> dict[str, str]:
    """Command name -> the full phrase a player says, prefix included."""
    return {name: f"{COMMAND_PREFIX} {words}" for name, words in COMMANDS.items()}


def grammar_words() -> list[str]:
    """Every single word the recogniser must know (Vosk grammar entries)."""
    words: list[str] = []
    for phrase in (*CALLS, COMMAND_PREFIX, *COMMANDS.values()):
        for word in phrase.split():
            if word not in words:
                words.append(word)
    return words
