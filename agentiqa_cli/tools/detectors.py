"""Built-in no-reference signal detectors: fast, weight-free readings of single distortions.

Each detector is ``(LoadedImage) -> float`` (its raw reading); ``SIGNAL_DETECTORS`` maps
their names to them, and ``tools/builtin.py`` adds the camera model's heads (which read these)
under the tool cards' ``metric`` names. ``findings`` (from ``tools/severity.py``) turns
readings into distortion findings for the rules backend.

Working planes, computed once per image and cached on it:
- ``_detail``: luma at 1024 px on the long side (area-averaged, then resampled to exactly that
  size; a smaller image as it is) for sharpness, motion blur and noise; at that scale
  pixel-level softness and per-pixel noise of large camera files count as a viewer of the whole
  photo sees them (IQA datasets such as KonIQ-10k are rated at about this size), and the same
  photo at twice the size, or at any size above the view's, reads alike. ``_value``: the
  brightest channel of each pixel at the same scale, for under-exposure; ``_chroma``: the
  colour differences at that scale (the camera model).
- ``_crops``: full-resolution luma for blockiness, pixelation and an upscale's lattice, which
  downscaling would erase: the whole image when it fits in 1024×1024, else five 512×512
  crops (the centre and the middles of the four quadrants), so a defect anywhere in a large
  frame is read, not only in its centre; crop offsets are multiples of 8, so JPEG's block
  grid stays aligned.
- ``_grid`` / ``_sample``: RGB strided to at most ~64k pixels (2-D / flattened) for
  histogram statistics (exposure, contrast, colour); percentiles do not need every pixel.
"""

from __future__ import annotations

import functools
import itertools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray
from PIL import Image

from agentiqa_cli.imaging.load import LoadedImage
from agentiqa_cli.tools.severity import findings

__all__ = ["SIGNALS", "SIGNAL_DETECTORS", "findings"]

F32 = NDArray[np.float32]

DETAIL_SIDE = 1024
FULL_SIDE = 1024
SAMPLE_PIXELS = 65_536
TILE = 32  # sharpness tiles (px of the detail plane)
NOISE_TILE = 16


def _cached(image: LoadedImage, key: str, make: Callable[[], Any]) -> Any:
    # LoadedImage keeps per-image derived planes in _tensors (its grey plane lives there too);
    # sharing it means every detector of a run decodes and reduces the image once
    cache = image._tensors
    if key not in cache:
        cache[key] = make()
    return cache[key]


_BT601 = np.array([0.299, 0.587, 0.114], dtype=np.float32)


ROW_CHUNK = 256  # rows converted to float at a time when a plane is made from 8-bit pixels


def _gray(image: LoadedImage) -> F32:
    """Luma (BT.601) as ``LoadedImage.gray`` defines it; a matrix product is several times
    faster than its three scaled planes, which matters within a 50 ms budget. Made a band
    of rows at a time from the image's 8-bit pixels, never from a whole float copy."""

    def make() -> F32:
        h, w = image.shape
        out = np.empty((h, w), dtype=np.float32)
        for y in range(0, h, ROW_CHUNK):
            out[y : y + ROW_CHUNK] = image.rows(y, y + ROW_CHUNK) @ _BT601
        return out

    return _cached(image, "det:luma", make)


