"""Multi-metric voting between candidates (EvoIR-Agent Eq. 6).

For two candidates i and j measured by the same metrics M, ``r(i≻j) = (1/|M|) Σ_m I_m``
where ``I_m`` is 1 when m is higher-better and ``m_i > m_j`` or lower-better and
``m_i < m_j``. *Ours*: an exact tie on a metric counts one half for each side, so
``r(i≻j) + r(j≻i) = 1`` and the outcome is the same whichever side is asked; a metric
either candidate could not be measured on is left out of that pair's |M|, and a pair with
no metric in common has no outcome. ``r > 0.5`` is a win, ``< 0.5`` a loss, ``= 0.5`` a tie.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np
from numpy.typing import NDArray

Direction = Literal["higher", "lower"]
Outcome = Literal["w", "l", "t"]


def preference(
    a: Mapping[str, float | None],
    b: Mapping[str, float | None],
    directions: Mapping[str, Direction],
) -> float | None:
    """r(a≻b) over the metrics in ``directions`` both sides have; None when there are none."""
    total = 0.0
    used = 0
    for name, direction in directions.items():
        x, y = a.get(name), b.get(name)
        if x is None or y is None or not (math.isfinite(x) and math.isfinite(y)):
            continue
        used += 1
        if x == y:
            total += 0.5
        elif (x > y) == (direction == "higher"):
            total += 1.0
    return total / used if used else None


def outcome(r: float) -> Outcome:
    return "w" if r > 0.5 else "l" if r < 0.5 else "t"


@dataclass(frozen=True)
class Counts:
    """Pairwise counts over k candidates: ``wins[i, j]`` = times i beat j (so the losses
    of i against j are ``wins[j, i]``), ``ties`` symmetric."""

    wins: NDArray[np.float64]
    ties: NDArray[np.float64]

    @classmethod
    def zeros(cls, k: int) -> Counts:
        return cls(np.zeros((k, k)), np.zeros((k, k)))

    def __add__(self, other: Counts) -> Counts:
        return Counts(self.wins + other.wins, self.ties + other.ties)

    @property
    def k(self) -> int:
        return int(self.wins.shape[0])


def vote(
    metrics: Sequence[Mapping[str, float | None]], directions: Mapping[str, Direction]
) -> Counts:
    """One record's outcomes: every pair of candidates (in ``metrics``' order) compared."""
    k = len(metrics)
    c = Counts.zeros(k)
    for i in range(k):
        for j in range(i + 1, k):
            r = preference(metrics[i], metrics[j], directions)
            if r is None:
                continue
            o = outcome(r)
            if o == "w":
                c.wins[i, j] += 1
            elif o == "l":
                c.wins[j, i] += 1
            else:
                c.ties[i, j] += 1
                c.ties[j, i] += 1
    return c


def borda(counts: Counts) -> NDArray[np.float64]:
    """Eq. 7's R_i from counts: the mean share of comparisons won (a tie is one half)."""
    n = counts.wins + counts.wins.T + counts.ties
    score = counts.wins + 0.5 * counts.ties
    with np.errstate(invalid="ignore", divide="ignore"):
        share = np.where(n > 0, score / np.where(n > 0, n, 1), np.nan)
    out: NDArray[np.float64] = np.nanmean(np.where(np.eye(counts.k, dtype=bool), np.nan, share), 1)
    return out
