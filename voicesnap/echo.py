"""Acoustic echo cancellation: hear a call over the game's own announcements.

Players call "snap" while the announcer is still saying the rank. The program
knows what it played and, through ``playback.ClockMap``, when each sample
reached the speaker on the input clock: that is an echo canceller's reference.
``EchoCanceller`` subtracts the room's echo of it from the microphone signal;
``EchoCancelled`` puts one in front of any Spotter (Vosk, enrolled, combined).

Method: a partitioned-block frequency-domain adaptive filter (MDF, as Speex's
``mdf.c``), written from its published description (Soo & Pang 1990; Valin,
"On adjusting the learning rate in frequency domain echo cancellation with
double-talk", IEEE TASLP 2007):

* the filter (``length`` seconds, default 0.5 s: up to ~0.1 s of unknown bulk
  delay, ``lead`` seconds of the reference being *late*, plus a ~0.35 s room
  tail) is split into 10 ms partitions, each a 320-point FFT, with the
  gradient constraint applied every block (linear, not circular, convolution);
* the step size per frequency bin is Valin's: the estimated residual echo over
  the error's power, with the echo-path leakage estimated from how the error's
  and the echo estimate's spectra co-vary. When the player talks over the
  announcer the error's power jumps while the estimated echo does not, so the
  step falls and the filter does not adapt the player's voice away;
* two filters (Speex's "two-path" scheme): the background one adapts, the
  foreground one produces the output and takes the background's weights only
  once they do measurably better; a background that diverged (a shout it
  tried to learn) is reset from the foreground.

After the linear filter, a residual-echo suppressor of its own
(``EchoCanceller``'s ``suppress``) takes out the room's tail, bin by bin, and
leaves bins where the player's voice dominates alone. Why not a library's:
WebRTC's AEC3 (livekit's AudioProcessingModule, tried on the fixtures) removes
more echo (45 dB on ``echo_ranks``) but its suppressor mutes the first 90-180
ms of a call made over the announcer, and the referee judges ties on onsets.

What the canceller leaves of an announcement is not silence: a spectrally
carved residue of it, which no recogniser was trained on, and which the
keyword model took for "snap" on the fixture room's "Two", "Seven" and "Jack"
(the raw announcement it never does). On one mic such a call is named to
nobody (the table would tell the players so); on per-player mics the channel
names its owner, so it was charged to a player. Hence ``EchoCancelled`` keeps
10 ms energies of each mic and of its output, and drops a detection whose
loudest moments are mostly what it removed (``OWN_SPEECH_DB``), unless an
enrolled player's voice matched it, or on per-player mics its own mic was
clearly the loudest (``is_own_speech``): a player's
voice is not correlated with the reference, so over most real calls the
output keeps the call's level (median 0 dB removed at their loudest frames,
calls laid over the announcer), while over the residue 8-22 dB were removed;
but a call 10 dB under a loud announcement loses as much (up to 13 dB), which
is why the voice or the mics decide there (docs/listening.md, "The game's own
speech is not a call"). Why numpy and not a library: speexdsp and the WebRTC builds
(aec-audio-processing, webrtc-audio-processing) are sdists that need a C/C++
toolchain and system headers; livekit is a whole realtime SDK (12 MB native
library plus protobuf) whose AEC cannot be had without its suppressor;
adaptfilt is time-domain NLMS, far too slow for 8000 taps in Python.

Cost (bench, one core): 0.024 of real time over the two echo fixtures
(reference live about half the time); while nothing has been played for
``length`` seconds the canceller is a copy (idle listening in play, reference
pull included: 0.5% of a core). Memory is bounded: two (partitions x 161)
complex filters per channel, 30 s of reference, 4 s of the mixer's output.

All positions are frames on the input clock (``AudioChunk.start``).
"""

from __future__ import annotations

import collections
import dataclasses
import threading
from dataclasses import dataclass
from typing import Any, Callable, Protocol, cast

import numpy as np

from .audio import AudioChunk, Resampler
from .spotters import Detection, Refusal, take_refusals

__all__ = [
    "RATE", "ReferenceSource", "ReferenceTrack", "ArrayReference", "PlaybackReference",
    "EchoCanceller", "EchoCancelled", "erle_db", "is_own_speech", "BlockLevels", "OWN_SPEECH_DB", "OWN_MIC_DB",
]

RATE = 16000  # the canceller works on the recognisers' rate
BLOCK = 160  # 10 ms partitions (chunks of 20 ms split evenly: no added delay)
#: A detection is the game's own speech when, over its loudest ``OWN_SPEECH_FRAMES``
#: output frames, the canceller removed at least this much (median, dB): most real
#: calls 0-5 dB, the residue of announcements 8-22 dB (module docstring).
OWN_SPEECH_DB = 6.0
OWN_SPEECH_FRAMES = 10
#: On per-player mics a call that loses that much is still a player's when, at its loudest
#: frames, its own mic's output is at least this much (median, dB) over every other mic's: a
#: caller is loudest on their own mic (crosstalk 12-20 dB down), the loudspeaker about as loud
#: on all (two simulated mics: real calls 10.9-15.2 dB, the residue -2.6-4.6 dB).
OWN_MIC_DB = 10.0


class ReferenceSource(Protocol):
    """What the speaker played, on the input clock: ``read(start, frames)`` returns
    float32 samples (int16 scale) at ``RATE`` for input frames [start, start+frames),
    zeros where nothing was played (or nothing is known yet)."""

    def read(self, start: int, frames: int) -> np.ndarray: ...


