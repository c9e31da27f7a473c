"""Show what the game hears: every call and command with its onset, end, confidence and player.

Live from the microphone (Ctrl-C to stop), or from a WAV file as fast as
possible (--file). Times are seconds on the audio clock (the input stream's
sample position), the same clock the referee judges ties on. Use it to check a
set-up, or to try the spotter on your own recordings.
"""

from __future__ import annotations

import argparse
import collections
import dataclasses
import sys
from typing import Any, Callable, Iterable

import numpy as np

from ..errors import UserError
from ..text import counted
from ..vocabulary import COMMAND_PREFIX


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--engine", choices=["auto", "vosk", "enrolled", "keyword", "combined"], default="auto",
                        help="auto (default): what 'voicesnap play' would use on one microphone with the "
                        "models and players installed (combined, else keyword, else enrolled); with no one "
                        "enrolled, Vosk alone (else the keyword model); "
                        "vosk: the English keyword spotter (needs a model); enrolled: match the "
                        "players' enrolled calls (needs 'voicesnap enroll'); keyword: the keyword model "
                        "(needs 'voicesnap models download keyword'); combined: Vosk, and the keyword model "
                        "when it is installed, hear the call, the enrollment says who, and two players "
                        "calling at once on one mic are both shown (the engine 'voicesnap play' uses)")
    parser.add_argument("--file", "--input-file", dest="file", metavar="WAV",
                        help="listen to this recording instead of the microphone (play's --input-file)")
    parser.add_argument("--json", action="store_true", help="one JSON record per line: each detection, "
                        "and each call-like sound judged another word (type \"refusal\", with the reason)")
    parser.add_argument("--model", metavar="PATH", help="Vosk model folder (default: $VOICESNAP_VOSK_MODEL, "
                        "else the data dir's models/)")
    parser.add_argument("--device", "--input", dest="device",
                        help="input device number or name (see 'voicesnap devices'; play's --input)")
    parser.add_argument("--channels", default="1", metavar="N|NAME=N,...",
                        help="microphone channels to open (default 1), heard as one mix as play hears a "
                        "microphone (a file's channels are all heard so); or one microphone per player as play "
                        "takes it, Alice=0,Bob=1: each call is then heard on its player's own channel and "
                        "named by it, with the spotters play builds for that table")
    parser.add_argument("--channel", type=int, help="listen to this channel only (default: every channel, as one mix)")
    parser.add_argument("--variant", default=None,
                        help="hear as 'voicesnap play --variant' does: slapjack (each player's 'slap' a call), "
                        "silent (slams, with --channels Alice=0,Bob=1), animal (the players' noises), ... "
                        "(default: the calls every variant shares)")
    parser.add_argument("--no-pool", action="store_true",
                        help="there is no pool: 'snap' is final at once instead of waiting for 'pool'")
    parser.add_argument("--realtime", action="store_true", help="with --file: play it at real speed")
    parser.add_argument("--seconds", type=float, help="stop after this much audio")
    parser.add_argument("--record", metavar="WAV", help="also write exactly what was heard to this WAV")


def _mapping(text: str) -> tuple[int, dict[str, int]]:
    """--channels: a count of channels to open, or play's player=channel map (and the channels it needs)."""
    text = str(text).strip()
    if text.isdigit():
        if int(text) < 1:
            raise UserError("--channels 0: open at least one channel (default 1)")
        return int(text), {}
    from .play import parse_channels

    names = tuple(part.partition("=")[0].strip() for part in text.split(","))
    if not all(names) or "=" not in text:
        raise UserError(f"--channels {text!r}: give how many channels to open (e.g. 2) or one per player, as "
                        "play takes it (Alice=0,Bob=1)")
    mapping = parse_channels(text, names)
    return max(mapping.values()) + 1, mapping


