"""The collection's mean from a few samples per round, without the bias of hard sampling.

Each round is a two-phase sample (Cochran 1977, §12.2–12.4, "double sampling for
stratification"): phase 1 draws a random *pool* of the images not yet assessed and reads a
cheap detector on each; the pool is split into the ``hard`` stratum (its worst images, all
assessed) and the rest, of which a random subset is assessed. Weighting each stratum by its
share of the pool makes the round's mean unbiased for the mean of the images it was drawn
from, although half the samples are the hardest ones; the variance estimator below is the
textbook one for this design (with finite-population terms).

Rounds draw from what earlier rounds left, so round k estimates the mean of the remaining
images; adding back the readings already known gives an unbiased estimate of the whole
collection's mean. Those per-round estimates have uncorrelated errors (each is unbiased
given the rounds before it), so they are averaged with weights ∝ their sample counts and
their variances add. A round that assessed every remaining image is exact.

A generator has no finite collection: its rounds are plain random samples (``remaining``
None) and the finite-population terms vanish.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from statistics import fmean
from typing import Literal

from agentiqa_cli import heavy

Stratum = Literal["hard", "random"]
LEVEL = 0.95


@dataclass(frozen=True)
class RoundData:
    """One round's readings of one sub-aspect, with the design they were drawn under."""

    hard: list[float] = field(default_factory=list)  # readings of the assessed hard images
    random: list[float] = field(default_factory=list)  # readings of the random ones
    pool: int = 0  # phase-1 size n' (screened images); 0: no screening (plain random)
    hard_pool: int = 0  # pool images put in the hard stratum (all of them were drawn)
    remaining: int | None = None  # images not yet assessed before the round; None: unbounded

    @property
    def n(self) -> int:
        return len(self.hard) + len(self.random)


@dataclass(frozen=True)
class Interval:
    mean: float
    lo: float
    hi: float
    se: float
    n: int  # readings used
    exact: bool = False  # every image of the collection was read

    @property
    def half_width(self) -> float:
        return (self.hi - self.lo) / 2


def _var(xs: Sequence[float]) -> float | None:
    return None if len(xs) < 2 else sum((x - fmean(xs)) ** 2 for x in xs) / (len(xs) - 1)


def round_estimate(r: RoundData) -> tuple[float, float]:
    """(mean of the images the round was drawn from, its estimated variance); the variance
    is ``inf`` when the round cannot tell (one reading from many images)."""
    if r.n == 0:
        raise ValueError("a round without readings has no estimate")
    # (pool images in the stratum, readings); a stratum without readings (its images
    # failed) gives its weight to the others
    if r.pool == 0:  # no screening: one stratum, the sample itself
        strata = [(r.n, r.hard + r.random)]
    else:
        both = [(r.hard_pool, r.hard), (r.pool - r.hard_pool, r.random)]
        strata = [(m, xs) for m, xs in both if xs]
    n1 = sum(m for m, _ in strata)  # phase-1 size over the strata that have readings
    w = [m / n1 for m, _ in strata]
    means = [fmean(xs) for _, xs in strata]
    mean = sum(wh * mh for wh, mh in zip(w, means, strict=True))
    big_n = r.remaining
    if big_n is not None and n1 >= big_n and all(len(xs) == m for m, xs in strata):
        return mean, 0.0  # every remaining image was read
    if n1 < 2:
        return mean, math.inf
    fallback = _var(r.hard + r.random)  # for a stratum with a single reading
    within = 0.0
    for (m, xs), wh in zip(strata, w, strict=True):
        if big_n is None:
            coef = (m - 1) / (n1 - 1)
        else:
            coef = (big_n - 1) / big_n * ((m - 1) / (n1 - 1) - (len(xs) - 1) / (big_n - 1))
        if coef <= 0.0:
            continue
        s2 = _var(xs)
        if s2 is None:
            s2 = fallback
        if s2 is None:
            return mean, math.inf
        within += coef * wh * s2 / len(xs)
    phase1 = 1.0 / (n1 - 1) if big_n is None else (big_n - n1) / (big_n * (n1 - 1))
    between = phase1 * sum(wh * (mh - mean) ** 2 for wh, mh in zip(w, means, strict=True))
    return mean, max(0.0, within + between)


@dataclass(frozen=True)
class Known:
    """Readings of images assessed before a round (their values are no longer estimated)."""

    total: float = 0.0
    count: int = 0


def combine(
    rounds: Sequence[tuple[RoundData, Known]],
    population: int | None,
    level: float = LEVEL,
    scale: tuple[float, float] = (1.0, 5.0),
) -> Interval | None:
    """The collection's mean and its ``level`` t interval (clipped to ``scale``) from rounds
    of readings, each with the readings known before it. None without any reading."""
    used = [(r, k) for r, k in rounds if r.n > 0]
    if not used:
        return None
    n = sum(r.n for r, _ in used)
    if population is not None and used[-1][1].count + used[-1][0].n >= population:
        last, known = used[-1]
        mean, var = round_estimate(last)
        if var == 0.0:  # the last round read everything that was left: the mean is known
            exact = (known.total + mean * last.n) / (known.count + last.n)
            return Interval(exact, exact, exact, 0.0, n, exact=True)
    total_w = float(n)
    mean = 0.0
    var = 0.0
    for r, known in used:
        m_k, v_k = round_estimate(r)
        a = r.n / total_w
        if population is None:
            t_k, scale_k = m_k, 1.0
        else:
            rest = max(0, population - known.count)
            t_k = (known.total + rest * m_k) / population
            scale_k = rest / population
        mean += a * t_k
        var += a * a * scale_k * scale_k * v_k
    se = math.sqrt(var)
    lo_s, hi_s = scale
    if n < 2 or not math.isfinite(se):
        return Interval(mean, lo_s, hi_s, math.inf, n)
    # Student's t quantile from scipy.special, without loading scipy.stats
    half = float(heavy.special.stdtrit(n - 1, 0.5 + level / 2)) * se
    return Interval(mean, max(lo_s, mean - half), min(hi_s, mean + half), se, n)
