"""The words the game listens for: calls and voice commands.

One place defines them so that the Vosk grammar (spotters), the command layer
(announcer/commands) and the fixture corpus agree. Commands start with a
prefix word so that ordinary table talk ("pause", "help") and calls never
trigger them; calls are single short words so they stay fast.
"""

from __future__ import annotations

from types import MappingProxyType

# Calls, as the referee knows them (kind -> spoken phrase).
SNAP = "snap"
SNAP_POOL = "snap pool"
SLAP = "slap"  # Slapjack crossover
CALLS: tuple[str, ...] = (SNAP, SNAP_POOL, SLAP)

# The word that makes the next words a command, not a call or table talk.
COMMAND_PREFIX = "dealer"

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
