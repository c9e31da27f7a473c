"""voicesnap: Snap, the card game, played hands-free by voice.

The rules engine and referee (cards, rules, variants, referee, session) are
pure and deterministic; audio, speech, files and the terminal live at the
edges (audio, spotters, voices, announcer, cli).
"""

__version__ = "0.1.0"