class ReferenceTrack:
    """A bounded ring of played samples on the input clock, at ``RATE``.

    One writer (the playback side), one reader (the canceller on the spotter's
    thread); no lock: the writer fills the ring, then publishes ``known_until``
    (one attribute store). A read beyond ``known_until`` or older than the ring
    holds gives zeros for that part.
    """

    def __init__(self, seconds: float = 30.0) -> None:
        self.size = int(seconds * RATE)
        self._ring = np.zeros(self.size, dtype=np.float32)
        self.known_from = 0  # oldest frame still held
        self.known_until = 0  # frames before this are final (played or silent)

    def write(self, start: int, samples: np.ndarray) -> None:
        """Samples (int16 scale) that play from input frame ``start`` on; a gap since the
        last write is silence, and a write may overwrite what was written before."""
        x = np.asarray(samples, dtype=np.float32).reshape(-1)
        if start > self.known_until:  # silence in between
            self._put(self.known_until, np.zeros(min(start - self.known_until, self.size), np.float32))
        self._put(start, x[-self.size:] if len(x) > self.size else x)
        end = start + len(x)
        self.known_until = max(self.known_until, end)
        self.known_from = max(self.known_from, self.known_until - self.size)

    def _put(self, start: int, x: np.ndarray) -> None:
        if not len(x):
            return
        at = start % self.size
        first = min(len(x), self.size - at)
        self._ring[at: at + first] = x[:first]
        if first < len(x):
            self._ring[: len(x) - first] = x[first:]

    def advance(self, until: int) -> None:
        """Nothing played up to ``until``: those frames are final silence."""
        if until > self.known_until:
            self.write(until, np.zeros(0, np.float32))

    def read(self, start: int, frames: int) -> np.ndarray:
        out = np.zeros(frames, dtype=np.float32)
        lo, hi = max(start, self.known_from), min(start + frames, self.known_until)
        if hi <= lo:
            return out
        at, n = lo % self.size, hi - lo
        first = min(n, self.size - at)
        out[lo - start: lo - start + first] = self._ring[at: at + first]
        if first < n:
            out[lo - start + first: hi - start] = self._ring[: n - first]
        return out


class ArrayReference:
    """A whole reference track in memory (fixtures, tests, benchmarks)."""

    def __init__(self, samples: np.ndarray, start: int = 0) -> None:
        self.samples = np.asarray(samples, dtype=np.float32).reshape(-1)
        self.start = start

    def read(self, start: int, frames: int) -> np.ndarray:
        out = np.zeros(frames, dtype=np.float32)
        lo, hi = max(start, self.start), min(start + frames, self.start + len(self.samples))
        if hi > lo:
            out[lo - start: hi - start] = self.samples[lo - self.start: hi - self.start]
        return out