def _play_spotter(args: argparse.Namespace, players: tuple[str, ...], mapping: dict[str, int]) -> tuple[Any, str]:
    """The spotter ``voicesnap play`` builds for these players (``cli.play.build_spotter``) and its engine's
    name: with ``mapping`` (play's --channels) each mic heard on its own, the channel naming the caller;
    without, one mic named by the enrolled voices, with ``--variant``'s own calls (Slapjack's "slap",
    Animal Snap's noises)."""
    from ..files import data_dir
    from .play import build_spotter

    engine = args.engine
    if mapping and engine not in ("auto", "vosk", "keyword"):
        raise UserError(f"--engine {engine} names the caller from enrolled voices on one microphone; with "
                        "one microphone per player (--channels Alice=0,Bob=1) the channel names them: use "
                        "--engine auto, vosk or keyword")
    if not players:
        raise UserError(f"--variant {args.variant} hears calls as a game does, naming them from the players' "
                        "enrolled voices, and no one is enrolled: enroll with 'voicesnap enroll NAME', or give "
                        "each player a mic (--channels Alice=0,Bob=1)")
    spotter, name = build_spotter(engine, args, data_dir(getattr(args, "data_dir", None)), players, mapping, [],
                                  _variant(args), pool_exists=lambda: not args.no_pool)
    if spotter is None:
        raise UserError("nothing here can hear " + ("per-player microphones: install the Vosk model or the "
                        "keyword model" if mapping else "calls: install the Vosk model") + " (voicesnap models download)")
    return spotter, name


def _variant(args: argparse.Namespace) -> str:
    from .. import variants

    return variants.get(args.variant).variant if args.variant else "classic"


def _live_mic(device: int | str | None, channels: int, owners: dict[int, str] | None = None) -> Any:
    """The microphone as play hears it (voicesnap.live.LiveInput): a device that goes away, or goes
    silent, is said on stderr and reopened, rather than leaving listen waiting without a word."""
    from ..audio import MicSource
    from ..live import LiveInput

    from ..pulse import channel_plan

    plan = channel_plan(device, channels)  # a sound-server source: its own k-th mic as channel k, as in play

    def open_mic() -> MicSource:
        return MicSource(device=device, rate=16000, channels=channels, plan=plan).open()

    def report(text: str) -> None:
        print(f"voicesnap listen: {text}", file=sys.stderr, flush=True)

    # (a player's mic silent while the others carry sound, named as play names it: the check before a game)
    return LiveInput(open_mic, report, meanwhile="nothing is heard until it is back", owners=owners,
                     channel_meanwhile="a game would pause")


def _profiles(args: argparse.Namespace) -> list[Any]:
    from .. import voices

    try:
        # a damaged profile is left out, and said: it must not stop listening to everyone else
        return voices.load_all(getattr(args, "data_dir", None),
                               on_damaged=lambda why: print(f"voicesnap listen: {why}; left out", file=sys.stderr))
    except UserError:
        raise
    except Exception:  # a damaged profile must not stop 'listen' with the vosk engine
        return []


def _vosk_spotters(args: argparse.Namespace, channels: Iterable[int | None]) -> list[Any]:
    try:
        import vosk  # noqa: F401
    except ImportError as exc:
        raise UserError(f"the vosk package is not installed ({exc}); pip install vosk") from exc
    from .. import models
    from ..spotters.vosk_spotter import VoskSpotter, load_model

    path = models.find_model("en", args.model, getattr(args, "data_dir", None))
    model = load_model(path)
    return [VoskSpotter(model, channel=ch, pool_exists=not args.no_pool) for ch in channels]


def _combined_spotters(args: argparse.Namespace, profiles: list[Any], channel: int | None = None) -> list[Any]:
    if not profiles:
        raise UserError("no players are enrolled, so the combined engine cannot say who called; "
                        "enroll with 'voicesnap enroll NAME', or use --engine vosk")
    from ..spotters.combined import CombinedSpotter
    from ..spotters.enrolled import EnrolledSpotter

    vosk = _vosk_spotters(args, [channel])[0]  # None: the mix of all channels
    from ..keyword import load_keyword_model

    model = load_keyword_model(None, getattr(args, "data_dir", None))
    keyword = _keyword_spotters(args, [channel], model)[0] if model is not None else None
    return [CombinedSpotter(vosk, EnrolledSpotter(profiles, pool_exists=not args.no_pool), keyword=keyword)]


def _keyword_spotters(args: argparse.Namespace, channels: Iterable[int | None], model: Any = None) -> list[Any]:
    from ..keyword import load_keyword_model
    from ..spotters.keyword import KeywordSpotter

    if model is None:
        model = load_keyword_model(None, getattr(args, "data_dir", None), required=True)
    return [KeywordSpotter(model, channel=ch, pool_exists=not args.no_pool) for ch in channels]


