"""pyiqa's classical full-reference metrics in numpy/scipy: the same values, without torch.

pyiqa 0.1.16 computes ``ssim`` in float64 with a full 11×11 ``conv2d``: on a CPU torch has
no fast float64 convolution (it falls back to im2col + matmul, ~260 ms for one 512×320
luma plane, five planes per call). The Gaussian window is separable, so two 11-tap passes
(scipy's ``correlate1d``) give the same sums at a fraction of the cost; PSNR and GMSD are
a few array operations. Running them here also means a full-reference ``score`` never
imports torch or pyiqa (about 2 s and 400 MiB per process).

Each function reproduces pyiqa's arithmetic step by step (the tests compare against
pyiqa on varied images, |Δ| < 1e-4): luma is YIQ's Y from float32 RGB in [0, 1], scaled
to 0-255 and rounded as pyiqa does "to match MATLAB"; the SSIM window is MATLAB's
``fspecial('gaussian', 11, 1.5)``; GMSD averages 2×2 blocks (dropping an odd last row or
column), applies Prewitt filters with zero padding and takes the unbiased standard
deviation. ``NATIVE`` maps pyiqa metric ids to these functions; the runner uses them for
cards whose ``metric`` is one of those ids.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from agentiqa_cli.imaging.load import LoadedImage

F32 = NDArray[np.float32]
F64 = NDArray[np.float64]

_Y_WEIGHTS = np.array([0.299, 0.587, 0.114], dtype=np.float32)  # YIQ's Y row, as pyiqa's


def _gaussian_taps(size: int = 11, sigma: float = 1.5) -> F64:
    """One axis of MATLAB's fspecial('gaussian', size, sigma): the 2-D window is the outer
    product of these taps (no tap falls under fspecial's eps threshold at 11/1.5)."""
    x = np.arange(size, dtype=np.float64) - (size - 1) / 2.0
    g: F64 = np.exp(-(x * x) / (2.0 * sigma * sigma))
    out: F64 = g / g.sum()
    return out


_SSIM_TAPS = _gaussian_taps()


def _cached(image: LoadedImage, key: str, make: Callable[[], F64]) -> F64:
    cache = image._tensors
    if key not in cache:
        cache[key] = make()
    out: F64 = cache[key]
    return out


def _luma255(image: LoadedImage) -> F64:
    """pyiqa's ``to_y_channel(x, 255)``: Y in float32, ×255, rounded; as float64."""

    def make() -> F64:
        y = image.pixels @ _Y_WEIGHTS
        y *= np.float32(255.0)
        return np.round(y).astype(np.float64)

    return _cached(image, "native:y255", make)


def _rgb255(image: LoadedImage) -> F64:
    """pyiqa's RGB path for SSIM without luma: channels ×255, rounded; channel first."""

    def make() -> F64:
        x = image.pixels * np.float32(255.0)
        return np.round(x).astype(np.float64).transpose(2, 0, 1)

    return _cached(image, "native:rgb255", make)


def _same_shape(x: LoadedImage, ref: LoadedImage) -> None:
    if x.pixels.shape != ref.pixels.shape:
        raise ValueError(
            f"image is {x.size[0]}×{x.size[1]} but its reference is {ref.size[0]}×{ref.size[1]}"
        )


def _valid_gaussian(a: F64) -> F64:
    """``filter2(a, fspecial(11, 1.5), 'valid')`` over the last two axes."""
    from scipy import ndimage  # imported when first needed: it costs ~0.3 s of start-up

    r = len(_SSIM_TAPS) // 2
    # both passes along the contiguous last axis (the strided one is several times slower)
    out = ndimage.correlate1d(a, _SSIM_TAPS, axis=-1, mode="constant")[..., r:-r]
    out = np.ascontiguousarray(np.swapaxes(out, -1, -2))
    out = ndimage.correlate1d(out, _SSIM_TAPS, axis=-1, mode="constant")[..., r:-r]
    return np.swapaxes(out, -1, -2)


def ssim_planes(x: F64, y: F64, data_range: float = 255.0) -> float:
    """pyiqa's ``ssim`` (no downsampling) on planes of shape (..., H, W); mean over all."""
    return _ssim_cs(x, y, data_range)[0]


def _ssim_cs(x: F64, y: F64, data_range: float = 255.0) -> tuple[float, float]:
    """Mean SSIM and mean contrast-structure term (pyiqa's ``get_cs``)."""
    c1 = (0.01 * data_range) ** 2
    c2 = (0.03 * data_range) ** 2
    # the five local moments in two separable passes over one stacked array
    m = _valid_gaussian(np.stack([x, y, x * x, y * y, x * y]))
    mu1, mu2 = m[0], m[1]
    mu1_sq, mu2_sq, mu1_mu2 = mu1 * mu1, mu2 * mu2, mu1 * mu2
    sigma1_sq = m[2] - mu1_sq
    sigma2_sq = m[3] - mu2_sq
    sigma12 = m[4] - mu1_mu2
    cs = np.maximum((2 * sigma12 + c2) / (sigma1_sq + sigma2_sq + c2), 0.0)
    ssim_map = ((2 * mu1_mu2 + c1) / (mu1_sq + mu2_sq + c1)) * cs
    return float(ssim_map.mean()), float(cs.mean())


def ssim(image: LoadedImage, ref: LoadedImage) -> float:
    """pyiqa ``ssim``: on rounded 0-255 luma."""
    _same_shape(image, ref)
    return ssim_planes(_luma255(image), _luma255(ref))


def ssimc(image: LoadedImage, ref: LoadedImage) -> float:
    """pyiqa ``ssimc``: on each rounded 0-255 RGB channel, averaged."""
    _same_shape(image, ref)
    return ssim_planes(_rgb255(image), _rgb255(ref))


# pyiqa's MS-SSIM scale weights (a float32 tensor, cast to the float64 of the planes)
_MS_WEIGHTS = np.array([0.0448, 0.2856, 0.3001, 0.2363, 0.1333], dtype=np.float32).astype(
    np.float64
)


def _halve(a: F64) -> F64:
    """torch's ``avg_pool2d(a, 2, padding=(H % 2, W % 2))``: an odd side is padded with a
    zero row/column on both ends, which counts in the mean (count_include_pad)."""
    ph, pw = a.shape[-2] % 2, a.shape[-1] % 2
    if ph or pw:
        a = np.pad(a, [(ph, ph), (pw, pw)])
    h, w = a.shape[-2] // 2, a.shape[-1] // 2
    out: F64 = a[: 2 * h, : 2 * w].reshape(h, 2, w, 2).mean(axis=(1, 3))
    return out


def ms_ssim(image: LoadedImage, ref: LoadedImage) -> float:
    """pyiqa ``ms_ssim``: five scales of rounded 0-255 luma, product of the contrast-structure
    terms of the first four and SSIM of the last, each to its weight."""
    _same_shape(image, ref)
    x, y = _luma255(image), _luma255(ref)
    cs: list[float] = []
    for scale in range(len(_MS_WEIGHTS)):
        if min(x.shape) < len(_SSIM_TAPS):
            raise ValueError(
                f"ms_ssim: scale {scale + 1} is {x.shape[1]}×{x.shape[0]}, smaller than the "
                f"{len(_SSIM_TAPS)}-pixel window (the image needs ~161 px per side)"
            )
        ssim_val, c = _ssim_cs(x, y)
        cs.append(c)
        x, y = _halve(x), _halve(y)
    prod = np.prod(np.array(cs[:-1]) ** _MS_WEIGHTS[:-1])
    return float(prod * ssim_val ** _MS_WEIGHTS[-1])


def psnr(image: LoadedImage, ref: LoadedImage) -> float:
    """pyiqa ``psnr``: over RGB in [0, 1], eps 1e-8 (identical images give 80 dB)."""
    _same_shape(image, ref)
    d = image.pixels.astype(np.float64) - ref.pixels
    mse = float(np.mean(d * d))
    return float(10.0 * np.log10(1.0 / (mse + 1e-8)))


def psnry(image: LoadedImage, ref: LoadedImage) -> float:
    """pyiqa ``psnry``: on YIQ's Y in [0, 1] (not rounded at that range)."""
    _same_shape(image, ref)
    d = (image.pixels @ _Y_WEIGHTS).astype(np.float64) - ref.pixels @ _Y_WEIGHTS
    mse = float(np.mean(d * d))
    return float(10.0 * np.log10(1.0 / (mse + 1e-8)))


def _gradient_magnitude(y: F64) -> F64:
    from scipy import ndimage

    h, w = (y.shape[0] // 2) * 2, (y.shape[1] // 2) * 2
    a = y[:h, :w].reshape(h // 2, 2, w // 2, 2).mean(axis=(1, 3))
    # Prewitt [[1, 0, -1]] × 3 rows / 3 (and its transpose) as a correlation, zero padded
    rows = ndimage.correlate1d(a, np.full(3, 1.0 / 3.0), axis=0, mode="constant")
    ix = ndimage.correlate1d(rows, np.array([1.0, 0.0, -1.0]), axis=1, mode="constant")
    cols = ndimage.correlate1d(a, np.full(3, 1.0 / 3.0), axis=1, mode="constant")
    iy = ndimage.correlate1d(cols, np.array([1.0, 0.0, -1.0]), axis=0, mode="constant")
    out: F64 = np.sqrt(ix * ix + iy * iy + 1e-12)
    return out


def gmsd(image: LoadedImage, ref: LoadedImage, t: float = 170.0) -> float:
    """pyiqa ``gmsd``: deviation of the gradient-magnitude similarity map (lower is better)."""
    _same_shape(image, ref)
    g1 = _gradient_magnitude(_luma255(image))
    g2 = _gradient_magnitude(_luma255(ref))
    q = (2 * g1 * g2 + t) / (g1 * g1 + g2 * g2 + t)
    return float(np.std(q, ddof=1))


@dataclass(frozen=True)
class NativeMetric:
    fn: Callable[[LoadedImage, LoadedImage], float]
    lower_better: bool


NATIVE: dict[str, NativeMetric] = {
    "psnr": NativeMetric(psnr, False),
    "psnry": NativeMetric(psnry, False),
    "ssim": NativeMetric(ssim, False),
    "ssimc": NativeMetric(ssimc, False),
    "ms_ssim": NativeMetric(ms_ssim, False),
    "gmsd": NativeMetric(gmsd, True),
}
