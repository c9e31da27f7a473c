"""Enroll a player's voice: say the call word 5 times, "snap pool" 3 times and "slap" 3 times after each beep.

Each take is trimmed to the spoken call and checked (too quiet, clipped, too
short or long, too noisy, unlike the other takes); a bad take is refused with
the reason and asked for again. Run it again for the same NAME to re-enroll.
--from-files does the same from recordings, without a microphone: a file may
hold one take or several separated by silence; files whose name contains
"pool" (or whose NAME.json sidecar says so) are "snap pool" takes.

For the call word "snap" it also asks for 3 takes of "slap" (files whose name
contains "slap"): a word that sounds like the call but is not one. A word
heard as "snap" that fits the player's "slap" better than any call take is
not a call.

With the speaker encoder installed, enrollment ends with a speech sample:
the player talks freely for about 20 seconds (files whose name contains
"speech"). One short call word says little about a voice; the sample lets
the game tell a stranger saying "snap" from the player.
--speech-only adds or replaces it for an enrolled player, keeping the takes;
--contrast-only does the same for the "slap" takes.

Every prompt is spoken as well as printed (--silent: printed only): when to
speak, how many takes are left, and why a take was refused. Ctrl-C stops with
nothing saved; a player enrolled before keeps their old profile.
"""
# (The docstring is enroll --help, read aloud by a screen reader: in code, the contrast words are
# voices.CONTRAST_WORDS and the speech sample's line is voices.ENC_SPEECH_CAP.)

from __future__ import annotations

import argparse
import json
import shlex
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, cast

import numpy as np

from ..errors import UserError
from ..text import aloud, counted

if TYPE_CHECKING:  # heavy modules are imported where they are used
    from ..encoder import Encoder
    from ..voices import Profile

RECORD_SECONDS = 2.5
DEVICE_GRACE = 3.0  # s past a beep's or a recording's length before the device is taken as stopped
MAX_RETRIES = 4
# Takes in a row that heard nothing at all before enrollment stops: a muted or wrong microphone, not a
# player's bad take (at about 10 s a spoken try, MAX_RETRIES alone kept a silent mic going 3.5 minutes).
SILENT_IN_A_ROW = 3
SPEECH_SECONDS = 20.0  # the speech sample asked for (live recording: this plus SPEECH_SPARE)
SPEECH_SPARE = 5.0
SPEECH_TRIES = 2  # live tries of the speech sample before enrolling without it
# why it is asked for comes first, said: by ear, twenty seconds of talk unexplained sounded like a mistake
SPEECH_PROMPT = ("Now a speech sample, so the game can tell you from a stranger saying the same word. After the "
                 "beep, talk for about twenty seconds in your normal voice: your name, your day, anything. "
                 "Everyone else, please stay quiet. To skip it, press Control C.")  # (kept short: said each time)
SPEECH_FILE_SECONDS = 60.0  # of speech files used: more adds time, not accuracy


def _good_takes(have: int) -> str:
    """ "only 3 good takes", or "no good takes" ("only 0 good takes" read oddly aloud)."""
    return f"only {counted(have, 'good take')}" if have else "no good takes"


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("name", help="the player's name (letters, digits, spaces, hyphens, underscores and dots)")
    parser.add_argument("--word", default="snap",
                        help="the player's call word or noise (default: snap; in Animal Snap a noise such as woof or moo)")
    parser.add_argument("--from-files", nargs="+", metavar="WAV", type=Path,
                        help="enroll from recordings instead of the microphone")
    parser.add_argument("--channel", type=int, metavar="N",
                        help="the player's own microphone channel on a multichannel input, counted from 0")
    parser.add_argument("--takes", type=int, default=5, metavar="N", help="takes of the call word (at least 5)")
    parser.add_argument("--pool-takes", type=int, default=3, metavar="N",
                        help="takes of 'snap pool' (at least 3; 0 with --no-pool)")
    parser.add_argument("--no-pool", action="store_true",
                        help="do not enroll 'snap pool' (the pool claim, in every variant: Animal Snap's too; "
                        "without its takes the player's pool claims are not named)")
    parser.add_argument("--contrast-takes", type=int, default=None, metavar="N",
                        help="takes of each word that sounds like the call but is not one ('slap' for 'snap'; "
                             "default 3, 0 skips them)")
    parser.add_argument("--no-speech", action="store_true",
                        help="skip the 20-second speech sample (strangers are then told apart less well)")
    parser.add_argument("--contrast-only", action="store_true",
                        help="add or replace an enrolled player's takes of 'slap', keeping the rest of the profile")
    parser.add_argument("--speech-only", action="store_true",
                        help="add or replace the speech sample of an enrolled player, keeping their takes")
    parser.add_argument("--silent", action="store_true", help="no spoken prompts, text only")
    parser.add_argument("--device", "--input", dest="device",
                        help="input device (name or index) for live enrollment (play's --input)")


