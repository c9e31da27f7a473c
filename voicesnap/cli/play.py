"""Play Snap around the table: deal, flip, announce, listen for calls and rule, hands-free.

Calls come from the microphone (the Vosk spotter and/or the players' enrolled
voices) and from the keyboard (each seat has its keys; see the help printed at
the start). Every game's events are logged as they happen in the session
folder; --resume continues the last session after a crash.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import secrets
import shlex
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

from ..errors import UserError
from ..files import data_dir
from ..tablelog import LISTENING_FAILED
from ..text import counted, listed
from .devices import route

if TYPE_CHECKING:
    from ..table import SessionResult, TableSession

DEFAULT_PACE = 2.0


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--players", help="comma-separated names in seat order, e.g. Alice,Bob,Cara (2-6)")
    # (the session's options default to None: --resume keeps the session's own, and refuses others)
    parser.add_argument("--variant", default=None, help="classic, picture, speed, double, single-pile, "
                        "slapjack, silent or animal (default classic)")
    parser.add_argument("--deck", default=None, help="Picture Snap's deck: farm (default) or fruit")
    parser.add_argument("--animals", default=None, metavar="NAME=NOISE,...",
                        help="Animal Snap's noises, e.g. Alice=woof,Bob=moo (default: the word each player "
                        "enrolled, where it is not 'snap', else moo, woof, meow, baa, oink, quack in seat order)")
    parser.add_argument("--session", default=None, help="single, best-of-3, best-of-5 or first-to-N (default single)")
    parser.add_argument("--pace", type=float, default=None,
                        help=f"seconds between flips (default {DEFAULT_PACE}; on --resume, the session's); "
                        "0 = flip only on the flip command; the next card also waits while a ruling is "
                        "said, and in Speed Snap until the last round's cards have been said")
    parser.add_argument("--engine", choices=("auto", "vosk", "enrolled", "keyword", "combined", "none"),
                        default="auto",
                        help="how calls are heard: vosk (needs a model), enrolled (players' own voices), "
                        "keyword (the keyword model hears the call, the players' voices say who), combined "
                        "(Vosk and the keyword model hear it, the voices say who), or none (keyboard only); "
                        "default: the best available")
    parser.add_argument("--no-keyword", action="store_true",
                        help="do not use the keyword model (voicesnap models download keyword) even when it "
                        "is installed")
    parser.add_argument("--input", help="input device (number or name; see voicesnap devices)")
    parser.add_argument("--output", help="output device for the announcer")
    parser.add_argument("--channels", help="one microphone per player: Alice=0,Bob=1 (input channel numbers, "
                        "counted from 0; voicesnap devices lists each input's channels)")
    parser.add_argument("--strict-calls", action="store_true",
                        help="with --channels: a call counts only if the player's enrollment also hears their call "
                             "in it (far fewer false calls from table talk, more calls missed in loud noise)")
    parser.add_argument("--text", action="store_true",
                        help="print every announcement as one plain line (for screen readers) "
                        "instead of the table display (always so when output is not a terminal)")
    parser.add_argument("--quiet", action="store_true", help="do not speak (text only)")
    parser.add_argument("--verbosity", choices=("ranks", "names", "all"), default=None,
                        help="ranks: flips as the rank only; names: with player and suit (default; on --resume, "
                        "the session's); all: also refreshes and ignored calls")
    parser.add_argument("--voice", default=None, help="announcer voice (an espeak-ng voice name, e.g. gmw/en-us; "
                        "default gmw/en)")
    parser.add_argument("--rate", type=int, default=None, help="announcer speech rate, words per minute (200)")
    parser.add_argument("--volume", type=float, default=None, help="announcer volume, 1.0 is normal (0.1-2.0)")
    parser.add_argument("--no-earcons", action="store_true", help="no tones for snap won, pool, wrong call, ...")
    parser.add_argument("--record", metavar="DIR", help="keep the session's audio and event log in DIR")
    parser.add_argument("--resume", action="store_true", help="continue the last session (or --record DIR) "
                        "from its last ruling")
    parser.add_argument("--seed", type=int, help="deal from this seed (default: random)")
    parser.add_argument("--input-file", metavar="WAV", help="listen to a recorded WAV instead of the "
                        "microphone, as fast as possible (tests, benchmarks)")
    parser.add_argument("--model", help="Vosk model folder (default: $VOICESNAP_VOSK_MODEL or the data dir)")
    parser.add_argument("--tie-window", type=float, default=None, help="seconds between onsets that tie (0.1)")
    parser.add_argument("--decision-window", type=float, default=None,
                        help="seconds after a call's onset before it is ruled (0.5): time for rivals to be heard")
    parser.add_argument("--listen-lag", type=float, default=None,
                        help="the most seconds the referee stays behind the audio heard, so that a rival call still "
                        "being recognised is in time (default with voice calls: 0.5, 1.4 while a Snap-pool claim is open, "
                        "less with a longer --decision-window; 0 keyboard only); it rules sooner whenever nobody else "
                        "was speaking")
    parser.add_argument("--no-gate", action="store_true",
                        help="run the speech recogniser on every frame, not only around speech (more CPU; "
                        "by default a cheap energy gate per microphone wakes it)")
    parser.add_argument("--no-keyboard", action="store_true", help="ignore the keyboard")
    parser.add_argument("--no-echo-cancel", action="store_true",
                        help="do not subtract the announcer's own voice from the microphone (on by default "
                        "whenever the announcer speaks through a speaker while calls are heard by voice)")


def parse_players(text: str | None) -> tuple[str, ...]:
    if not text:
        raise UserError("say who is playing: --players Alice,Bob (2 to 6 names, in seat order)")
    from ..voices import check_name

    names = tuple(n.strip() for n in text.split(","))
    if not all(names):  # "Alice,,Bob": a name lost in typing, not a seat to drop unsaid
        raise UserError(f"--players {text!r} has an empty name between commas; give each seat a name, "
                        "e.g. --players Alice,Bob")
    try:
        names = tuple(check_name(n) for n in names)  # a seat's name is the name its player enrolls under
    except UserError as exc:
        raise UserError(f"--players: {exc}") from None
    if not 2 <= len(names) <= 6:
        raise UserError(f"Snap needs 2 to 6 players, --players gives {len(names)}")
    folded = [n.casefold() for n in names]
    if len(set(folded)) != len(folded):
        raise UserError("every player needs a different name in --players")
    return names


def parse_channels(text: str | None, players: tuple[str, ...]) -> dict[str, int]:
    """--channels Alice=0,Bob=1 -> {"Alice": 0, "Bob": 1}, checked against the players."""
    if not text:
        return {}
    out: dict[str, int] = {}
    for part in text.split(","):
        if not part.strip():  # (it said "entry ''", read aloud as two quotes; --players refuses the same so)
            raise UserError(f"--channels {text} has an empty entry between commas; give each player as "
                            "player=channel, e.g. Alice=0,Bob=1")
        name, sep, number = part.partition("=")
        name = name.strip()
        if not sep or not number.strip().isdigit():
            raise UserError(f"--channels entry {part!r} should look like Alice=0 (player=input channel)")
        # a seat's name in any case, as profiles and `players` take it ("alice=0" for seat Alice was refused)
        seat = next((p for p in players if p.casefold() == name.casefold()), None)
        if seat is None:
            raise UserError(f"--channels names {name!r}, who is not in --players ({', '.join(players)})")
        if seat in out:
            raise UserError(f"--channels names {seat} twice; give each player one channel")
        out[seat] = int(number)
    shared = next((ch for ch in out.values() if list(out.values()).count(ch) > 1), None)
    if shared is not None:  # (named: with six players "two players" left the table to find which)
        raise UserError(f"--channels gives {listed([p for p, ch in out.items() if ch == shared])} the same input "
                        f"channel, {shared}; give each their own")
    return out


def variant_config(args: argparse.Namespace, variant: str, players: tuple[str, ...], root: Path) -> dict[str, Any]:
    """The variant's own settings for a new session: Picture Snap's deck; Animal Snap's noises, from
    --animals, else each player's enrolled word (``voicesnap enroll rex --word woof``). By seat order
    alone a player who enrolled "woof" was given "moo", and their own call was a wrong one."""
    from .. import variants
    from ..rules import RulesError
    from ..vocabulary import game_word, spoken_word

    if args.deck is not None and variant != "picture":
        raise UserError(f"--deck chooses Picture Snap's deck; this is {variant}: add --variant picture or drop --deck")
    if args.animals is not None and variant != "animal":
        raise UserError(f"--animals gives Animal Snap's noises; this is {variant}: add --variant animal or drop "
                        "--animals")
    config: dict[str, Any] = {}
    if variant == "picture" and args.deck is not None:
        if args.deck.strip().lower() not in variants.themes():
            raise UserError(f"--deck {args.deck!r}: there is no such deck; choose {' or '.join(variants.themes())}")
        config["deck"] = args.deck.strip().lower()
    if variant == "animal":
        animals = {}
        for seat, prof in seat_profiles(root, players).items():
            if game_word(spoken_word(prof.word)) is None:  # (a player enrolled with "snap" keeps a default noise)
                animals[seat] = spoken_word(prof.word)
        named: set[str] = set()
        for part in args.animals.split(",") if args.animals else ():
            name, sep, noise = part.partition("=")
            given = next((p for p in players if p.casefold() == name.strip().casefold()), None)
            if not sep or not noise.strip():
                raise UserError(f"--animals entry {part!r} should look like Alice=woof (player=noise)")
            if given is None:
                raise UserError(f"--animals names {name.strip()!r}, who is not in --players ({', '.join(players)})")
            if given in named:
                raise UserError(f"--animals names {given} twice; give each player one noise")
            named.add(given)
            animals[given] = spoken_word(noise)
        try:
            variants.create(variant, players, 0, animals=animals)
        except RulesError as exc:
            if args.animals is None:  # the clash is between two enrolled words
                said = ", ".join(f"{p} '{w}'" for p, w in animals.items())
                raise UserError(f"Animal Snap: {exc} (from the words enrolled: {said}): give each player their "
                                "own with --animals Alice=woof,Bob=moo, or enroll another (voicesnap enroll NAME "
                                "--word moo)") from None
            raise UserError(f"--animals: {exc}") from None
        config["animals"] = {p: animals[p] for p in players if p in animals}
    return config


def seat_profiles(root: Path, players: tuple[str, ...]) -> dict[str, Any]:
    """Each enrolled seat's profile, for what the session is set up with (its noise, its stamp); a
    damaged one is left out here and said where the engine loads it."""
    from .. import voices

    out = {}
    for seat, name in enrolled_names(root, players).items():
        try:
            out[seat] = voices.load_profile(name, str(root))
        except Exception:  # noqa: BLE001 (see above)
            continue
    return out


def profile_stamps(root: Path, players: tuple[str, ...]) -> dict[str, str]:
    """Each enrolled seat's profile stamp (when it was enrolled), logged so that a replay can tell a
    profile enrolled again since the game (it re-judges with today's, and its rulings may differ)."""
    return {seat: prof.created for seat, prof in seat_profiles(root, players).items()}


def unheard_calls(settings: TableSession, root: Path) -> list[str]:
    """Seats whose call no voice engine can hear: an Animal Snap noise that is not the word the player
    enrolled (the players who enrolled "snap", given "moo" by seat, could make no call all game)."""
    if settings.variant != "animal":
        return []
    from .. import variants

    game = variants.create(settings.variant, settings.players, 0, **settings.config)
    out = []
    names = enrolled_names(root, settings.players)
    for seat, prof in seat_profiles(root, settings.players).items():
        noise = game.call_words(settings.players.index(seat)).get("snap")
        name, word, phrases = names[seat], prof.word, prof.phrases()
        if noise is not None and word != noise:
            out.append(f"{seat}'s Animal Snap call is '{noise}', and {seat} enrolled '{word}': their calls cannot "
                       f"be heard. Enroll the noise (voicesnap enroll {shlex.quote(name)} --word {noise}) or give "
                       f"them the word they enrolled (--animals {seat}={word})")
        elif "snap pool" not in phrases:  # (enrolled with --no-pool, or before "woof pool" became "snap pool")
            out.append(f"{seat} enrolled no 'snap pool', so their Snap pool claims are not named to them: enroll "
                       f"again with it (voicesnap enroll {shlex.quote(name)} --word {word})")
    return out


def latest_session(root: Path) -> Path:
    games = root / "games"
    found = sorted((p for p in games.glob("*/log.jsonl")), key=lambda p: p.stat().st_mtime) if games.is_dir() else []
    if not found:
        raise UserError(f"there is no session to resume in {games}; start one with voicesnap play --players ...")
    return found[-1].parent


STRICT = "+strict"  # an engine name's ending: per-player mics with --strict-calls
SLAMS = "+slam"  # an engine name's ending (or, alone, "slam"): Silent Snap's slams heard on per-player mics


def build_spotter(engine: str, args: argparse.Namespace, root: Path, players: tuple[str, ...],
                  channels: dict[str, int], pool_flag: list[Any], variant: str,
                  pool_exists: Callable[[], bool] | None = None) -> tuple[Any, str]:
    """The keyword spotter for this table, and the engine's name (or None, "none"); see _build_spotter.
    One that hears voice commands has the command gate on them (``spotters.command_gate``): the table acts
    on every command phrase it is given, and table talk ("who is the dealer now") was taken for one."""
    from ..spotters.command_gate import CommandGated
    from ..table import hears_commands

    spotter, name = _build_spotter(engine, args, root, players, channels, pool_flag, variant, pool_exists)
    return (CommandGated(spotter) if spotter is not None and hears_commands(name) else spotter), name


def _build_spotter(engine: str, args: argparse.Namespace, root: Path, players: tuple[str, ...],
                   channels: dict[str, int], pool_flag: list[Any], variant: str,
                   pool_exists: Callable[[], bool] | None = None) -> tuple[Any, str]:
    """The keyword spotter for this table, and the engine's name (or None, "none").

    ``pool_exists``: whether "snap" may yet be "snap pool"; by default the game's open pool claim
    (``table.PoolClaim`` over ``pool_flag``). ``voicesnap listen`` has no game, and says.

    ``engine`` is play's --engine, or a name a session was logged with (replay): "combined+keyword"
    is "combined" with the keyword model required, and a logged "combined" did not use it;
    "vosk+keyword" (one mic per player, both judges on each) needs both models, and a logged "vosk"
    is Vosk alone on each mic. Silent Snap on per-player mics hears slams (``_silent_spotter``): "slam"
    alone, or "vosk+slam" with Vosk for the voice commands.
    """
    if engine == "none":
        return None, "none"
    if variant == "silent" and channels:
        return _silent_spotter(engine, args, root, channels, pool_flag, variant, pool_exists)
    if variant == "animal" and channels:  # (refused before any model loads)
        raise UserError("Animal Snap's noises are heard from the players' enrollment on one microphone; per-player "
                        "mics hear 'snap' and 'snap pool' only: play Animal Snap without --channels")
    if engine.endswith(STRICT):  # a logged name: the session checked each call against the enrollment
        engine = engine.removesuffix(STRICT)
        args = argparse.Namespace(**{**vars(args), "strict_calls": True})
    if engine in ("combined+keyword", "vosk+keyword"):  # logged names: the keyword model was used
        need_vosk = engine == "vosk+keyword"  # re-judged without it, a replay would differ unsaid
        engine = "combined" if engine == "combined+keyword" else "auto"
        args = argparse.Namespace(**{**vars(args), "no_keyword": False, "need_keyword": True,
                                     "need_vosk": need_vosk})
    from .. import models

    model = None
    if engine in ("auto", "vosk", "combined"):
        try:
            model = models.find_model("en", args.model, root)
        except UserError:
            if engine != "auto" or getattr(args, "need_vosk", False) or models.named("en", args.model):
                raise
    if engine == "keyword" and variant == "slapjack":
        raise UserError("Slapjack's call is 'slap', which the keyword model does not hear (it knows 'snap' and "
                        "'snap pool' only): play it with --engine vosk or combined (voicesnap models download), "
                        "or by keyboard (--engine none)")
    profiles = _profiles(root, players, variant) if engine in ("auto", "enrolled", "keyword", "combined") else []
    keyword = _keyword_model(engine, args, root)

    from ..table import PoolClaim

    # "snap" is held back for a possible "pool" only while a pool claim is open (not
    # whenever a pool exists): see table.PoolClaim. play_session fills pool_flag.
    if pool_exists is None:
        pool_exists = PoolClaim(pool_flag)
    if variant == "animal":
        # "snap" alone is no call in Animal Snap, so it always waits for its "pool": with no claim open a
        # player's "snap pool" was heard as "snap" and said to be no call, where the pool key was a wrong call
        pool_exists = _always

    if channels and (model is not None or (keyword is not None and variant != "slapjack")):
        spotter, name = _channel_spotters(model, keyword, channels, pool_exists, variant, args)
        from ..spotters.channels import with_contrast

        spotter = with_contrast(spotter, profiles)  # the players' "slap" takes: a "slap" is no call
        if not getattr(args, "strict_calls", False):
            return spotter, name
        from ..spotters.channels import OwnWordCheck
        from ..spotters.enrolled import EnrolledSpotter

        profiles = profiles or _profiles(root, players, variant)
        missing = [p for p in channels if p not in {prof.name for prof in profiles}]
        if missing:
            how = "; ".join(f"voicesnap enroll {shlex.quote(p)} --channel {channels[p]}" for p in missing)
            raise UserError(f"--strict-calls checks each call against its player's enrollment: enroll "
                            f"{listed(missing)} first ({how}), or play without --strict-calls")
        return OwnWordCheck(spotter, EnrolledSpotter(profiles)), name + STRICT
    if getattr(args, "strict_calls", False) and not channels:
        raise UserError("--strict-calls is for one microphone per player (--channels Alice=0,Bob=1): on one "
                        "microphone every call is already checked against the players' enrollment")
    from ..spotters.combined import CombinedSpotter

    if engine in ("auto", "combined") and model is not None and profiles:
        from ..spotters.vosk_spotter import VoskSpotter

        vosk = _gated(VoskSpotter(model, channel=None, pool_exists=pool_exists, calls=_calls(variant)), None, args)
        heard_by = _keyword_spotter(keyword, pool_exists, variant, args)
        return (PoolAware(CombinedSpotter(vosk, profiles, keyword=heard_by, vosk_words=_calls(variant)), pool_exists),
                "combined" if heard_by is None else "combined+keyword")
    if engine in ("auto", "keyword") and keyword is not None and profiles and variant != "slapjack":
        return PoolAware(CombinedSpotter(_keyword_spotter(keyword, pool_exists, variant, args), profiles),
                         pool_exists), "keyword"
    if engine in ("auto", "enrolled") and profiles:
        from ..spotters.enrolled import EnrolledSpotter

        return PoolAware(EnrolledSpotter(profiles), pool_exists), "enrolled"
    if engine == "auto":
        print("(no enrolled players and no microphone channels to tell who calls: calls by keyboard. "
              "Enroll players with voicesnap enroll NAME to call by voice)")
        return None, "none"
    unenrolled = [p for p in players if p not in enrolled_names(root, players)]
    enroll = (f" (enroll {', '.join(unenrolled)} first: voicesnap enroll NAME)" if unenrolled else "")
    if engine == "vosk":
        raise UserError("--engine vosk hears calls but not who made them: on one microphone use --engine "
                        f"combined, where the players' enrollment says who called{enroll}, or give each player "
                        "a microphone (--channels Alice=0,Bob=1)")
    raise UserError(f"--engine {engine} tells who called from the players' enrolled voices, and none of "
                    f"{', '.join(players)} is enrolled: enroll them (voicesnap enroll NAME), give each a "
                    "microphone (--channels Alice=0,Bob=1), or play by keyboard (voicesnap play --engine none)")


def _silent_spotter(engine: str, args: argparse.Namespace, root: Path, channels: dict[str, int],
                    pool_flag: list[Any], variant: str, pool_exists: Callable[[], bool] | None) -> tuple[Any, str]:
    """Silent Snap with a microphone per player: a ``SlamSpotter`` on each mic (``spotters.slam``), and the
    mic that hears a slam loudest names who slammed (``ChannelSpotters``' crosstalk rule, as for words).

    Spoken calls count for nothing here, so neither the keyword model nor the enrollment is used; Vosk
    runs on each mic only for the voice commands ("dealer pause", ...): with ``engine`` "auto" when its
    model is installed, always with "vosk" or "combined" and the logged "vosk+slam"; never with "slam".
    """
    from .. import models
    from ..spotters.channels import ChannelSpotters
    from ..spotters.slam import SlamSpotter, WithSlams

    if getattr(args, "strict_calls", False) or engine.removesuffix(SLAMS).endswith(STRICT):
        raise UserError("--strict-calls checks spoken calls against the enrollment, and Silent Snap's call is a slam "
                        "on the table: drop --strict-calls")
    words_engine = engine.removesuffix(SLAMS) if engine != "slam" else "slam"
    if words_engine in ("enrolled", "keyword"):
        raise UserError(f"--engine {words_engine} hears spoken calls, and Silent Snap's call is a slam on the table, "
                        "heard on each player's microphone: drop --engine (Vosk, when installed, hears the voice "
                        "commands)")
    owner = {ch: p for p, ch in channels.items()}
    slams = ChannelSpotters({ch: SlamSpotter(channel=ch) for ch in sorted(owner)}, owner)
    slams.name = "slam-channels"
    model = None
    if words_engine in ("auto", "vosk", "combined"):
        try:
            model = models.find_model("en", args.model, root)
        except UserError:
            if words_engine != "auto" or models.named("en", args.model):
                raise
    if model is None:
        return WithSlams(None, slams), "slam"
    from ..table import PoolClaim

    words, _name = _channel_spotters(model, None, channels, pool_exists or PoolClaim(pool_flag), variant, args)
    return WithSlams(words, slams), "vosk" + SLAMS


def _channel_spotters(model: Any, keyword: Any, channels: dict[str, int], pool_exists: Any, variant: str,
                      args: argparse.Namespace) -> tuple[Any, str]:
    """One spotter per player's microphone (the channel names the caller): Vosk and, when installed,
    the keyword model (``judges.JudgedSpotter``), or either alone; and the engine's name."""
    from ..spotters.channels import ChannelSpotters

    loaded = None
    if model is not None:
        from ..spotters.vosk_spotter import load_model

        loaded = load_model(model)
    per = {}
    for ch in sorted(set(channels.values())):
        vosk = None
        if loaded is not None:
            from ..spotters.vosk_spotter import VoskSpotter

            vosk = _gated(VoskSpotter(loaded, channel=ch, pool_exists=pool_exists, calls=_calls(variant)), ch, args)
        heard_by = _keyword_spotter(keyword, pool_exists, variant, args, channel=ch)
        if vosk is not None and heard_by is not None:
            from ..spotters.judges import JudgedSpotter

            per[ch] = JudgedSpotter(vosk, heard_by)  # (the keyword model judges "snap" and "snap pool" only)
        else:
            per[ch] = vosk if vosk is not None else heard_by
    name = "vosk" if keyword is None else "vosk+keyword" if loaded is not None else "keyword"
    return ChannelSpotters(per, {ch: p for p, ch in channels.items()}), name


def _keyword_model(engine: str, args: argparse.Namespace, root: Path) -> Any:
    """The keyword model for this engine (None when it is not wanted, or not installed under 'auto')."""
    if engine not in ("auto", "keyword", "combined") or getattr(args, "no_keyword", False):
        if engine == "keyword":
            raise UserError("--engine keyword and --no-keyword contradict each other; drop one")
        return None
    from ..keyword import load_keyword_model

    return load_keyword_model(None, root, required=engine == "keyword" or getattr(args, "need_keyword", False))


def _keyword_spotter(model: Any, pool_exists: Any, variant: str, args: argparse.Namespace,
                     channel: int | None = None) -> Any:
    """The keyword model's spotter for one channel, or the table's mix of them (None without a model)."""
    if model is None:
        return None
    from ..spotters.keyword import KeywordSpotter

    # both its networks sleep away from speech unless --no-gate, as Vosk does behind its gate
    return KeywordSpotter(model, channel=channel, pool_exists=pool_exists, calls=_calls(variant),
                          gate=not getattr(args, "no_gate", False))


def _gated(spotter: Any, channel: int | None, args: argparse.Namespace) -> Any:
    """``spotter`` behind the speech gate (voicesnap.spotters.gate) unless --no-gate: the
    recogniser then decodes only around speech on its channel, not room tone."""
    if getattr(args, "no_gate", False):
        return spotter
    from ..spotters.gate import SpeechGate

    return SpeechGate(spotter, channel=channel)


def _always() -> bool:
    return True


def _calls(variant: str) -> tuple[str, ...]:
    return ("snap", "snap pool", "slap") if variant == "slapjack" else ("snap", "snap pool")


def enrolled_names(root: Path, players: tuple[str, ...]) -> dict[str, str]:
    """Each enrolled seat's profile name: its own, or the one profile spelled the same but for case (enrolled
    as "alice", seated as "Alice": a player does not remember how they typed their name at enrollment)."""
    from .. import voices

    enrolled = voices.list_players(str(root))
    out: dict[str, str] = {}
    for seat in players:
        same = [seat] if seat in enrolled else [n for n in enrolled if n.casefold() == seat.casefold()]
        if len(same) == 1:
            out[seat] = same[0]
    return out


def _profiles(root: Path, players: tuple[str, ...], variant: str = "classic") -> list[Any]:
    """The enrolled profiles of this table's players, named as they are seated (a damaged one is a
    UserError with the fix). In Slapjack the players' takes of "slap" are a call of theirs, not a
    contrast word that is no call."""
    from .. import voices

    out = [dataclasses.replace(voices.load_profile(name, str(root)), name=seat)
           for seat, name in enrolled_names(root, players).items()]
    return [voices.contrast_as_call(p, "slap") for p in out] if variant == "slapjack" else out


def offer_enrollment(root: Path, players: tuple[str, ...], ask: bool, speak: bool = False) -> list[str]:
    """Players without a voice profile; when ``ask``, offer to enroll each on the spot (said aloud too
    with ``speak``: a player who plays by ear could not see the question the game was waiting on)."""
    missing = [p for p in players if p not in enrolled_names(root, players)]
    if not missing or not ask:
        return missing
    from . import main as cli_main
    from .enroll import say_prompt

    still = []
    for name in missing:
        if speak:
            # spoken only: the question below is the printed one (printed too, it was asked twice in two wordings)
            say_prompt(f"{name} has no voice profile. Press Enter to enroll {name} now, which takes about two "
                       "minutes, or N and Enter to play without.", silent=False, show=False)
        answer = input(f"{name} has no voice profile. Enroll now (about two minutes)? [Y/n] ").strip().lower()
        if answer in ("", "y", "yes"):
            cli_main(["--data-dir", str(root), "enroll", name])
        if name not in enrolled_names(root, (name,)):
            still.append(name)
    return still


def _mic_opens(option: str | None) -> bool:
    """Whether the microphone play would listen on opens: enrolling at none would wait on silence (the
    game itself then says why there is no microphone, or plays by keyboard)."""
    return _mic_problem(option) is None


def _mic_problem(option: str | None) -> str | None:
    """Why the microphone play would listen on does not open (the message with the fix), or None."""
    from ..audio import MicSource

    try:
        MicSource(device=route(option, "input"), channels=1, option="--input").open().close()
    except UserError as exc:
        return str(exc)
    return None


class PoolAware:
    """Tells a spotter whether a Snap pool exists before each chunk (on the spotter's thread),
    so that with no pool a "snap" is final at once instead of waiting for "pool"."""

    def __init__(self, spotter: Any, pool_exists: Any) -> None:
        self.spotter = spotter
        self.pool_exists = pool_exists
        self.name = getattr(spotter, "name", "spotter")

    def accept(self, chunk: Any) -> list[Any]:
        setter = getattr(self.spotter, "set_pool_exists", None)
        if callable(setter):
            setter(bool(self.pool_exists()))
        return self.spotter.accept(chunk)

    def flush(self) -> list[Any]:
        return self.spotter.flush()

    def take_refusals(self) -> list[Any]:
        from ..spotters import take_refusals

        return take_refusals(self.spotter)

    def undecided(self) -> float | None:
        from ..spotters import undecided_from

        return undecided_from(self.spotter)


def _voice_settings(args: argparse.Namespace) -> Any:
    """The announcer's voice from --voice/--rate/--volume (None: the defaults)."""
    if args.voice is None and args.rate is None and args.volume is None:
        return None
    from ..speech import VoiceSettings

    base = VoiceSettings()
    return VoiceSettings(voice=args.voice or base.voice, rate=base.rate if args.rate is None else args.rate,
                         volume=base.volume if args.volume is None else args.volume)


def _announcer(args: argparse.Namespace, lines: Any, clock_map: Any = None) -> tuple[Any, Any, Any, Any]:
    """(say, setting, close, poll) for the announcer, or Nones when speech is off or impossible."""
    nothing: tuple[Any, Any, Any, Any] = (None, None, lambda: None, lambda: [])
    if args.quiet:
        return nothing
    from .. import announcer as ann

    try:
        speaker = ann.for_table(device=route(args.output, "output"), data_dir=args.data_dir, clock_map=clock_map,
                       voice=_voice_settings(args), verbosity=ann.Verbosity.parse(args.verbosity),
                       earcons=not args.no_earcons)
    except UserError as exc:
        said = str(exc).rstrip(".")  # the announcer's own reasons already say what happens instead
        lines(f"(no speech: {said})" if "printed as text" in said else f"(no speech: {said}; announcements are printed)")
        return nothing
    return speaker.say, speaker.setting, speaker.close, speaker.poll


def _speaker_playback(say: Any) -> Any:
    """The playback behind the announcer's ``say`` (what the echo canceller needs), or None."""
    speaker = getattr(say, "__self__", None)
    return getattr(getattr(speaker, "announcer", None), "playback", None)


def with_echo_cancel(spotter: Any, playback: Any) -> Any:
    """``spotter`` hearing the microphone minus the echo of what ``playback`` plays
    (voicesnap.echo); the reference is placed on the input clock by the playback's
    own clock mapping."""
    from ..echo import EchoCancelled, PlaybackReference

    return EchoCancelled(spotter, PlaybackReference(playback))


def record_reference(spotter: Any, recorder: Any, path: Path) -> Any:
    """Keep the echo canceller's reference beside the microphone recording (``recorder``), on
    the same clock, so that ``voicesnap replay`` cancels the same echo (voicesnap.echo_record);
    None when no canceller runs."""
    from ..echo import EchoCancelled
    from ..echo_record import RATE, ReferenceRecorder

    if not isinstance(spotter, EchoCancelled) or not hasattr(spotter.reference, "record"):
        return None

    def origin() -> int | None:
        if recorder.origin is None:
            return None
        return int(round(recorder.origin * RATE / recorder.rate))

    keeper = ReferenceRecorder(path, origin)
    spotter.reference.record = keeper.write
    return keeper


def _check_pace(pace: float) -> None:
    if not 0 <= pace <= 60:  # (NaN too)
        raise UserError(f"--pace {pace} is impossible; use 0 (flip command only) to 60 seconds")


def _check_windows(tie: float, decision: float) -> None:
    """--tie-window and --decision-window, checked before the game starts (the referee checks the decision
    window against the tie window again once it has)."""
    from ..rules import Options, RulesError

    try:
        Options(tie_window=tie)  # the rules' own range
    except RulesError as exc:
        raise UserError(f"--tie-window: {exc}") from None
    if not 0 <= decision <= 10:
        raise UserError(f"--decision-window {decision} is impossible; use 0 to 10 seconds (default 0.5)")
    if decision < tie:
        raise UserError(f"--decision-window {decision} is shorter than --tie-window {tie}: a rival's call inside "
                        "the tie window could not be heard before the ruling; make it at least as long")


def _check_speech_options(args: argparse.Namespace) -> None:
    """--voice, --rate and --volume that cannot be used stop play before the game, with the fix: a player
    who asked for a voice would otherwise sit through a game of printed announcements. No speech engine
    at all is not such a mistake: the game goes on in text, as the announcer says."""
    if args.quiet:
        return
    voice = _voice_settings(args)  # a rate or volume out of range: SpeechError, a UserError
    if voice is None or args.voice is None:
        return
    from ..speech import DEFAULT_VOICE, UnknownVoice, check_voice, close_voices

    try:
        check_voice(voice)
    except UnknownVoice:
        close = close_voices(args.voice)
        raise UserError(f"--voice {args.voice!r} is not an espeak-ng voice"
                        + (f" (close: {', '.join(close)})" if close else "")
                        + f"; list them with espeak-ng --voices=en, or leave --voice out for {DEFAULT_VOICE}") from None
    except UserError:
        return  # no speech engine: said once the announcer starts, and announcements are printed


def _new_game_folder(root: Path) -> Path:
    """games/<date-time>, with -2, -3 ... after it where a game started in the same second."""
    stamp = time.strftime("%Y%m%d-%H%M%S")
    folder, n = root / "games" / stamp, 1
    while folder.exists():
        n += 1
        folder = root / "games" / f"{stamp}-{n}"
    return folder


# A new session's options whose default is None in the parser, so that --resume can tell them given.
NEW_SESSION_DEFAULTS: dict[str, Any] = {"variant": "classic", "session": "single", "tie_window": 0.1,
                                        "decision_window": 0.5, "verbosity": "names"}


def _keep_session(args: argparse.Namespace, settings: Any) -> None:
    """--resume continues the session as it was set up, and hears calls as it heard them.

    A resumed game had listened with play's default engine, speech gate and keyword model whatever
    the session was logged with (a keyboard-only session even started listening), under the session's
    logged lag, and ignored a changed --channels, --players or --variant unsaid. Now ``args`` is set
    to the session's listening (its logged engine name, which ``build_spotter`` reads as a replay
    does) and its verbosity, and an option that would change the session is refused with the way out.
    """
    from .. import variants
    from ..session import parse_format

    logged = "none" if settings.engine in ("keyboard", "none") else settings.engine
    base = logged.removesuffix(STRICT).split("+")[0]
    clashes = []

    def plain(value: Any) -> str:
        """A setting as the player would type it (not a Python tuple or dict)."""
        if isinstance(value, dict):
            return ",".join(f"{k}={v}" for k, v in value.items()) or "none"
        if isinstance(value, (tuple, list)):
            return ",".join(map(str, value))
        return str(value)

    def differs(option: str, given: Any, kept: Any, shown: Any = None) -> None:
        if given is not None and given != kept:
            clashes.append(f"{option} {shown if shown is not None else plain(given)} (the session's: {plain(kept)})")

    differs("--players", parse_players(args.players) if args.players else None, settings.players, args.players)
    differs("--variant", variants.get(args.variant).variant if args.variant else None, settings.variant, args.variant)
    differs("--session", str(parse_format(args.session)) if args.session else None, settings.format, args.session)
    differs("--seed", args.seed, settings.seed)
    if args.deck is not None:  # (the session's own deck again is no clash)
        kept_deck = settings.config.get("deck", "farm") if settings.variant == "picture" else "none: not Picture Snap"
        differs("--deck", args.deck.strip().lower(), kept_deck, args.deck)
    if args.animals is not None:
        from .. import variants
        from ..vocabulary import spoken_word

        game = variants.create(settings.variant, settings.players, 0, **settings.config)
        noises = ({p: game.call_words(i)["snap"] for i, p in enumerate(settings.players)}
                  if settings.variant == "animal" else {})
        given = {p.partition("=")[0].strip().casefold(): spoken_word(p.partition("=")[2]) for p in args.animals.split(",")}
        kept = {k.casefold(): v for k, v in noises.items()}
        if any(kept.get(k) != v for k, v in given.items()):
            clashes.append(f"--animals {args.animals} (the session's: {plain(noises) if noises else 'none: not Animal Snap'})")
    differs("--tie-window", args.tie_window, settings.tie_window)
    differs("--decision-window", args.decision_window, settings.decision_window)
    differs("--listen-lag", args.listen_lag, settings.lag)
    differs("--engine", None if args.engine == "auto" else args.engine, base, args.engine)
    if clashes and clashes[-1].startswith("--engine "):
        clashes[-1] = f"--engine {args.engine} (the session's: {logged})"
    differs("--channels", parse_channels(args.channels, settings.players) if args.channels else None,
            dict(settings.channels), args.channels)
    if args.no_gate and settings.gate:
        clashes.append("--no-gate (the session's speech gate is on)")
    if args.no_keyword and "+keyword" in logged:
        clashes.append(f"--no-keyword (the session hears with {logged})")
    if getattr(args, "strict_calls", False) and not logged.endswith(STRICT):
        clashes.append("--strict-calls (the session did not check calls against the enrollment)")
    if clashes:
        raise UserError(f"--resume continues the session as it was set up: {'; '.join(clashes)}. Drop "
                        f"{'that option' if len(clashes) == 1 else 'those options'}, or start a new session "
                        "without --resume")
    args.engine = logged  # (a logged "combined" was heard without the keyword model; "combined+keyword" with it)
    args.no_gate = not settings.gate
    args.no_keyword = logged == "combined"
    args.strict_calls = False  # (in the logged name: build_spotter reads it from there)
    if args.verbosity is None:
        args.verbosity = settings.verbosity


def run(args: argparse.Namespace) -> int:
    """Play; a --record folder this run made is taken away again if the game never wrote to it (a start
    refused for a wrong model left an empty folder, which resume and replay then called "no game")."""
    made = Path(args.record) if args.record and not args.resume and not Path(args.record).exists() else None
    try:
        return _run(args)
    finally:
        if made is not None:
            with contextlib.suppress(OSError):  # (not empty, or gone: left as it is)
                made.rmdir()


def _run(args: argparse.Namespace) -> int:
    from .. import gamelog, variants
    from ..audio import FileSource, MicSource, RecordingTap
    from ..keyboard import RawKeyboard
    from ..session import parse_format
    from ..live import LiveInput
    from ..table import (
        SessionResult, TableSession, engine_words, hears_commands, interrupts_deferred, play_session, rebuild,
    )

    root = data_dir(args.data_dir)
    # stdout to a file, a pipe or a braille display's logger: a redrawn table there is the whole table again
    # after every card, each ruling repeated under it; plain lines give each event once
    text = args.text or not sys.stdout.isatty()
    resumed = None
    if args.resume:
        folder = Path(args.record) if args.record else latest_session(root)
        if args.record and not (folder / "log.jsonl").is_file():  # (it said "no game log at DIR/log.jsonl")
            raise UserError(f"--record {folder} holds no game to resume (no log.jsonl there): give the folder "
                            "a game was played with --record, or leave --record out to resume the last game")
        from ..files import recordings_in_progress, recover_sound_files

        busy = recordings_in_progress(folder)
        if busy:  # a second game on the same log and recording would interleave both
            raise UserError(f"the game in {folder} is still being played (its recording {busy[0]} is still being "
                            "written): resume it once that game has ended or been stopped")
        recover_sound_files(folder, tell=print)  # what a killed game was recording, kept for replay
        records = [ev for _, ev in gamelog.read(folder / "log.jsonl", torn_tail=True,
                                                notice=lambda text: print(f"({text})"))]
        resumed = rebuild(records)
        settings = resumed.settings
        _keep_session(args, settings)
        if args.pace is not None:
            _check_pace(args.pace)
            settings = dataclasses.replace(settings, pace=args.pace)
        # --verbosity on --resume is said as asked (the table read the session's, so it was ignored unsaid)
        settings = dataclasses.replace(settings, verbosity=args.verbosity)
        if resumed.game is None and resumed.session.is_over():
            print(f"that session is over: {resumed.session.winner} won. Start a new one without --resume.")
            return 0
        game = resumed.game
        if game is not None:  # each count with its own noun: "pool 1 cards" was read aloud as written
            held = [f"{p} {counted(game.holds(i), 'card')}" for i, p in enumerate(game.players)]
            held += [f"pool {counted(len(game.pool), 'card')}"] if game.pool else []
            at = f"after flip {game.flips}" if game.flips else "before its first flip"
            print(f"resuming {folder}: game {resumed.games}, {at} ({', '.join(held)})")
        else:
            print(f"resuming {folder}: game {resumed.games + 1} is next")
    else:
        players = parse_players(args.players)
        for option, default in NEW_SESSION_DEFAULTS.items():
            if getattr(args, option) is None:
                setattr(args, option, default)
        if args.pace is None:
            args.pace = DEFAULT_PACE
        _check_pace(args.pace)
        _check_windows(args.tie_window, args.decision_window)
        variant = variants.get(args.variant).variant
        fmt = str(parse_format(args.session))
        seed = args.seed if args.seed is not None else secrets.randbits(48)
        folder = Path(args.record) if args.record else _new_game_folder(root)
        from ..files import writable_folder

        if args.record:  # asked now, not when the first record is written after the models load
            if folder.exists() and not folder.is_dir():
                raise UserError(f"--record {folder} is a file; give a folder for the game's log and audio "
                                "(it is made if missing)")
            writable_folder(folder, "--record")
        else:
            writable_folder(root, "the data folder")  # its games/ is made with the game's own folder
        if (folder / "log.jsonl").exists():
            raise UserError(f"{folder} already holds a game log; choose a new --record folder or add --resume")
        settings = TableSession(
            players=players, seed=seed, variant=variant, format=fmt, pace=args.pace,
            decision_window=args.decision_window, tie_window=args.tie_window, engine=args.engine,
            verbosity=args.verbosity, gate=not getattr(args, "no_gate", False),
            config=variant_config(args, variant, players, root),
            voices=profile_stamps(root, players),
        )
    players = settings.players
    _check_speech_options(args)
    channels = parse_channels(args.channels, players) if not args.resume else dict(settings.channels)
    if args.input_file and args.engine == "none" and args.resume:
        raise UserError("--input-file is audio for the game to hear, and this session is played by keyboard only "
                        "(--engine none): resume it without --input-file")
    if args.input_file and args.engine == "none":  # (it had been heard with the best engine, unsaid)
        raise UserError("--input-file is audio for the game to hear, and --engine none hears nothing (keyboard "
                        "only): drop one of them")
    if channels and args.engine == "none":  # (they were dropped unsaid)
        raise UserError("--channels names the players' microphones, and --engine none hears none (keyboard "
                        "only): drop one of them")
    if getattr(args, "strict_calls", False) and args.engine == "none":
        raise UserError("--strict-calls checks calls heard by voice, and --engine none hears none: drop one of them")
    silent_hint = ""  # its end; said once the engine is known: only Vosk hears voice commands (``hears_commands``)
    if settings.variant == "silent" and not channels:
        # one microphone hears a slam but not whose hand it was: on the keys, said before the game, not guessed
        if args.no_keyboard:
            raise UserError("Silent Snap's call is a slam on the table, and one microphone cannot tell whose hand "
                            "slammed, so slams are keys, and --no-keyboard turns the keys off: give each player a microphone (--channels "
                            f"{','.join(f'{p}={i}' for i, p in enumerate(players))}) to hear slams, or drop "
                            "--no-keyboard to slam with the keys")
        mics = f"--channels {','.join(f'{p}={i}' for i, p in enumerate(players))}"
        # (a resumed session keeps its microphones: --channels there is refused, so it is not offered as is)
        heard = (f"a new session with a microphone per player ({mics}) hears slams on the table" if args.resume
                 else f"with a microphone per player ({mics}) slams on the table are heard")
        silent_hint = heard
    if args.engine != "none" and not channels:
        ask = not args.input_file and sys.stdin is not None and sys.stdin.isatty()
        if ask and len(enrolled_names(root, players)) < len(players):
            ask = _mic_opens(args.input)  # (opened only when someone would be asked to enroll at it)
        missing = offer_enrollment(root, players, ask=ask, speak=not args.quiet)
        if missing:
            print(f"no voice profile for {', '.join(missing)}: their calls need the keyboard "
                  "(or enroll later: " + "; ".join(f"voicesnap enroll {shlex.quote(m)}" for m in missing) + ")")
        if not args.resume:
            own = {seat: prof.channel for seat, prof in seat_profiles(root, players).items()
                   if getattr(prof, "channel", None) is not None}
            if len(own) >= 2 and len(set(own.values())) == len(own):
                # enrolled each on their own mic, and played on one mix of them all unsaid
                mapping = ",".join(f"{p}={own[p]}" for p in players if p in own)
                print(f"{listed(list(own))} enrolled on their own microphone channels; this game hears every "
                      f"microphone as one, each caller known by voice: for a microphone per player, stop and add "
                      f"--channels {mapping}")
    pool_flag: list[Any] = []
    listen = args.engine != "none"
    spotter, engine_name = (None, "none")
    if listen:
        spotter, engine_name = build_spotter(args.engine, args, root, players, channels, pool_flag, settings.variant)
    if listen and spotter is None and args.engine == "auto" and not args.input_file and not args.resume:
        problem = _mic_problem(args.input)  # (enrolling, as just advised, needs a microphone too)
        if problem is not None:
            print(f"(no microphone either: {problem})")
    if spotter is not None:
        for line in unheard_calls(settings, root):
            print(f"warning: {line}")
    n_channels = max(channels.values()) + 1 if channels else 1
    from_file = FileSource(args.input_file, chunk_frames=320) if spotter is not None and args.input_file else None
    if from_file is not None:
        from ..audio import narrowband_note

        narrow = narrowband_note(args.input_file, from_file.rate)  # (as listen says it of the same file)
        if narrow:
            print(f"warning: {narrow}", file=sys.stderr)
    # the live input as PortAudio opens it (a PulseAudio name is routed once: PULSE_SOURCE stays set)
    routed = route(args.input, "input") if spotter is not None and from_file is None else None
    if channels and spotter is not None:
        from .devices import input_channels

        # the input file's channels, or a live input's where they can be known (a sound-server source
        # upmixes: a channel past its own read exact silence, and that player could never call)
        has = from_file.channels if from_file is not None else input_channels(routed)
        if has is not None and has < n_channels:
            raise UserError(f"{'the session' if args.resume else '--channels'} gives "
                            f"{max(channels, key=lambda p: channels[p])} channel {n_channels - 1}, and "
                            f"{args.input_file or 'the input'} has {counted(has, 'channel')}: {', '.join(map(str, range(has)))}"
                            + ("" if from_file is not None else
                               f"; choose an input with {n_channels} or more (--input; voicesnap devices lists each "
                               "input's channels)" + ("" if args.resume else
                                                      ", or give each player a channel it has")))
        unheard = [p for p in players if p not in channels]
        if unheard and args.no_keyboard:  # (they were told to use the keyboard, which was off: never heard)
            raise UserError(f"no microphone for {', '.join(unheard)} in --channels and --no-keyboard: they could "
                            f"never call; give each a channel ({','.join(f'{p}=N' for p in unheard)}) or drop "
                            "--no-keyboard")
        if unheard:
            print(f"no microphone for {', '.join(unheard)} in --channels: their calls need the keyboard "
                  f"(or give each a channel: {','.join(f'{p}=N' for p in unheard)})")
    plan = None
    if channels and spotter is not None and from_file is None:
        from ..pulse import channel_plan

        plan = channel_plan(routed, n_channels)  # a sound-server source: its own k-th mic as channel k
    if spotter is not None and not args.input_file:
        try:  # fail now, with the fix, rather than inside the listening thread
            MicSource(device=routed, channels=n_channels, option="--input", plan=plan).open().close()
        except UserError as exc:
            if (args.engine != "auto" and not args.resume) or args.input is not None:
                # a device or engine the player named: theirs to fix (a resumed game goes on as auto's would)
                raise
            print(f"(no microphone: {exc}; calls by keyboard)")
            spotter, engine_name = None, "none"
    if silent_hint:  # "voice commands still work" only where they do: --engine keyword or enrolled hears none
        commands = " (voice commands still work)" if spotter is not None and hears_commands(engine_name) else ""
        print("Silent Snap on one microphone: a slam on the table cannot say whose hand it was, so slams are the "
              f"snap keys, printed below{commands}; {silent_hint}")
    folder.mkdir(parents=True, exist_ok=True)
    if not args.resume:
        from ..table import voice_lags

        voice_lag, voice_pool_lag = voice_lags(settings.tie_window, settings.decision_window)
        lag = args.listen_lag if args.listen_lag is not None else (voice_lag if spotter is not None else 0.0)
        if not 0 <= lag <= 5:
            raise UserError(f"--listen-lag {lag} is impossible; use 0 to 5 seconds")
        pool_lag = lag if args.listen_lag is not None or spotter is None else voice_pool_lag
        settings = dataclasses.replace(settings, engine=engine_name, lag=lag, pool_lag=pool_lag, channels=channels,
                                       audio="audio.wav" if (args.record and spotter is not None) else "")
    lines = print
    clock_map = None
    if not args.quiet and not args.input_file and listen:
        from ..playback import ClockMap

        clock_map = ClockMap()  # speech start times mapped onto the microphone's clock
    say, setting, close_speech, poll_speech = _announcer(args, lines, clock_map)
    playback = _speaker_playback(say)
    if spotter is not None and playback is not None and not args.no_echo_cancel and not args.input_file:
        spotter = with_echo_cancel(spotter, playback)  # players call over the announcer
    chunks: FileSource | LiveInput | None = None
    recorder = None
    reference_recorder = None
    live = None
    if spotter is not None:
        if from_file is not None:
            chunks = from_file
        else:
            from ..pulse import source_watch

            def open_mic() -> Any:
                return MicSource(device=routed, channels=n_channels, option="--input", plan=plan).open()

            live = LiveInput(open_mic, lambda text: None,
                             watch=source_watch(routed, args.input if routed == "pulse" else None),
                             owners={ch: p for p, ch in channels.items()})
            chunks = live
        if args.record and chunks is not None:
            name = "audio.wav" if not args.resume else _resumed_audio_name(folder)
            recorder = RecordingTap(folder / name)
            from ..echo_record import reference_name

            reference_recorder = record_reference(spotter, recorder, folder / reference_name(name))
    if args.resume:  # the stretch's table-resumed record names its own recording (it named audio.wav)
        settings = dataclasses.replace(settings, audio=recorder.path.name if recorder is not None else "")
    keyboard_on = not args.no_keyboard and sys.stdin is not None and not sys.stdin.closed
    log = gamelog.GameLog(folder / "log.jsonl", fsync=True)

    def hook() -> list[Any]:
        """Every tick: anchor the speaker's clock on the microphone's, collect speech start times."""
        source = getattr(live, "source", None)
        stream = getattr(source, "_stream", None)
        if clock_map is not None and stream is not None and source is not None and live is not None:
            # (a stream implies its source and the live input: both spelled out for the type checker)
            from ..playback import anchor_from_input

            try:
                anchor_from_input(clock_map, stream, source.position + live.offset, source.rate,
                                  delivered=source.position)
            except Exception:  # a stream closing under us: the next tick anchors again
                pass
        return list(poll_speech())

    # the variant and format by name, as read aloud: their ids ("single-pile, best-of-1") were spelt out
    print(f"voicesnap: {listed(players)}; {variants.get(settings.variant).title}, "
          f"{parse_format(settings.format).words()}; "
          f"calls {'heard by ' + engine_words(engine_name) if spotter is not None else 'by keyboard'}"
          # which mic is whose, to check before the first card (a mic on the wrong channel names the wrong caller)
          + (f"; microphones: {listed([f'{p} on channel {c}' for p, c in channels.items()])}"
             if channels and spotter is not None else ""))
    if spotter is not None and not hears_commands(engine_name):
        # a player who relies on hearing the game asks for it by voice: say that no one is listening for that
        from .. import models

        try:  # installed, but this engine does not use it: say how to hear commands, not to download it again
            models.find_model("en", args.model, root)
            how = "play with --engine combined (or auto)"
        except Exception:  # noqa: BLE001 (not installed)
            how = "voicesnap models download"
        print(f"(voice commands such as 'dealer status' and 'dealer pause' are heard only with the Vosk model: {how})")
    print(f"log in {folder}")  # (the keys are printed by the table, with each seat's word in this variant)
    stopping = _stop_on_hangup()
    try:
        with RawKeyboard() if keyboard_on else _Nothing() as keys:
            try:
                result = play_session(
                    settings, log, chunks=chunks, spotter=spotter,
                    tap=recorder.write if recorder is not None else None,
                    keyboard=keys if keyboard_on else None, say=say, lines=lines, text=text,
                    setting=setting, resumed=resumed, pool_flag=pool_flag, hook=hook,
                    redraw=not text,
                    # speech start times are on the microphone's clock: flips count from when they are heard
                    announce_flips=say is not None and clock_map is not None and live is not None,
                )
            except KeyboardInterrupt:  # between two games of a session (in one, the table stops it)
                result = SessionResult("interrupted", None, 0, [])
            _print_end(result, folder, args.record, printed=text)  # at once: the last words below take seconds
            _say_farewell(say, result, recorded=bool(args.record))
            began = time.monotonic()  # let the last words finish (20 s at most), and log when they started
            try:
                while say is not None and time.monotonic() < began + LAST_WORDS_S:
                    with interrupts_deferred():
                        found = hook()
                        if found:
                            log.write(*found)
                    if time.monotonic() > began + 0.3 and not _speaking(say):
                        break
                    time.sleep(0.1)
            except KeyboardInterrupt:  # Ctrl-C cuts the last words short, not the tidying up below
                pass
    finally:
        with interrupts_deferred(drop=True):
            _close_all(live, recorder, reference_recorder, log, close_speech)
        stopping()
    return 0


def _resumed_audio_name(folder: Path) -> str:
    """audio-resumed-N.wav for the Nth resumed stretch: named by the second, two resumes within one
    had the second recording replace the first."""
    n = 1
    while any(folder.glob(f"audio-resumed-{n}.wav")) or any(folder.glob(f".audio-resumed-{n}.wav.*")):
        n += 1
    return f"audio-resumed-{n}.wav"


def _print_end(result: SessionResult, folder: Path, record: Any, printed: bool = False) -> None:
    """The session's winner, or how to continue a stopped game. ``printed``: every announcement was
    printed as it came (--text), the winner's among them: it is not printed a second time."""
    if result.winner:
        if not printed:  # the table display lists rulings, not the session's end: the announcer's words
            from ..session import SessionOver

            print(next((text for text, ev in result.said if isinstance(ev, SessionOver)),
                       f"{result.winner} wins the session."))
        print(f"log in {folder}")
    elif result.reason in ("interrupted", "ended", "audio ended", LISTENING_FAILED):
        print(f"stopped ({STOPPED_BY.get(result.reason, result.reason)}); "
              "continue with: voicesnap play --resume" + (f" --record {folder}" if record else ""), flush=True)


# Why a game stopped, in the printed line's words (the reason's id, "(ended)", said nothing to a player)
STOPPED_BY = {
    "interrupted": "by Ctrl-C or a stop signal",
    "ended": "by the end command",
    "audio ended": "the input file ended",
    LISTENING_FAILED: "listening stopped with the error above",
}


# What the speaker says when a game stops without a winner (the printed line gives the exact command).
FAREWELL = {
    "interrupted": "Game stopped. To continue it, run voicesnap play with the resume option.",
    "ended": "Game ended. To continue it, run voicesnap play with the resume option.",
    "audio ended": "The recording has ended.",
    LISTENING_FAILED: "Listening stopped with an error, so the game stopped. To continue it, run voicesnap play "
                      "with the resume option.",
}
LAST_WORDS_S = 20.0  # s the program waits at the end for its last announcements to be heard


def _stop_on_hangup() -> Any:
    """A closed terminal (SIGHUP) or a plain ``kill`` (SIGTERM) stops the game as Ctrl-C does, so its
    log is ended and its audio recording kept: both had ended it at once, leaving the recording a
    temporary file that ``replay`` could not find. Returns what puts the old handlers back."""
    import signal

    def stop(signum: int, frame: Any) -> None:
        raise KeyboardInterrupt

    kinds = [k for k in (getattr(signal, "SIGTERM", None), getattr(signal, "SIGHUP", None)) if k is not None]
    try:
        before = {k: signal.signal(k, stop) for k in kinds}
    except ValueError:  # not the main thread: nothing to take over
        return lambda: None
    return lambda: [signal.signal(k, h) for k, h in before.items()]


def _say_farewell(say: Any, result: SessionResult, recorded: bool = False) -> None:
    """Say how the session ended (said, not only printed: a player may be playing by ear). Stopped by
    Ctrl-C, what was still to be said is stale and is dropped first; ended by the end command, the
    farewell is that command's answer and cuts an answer still being said (the help is 16 s long)."""
    from ..session import SessionOver
    from ..table import PRIORITY_RULING, Say

    farewell = f"{result.winner} wins the session." if result.winner else FAREWELL.get(result.reason, "")
    if any(isinstance(ev, SessionOver) for _, ev in result.said):  # its winner and scores were just said:
        farewell = ""  # a second "Alice wins the session." after "Alice wins the session after 2 games. ..."
    if recorded and farewell.endswith(" with the resume option."):  # (--resume alone finds only the games folder)
        farewell = farewell.removesuffix(".") + " and the same record folder."
    if result.reason == "interrupted":
        _hush(say)
    if say is not None and farewell:
        answer = Say(farewell, PRIORITY_RULING, answer=True) if result.reason == "ended" else None
        say(farewell, PRIORITY_RULING, answer)


def _announcer_of(say: Any) -> Any:
    """The announcer behind the table speaker's bound ``say``, or None (no speech)."""
    return getattr(getattr(say, "__self__", None), "announcer", None)


def _hush(say: Any) -> None:
    """Cut the announcer behind ``say`` and drop what it has waiting (``Announcer.hush``)."""
    announcer = _announcer_of(say)
    if announcer is not None:
        announcer.hush()


def _speaking(say: Any) -> bool:
    """Is the announcer behind ``say`` still saying something (or about to)?"""
    announcer = _announcer_of(say)
    return bool(announcer is not None and announcer.speaking and announcer.queue.active
                and not getattr(announcer.playback, "lost", False))  # a speaker gone says nothing more


def _close_all(live: Any, recorder: Any, reference_recorder: Any, log: Any, close_speech: Any) -> None:
    """The game's microphone, recordings, log and speaker, closed whatever ended it."""
    if live is not None:
        live.close()
    if recorder is not None:
        recorder.close()
    # (reference_recorder is made from recorder: set only with it)
    if reference_recorder is not None and recorder is not None:  # as long as the microphone recording, on its clock
        from ..echo_record import RATE as REF_RATE

        reference_recorder.close(until=None if recorder.rate is None else
                                 int(round(recorder.frames_written * REF_RATE / recorder.rate)))
    log.close()
    close_speech()


class _Nothing:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *_: object) -> None:
        return None
