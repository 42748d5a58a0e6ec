"""Seeded draws without replacement: a random pool, its hardest half, a random rest.

Every round has its own generator, seeded by (seed, round), so a resumed run draws what the
uninterrupted run would have drawn. The population is kept in a sorted order for the same
reason. ``stats`` explains why the pool and its strata make an unbiased mean.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import numpy as np

from agentiqa_cli.evaluate.records import Sample

POOL_FACTOR = 2  # images screened per sample: a larger pool finds harder images, but its
# random stratum then mixes more, and the mean's variance grows (simulated in the tests)


def round_rng(seed: int, round_: int) -> np.random.Generator:
    return np.random.default_rng([seed, round_])


def draw_pool(remaining: Sequence[str], n: int, rng: np.random.Generator) -> list[str]:
    """The images to screen this round: all that are left when ``n`` or fewer are (a
    census), else a random POOL_FACTOR·n of them (all, if fewer are left)."""
    if len(remaining) <= n:
        return list(remaining)
    size = min(len(remaining), POOL_FACTOR * n)
    picked = rng.choice(len(remaining), size=size, replace=False)
    return [remaining[int(i)] for i in sorted(picked)]


def split(
    pool: Sequence[str], hardness: Mapping[str, float], n: int, rng: np.random.Generator
) -> list[Sample]:
    """``n // 2`` hardest images of the pool (lowest reading; ties in random order) and a
    random ``n - n // 2`` of the rest. A pool of ``n`` or fewer is taken whole, as random
    samples (nothing to choose). Unread images (``hardness`` missing) are never "hard"."""
    if len(pool) <= n:
        return [Sample(image=p, stratum="random", hardness=hardness.get(p)) for p in pool]
    order = [pool[int(i)] for i in rng.permutation(len(pool))]
    order.sort(key=lambda p: hardness.get(p, math.inf))  # stable: ties stay shuffled
    h = n // 2
    hard = order[:h]
    rest = sorted(order[h:])
    picked = rng.choice(len(rest), size=n - h, replace=False)
    random = [rest[int(i)] for i in sorted(picked)]
    return [Sample(image=p, stratum="hard", hardness=hardness.get(p)) for p in hard] + [
        Sample(image=p, stratum="random", hardness=hardness.get(p)) for p in random
    ]