class PlaybackReference:
    """The reference from a playback shell (``playback.DevicePlayback`` or
    ``VirtualPlayback``): what its mixer wrote, placed on the input clock by the
    shell's own output-to-input mapping and resampled to ``RATE``.

    ``read`` (on the spotter's thread) first pulls whatever the mixer has
    written since the last call. The output stream is continuous (the mixer
    writes silence when nothing plays), so its frames are laid on consecutive
    input frames from one anchor (the shell's mapping of the first frame);
    they are never re-placed block by block: measured through PulseAudio, the
    per-block DAC times wander by up to 0.36 s, and a reference that jumps
    about undoes what the adaptive filter learned. Where the echo really is
    (latency the device misreports, drift) is measured from the signals by
    ``EchoCancelled``'s delay estimator.
    """

    JUMP = 0.5  # s: placed afresh when laid this far from the shell's mapping (DAC wander: up to 0.36 s)
    # ...or moved by the median of the last DRIFT_PULLS pulls (~1 s) when that is over DRIFT: wander is
    # blocks, this is the place itself. An output stream that stalled 0.5 s after opening left the e2e
    # game's reference that far early all game (2026-12-03), past what the delay estimator looks for;
    # a CI run (2026-12-04) had it 70-90 ms early all game, under the 0.15 s this was then. Measured in
    # two idle e2e games, the median wanders within 30 ms of where the announcements are logged.
    DRIFT = 0.05
    DRIFT_PULLS = 50

    def __init__(self, playback: Any, seconds: float = 30.0,
                 record: Callable[[int, np.ndarray], None] | None = None) -> None:
        self.playback = playback
        self.track = ReferenceTrack(seconds)
        self.record = record  # gets every (start, samples) put on the track: play --record keeps them
        self._next_frame: int | None = None  # next output frame to pull
        self._resampler: Any = None
        self._out_rate = 0
        self._write_at: int | None = None  # input frame where the next resampled sample goes
        self._lock = threading.Lock()
        self.anchors = 0  # times the place was set (start, gaps, a stalled output stream)
        self._drift: collections.deque[float] = collections.deque(maxlen=self.DRIFT_PULLS)  # laid - mapped, s

    def _pull(self) -> None:
        got = self.playback.played_since(self._next_frame)
        if got is None:
            return
        first, samples = got
        if not len(samples):
            return
        rate = int(self.playback.rate)
        if rate != self._out_rate:
            self._out_rate = rate
            self._resampler = None if rate == RATE else _StreamResampler(rate, RATE)
            self._write_at = None
        for at, part in self._stretches(first, samples, rate):
            self._lay(at, part)

    def _stretches(self, first: int, samples: np.ndarray, rate: int) -> list[tuple[int, np.ndarray]]:
        """``samples`` (output frames from ``first``) cut where the playback's mapping jumps by more
        than JUMP: a pull can hold frames from both sides of a stall of the output stream (the
        spotter's thread busy, or the clock mapping not yet known, while it stalled), and laid on
        from the first frame's place, what played after the stall lay that much early (CI, the
        machine loaded: the game's first announcement 1.9 s early in the reference)."""
        out = []
        while len(samples) > 1:
            clock = float(self.playback.frame_to_clock(first))

            def on_time(k: int) -> bool:  # frame first + k plays where one laid on from ``first`` would
                return abs(float(self.playback.frame_to_clock(first + k)) - clock - k / rate) <= self.JUMP

            last = len(samples) - 1
            if on_time(last):
                break
            lo, hi = 0, last  # the mapping holds at lo and has jumped by hi: the first frame after the jump
            while hi - lo > 1:
                mid = (lo + hi) // 2
                if on_time(mid):
                    lo = mid
                else:
                    hi = mid
            out.append((first, samples[:hi]))
            first, samples = first + hi, samples[hi:]
        out.append((first, samples))
        return out

    def _lay(self, first: int, samples: np.ndarray) -> None:
        """Put output frames ``first``... on the track: on from what was laid before, unless they
        are not its continuation or the playback's mapping says they play elsewhere."""
        clock = float(self.playback.frame_to_clock(first))  # input-clock seconds of its first frame
        if self._write_at is None or self._next_frame != first:  # start, or a gap in what was kept
            self._place(clock)
        else:
            off = (self._write_at + self._pending()) / RATE - clock
            self._drift.append(off)
            if abs(off) > self.JUMP:
                # the stream's frames stopped meaning consecutive time: measured, the output stream
                # stalls ~1.5 s right after it opens (ALSA pulse plugin) while the frames written
                # before keep their old DAC times, which left the reference 1.8 s early all game
                self._place(clock)
            elif len(self._drift) == self.DRIFT_PULLS and abs(float(np.median(self._drift))) > self.DRIFT:
                # a shorter stall: moved by the median of the newer half (all after the stall once the
                # whole median is over), not to this one pull's wandering DAC time
                newer = list(self._drift)[self.DRIFT_PULLS // 2:]
                self._write_at -= int(round(float(np.median(newer)) * RATE))
                self.anchors += 1
                self._drift.clear()
        self._next_frame = first + len(samples)
        out = samples if self._resampler is None else self._resampler(samples)
        if len(out):
            write_at = cast(int, self._write_at)  # set above: placed, or moved from its place
            self.track.write(write_at, out)
            if self.record is not None:
                self.record(write_at, out)
            self._write_at = write_at + len(out)

    def _place(self, clock: float) -> None:
        self._write_at = int(round(clock * RATE)) - self._pending()
        self.anchors += 1
        self._drift.clear()

    def _pending(self) -> int:
        return 0 if self._resampler is None else self._resampler.delay

    def read(self, start: int, frames: int) -> np.ndarray:
        with self._lock:  # only the spotter's thread reads; the lock guards misuse, it never waits
            self._pull()
            return self.track.read(start, frames)


class _StreamResampler:
    """soxr streaming resampler whose output is aligned to its input (delay reported)."""

    def __init__(self, rate_in: int, rate_out: int) -> None:
        import soxr

        self._s = soxr.ResampleStream(rate_in, rate_out, 1, dtype="float32", quality="HQ")
        self._ratio = rate_out / rate_in
        self._in = 0
        self._out = 0

    @property
    def delay(self) -> int:
        """Output frames the filter still owes for input already given."""
        return max(0, int(round(self._in * self._ratio)) - self._out)

    def __call__(self, x: np.ndarray) -> np.ndarray:
        y = self._s.resample_chunk(np.asarray(x, dtype=np.float32), last=False)
        self._in += len(x)
        self._out += len(y)
        return y


def erle_db(mic: np.ndarray, out: np.ndarray) -> float:
    """Echo return loss enhancement: mic power over output power, in dB."""
    m = np.asarray(mic, dtype=np.float64)
    o = np.asarray(out, dtype=np.float64)
    return float(10 * np.log10((np.mean(m * m) + 1e-9) / (np.mean(o * o) + 1e-9)))


# Double talk: a player's voice over the announcer. Once the filter has learnt the room (``erle`` at
# least TALK_LEARNT_DB), a block is a voice when its output is TALK_RATIO times more than the filter's
# figure leaves of its echo estimate and TALK_FLOOR times over the output's quiet floor, and the mic
# holds TALK_MIC times more than that estimate (an echo path that changed, as the fixtures' new room
# tail for every announcement, leaves a large output too, but not a louder mic). The filters learn
# nothing from such a block or TALK_HOLD blocks after, nor does it count in ``erle``. Learning from a
# voice carved it into the filter (the next words of the announcement then came through), and its
# energy read as an echo no longer removed, which could turn the canceller off mid-announcement.
# Measured on calls laid over every announcement of echo_ranks in one room, mid-game (bench.echo_rows):
# heard 157 -> 168 of 171, named to their player 136 -> 159. Without the mic's
# share, a changed echo path was taken for a voice: single-talk learning slowed
# (test_the_linear_filter_learns_a_delayed_room_it_keeps' last quarter 32.7 -> 29.5 dB; now 32.7).
TALK_LEARNT_DB = 6.0
TALK_RATIO = 8.0
TALK_FLOOR = 10.0
TALK_HOLD = 5
TALK_MIC = 1.5
# A "voice" that outlasts TALK_LONGEST blocks of the announcer (counting up while it looks like one,
# down four times as fast while not; a call with its hold is at most about 85) is the echo path
# changing (a call over every announcement, one after another, does not add up to it): the loudspeaker
# turned up 6 dB mid-game left the linear filter learning nothing for good (6 dB removed instead of
# 34). The filters then learn from every block for TALK_RELEARN blocks. Chatter that long over the
# announcer is learnt as it was before the rule.
TALK_LONGEST = 100
TALK_RELEARN = 300


class EchoCanceller:
    """One channel's canceller at ``RATE``: ``process(mic_block, ref_block)`` for
    blocks of ``BLOCK`` frames, in stream order. Returns the echo-free *previous*
    block (one block behind: the residual suppressor's overlap-add
    needs the next block); without ``suppress`` it is the same one-block delay.

    Residual echo suppression (``suppress``): the fixtures' rooms, like real
    ones, leave a reverberant tail the linear filter cannot learn in time (the
    fixtures even draw a new tail for every announcement, so the linear filter
    can only remove the direct sound: ~10 dB). What is left is estimated per
    frequency as ``rho`` times the echo estimate's power smeared by the room's
    decay (``decay`` per 10 ms), ``rho`` found by regressing the output's
    power on that estimate; a gain ``max(floor, 1 - strength * residual /
    power)`` takes it out. Where the player's voice dominates a bin the gain
    stays near 1, so a call's onset (its "s", above the announcer's vowels)
    keeps its place on the clock: the suppressor works on 20 ms frames, hop
    10 ms, and moves nothing in time.
    """

    def __init__(self, length: float = 0.5, *, suppress: bool = True, strength: float = 3.0,
                 floor: float = 0.03, decay: float = 0.75) -> None:
        n = BLOCK
        self.n = n
        self.m = max(1, int(np.ceil(length * RATE / n)))
        k = n + 1
        self.W = np.zeros((self.m, k), np.complex128)  # background (adapting)
        self.F = np.zeros((self.m, k), np.complex128)  # foreground (output)
        self.X = np.zeros((self.m, k), np.complex128)  # reference spectra, newest first
        self.x_prev = np.zeros(n)
        self.power = np.zeros(k)  # smoothed far-end power per bin
        self.silent = self.m + 1  # blocks since the reference last held sound
        # learning-rate state (Valin 2007 / Speex names)
        self.spec_average = n / RATE
        self.beta0 = 2.0 * n / RATE
        self.beta_max = 0.5 * n / RATE
        self.Eh = np.zeros(k)
        self.Yh = np.zeros(k)
        self.Pey = 1.0
        self.Pyy = 1.0
        self.leak = 0.0
        self.adapted = False
        self.sum_adapt = 0.0
        self.Davg1 = self.Davg2 = self.Dvar1 = self.Dvar2 = 0.0
        self.window = 0.5 - 0.5 * np.cos(2 * np.pi * np.arange(n) / n)  # for smooth weight swaps
        self.blocks = 0
        self.echo = np.zeros(n)
        # residual echo suppression (see ``_suppress``)
        self.suppress = suppress
        self.strength, self.floor, self.decay = strength, floor, decay
        self.win = np.sqrt(0.5 - 0.5 * np.cos(2 * np.pi * (np.arange(2 * n) + 0.5) / (2 * n)))
        self.e_prev = np.zeros(n)
        self.y_prev = np.zeros(n)
        self.ola = np.zeros(n)
        self.Ys = np.zeros(k)  # the echo estimate's power, smeared by the room's decay
        self.rho = 0.1  # residual echo power per unit of Ys
        self.Rh = np.zeros(k)
        self.Sh = np.zeros(k)
        self.Prs = 1.0
        self.Pss = 1.0
        self.res_active = False
        # is there an echo at all? (headphones, a muted speaker, a far microphone: none)
        self.Sdd = self.Sff = 1.0
        self.erle = 0.0  # dB the linear filter removes while the reference sounds
        self.quiet = 0.0
        self.talk_hold = 0  # blocks left of a voice over the echo (``TALK_*``): no learning
        self.talk_run = 0  # blocks that looked like a voice, less those that did not (TALK_LONGEST)
        self.relearn = 0  # blocks left of learning whatever the mic holds: the room changed

    def process(self, mic: np.ndarray, ref: np.ndarray) -> np.ndarray:
        n = self.n
        d = np.asarray(mic, dtype=np.float64)
        x = np.asarray(ref, dtype=np.float64)
        self.blocks += 1
        loud = bool(np.any(x))
        self.silent = 0 if loud else self.silent + 1
        self.X = np.roll(self.X, 1, axis=0)  # small: m x 161
        if self.silent > self.m:  # nothing in the filter's reach: the echo is gone
            self.X[0] = 0.0
            self.x_prev = x
            self.echo = np.zeros(n)
            return self._suppress(d, self.echo, idle=True)
        self.X[0] = np.fft.rfft(np.concatenate([self.x_prev, x]))
        self.x_prev = x

        # foreground (output) and background (adapting) echo estimates
        y_fg = np.fft.irfft(np.einsum("mk,mk->k", self.F, self.X), 2 * n)[n:]
        y_bg = np.fft.irfft(np.einsum("mk,mk->k", self.W, self.X), 2 * n)[n:]
        e_fg = d - y_fg
        e_bg = d - y_bg
        Sff = float(e_fg @ e_fg)
        See = float(e_bg @ e_bg)
        # double talk (TALK_*): an output far over what the filter leaves of its echo estimate is a voice
        self.quiet = min(Sff, self.quiet * 1.002) if self.quiet else Sff  # the output's floor: room tone
        Syy_fg = float(y_fg @ y_fg)
        talking = (self.erle >= TALK_LEARNT_DB
                   and Sff > TALK_RATIO * 10 ** (-self.erle / 10) * Syy_fg + TALK_FLOOR * self.quiet + n * 100.0
                   and float(d @ d) > TALK_MIC * Syy_fg)
        self.talk_hold = TALK_HOLD if talking else max(0, self.talk_hold - 1)
        talking = self.talk_hold > 0
        if loud:  # counted while the announcer sounds, so the pauses between announcements do not wipe it
            self.talk_run = self.talk_run + 1 if talking else max(0, self.talk_run - 4)
        if self.talk_run > TALK_LONGEST:  # no call lasts that long: the room changed (the volume turned up)
            self.relearn, self.talk_run = TALK_RELEARN, 0
        if self.relearn:
            self.relearn -= 1
            talking, self.talk_hold = False, 0
        Dbf = float((y_fg - y_bg) @ (y_fg - y_bg)) + 10.0
        Sxx = float(x @ x)

        # two-path logic: take better background weights; reset a diverged background
        diff = Sff - See
        self.Davg1 = 0.6 * self.Davg1 + 0.4 * diff
        self.Davg2 = 0.85 * self.Davg2 + 0.15 * diff
        self.Dvar1 = 0.36 * self.Dvar1 + 0.16 * Sff * Dbf
        self.Dvar2 = 0.7225 * self.Dvar2 + 0.0225 * Sff * Dbf
        out = e_fg
        if talking:
            pass  # the foreground keeps what it learnt before the voice
        elif (diff * abs(diff) > Sff * Dbf or self.Davg1 * abs(self.Davg1) > 0.5 * self.Dvar1
                or self.Davg2 * abs(self.Davg2) > 0.25 * self.Dvar2):
            self.F[:] = self.W
            self.Davg1 = self.Davg2 = self.Dvar1 = self.Dvar2 = 0.0
            out = self.window * e_bg + (1 - self.window) * e_fg  # cross-fade, no click
            y_fg = d - out
        elif (-diff * abs(diff) > 4 * Sff * Dbf or -self.Davg1 * abs(self.Davg1) > 4 * self.Dvar1
              or -self.Davg2 * abs(self.Davg2) > 4 * self.Dvar2):
            self.W[:] = self.F
            e_bg, y_bg, See = e_fg, y_fg, Sff
            self.Davg1 = self.Davg2 = self.Dvar1 = self.Dvar2 = 0.0

        if loud and not talking:
            self.Sdd = 0.98 * self.Sdd + 0.02 * float(d @ d)
            self.Sff = 0.98 * self.Sff + 0.02 * float(out @ out)
            self.erle = 10.0 * float(np.log10(self.Sdd / self.Sff))
        if self.erle < 2.0:  # the filter takes (almost) nothing out: no echo here; leave the microphone alone
            out, y_fg = d.copy(), np.zeros(n)
        self.echo = y_fg  # the echo estimate taken out of this block (residual suppression)

        # spectra of the background's error and echo estimate (for the step size)
        E = np.fft.rfft(np.concatenate([np.zeros(n), e_bg]))
        Yspec = np.fft.rfft(np.concatenate([np.zeros(n), y_bg]))
        Rf = E.real ** 2 + E.imag ** 2
        Yf = Yspec.real ** 2 + Yspec.imag ** 2
        Xf = self.X[0].real ** 2 + self.X[0].imag ** 2
        ss = 0.35 / self.m
        self.power = (1 - ss) * self.power + ss * Xf if self.blocks > 1 else Xf.copy()

        # echo-path leakage: how much of the echo estimate's variation shows in the error
        Syy = float(y_bg @ y_bg)
        self.Eh = (1 - self.spec_average) * self.Eh + self.spec_average * Rf
        self.Yh = (1 - self.spec_average) * self.Yh + self.spec_average * Yf
        eh, yh = Rf - self.Eh, Yf - self.Yh
        alpha = min(self.beta0 * Syy / (See + 1.0), self.beta_max)
        self.Pey = (1 - alpha) * self.Pey + alpha * float(eh @ yh)
        self.Pyy = max(1.0, (1 - alpha) * self.Pyy + alpha * float(yh @ yh))
        self.Pey = min(max(self.Pey, 0.005 * self.Pyy), self.Pyy)
        self.leak = self.Pey / self.Pyy

        # step per bin
        if not self.adapted:
            rate = 0.0
            if Sxx > n * 1000.0:  # the reference holds sound worth learning from
                rate = 0.25 * min(Sxx, See) / (See + 1.0)
            self.sum_adapt += 0.0 if talking else rate
            mu = np.full(n + 1, rate) / (self.m / 2 * self.power + 10.0)
            if self.sum_adapt > self.m and self.leak * Syy > 0.03 * Syy:
                self.adapted = True
        else:
            rer = min(0.5, (0.0001 * Sxx + 3.0 * self.leak * Syy) / (See + 1.0))
            r = np.minimum(self.leak * Yf, 0.5 * (Rf + 1.0))
            r = 0.7 * r + 0.3 * rer * (Rf + 1.0)
            mu = r / ((Rf + 1.0) * (self.m / 2 * self.power + 10.0))
        if (loud or np.any(mu)) and not talking:
            grad = np.conj(self.X) * (mu * E)[None, :]
            self.W += grad
            # gradient constraint: keep each partition's impulse response n taps long
            w = np.fft.irfft(self.W, 2 * n, axis=1)
            w[:, n:] = 0.0
            self.W = np.fft.rfft(w, axis=1)
        return self._suppress(out, y_fg, idle=False)

    def _suppress(self, e: np.ndarray, y: np.ndarray, idle: bool) -> np.ndarray:
        """Overlap-add residual suppression; returns the previous block."""
        n = self.n
        if not self.suppress or (idle and not self.res_active):
            out = self.e_prev
            self.e_prev, self.y_prev = e, y
            return out.copy()
        if not self.res_active:  # from pass-through: the previous frame's half, at gain 1
            self.ola = self.e_prev * self.win[n:] ** 2
            self.res_active = True
        E = np.fft.rfft(np.concatenate([self.e_prev, e]) * self.win)
        Y = np.fft.rfft(np.concatenate([self.y_prev, y]) * self.win)
        self.e_prev, self.y_prev = e, y
        Ef = E.real ** 2 + E.imag ** 2
        self.Ys = self.decay * self.Ys + (Y.real ** 2 + Y.imag ** 2)
        # full strength only once the linear filter shows there is an echo (>= 4.5 dB removed):
        # with none, the estimate would carve holes in a call that merely coincides with speech
        present = min(1.0, max(0.0, (self.erle - 2.0) / 3.0))
        gain = np.maximum(self.floor, 1.0 - present * self.strength * self.rho * self.Ys / (Ef + 1e-3))
        # rho: how much of the smeared echo estimate's variation shows in the output's power
        self.Rh = 0.9 * self.Rh + 0.1 * Ef
        self.Sh = 0.9 * self.Sh + 0.1 * self.Ys
        if self.Ys.sum() > 1e3:
            rh, sh = Ef - self.Rh, self.Ys - self.Sh
            self.Prs = 0.95 * self.Prs + 0.05 * float(rh @ sh)
            self.Pss = max(1.0, 0.95 * self.Pss + 0.05 * float(sh @ sh))
            if self.Pss > 1.0:
                self.rho = min(max(self.Prs / self.Pss, 0.0), 1.0)
        o = np.fft.irfft(E * gain, 2 * n) * self.win
        out = self.ola + o[:n]
        self.ola = o[n:]
        if idle and float(self.Ys.sum()) < 1.0:  # the tail has died away: back to pass-through
            self.res_active = False
        return out


class DelayEstimator:
    """Where the echo really is: how many frames the microphone hears the reference
    later than the reference's place says (negative: earlier), by generalised
    cross-correlation with phase transform (GCC-PHAT) over the last ``window``
    seconds, every ``every`` seconds while the reference holds sound.

    Why: the reference is placed by the devices' *reported* latencies, which
    can be tens of ms off (see ``playback.ClockMap.calibrate``), and an echo
    that arrives before its reference cannot be cancelled at all. An estimate
    counts once two in a row agree within 1 ms and the correlation peak stands
    out (``confidence``: peak over the next best outside +-2 ms).
    """

    def __init__(self, window: float = 3.0, every: float = 1.0, earliest: float = -0.15,
                 latest: float = 0.35, confidence: float = 1.5) -> None:
        self.window = int(window * RATE)
        self.every = int(every * RATE)
        self.earliest = int(earliest * RATE)
        self.latest = int(latest * RATE)
        self.confidence = confidence
        self.mic = ReferenceTrack(window + 1.0)
        self._due: int | None = None
        self._last: int | None = None
        self.estimates: list[tuple[int, int, float]] = []  # (clock frame, lag, confidence): measured

    def update(self, start: int, mic: np.ndarray, reference: ReferenceSource, shift: int) -> int | None:
        """Add mic frames from ``start``; returns a confirmed lag when one is due and clear.
        ``shift``: the reference is currently read ``shift`` frames early (lag measured from there)."""
        self.mic.write(start, mic)
        end = start + len(mic)
        if self._due is None:
            self._due = start + self.window
        if end < self._due:
            return None
        self._due = end + self.every
        lo = end - self.window
        ref = reference.read(lo - self.latest - shift, self.window + self.latest - self.earliest)
        if np.count_nonzero(ref) < self.window // 4:  # too little played to measure by
            return None
        m = self.mic.read(lo, self.window).astype(np.float64)
        size = 1 << int(np.ceil(np.log2(len(ref) + self.window)))
        cross = np.conj(np.fft.rfft(m, size)) * np.fft.rfft(ref.astype(np.float64), size)
        freqs = np.fft.rfftfreq(size, 1 / RATE)
        cross[(freqs < 200) | (freqs > 6000)] = 0.0  # hum and hiss carry no timing
        corr = np.fft.irfft(cross / (np.abs(cross) + 1e-9), size)[: self.latest - self.earliest + 1]
        k = int(np.argmax(corr))
        guard = int(0.002 * RATE)
        rest = np.concatenate([corr[: max(0, k - guard)], corr[k + guard + 1:]])
        conf = float(corr[k] / (rest.max() + 1e-12)) if len(rest) else 0.0
        lag = self.latest - k  # echo heard ``lag`` frames after the reference's place
        self.estimates.append((end, lag, conf))
        if conf < self.confidence:
            self._last = None
            return None
        confirmed = self._last is not None and abs(lag - self._last) <= RATE // 1000
        self._last = lag
        return lag if confirmed else None


class BlockLevels:
    """10 ms energies of one mic and of the canceller's output, keyed by block on the input
    clock, for the last ``seconds``: a call is reported up to seconds after it was said, and
    by then the audio is gone. Fixed rings: nothing grows with time."""

    def __init__(self, seconds: float = 20.0) -> None:
        size = max(1, int(seconds * RATE / BLOCK))
        self.mic = np.zeros(size)
        self.out = np.zeros(size)
        self.mic_at = np.full(size, -1, np.int64)
        self.out_at = np.full(size, -1, np.int64)

    @staticmethod
    def _put(ring: np.ndarray, at: np.ndarray, pos: int, samples: np.ndarray) -> None:
        """The energies of ``samples``' whole blocks from clock frame ``pos`` into ``ring``."""
        n = len(samples) // BLOCK
        keys = pos // BLOCK + np.arange(n)
        slots = keys % len(ring)
        ring[slots] = np.mean(samples[:n * BLOCK].reshape(n, BLOCK) ** 2, axis=1)
        at[slots] = keys

    def put_mic(self, pos: int, samples: np.ndarray) -> None:
        self._put(self.mic, self.mic_at, pos, samples)

    def put_out(self, pos: int, samples: np.ndarray) -> None:
        self._put(self.out, self.out_at, pos, samples)

    def _slots(self, t0: float, t1: float, *levels: BlockLevels, mic: bool = False) -> np.ndarray | None:
        """Ring slots of the blocks in [t0, t1] (seconds) whose output (and ``mic``: input) every
        one of ``levels`` still holds; None when fewer than 3."""
        keys = np.arange(int(t0 * RATE) // BLOCK, int(np.ceil(t1 * RATE / BLOCK)) + 1)
        slots = keys % len(self.out)
        known = np.ones(len(keys), bool)
        for lv in levels:
            known &= lv.out_at[slots] == keys
            if mic:
                known &= lv.mic_at[slots] == keys
        return slots[known] if np.count_nonzero(known) >= 3 else None

    @staticmethod
    def _median_db(over: np.ndarray, under: np.ndarray, by: np.ndarray, loudest: int) -> float:
        top = np.argsort(by)[-loudest:]
        return float(np.median(10 * np.log10((over[top] + 1.0) / (under[top] + 1.0))))

    def removed_db(self, t0: float, t1: float, loudest: int = OWN_SPEECH_FRAMES) -> float | None:
        """Median dB the canceller took away over the ``loudest`` output frames in [t0, t1]
        (seconds on the clock), or None when fewer than 3 of its frames are still known."""
        slots = self._slots(t0, t1, self, mic=True)
        if slots is None:
            return None
        return self._median_db(self.mic[slots], self.out[slots], self.out[slots], loudest)

    def margin_db(self, others: list[BlockLevels], t0: float, t1: float,
                  loudest: int = OWN_SPEECH_FRAMES) -> float | None:
        """Median dB by which this mic's output is over the loudest of ``others``' at this
        mic's ``loudest`` output frames in [t0, t1]; None without others or known frames."""
        slots = self._slots(t0, t1, self, *others) if others else None
        if slots is None:
            return None
        own = self.out[slots]
        return self._median_db(own, np.max([o.out[slots] for o in others], axis=0), own, loudest)


def is_own_speech(d: Detection, removed: float | None, line: float = OWN_SPEECH_DB,
                  own_mic: float | None = None) -> bool:
    """Is ``d``, over whose loudest moments the canceller removed ``removed`` dB, the game's own speech?

    A call whose voice an enrolled player's matched (``player`` with an attribution ``score``)
    never is, whatever was removed: the announcer is never an enrolled voice, and a quiet call
    under a loud announcement loses as much to the canceller as its residue does. A player named
    by the channel alone (per-player mics) is no such evidence; there ``own_mic``, how much louder
    the call's own mic was than every other (``BlockLevels.margin_db``), decides (``OWN_MIC_DB``)."""
    if d.player is not None and d.score is not None:
        return False
    if own_mic is not None and own_mic >= OWN_MIC_DB:
        return False
    return removed is not None and removed >= line


@dataclass
class _Channel:
    canceller: EchoCanceller
    pending: np.ndarray  # mic frames not yet a whole block (float64)
    levels: BlockLevels = dataclasses.field(default_factory=BlockLevels)
    inside: np.ndarray = dataclasses.field(default_factory=lambda: np.zeros(BLOCK))  # the mic block the canceller holds


class EchoCancelled:
    """Any Spotter, fed with the microphone minus the echo of what the game played.

    ``reference`` says what was played on the input clock (``ReferenceSource``);
    chunks go in at any rate (resampled to ``RATE``, clock kept) and come out in
    whole 10 ms blocks with the same clock positions, so onsets stay exact.
    ``lead`` shifts the reference earlier by that many seconds, so that a
    reference mapped up to ``lead`` too late is still causal for the filter;
    beyond that, ``DelayEstimator`` measures where the echo really is and the
    reference is read that much later (``delay``), the filters learning afresh.
    Each channel has its own canceller. ``enabled`` False passes chunks through
    unchanged (same path otherwise: for comparisons).

    A detection from the inner spotter whose loudest output frames are mostly
    removed echo (``own_speech_db``; None keeps every one) is the game's own
    speech: dropped, with a ``Refusal`` that says so (``take_refusals``).
    """

    def __init__(self, spotter: Any, reference: ReferenceSource, *, length: float = 0.5,
                 lead: float = 0.01, enabled: bool = True, suppress: bool = True,
                 estimate_delay: bool = True, own_speech_db: float | None = OWN_SPEECH_DB) -> None:
        self.spotter = spotter
        self.own_speech_db = own_speech_db
        self._refused: collections.deque[Refusal] = collections.deque(maxlen=256)  # until taken
        self.reference = reference
        self.length = length
        self.lead = int(round(lead * RATE))
        self.enabled = enabled
        self.suppress = suppress
        self._first = 0
        self.delay = 0  # frames the echo comes after the reference's place (DelayEstimator)
        self.estimator = DelayEstimator() if estimate_delay else None
        self.name = f"{getattr(spotter, 'name', 'spotter')}+echo"
        self._channels: list[_Channel] = []
        self._resampler: Resampler | None = None
        self._next: int | None = None  # input-clock frame of the next block's first frame
        self.last: np.ndarray | None = None  # the last chunk handed on (tests)

    def __getattr__(self, name: str) -> Any:  # set_pool_exists, profiles, ...: the inner spotter's
        if name == "spotter":
            raise AttributeError(name)
        return getattr(self.spotter, name)

    def _at_rate(self, chunk: AudioChunk) -> AudioChunk | None:
        if chunk.rate == RATE:
            return chunk
        if self._resampler is None:
            self._resampler = Resampler(RATE, mono=False)
        return self._resampler.accept(chunk)

    def cancel(self, chunk: AudioChunk) -> AudioChunk | None:
        """The chunk with the echo removed, on the same clock. Output runs one block
        (10 ms) behind the input and comes in whole blocks; ``drain`` gives the rest."""
        if chunk.rate != RATE:
            raise ValueError(f"cancel() needs {RATE} Hz chunks")
        data = chunk.samples.astype(np.float64)
        held = len(self._channels[0].pending) if self._channels else 0
        if not self._channels or chunk.channels != len(self._channels) or chunk.start != (self._next or 0) + held:
            # first chunk, or a gap on the clock (dropped input): start afresh there, keeping what
            # the filters learned; the one block still inside them is lost with the gap
            if not self._channels or chunk.channels != len(self._channels):
                self._channels = [_Channel(EchoCanceller(self.length, suppress=self.suppress), np.zeros(0))
                                  for _ in range(chunk.channels)]
            for ch in self._channels:
                ch.pending = np.zeros(0)
            self._next = self._first = chunk.start
            held = 0
        start = self._next
        assert start is not None
        blocks = (held + chunk.frames) // BLOCK
        if blocks == 0:
            for c, ch in enumerate(self._channels):
                ch.pending = np.concatenate([ch.pending, data[:, c]])
            return None
        ref = self.reference.read(start + self.lead - self.delay, blocks * BLOCK) if self.enabled else None
        out = self._run(start, blocks, data, ref)
        if self.estimator is not None and self.enabled:
            lag = self.estimator.update(chunk.start, data[:, 0], self.reference, 0)
            if lag is not None and abs(lag - self.delay) > 0.002 * RATE:
                self.delay = lag  # the echo moved: line the reference up again, learn afresh
                for ch in self._channels:
                    ch.canceller = EchoCanceller(self.length, suppress=self.suppress)
        return out

    def _run(self, start: int, blocks: int, data: np.ndarray, ref: np.ndarray | None) -> AudioChunk | None:
        out = np.empty((blocks * BLOCK, len(self._channels)), np.float64)
        mics = np.empty_like(out)  # the mic frames each output frame was made from (one block earlier)
        for c, ch in enumerate(self._channels):
            mic = np.concatenate([ch.pending, data[:, c]])
            ch.pending = mic[blocks * BLOCK:]
            ch.levels.put_mic(start, mic[:blocks * BLOCK])
            for b in range(blocks):
                sl = slice(b * BLOCK, (b + 1) * BLOCK)
                out[sl, c] = ch.canceller.process(mic[sl], ref[sl] if ref is not None else np.zeros(BLOCK))
            mics[:, c] = np.concatenate([ch.inside, mic[:(blocks - 1) * BLOCK]])
            ch.inside = mic[(blocks - 1) * BLOCK: blocks * BLOCK]
        self._next = start + blocks * BLOCK
        at = start - BLOCK  # each block comes out one block late
        if at < self._first:  # the block before the stream began: nothing
            out, mics, at = out[self._first - at:], mics[self._first - at:], self._first
        if not len(out):
            return None
        for c, ch in enumerate(self._channels):
            ch.levels.put_out(at, out[:, c])
        pcm = np.clip(np.round(out), -32768, 32767).astype(np.int16)
        removed = np.clip(np.round(mics - out), -32768, 32767).astype(np.int16) if self.enabled else None
        return AudioChunk(RATE, 2, pcm.shape[1], at, pcm, removed)

    def drain(self) -> AudioChunk | None:
        """The end of the stream: the block still inside the cancellers and any partial one."""
        if not self._channels or self._next is None:
            return None
        held = len(self._channels[0].pending)
        end = self._next + held  # the stream's last frame + 1
        blocks = 2 if held else 1  # complete the partial block, then one more to push it out
        fill = blocks * BLOCK - held
        ref = self.reference.read(self._next + self.lead - self.delay, fill + held) if self.enabled else None
        out = self._run(self._next, blocks, np.zeros((fill, len(self._channels))), ref)
        if out is None:
            return None
        return out.between(out.start, end) if end > out.start else None

    def accept(self, chunk: AudioChunk) -> list:
        at_rate = self._at_rate(chunk)
        if at_rate is None:
            return []
        out = self.cancel(at_rate)
        if out is None:
            return []
        self.last = out.samples
        return self._not_own(self.spotter.accept(out))

    def flush(self) -> list:
        found: list = []
        if self._resampler is not None:
            tail = self._resampler.flush()
            if tail is not None:
                out = self.cancel(tail)
                if out is not None:
                    found += self.spotter.accept(out)
        out = self.drain()
        if out is not None:
            self.last = out.samples
            found += self.spotter.accept(out)
        return self._not_own(found + list(self.spotter.flush()))

    def _levels_of(self, d: Detection) -> BlockLevels | None:
        """The levels of ``d``'s channel, or None when the canceller is off or has no such channel."""
        return self._channels[d.channel].levels if self.enabled and 0 <= d.channel < len(self._channels) else None

    def removed_db(self, d: Detection) -> float | None:
        """dB the canceller removed over ``d``'s loudest moments (None: not known, or not on
        one of its channels). Read it when ``d`` comes out: the levels are kept 20 s."""
        levels = self._levels_of(d)
        return None if levels is None else levels.removed_db(d.onset, d.end)

    def own_speech(self, d: Detection) -> float | None:
        """``removed_db(d)`` when that makes ``d`` the game's own speech (``is_own_speech``), else None."""
        if self.own_speech_db is None:
            return None
        removed = self.removed_db(d)
        return removed if is_own_speech(d, removed, self.own_speech_db, self.own_mic_db(d)) else None

    def own_mic_db(self, d: Detection) -> float | None:
        """How much louder ``d``'s own mic was than every other mic's output (``BlockLevels.margin_db``);
        None on one mic."""
        levels = self._levels_of(d)
        others = [ch.levels for ch in self._channels if ch.levels is not levels]
        return None if levels is None or not others else levels.margin_db(others, d.onset, d.end)

    def _not_own(self, found: list) -> list:
        kept = []
        for d in found:
            removed = self.own_speech(d) if isinstance(d, Detection) else None
            if removed is None:
                kept.append(d)
                continue
            self._refused.append(Refusal(
                d.word, d.onset, d.end, d.player or "", channel=d.channel, engine=d.engine,
                taken_for="the game's own speech",
                reason=f"at its loudest {removed:.0f} dB of it was the announcer's echo, which the canceller removed"))
        return kept

    def take_refusals(self) -> list[Refusal]:
        """Calls dropped as the game's own speech, then the inner spotter's own refusals."""
        out = list(self._refused)
        self._refused.clear()
        return out + take_refusals(self.spotter)
