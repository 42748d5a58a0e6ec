"""Five tiers on the 1–5 scale (Evaluation Agent App. B), or cut points from a score density.

Tiers are half-open: a mean of exactly 3.5 is High. The default cut points are fixed
(1.5, 2.5, 3.5, 4.5). The paper instead scores many samples with the dimension's tool and
partitions their scores into five tiers by the scores' density, then maps each sampled
image into a tier (Evaluation Agent, App. B). Two ways to do that here:

- ``--tiers REF.csv``: the quintiles of a reference collection's scores, so "High" means
  "in the top 40% of the reference";
- ``--tiers density``: the quintiles of a Gaussian kernel density fitted to the detector
  scores (``score``'s fused default set) of up to ``DENSITY_POOL`` images of the folder
  itself, drawn at random before the first round: "High" means "in the top 40% of this
  folder as the detectors see it". Each sample's tier (the CSV's ``tier`` column) and the
  verdict's tier mix use those cuts.
"""

from __future__ import annotations

import csv
import io
import itertools
import math
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, get_args

import numpy as np

from agentiqa_cli import heavy
from agentiqa_cli.errors import ConfigError
from agentiqa_cli.io.read import read_text

TierName = Literal["Very Low", "Low", "Moderate", "High", "Very High"]
TIER_NAMES: tuple[TierName, ...] = get_args(TierName)  # worst first
DEFAULT_CUTS = (1.5, 2.5, 3.5, 4.5)  # lowest score of Low, Moderate, High, Very High
QUANTILES = (0.2, 0.4, 0.6, 0.8)
MIN_REFERENCE = 10  # fewer scores than this cannot place four quantiles meaningfully
DENSITY_POOL = 200  # images of the folder scored for ``--tiers density``


def parse_tier(text: str) -> TierName:
    """``high``, ``Very-High``, ``very_high``, ``VeryHigh`` → the tier's name."""
    key = re.sub(r"[^a-z]", "", text.lower())
    for name in TIER_NAMES:
        if name.lower().replace(" ", "") == key:
            return name
    raise ConfigError(f"unknown tier {text!r}; one of: {', '.join(TIER_NAMES)}")


@dataclass(frozen=True)
class Tiers:
    """Four ascending cut points; ``source`` says where they came from (for the trace)."""

    cuts: tuple[float, float, float, float] = DEFAULT_CUTS
    source: str = "default (1.5, 2.5, 3.5, 4.5)"

    def __post_init__(self) -> None:
        if any(b <= a for a, b in itertools.pairwise(self.cuts)):
            raise ConfigError(f"tier cut points must increase, got {list(self.cuts)}")

    def tier(self, score: float) -> TierName:
        return TIER_NAMES[sum(score >= c for c in self.cuts)]

    def bounds(self, name: TierName) -> tuple[float, float]:
        """The tier's [low, high) on the score scale (open-ended at both extremes)."""
        i = TIER_NAMES.index(name)
        low = -math.inf if i == 0 else self.cuts[i - 1]
        high = math.inf if i == len(self.cuts) else self.cuts[i]
        return low, high

    def fits(self, lo: float, hi: float) -> bool:
        """Whether the interval [lo, hi] lies inside one tier."""
        if not (math.isfinite(lo) and math.isfinite(hi)):
            return False
        return self.tier(lo) == self.tier(hi)

    def rank(self, name: TierName) -> int:
        return TIER_NAMES.index(name)


def tiers_from_reference(path: Path, column: str = "score") -> Tiers:
    """Cut points at the 20/40/60/80% quantiles of a reference results CSV's scores (rows
    with ``status`` ok, as written by score/assess/evaluate)."""
    text = read_text(path, "--tiers", limit=256 * 1024 * 1024)  # regular, bounded, UTF-8
    try:
        rows = list(csv.DictReader(io.StringIO(text, newline="")))
    except csv.Error as e:
        raise ConfigError(f"--tiers {path}: not a CSV: {e}") from None
    if rows and column not in rows[0]:
        raise ConfigError(f"--tiers {path}: no {column!r} column")
    values = []
    for row in rows:
        if row.get("status", "ok") != "ok":
            continue
        try:
            v = float(row[column])
        except (TypeError, ValueError):
            continue
        if math.isfinite(v):
            values.append(v)
    if len(values) < MIN_REFERENCE:
        raise ConfigError(
            f"--tiers {path}: {len(values)} scores; the quintiles need at least {MIN_REFERENCE}"
        )
    q = np.quantile(np.asarray(values), QUANTILES)
    cuts = (float(q[0]), float(q[1]), float(q[2]), float(q[3]))
    if any(b <= a for a, b in itertools.pairwise(cuts)):
        raise ConfigError(
            f"--tiers {path}: the reference scores are too concentrated to separate five "
            f"tiers (quintiles {', '.join(f'{c:.3f}' for c in cuts)})"
        )
    shown = ", ".join(f"{c:.3f}" for c in cuts)
    return Tiers(cuts, f"quintiles of {path.name} ({len(values)} scores: {shown})")


def density_quantiles(values: list[float], grid: int = 4096) -> tuple[float, float, float, float]:
    """The 20/40/60/80% quantiles of a Gaussian kernel density fitted to ``values``: the
    paper's tiers "from the score density" (App. B), smooth where a handful of equal scores
    would make the plain quantiles collide. The bandwidth is Silverman's rule on the most
    robust of the spreads (σ, IQR/1.34, 1.4826·MAD): a collection of two modes (clean and
    damaged images) is not smoothed into one."""
    x = np.asarray(values, dtype=float)
    sd = float(x.std(ddof=1))
    q75, q25 = np.percentile(x, [75, 25])
    mad = 1.4826 * float(np.median(np.abs(x - np.median(x))))
    spread = min(v for v in (sd, float(q75 - q25) / 1.34, mad) if v > 0)
    h = 0.9 * spread * len(x) ** -0.2
    kde = heavy.stats.gaussian_kde(x, bw_method=h / sd)
    bw = float(np.sqrt(kde.covariance[0, 0]))
    t = np.linspace(x.min() - 4 * bw, x.max() + 4 * bw, grid)
    cdf = np.cumsum(kde(t))
    cdf /= cdf[-1]
    q = np.interp(QUANTILES, cdf, t)
    return float(q[0]), float(q[1]), float(q[2]), float(q[3])


def tiers_from_density(values: list[float], what: str) -> Tiers | None:
    """Cut points from the density of ``values`` (None: too few or all equal — the caller
    keeps the fixed cuts and says so)."""
    finite = [v for v in values if math.isfinite(v)]
    if len(finite) < MIN_REFERENCE or float(np.ptp(finite)) == 0.0:
        return None
    cuts = density_quantiles(finite)
    if any(b <= a for a, b in itertools.pairwise(cuts)):
        return None
    shown = ", ".join(f"{c:.3f}" for c in cuts)
    return Tiers(cuts, f"density of {len(finite)} {what} (KDE quintiles: {shown})")
