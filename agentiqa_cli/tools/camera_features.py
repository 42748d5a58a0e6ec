"""Readings for the camera model (``tools/camera_model.py``): what a camera's pipeline leaves
of a distortion after its JPEG save.

A camera's demosaicing, noise reduction and JPEG save change the signal the built-in
detectors read: sensor noise is spread over neighbouring pixels and shows in the coarser
bands and in the colour planes more than in pixel-to-pixel steps; an image blown up from a
smaller one has its finest bands empty while the coarser ones keep their contrast; a blur's
cepstral zeros are filled in. ``features`` returns, besides every built-in detector's raw
reading, these band and colour statistics:

- octave band energies of the luma at viewing scale (``detectors._detail``: 1024 px on the
  long side, or smaller as it is) in a Laplacian pyramid per 32 px tile: in the most
  structured tiles (the subject, a quarter of them), each fine band against the coarse ones
  (their 90th percentile and median, log2), which falls as resolution is lost (an upscale, a
  defocus, a shake) and rises with noise;
- in the flattest tiles (a quarter), the finest and the second band's energy of luma and of
  the two colour-difference planes (log): noise where content does not mask it;
- luma percentiles and the shares of clipped and black pixels: exposure;
- the fall of energy from each octave of the whole view to the next coarser one (seven
  octaves, 2 to 256 px): how far up the spectrum a blur or an upscale reaches, which the
  32 px tiles cannot tell for a long shake or a 4-6x upscale;
- the JPEG quality of the coarsest save the pixels went through (``jpeg_quality``), from
  the lattice its quantizer leaves in the 8x8 DCT coefficients;
- natural-scene statistics of the luma at viewing scale and half of it (Mittal, Moorthy &
  Bovik 2012, BRISQUE's): the locally normalized (MSCN) coefficients'
  generalized-Gaussian shape and spread, and their correlation with each neighbour in four
  directions. Local normalization takes contrast and exposure out, so they read how a
  photo's pixels relate to their neighbours: an upscale or a blur correlates them, noise
  decorrelates them, a JPEG save makes them peakier;
- a blur's direction (``directions``): the fall of gradient energy from a coarse plane to
  the fine one along the direction where it falls most, and how much more than across it.

Every plane is read at viewing scale, so a 2x or a 24 MP photo reads as its 1024 px view;
below that the statistics follow the pixel grid: the model learns what a reading means on
photos of 0.5-1 MP, which is where it was trained.
"""

from __future__ import annotations

import functools
import math
from typing import cast

import numpy as np
from numpy.typing import NDArray

from agentiqa_cli.imaging.load import LoadedImage
from agentiqa_cli.tools.detectors import SIGNAL_DETECTORS as DETECTORS
from agentiqa_cli.tools.detectors import (
    SIGNALS,
    _cached,
    _chroma,
    _detail,
    _sample,
    _tile_sums,
    _top_clipped,
    jpeg_quality,
)

F32 = NDArray[np.float32]

TILE = 32
LEVELS = 5  # octave bands read, the finest (about 0.25-0.5 cycles/px) first
# the floor added to band energies (8-bit code values squared): below it a band is empty
FLOOR = 0.25

DETECTOR_FEATURES: tuple[str, ...] = SIGNALS
LUMA_PERCENTILES = (1, 5, 50, 95, 99)
BAND_FEATURES: tuple[str, ...] = (
    "fine0_p90", "fine1_p90", "fine2_p90", "fine0_p50", "fine1_p50", "fine2_p50",
    "flat_y0", "flat_y1", "flat_c0", "flat_c1",
    *(f"luma_p{p}" for p in LUMA_PERCENTILES), "clipped", "black",
)  # fmt: skip
OCTAVES = 7  # global octave bands read (the finest, 2-4 px, to the coarsest, 128-256 px)
OCTAVE_FEATURES: tuple[str, ...] = tuple(f"octave{k}" for k in range(OCTAVES - 1))
# the floor added to a global band's mean energy (8-bit code values squared)
OCTAVE_FLOOR = 0.01

