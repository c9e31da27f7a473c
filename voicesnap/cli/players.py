"""List, rename, forget or identify enrolled players.

To re-enroll a player, run `voicesnap enroll NAME` again: the new takes
replace the old profile. `forget` deletes the player's voice data.
"""

from __future__ import annotations

import argparse
import json
import shlex
import sys
from pathlib import Path

import numpy as np

from ..errors import UserError
from ..text import counted, listed


def configure(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="action", metavar="ACTION")
    sub.add_parser("list", help="list enrolled players (the default)",
                   description="List the enrolled players: call word, mic channel, takes and speech sample.")
    ren = sub.add_parser("rename", help="rename a player, keeping their voice",
                         description="Rename an enrolled player, keeping their voice profile.")
    ren.add_argument("old")
    ren.add_argument("new")
    fgt = sub.add_parser("forget", help="delete a player's voice data",
                         description="Delete an enrolled player's voice data (their profile file).")
    fgt.add_argument("name")
    fgt.add_argument("--yes", "-y", action="store_true", help="do not ask first (asked only at a terminal)")
    ide = sub.add_parser("identify", help="say which enrolled player a recording sounds like",
                         description="Say which enrolled player (or nobody) a recording of one call sounds like, "
                                     "as the game would judge it: the score of each player and the reason. Give "
                                     "a short file holding just the call ('snap'), not a sentence.")
    ide.add_argument("file", type=Path, metavar="FILE.wav")
    ide.add_argument("--json", action="store_true", help="print the result as JSON")
    ide.add_argument("--channel", type=int, help="use this channel of a multichannel file")


_MONTHS = ("January", "February", "March", "April", "May", "June", "July", "August", "September", "October",
           "November", "December")


def _date_words(stamp: str) -> str:
    """An ISO time as a screen reader reads it well: "7 December 2026, 18:30 UTC" (the stamp itself if it is
    not one)."""
    import datetime

    try:
        when = datetime.datetime.fromisoformat(stamp)
    except (TypeError, ValueError):
        return stamp
    zone = "" if when.utcoffset() is None else " UTC" if not when.utcoffset() else f" {when:%z}"
    return f"{when.day} {_MONTHS[when.month - 1]} {when.year}, {when:%H:%M}{zone}"


