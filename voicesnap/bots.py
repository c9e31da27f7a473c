"""Bot players for the simulator: seeded, human-like callers on the audio clock.

A bot sees the table after each flip and may call. Its reaction time is drawn
from a log-normal distribution, because human reaction times are
right-skewed (a hard floor near 0.2 s and a long slow tail); each bot's
median sits between 0.35 s and 0.60 s according to its skill. Bots also
miss matches and make false calls, mostly on near misses (a neighbouring
rank on show), since those are the mistakes real players make and the
referee's wrong-call and pool rules only get exercised if someone errs.

How much reactions vary (``SPREADS``; the default is "human"):

* Within a person. Choice reaction times in large population samples have a
  within-person SD of roughly 100-150 ms around means of 0.5-0.7 s in
  adults, growing with the mean (Der & Deary 2006, Psychology and Aging
  21:62-73, UK Health and Lifestyle Survey, n = 7,130, 4-choice RT; Dykiert,
  Der, Starr & Deary 2012, PLoS ONE 7:e45759, meta-analysis of
  intra-individual variability). A constant log-normal sigma keeps the SD in
  proportion to the median, as those data show; sigma 0.30 gives an SD of
  about 110 ms at the fastest median (0.35 s) and 190 ms at the slowest
  (0.60 s). The first bots used sigma 0.20 (about +-90 ms, SD 70-120 ms),
  the "tight" spread, which made near-simultaneous calls too common.
* Between people. Skills are drawn from 0-1 (medians 0.35-0.60 s, SD of
  the medians about 70 ms), wider than the first bots' 0.2-1.0.
* The recogniser. The spotter stamps a call's onset with its own error:
  Gaussian, SD 15 ms (our listening bench measures 3 ms median / 9 ms p95
  absolute onset error for Vosk with energy refinement, 33 / 51 ms for
  PocketSphinx; 15 ms sits between them).
* A floor of 0.15 s on the stamped onset: faster than that is anticipation,
  not reaction (fastest vocal reactions are about 0.16-0.25 s).

A bot's call must land before the next flip: a slower reaction is a miss
for this flip, and if the match is still on show it gets a fresh chance
after the next one. Everything comes from one seed, so a simulation is
reproducible call for call; the "tight" spread reproduces the first bots'
calls exactly.
"""

from __future__ import annotations

import math
import random
from bisect import bisect_right
from itertools import accumulate
from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable, Mapping, Sequence

from .cards import Card
from .referee import Call, make_call

if TYPE_CHECKING:
    from .rules import Game

__all__ = ["BotProfile", "Bots", "Spread", "SPREADS", "DEFAULT_SPREAD", "profile_for", "SNAP", "POOL", "SLAP"]

# Canonical call kinds (voicesnap.rules) and the words a bot says for them by default.
SNAP = "snap"
POOL = "pool"
SLAP = "slap"
DEFAULT_WORDS = {SNAP: "snap", POOL: "snap pool", SLAP: "slap"}

_MIN_REACTION = 0.15  # faster than this is anticipation, not reaction


@dataclass(frozen=True, slots=True)
class Spread:
    """How much reactions vary: within a bot, between bots, and in the recogniser."""

    sigma: float  # log-normal spread of one bot's reaction times
    skills: tuple[float, float]  # range the bots' skills are drawn from
    jitter: float  # SD of the recogniser's onset error, seconds


SPREADS = {
    "human": Spread(sigma=0.30, skills=(0.0, 1.0), jitter=0.015),  # published figures: see above
    "tight": Spread(sigma=0.20, skills=(0.2, 1.0), jitter=0.0),  # the first bots, for comparison
}
DEFAULT_SPREAD = "human"


@dataclass(frozen=True, slots=True)
class BotProfile:
    """One bot's temperament, derived from a skill in [0, 1]."""

    name: str
    skill: float
    median: float  # median reaction time, seconds
    sigma: float  # log-normal spread (of the natural log)
    miss: float  # chance of not calling on a real match
    false_call: float  # chance per flip of a "snap" with nothing on show
    near_miss: float  # the same, when a neighbouring rank is on show
    pool_slip: float  # chance of saying "snap pool" when only a snap is on


def profile_for(name: str, skill: float, sigma: float = SPREADS[DEFAULT_SPREAD].sigma) -> BotProfile:
    """The bot a skill level describes: better players are faster and err less."""
    if not 0.0 <= skill <= 1.0:
        raise ValueError(f"bot skill must be between 0 and 1, got {skill}")
    return BotProfile(
        name=name,
        skill=skill,
        median=0.60 - 0.25 * skill,
        sigma=sigma,
        miss=0.20 - 0.15 * skill,
        false_call=0.003 - 0.0025 * skill,
        near_miss=0.025 - 0.02 * skill,
        pool_slip=0.03 - 0.02 * skill,
    )


