"""Exact duplicates (same bytes) and near duplicates (perceptual hashes, then a pixel check).

Near duplicates are found in two steps. Candidates: two 64-bit hashes per image from
``imagehash`` — the DCT hash (phash) and the gradient hash (dhash) — whose summed Hamming
distance is at most ``max_distance`` of 128 bits. Hashes alone cannot separate a slightly
cropped copy from a different picture with the same coarse layout (two flat wallpapers),
so each candidate pair is then checked on small gray views: the correlation of one image
with crops of the other (scales 100/94/88 %, nine positions) must reach ``min_similarity``.
Pairs are joined into sets (connected components), so a chain of copies is one set.
The defaults were chosen on real photos by ``scripts/dupes_check.py`` (docs/guides.md, report).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from numpy.typing import NDArray
from PIL import Image

from agentiqa_cli.report.facts import GRAY_SIDE

DEFAULT_MAX_DISTANCE = 40
DEFAULT_MIN_SIMILARITY = 0.93
_BLOCK_BYTES = 64 << 20  # the pairwise XOR works on blocks of rows of about this size
_VIEW = 32
_SCALES = (1.0, 0.94, 0.88)
_POPCOUNT = np.array([bin(i).count("1") for i in range(256)], dtype=np.uint8)

F32 = NDArray[np.float32]


def exact_sets(digests: Sequence[str]) -> list[list[int]]:
    """Indices grouped by identical content hash; only groups of two or more."""
    groups: dict[str, list[int]] = {}
    for i, d in enumerate(digests):
        if d:
            groups.setdefault(d, []).append(i)
    return [g for g in groups.values() if len(g) > 1]


def _u64(hashes: Sequence[int]) -> NDArray[np.uint64]:
    return np.array([h & 0xFFFFFFFFFFFFFFFF for h in hashes], dtype=np.uint64)


def _popcount(x: NDArray[np.uint64]) -> NDArray[np.uint8]:
    """Set bits per element (0-64, so two counts still fit a byte)."""
    if hasattr(np, "bitwise_count"):  # numpy >= 2.0
        return np.bitwise_count(x)
    b = x[..., None].view(np.uint8)  # older numpy: a byte lookup table
    return _POPCOUNT[b].sum(axis=-1, dtype=np.uint8)


def hamming(a: Sequence[int], b: Sequence[int]) -> NDArray[np.int32]:
    """Pairwise Hamming distances between two lists of 64-bit hashes (len(a) × len(b))."""
    return _popcount(np.bitwise_xor(_u64(a)[:, None], _u64(b)[None, :])).astype(np.int32)


def hash_candidates(
    phashes: Sequence[int], dhashes: Sequence[int], max_distance: int = DEFAULT_MAX_DISTANCE
) -> list[tuple[int, int, int]]:
    """Every (i, j, distance) with i < j and phash + dhash distance ≤ ``max_distance``."""
    n = len(phashes)
    block = max(1, _BLOCK_BYTES // (8 * max(1, n)))
    p, d_ = _u64(phashes), _u64(dhashes)
    out: list[tuple[int, int, int]] = []
    for start in range(0, n, block):
        stop = min(n, start + block)
        d = _popcount(np.bitwise_xor(p[start:stop, None], p[None, :]))
        d += _popcount(np.bitwise_xor(d_[start:stop, None], d_[None, :]))
        rows, cols = np.nonzero(d <= max_distance)
        for r, c in zip(rows.tolist(), cols.tolist(), strict=True):
            if start + r < c:
                out.append((start + r, c, int(d[r, c])))
    return out


def _unit(a: F32) -> F32:
    v = a.ravel() - a.mean()
    norm = float(np.linalg.norm(v))
    return v / norm if norm > 0 else v


def views(gray: bytes) -> F32:
    """Unit-norm vectors of the whole view and of its crops (row 0: the whole view)."""
    im = Image.frombytes("L", (GRAY_SIDE, GRAY_SIDE), gray)
    out = []
    for s in _SCALES:
        side = GRAY_SIDE * s
        steps = (0.0,) if s == 1.0 else (0.0, (GRAY_SIDE - side) / 2, GRAY_SIDE - side)
        for x in steps:
            for y in steps:
                box = (x, y, x + side, y + side)
                crop = im.resize((_VIEW, _VIEW), Image.Resampling.BILINEAR, box=box)
                out.append(_unit(np.asarray(crop, dtype=np.float32)))
    return np.stack(out)


def similarity(va: F32, vb: F32) -> float:
    """The best correlation of either image with a crop of the other, in [-1, 1]."""
    return max(float((va @ vb[0]).max()), float((vb @ va[0]).max()))


def near_pairs(
    phashes: Sequence[int],
    dhashes: Sequence[int],
    grays: Sequence[bytes],
    max_distance: int = DEFAULT_MAX_DISTANCE,
    min_similarity: float = DEFAULT_MIN_SIMILARITY,
) -> list[tuple[int, int, float]]:
    """Every (i, j, similarity) that passes both steps."""
    cache: dict[int, F32] = {}

    def view(i: int) -> F32:
        if i not in cache:
            cache[i] = views(grays[i])
        return cache[i]

    out = []
    for i, j, _ in hash_candidates(phashes, dhashes, max_distance):
        sim = similarity(view(i), view(j))
        if sim >= min_similarity:
            out.append((i, j, sim))
    return out


def connected_sets(n: int, pairs: Sequence[tuple[int, int]]) -> list[list[int]]:
    """Connected components of the pair graph with two or more members, in index order."""
    parent = list(range(n))

    def root(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    for i, j in pairs:
        ri, rj = root(i), root(j)
        if ri != rj:
            parent[max(ri, rj)] = min(ri, rj)
    groups: dict[int, list[int]] = {}
    for i in range(n):
        groups.setdefault(root(i), []).append(i)
    return sorted((g for g in groups.values() if len(g) > 1), key=lambda g: g[0])


def near_sets(
    phashes: Sequence[int],
    dhashes: Sequence[int],
    grays: Sequence[bytes],
    digests: Sequence[str],
    max_distance: int = DEFAULT_MAX_DISTANCE,
    min_similarity: float = DEFAULT_MIN_SIMILARITY,
) -> list[list[int]]:
    """Sets of near duplicates holding at least two different contents (byte-identical
    files alone make an exact-duplicate set, as in CleanVision)."""
    pairs = [
        (i, j)
        for i, j, _ in near_pairs(phashes, dhashes, grays, max_distance, min_similarity)
        if digests[i] != digests[j]
    ]
    return connected_sets(len(phashes), pairs)