def _phrase_for(path: Path, word: str, pool: str, contrast: tuple[str, ...] = ()) -> str | None:
    side = path.with_suffix(".json")
    if side.exists():
        try:
            texts = {s.get("text") for s in json.loads(side.read_text()).get("segments", [])}
        except (json.JSONDecodeError, AttributeError):
            texts = set()
        for phrase in (pool, word, *contrast):
            if texts == {phrase}:
                return phrase
    stem = path.stem.lower()
    return next((w for w in contrast if w in stem), None) or (pool if "pool" in stem else None)


def _mono(path: Path, channel: int | None) -> tuple[np.ndarray, int]:
    """A recording's samples (int16) on the player's channel, or mixed to mono."""
    from ..audio import read_wav

    samples, rate = read_wav(path)
    if channel is not None and samples.shape[1] > 1:
        if channel >= samples.shape[1]:
            raise UserError(f"{path}: has {samples.shape[1]} channels, --channel {channel} "
                            "does not exist (channels count from 0)")
        return samples[:, channel], rate
    return (samples.mean(axis=1).astype(np.int16) if samples.shape[1] > 1 else samples[:, 0]), rate


def _without_sidecars(paths: list[Path]) -> list[Path]:
    """``paths`` less each NAME.json beside a recording also given: ``--from-files takes/*`` passed the
    sidecars too, and the first was refused as "not a readable audio file" (they are read beside their
    recordings, by _phrase_for)."""
    recordings = {p.with_suffix("") for p in paths if p.suffix.lower() != ".json"}
    return [p for p in paths if p.suffix.lower() != ".json" or p.with_suffix("") not in recordings]


def _is_speech(path: Path) -> bool:
    return "speech" in path.stem.lower()


def _from_files(args: argparse.Namespace, word: str, pool: str | None, contrast: tuple[str, ...]) -> list:
    from .. import voices as V
    from ..audio import narrowband_note

    raw: list[tuple[str, np.ndarray, str]] = []
    for path in args.from_files:
        if _is_speech(path):
            continue  # the speech sample (_speech_from_files)
        mono, rate = _mono(path, args.channel)
        narrow = narrowband_note(path.name, rate)
        if narrow:
            print(f"  {narrow}")
        phrase = _phrase_for(path, word, pool or "\0", V.CONTRAST_WORDS.get(word, ())) or word
        if phrase in V.CONTRAST_WORDS.get(word, ()) and phrase not in contrast:
            print(f"  {path.name}: a take of '{phrase}', skipped (--contrast-takes 0)")
            continue
        if phrase not in (word, *contrast) and pool is None:
            print(f"  {path.name}: a pool take, skipped (--no-pool)")
            continue
        parts = V.split_takes(mono, rate)
        if not parts:
            print(f"  {path.name}: nothing was heard in this file, skipped")
            continue
        for k, part in enumerate(parts):
            src = path.name if len(parts) == 1 else f"{path.name} (take {k + 1})"
            raw.append((phrase, part, src))
    takes = []
    for phrase, part, src in raw:
        y, problems = V.check_take(part, phrase=phrase)
        if problems:
            print(f"  {src}: refused: {problems[0].reason}")
            continue
        takes.append(V.Take(phrase, y, src))
    return takes


Judge = Callable[[np.ndarray], tuple[dict | None, str | None]]  # audio -> (extra["speech"] record, why not)