class Bots:
    """The bots around one table, sharing one seeded random stream.

    ``words`` maps a player to the word they say for each canonical call kind
    (Animal Snap gives each player their own word, Silent Snap a slam); by
    default a bot says "snap", "snap pool" and "slap".
    """

    def __init__(
        self,
        players: Sequence[str],
        seed: int | str,
        skills: Sequence[float] | None = None,
        words: Mapping[str, Mapping[str, str]] | None = None,
        flipper_may_call: bool = True,
        pool_claim: str = "anyone",
        spread: str = DEFAULT_SPREAD,
    ) -> None:
        if spread not in SPREADS:
            raise ValueError(f"no bot spread called {spread!r}; choose one of: {', '.join(SPREADS)}")
        self.spread = SPREADS[spread]
        self.rng = random.Random(f"voicesnap-bots:{seed}")
        if skills is None:
            lo, hi = self.spread.skills
            skills = [round(self.rng.uniform(lo, hi), 3) for _ in players]
        if len(skills) != len(players):
            raise ValueError(f"{len(players)} players but {len(skills)} skills")
        self.profiles = tuple(profile_for(p, s, self.spread.sigma) for p, s in zip(players, skills))
        self._jitter = self.spread.jitter
        self._mu = tuple(math.log(p.median) for p in self.profiles)
        self._sigma = tuple(p.sigma for p in self.profiles)
        self.flipper_may_call = flipper_may_call
        self.pool_flipper_only = pool_claim == "flipper"
        self._words = {p: {**DEFAULT_WORDS, **(words.get(p, {}) if words else {})} for p in players}
        # What the match loop reads per bot, in one tuple.
        self._bots = tuple((p.name, p.miss, p.pool_slip, mu, p.sigma, self._words[p.name])
                           for p, mu in zip(self.profiles, self._mu))
        self._p_false = sum(p.false_call for p in self.profiles)
        self._p_near = sum(p.near_miss for p in self.profiles)
        # Cumulative weights to pick which bot errs, one draw per flip.
        self._cum_false = list(accumulate(p.false_call for p in self.profiles))
        self._cum_near = list(accumulate(p.near_miss for p in self.profiles))

    @classmethod
    def for_game(cls, game: "Game", seed: int | str, skills: Sequence[float] | None = None,
                 spread: str = DEFAULT_SPREAD) -> "Bots":
        """One bot per player of ``game``, saying its words and keeping its options
        (read through the game's public accessors only)."""
        words = {name: game.call_words(seat) for seat, name in enumerate(game.players)}
        opts = game.options
        return cls(game.players, seed, skills, words=words, flipper_may_call=opts.flipper_may_call,
                   pool_claim=opts.pool_claim, spread=spread)

    def reaction(self, seat: int) -> float:
        """One reaction time for the bot in this seat as the recogniser stamps it, in seconds."""
        # exp of a normal draw is the log-normal; gauss() is several times
        # faster than lognormvariate() and just as reproducible from the seed.
        gauss = self.rng.gauss
        r = math.exp(self._mu[seat] + self._sigma[seat] * gauss())
        if self._jitter:
            r += self._jitter * gauss()
        return r if r > _MIN_REACTION else _MIN_REACTION

    def react(
        self,
        t: float,
        horizon: float,
        out: Sequence[bool],
        flippers: Sequence[int],
        snap: bool,
        pool: bool,
        slap: bool = False,
        tops: Sequence[Card | None] | Callable[[], Sequence[Card | None]] = (),
        flipped: Sequence[int] = (),
    ) -> list[Call]:
        """The calls the bots make after the flip at ``t``, all with onsets before ``horizon``.

        ``out[seat]`` says who is out of the game, ``flippers`` who just
        flipped; ``snap``/``pool``/``slap`` say what is really on show. With
        nothing on show a bot may still call "snap" by mistake, likelier when
        a rank next to a just-flipped card (piles ``flipped``) shows on
        ``tops``: the top cards, or a function giving them (``game.showing``),
        so the copy is made only on the rare flips that need it. Bots keep
        the table's rules: the flipper holds back when they may not call, and
        only the flipper claims a pool when the pool is the flipper's.
        """
        rng = self.rng
        if not (snap or pool or slap):
            # One draw decides whether anyone errs (near misses are the likelier
            # error, so most flips stop here), the same draw picks who.
            u = rng.random()
            if u >= self._p_near:
                return []
            near = _near_miss(tops() if callable(tops) else tops, flipped)
            if not near and u >= self._p_false:
                return []
            seat = _pick(self._cum_near if near else self._cum_false, u)
            if out[seat] or (not self.flipper_may_call and seat in flippers):
                return []
            onset = t + self.reaction(seat)
            if onset >= horizon:
                return []
            name = self.profiles[seat].name
            return [make_call(name, self._words[name][SNAP], onset)]
        calls: list[Call] = []
        random, gauss, exp = rng.random, rng.gauss, math.exp
        jitter = self._jitter
        for seat, (name, miss, pool_slip, mu, sigma, words) in enumerate(self._bots):
            if out[seat] or random() < miss:
                continue
            flipper = seat in flippers
            if flipper and not self.flipper_may_call:
                continue
            may_pool = pool and (flipper or not self.pool_flipper_only)
            if slap:
                kind = SLAP
            elif may_pool and (not snap or random() < 0.5):
                kind = POOL
            elif snap:  # a slip of the tongue: "snap pool" with no pool match on show
                kind = POOL if not pool and random() < pool_slip else SNAP
            else:
                continue  # only the pool is on, and it is not this bot's to claim
            # self.reaction(seat), inlined: this loop runs for every bot on every match
            r = exp(mu + sigma * gauss())
            if jitter:
                r += jitter * gauss()
            onset = t + (r if r > _MIN_REACTION else _MIN_REACTION)
            if onset < horizon:
                calls.append(make_call(name, words[kind], onset))
        return calls


def _near_miss(tops: Sequence[Card | None], flipped: Sequence[int]) -> bool:
    """A rank next to a just-flipped card's is on show: where false snaps happen."""
    for p in flipped:
        card = tops[p]
        if card is None or card.rank is None:
            continue  # picture cards have no neighbours
        r = card.rank
        for top in tops:
            if top is not None and top.rank is not None and (top.rank == r + 1 or top.rank == r - 1):
                return True
    return False


def _pick(cumulative: Sequence[float], u: float) -> int:
    """The seat whose slice of the cumulative weights contains ``u``."""
    return min(bisect_right(cumulative, u), len(cumulative) - 1)