def _list(args: argparse.Namespace) -> int:
    from .. import voices as V

    names = V.list_players(args.data_dir)
    if not names:
        print(f"No players enrolled yet (in {V.players_dir(args.data_dir)}); "
              "enroll one with `voicesnap enroll NAME`.")
        return 0
    from .. import encoder as E

    enc = E.load_encoder(data=args.data_dir)
    without = []
    mute = []  # enrolled with the encoder but no speech sample
    bare = []  # saved before the takes were kept (voices.loudness cannot adapt to them)
    unlike = []  # no takes of the call word's contrast word ("slap" for "snap")
    for name in names:
        try:
            p = V.load_profile(name, args.data_dir)
        except UserError as exc:
            print(f"{name:16s} DAMAGED: {exc}")
            continue
        # a pool phrase but "snap pool" (Animal Snap players enrolled before stop 50: "woof pool") no game takes
        # "6 of 'snap'", as enroll says it, and the date in words: "6x" and "2026-12-07T18:30:51+00:00" were
        # read aloud by a screen reader as "six ex" and digit by digit, colons and all
        takes = "takes: " + ", ".join(f"{n} of '{ph}'" + (" (no game takes it: enroll again for 'snap pool')"
                                           if ph.endswith(V.POOL_SUFFIX) and ph != "snap pool" else "")
                          for ph, n in p.extra.get("takes", {}).items())
        takes += "".join(f", {len(ts)} of '{w}' (no call but in Slapjack)" for w, ts in V.profile_contrast(p).items())
        chan = f"mic channel {p.channel}" if p.channel is not None else "any mic"
        embs = V.profile_embeddings(p)
        with_enc = enc is not None and embs is not None and embs[0] == enc.fingerprint
        if enc is not None and not with_enc:
            without.append(p.name)
        # fields end in "; ": a screen reader says the padding between columns as nothing at all, and
        # "speaker encoder: yes, no speech sample" was heard as "yes no"
        mark = "; speaker encoder: " + ("yes" if with_enc else "no") if enc is not None else ""
        if with_enc:
            sp = p.extra.get("speech")
            mark += (f"; speech sample of {counted(round(sp['seconds']), 'second')}" if isinstance(sp, dict)
                     else "; no speech sample")
        if V.missing_speech(p, enc):
            mute.append(p.name)
        if V.profile_takes(p) is None:
            bare.append(p.name)
        if V.missing_contrast(p):
            unlike.append(p.name)
        print(f"{p.name:16s} call '{p.word}'; {chan}; {takes}; enrolled {_date_words(p.created)}{mark}")
    sys.stdout.flush()  # (the notes go to stderr: after the list, not into its last line when both are piped)
    if mute:
        print(f"note: {listed(mute)} gave no speech sample, so a stranger saying the call word is more often "
              "taken for them: " + "; ".join(f"voicesnap enroll {shlex.quote(n)} --speech-only" for n in mute), file=sys.stderr)
    if bare:
        print(f"note: {listed(bare)} enrolled before voicesnap kept the takes, so a call of theirs shouted far "
              "louder than they enrolled, or clipped by the microphone, is more often named to nobody: "
              + "; ".join(f"voicesnap enroll {shlex.quote(n)}" for n in bare), file=sys.stderr)
    if unlike:
        print(f"note: {listed(unlike)} gave no takes of 'slap' at enrollment, so a 'slap' is more often heard "
              "as their 'snap': " + "; ".join(f"voicesnap enroll {shlex.quote(n)} --contrast-only" for n in unlike),
              file=sys.stderr)
    if without:  # one such player keeps the whole table on the voiceprint (Voices._encoder_models)
        print(f"note: {listed(without)} enrolled without the installed speaker encoder, so voices are told "
              "apart by the older voiceprint (weak on real voices) until they enroll again: "
              + "; ".join(f"voicesnap enroll {shlex.quote(n)}" for n in without), file=sys.stderr)
    return 0


def _enrolled_as(name: str, data_dir: str | None) -> str:
    """The enrolled spelling of ``name`` (any case, as play and enroll take it: "CARA" is cara)."""
    from .. import voices as V

    if V.profile_path(name, data_dir).exists():
        return name
    return V.same_player(name, data_dir) or name


def _rename(args: argparse.Namespace) -> int:
    from .. import voices as V

    if V.check_name(args.old).casefold() != V.check_name(args.new).casefold():
        args.old = _enrolled_as(args.old, args.data_dir)  # (a change of case alone renames the one typed)
    old_path = V.profile_path(args.old, args.data_dir)
    new_path = V.profile_path(args.new, args.data_dir)
    if not old_path.exists():
        raise UserError(f"no player called {args.old!r}; see `voicesnap players list`")
    if new_path.exists() and new_path != old_path:
        raise UserError(f"a player called {args.new!r} already exists; forget or rename them first")
    other = V.same_player(args.new, args.data_dir)
    if other is not None and other != V.check_name(args.old):
        raise UserError(f"a player called {other!r} already exists, and names that differ only in case are one "
                        "player at the table; forget or rename them first, or pick another name")
    prof = V.load_profile(args.old, args.data_dir)
    prof.name = args.new
    V.save_profile(prof, args.data_dir)
    if new_path != old_path:
        old_path.unlink()
    print(f"Renamed {args.old} to {args.new}.")
    return 0