def _auto_engine(args: argparse.Namespace, profiles: list[Any]) -> str:
    """The engine ``voicesnap play`` would pick (``cli.play.build_spotter``'s "auto"), so that listen
    shows what the game hears: Vosk with the keyword model and the enrollment saying who, else the
    keyword model, else the enrollment alone. With no one enrolled there is no one to name from a voice:
    the first installed of Vosk and the keyword model, as play hears per-player microphones."""
    from .. import models

    data = getattr(args, "data_dir", None)

    def installed(kind: str, option: str | None) -> bool:
        """Found, without loading it (the engine chosen loads it); one the player named that is not
        there is an error, never listened without."""
        try:
            models.find_model(kind, option, data)
            return True
        except models.ModelError:
            if models.named(kind, option):
                raise
            return False

    vosk, keyword = installed("en", args.model), installed("keyword", None)
    if profiles:
        if vosk:
            return "combined"
        return "keyword" if keyword else "enrolled"
    if vosk or not keyword:
        return "vosk"  # with neither, its error says how to install a model
    return "keyword"


def _enrolled_spotters(args: argparse.Namespace, profiles: list[Any]) -> list[Any]:
    from ..spotters import enrolled

    if not profiles:
        raise UserError("no players are enrolled, so the enrolled engine has nothing to match; "
                        "enroll with 'voicesnap enroll NAME', or use --engine vosk")
    try:
        return [enrolled.EnrolledSpotter(profiles, pool_exists=not args.no_pool)]
    except TypeError:  # an enrolled engine without the pool hint
        return [enrolled.EnrolledSpotter(profiles)]


class _Recent:
    """The last seconds of input, to attribute a detection to a player from its audio."""

    def __init__(self, seconds: float = 8.0) -> None:
        self.seconds = seconds
        self.chunks: collections.deque[Any] = collections.deque()

    def add(self, chunk: Any) -> None:
        self.chunks.append(chunk)
        while self.chunks and (chunk.end - self.chunks[0].end) / chunk.rate > self.seconds:
            self.chunks.popleft()

    def span(self, onset: float, end: float, channel: int) -> tuple[np.ndarray, int] | None:
        if not self.chunks:
            return None
        rate = self.chunks[0].rate
        a, b = int((onset - 0.05) * rate), int((end + 0.05) * rate)
        parts = []
        for c in self.chunks:
            if c.end <= a or c.start >= b:
                continue
            ch = min(channel, c.channels - 1)
            parts.append(c.samples[max(a - c.start, 0) : b - c.start, ch])
        return (np.concatenate(parts), rate) if parts else None


def _attributor(
    profiles: list[Any], data: str | None
) -> Callable[[np.ndarray, int], tuple[str | None, float]] | None:
    if not profiles:
        return None
    try:
        from .. import voices

        # With the announcer's own voice as a rival, so its words are never a player's.
        matcher = voices.load_voices(data, on_damaged=lambda why: None)  # (said once, by _profiles)
    except Exception:
        return None

    def who(x: np.ndarray, rate: int) -> tuple[str | None, float]:
        result = matcher.attribute(x.astype(np.float32) / 32768.0, rate)
        return result.player, result.score

    return who


KEYWORD_LEAD_S = 0.4  # s into a stream before which the keyword model can miss a call (``_early_sound``)


def _early_sound(samples: np.ndarray, rate: int) -> float | None:
    """When a file's first sound begins (s), if before ``KEYWORD_LEAD_S``; else None. The keyword model
    scores a call from the audio before it, too, and a stream's first 0.4 s have too little: a player's
    own take of "snap" that begins 0.3 s in (as enrollment's takes do) was refused ("the keyword model
    scored it 0.42") or not heard at all, where the same take beginning 0.45 s in was heard. In a game the
    microphone is open long before anyone calls, so only a file meets this."""
    from .. import features as F
    from ..audio import to_mono

    mono = to_mono(samples[: int(rate * (KEYWORD_LEAD_S + 0.5))])[:, 0]
    energy = F.frame_energy_db(F.frames(F.resample(mono, rate)))
    if energy.size == 0:
        return None
    segs = F.voiced_segments(energy, F.vad_threshold(energy), min_frames=3, gap_frames=30)
    first = segs[0][0] * F.HOP / F.RATE if segs else None
    return first if first is not None and first < KEYWORD_LEAD_S else None


def _hears_by_keyword(engine: str, spotters: list[Any]) -> bool:
    """Whether the keyword model judges calls here (alone, in the combined engine, on per-player mics)."""
    return "keyword" in engine or any(getattr(s, "keyword", None) is not None for s in spotters)