def _viewing(image: LoadedImage, key: str, brightest: bool = False) -> F32:
    """The image's RGB (or, ``brightest``, its brightest channel: HSV value) reduced to
    DETAIL_SIDE px on the long side (unreduced when the image fits): area-averaged by the
    largest integer factor that keeps it at least that big, then, where that leaves more,
    resampled the rest of the way (Lanczos, as the series' photos were reduced). Every
    image larger than the view is read at the same size: an integer factor alone read a
    1100 px photo at 550 px and a 1620 px one at 810, halving their damage."""

    def make() -> F32:
        h, w = image.shape
        if max(h, w) <= DETAIL_SIDE:
            return image.rows_max(0, h) if brightest else image.rows(0, h)
        f = max(h, w) // DETAIL_SIDE
        if f == 1:
            plane = image.rows_max(0, h) if brightest else image.rows(0, h)
        else:
            h = (h // f) * f
            # block means, a band of whole blocks at a time: the full-size plane of a large
            # photo is never held
            band = max(1, ROW_CHUNK // f) * f
            parts = (
                image.area_mean(f, y, min(y + band, h), brightest=brightest)
                for y in range(0, h, band)
            )
            plane = np.concatenate(list(parts))
        return _to_side(plane, DETAIL_SIDE)

    return _cached(image, key, make)


def _to_side(plane: F32, side: int) -> F32:
    """``plane`` (H×W or H×W×C, values in [0, 1]) resampled to ``side`` px on the long side
    (Lanczos, its support widened by the reduction: antialiased), or as it is when it fits."""
    h, w = plane.shape[:2]
    if max(h, w) <= side:
        return plane
    s = side / max(h, w)
    size = (max(1, round(w * s)), max(1, round(h * s)))
    chans = plane[..., None] if plane.ndim == 2 else plane
    out = np.stack(
        [
            np.asarray(
                Image.fromarray(np.ascontiguousarray(chans[..., c], dtype=np.float32)).resize(
                    size, Image.Resampling.LANCZOS
                )
            )
            for c in range(chans.shape[2])
        ],
        axis=-1,
    )
    out = np.clip(out, 0.0, 1.0, out=out)
    return out[..., 0] if plane.ndim == 2 else out


def _view_rgb(image: LoadedImage) -> F32:
    """RGB area-averaged to viewing scale: luma and the colour differences are linear in
    it, so one pass over a large photo's pixels serves all three."""
    return _viewing(image, "det:view")


def _detail(image: LoadedImage) -> F32:
    """Luma at viewing scale (sharpness reads all of it)."""
    h, w = image.shape
    if max(h, w) <= DETAIL_SIDE:
        return _gray(image)
    return _cached(image, "det:detail", lambda: _view_rgb(image) @ _BT601)


def _chroma(image: LoadedImage) -> tuple[F32, F32]:
    """The blue and red colour differences (B - Y, R - Y) at viewing scale."""
    h, w = image.shape
    rgb = image.rows(0, h) if max(h, w) <= DETAIL_SIDE else _view_rgb(image)
    y = _detail(image)
    return rgb[..., 2] - y, rgb[..., 0] - y


def _value(image: LoadedImage) -> F32:
    """The brightest channel of each pixel (HSV value) at viewing scale."""
    return _viewing(image, "det:value", brightest=True)


CROP = 512


def _crop_origins(image: LoadedImage) -> list[tuple[int, int]]:
    """Where the full-resolution crops start (multiples of 8): the image's origin when it
    is read whole, else the centre's and the four quarters' crops."""
    h, w = image.shape
    if h <= FULL_SIDE and w <= FULL_SIDE:
        return [(0, 0)]
    ch, cw = min(CROP, h), min(CROP, w)
    centres = [(h / 2, w / 2)] + [(h * fy, w * fx) for fy in (0.25, 0.75) for fx in (0.25, 0.75)]
    return [
        (
            int(min(max(0.0, cy - ch / 2), h - ch)) // 8 * 8,
            int(min(max(0.0, cx - cw / 2), w - cw)) // 8 * 8,
        )
        for cy, cx in centres
    ]


def _crops(image: LoadedImage) -> list[F32]:
    def make() -> list[F32]:
        h, w = image.shape
        if h <= FULL_SIDE and w <= FULL_SIDE:
            return [_gray(image)]
        ch, cw = min(CROP, h), min(CROP, w)
        out = []
        for y0, x0 in _crop_origins(image):
            # only the crop's rows become float: a large photo's full luma is never made
            crop = image.rows(y0, y0 + ch)[:, x0 : x0 + cw]
            out.append(np.ascontiguousarray(crop) @ _BT601)
        return out

    return _cached(image, "det:crops", make)


def _grid(image: LoadedImage) -> F32:
    """RGB strided to at most ~SAMPLE_PIXELS pixels, kept 2-D (h × w × 3)."""

    def make() -> F32:
        h, w = image.shape
        step = max(1, int(np.ceil(np.sqrt(h * w / SAMPLE_PIXELS))))
        return image.strided(step)

    return _cached(image, "det:grid", make)


def _grid_luma(image: LoadedImage) -> F32:
    """The luma of ``_grid`` (2-D), made once for the exposure and drawing readings."""
    return _cached(image, "det:grid_luma", lambda: _luma(_grid(image)))


def _sample(image: LoadedImage) -> F32:
    return _cached(image, "det:sample", lambda: _grid(image).reshape(-1, 3))


def _luma(rgb: F32) -> F32:
    return rgb @ _BT601


# -- blur / sharpness ----------------------------------------------------------------------


def _tile_sums(a: F32, t: int) -> F32:
    """Sums over the t×t tiles that fit in ``a`` (ny × nx)."""
    ny, nx = a.shape[0] // t, a.shape[1] // t
    return _tile_totals(a[: ny * t, : nx * t].reshape(ny, t, nx, t))


def _tile_totals(tiles: F32) -> F32:
    """Each tile's sum of a (ny, t, nx, t) view of tiles: over its rows first, then its
    columns (a quarter of the time of one reduction over both axes)."""
    return tiles.sum(axis=1, dtype=np.float32).sum(axis=2, dtype=np.float32)


def _step_pairs(a: F32, d: int, k: int) -> tuple[F32, F32]:
    """The samples ``k`` px apart along direction d of the last two axes (rows, columns,
    diagonal, anti-diagonal), as two aligned views: their difference is the neighbour step
    for k = 1, and k times the neighbour step of a box of k samples along d (its sums
    telescope)."""
    if d == 0:
        return a[..., k:, :], a[..., :-k, :]
    if d == 1:
        return a[..., :, k:], a[..., :, :-k]
    if d == 2:
        return a[..., k:, k:], a[..., :-k, :-k]
    return a[..., k:, :-k], a[..., :-k, k:]


def blur_effect_tiles(tiles: F32, h_size: int = 11) -> tuple[F32, F32]:
    """Crété-Roffet blur effect on a batch of tiles (n × S × S), in four directions.

    The measure of ``skimage.measure.blur_effect`` (with neighbour differences as in the
    paper, and the two diagonals besides the two axes so that motion blur shows in any
    direction): compare the gradients with those of a copy blurred again along the same
    direction. A sharp tile loses much when re-blurred, a blurred one little. Returns
    (gradient energy, energy lost), each 4 × n; blur = 1 - lost / energy. The outer
    ``h_size // 2`` pixels of each tile are context for the filters only.

    The re-blur is a box of ``h_size`` samples along the direction, whose neighbour step is
    the difference of two samples ``h_size`` apart over ``h_size``: the blurred copy itself
    is never made.
    """
    r = h_size // 2
    core = tiles[:, r:-r, r:-r]
    energy = np.empty((4, tiles.shape[0]), dtype=np.float32)
    lost = np.empty_like(energy)
    for d in range(4):
        ds = np.abs(np.subtract(*_step_pairs(core, d, 1)))
        far, near = _step_pairs(tiles, d, h_size)
        if d < 2:  # along rows (columns), only the core's columns (rows) are read
            keep = (..., slice(r, -r)) if d == 0 else (..., slice(r, -r), slice(None))
            far, near = far[keep], near[keep]
        soft = np.abs(np.subtract(far, near))
        soft *= np.float32(1.0 / h_size)
        energy[d] = ds.sum(axis=(1, 2))
        np.subtract(ds, soft, out=soft)
        lost[d] = np.maximum(soft, 0.0, out=soft).sum(axis=(1, 2))
    return energy, lost


def _sobel(a: NDArray[np.float64], axis: int) -> NDArray[np.float64]:
    """|Sobel| across ``axis`` (differences along it, [1, 2, 1] / 4 smoothing along the other),
    with the edges mirrored (``scipy.ndimage``'s "reflect")."""
    p = np.pad(a, 1, mode="symmetric")
    if axis == 0:
        d = p[2:] - p[:-2]
        return np.abs(d[:, :-2] + 2.0 * d[:, 1:-1] + d[:, 2:]) / 4.0
    d = p[:, 2:] - p[:, :-2]
    return np.abs(d[:-2] + 2.0 * d[1:-1] + d[2:]) / 4.0


def blur_effect(g: F32, h_size: int = 11) -> float:
    """Crété-Roffet blur effect of a whole 2-D image (0 sharp ... 1 blurred), the larger of
    its two axes': F. Crété-Roffet et al., "The Blur Effect: Perception and Estimation with a
    New No-Reference Perceptual Blur Metric" (SPIE Human Vision and Electronic Imaging XII,
    2007), computed as ``skimage.measure.blur_effect`` does (Sobel gradients, an ``h_size``
    box re-blur with mirrored edges, the borders left out of the sums); tests/test_detectors.py
    compares the two when scikit-image is installed. The tiles of ``blur_effect_tiles`` are
    the measure for images large enough to have them."""
    x = g.astype(np.float64)
    r = h_size // 2
    tiny = np.spacing(np.float64(1))  # no gradient reads as this, never as 0
    inner = (slice(2, x.shape[0] - 1), slice(2, x.shape[1] - 1))
    blur = 0.0
    for axis in (0, 1):
        widths = [(r, r) if a == axis else (0, 0) for a in (0, 1)]
        soft = np.lib.stride_tricks.sliding_window_view(
            np.pad(x, widths, mode="symmetric"), h_size, axis=axis
        ).mean(axis=-1)
        sharp = np.maximum(tiny, _sobel(x, axis))
        lost = np.maximum(0.0, sharp - np.maximum(tiny, _sobel(soft, axis)))
        energy = float(sharp[inner].sum())
        blur = max(blur, abs(energy - float(lost[inner].sum())) / energy)
    return blur


# a tile carries focus information only when its strongest direction's mean neighbour step is at
# least one 8-bit code value: smooth gradients (a full-range ramp over a few hundred pixels)
# and flat fills stay below, while an edge of 0.3 contrast even blurred over a whole 32 px
# tile averages about 2.4 codes
STRUCTURE_FLOOR = 1.0 / 255
SHARPEST_SHARE = 0.1  # the sharpest tenth of the structured tiles stands for the subject
# a direction counts when it has at least this share of the tile's strongest direction: the
# length of a stripe is skipped, the smeared direction of motion blur is not (measured on
# the realset: 0.2 also skipped motion blur's direction, SRCC 0.77; 0.05 keeps it, 0.93)
DIRECTION_SHARE = 0.05


def sharpness(image: LoadedImage) -> float:
    """1 - Crété-Roffet blur effect of the sharpest region of the image (higher is sharper;
    about 0.6-0.9 for sharp photos, below 0.3 for heavy blur), or of a crisp edge smeared
    by the image's linear motion blur when the cepstrum finds one (``motion_length``),
    whichever is lower.
    """
    sharp = _sharpest_region(image)
    # pixelation's repeated pixels (a sample-and-hold) ripple the spectrum as a box does,
    # but leave crisp steps: that defect is the pixelation detector's
    length = motion_length(image) if pixelation(image) < PIXELATED else 0.0
    return min(sharp, _edge_after_motion(length)) if length else sharp


def _tiles_with_context(g: F32, pick: NDArray[np.intp], nx: int, t: int, m: int) -> F32:
    """The t×t tiles numbered ``pick`` (row-major over a grid ``nx`` tiles wide that starts
    ``m`` px in), each with ``m`` px of context on every side: (len(pick), t+2m, t+2m)."""
    windows = np.lib.stride_tricks.sliding_window_view(g, (t + 2 * m, t + 2 * m))[::t, ::t]
    return np.ascontiguousarray(windows[pick // nx, pick % nx], dtype=np.float32)


def _sharpest_region(image: LoadedImage) -> float:
    """1 - Crété-Roffet blur effect of the sharpest region of the image.

    The 32×32 tiles with the most gradient energy (a quarter of them) are measured, each in
    four directions, and the image reads as sharp as its sharpest tenth of those tiles: the
    subject is what focus is judged on, so a sharp subject in front of a soft (bokeh)
    background, or a small crisp object in a mostly defocused frame, reads sharp. A tile's
    sharpness is its worst direction, which catches motion blur along any of them; a tile
    without structure (strongest steps below ``STRUCTURE_FLOOR``: a smooth gradient) and a
    direction with almost none of the tile's structure (below ``DIRECTION_SHARE``: the length
    of a stripe) say nothing and are skipped, so smooth graphics with crisp edges are judged
    on their edges. An image without any structure (a flat fill, a pure gradient) has
    nothing blur could have removed and reads 1.
    """
    g = _detail(image)
    m, t = 6, TILE  # m: context around a tile for the 11-sample re-blur
    ny, nx = (g.shape[0] - 2 * m) // t, (g.shape[1] - 2 * m) // t
    if ny < 1 or nx < 1:
        return 1.0 - blur_effect(g)  # too small for the tiles: the whole image at once
    inner = g[m : m + ny * t, m : m + nx * t]
    act = np.abs(np.diff(inner, axis=0))[:, :-1] + np.abs(np.diff(inner, axis=1))[:-1, :]
    proxy = _tile_sums(np.pad(act, ((0, 1), (0, 1))), t).ravel()
    n = max(4, int(np.ceil(proxy.size / 4)))
    pick = np.argsort(proxy)[::-1][:n]
    energy, lost = blur_effect_tiles(_tiles_with_context(g, pick, nx, t, m))
    steps = energy / np.float32(t * t)  # ~ mean |neighbour step| per direction and tile
    strongest = steps.max(axis=0)
    valid = (strongest >= STRUCTURE_FLOOR) & (steps >= DIRECTION_SHARE * strongest)
    ratio = np.where(valid, lost / np.maximum(energy, 1e-12), np.inf).min(axis=0)
    ratio = ratio[np.isfinite(ratio)]
    if ratio.size == 0:
        return 1.0
    k = max(1, int(np.ceil(SHARPEST_SHARE * ratio.size)))
    return float(np.sort(ratio)[::-1][:k].mean())


# A uniform linear motion blur of L px multiplies the spectrum by a sinc along the motion,
# whose zeros repeat every 1/L: the log spectrum ripples, and the real cepstrum (its inverse
# transform) has a sharp negative spike at distance L in the direction of the motion (Rom
# 1975; Cannon 1976). Natural content has no such spike: measured on the realset's clean
# images and their gaussian blurs the deepest point of the ring reads -2 to -8 standard
# deviations of the ring, box motion blurs of 5-33 px -20 to -42.
MOTION_Z = -12.0
# On smooth photos (a dark sky, fog, a grey wall) the sinc's zeros sink into the 8-bit noise
# floor and the spike stays weak (-5.5 to -12 for 9-33 px on the fit set and the realset). A
# weaker dip counts when it is long (MOTION_WEAK_LENGTH px and more: shorter dips belong to
# texture, and at 8 px to compression, JPEG's blocks and JPEG 2000's third wavelet level), when
# no other direction dips nearly as deep (less than MOTION_APART of it: one direction stands
# out, not a rough ring) and when nothing in the image stays crisp along it (``_crisp_along``
# below CRISP_ALONG), which a real motion blur guarantees and a chance dip on a sharp image
# fails.
MOTION_WEAK_Z = -5.5
MOTION_WEAK_LENGTH = 9.0
MOTION_APART = 0.7
# measured on the fit set and the realset: clean images read 0.40 and more along any
# direction but one wood grain's (0.28, its cepstrum has no dip) and 0.55 and more along their
# deepest long dip; the motion blurs of 9-33 px with a weak dip read 0.08-0.43
CRISP_ALONG = 0.45
# A deep dip can be a pattern's period too: a plot's evenly spaced markers or error bars.
# A motion smears every edge along it (a step smeared by 4 px reads 0.64, by 5 px 0.55:
# ``_edge_after_motion``); the fit set's motion blurs and shakes with a deep dip read at most
# 0.72 along it, the design drawings' chance dips 0.9 and more.
CRISP_PATTERN = 0.8
# pixelation reading from which an image counts as pixelated (blocks of 2 px and more read 0.5+)
PIXELATED = 0.3
MOTION_RING = (4.0, 64.0)  # lengths searched, px of the detail plane
CEPSTRUM_SIDE = 512


@dataclass(frozen=True)
class _Ring:
    """The cepstrum's points searched for a motion (``MOTION_RING`` from its centre), in
    row-major order of the centred plane: their flat index in the uncentred (unshifted)
    transform, offsets from the centre (rows, columns), distance and angle."""

    index: NDArray[np.intp]
    y: NDArray[np.float64]
    x: NDArray[np.float64]
    r: NDArray[np.float64]
    angle: NDArray[np.float64]


@functools.lru_cache(maxsize=4)
def _ring(side: int) -> _Ring:
    yy, xx = (a.ravel() for a in np.mgrid[0:side, 0:side] - side // 2)
    r = np.hypot(yy, xx)
    keep = (r >= MOTION_RING[0]) & (r <= min(MOTION_RING[1], side / 4))
    y, x = yy[keep], xx[keep]
    index = (y % side) * side + x % side  # where the centred point sits before the shift
    return _Ring(index, y.astype(np.float64), x.astype(np.float64), r[keep], np.arctan2(y, x))


def motion_length(image: LoadedImage) -> float:
    """Length in px (of the viewing-scale plane) of a uniform linear motion blur, from the
    cepstrum of the central square of the detail plane; 0 when there is none. A spike in a
    second direction too (pixelation's and JPEG's blocks repeat along both axes) is not
    one linear motion, and reads 0, nor is one along which edges stay crisp
    (``CRISP_PATTERN``: a pattern's period). A weak spike (``MOTION_WEAK_Z``) counts only
    when it is long, alone, and confirmed by the image itself: nothing crisp along its
    direction."""

    def make() -> float:
        g = _detail(image)
        h, w = g.shape
        side = min(h, w, CEPSTRUM_SIDE)
        if side < 4 * MOTION_RING[0]:
            return 0.0
        y0, x0 = (h - side) // 2, (w - side) // 2
        sq = g[y0 : y0 + side, x0 : x0 + side].astype(np.float64)
        win = np.hanning(side)
        spec = np.abs(np.fft.rfft2((sq - sq.mean()) * np.outer(win, win)))
        ring = _ring(side)
        ceps = np.fft.irfft2(np.log(spec + 1e-9), s=sq.shape).ravel()[ring.index]
        z = (ceps - ceps.mean()) / max(float(ceps.std()), 1e-12)

        def other(i: int) -> float:
            # the spike and its mirror image are one motion; the deepest point more than
            # 15° away from that axis is another direction's
            off = np.abs((ring.angle - ring.angle[i] + np.pi / 2) % np.pi - np.pi / 2)
            return float(np.min(z[off > np.radians(15)], initial=np.inf))

        i = int(np.argmin(z))
        if z[i] <= MOTION_Z:
            # as deep in a second direction: not one linear motion
            if other(i) <= MOTION_Z:
                return 0.0
            length = float(ring.r[i])
            # edges that stay crisp along it: a pattern's period, not a motion
            along = _crisp_along(image, float(ring.y[i]) / length, float(ring.x[i]) / length)
            return length if along < CRISP_PATTERN else 0.0
        # a weak spike: the deepest long one (short dips of texture can be deeper)
        i = int(np.argmin(np.where(ring.r >= MOTION_WEAK_LENGTH, z, np.inf)))
        if z[i] > MOTION_WEAK_Z or other(i) <= MOTION_APART * float(z[i]):
            return 0.0
        length = float(ring.r[i])
        along = _crisp_along(image, float(ring.y[i]) / length, float(ring.x[i]) / length)
        return length if along < CRISP_ALONG else 0.0

    return float(_cached(image, "det:motion", make))


def _bilinear(tiles: F32, dy: float, dx: float, m: int, n: int) -> F32:
    """The n×n cores of ``tiles`` (starting at m, m) sampled at offset (dy, dx), |d| < m."""
    iy, ix = int(np.floor(dy)), int(np.floor(dx))
    fy, fx = np.float32(dy - iy), np.float32(dx - ix)

    def at(a: int, b: int) -> F32:
        return tiles[:, m + a : m + a + n, m + b : m + b + n]

    top = (1 - fx) * at(iy, ix) + fx * at(iy, ix + 1)
    bottom = (1 - fx) * at(iy + 1, ix) + fx * at(iy + 1, ix + 1)
    return ((1 - fy) * top + fy * bottom).astype(np.float32, copy=False)


def _crisp_along(image: LoadedImage, uy: float, ux: float, h_size: int = 11) -> float:
    """1 - Crété-Roffet blur effect along the unit direction (uy, ux) only (rows, columns),
    pooled over the tiles with the most structure along it (a tenth of the 32×32 tiles).

    Along a linear motion every edge the motion crosses is a ramp as long as the motion,
    whatever its own orientation, so a motion blur of L px reads about what a step smeared
    over L px does (``_edge_after_motion``); a sharp image keeps crisp edges across that
    direction and reads high. Pooling the tiles (their lost energy over their energy) lets
    the tiles with real edges across the direction outweigh the 8-bit steps of smooth areas.
    The re-blur is a box of ``h_size`` samples along the direction; its neighbour step is
    the difference of two samples ``h_size`` apart over ``h_size``.
    """
    g = _detail(image)
    t, m = TILE, h_size // 2 + 3  # m: context for the samples up to h_size // 2 + 1 away
    ny, nx = (g.shape[0] - 2 * m) // t, (g.shape[1] - 2 * m) // t
    if ny < 1 or nx < 1:
        return 1.0
    inner = g[m : m + ny * t, m : m + nx * t]
    pad = ((0, 1), (0, 1))
    dy = np.pad(np.diff(inner, axis=0)[:, :-1], pad)
    dx = np.pad(np.diff(inner, axis=1)[:-1, :], pad)
    if float(_tile_sums(np.abs(dy) + np.abs(dx), t).max()) < STRUCTURE_FLOOR * t * t:
        return 1.0  # a flat fill or a smooth gradient: nothing blur could have removed
    proxy = _tile_sums(np.abs(np.float32(uy) * dy + np.float32(ux) * dx), t).ravel()
    n = max(4, int(np.ceil(SHARPEST_SHARE * proxy.size)))
    pick = np.argsort(proxy)[::-1][:n]
    tiles = _tiles_with_context(g, pick, nx, t, m)
    r = h_size // 2
    core = tiles[:, m : m + t, m : m + t]
    step = np.abs(_bilinear(tiles, uy, ux, m, t) - core)
    soft = np.abs(
        _bilinear(tiles, (r + 1) * uy, (r + 1) * ux, m, t)
        - _bilinear(tiles, -r * uy, -r * ux, m, t)
    ) / np.float32(h_size)
    energy = float(step.sum(dtype=np.float64))
    return float(np.maximum(step - soft, 0.0).sum(dtype=np.float64) / max(energy, 1e-12))


def _edge_after_motion(length: float, h_size: int = 11) -> float:
    """1 - Crété-Roffet blur effect of an ideal step edge smeared by a box of ``length`` px
    across it: what the sharpest edge of the scene reads after that motion blur."""
    n = max(1, round(length))
    x = np.convolve(np.r_[np.zeros(128), np.ones(128)], np.ones(n) / n, mode="same")
    soft = np.convolve(x, np.ones(h_size) / h_size, mode="same")
    d, ds = np.abs(np.diff(x))[64:-64], np.abs(np.diff(soft))[64:-64]
    return float(np.maximum(d - ds, 0.0).sum() / d.sum())


# -- a page: text or lines on plain paper, whose sharpness is judged as a page's ------------
#
# The camera model learned photographs. A page of text is far outside them: its glyphs keep
# strong steps at every octave, and a page defocused by a 3 px disc at the view read 5 ("no
# detail lost") on the blur head, while ``sharpness`` (the sharpest tiles' Crété-Roffet
# reading) fell with the blur as on any page: about 0.89 in focus, 0.82, 0.71, 0.59, 0.45
# for a disc of 1.2, 2, 3 and 4.5 px at the view (scripts/fit_page_card.py's pages: scans,
# phone shots on grey, unevenly lit and noisy paper, and larger scans; white and dark
# pages). A photograph's ``sharpness`` cannot be read so, since soft content (fog, bokeh) is
# no defect; a page's glyphs are all meant to be crisp. So ``page`` tells a page from a
# photograph: without colour (``colorfulness`` at most PAGE_COLOURLESS: ink on paper; a
# colourful photo, an over-exposed one whose clipped sky reads as paper included, is none),
# its paper in most tiles the tone of the tiles around it (PAGE_PLAIN: a scan or a phone
# shot whose light falls off across the page is still one paper), most of the view paper
# (PAGE_FLAT), and ink in enough tiles (PAGE_INKED): tiles whose darkest pixels stand
# PAGE_INK below their paper and which are paper for the most part between the strokes
# (PAGE_BETWEEN), as a smooth gradient is not. Light ink on a dark page reads the same, inverted. Of the clean
# images of the fit set and the realset (photos, crops, renders), none but a page passes.
# A black-and-white photo over-exposed until most of it is blown white passed too (a 1961
# aerial of a harbour fort, from a package the project never used, at +2.6 stops): its
# white is paper-like and its remains ink-like. A page's ink is strokes, a photo's remains
# are areas, so a page also keeps at most PAGE_CORE of its ink pixels 2 px or more inside
# the ink (the ink as PAGE_INK below its tile's paper, on the view): the fit-seed pages and
# scikit-image's page and handwriting, sharp or defocused by up to 4.5 px, 0.19 at most;
# that photo 0.46-0.50 at every level of over-exposure.
PAGE_CORE = 0.3
PAGE_TILE = 32
PAGE_COLOURLESS = 0.06
PAGE_PAPER = 0.06  # a tile's paper (its 95th percentile) within this of its neighbours'
PAGE_NEAR = 0.06  # a pixel within this of its tile's paper is paper
PAGE_INK = 0.25
PAGE_BETWEEN = 0.35
PAGE_PLAIN = 0.8
PAGE_FLAT = 0.6
PAGE_INKED = 0.25


def _page_view(image: LoadedImage) -> F32 | None:
    """The view's luma cut to whole ``PAGE_TILE`` tiles, inverted where the page is dark
    (light ink on it), as ``page_parts`` and ``page_ink_core`` both read it; None where it
    holds fewer than 16 tiles (too small for a page's lines)."""

    def make() -> F32 | None:
        g = _detail(image)
        t = PAGE_TILE
        ny, nx = g.shape[0] // t, g.shape[1] // t
        if ny * nx < 16:
            return None
        dark = float(np.median(g[::4, ::4])) < 0.5
        g = g[: ny * t, : nx * t]
        return 1.0 - g if dark else g

    return _cached(image, "det:page_view", make)


def page_parts(image: LoadedImage) -> tuple[float, float, float]:
    """What ``page`` reads on the view's luma (every other pixel of each tile): the share of
    tiles whose paper is their neighbours' (a page's light may fall off across it), the
    share of the view that is paper, and the share of tiles with ink."""

    def make() -> tuple[float, float, float]:
        g = _page_view(image)
        if g is None:
            return 0.0, 0.0, 0.0
        t = PAGE_TILE
        ny, nx = g.shape[0] // t, g.shape[1] // t
        grid = g[::2, ::2].reshape(ny, t // 2, nx, t // 2)
        tiles = grid.transpose(0, 2, 1, 3).reshape(ny * nx, -1)
        hi = np.percentile(tiles, 95, axis=1)
        lo = np.percentile(tiles, 3, axis=1)
        near = np.abs(tiles - hi[:, None]) <= PAGE_NEAR
        # the paper around each tile: the median of its 3x3 neighbourhood's (edges repeated)
        around = np.pad(hi.reshape(ny, nx), 1, mode="edge")
        shifts = [around[dy : dy + ny, dx : dx + nx] for dy in range(3) for dx in range(3)]
        local = np.median(np.stack(shifts), axis=0).ravel()
        plain = float(np.mean(np.abs(hi - local) <= PAGE_PAPER))
        inked = (hi - lo >= PAGE_INK) & (near.mean(axis=1) >= PAGE_BETWEEN)
        return plain, float(near.mean()), float(inked.mean())

    return _cached(image, "det:page", make)


def page_ink_core(image: LoadedImage) -> float:
    """The share of a page's ink pixels (``PAGE_INK`` below their tile's paper, on the view's
    luma, inverted on a dark page) with ink all around them within 2 px."""

    def make() -> float:
        g = _page_view(image)
        if g is None:
            return 0.0
        t = PAGE_TILE
        ny, nx = g.shape[0] // t, g.shape[1] // t
        paper = np.percentile(g.reshape(ny, t, nx, t), 95, axis=(1, 3))
        ink = np.repeat(np.repeat(paper, t, axis=0), t, axis=1) - g >= PAGE_INK
        if not ink.any():
            return 0.0
        core = ~dilate(~ink, 2, square=True)
        return float(core.sum() / ink.sum())

    return float(_cached(image, "det:page_core", make))


def page(image: LoadedImage) -> bool:
    """A page of text or lines on plain paper (see PAGE_COLOURLESS and the rest)."""
    if SIGNAL_DETECTORS["colorfulness"](image) > PAGE_COLOURLESS:  # read once per image
        return False
    plain, flat, inked = page_parts(image)
    return (
        plain >= PAGE_PLAIN
        and flat >= PAGE_FLAT
        and inked >= PAGE_INKED
        and page_ink_core(image) <= PAGE_CORE
    )


def page_sharpness(image: LoadedImage) -> float:
    """``sharpness`` where the image is a page (``page``), judged on the page card's scale;
    1 (nothing to judge) on anything else."""
    return SIGNAL_DETECTORS["sharpness"](image) if page(image) else 1.0


# -- noise ---------------------------------------------------------------------------------


# lags (px) at which the residual of a regular pattern repeats: every period of 2-8 px divides
# one of them (2 and 4 divide 8); the operator's own footprint (lags 1-2) is left out, since
# it correlates the residual of independent noise there
PATTERN_LAGS = (3, 5, 6, 7, 8)
PATTERN_DROP = 0.7


def _alternate_tiles(a: F32, grid: tuple[int, int], t: int) -> F32:
    """Every other t×t tile of ``a`` in both directions, as (ny/2, t, nx/2, t) views."""
    ny, nx = grid
    return a[: ny * t, : nx * t].reshape(ny, t, nx, t)[::2, :, ::2, :]


def noise(image: LoadedImage) -> float:
    """Noise sigma on the [0, 1] scale (lower is better).

    Immerkær's (1996) operator, the separable [1 -2 1] ⊗ [1 -2 1] mask, cancels smooth
    image structure up to second order and leaves mostly noise; its mean absolute response
    (times sqrt(pi/2) / 6 for Gaussian noise) per 16×16 tile, in the quieter tiles (20th
    percentile), estimates the noise where texture does not mask it. Tiles clipped to black
    or white are skipped since clipping removes the noise there. (``skimage.restoration.
    estimate_sigma`` needs PyWavelets, which is not a dependency, and is much slower.)

    Noise is independent from pixel to pixel; a regular pattern (a dither, a checkerboard,
    pixel art, a halftone) is not, though the operator passes it just as well. So the
    residual is compared with itself shifted by 3-8 px along the rows and along the columns
    (``PATTERN_LAGS``): a pattern with a period that divides the shift cancels in the
    difference, independent noise does not (the difference of two independent residuals
    has sqrt(2) times their spread). Where the smallest of these differences (scaled by
    1/sqrt(2)) is clearly below the unshifted response (under ``PATTERN_DROP`` of it), the
    tile holds a pattern and that difference is its noise; elsewhere the response is.
    """
    t = NOISE_TILE
    scale = np.float32(np.sqrt(np.pi / 2) / (6.0 * t * t))
    sigs, oks = [], []
    # at viewing scale, as sharpness reads: a 24 MP photo's per-pixel noise is not what its
    # viewer sees, and the same photo at half or twice the size must read alike
    for g in [_detail(image)]:
        v = g[:-2] - 2.0 * g[1:-1] + g[2:]
        r = v[:, :-2] - 2.0 * v[:, 1:-1] + v[:, 2:]
        if min(r.shape) < t + max(PATTERN_LAGS):
            return float(np.sqrt(np.pi / 2) * np.abs(r).mean() / 6.0)
        # every other tile in both directions (a quarter: plenty for a percentile, and the
        # shifts cost one pass each), of the area where every shift is defined
        m = max(PATTERN_LAGS)
        grid = ((r.shape[0] - m) // t, (r.shape[1] - m) // t)
        base = _alternate_tiles(r, grid, t)
        plain = _tile_totals(np.abs(base))
        best = np.full_like(plain, np.inf)
        d = np.empty_like(base)
        for lag in PATTERN_LAGS:
            for shifted in (
                _alternate_tiles(r[:, lag:], grid, t),
                _alternate_tiles(r[lag:], grid, t),
            ):
                np.abs(np.subtract(shifted, base, out=d), out=d)
                np.minimum(best, _tile_totals(d) * np.float32(1 / np.sqrt(2)), out=best)
        # only a clear drop marks a pattern: the smallest of ten estimates of pure noise is
        # biased low by ~10%, a pattern's shifted difference is a fraction of its response
        patterned = best < PATTERN_DROP * plain
        sigs.append(np.where(patterned, best, plain).ravel() * scale)
        src = _alternate_tiles(g[1 : 1 + r.shape[0], 1 : 1 + r.shape[1]], grid, t)
        clipped = ((src <= 1.5 / 255) | (src >= 253.5 / 255)).astype(np.float32)
        oks.append(_tile_totals(clipped).ravel() <= 0.2 * t * t)
    s, ok = np.concatenate(sigs), np.concatenate(oks)
    keep = s[ok] if ok.sum() >= 4 else s
    return float(np.percentile(keep, 20))


# -- compression: JPEG blockiness and pixelation -------------------------------------------


def _column_energy(image: LoadedImage, axis: int) -> list[F32]:
    """Mean |step| between neighbouring columns (axis 1) or rows (axis 0), full resolution,
    one profile per crop."""

    def make() -> list[F32]:
        return [
            np.abs(np.diff(g, axis=axis)).mean(axis=1 - axis, dtype=np.float32)
            for g in _crops(image)
        ]

    return _cached(image, f"det:steps{axis}", make)


# The smallest mean step (full scale) on the grid's phase, above the runner-up phase, that
# counts in full. A ratio alone reads a smooth gradient's q90 save (its block edges 0.14 of a
# code value above the rest, where the median step is 0.07) as severe blocking, and so a
# defocus, a shake, an upscale or a dark exposure, whose steps inside the blocks all but
# vanish. Below this the ratio is scaled by the excess's share of it. Chosen on the fit
# set's camera and lossless series: at half a code value no reading of a JPEG kind moves
# (none has a smaller excess), and 170 of the other kinds' severities fall (two clean q75
# saves from moderate to slight); at 0.75 a level-1 earlier save falls too.
# The median phase is read as this much at least, too: a fog's q75 save steps by one code
# value on about half the rows at its block edges (an excess of 0.48 codes) over a median
# of 0.07 inside them, a ratio of 6.8, "severe" blocking that is faint by eye (a held-out
# photo, DarkestHour, whose save read 1.28 "bad"). Against half a code value it reads 0.62;
# the fit set's clean camera JPEGs reach 0.97. The medians of every JPEG kind at levels 1-4
# on the fit set's camera and lossless series are unchanged; at level 5 the most extreme
# readings shrink (the lossless saves' largest 70.8 -> 16.0), where the card is saturated.
VISIBLE_STEP = 0.5 / 255


def _grid_ratio(c: F32, period: int = 8) -> float:
    """How far the strongest phase of the grid stands out above the runner-up, relative to
    the median phase (at least ``VISIBLE_STEP``), scaled down where that excess is too small
    to see.
    Only one phase in eight carries JPEG block edges; pixelation with blocks of 2, 3, 4, 6
    or 9 pixels puts its edges on several phases equally, and natural content on all of
    them."""
    n = (c.size // period) * period
    if n < 4 * period:
        return 0.0
    phases = np.sort(c[:n].reshape(-1, period).mean(axis=0))
    med = float(np.median(phases))
    excess = float(phases[-1] - phases[-2])
    if med <= 1e-6:  # nothing steps between the edges: a mosaic's blocks, not a save's
        return 0.0
    return excess / max(med, VISIBLE_STEP) * min(1.0, excess / VISIBLE_STEP)


def blockiness(image: LoadedImage) -> float:
    """How much stronger luma steps are on one phase of an 8-pixel grid than on any other
    (lower is better). JPEG codes 8×8 blocks independently, so heavy compression leaves
    steps at every 8th row and column; natural content has no preferred phase (about 0),
    and steps too small to see read low (``VISIBLE_STEP``)."""
    rows, cols = _step_profiles(image)
    return 0.5 * (_grid_ratio(cols) + _grid_ratio(rows))


def _step_profiles(image: LoadedImage) -> tuple[F32, F32]:
    """The step profiles across rows and across columns, averaged over the crops (whose
    offsets are multiples of 8, so their profiles share the grid's phase)."""

    def make() -> tuple[F32, F32]:
        rows, cols = (np.mean(_column_energy(image, a), axis=0) for a in (0, 1))
        return rows, cols

    profiles: tuple[F32, F32] = _cached(image, "det:profiles", make)
    return profiles


# -- the JPEG quality of the coarsest save ------------------------------------------------
#
# A JPEG save divides each 8x8 block's DCT coefficients by its quantization table and
# rounds, so the decoded pixels' coefficients (on the same grid) sit on multiples of the
# table's steps; a later, finer save keeps that lattice (Fan & de Queiroz 2003,
# "Identification of bitmap compression history: JPEG detection and quantizer estimation").
# Read from the pixels, not the file's tables, this is the coarsest quantization the photo
# went through: a q14 save re-saved at q90 reads about 14; a clean camera JPEG at q75
# reads 75, at q80-95 its steps are too fine to tell from rounding (read 100, as a PNG or a
# reduced JPEG, whose grid is gone; a JPEG enlarged 2x or 3x is read on its grown grid).
# Measured on the fit set's camera series: earlier saves at q60/45/32/22/14 read medians
# 59.8/44.9/31.8/21.9/14.2, clean q75 75.0, every image without an earlier save 79.6 or
# more. A quality is not a judgement on its own (a q75 save is a normal camera's); the
# camera model learns what it means beside the other readings.

# the IJG reference luma table (quality 50), row v, column u
_IJG_LUMA = np.array([
    16, 11, 10, 16, 24, 40, 51, 61, 12, 12, 14, 19, 26, 58, 60, 55,
    14, 13, 16, 24, 40, 57, 69, 56, 14, 17, 22, 29, 51, 87, 80, 62,
    18, 22, 37, 56, 68, 109, 103, 77, 24, 35, 55, 64, 81, 104, 113, 92,
    49, 64, 78, 87, 103, 121, 120, 101, 72, 92, 95, 98, 112, 100, 103, 99,
], dtype=np.float64).reshape(8, 8)  # fmt: skip
# the low-frequency coefficients read: most blocks of a photo keep them above zero
_JPEG_POSITIONS = ((0, 1), (1, 0), (1, 1), (0, 2), (2, 0), (1, 2), (2, 1), (2, 2), (0, 3), (3, 0))
_TABLE = [float(_IJG_LUMA[v, u]) for v, u in _JPEG_POSITIONS]  # their reference steps
_STEPS = np.arange(2, 121, dtype=np.float64)  # quantizer steps tried
STEP_FIT = 0.6  # mean cos(2 pi c / step) over coefficients beyond half a step: on the lattice
STEP_EVIDENCE = 40  # coefficients beyond half a step needed to judge a step
SMALLEST_STEP = 4  # finer steps cannot be told from the rounding of 8-bit pixels
UPSCALES = (2, 3)  # a JPEG enlarged by these factors after its save is read too
# A coarse save rings: it keeps a block's few low frequencies, and every pixel of the block
# moves with them. A drawing's repeated blocks (a plot's one line and frame on white) put
# each low-frequency coefficient at a few exact values, a lattice of any step they share, so
# a sparse PNG plot read quality 10. But most of its blocks with detail keep more than half
# their pixels at the drawing's background, exactly: the lightest (or darkest) value most
# of them share. Share of the blocks with detail that do, on the save's own grid: the fit
# set's camera and lossless saves at q8-22 0.000; a synthetic sparse plot (tests) 1.0; the
# two held-out plots that showed the problem 0.79 and 0.97, their q10 saves 0.02 and 0.13.
# On the grids of an enlargement, where a cell is a mean: the plots 1.0, the fit set's saves
# at most 0.35 (a night sky's black). A save's clipping can keep a block flat too: the
# synthetic plot's pure black lines saved at q10 read 0.69 (its enlargement grids still
# read the save), but of 271 design drawings saved at q10-50 none reads differently.
KEPT_FLAT = 0.6
DETAIL_FLOOR = 8.0  # 8-bit units: a block with a low-frequency coefficient this large has detail


def _basis() -> NDArray[np.float64]:
    """The 8x8 DCT-II basis images (orthonormal: JPEG's forward transform) of the
    coefficients read, as a 64 x len(_JPEG_POSITIONS) matrix in 8-bit units."""
    k = np.arange(8)
    d = np.cos(np.pi * (2 * k[None, :] + 1) * k[:, None] / 16) * np.sqrt(2 / 8)
    d[0] /= np.sqrt(2)
    return np.stack([np.outer(d[v], d[u]).ravel() for v, u in _JPEG_POSITIONS], axis=1) * 255.0


_BASIS = _basis()
_LARGEST = 512  # coefficients beyond this many 8-bit units are not read (a few in a photo)
_BEYOND = (np.arange(_LARGEST)[:, None] >= _STEPS[None, :] / 2).astype(np.float64)
# cos(2 pi c / step) of the coefficients half a step out or more, per (|c|, step)
_ON_LATTICE = _BEYOND * np.cos(2 * np.pi * np.arange(_LARGEST)[:, None] / _STEPS[None, :])


VISIBLE_GRID = 0.25  # blockiness from which a grid's phase is trusted (visible blocking)


def _grid_phase(image: LoadedImage) -> tuple[int, int]:
    """Where the 8x8 blocks start (rows, columns): the image's origin, unless a visible grid
    stands out on another phase (a JPEG cropped after its save)."""
    if blockiness(image) < VISIBLE_GRID:
        return 0, 0
    phase = []
    for c in _step_profiles(image):
        n = c.size // 8 * 8
        # a step between pixels i and i + 1 is a block edge when a block starts at i + 1
        phase.append((int(np.argmax(c[:n].reshape(-1, 8).mean(axis=0))) + 1) % 8 if n else 0)
    return phase[0], phase[1]


def _blocks(g: F32) -> F32:
    """The 8x8 blocks of ``g`` from its origin, one per row (64 pixels)."""
    h, w = g.shape[0] // 8 * 8, g.shape[1] // 8 * 8
    return g[:h, :w].reshape(h // 8, 8, w // 8, 8).swapaxes(1, 2).reshape(-1, 64)


def _grid_quality(planes: list[F32]) -> float:
    """The IJG quality of the lattice in the low-frequency DCT coefficients
    (``_JPEG_POSITIONS``, 8-bit units) of every 8x8 block of ``planes``: 100 when none is
    found, or when most blocks with detail keep more than half their pixels at the
    background (the lightest or darkest value most of them share), exactly: a drawing's,
    which a coarse save's ringing would have moved (``KEPT_FLAT``)."""
    blocks = (
        np.concatenate([_blocks(g) for g in planes]) if planes else np.zeros((0, 64), np.float32)
    )
    c = blocks.astype(np.float64) @ _BASIS
    quality = _quality(c)
    if quality == 100.0:  # no lattice: most images, which need no copy of their blocks
        return quality
    detail = blocks[(np.abs(c) >= DETAIL_FLOOR).any(axis=1)]
    if detail.shape[0] == 0:
        return quality
    kept = 0.0
    for ends in (detail.max(axis=1), detail.min(axis=1)):
        values, counts = np.unique(ends, return_counts=True)
        background = values[np.argmax(counts)]
        kept = max(kept, float(((detail == background).mean(axis=1) > 0.5).mean()))
    return 100.0 if kept > KEPT_FLAT else quality


def _grid_planes(image: LoadedImage) -> list[F32]:
    """The full-resolution crops (whose offsets are multiples of 8) from the save's grid."""
    py, px = _grid_phase(image)
    return [g[py:, px:] for g in _crops(image)]


def _upscaled_planes(image: LoadedImage, k: int) -> list[F32]:
    """The crops as they were before an upscale by ``k``: each k x k
    cell averaged, from a multiple of 8k (an exact k-times resize keeps the origin: the
    mean of an upscaled cell is about the pixel it came from, whose save's 8x8 grid becomes
    the upscale's 8k x 8k one)."""
    planes = []
    for g, (y0, x0) in zip(_crops(image), _crop_origins(image), strict=True):
        g = g[-y0 % (8 * k) :, -x0 % (8 * k) :]
        h, w = g.shape[0] // k * k, g.shape[1] // k * k
        # the k x k strided slices summed: a tenth of the time of a mean over a 4-D view
        cells = g[:h:k, :w:k].copy()
        for dy, dx in itertools.product(range(k), repeat=2):
            if dy or dx:
                cells += g[dy:h:k, dx:w:k]
        cells /= np.float32(k * k)
        planes.append(cells)
    return planes


def _steps(c: NDArray[np.float64]) -> list[float | None]:
    """Per coefficient (column of ``c``): the largest quantizer step whose lattice its values
    sit on (refined to the best-fitting step just below it); 0 when no step of at least
    ``SMALLEST_STEP`` fits, None when too few values reach that far to tell (a flat or
    blurred image)."""
    n = np.minimum(np.rint(np.abs(c)).astype(np.intp), _LARGEST - 1)
    hist = np.stack([np.bincount(col, minlength=_LARGEST) for col in n.T]).astype(np.float64)
    hist[:, -1] = 0.0  # beyond _LARGEST: not read
    count = hist @ _BEYOND
    fit = np.where(count >= STEP_EVIDENCE, (hist @ _ON_LATTICE) / np.maximum(count, 1), -1.0)
    out: list[float | None] = []
    for k in range(c.shape[1]):
        if count[k, _STEPS == SMALLEST_STEP][0] < STEP_EVIDENCE:
            out.append(None)
            continue
        on = np.flatnonzero(fit[k] > STEP_FIT)
        if on.size == 0 or _STEPS[on[-1]] < SMALLEST_STEP:
            out.append(0.0)
            continue
        near = (_STEPS >= 0.85 * _STEPS[on[-1]]) & (_STEPS <= _STEPS[on[-1]])  # noqa: SIM300
        out.append(float(_STEPS[near][np.argmax(fit[k][near])]))
    return out


def jpeg_quality(image: LoadedImage) -> float:
    """The IJG quality (1-100) of the coarsest JPEG save the pixels went through, 100 when
    no lattice of steps of at least ``SMALLEST_STEP`` is found (a PNG, a q85+ save, a
    reduced JPEG): the median over the low-frequency coefficients of each step's scale
    against the reference table (a coefficient without a lattice counts as scale 0, one
    with too few values to tell is left out), the lowest of the save's own grid and the
    grids of an enlargement by ``UPSCALES``."""

    def make() -> float:
        grids = [_grid_planes(image)] + [_upscaled_planes(image, k) for k in UPSCALES]
        return min(_grid_quality(planes) for planes in grids)

    return float(_cached(image, "det:jpeg", make))


def _quality(c: NDArray[np.float64]) -> float:
    """The IJG quality of the lattice in coefficients ``c`` (100 when none is found)."""
    scales = [q / t for q, t in zip(_steps(c), _TABLE, strict=True) if q is not None]
    if not scales:
        return 100.0
    s = float(np.median(scales))
    return float(np.clip(100.0 - 50.0 * s if s <= 1.0 else 50.0 / s, 1.0, 100.0))


# A column's neighbourhood is read (``_dead_fraction``) where its strongest step is one code
# value on average or more. Below that a smooth gradient's 8-bit rounding steps on a few rows
# of some columns and none of the others, which repeat their neighbour as a mosaic's do: a
# fog's sky saved at q75 (a held-out photo, DarkestHour) read 0.56 at half a code, 0.02 at
# one. On the fit set's photos this leaves every pixelate level's median as it was (0.501 to
# 0.891) and the clean camera JPEGs' largest reading falls 0.246 -> 0.019.
PIXEL_STEP = 1.0 / 255
# the share of the columns a fraction is counted over at least: where few columns step
# visibly (a dark photo), a few dead ones among them are no mosaic (a darkened fit photo
# read 0.25 over its few live columns, 0.05 so)
PIXEL_LIVE = 0.25


def _dead_fraction(c: F32) -> float:
    if c.size < 8:
        return 0.0
    # a column is "dead" when it barely changes while its neighbourhood does: pixelation
    # repeats each column b times, so (b - 1)/b of them are dead; flat areas are not counted
    # the maximum over 17 neighbours (edges repeated); numpy, so the default tools need no scipy
    local = np.lib.stride_tricks.sliding_window_view(np.pad(c, 8, mode="edge"), 17).max(axis=1)
    live = local >= PIXEL_STEP
    if live.sum() < 8:
        return 0.0
    dead = (c < 0.15 * local) & live
    return float(dead.sum() / max(float(live.sum()), PIXEL_LIVE * c.size))


def pixelation(image: LoadedImage) -> float:
    """Fraction of rows/columns that repeat their neighbour (lower is better): 0 for
    natural images, (b - 1)/b for blocks of b pixels."""
    # per crop: blocks of 3, 6 or 9 px do not share a phase between crops 8-aligned
    return float(
        np.mean(
            [
                0.5 * (_dead_fraction(c) + _dead_fraction(r))
                for c, r in zip(_column_energy(image, 1), _column_energy(image, 0), strict=True)
            ]
        )
    )


# -- a coarse save's ringing, confined to its blocks -----------------------------------------
#
# ``jpeg_quality`` reads a save's lattice, but a drawing's coarse save hides it: around a
# line on white the save overshoots beyond full scale and the decoder clips, so the blocks
# with detail leave the lattice (of the scipy and statsmodels plots saved at q20, 94% read
# 100). What the save leaves in sight is its ringing ("mosquito noise"): every pixel of a
# block that holds an edge moves with the coarsely quantized coefficients, even where the
# drawing's background was one exact colour, while the next block, with no edge, stays
# flat. ``ringing`` reads that contrast on a flat background: the pixels 3-6 px from the
# ink (``RING_HALO``), how far they spread (RMS, codes) in blocks that hold ink against
# blocks that do not. A PNG drawing reads about 0; a photo's own texture spreads on both
# sides of a block's edge alike. Measured on the design drawings (bench.drawings.DESIGN,
# scripts/fit_ringing_card.py) and the fit set's photos, see the card.
RING_INK = 32.0  # codes from the background: a drawing's lines, text and fills
RING_HALO = (2, 6)  # px from the ink (chessboard distance): the pixels read, beyond the 2
RING_BACKGROUND = 0.3  # share of the pixels within 2 codes of the commonest value: flat
# (``drawn_flat`` reads a flat colour too, but in RGB, never white, and not where a coarse
# save made it: here white counts, and a coarse save's flat blocks are what is read)
RING_PIXELS = 8  # halo pixels a block needs to be read
RING_BLOCKS = 20  # blocks read with ink, and without, that a reading needs


def _background(codes: F32) -> tuple[int, float]:
    """The commonest 8-bit code of ``codes`` (whole codes, 0-255) and the share of them
    within two codes of it."""
    hist = np.bincount(codes.astype(np.uint8).ravel(), minlength=256)
    bg = int(hist.argmax())
    return bg, float(hist[max(0, bg - 2) : bg + 3].sum()) / max(1, codes.size)


def ringing(image: LoadedImage) -> float:
    """How much more the flat background spreads near the ink inside the 8x8 blocks that
    hold it than in those that do not (RMS, 8-bit codes; lower is better): a coarse JPEG
    save's ringing. 0 where no flat background is read (``RING_BACKGROUND``) or too few
    blocks are (``RING_BLOCKS``)."""

    def make() -> float:
        # most photos have no flat background: the sampling grid tells, and nothing more is read
        if _background(np.rint(_grid_luma(image) * np.float32(255.0)))[1] < RING_BACKGROUND:
            return 0.0
        inside, outside = [], []
        for g in _crops(image):
            v = np.rint(g[: g.shape[0] // 8 * 8, : g.shape[1] // 8 * 8] * np.float32(255.0))
            if v.size == 0:
                continue
            bg, flat = _background(v)
            if flat < RING_BACKGROUND:
                continue
            ink = np.abs(v - bg) > RING_INK
            lo, hi = RING_HALO
            near = dilate(ink, hi, square=True) & ~dilate(ink, lo, square=True)
            halo = _blocks(near.astype(np.float32))
            x = _blocks(v)
            n = halo.sum(axis=1)
            ok = n >= RING_PIXELS
            mean = (x * halo).sum(axis=1)[ok] / n[ok]
            spread = np.sqrt(np.maximum((x * x * halo).sum(axis=1)[ok] / n[ok] - mean**2, 0.0))
            edge: NDArray[np.bool_] = _blocks(ink.astype(np.float32)).max(axis=1)[ok] > 0
            inside.append(spread[edge])
            outside.append(spread[~edge])
        a, b = (np.concatenate(s) if s else np.zeros(0) for s in (inside, outside))
        if a.size < RING_BLOCKS or b.size < RING_BLOCKS:
            return 0.0
        return float(a.mean() - b.mean())

    return float(_cached(image, "det:ringing", make))


# -- exposure and contrast -----------------------------------------------------------------


def underexposure(image: LoadedImage) -> float:
    """Highlight level: the 99.9th percentile of the brightest channel at viewing scale
    (higher is better).

    Darkening scales every tone down, the brightest ones too. A dark but well-exposed
    photo (a night sky, a dim interior, a low-key portrait) still has some bright content:
    stars, lights, a lit face; at the detail plane's scale (reduced to 1024 px)
    a small light counts while single noisy pixels do not. The mean or median brightness
    says nothing about exposure: a night scene is dark on purpose. Exposure is how close a
    channel comes to its full scale, so the brightest channel counts, not luma: a saturated
    blue or purple at full strength has a luma of 0.1-0.3 and is not dark.
    """
    return float(np.percentile(_value(image), 99.9))


CLIPPED = 254.5 / 255  # a channel at its top code: no detail left above it
NEAR_WHITE = 0.75  # where the highlight shoulder starts


def _top_clipped(image: LoadedImage) -> NDArray[np.bool_]:
    """Where a channel of the ``_grid`` pixel is at its top code (2-D)."""

    def make() -> NDArray[np.bool_]:
        rgb = _grid(image)
        # the planes compared pairwise: several times faster than a max over the last axis
        top = np.maximum(np.maximum(rgb[..., 0], rgb[..., 1]), rgb[..., 2])
        return top >= CLIPPED

    return _cached(image, "det:top", make)


def overexposure(image: LoadedImage) -> float:
    """Clipped highlights (lower is better): the fraction of the image where a channel is
    at its top code in a pixel and in its right-hand neighbour on the sampling grid, plus
    half the highlight shoulder, the mean of clip((luma - 0.75) / 0.25, 0, 1) squared.

    Over-exposure saturates the sensor's channels: wherever one reaches full scale its
    texture is gone and the hue shifts (a blue sky turns cyan, then white), which the first
    term counts in areas (two neighbours), so isolated specular glints do not count and a
    blown sky does; the shoulder term grows smoothly as tones are pushed towards white
    before they clip, so that mild over-exposure ranks too. A bright or high-key photo
    whose pale tones still carry detail (white wood, a misty morning, a pastel palette)
    stays low whatever its mean brightness. A white studio background reads high too: it
    is clipped by design. A drawing's white (a plot, a page) is told apart by
    ``drawn_white``, by which the detector stands aside (tools/builtin.py); this raw
    reading, which the camera model reads, does not.
    """
    top = _top_clipped(image)
    clipped = float((top[:, 1:] & top[:, :-1]).mean()) if top.shape[1] > 1 else 0.0
    lum = _grid_luma(image)
    # squared: tones just above the knee (pale wood, mist) count little, near-white ones fully
    shoulder = float((np.clip((lum - NEAR_WHITE) / (1.0 - NEAR_WHITE), 0.0, 1.0) ** 2).mean())
    return clipped + 0.5 * shoulder


# A drawing's white background (a plot, a page, a screenshot) is clipped by design, and the
# exposure readings took it for blown highlights: 296 of 300 plots from two documentation
# packages the project never fitted on read "brightness change" (quality_check.py --series
# drawings). Two things tell a drawing from an over-exposed photograph, on the sampling grid.
# Measured by scripts/drawn_check.py where a third or more of the image is white: 407
# drawings (plots of the scikit-learn and pandas docs, Octave's manual, GIMP's dialogs,
# bench.renders at seeds 1-4) against 87 images of the fit set, nearly all over-exposed:
# - no highlight shoulder: a photo's tones roll towards the clip (a sky that brightens into
#   white, lit skin), so light tones (luma 0.7 to DRAWN_WHITE) border its white; a drawing's
#   strokes and fills meet the background at once. Light tones per white pixel: drawings a
#   median of 0.02 (90% below 0.35), the fit set 0.27 (10% below 0.01: nearly blank ones).
# - no photographic texture: a drawing's content is flat fills and sharp strokes, so between
#   neighbouring grid samples its tones either stay (a fill) or jump (an edge); a photo's
#   texture and noise make small steps (DRAWN_STEPS) everywhere, inside its shapes too (a
#   stroke's antialiasing is at its edges). Such steps among the non-white samples:
#   drawings a median of 0.01 (90% below 0.13), the fit set 0.40 (90% above 0.11).
# 87% of those drawings and 8% of those fit images read as drawings (drawn_white above 0.5).
DRAWN_WHITE = 0.93  # a drawing's white, with a JPEG save's ringing around its strokes
DRAWN_STEPS = (0.015, 0.1)  # a texture's steps between neighbouring grid samples (luma)
DRAWN_SHOULDER = (0.2, 0.6)  # light tones per white pixel: a drawing below, a photo above
DRAWN_TEXTURE = (0.12, 0.25)  # share of texture steps in the rest: the same
DRAWN_CONTENT = 0.005  # an image with less non-white than this is blank, not a drawing
DRAWN_WHITE_SHARE = 0.3  # white area from which the background is the white that counts
# A drawing's white is one code (a PNG) or nearly so (a JPEG's ringing beside its strokes):
# neighbouring white samples within a code and a half of each other, 0.97-0.99 of them on
# the design drawings flagged "noisy" (scatter plots of many small markers), 0.95 with a
# noise of 0.005 added, 0.74 with 0.01, 0.47 with 0.02. Noise on the white is noise.
DRAWN_FLAT_WHITE = (0.9, 0.96)  # share of flat white neighbours: noisy below, plain above
# A drawing's colours are fills (pastel regions, a table's grey rows, a dialog's panels,
# markers): few exact colours, each over a large area and alone among the colours near it,
# while a photo's tones are graded (a sky rolling into the clip has every code, each in a
# thin band). Samples of a colour that covers DRAWN_FILL[0] of the grid or more, and at
# least DRAWN_FILL[1] of its bin of 8 codes a channel, are fills: light ones are no
# shoulder, and a step from or to one is no texture (the many small markers of a scatter
# plot and their antialiasing). The bin keeps a pixelated photo's light blocks out
# (neighbouring blocks differ by a code or two: the fit set's black-and-white photos
# pixelated at levels 3-5 read as drawings 4 times in 60 without it, never with it), and a
# camera JPEG's smooth sky, whose flat blocks repeat exact colours too. Design drawings read
# as drawings where a third or more is white: 87.0% -> 95.3%; fit images of that kind: 8.0%,
# unchanged. Fills are exact colours only where no coarse save made flat areas (FLAT_JPEG,
# FLAT_BLOCKS, as for drawn_flat): a high-key photo saved at level 4-5 has flat light blocks
# of one colour. Nor are a channel at its top code or a crushed black fills: clipping makes
# a photo's colours repeat exactly (a brightened photo's blown areas, a black background).
DRAWN_FILL = (0.002, 0.5)
DRAWN_BLACK = 4.5 / 255  # luma at or below: a crushed black, which no fill is


def _colours(image: LoadedImage) -> tuple[F32, F32]:
    """Per ``_grid`` sample (2-D): the share of the grid at its exact colour (8-bit RGB),
    and that share over the share in its bin of 8 codes a channel (how far its colour is
    alone among the colours near it)."""

    def make() -> tuple[F32, F32]:
        q = np.rint(_grid(image) * 255.0).astype(np.int32)
        n = np.float32(q.shape[0] * q.shape[1])
        key = ((q[..., 0] << 16) | (q[..., 1] << 8) | q[..., 2]).ravel()
        _, inverse, counts = np.unique(key, return_inverse=True, return_counts=True)
        exact = (counts[inverse] / n).astype(np.float32).reshape(q.shape[:2])
        b = q >> 3  # 32 bins a channel: few enough to count directly
        bins = ((b[..., 0] << 10) | (b[..., 1] << 5) | b[..., 2]).ravel()
        near = (np.bincount(bins, minlength=1 << 15)[bins] / n).astype(np.float32)
        return exact, exact / near.reshape(q.shape[:2])

    return _cached(image, "det:colours", make)


def _falling(v: float, lo_hi: tuple[float, float]) -> float:
    """1 at or below ``lo``, 0 at or above ``hi``, a straight line between."""
    lo, hi = lo_hi
    return float(np.clip((hi - v) / (hi - lo), 0.0, 1.0))


def _textured(steps: F32) -> float:
    lo, hi = DRAWN_STEPS
    return float(((steps > lo) & (steps < hi)).mean()) if steps.size >= 32 else 0.0


def _fills(image: LoadedImage) -> NDArray[np.bool_]:
    """Where a ``_grid`` sample is of a fill colour (``DRAWN_FILL``), not clipped and not a
    crushed black (``DRAWN_BLACK``); nowhere where a coarse save made the flat areas
    (``_coarse_saved``)."""

    def make() -> NDArray[np.bool_]:
        exact, alone = _colours(image)
        fill = (exact >= DRAWN_FILL[0]) & (alone >= DRAWN_FILL[1])
        # a clipped channel or a crushed black repeats exact colours in a photo too
        fill &= ~_top_clipped(image) & (_grid_luma(image) > DRAWN_BLACK)
        return fill if fill.any() and not _coarse_saved(image) else np.zeros_like(fill)

    return _cached(image, "det:fills", make)


def _texture(lum: F32, back: NDArray[np.bool_], fill: NDArray[np.bool_]) -> float:
    """The share of steps to the next grid sample within ``DRAWN_STEPS``, a step from or to
    a ``fill`` sample not counted (a fill's edge is a drawing's, its inside has none): the
    lower of that among the samples off the background ``back`` and among those away from it
    (a thin antialiased stroke has steps at its edges and no inside)."""
    step = np.hypot(np.diff(lum, axis=1)[:-1], np.diff(lum, axis=0)[:, :-1])
    step[fill[:-1, :-1] | fill[:-1, 1:] | fill[1:, :-1]] = 0.0
    near = back.copy()  # the background or beside it (its 3x3 neighbourhood holds some)
    near[1:] |= back[:-1]
    near[:-1] |= back[1:]
    near[:, 1:] |= near[:, :-1].copy()
    near[:, :-1] |= near[:, 1:].copy()
    return min(_textured(step[~back[:-1, :-1]]), _textured(step[~near[:-1, :-1]]))


def drawn_parts(image: LoadedImage) -> tuple[float, float, float, float, float]:
    """What ``drawn_white`` reads, on the sampling grid: the share of white (luma at least
    ``DRAWN_WHITE``), the light tones (luma 0.7 and up) per white sample, those of them in
    fill colours (``_fills``) per white sample, the texture of the rest (``_texture``), and
    the share of neighbouring white samples within 1.5 codes of each other (how plain the
    white is)."""

    def make() -> tuple[float, float, float, float, float]:
        lum = _grid_luma(image)
        white = lum >= DRAWN_WHITE
        share = float(white.mean())
        if share == 0.0 or min(lum.shape) < 3:
            return share, 0.0, 0.0, 0.0, 0.0
        light = (lum >= 0.7) & ~white
        fill = _fills(image)
        shoulder = float(light.mean()) / share
        fills = float((light & fill).mean()) / share
        pairs = white[:, 1:] & white[:, :-1]
        steps = np.abs(np.diff(lum, axis=1))[pairs]
        plain = float((steps <= 1.5 / 255).mean()) if steps.size else 0.0
        return share, shoulder, fills, _texture(lum, white, fill), plain

    return _cached(image, "det:drawn", make)


def drawn_white(image: LoadedImage) -> float:
    """How far the image's white reads as a drawing's background, not as clipped light:
    0 (a photograph, no white, or a blank frame) to 1 (a plot, a page, a screenshot on
    white). The product of three ramps over ``drawn_parts``: the highlight shoulder
    (``DRAWN_SHOULDER``; light fills left out), the photographic texture of the content
    (``DRAWN_TEXTURE``) and the share of white (up to ``DRAWN_WHITE_SHARE``). The readings
    a drawing's design trips (over-exposure, blocks: ``tools/builtin.py``) stand aside by
    it, so a chart is not "over-exposed"; an over-exposed photo whose remains look drawn
    (power lines on a sky blown to white) reads as one too."""
    share, shoulder, fills, texture, _ = drawn_parts(image)
    if share == 0.0 or share > 1.0 - DRAWN_CONTENT:
        return 0.0
    return (
        # light fills are a drawing's design, not tones rolling into the clip
        _falling(shoulder - fills, DRAWN_SHOULDER)
        * _falling(texture, DRAWN_TEXTURE)
        * min(1.0, share / DRAWN_WHITE_SHARE)
    )


def white_ground(image: LoadedImage) -> float:
    """How far the image's white is a ground, not clipped light: ``drawn_white``, or 1 on a
    page (``page``). A defocused page's blurred strokes roll into its paper, which a
    drawing's do not, so from a 3 px disc ``drawn_white`` no longer reads it, and a white
    page defocused by 3-4.5 px was named "over-exposed" besides blurred; its paper is
    white by design, as a drawing's background is."""
    return 1.0 if page(image) else drawn_white(image)


# A drawing on a flat background of another colour (a dark theme, a grey dialog) has the
# flat fills and straight edges that pixelation, blockiness and the camera model's
# compression head read as blocks, but no white: its background is one exact colour. No
# camera JPEG of the fit set has a third of its grid samples within two codes of one colour
# (at most 0.22: sensor noise and gradients), dark renders and GIMP's dialogs 0.41-0.95.
# Exact flat areas are also what a coarse JPEG save, posterization, a loss of contrast or
# a darkening leave on a lossless image; of those, only a coarse save is read by the
# readings that stand aside on a drawing, so where jpeg_quality finds a save coarser than
# a camera's (below FLAT_JPEG), or its 8x8 grid stands out (blockiness from FLAT_BLOCKS: the
# fit set's lossless saves at levels 4-5 read 1.66 and up, and a save that coarse leaves
# too few coefficients for jpeg_quality; the design drawings on a flat background at most
# 1.19), the flat colour is that save's, not a background.
DRAWN_FLAT_SHARE = (0.3, 0.45)  # share of the grid at the modal colour: a photo below
DRAWN_FLAT_CODES = 2.5 / 255  # "at that colour": within two codes in every channel
FLAT_JPEG = 70.0  # jpeg_quality below this: a coarse save made the flat areas
FLAT_BLOCKS = 1.5  # blockiness from this: the same


def _coarse_saved(image: LoadedImage) -> bool:
    """A save coarser than a camera's made flat areas (``FLAT_JPEG``, ``FLAT_BLOCKS``)."""
    return jpeg_quality(image) < FLAT_JPEG or blockiness(image) >= FLAT_BLOCKS


def drawn_flat(image: LoadedImage) -> float:
    """How far the image is a drawing on a flat background that is not white: 0 to 1. The
    product of two ramps: the share of grid samples within ``DRAWN_FLAT_CODES`` of the most
    frequent colour (``DRAWN_FLAT_SHARE``) and the texture of the rest (``_texture``,
    ``DRAWN_TEXTURE``); 0 where a coarse save made the flat areas (``FLAT_JPEG``,
    ``FLAT_BLOCKS``). A white background is ``drawn_white``'s."""

    def make() -> float:
        rgb = _grid(image)
        if min(rgb.shape[:2]) < 3:
            return 0.0
        # the most frequent exact colour
        mode = np.unravel_index(int(np.argmax(_colours(image)[0])), rgb.shape[:2])
        colour = np.rint(rgb[mode] * 255.0) / np.float32(255.0)
        if float(colour @ _BT601) >= DRAWN_WHITE:
            return 0.0
        back = np.abs(rgb - colour).max(axis=2) <= DRAWN_FLAT_CODES
        share = 1.0 - _falling(float(back.mean()), DRAWN_FLAT_SHARE)
        if share == 0.0 or back.all():
            return 0.0
        if _coarse_saved(image):
            return 0.0
        return share * _falling(_texture(_grid_luma(image), back, _fills(image)), DRAWN_TEXTURE)

    return _cached(image, "det:drawn_flat", make)


def drawn(image: LoadedImage) -> float:
    """How far the image is a drawing, on white or on another flat background: the larger
    of ``drawn_white`` and ``drawn_flat``."""
    return max(drawn_white(image), drawn_flat(image))


def drawn_plain(image: LoadedImage) -> float:
    """How far the image is a drawing whose background holds no noise: ``drawn_flat`` (its
    background is exact to two codes), or ``drawn_white`` times how plain its white is
    (``DRAWN_FLAT_WHITE``: the white tolerates 18 codes, noise would hide in it)."""
    plain = 1.0 - _falling(drawn_parts(image)[4], DRAWN_FLAT_WHITE)
    return max(drawn_white(image) * plain, drawn_flat(image))


def contrast(image: LoadedImage) -> float:
    """Tonal spread: from the darkest to the brightest channel value the image uses, the
    0.5th percentile of its lowest channel to the 99.5th of its highest (higher is better).

    A loss of contrast (haze, veiling glare, a flat tone curve) pulls every colour towards
    one grey: the range of every channel shrinks and so does the distance between the
    channels of a colour. A soft pastel palette or a flat design in saturated colours can
    have little luma spread, yet its colours sit far apart on the display's scale (a green
    of R 0.2 and G 0.7, orange against blue), so those count, not the luma alone.
    """
    lo, hi = np.percentile(_sample(image), [0.5, 99.5], axis=0)
    return float(hi.max() - lo.min())


# -- colour --------------------------------------------------------------------------------


def colorfulness(image: LoadedImage) -> float:
    """Hasler & Süsstrunk (2003) colourfulness M on the [0, 1] scale (higher is better).

    0 for a grey image; about 0.1-0.2 for ordinary colour photos (the paper's 0-255 scale
    divided by 255).
    """
    p = _sample(image)
    rg = p[:, 0] - p[:, 1]
    yb = 0.5 * (p[:, 0] + p[:, 1]) - p[:, 2]
    return float(np.hypot(rg.std(), yb.std()) + 0.3 * np.hypot(rg.mean(), yb.mean()))


# log-chroma plane: the two unit directions orthogonal to grey (1, 1, 1) in log RGB, red-cyan
# and green-blue; a white-balance error (a gain per channel) is a constant shift in it
_LOG_CHROMA = np.array(
    [[2.0, -1.0, -1.0] / np.sqrt(6.0), [0.0, 1.0, -1.0] / np.sqrt(2.0)], dtype=np.float32
)
GREY_PIXEL_SHARE = 0.05  # the greyest twentieth of the structured pixels (Yang et al. 2015)
HIGHLIGHT_SHARE = 0.02  # the brightest fiftieth of the unclipped pixels
CLIP_LO, CLIP_HI = 0.02, 0.98  # channels beyond these lost their ratio to the others


def _log_chroma(rgb: NDArray[np.floating[Any]]) -> NDArray[np.float64]:
    """The log-chroma (2-vector) of a colour: 0 for grey, a channel gain moves it linearly."""
    return np.asarray(_LOG_CHROMA @ np.log(np.maximum(rgb, 1e-4)), dtype=np.float64)


def _box3(a: F32) -> F32:
    p = np.pad(a, ((1, 1), (1, 1), (0, 0)), mode="edge")
    h, w = a.shape[:2]
    out = np.zeros_like(a)
    for dy in range(3):
        for dx in range(3):
            out += p[dy : dy + h, dx : dx + w]
    return out / np.float32(9.0)


def _estimates(g: F32) -> NDArray[np.float64]:
    """``cast_estimates`` of an RGB block (h × w × 3) as a 3 × 2 array; zeros without 64
    unclipped, structured pixels to estimate from."""
    h, w = g.shape[:2]
    # channel by channel: numpy's reductions over a last axis of 3 are several times slower
    # than elementwise operations on the planes
    chans = [g[..., c] for c in range(3)]
    hi = np.maximum(np.maximum(chans[0], chans[1]), chans[2])
    lo = np.minimum(np.minimum(chans[0], chans[1]), chans[2])
    unclipped = (hi < CLIP_HI) & (lo > CLIP_LO)
    if h < 6 or w < 6 or int(unclipped.sum()) < 64:
        return np.zeros((3, 2))
    logs = _box3(np.log(np.maximum(g, np.float32(1.0 / 255))))
    gy, gx = np.gradient(logs, axis=(0, 1))
    contrast = np.sqrt(gx * gx + gy * gy)  # h × w × 3: each channel's local log contrast
    c = [contrast[..., i] for i in range(3)]
    mean_c = (c[0] + c[1] + c[2]) / np.float32(3.0)
    structured = unclipped & (mean_c > 0.02)
    structured[:2] = structured[-2:] = False
    structured[:, :2] = structured[:, -2:] = False
    if int(structured.sum()) < 64:
        # no surfaces to read the light from (a flat fill, a smooth gradient): no cast can
        # be told
        return np.zeros((3, 2))

    # (numpy's hypot is several times slower than the root of the squares, and nothing here
    # comes near an overflow)
    grad = np.sqrt(np.square(g[:-1, 1:] - g[:-1, :-1]) + np.square(g[1:, :-1] - g[:-1, :-1]))
    ok = unclipped[:-1, :-1] & unclipped[1:, :-1] & unclipped[:-1, 1:]
    if int(ok.sum()) < 64:
        ok[...] = True
    edges = np.array([grad[..., i][ok].mean() for i in range(3)])
    # how far a pixel's local contrast differs between its channels (0: achromatic)
    m = mean_c[structured]
    spread = np.sqrt(sum((ch[structured] - m) ** 2 for ch in c) / np.float32(3.0))
    greyness = spread / m
    k = max(16, int(GREY_PIXEL_SHARE * greyness.size))
    # the pixels picked are gathered by their flat index, not by copying every candidate
    rows = g.reshape(-1, 3)
    where = np.flatnonzero(structured)
    grey = rows[where[np.argpartition(greyness, k - 1)[:k]]].mean(axis=0)
    where = np.flatnonzero(unclipped)
    luma = _luma(g)[unclipped]
    k = max(16, int(HIGHLIGHT_SHARE * luma.size))
    light = rows[where[np.argpartition(luma, luma.size - k)[-k:]]].mean(axis=0)
    return np.stack([_log_chroma(edges), _log_chroma(grey), _log_chroma(light)])


def cast_estimates(image: LoadedImage) -> list[NDArray[np.float64]]:
    """Three illuminant estimates, each as a log-chroma 2-vector (0 = neutral light), from
    evidence that a scene's own colours bias in different ways:

    - grey edges (van de Weijer et al. 2007): the mean |gradient| per channel; the
      differences between surfaces average to grey under neutral light, so a uniformly
      coloured scene (a green meadow, a blue sky) keeps them balanced;
    - grey pixels (Yang, Gao & Li 2015): the pixels whose local contrast in log RGB is the
      same in all three channels (achromatic surfaces: a channel gain adds a constant to
      each log channel and leaves their contrast alone, so the same pixels are picked with
      and without a cast), their mean colour;
    - highlights (white patch): the mean colour of the brightest unclipped pixels, the
      whites and speculars that show the light's colour.

    Clipped pixels (a channel beyond 0.02-0.98) lost their channel ratios and are left
    out. A black-and-white image, and one without 64 structured pixels (local log contrast
    above 0.02: flat fills and smooth gradients show no surfaces to read the light from),
    read (0, 0) in each.
    """
    return list(_cached(image, "det:cast", lambda: _estimates(_grid(image))))


def colorcast(image: LoadedImage) -> float:
    """Colour cast: how far grey edges, grey pixels and highlights (``cast_estimates``) all
    agree on a light that is not neutral (lower is better; a log-chroma distance: channel
    gains of ±20% move every estimate by ~0.25): the smallest projection of the three
    estimates onto their mean direction, 0 when they do not agree.

    A white-balance error multiplies each channel by one gain over the whole image, which
    shifts every estimate by the same vector; a scene's own colours bias them differently
    (a sunset or a green meadow moves the pixel-based estimates, but the edges between its
    surfaces stay balanced). After Gasparini & Schettini (2004): a cast is a shift of the
    neutral tones.

    Measured (scripts/cast_check.py) it ranks casts above clean images better than the
    earlier reading that also asked 3 × 3 regions to agree and read 0 for one-hue images
    (AUC of level 4-5 casts against clean images 0.73 -> 0.89 on the fit set, 0.70 -> 0.79
    on the held-out realset): that gate also silenced casts on near-neutral photos, where a
    cast shows most. A toned black-and-white photo or a single-hue design reads as a cast:
    its palette and a cast are the same pixels. No threshold separates casts from scene
    colour (``tools/severity.py``), so the reading makes no finding.
    """
    est = np.array(cast_estimates(image))
    mean = est.mean(axis=0)
    n = float(np.hypot(*mean))
    if n < 1e-9:
        return 0.0
    return max(0.0, float((est @ (mean / n)).min()))


def posterization(image: LoadedImage) -> float:
    """Lost gradation (lower is better): log2 of the step from each pixel's 8-bit code to the
    nearest other code present in its channel, averaged over the pixels and the channels.

    A photograph's tones, and a rendered gradient's, fill every code between their darkest
    and brightest (the reading is 0, steps of 1); posterization keeps 2**bits levels per
    channel, so every tone present is 255 / (2**bits - 1) codes from the next one: 3 for 5
    bits, 5.2 for 3 bits, 8 for 1 bit. Smooth gradients become flat bands with steps
    between them (false contours). Flat fills in a graphic do not count as long as some
    tones in between exist (antialiased edges, gradients); a channel holding one code only
    has no gradation to judge. Only a posterized image still as it was quantized is read:
    re-encoding it as JPEG (even at quality 95) or resizing it fills the empty codes and the
    reading falls to 0; false contours in a recompressed image are not measured here.
    """
    codes = np.rint(_sample(image) * np.float32(255.0)).astype(np.intp)
    steps = []
    for c in range(3):
        ch = codes[:, c]
        present = np.flatnonzero(np.bincount(ch, minlength=256))
        if present.size < 2:
            steps.append(0.0)
            continue
        gap = np.diff(present).astype(np.float64)
        nearest = np.full(256, np.inf)
        nearest[present[:-1]] = gap
        nearest[present[1:]] = np.minimum(nearest[present[1:]], gap)
        steps.append(float(np.log2(nearest[ch]).mean()))
    return float(np.mean(steps))


# a colour whose weakest channel is at most this is deep enough that a channel at its top is
# clipped chroma (saturation_clip); paler clipped colours are over-exposure
DEEP_LOW = 0.5


def saturation_clip(image: LoadedImage) -> float:
    """Fraction of vivid pixels whose chroma was clipped with their texture lost (lower is
    better): a channel at 0 or 1 in a strongly coloured pixel *and* in its neighbour on the
    sampling grid, while the other channels still vary between the two. Oversaturation
    pushes textured areas out of gamut, so one channel goes flat where the others keep the
    texture; a flat fill of a pure colour in a graphic has no texture to lose, and noise
    clips isolated pixels only, so neither counts.

    A channel flat at the top counts only in a deep colour, whose weakest channel is at most
    ``DEEP_LOW`` (at least half the scale of chroma at the clip): a chroma boost pulls a
    colour's weakest channel down as it pushes the strongest over the top, while
    over-exposure lifts all three, so its clipped colours go pale on their way to white (a
    blue sky turning cyan): that is a blown highlight, which ``overexposure`` counts, not a
    colour defect. Measured on the fit set (scripts/fit_builtin_cards.py's images; the
    realset held out): brightened photos with a colour finding of moderate or worse 45% ->
    34%, level 4-5 oversaturation found 90% either way, no clean image flagged (0.3-0.4
    flagged a clean yellow flower). A camera's JPEG save clamps the ringing at the edges of
    deep colours, so the same flower saved at q94 reads 0.10 (0.076 as a PNG): the card is
    fitted with the fit set's clean camera JPEGs among its clean images
    (``scripts/fit_builtin_cards.py``'s ``CAMERA_CLEAN``). A channel gain of a colour cast
    clips pale colours the same way, so fewer casts are found through clipped chroma.
    """
    p = _grid(image)
    if p.shape[1] < 2:
        return 0.0
    chans = [np.ascontiguousarray(p[..., c]) for c in range(3)]
    hi = np.maximum(np.maximum(chans[0], chans[1]), chans[2])
    lo = np.minimum(np.minimum(chans[0], chans[1]), chans[2])
    vivid = (hi - lo)[:, 1:] > 0.4
    deep = (lo[:, 1:] <= DEEP_LOW) & (lo[:, :-1] <= DEEP_LOW)
    moves = [np.abs(ch[:, 1:] - ch[:, :-1]) > 1.5 / 255 for ch in chans]
    flats, clipped = [], []
    for ch in chans:
        top, bottom = ch >= 254.5 / 255, ch <= 0.5 / 255
        top2, bottom2 = top[:, 1:] & top[:, :-1], bottom[:, 1:] & bottom[:, :-1]
        flats.append((top2 & deep) | bottom2)
        clipped.append(top2 | bottom2)
    lost = np.zeros_like(vivid)
    for c in range(3):
        lost |= flats[c] & (moves[(c + 1) % 3] | moves[(c + 2) % 3])
    # pushed so far that all three channels clipped: a pure primary or secondary, next to
    # the textured clipping that led there (a graphic's pure fill has no such border)
    pure = clipped[0] & clipped[1] & clipped[2]
    near = dilate(lost, 2)
    return float(((lost | (pure & near)) & vivid).mean())


def dilate(mask: NDArray[np.bool_], iterations: int, square: bool = False) -> NDArray[np.bool_]:
    """``scipy.ndimage.binary_dilation(mask, iterations=n)`` (4-connected cross, zero
    border) in numpy: importing scipy.ndimage costs a one-image `score` ~0.4 s. ``square``:
    by the 3x3 square instead (its structure of ones), so n iterations reach every pixel
    within n px along both axes (chessboard distance)."""
    out = mask.copy()
    for _ in range(iterations):
        grown = out.copy()
        grown[1:] |= out[:-1]
        grown[:-1] |= out[1:]
        if square:  # the columns grow from the rows already grown: the square's corners
            out = grown.copy()
        grown[:, 1:] |= out[:, :-1]
        grown[:, :-1] |= out[:, 1:]
        out = grown
    return out


def _read_once(name: str, fn: Callable[[LoadedImage], float]) -> Callable[[LoadedImage], float]:
    """``fn`` with its reading cached on the image: the camera model reads every signal
    detector again as its input, after the runner or ``detect_all`` has read it."""

    def read(image: LoadedImage) -> float:
        return float(_cached(image, f"read:{name}", lambda: fn(image)))

    return functools.update_wrapper(read, fn)


_SIGNAL_FNS: dict[str, Callable[[LoadedImage], float]] = {
    "sharpness": sharpness,
    "noise": noise,
    "blockiness": blockiness,
    "pixelation": pixelation,
    "underexposure": underexposure,
    "overexposure": overexposure,
    "contrast": contrast,
    "colorfulness": colorfulness,
    "colorcast": colorcast,
    "posterization": posterization,
    "saturation_clip": saturation_clip,
}
SIGNAL_DETECTORS: dict[str, Callable[[LoadedImage], float]] = {
    name: _read_once(name, fn) for name, fn in _SIGNAL_FNS.items()
}


# the hand-built signal detectors: the camera model reads them all
SIGNALS: tuple[str, ...] = tuple(SIGNAL_DETECTORS)
# the camera model's heads (tools/camera_model.py), each a detector of its own
CAMERA_HEADS: tuple[str, ...] = ("blur", "noise", "compression", "under", "over")


# -- resolution loss: the lattice an upscale leaves ---------------------------------------
#
# An image blown up from a smaller one is interpolated between the original samples, so how
# strongly its pixels bend (the second difference along rows or columns, averaged over them)
# repeats with the original grid's period: a sharp peak in that profile's spectrum at the
# interpolation's frequency (Kirchner 2008, "Fast and reliable resampling detection by
# spectral analysis of fixed linear predictor residue"; Popescu & Farid 2005). A camera's
# own pipeline, a defocus, shake, noise and a Lanczos downscale leave none; JPEG's 8x8 grid
# leaves peaks at every eighth of the sample rate, so those frequencies count only where the
# even ones stand above the odd ones (an upscale by 2 or 4 has no odd eighths).
# Measured on the fit set's camera series (log10 of the peak over the profile's median):
# clean photos 0.85-1.32, defocus, shake, JPEG and noise mostly below 1.66; upscales by 1.5,
# 3 and 6 read 1.5-3.6 (51 of 60 at least LATTICE), by 4 0.99-1.83, by 2 (a JPEG harmonic)
# mostly below. Of the fit set's 1,760 images without an upscale (1,140 camera, 620
# lossless), 17 reach 1.8 (a strong Gaussian blur's 8-bit steps can line up) and 2 reach
# LATTICE (lossless brightenings; no camera image); pixelation (a nearest-neighbour
# upscale) does, 79 of 100.
LATTICE = 2.0
# An enlargement resamples both axes, so its lattice stands in the rows' profile and in the
# columns' alike. Content that repeats along one axis does not: a page's glyphs at a regular
# pitch (bench.renders' pages, a monospaced listing), defocused until their strokes are soft,
# read 2.1-2.6 from their rows alone (the columns' profile 0.7 at most at that frequency,
# log10 over its median), and were named "resolution loss". Upscales of the fit photos
# (1.2-6x, bilinear, bicubic and Lanczos) read 1.1 or more in the weaker axis, but one
# (0.8). So a peak off the 8x8 grid counts where it stands LATTICE_AXES above each axis'
# median. ``resampling`` itself (a camera-model input) reads both axes together.
LATTICE_AXES = 1.0
_LATTICE_GRID = np.linspace(0.0, 0.5, 257)
# An enlargement by 4 puts its lattice on the 8x8 grid's second harmonic, where a camera's
# save has a peak of its own. Its phase tells them apart. Most resizers (Pillow, OpenCV,
# browsers) place the original samples at the enlarged image's px 1.5, 5.5, ... (pixel
# centres, the image's origin kept). A linear or cubic interpolation between them bends
# only there, so the second difference is high at px 1, 2, 5 and 6 of each 8 and nearly 0
# at px 3 and 4. A save's block edges bend at px 7 and 0 and leave 3 and 4 alone.
# ``quarter_lattice`` is how far the mean second difference at px 1, 2, 5, 6 stands above
# that at px 3, 4. A heavy save smooths the blocks' middle (px 3, 4) too, so it counts only
# where no coarse save shows (``_coarse_saved``). On the fit set's camera series (clean, 12
# kinds at levels 1-5, 1,859 images without an upscale) nothing reads QUARTER or more
# (defocus at most 0.13); enlargements by 4 do, 59% of the camera series' (area-averaged,
# then bicubic or bilinear) and 75% of the held-out recipe's (nearest-neighbour reduction,
# bilinear) on fit photos. An enlargement cropped off the 4 px grid is not found. A
# drawing's own lines, ticks and hatching can sit on a 4 px grid (74 of the 445 design
# plots and dialogs read QUARTER or more, 67 of them drawings by ``drawn``), so on a
# drawing (DRAWN_ENLARGED) only the spectral lattice counts.
QUARTER = 0.15
DRAWN_ENLARGED = 0.5


Bends = list[tuple[NDArray[np.float64], int, int]]


def _bends(image: LoadedImage) -> Bends:
    """How strongly the pixels bend (the mean absolute second difference) at each position
    along the rows and along the columns of the full-resolution crops, each with the
    position's offset from the image's origin (the first is px 1 of the crop) and its axis
    (0: a profile along the rows, 1: along the columns)."""

    def make() -> Bends:
        out = []
        for g, (y0, x0) in zip(_crops(image), _crop_origins(image), strict=True):
            for axis, (a, origin) in enumerate(((g, x0), (g.T, y0))):
                if a.shape[1] >= 16:
                    d2 = np.abs(a[:, :-2] - 2.0 * a[:, 1:-1] + a[:, 2:])
                    out.append((d2.mean(axis=0, dtype=np.float64), origin, axis))
        return out

    return _cached(image, "det:bends", make)


def _lattice_read(image: LoadedImage) -> tuple[float, bool]:
    return _cached(image, "det:lattice", lambda: _lattice(_bends(image)))


def resampling(image: LoadedImage) -> float:
    """log10 of the strongest interpolation-lattice peak over the median of the spectrum of
    the second-difference profile, rows and columns together, in the full-resolution crops
    (read once per image: the blur head and the resolution detector both ask)."""
    return float(_lattice_read(image)[0])


def lattice_found(image: LoadedImage) -> bool:
    """``resampling`` at least ``LATTICE``, with its peak in both axes' profiles
    (``LATTICE_AXES``)."""
    value, both_axes = _lattice_read(image)
    return value >= LATTICE and both_axes


def quarter_lattice(image: LoadedImage) -> float:
    """How far the full-resolution crops bend more at px 1, 2, 5, 6 of each 8 from the
    image's origin than at px 3, 4 (a ratio less 1; 0 where a coarse save smoothed the
    blocks, and on a drawing): an enlargement by 4 (``QUARTER``)."""

    def make() -> float:
        folded, count = np.zeros(8), np.zeros(8)
        for c, origin, _ in _bends(image):
            at = (np.arange(c.size) + 1 + origin) % 8
            folded += np.bincount(at, weights=c, minlength=8)
            count += np.bincount(at, minlength=8)
        if count.min() == 0 or _coarse_saved(image) or drawn(image) >= DRAWN_ENLARGED:
            return 0.0
        m = folded / count
        return float((m[[1, 2, 5, 6]].mean()) / max(m[[3, 4]].mean(), 1e-12) - 1.0)

    return float(_cached(image, "det:quarter", make))


def enlarged(image: LoadedImage) -> bool:
    """An upscale's lattice is found (``lattice_found``), or an enlargement by 4
    (``quarter_lattice`` at least ``QUARTER``)."""
    return lattice_found(image) or quarter_lattice(image) >= QUARTER


def _lattice(bends: Bends) -> tuple[float, bool]:
    """``resampling``'s reading, and whether its peak, where it lies off the 8x8 grid,
    stands ``LATTICE_AXES`` above each axis' own median too."""
    f = _LATTICE_GRID
    band = f > 0.05
    totals = np.zeros((2, f.size))
    shortest = 1 << 30
    for c, _, axis in bends:
        if c.size >= 62:  # rows of 64 px at least
            shortest = min(shortest, c.size - 16)
            c = (c - np.convolve(c, np.ones(9) / 9, mode="same"))[8:-8]
            spec = np.abs(np.fft.rfft(c * np.hanning(c.size))) ** 2
            totals[axis] += np.interp(f, np.fft.rfftfreq(c.size), spec)
    total = totals.sum(axis=0)
    if not total.any():  # too small to hold a profile
        return 0.0, False
    base = float(np.median(total[band])) + 1e-30

    def near(h: float, tol: float) -> NDArray[np.bool_]:
        return np.abs(f - h) <= tol

    # a peak leaks into neighbouring frequencies by about the profile's resolution: a strong
    # 8-px grid (a block pattern) must not leak into the frequencies read as free
    tol = max(0.006, 3.0 / shortest)
    grid = near(0.125, tol) | near(0.25, tol) | near(0.375, tol) | near(0.5, tol)
    free_at = np.flatnonzero(band & ~grid)
    peak = int(free_at[np.argmax(total[free_at])])
    free = float(total[peak]) / base
    odd = max(float(total[near(h, 0.004)].max()) for h in (0.125, 0.375))
    even = max(float(total[near(h, 0.004)].max()) for h in (0.25, 0.5))
    on_grid = even / (base + odd)
    both_axes = True
    if free > on_grid:
        at = near(float(f[peak]), 0.004)
        for t in totals:
            axis_base = float(np.median(t[band])) + 1e-30
            both_axes &= float(t[at].max()) / axis_base >= 10.0**LATTICE_AXES
    return float(np.log10(max(free, on_grid, 1e-3))), both_axes