def _speech_from_files(args: argparse.Namespace, judge: Judge, every: bool = False) -> dict | None:
    """The speech sample from the files named "*speech*" (``every``: all files), joined (at most
    SPEECH_FILE_SECONDS), as the profile's record; None without any."""
    from ..features import resample

    paths = [p for p in args.from_files if every or _is_speech(p)]
    if not paths:
        return None
    parts = []
    for p in paths:
        mono, rate = _mono(p, args.channel)
        parts.append(resample(mono[: int(SPEECH_FILE_SECONDS * rate)], rate))  # cut before the work
    sample, why = judge(np.concatenate(parts)[: int(SPEECH_FILE_SECONDS * 16000)])
    if why:
        raise UserError(f"the speech sample ({', '.join(p.name for p in paths)}) cannot be used: {why}; give "
                        "another recording, or leave it out (--no-speech)")
    return sample


def _speech_live(args: argparse.Namespace, beep: np.ndarray, judge: Judge) -> dict | None:
    """The live speech sample's record, or None when skipped (Ctrl-C) or after SPEECH_TRIES failed tries:
    the takes are kept."""
    import sounddevice as sd

    from ..features import to_float

    why: str | None = ""
    # --speech-only enrolls nothing: "enrolling with the takes alone" there read as a new enrollment under way
    alone = "the profile is kept as it was" if getattr(args, "speech_only", False) else "enrolling with the takes alone"
    try:
        say_prompt(SPEECH_PROMPT, args.silent)
        for _try in range(SPEECH_TRIES):
            try:
                _play(beep)
                print(f"  recording {SPEECH_SECONDS + SPEECH_SPARE:.0f} s (Ctrl-C skips it) ...", flush=True)
                rec = _record(SPEECH_SECONDS + SPEECH_SPARE, getattr(args, "input_device", args.device), args.channel,
                              getattr(args, "channel_plan", None))
            except sd.PortAudioError as exc:
                print(f"  the sound device stopped working ({exc}): no speech sample; {alone}. Add one later: "
                      f"voicesnap enroll {shlex.quote(args.name)} --speech-only")
                return None
            sample, why = judge(to_float(rec[:, 0]))
            if not why:
                say_prompt("Speech sample recorded.", args.silent)  # by ear: the recording's end, and that it was good
                return sample
            if _try + 1 < SPEECH_TRIES:  # the last try is not "again": nothing more is recorded
                say_prompt(f"Again please: {why}.", args.silent)
    except KeyboardInterrupt:
        sd.stop()
        print(f"\n  speech sample skipped; {alone}")
        print(f"  add a speech sample later: voicesnap enroll {shlex.quote(args.name)} --speech-only")  # as below
        return None
    say_prompt(f"No usable speech sample: {why}. {alone.capitalize()}.", args.silent)
    print(f"  add a speech sample later: voicesnap enroll {shlex.quote(args.name)} --speech-only")
    return None


def _speech_sample(args: argparse.Namespace, prof: Profile, enc: Encoder, beep: np.ndarray | None,
                   every: bool = False) -> dict | None:
    """The speech sample for ``prof`` (live after ``beep``, or from files), checked against its takes'
    embeddings (made by ``enc``): its ``extra["speech"]`` record, or None when there is none."""
    from .. import voices as V

    got = V.profile_embeddings(prof)
    calls = got[1][prof.word] if got is not None else np.zeros((0, 0), np.float32)

    def judge(x: np.ndarray) -> tuple[dict | None, str | None]:
        why = V.check_speech(x)
        if why:
            return None, why
        sample = V.speech_extra(enc, prof.name, x)
        return sample, V.speech_mismatch(calls, sample)

    if args.from_files:
        return _speech_from_files(args, judge, every)
    return _speech_live(args, cast(np.ndarray, beep), judge)  # callers pass the beep unless from files


def say_prompt(text: str, silent: bool, show: bool = True) -> None:
    """Print ``text`` (unless not ``show``: the caller prints its own) and speak it (unless ``silent``): a
    player may be setting up by ear. Spoken without its bracketed asides (``text.aloud``)."""
    if show:
        print(text, flush=True)
    if silent:
        return
    try:  # spoken prompt; text alone when speech or a device is missing
        from ..features import resample
        from ..speech import render

        pcm, rate = render(aloud(text))
        _play(resample(pcm, rate))
    except Exception:
        pass


