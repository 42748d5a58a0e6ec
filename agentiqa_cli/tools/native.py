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

``BUILTIN_FR`` holds agentiqa's own full-reference measures (no pyiqa counterpart), which
the runner runs for cards with ``backend: builtin`` and ``mode: FR``: ``detail``, the share
of the reference's band-pass detail that the image lost or got wrong (see ``detail``).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from agentiqa_cli import heavy
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
    r = len(_SSIM_TAPS) // 2
    # both passes along the contiguous last axis (the strided one is several times slower)
    out = heavy.ndimage.correlate1d(a, _SSIM_TAPS, axis=-1, mode="constant")[..., r:-r]
    out = np.ascontiguousarray(np.swapaxes(out, -1, -2))
    out = heavy.ndimage.correlate1d(out, _SSIM_TAPS, axis=-1, mode="constant")[..., r:-r]
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
    h, w = (y.shape[0] // 2) * 2, (y.shape[1] // 2) * 2
    a = y[:h, :w].reshape(h // 2, 2, w // 2, 2).mean(axis=(1, 3))
    # Prewitt [[1, 0, -1]] × 3 rows / 3 (and its transpose) as a correlation, zero padded
    rows = heavy.ndimage.correlate1d(a, np.full(3, 1.0 / 3.0), axis=0, mode="constant")
    ix = heavy.ndimage.correlate1d(rows, np.array([1.0, 0.0, -1.0]), axis=1, mode="constant")
    cols = heavy.ndimage.correlate1d(a, np.full(3, 1.0 / 3.0), axis=1, mode="constant")
    iy = heavy.ndimage.correlate1d(cols, np.array([1.0, 0.0, -1.0]), axis=0, mode="constant")
    out: F64 = np.sqrt(ix * ix + iy * iy + 1e-12)
    return out


def gmsd(image: LoadedImage, ref: LoadedImage, t: float = 170.0) -> float:
    """pyiqa ``gmsd``: deviation of the gradient-magnitude similarity map (lower is better)."""
    _same_shape(image, ref)
    g1 = _gradient_magnitude(_luma255(image))
    g2 = _gradient_magnitude(_luma255(ref))
    q = (2 * g1 * g2 + t) / (g1 * g1 + g2 * g2 + t)
    return float(np.std(q, ddof=1))


# -- agentiqa's own full-reference measures -------------------------------------------------

DETAIL_LEVELS = 5
"""Octaves of the detail pyramid: periods of ~2-4 px (finest) to ~32-64 px at full size."""
DETAIL_FLOOR = 58.5
"""Visibility floor of the finest band, in (0-255 luma)²: like SSIM's C2 = (0.03·255)² =
58.5, it keeps an error that is faint in absolute terms from counting as a large share
of a flat area's (near-zero) detail."""
DETAIL_FLOOR_STEP = 0.5
"""Each coarser octave's floor is this fraction of the finer one's: the eye is most sensitive
to the middle of the pyramid, not to its finest octave, where a faint JPEG or sensor noise
sits (contrast sensitivity falls off above a few cycles per degree)."""
DETAIL_WINDOW = 2.0  # sigma of the local energy window, in pixels of each octave
DETAIL_GAIN = (0.5, 2.0)  # the contrast gain the reference's detail is compared at, clamped
DETAIL_CLIP = 2.0  # luma within this of 0 or 255 is clipped: left out of the gain's fit


def _detail_bands(image: LoadedImage) -> list[F64]:
    """A Laplacian-style pyramid of rounded 0-255 luma: at each octave the plane minus its
    Gaussian blur (sigma 1 px), then the blur decimated by 2 for the next octave. Made once
    per image (a reference shared by many images is decomposed once)."""
    key = "native:detail_bands"
    if key not in image._tensors:
        image._tensors[key] = _pyramid(_luma255(image))
    bands: list[F64] = image._tensors[key]
    return bands


def _pyramid(y: F64) -> list[F64]:
    out: list[F64] = []
    for _ in range(DETAIL_LEVELS):
        if min(y.shape) < 8:  # tiny images: the octaves that fit
            break
        low = heavy.ndimage.gaussian_filter(y, 1.0, mode="reflect")
        out.append(y - low)
        y = low[::2, ::2]
    return out


def detail(image: LoadedImage, ref: LoadedImage) -> float:
    """The share of the reference's band-pass detail that the image lost or got wrong: 0 for
    an identical pair, towards 1 as detail is destroyed (lower is better).

    Per octave of a Laplacian-style pyramid of luma (0-255), with local energies in a
    Gaussian window — ``E`` of the difference of the image's band and the reference's (times
    one global contrast gain, fitted by least squares, so that a uniform change of contrast
    is not read as lost detail), ``R`` of the reference's band — the local share ``E / (E + R + C)`` is about 1/2 where detail is gone
    (``E = R``: blur, pixelation, JPEG's flattened blocks), towards 1 where the image holds
    detail the reference lacks (noise, block edges, ringing) and 0 where they agree. ``C``
    is the octave's visibility floor (``DETAIL_FLOOR``, halved per coarser octave). The
    shares are averaged with weights ``E + R`` over every octave's pixels, each pixel
    counting for the area it covers (4^k at octave k): the share of the detail energy of
    either image, wherever it lies. A small textured part of a mostly flat photo (a tree
    line in fog, reeds on a dusk lake) therefore counts fully, where PSNR and SSIM average
    its loss over the whole frame and read a heavy blur of such a photo as mild; and a flat
    graphic's faint errors stay small against ``C``. The reading is the square root of that
    share: the lost or wrong share of the detail's amplitude.
    """
    _same_shape(image, ref)
    pairs = list(zip(_detail_bands(image), _detail_bands(ref), strict=True))
    # one contrast gain for the whole image (least squares over all octaves by area): a
    # global change of contrast (darkening, a flatter tone curve) is psnr's and ssim's to
    # judge, not lost detail; blur and noise barely move it, as the coarse octaves hold most
    # of the energy and noise is uncorrelated with the reference
    # over the pixels the image has not clipped to black or white: there the detail is lost,
    # not scaled, and counting it would pull the gain down as more of the frame clips
    y = _luma255(image)
    kept = (y > DETAIL_CLIP) & (y < 255.0 - DETAIL_CLIP)
    cross, power = 0.0, 0.0
    for k, (a, b) in enumerate(pairs):
        m = kept[:: 2**k, :: 2**k]
        cross += 4.0**k * float(np.mean(a * b * m))
        power += 4.0**k * float(np.mean(b * b * m))
    # kept within [1/2, 2]: a gain near 0 would excuse a total loss (a photo blown to white)
    gain = min(max(cross / power, DETAIL_GAIN[0]), DETAIL_GAIN[1]) if power > 0 else 1.0
    lost, energy = 0.0, 0.0
    floor, area = DETAIL_FLOOR, 1.0
    for a, b in pairs:
        d = a - gain * b
        e = heavy.ndimage.gaussian_filter(d * d, DETAIL_WINDOW, mode="reflect")
        r = heavy.ndimage.gaussian_filter(b * b, DETAIL_WINDOW, mode="reflect")
        w = e + r
        lost += area * float(np.mean(w * e / (w + floor)))
        energy += area * float(np.mean(w))
        floor *= DETAIL_FLOOR_STEP
        area *= 4.0
    # the square root: a share of amplitude rather than of energy, which spreads the levels of
    # a distortion evenly enough for a logistic (the energy share of mild ones is ~0.001)
    return math.sqrt(lost / energy) if energy > 0 else 0.0


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


BUILTIN_FR: dict[str, NativeMetric] = {
    "detail": NativeMetric(detail, True),
}
"""agentiqa's own full-reference measures, by the ``metric`` of their builtin FR cards."""