def _forget(args: argparse.Namespace) -> int:
    from .. import voices as V

    args.name = _enrolled_as(args.name, args.data_dir)
    path = V.profile_path(args.name, args.data_dir)
    if not path.exists():
        raise UserError(f"no player called {args.name!r}; see `voicesnap players list`")
    if not args.yes and sys.stdin is not None and sys.stdin.isatty():
        # a profile is minutes of a player's takes and talk: a slip of the name must not lose it
        try:
            answer = input(f"Forget {args.name}? Their voice data is deleted and they must enroll again [y/N] ")
        except EOFError:
            answer = ""
        if answer.strip().lower() not in ("y", "yes"):
            print(f"Kept {args.name}.")
            return 1
    path.unlink()
    print(f"Forgot {args.name}: their voice data ({path}) is deleted.")
    return 0


# identify's "why" in a player's words (the figures themselves are in _explain's terms)
_VOICE_TERM = {True: "how alike the voice is to the player's enrolled voice (1 is the same voice)",  # speaker encoder
               False: "how far the voice is from the player's voiceprint (lower is closer)"}
_TERMS = {
    "template": "how far the sound is from their recorded takes (lower is closer)",
    "combined": "voice and template together (lower is closer)",
}


def _explain(voices: object = None) -> str:
    """How to read identify's ratios and score, with the thresholds in force."""
    from .. import voices as V

    if getattr(voices, "encoder", None) is not None:
        return ("the speaker encoder is in use (for calls at least "
                f"{V.ENC_MIN_SNR:.0f} dB over the noise; otherwise the ratios have no 'encoder' and the "
                "voiceprint rule decides): 'encoder' = cosine similarity of the call's voice embedding to the "
                "player's enrolled takes'; 'voice' = (1 - that) / (1 - the player's threshold, the median "
                f"leave-one-out cosine of their takes, at most {V.ENC_CAP}), 1.0 = the boundary; 'template' = "
                "DTW distance / the player's threshold (how well the call fits their recorded call word); "
                "'voiceprint' = the older voice measure's ratio; 'combined' = the mean of voice and template. "
                f"The player with the lowest combined is named when voice is at most 1.0, template at most {V.R_LIMIT}, and "
                f"either combined at most {V.ACCEPT} (or at most 1.0 when voice is at most {V.STRONG_VOICE}) with template and "
                f"voiceprint averaging at most {V.ENC_WHAT_LIMIT}, or the voiceprint rule names the same player; "
                f"otherwise nobody. score = 1 - combined/2, so {V.ACCEPT_SCORE:.3f} is the acceptance line. "
                "Voices starting '<announcer>' are the game's own voice: when one fits best, the call is nobody's.")
    return ("ratios are distance / the player's own threshold, calibrated from their enrollment "
            "takes (1.0 = the boundary): 'template' = how well the call fits their recorded call "
            "word (DTW), 'voice' = how close the voice is to their voiceprint, 'combined' = the "
            f"mean of the two. A player is named when combined is at most {V.ACCEPT} (or voice at most "
            f"{V.STRONG_VOICE} and combined at most 1.0), template at most {V.R_LIMIT} and voice at most {V.V_LIMIT}; "
            f"otherwise nobody. score = 1 - combined/2, so {V.ACCEPT_SCORE:.3f} is the acceptance line. "
            "Voices starting '<announcer>' are the game's own voice: when one fits best, the call is nobody's.")


def _identify(args: argparse.Namespace) -> int:
    """identify; with --json, a file it cannot judge (missing, empty, not audio, no one enrolled) gives JSON
    with the reason in ``error`` as well as the line on stderr and exit status 2: it gave no JSON, so a
    program checking a folder of recordings with it got nothing to read, as replay's --json once did."""
    try:
        return _identify_file(args)
    except UserError as exc:
        if args.json:
            print(json.dumps({"file": str(args.file), "player": None, "error": str(exc)}))
        raise