def _microphone(args: argparse.Namespace) -> np.ndarray:
    """Check that the microphone can record; the beep that cues each take."""
    try:
        import sounddevice as sd
    except (ImportError, OSError) as exc:
        raise UserError(f"no audio input available ({exc}); enroll from recordings with "
                        "--from-files WAV...") from exc
    from .devices import route

    # what PortAudio opens (a PulseAudio source name too, as play's --input takes it); args.device, as the
    # player typed it, is what messages name
    args.input_device = route(args.device, "input")
    if args.channel is not None:
        from .devices import input_channels

        # a sound-server source upmixes: a channel past its own records exact silence, and three takes of
        # it ended "the microphone is muted, off or not the one you speak into" (play refuses it up front)
        has = input_channels(args.input_device)
        if has is not None and args.channel >= has:
            raise UserError(f"--channel {args.channel}, and the microphone ({args.device or 'the default input'}) "
                            f"has {counted(has, 'channel')}: {', '.join(map(str, range(has)))}; give the player's "
                            "own channel (voicesnap devices lists each input's channels), or choose another "
                            "input with --device")
    from ..pulse import channel_plan

    # a sound-server source: the player's channel counted as the source counts its mics, as in play
    args.channel_plan = channel_plan(args.input_device, _channels(args.channel))
    try:
        sd.check_input_settings(device=args.input_device, samplerate=16000,
                                channels=_channels(args.channel, args.channel_plan))
    except Exception as exc:
        if args.channel is not None:
            raise UserError(f"cannot record channel {args.channel} from the microphone ({exc}): it may have "
                            "fewer channels (they count from 0); check `voicesnap devices` and --channel") from exc
        raise UserError(f"cannot record from the microphone ({exc}); check `voicesnap devices`, "
                        "or enroll from recordings with --from-files WAV...") from exc
    return (0.3 * np.sin(2 * np.pi * 880 * np.arange(1600) / 16000)).astype(np.float32)


def _finish(seconds: float) -> None:
    """Wait for sounddevice's play() or rec() of ``seconds`` as sd.wait() does, but give up DEVICE_GRACE s
    after it should have ended: a device that stops delivering (unplugged, the sound server gone) left
    sd.wait() waiting for ever."""
    import sounddevice as sd

    deadline = time.monotonic() + seconds + DEVICE_GRACE
    stream = sd.get_stream()
    while stream.active:
        if time.monotonic() > deadline:
            stream.abort(ignore_errors=True)  # (stop() waits for a stream thread that may never return)
            stream.close(ignore_errors=True)
            raise sd.PortAudioError(f"nothing came through for {seconds + DEVICE_GRACE:.0f} s")
        time.sleep(0.02)
    sd.wait()


def _play(sound: np.ndarray) -> None:
    """A beep or a spoken prompt, at 16 kHz, to its end."""
    import sounddevice as sd

    sd.play(sound, 16000)
    _finish(len(sound) / 16000)


def _channels(channel: int | None, plan: Any = None) -> int:
    """Input channels to open: up to the player's own (``channel``), or 1 for the device's mono mix; as
    many as ``plan`` (``pulse.channel_plan``) says for a sound-server source."""
    return 1 if channel is None else plan.open if plan is not None else channel + 1


def _record(seconds: float, device: int | str | None, channel: int | None = None, plan: Any = None) -> np.ndarray:
    """``seconds`` of 16 kHz int16 from ``device``, as (frames, 1): only ``channel`` when given (the
    player's own mic: a 1-channel recording of a multichannel input is a mix of every mic at the table)."""
    import sounddevice as sd

    rec = np.zeros((int(seconds * 16000), _channels(channel, plan)), np.int16)  # sd.rec's own is np.empty: a
    sd.rec(out=rec, samplerate=16000, device=device)  # stream that dies early would leave stale memory judged
    _finish(seconds)
    if channel is not None and plan is not None:
        return rec[:, plan.order[channel]: plan.order[channel] + 1]
    return rec[:, -1:]  # (the last channel opened is the player's)


def _said(stop: UserError, args: argparse.Namespace) -> UserError:
    """``stop``, said too when enrolling live (not --silent): a player by ear heard the beeps end and then
    nothing, the reason printed only."""
    say_prompt(f"Enrollment stopped: {stop}.", args.silent or bool(args.from_files), show=False)
    return stop