# read by the model, not in SIGNALS (whose readings were cached for training before it)
JPEG_FEATURES: tuple[str, ...] = ("jpeg_quality",)

NSS_SCALES = 2  # the view and half of it
NSS_FEATURES: tuple[str, ...] = tuple(
    f"nss{k}_{what}" for k in range(NSS_SCALES) for what in ("shape", "var", "h", "v", "d1", "d2")
)
MSCN_C = 1.0  # added to the local spread (8-bit code units): flat areas do not blow up
NSS_BORDER = 3  # px left out at each edge, where the low-pass read mirrored pixels

# a blur's direction: the fall of gradient energy from the coarse plane to the fine one in
# the direction where it falls most (log2), and how much more it falls there than across
DIRECTION_FEATURES: tuple[str, ...] = ("direction_fall", "direction_spread")
DIRECTION_COARSE = 2  # the pyramid level whose low-pass plane is the coarse one (1/4 px)

FEATURES: tuple[str, ...] = (
    DETECTOR_FEATURES
    + BAND_FEATURES
    + OCTAVE_FEATURES
    + JPEG_FEATURES
    + NSS_FEATURES
    + DIRECTION_FEATURES
)


def _tiles(b: F32, t: int, ny: int, nx: int) -> F32:
    """The mean energy of ``b`` in each of the ny × nx tiles of t px (row-major)."""
    return (_tile_sums(b[: ny * t, : nx * t] ** 2, t) / np.float32(t * t)).ravel()


def _binomial(a: F32) -> F32:
    """The 5-tap binomial low-pass (1 4 6 4 1)/16 along both axes (σ ≈ 1 px): four sums of
    neighbouring pairs along each axis (the binomial is the pair (1 1) four times over),
    several times faster than a general Gaussian filter at this size."""
    r = np.pad(a, 2, mode="symmetric")
    for _ in range(4):
        r = r[:-1] + r[1:]
    for _ in range(4):
        r = r[:, :-1] + r[:, 1:]
    r *= np.float32(1.0 / 256.0)
    return r


def _pyramid(g: F32, levels: int) -> tuple[list[F32], list[F32]]:
    """The first ``levels`` band planes of a Laplacian pyramid of ``g``, finest first (Burt
    & Adelson 1983: binomial low-pass, then halving), and each level's low-pass plane."""
    bands, lows, cur = [], [], g
    for _ in range(levels):
        low = _binomial(cur)
        bands.append(cur - low)
        lows.append(low)
        cur = low[::2, ::2]
    return bands, lows