def _line(det: Any) -> str:
    """One detection, each number named: "conf 0.50  ch 0  player alice 0.72" and "player -" were read aloud
    by a screen reader as bare numbers and "dash"."""
    heard = f", heard at {det.detected_at:.3f} s" if det.detected_at is not None else ""
    player = det.player or "nobody"
    score = f", voice match {det.score:.2f}" if det.score is not None else ""
    return (f"{det.word:<16} onset {det.onset:9.3f} s, end {det.end:9.3f} s, confidence {det.confidence:.2f}, "
            f"channel {det.channel}, player {player}{score}{heard}")


def _check_run(args: argparse.Namespace) -> None:
    """Mistakes said before anything is heard: a --record folder was found only at the end, after a whole file
    had been listened to (with a temporary file's name in the message), and --seconds -5 listened to nothing
    and said so, as if the file held nothing."""
    from pathlib import Path

    if args.seconds is not None and not args.seconds > 0:
        raise UserError(f"--seconds {args.seconds:g}: give how many seconds of audio to hear, more than 0")
    if args.record:
        record = Path(args.record)
        if record.is_dir():
            raise UserError(f"--record {args.record} is a folder; give the WAV file to write, e.g. "
                            f"{record / 'heard.wav'}")
        if args.file and record.exists() and record.resolve() == Path(args.file).resolve():
            raise UserError(f"--record {args.record} is the file being listened to; give another file name")