def _device_failed(exc: Exception, args: argparse.Namespace, kept: int) -> UserError:
    """A microphone or speaker that stops mid-enrollment (unplugged, the sound server gone): what to do."""
    device = f" ({args.device})" if args.device is not None else ""
    return UserError(f"the sound device{device} stopped working during enrollment ({exc}); the {counted(kept, 'take')} "
                     f"recorded so far {'is' if kept == 1 else 'are'} not saved. Check it with 'voicesnap devices' and enroll again")


def _live(args: argparse.Namespace, word: str, pool: str | None, contrast: tuple[str, ...],
          only_contrast: bool = False, speech: bool = False) -> tuple[list, np.ndarray]:
    """The takes, recorded after beeps (``speech``: a speech sample follows, said in how long it takes)."""
    beep = _microphone(args)  # first: its message when sounddevice or the device is missing
    import sounddevice as sd

    from .. import voices as V

    plan = [] if only_contrast else [(word, args.takes)] + ([(pool, args.pool_takes)] if pool else [])
    plan += [(w, args.contrast_takes) for w in contrast]
    if not only_contrast:  # a first-time player by ear did not know whether it was a minute or ten
        say_prompt(_how_long(sum(n for _, n in plan), len(plan), speech), args.silent)
    takes: list[V.Take] = []
    for phrase, count in plan:
        if phrase in contrast:
            say_prompt(f"Now say '{phrase}' after each beep, {count} times. It sounds like '{word}' but is not a "
                 f"call: from your own voice the game learns to tell them apart.", args.silent)
        else:
            say_prompt(f"Say '{phrase}' after each beep, {count} times.", args.silent)
        got = made = tries = silent = rounds = 0
        while got < count:
            try:
                _play(beep)
                rec = _record(RECORD_SECONDS, args.input_device, args.channel, getattr(args, "channel_plan", None))
            except sd.PortAudioError as exc:
                raise _device_failed(exc, args, len(takes)) from exc
            y, problems = V.check_take(rec[:, 0], phrase=phrase)
            if problems:
                tries += 1
                silent = silent + 1 if problems[0].code == "silent" else 0
                stop = None
                if silent >= SILENT_IN_A_ROW:
                    stop = UserError(f"{silent} takes in a row heard nothing at all: the microphone"
                                     f"{f' ({args.device})' if args.device is not None else ''} is muted, off or "
                                     "not the one you speak into; check it (voicesnap devices, then --device N) "
                                     "and enroll again")
                elif tries > MAX_RETRIES * count:
                    stop = UserError(f"too many refused takes; the last one: {problems[0].reason}. "
                                     "Check the microphone and try again")
                if stop is not None:
                    raise _said(stop, args)
                say_prompt(f"Again please: {problems[0].reason}.", args.silent)
                continue
            got += 1
            made += 1
            silent = 0
            takes.append(V.Take(phrase, y, f"take {made}"))
            print(f"  take {got} of {count} ok")
            if got < count:  # by ear, beep followed beep: how many are left was only printed
                say_prompt(f"Got it, {count - got} more.", args.silent, show=False)
            if got == count and rounds < CONSISTENCY_ROUNDS:
                # Each take is checked against the others now, while the player is here: checked only
                # at the end, one cough among five takes threw the whole enrollment away.
                group = [t for t in takes if t.phrase == phrase]
                bad = V.check_consistency(group)
                if bad:
                    rounds += 1
                    for i in sorted(bad):
                        print(f"  {group[i].source}, beside the others: refused: {bad[i].reason}")
                    takes = [t for i, t in enumerate(group) if i not in bad] + \
                        [t for t in takes if t.phrase != phrase]
                    got -= len(bad)
                    say_prompt(f"{'One take' if len(bad) == 1 else f'{len(bad)} takes'} sounded unlike the "
                               f"others. Say '{phrase}' the way you will in the game, {len(bad)} more "
                               f"time{'s' if len(bad) > 1 else ''}.", args.silent)
    return takes, beep


