"""V-QPP-Bench's tools as pure functions over H×W×3 float32 arrays in [0, 1].

``apply`` runs operations in order; every operation is deterministic, so a row of the
operations CSV reproduces its image. Crop and fill need a box (``locate`` resolves a
target to one before this runs); an operation without one is refused.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from numpy.typing import NDArray

from agentiqa_cli.imaging.load import MIN_SIDE
from agentiqa_cli.imaging.restore import estimate_sigma, nl_means, richardson_lucy
from agentiqa_cli.imperfect.records import (
    Crop,
    Deblur,
    Denoise,
    Fill,
    Flip,
    Lum,
    Operation,
    Rotate,
)

Array = NDArray[np.float32]

# V-QPP-Bench App. A.2: Richardson-Lucy with a 15×15 Gaussian PSF, 30 iterations; the PSF's
# sigma is OpenCV's default for a 15-tap kernel (0.3·((15-1)/2-1)+0.8 = 2.6)
PSF_SIZE, PSF_SIGMA, RL_ITERATIONS = 15, 2.6, 30
MIN_CROP_PX = MIN_SIDE  # smaller than this, no input is read at all (imaging.load)


def _psf() -> NDArray[np.float64]:
    r = np.arange(PSF_SIZE) - PSF_SIZE // 2
    g = np.exp(-(r**2) / (2 * PSF_SIGMA**2))
    k = np.outer(g, g)
    return np.asarray(k / k.sum(), dtype=np.float64)


def rotate(x: Array, degrees: int) -> Array:
    """Clockwise by 90, 180 or 270 degrees (lossless)."""
    return np.ascontiguousarray(np.rot90(x, k=-(degrees // 90) % 4, axes=(0, 1)))


def flip(x: Array, direction: str) -> Array:
    if direction == "horizontal":
        return np.ascontiguousarray(x[:, ::-1])
    if direction == "vertical":
        return np.ascontiguousarray(x[::-1])
    return np.ascontiguousarray(x[::-1, ::-1])


def lum(x: Array, factor: float) -> Array:
    out: Array = np.clip(x * np.float32(factor), 0.0, 1.0).astype(np.float32)
    return out


def deblur(x: Array) -> Array:
    psf = _psf()
    pad = PSF_SIZE
    out = np.empty_like(x)
    for c in range(x.shape[2]):  # reflection padding against ringing at the borders
        ch = np.pad(x[..., c].astype(np.float64), pad, mode="reflect")
        out[..., c] = richardson_lucy(ch, psf, RL_ITERATIONS)[pad:-pad, pad:-pad]
    return np.clip(out, 0.0, 1.0).astype(np.float32)


def denoise(x: Array) -> Array:
    """Non-local means with the noise level estimated from the image (the mean of the
    channels' estimates; h = 0.8 sigma, 5 px patches within 6 px)."""
    sigma = float(np.mean([estimate_sigma(x[..., c]) for c in range(x.shape[2])]))
    if not sigma > 0.0:  # no detail at all (or none but exact zeros): nothing to remove
        return x.copy()
    out = nl_means(x, h=0.8 * sigma, sigma=sigma, patch=5, distance=6)
    res: Array = np.clip(out, 0.0, 1.0).astype(np.float32)
    return res


def crop(x: Array, left: int, top: int, right: int, bottom: int) -> Array:
    if right - left < MIN_CROP_PX or bottom - top < MIN_CROP_PX:
        raise ValueError(f"crop box {right - left}×{bottom - top} px is below {MIN_CROP_PX} px")
    return np.ascontiguousarray(x[top:bottom, left:right])


def fill(x: Array, left: int, top: int, right: int, bottom: int) -> Array:
    out = x.copy()
    out[top:bottom, left:right] = 1.0
    return out


def apply_one(x: Array, op: Operation) -> Array:
    h, w = x.shape[:2]
    match op:
        case Rotate():
            return rotate(x, op.degrees)
        case Flip():
            return flip(x, op.direction)
        case Lum():
            return lum(x, op.factor)
        case Deblur():
            return deblur(x)
        case Denoise():
            return denoise(x)
        case Crop() | Fill():
            if op.bbox is None:
                raise ValueError(f"{op.tool} without a box (target {op.target!r} not located)")
            box = op.bbox.pixels(w, h)
            return crop(x, *box) if isinstance(op, Crop) else fill(x, *box)
    raise ValueError(f"unknown operation {op!r}")


def apply(x: Array, ops: Sequence[Operation]) -> Array:
    for op in ops:
        x = apply_one(x, op)
    return x
