"""Five tiers on the 1–5 scale (Evaluation Agent App. B), or cut points from a reference collection.

Tiers are half-open: a mean of exactly 3.5 is High. ``--tiers REF.csv`` takes the cut points
from the quintiles of a reference collection's scores (the paper tiers each dimension from
the density of many samples' scores), so "High" then means "in the top 40% of the reference".
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

from agentiqa_cli.errors import ConfigError
from agentiqa_cli.io.read import read_text

TierName = Literal["Very Low", "Low", "Moderate", "High", "Very High"]
TIER_NAMES: tuple[TierName, ...] = get_args(TierName)  # worst first
DEFAULT_CUTS = (1.5, 2.5, 3.5, 4.5)  # lowest score of Low, Moderate, High, Very High
QUANTILES = (0.2, 0.4, 0.6, 0.8)
MIN_REFERENCE = 10  # fewer scores than this cannot place four quantiles meaningfully


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