# Seconds a live enrollment spends, for the line that says how long it takes. Timed on virtual devices
# (2026-12-07): 11 takes and their 3 prompts took 54 s, start to end; the speech sample is its spoken
# prompt (about 13 s), SPEECH_SECONDS + SPEECH_SPARE of recording and its check.
SECONDS_A_TAKE = 3.5
SECONDS_A_PROMPT = 5.0
SECONDS_SPEECH = 45.0


def _how_long(takes: int, words: int, speech: bool) -> str:
    """The line said before the first beep: roughly how long enrollment takes, and what it holds."""
    seconds = takes * SECONDS_A_TAKE + words * SECONDS_A_PROMPT + (SECONDS_SPEECH if speech else 0.0)
    minutes = max(1, round(seconds / 60))
    length = "about a minute" if minutes == 1 else f"about {_NUMBER_WORDS.get(minutes, str(minutes))} minutes"
    return (f"This takes {length}: {takes} short takes, each after a beep"
            + (", then twenty seconds of talk." if speech else "."))


_NUMBER_WORDS = {2: "two", 3: "three", 4: "four", 5: "five", 6: "six", 7: "seven", 8: "eight", 9: "nine", 10: "ten"}

CONSISTENCY_ROUNDS = 2  # times a phrase's takes are checked and the odd ones asked for again (then: the end's check)


def _speech_only(args: argparse.Namespace, name: str) -> int:
    """Add or replace an enrolled player's speech sample, keeping their takes."""
    from .. import encoder as E
    from .. import voices as V

    if args.no_speech:
        raise UserError("--speech-only records a speech sample; --no-speech leaves it out: give one of them")
    takes_options = [opt for opt, given in (("--word", args.word != "snap"), ("--takes", args.takes != 5),
                                            ("--pool-takes", args.pool_takes != 3), ("--no-pool", args.no_pool),
                                            ("--contrast-takes", args.contrast_takes is not None))
                     if given]
    if takes_options:
        raise UserError(f"--speech-only keeps the takes, so {', '.join(takes_options)} would change nothing: "
                        f"leave them out, or enroll again in full: voicesnap enroll {shlex.quote(name)} ...")
    prof = V.load_profile(name, args.data_dir)
    if args.channel is None:
        args.channel = prof.channel  # the player's own mic in a multichannel recording
    enc = E.load_encoder()
    if enc is None:
        raise UserError("a speech sample needs the speaker encoder: voicesnap models download encoder, "
                        f"then voicesnap enroll {shlex.quote(name)}")
    got = V.profile_embeddings(prof)
    if got is None or got[0] != enc.fingerprint or prof.word not in got[1]:
        raise UserError(f"{name} was enrolled without the installed speaker encoder, so the sample cannot be "
                        f"compared with their takes: enroll again in full: voicesnap enroll {shlex.quote(name)}")
    print(f"Adding a speech sample to {name}'s profile (their takes are kept)")
    # from files, no takes are given here: every file is talk
    sample = _speech_sample(args, prof, enc, None if args.from_files else _microphone(args), every=True)
    if sample is None:
        print(f"{name}'s profile is unchanged")
        return 1
    V.set_speech(prof, enc, sample)
    path = V.save_profile(prof, args.data_dir)
    print(f"Added {prof.extra['speech']['seconds']:.0f} s of speech to {name}; profile {path}")
    return 0


def _consistent(takes: list, phrases: list[str]) -> list:
    """The takes of ``phrases`` that are like the others of their phrase: one unlike them (a different
    word, a cough) is refused with the reason."""
    from .. import voices as V

    kept = []
    for phrase in phrases:
        group = [t for t in takes if t.phrase == phrase]
        bad = V.check_consistency(group)
        for i, t in enumerate(group):
            if i in bad:
                print(f"  {t.source}: refused: {bad[i].reason}")
            else:
                kept.append(t)
    return kept


