"""The ``voicesnap`` command line.

Each subcommand lives in its own module here (``voicesnap.cli.<name>``) with
``configure(parser)`` and ``run(args) -> int``; a module is imported only when
its command runs, so a missing audio library never breaks ``simulate``.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import os
import sys
from typing import NoReturn, Sequence

from .. import __version__
from ..errors import UserError

# command -> (module, one-line help). Order is the order shown in --help.
COMMANDS: dict[str, tuple[str, str]] = {
    "play": ("play", "play a hands-free game around the table"),
    "simulate": ("simulate", "play many games with bots and print statistics"),
    "listen": ("listen", "show what the game hears (calls, commands, players)"),
    "enroll": ("enroll", "enroll a player's voice"),
    "players": ("players", "list, rename, forget or identify players (to re-enroll one: voicesnap enroll NAME again)"),
    "models": ("models", "find, download or install speech models"),
    "replay": ("replay", "re-judge a recorded game from its audio"),
    "devices": ("devices", "list audio inputs and outputs"),
    "doctor": ("doctor", "check the set-up and print the fix for each problem"),
}


def _available() -> dict[str, tuple[str, str]]:
    found = {}
    for name, (module, text) in COMMANDS.items():
        if importlib.util.find_spec(f"{__name__}.{module}") is not None:
            found[name] = (module, text)
    return found


class _Parser(argparse.ArgumentParser):
    """argparse's parser, whose mistakes are one line: what was wrong and where the options are listed.
    argparse printed the whole usage first (15 lines of "[--listen-lag LISTEN_LAG]" for play), which a
    screen reader reads out, bracket by bracket, before it comes to the mistake."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: {message}; {self.prog} --help lists the options\n")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="voicesnap",
        description="Snap, the card game, played hands-free by voice.",
    )
    parser.add_argument("--version", action="version", version=f"voicesnap {__version__}")
    parser.add_argument(
        "--data-dir",
        help="where profiles, models and caches live (default: $VOICESNAP_DATA_DIR, "
        "else the user data folder)",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name, (module, text) in _available().items():
        mod = importlib.import_module(f"{__name__}.{module}")
        cmd = sub.add_parser(name, help=text, description=(mod.__doc__ or text).strip())
        mod.configure(cmd)
        cmd.set_defaults(_run=mod.run, _extra=getattr(mod, "take_extra", None))
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """The command line; Ctrl-C while it starts up (loading numpy and every command's module, about half a
    second) stops it with one line, as Ctrl-C in a command does (it printed a traceback)."""
    try:
        return _main(argv)
    except KeyboardInterrupt:
        print("voicesnap: stopped.", file=sys.stderr)
        return 130


def _main(argv: Sequence[str] | None) -> int:
    # One BLAS thread (unless the user chose otherwise): the game does many small
    # products on a live stream, where OpenBLAS's worker threads only spin, and
    # measured 7-15x the CPU on a busy 2-core machine. Set before numpy loads.
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    if argv is None:  # the command itself, not a caller in the same process (tests read ALSA's words)
        try:
            from ..audio import quiet_alsa
        except ImportError:  # (numpy or soundfile missing: the command says so when it needs them)
            pass
        else:
            quiet_alsa()
    parser = build_parser()
    # argparse matches all of a command's positionals at their first one, so a positional
    # after an option ("models install --kind encoder FILE") is left over; a command may
    # take such leftovers (take_extra returns False for ones it refuses).
    args, extra = parser.parse_known_args(argv)
    if extra and not (getattr(args, "_extra", None) and args._extra(args, extra)):
        parser.error(f"unrecognized arguments: {' '.join(extra)}")
    if not getattr(args, "_run", None):
        parser.print_help()
        return 2
    # The option is the environment variable for this run: every lookup that has no
    # option of its own (the speaker encoder found while enrolling or attributing,
    # models, caches) then uses the folder the player chose, as those that do.
    # Put back afterwards, for callers in the same process (tests).
    before = os.environ.get("VOICESNAP_DATA_DIR")
    if args.data_dir:
        os.environ["VOICESNAP_DATA_DIR"] = args.data_dir
    try:
        return int(args._run(args) or 0)
    except UserError as exc:
        print(f"voicesnap {args.command}: {exc}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        print(f"voicesnap {args.command}: stopped.", file=sys.stderr)
        return 130
    except BrokenPipeError:  # output piped into `head` and the like: not an error of the game
        try:
            sys.stdout = open(os.devnull, "w")  # no second error while Python flushes at exit
        except OSError:
            pass
        return 0
    except OSError as exc:  # a folder that cannot be written, a path that is a file, a full disk
        if exc.filename is None:
            raise
        from ..files import os_error_message

        print(f"voicesnap {args.command}: {os_error_message(exc)}", file=sys.stderr)
        return 2
    finally:
        if before is None:
            os.environ.pop("VOICESNAP_DATA_DIR", None)
        else:
            os.environ["VOICESNAP_DATA_DIR"] = before


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