def _identify_file(args: argparse.Namespace) -> int:
    from .. import voices as V
    from ..audio import narrowband_note, read_wav

    voices = V.load_voices(args.data_dir, on_damaged=lambda why: print(f"voicesnap players: {why}; left out",
                                                                        file=sys.stderr))
    if not voices.players:
        raise UserError("no players enrolled yet; enroll with `voicesnap enroll NAME` first")
    samples, rate = read_wav(args.file)
    narrow = narrowband_note(args.file, rate)
    if narrow:
        print(f"warning: {narrow}", file=sys.stderr)
    if args.channel is not None:
        if not 0 <= args.channel < samples.shape[1]:
            raise UserError(f"{args.file}: has {counted(samples.shape[1], 'channel')}; --channel counts from 0")
        mono = samples[:, args.channel]
    else:
        mono = samples.mean(axis=1).astype("int16") if samples.shape[1] > 1 else samples[:, 0]
    mono = _without_digital_silence(mono)
    att = voices.attribute(mono, rate)
    note = _more_than_a_call(mono, rate)
    if args.json:
        print(json.dumps({"file": str(args.file), "player": att.player, "score": round(att.score, 3),
                          "phrase": att.phrase,
                          "scores": {k: round(v, 3) for k, v in sorted(att.scores.items())},
                          "reason": att.reason, "note": note,
                          "ratios": {k: v for k, v in sorted(att.details.items())},
                          "explain": _explain(voices)}))
        return 0
    line = f"{V.ACCEPT_SCORE:.2f} is the acceptance line"
    if att.player:
        print(f"{args.file}: {att.player}" + (f", saying '{att.phrase}'" if att.phrase else "")
              + f" (score {att.score:.2f}; {line})")
    elif att.score >= V.ACCEPT_SCORE:  # over the line yet refused: "unknown voice" beside the line was untrue
        print(f"{args.file}: nobody enrolled: {att.reason or 'refused'} (the score {att.score:.2f} is over the "
              f"{V.ACCEPT_SCORE:.2f} acceptance line, but that alone does not name a player)")
    else:
        print(f"{args.file}: nobody enrolled (score {att.score:.2f}; {line})")
    if att.reason and (att.player or att.score < V.ACCEPT_SCORE):  # (said above otherwise)
        print(f"  why: {att.reason}")  # what a player asks when their call was named to nobody
    terms = dict(_TERMS, voice=_VOICE_TERM[getattr(voices, "encoder", None) is not None])
    if att.reason and any(term in att.reason for term in terms):
        print("  " + "; ".join(f"{term}: {gloss}" for term, gloss in terms.items() if term in att.reason)
              + " (--json adds how each is measured)")
    if note:
        print(f"  note: {note}")
    for name, sc in sorted(att.scores.items(), key=lambda kv: -kv[1]):  # ("alice 0.80": a bare number, heard)
        print(f"  {name + ':':17s} score {sc:.2f}")
    return 0


def _without_digital_silence(mono: np.ndarray) -> np.ndarray:
    """The recording without the exact zeros at its start and end, which an editor's "silence" or `sox ... pad`
    puts there and no microphone gives (one always carries some noise): a player's take of "snap" padded with
    half a second of them was named to nobody (voice 0.82 under 0.84), the same take unpadded to its player.
    All zeros: left as it is (nothing was heard)."""
    sound = np.flatnonzero(mono)
    return mono[sound[0]: sound[-1] + 1] if sound.size else mono


LONGEST_CALL = 3.0  # s of sound: "snap pool" takes are at most 2.5 s (voices.check_take); more is not one call


def _more_than_a_call(mono: np.ndarray, rate: int) -> str | None:
    """Why a recording that holds much more sound than one call (a sentence, a game) is a poor test of
    identify, which judges one call; None for a call-sized one."""
    from .. import features as F

    energy = F.frame_energy_db(F.frames(F.resample(mono, rate)))
    segs = F.voiced_segments(energy, F.vad_threshold(energy), min_frames=3, gap_frames=30)
    seconds = sum(e - s for s, e in segs) * F.HOP / F.RATE
    if seconds <= LONGEST_CALL:
        return None
    return (f"the file holds about {counted(round(seconds), 'second')} of sound, and identify judges one call (a word like 'snap', "
            "as said in the game): cut the file to one call and try again")


def run(args: argparse.Namespace) -> int:
    action = getattr(args, "action", None) or "list"
    return {"list": _list, "rename": _rename, "forget": _forget, "identify": _identify}[action](args)