def _contrast_only(args: argparse.Namespace, name: str) -> int:
    """Add or replace an enrolled player's takes of the contrast words ("slap"), keeping the rest."""
    from .. import voices as V

    if args.speech_only:
        raise UserError("--contrast-only and --speech-only each change one part of a profile: run one, then the other")
    takes_options = [opt for opt, given in (("--word", args.word != "snap"), ("--takes", args.takes != 5),
                                            ("--pool-takes", args.pool_takes != 3), ("--no-pool", args.no_pool),
                                            ("--no-speech", args.no_speech))
                     if given]
    if takes_options:
        raise UserError(f"--contrast-only keeps the call's takes and the speech sample, so {', '.join(takes_options)} "
                        f"would change nothing: leave them out, or enroll again in full: voicesnap enroll {shlex.quote(name)} ...")
    prof = V.load_profile(name, args.data_dir)
    words = V.CONTRAST_WORDS.get(prof.word, ())
    if not words:
        raise UserError(f"{name}'s call '{prof.word}' has no contrast word to enroll (only 'snap' has one: 'slap')")
    if args.contrast_takes is None:
        args.contrast_takes = V.CONTRAST_TAKES
    if args.contrast_takes < 2:
        raise UserError("--contrast-only needs --contrast-takes of at least 2 (the takes are checked against each other)")
    if args.channel is None:
        args.channel = prof.channel  # the player's own mic in a multichannel recording
    print(f"Adding takes of {', '.join(repr(w) for w in words)} to {name}'s profile (the rest is kept)")
    if args.from_files:
        given = [f for f in args.from_files if _phrase_for(f, prof.word, "\0", words) in words]
        for f in args.from_files:
            if f not in given:
                print(f"  {f.name}: not a take of {' or '.join(repr(w) for w in words)} (by its name), skipped")
        takes = _from_files(argparse.Namespace(**{**vars(args), "from_files": given}), prof.word, None, words)
    else:
        takes, _beep = _live(args, prof.word, None, words, only_contrast=True)
    kept = _consistent(takes, list(words))
    for w in words:
        have = sum(1 for t in kept if t.phrase == w)
        if have < 2:
            raise _said(UserError(f"{_good_takes(have)} of '{w}', 2 or more needed; "
                                  + (f"give recordings with '{w}' in their file name" if args.from_files
                                     else "run it again")), args)
    prof.extra["contrast"] = V.contrast_extra(kept)
    path = V.save_profile(prof, args.data_dir)
    counts = ", ".join(f"{len(ts)} of '{w}'" for w, ts in prof.extra["contrast"].items())
    print(f"Added {counts} (no call but in Slapjack) to {name}; profile {path}")
    return 0


def run(args: argparse.Namespace) -> int:
    from .. import voices as V

    name = V.check_name(args.name)
    from ..files import writable_folder

    writable_folder(V.players_dir(args.data_dir), "the players folder")  # before the takes, not after
    other = V.same_player(name, args.data_dir)
    if other is not None:
        raise UserError(f"{other} is enrolled already, and names that differ only in case are one player at the "
                        f"table; to enroll them again: voicesnap enroll {shlex.quote(other)} (or pick another name)")
    if args.channel is not None and args.channel < 0:
        raise UserError("--channel counts from 0")
    if args.from_files:
        args.from_files = _without_sidecars(args.from_files)
    existed = V.profile_path(name, args.data_dir).exists()
    try:
        return _enroll(args, name, existed)
    except KeyboardInterrupt:  # main says "stopped."; what became of the profile was left to guess
        print("\n  Enrollment stopped: nothing was saved; " + (f"{name}'s profile from before is kept, unchanged"
              if existed else f"{name} is not enrolled"), flush=True)
        raise