def run(args: argparse.Namespace) -> int:
    from .. import events
    from ..audio import AudioChunk, FileSource, RecordingTap, narrowband_note, to_mono
    from ..spotters import Detection, Refusal, take_refusals

    _check_run(args)
    profiles = _profiles(args)
    n_open, mapping = _mapping(args.channels)
    if mapping and args.channel is not None:
        raise UserError("--channel hears one channel; --channels Alice=0,Bob=1 already hears each player's "
                        "own: drop one of them")
    if args.file:
        source: Any = FileSource(args.file, realtime=args.realtime)
        channels = source.channels
        mic = None
        narrow = narrowband_note(args.file, source.rate)
        if narrow:
            print(f"warning: {narrow}", file=sys.stderr)
        if mapping and n_open > channels:
            far = max(mapping, key=lambda p: mapping[p])
            raise UserError(f"--channels gives {far} channel {mapping[far]}, and {args.file} has "
                            f"{counted(channels, 'channel')}: {', '.join(map(str, range(channels)))}")
        if not mapping and n_open not in (1, channels):
            raise UserError(f"--channels is how many microphone channels to open; {args.file} has "
                            f"{counted(channels, 'channel')} of its own, all heard (one alone: --channel N)")
    else:
        if args.realtime:
            raise UserError("--realtime only applies to --file (the microphone is always real time)")
        from .devices import route

        device = route(args.device, "input")  # (a PulseAudio source name too, as play's --input takes it)
        if mapping:
            from .devices import input_channels

            has = input_channels(device)  # (a sound-server source upmixes: a channel past its own is silence)
            if has is not None and has < n_open:
                far = max(mapping, key=lambda p: mapping[p])
                raise UserError(f"--channels gives {far} channel {mapping[far]}, and the input has "
                                f"{counted(has, 'channel')}: {', '.join(map(str, range(has)))}")
        mic = _live_mic(device, n_open, {c: p for p, c in mapping.items()} if mapping else None)
        channels = n_open
        source = mic
    if args.channel is not None and not 0 <= args.channel < channels:
        raise UserError(f"--channel {args.channel} does not exist: the input has {counted(channels, 'channel')}")
    # One channel is heard: the mix of all, as play hears a microphone without --channels, or --channel N,
    # made here (``view``) for every engine. The enrolled engine hears each channel it is given on its own
    # and keeps a call on its loudest: it showed every call of a stereo recording twice, and with --channel 1
    # none of a channel 10 dB under channel 0 (Vosk and the keyword model heard all six).
    view = not mapping and channels > 1
    wanted: list[int | None] = [None] if view else [args.channel]

    if mapping or ((args.variant or (args.engine == "auto" and profiles)) and args.channel is None):
        # what play builds (its speech gate too), not a look-alike: for the mics' players, or the enrolled ones
        spotter, args.engine = _play_spotter(args, tuple(mapping) or tuple(p.name for p in profiles), mapping)
        spotters = [spotter]
    else:
        if args.engine == "auto":
            args.engine = _auto_engine(args, profiles)
        if args.engine == "enrolled":
            spotters = _enrolled_spotters(args, profiles)
        elif args.engine == "combined":
            spotters = _combined_spotters(args, profiles, wanted[0])
        elif args.engine == "keyword":
            spotters = _keyword_spotters(args, wanted)
        else:
            spotters = _vosk_spotters(args, wanted)
        if args.engine in ("vosk", "combined"):  # the command gate, as in a game (play's build_spotter)
            from ..spotters.command_gate import CommandGated

            spotters = [CommandGated(s) for s in spotters]
    early = _early_sound(source.samples, source.rate) if args.file else None
    if early is not None and _hears_by_keyword(args.engine, spotters):
        print(f"warning: {args.file}: its first sound begins {early:.2f} s in, and the keyword model can miss a "
              f"call in a recording's first {KEYWORD_LEAD_S:g} s (in a game the microphone is open long before "
              f"anyone calls); put silence before it: sox IN.wav OUT.wav pad 0.5 0", file=sys.stderr)
    who = (_attributor(profiles, getattr(args, "data_dir", None))
           if args.engine in ("vosk", "keyword") and not mapping and not args.variant else None)
    recent = _Recent()
    recorder = RecordingTap(args.record) if args.record else None

    shown = [0]

    def show(dets: list[Detection]) -> None:
        for det in sorted(dets, key=lambda d: d.onset):
            if who is not None and det.player is None:
                span = recent.span(det.onset, det.end, det.channel)
                if span is not None:
                    player, score = who(*span)
                    det = Detection(det.word, det.onset, det.end, det.confidence, det.channel, player, score,
                                    det.engine, det.detected_at)
            if view and args.channel is not None:  # (heard as the view's one channel)
                det = dataclasses.replace(det, channel=args.channel)
            print(events.dumps(det) if args.json else _line(det), flush=True)
            shown[0] += 1

    def refused(items: list[Refusal]) -> None:
        """Near misses the engine judged another word: why a call was not shown."""
        for r in items:
            if view and args.channel is not None:
                r = dataclasses.replace(r, channel=args.channel)
            label = "(not a command)" if r.word.startswith(COMMAND_PREFIX + " ") else "(not a call)"
            print(events.dumps(r) if args.json else f"{label:<16} {r.explain()}", flush=True)

    heard = 0.0
    chunks = iter(source)  # (the microphone opens with the first chunk asked for)
    try:
        for chunk in chunks:
            if mic is not None and not heard and not args.json:
                mics = (", ".join(f"{p} on channel {c}" for p, c in mapping.items()) if mapping
                        else counted(channels, "channel"))  # (mapped: the channels opened stop at the highest)
                print(f"listening on the microphone ({mics}, {args.engine}); Ctrl-C to stop",
                      file=sys.stderr, flush=True)
            if recorder is not None:
                recorder.write(chunk)
            if view:  # (recorded as it came: the recording is of the input)
                chunk = AudioChunk(chunk.rate, chunk.width, 1, chunk.start, to_mono(chunk.samples, args.channel))
            recent.add(chunk)
            found: list[Detection] = []
            for spotter in spotters:
                found += spotter.accept(chunk)
            show(found)
            refused([r for spotter in spotters for r in take_refusals(spotter)])
            heard = chunk.end / chunk.rate
            if args.seconds is not None and heard >= args.seconds:
                break
    except (KeyboardInterrupt, BrokenPipeError):  # Ctrl-C, or the reader (e.g. head) went away
        pass
    finally:
        if mic is not None:
            mic.close()
            getattr(chunks, "close", lambda: None)()  # LiveInput's generator closes the device
        tail: list[Detection] = []
        for spotter in spotters:
            tail += spotter.flush()
        try:
            show(tail)
            refused([r for spotter in spotters for r in take_refusals(spotter)])
        except BrokenPipeError:
            sys.stdout = None  # nothing left to print to
        # a file with no call must not look like a listener that never ran: with --json too, where nothing
        # heard is no line at all (on stderr, so the JSON lines stay the only output)
        if args.file:
            print(f"{counted(shown[0], 'call or command', 'calls and commands')} heard in {heard:.1f} s of {args.file} ({args.engine})",
                  file=sys.stderr)
        if recorder is not None:
            saved = recorder.close()
            if saved is not None:
                print(f"recorded {heard:.1f} s to {saved}", file=sys.stderr)
    return 0