def _bands(g: F32, levels: int = LEVELS, planes: list[F32] | None = None) -> list[F32]:
    """Per-tile energies of ``levels`` octave bands of ``g`` (8-bit code units), finest first
    (``planes``: its Laplacian pyramid, when already made), each level's band read over the
    same tiles (32 px of the full plane, half that on each coarser level)."""
    # a small image gets smaller tiles (16 px at least: one sample on the coarsest level)
    t = max(16, min(TILE, min(g.shape) // 16 * 16))
    ny, nx = max(1, g.shape[0] // t), max(1, g.shape[1] // t)
    bands = planes if planes is not None else _pyramid(g, levels)[0]
    return [_tiles(b, t >> k, ny, nx) for k, b in enumerate(bands[:levels])]


def _luma_planes(image: LoadedImage) -> tuple[F32, list[F32], list[F32]]:
    """The luma at viewing scale (8-bit code units), its pyramid's bands and low-pass
    planes, made once for the band statistics, the octave slopes and the scene statistics."""

    def make() -> tuple[F32, list[F32], list[F32]]:
        view = _detail(image) * np.float32(255.0)
        return (view, *_pyramid(view, max(LEVELS, OCTAVES)))

    return cast(tuple[F32, list[F32], list[F32]], _cached(image, "cam:luma", make))


@functools.lru_cache(maxsize=1)
def _ggd_shapes() -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Generalized-Gaussian shapes 0.2-10 and their moment ratio E[x²] / E[|x|]²
    (Γ(1/a) Γ(3/a) / Γ(2/a)², falling with the shape): the table the shape is read from,
    made when first read (~13 ms), not at every command's start-up."""
    shapes = np.arange(0.2, 10.0, 0.001)
    ratio = np.array(
        [math.gamma(1 / a) * math.gamma(3 / a) / math.gamma(2 / a) ** 2 for a in shapes]
    )
    return shapes, ratio


def _neighbour_means(x: NDArray[np.float64]) -> list[float]:
    """The mean product of each value of ``x`` (contiguous) with its neighbour right, below
    and along both diagonals: dot products of the flattened plane with itself shifted by 1,
    w, w + 1 and w - 1, less the pairs that wrap from one row's end to another's start."""
    h, w = x.shape
    f = x.ravel()
    right = f[:-1] @ f[1:] - x[:-1, -1] @ x[1:, 0]
    below = f[:-w] @ f[w:]
    diagonal = f[: -(w + 1)] @ f[w + 1 :] - x[:-2, -1] @ x[2:, 0]
    anti = f[: -(w - 1)] @ f[w - 1 :] - x[:, 0] @ x[:, -1]
    inner = (h - 1) * (w - 1)
    sums = (right, below, diagonal, anti)
    return [
        float(v) / n for v, n in zip(sums, (h * (w - 1), (h - 1) * w, inner, inner), strict=True)
    ]


def scene_statistics(image: LoadedImage) -> list[float]:
    """``NSS_FEATURES``: per scale (the view, then its pyramid's next level), the MSCN
    coefficients ``(I - μ) / (σ + C)`` (μ, σ: the binomial low-pass's local mean and spread),
    their generalized-Gaussian shape (moment matching) and mean square, and the mean product
    of each with its neighbour right, below and along both diagonals over that mean square
    (a correlation), ``NSS_BORDER`` px from the edges left out."""

    def make() -> list[float]:
        cur, bands, lows = _luma_planes(image)
        out: list[float] = []
        b = NSS_BORDER
        for k in range(NSS_SCALES):
            mu = lows[k]
            spread = np.sqrt(np.abs(_binomial(cur * cur) - mu * mu))
            x = (bands[k] / (spread + np.float32(MSCN_C)))[b:-b, b:-b].astype(np.float64)
            if min(x.shape) < 2:  # too small for this scale: as the last one read
                out += out[-6:] if out else [2.0, 0.0, 0.0, 0.0, 0.0, 0.0]
                continue
            var = float(x.ravel() @ x.ravel()) / x.size
            mean_abs = float(np.abs(x).sum()) / x.size
            ratio = var / max(mean_abs * mean_abs, 1e-12)
            shapes, ratios = _ggd_shapes()
            shape = float(shapes[int(np.argmin(np.abs(ratios - ratio)))])
            out += [shape, var, *(m / max(var, 1e-12) for m in _neighbour_means(x))]
            cur = mu[::2, ::2]
        return out

    return list(_cached(image, "cam:nss", make))


def octave_slopes(image: LoadedImage) -> list[float]:
    """The fall of energy from each octave band of the luma at viewing scale to the next
    coarser one (log2; a Laplacian pyramid of ``OCTAVES`` bands over the whole view). A
    natural photo's spectrum spends about as much energy per octave; a blur or an upscale
    empties the octaves finer than its size (a long shake reaches the 16-32 px octave),
    noise fills the finest."""

    def make() -> list[float]:
        e: list[float] = []
        for band in _luma_planes(image)[1][:OCTAVES]:
            if min(band.shape) < 8:  # too small for this octave: as flat as the last one read
                e.append(e[-1] if e else 1.0)
            else:
                e.append(float(np.mean(band**2)) + OCTAVE_FLOOR)
        lg = np.log2(np.array(e))
        return [float(v) for v in lg[:-1] - lg[1:]]

    return list(_cached(image, "cam:octaves", make))


def band_statistics(image: LoadedImage) -> dict[str, float]:
    def make() -> dict[str, float]:
        # every plane at viewing scale (at most 1024 px on the long side, as sharpness reads):
        # the same photo at half or twice the size reads alike, a 24 MP photo costs little
        view, planes, _ = _luma_planes(image)
        ly = _bands(view, planes=planes)
        e0, e1, e2, e3, e4 = ly
        coarse = e3 + e4
        order = np.argsort(coarse)
        n = max(1, order.size // 4)
        top, flat = order[::-1][:n], order[:n]
        out: dict[str, float] = {}
        for k, e in enumerate((e0, e1, e2)):
            r = np.log2((e[top] + FLOOR) / (coarse[top] + FLOOR))
            out[f"fine{k}_p90"] = float(np.percentile(r, 90))
            out[f"fine{k}_p50"] = float(np.median(r))
        out["flat_y0"] = float(np.log2(np.median(e0[flat]) + FLOOR))
        out["flat_y1"] = float(np.log2(np.median(e1[flat]) + FLOOR))
        # colour-difference planes: chroma noise survives a camera's luma-oriented noise
        # reduction and shows where luma is flat
        cb, cr = (_bands(c * np.float32(255.0), levels=2) for c in _chroma(image))
        flat_c = np.argsort(ly[3] + ly[4])[: max(1, ly[3].size // 4)]
        for k in (0, 1):
            out[f"flat_c{k}"] = float(np.log2(np.median((cb[k] + cr[k])[flat_c]) + FLOOR))
        y = _sample(image) @ np.array([0.299, 0.587, 0.114], dtype=np.float32)
        for p, v in zip(LUMA_PERCENTILES, np.percentile(y, LUMA_PERCENTILES), strict=True):
            out[f"luma_p{p}"] = float(v)
        out["clipped"] = float(_top_clipped(image).mean())
        out["black"] = float((y <= 4.5 / 255).mean())
        return out

    return _cached(image, "cam:bands", make)


def features(image: LoadedImage, readings: dict[str, float] | None = None) -> NDArray[np.float64]:
    """The model's input vector (``FEATURES`` order); ``readings`` reuses detector readings
    already taken on this image."""
    raw = dict(readings or {})
    for name in DETECTOR_FEATURES:
        if name not in raw:
            raw[name] = DETECTORS[name](image)
    bands = band_statistics(image)
    return np.array(
        [raw[n] for n in DETECTOR_FEATURES]
        + [bands[n] for n in BAND_FEATURES]
        + octave_slopes(image)
        + [jpeg_quality(image)]
        + scene_statistics(image)
        + directions(image),
        np.float64,
    )


def _gradient_tensor(p: F32) -> NDArray[np.float64]:
    """The mean outer product of ``p``'s gradient (forward differences): its quadratic form
    gives the gradient energy along any direction."""
    gx = (p[:-1, 1:] - p[:-1, :-1]).astype(np.float64).ravel()
    gy = (p[1:, :-1] - p[:-1, :-1]).astype(np.float64).ravel()
    n = max(1, gx.size)
    xy = float(gx @ gy) / n
    return np.array([[float(gx @ gx) / n, xy], [xy, float(gy @ gy) / n]])


def directions(image: LoadedImage) -> list[float]:
    """``DIRECTION_FEATURES``. A shake smears the light along its path: across the path
    edges stay sharp, along it the fine detail is gone, so a photo blurred along its main
    lines (a bridge's cables) still reads sharp in the sharpest places. The fine plane's
    gradient energy over the coarse plane's, per direction, is a ratio of two quadratic forms;
    its smallest and largest values are the generalized eigenvalues of the two tensors."""

    def make() -> list[float]:
        _, _, lows = _luma_planes(image)
        k = min(DIRECTION_COARSE, len(lows) - 1)
        fine = _gradient_tensor(lows[0]) + np.eye(2) * FLOOR
        coarse = _gradient_tensor(lows[k]) + np.eye(2) * FLOOR
        w, v = np.linalg.eigh(coarse)
        half = v @ np.diag(w**-0.5) @ v.T
        low, high = np.linalg.eigvalsh(half @ fine @ half)
        return [math.log2(low), math.log2(high / low)]

    return list(_cached(image, "cam:directions", make))