def _enroll(args: argparse.Namespace, name: str, existed: bool) -> int:
    """Enroll ``name`` (``existed``: again, replacing their profile), in full or one part of it."""
    from .. import voices as V

    if args.contrast_only:
        return _contrast_only(args, name)
    if args.speech_only:
        return _speech_only(args, name)
    from ..vocabulary import SNAP, game_word, spoken_word

    word = spoken_word(str(args.word))
    if not word:
        raise UserError("--word must not be empty")
    why = None if word == SNAP else game_word(word)
    if why is not None:  # ("slap" is asked for as a contrast take; "snap pool" as the pool call)
        raise UserError(f"--word {args.word!r}: {why}, not a player's own call; give the word you call "
                        "(snap, the default, or an Animal Snap noise such as woof)")
    if args.takes < V.MIN_CALL_TAKES:
        raise UserError(f"--takes must be at least {V.MIN_CALL_TAKES} (the thresholds are learnt from them)")
    pool = None if args.no_pool or args.pool_takes == 0 else V.pool_phrase(word)
    if pool and args.pool_takes < V.MIN_POOL_TAKES:
        raise UserError(f"--pool-takes must be at least {V.MIN_POOL_TAKES}, or 0 with --no-pool")
    if args.contrast_takes is None:
        args.contrast_takes = V.CONTRAST_TAKES
    if args.contrast_takes < 0 or 0 < args.contrast_takes < 2:
        raise UserError("--contrast-takes must be at least 2 (the takes are checked against each other), "
                        "or 0 to skip them")
    contrast = V.CONTRAST_WORDS.get(word, ()) if args.contrast_takes else ()
    print(f"Enrolling {name} (call: '{word}'{f', pool call: {pool!r}' if pool else ''})")
    if existed:  # said before the first take, not only "Re-enrolled" after the last
        say_prompt(f"{name} is enrolled already: " + (
            "these recordings replace the old profile if enough of them are good; if not, it is kept"
            if args.from_files else "the new takes replace the old profile once all are done; stop before then, "
            "with Control C, and the old one is kept") + ".", args.silent or bool(args.from_files))
    from .. import encoder as E

    enc = None if args.no_speech else E.load_encoder()
    if args.from_files:
        takes = _from_files(args, word, pool, contrast)
        if any(_is_speech(p) for p in args.from_files) and enc is None:
            print("  the speech sample is not used: " + ("--no-speech" if args.no_speech else
                  "no speaker encoder is installed (voicesnap models download encoder, then enroll again)"))
    else:
        takes, beep = _live(args, word, pool, contrast, speech=enc is not None)

    kept = _consistent(takes, [word] + ([pool] if pool else []) + list(contrast))
    need = [(word, args.takes)] + ([(pool, args.pool_takes)] if pool else [])
    for phrase, count in need:
        have = sum(1 for t in kept if t.phrase == phrase)
        if have < count:
            hint = ("give more recordings with --from-files" if args.from_files
                    else "run the enrollment again")
            kept_note = f"; {name}'s profile from before is kept, unchanged" if existed else ""
            raise _said(UserError(f"{_good_takes(have)} of '{phrase}', {count} needed{kept_note}; {hint}"), args)
    others = [t for t in kept if t.phrase in contrast]
    profile = V.build_profile(name, word, [t for t in kept if t.phrase not in contrast], channel=args.channel)
    words = [w for w in contrast if sum(t.phrase == w for t in others) >= 2]
    if words:
        profile.extra["contrast"] = V.contrast_extra([t for t in others if t.phrase in words])
    for w in contrast:
        if w not in words:
            print(f"  no takes of '{w}': a '{w}' is then told from a '{word}' less well; give 2 or more "
                  f"recordings with '{w}' in their file name, now or later with --contrast-only" if args.from_files
                  else f"  fewer than 2 good takes of '{w}': enrolled without them (add them later: "
                       f"voicesnap enroll {shlex.quote(name)} --contrast-only)")
    # the speech sample comes once the takes are good: it must sound like the person who said them
    if enc is not None:
        sample = _speech_sample(args, profile, enc, None if args.from_files else beep)
        if sample is not None:
            V.set_speech(profile, enc, sample)
        elif args.from_files:
            print("  no speech sample: give a recording of the player talking (about 20 s) with 'speech' in "
                  "its file name, so that strangers saying the call word are told apart better")
    path = V.save_profile(profile, args.data_dir)
    counts = ", ".join(f"{n} of '{ph}'" for ph, n in profile.extra["takes"].items())
    counts += "".join(f", {len(ts)} of '{w}' (no call but in Slapjack)" for w, ts in profile.extra.get("contrast", {}).items())
    if "speech" in profile.extra:
        counts += f", {profile.extra['speech']['seconds']:.0f} s of speech"
    print(f"{'Re-enrolled' if existed else 'Enrolled'} {name}: {counts}; profile {path}")
    if sys.stdout.isatty() and not args.silent and not args.from_files:
        try:
            say_prompt(f"Thank you, {name}. You are enrolled.", args.silent)
        except KeyboardInterrupt:  # saved already: not "nothing was saved"
            pass
    return 0
