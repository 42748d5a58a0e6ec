"""Built-in no-reference signal detectors: fast, weight-free readings of single distortions.

Each detector is ``(LoadedImage) -> float`` (its raw reading); ``DETECTORS`` maps the tool
cards' ``metric`` names to them. ``findings`` (from ``tools/severity.py``) turns readings
into distortion findings for the rules backend.

Working planes, computed once per image and cached on it:
- ``_detail``: luma at most 1024 px on the long side (area-averaged by an integer factor)
  for sharpness; at that scale pixel-level softness of large camera files does not count
  as blur, which matches how the image is viewed.
- ``_full``: full-resolution luma, centre crop of at most 1024×1024 whose offset is a
  multiple of 8 (so JPEG's block grid stays aligned), for noise, blockiness and
  pixelation, which downscaling would erase.
- ``_grid`` / ``_sample``: RGB strided to at most ~64k pixels (2-D / flattened) for
  histogram statistics (exposure, contrast, colour); percentiles do not need every pixel.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
from numpy.typing import NDArray

from agentiqa_cli.imaging.load import LoadedImage
from agentiqa_cli.records import Finding
from agentiqa_cli.tools.severity import findings

__all__ = ["DETECTORS", "detect", "detect_all", "findings"]

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


def _detail(image: LoadedImage) -> F32:
    def make() -> F32:
        h, w = image.shape
        f = int(np.ceil(max(h, w) / DETAIL_SIDE))
        if f <= 1:
            return _gray(image)
        h, w = (h // f) * f, (w // f) * f
        # block means of luma, a band of whole blocks at a time: full-size luma of a large
        # photo is never held (sharpness is the only detector that reads all of it)
        band = max(1, ROW_CHUNK // f) * f
        out = np.empty((h // f, w // f), dtype=np.float32)
        for y in range(0, h, band):
            g = image.rows(y, min(y + band, h))[:, :w] @ _BT601
            n = g.shape[0] // f
            out[y // f : y // f + n] = g.reshape(n, f, w // f, f).mean(
                axis=(1, 3), dtype=np.float32
            )
        return out

    return _cached(image, "det:detail", make)


def _full(image: LoadedImage) -> F32:
    def make() -> F32:
        h, w = image.shape
        y0 = max(0, (h - FULL_SIDE) // 2) // 8 * 8
        x0 = max(0, (w - FULL_SIDE) // 2) // 8 * 8
        crop = image.rows(y0, y0 + FULL_SIDE)[:, x0 : x0 + FULL_SIDE]
        return np.ascontiguousarray(crop) @ _BT601

    return _cached(image, "det:full", make)


def _grid(image: LoadedImage) -> F32:
    """RGB strided to at most ~SAMPLE_PIXELS pixels, kept 2-D (h × w × 3)."""

    def make() -> F32:
        h, w = image.shape
        step = max(1, int(np.ceil(np.sqrt(h * w / SAMPLE_PIXELS))))
        return image.strided(step)

    return _cached(image, "det:grid", make)


def _sample(image: LoadedImage) -> F32:
    return _cached(image, "det:sample", lambda: _grid(image).reshape(-1, 3))


def _luma(rgb: F32) -> F32:
    return rgb @ _BT601


# -- blur / sharpness ----------------------------------------------------------------------


def _tile_sums(a: F32, t: int) -> F32:
    h, w = (a.shape[0] // t) * t, (a.shape[1] // t) * t
    return a[:h, :w].reshape(h // t, t, w // t, t).sum(axis=(1, 3), dtype=np.float32)


def _box(b: F32, h: int, axis: int) -> F32:
    """Mean over ``h`` samples along ``axis``; valid part only."""
    c = np.cumsum(b, axis=axis, dtype=np.float32)
    lead = [slice(None)] * b.ndim
    lead[axis] = slice(h - 1, None)
    tail = [slice(None)] * b.ndim
    tail[axis] = slice(0, -h)
    out = c[tuple(lead)].copy()
    lead[axis] = slice(1, None)
    out[tuple(lead)] -= c[tuple(tail)]
    return (out / np.float32(h)).astype(np.float32, copy=False)


def _diag_box(b: F32, h: int, anti: bool) -> F32:
    """Mean over ``h`` samples along a diagonal of the last two axes; valid part only."""
    n0, n1 = b.shape[-2] - h + 1, b.shape[-1] - h + 1
    acc = np.zeros((*b.shape[:-2], n0, n1), dtype=np.float32)
    for k in range(h):
        j = h - 1 - k if anti else k
        acc += b[..., k : k + n0, j : j + n1]
    acc /= np.float32(h)
    return acc


def _shift_diff(a: F32, d: int) -> F32:
    """|difference of neighbours| along direction d: rows, columns, diagonal, anti-diagonal."""
    if d == 0:
        return np.abs(a[..., 1:, :] - a[..., :-1, :])
    if d == 1:
        return np.abs(a[..., :, 1:] - a[..., :, :-1])
    if d == 2:
        return np.abs(a[..., 1:, 1:] - a[..., :-1, :-1])
    return np.abs(a[..., 1:, :-1] - a[..., :-1, 1:])


def blur_effect_tiles(tiles: F32, h_size: int = 11) -> tuple[F32, F32]:
    """Crété-Roffet blur effect on a batch of tiles (n × S × S), in four directions.

    The measure of ``skimage.measure.blur_effect`` (with neighbour differences as in the
    paper, and the two diagonals besides the two axes so that motion blur shows in any
    direction): compare the gradients with those of a copy blurred again along the same
    direction. A sharp tile loses much when re-blurred, a blurred one little. Returns
    (gradient energy, energy lost), each 4 × n; blur = 1 - lost / energy. The outer
    ``h_size // 2`` pixels of each tile are context for the filters only.
    """
    r = h_size // 2
    core = tiles[:, r:-r, r:-r]
    soft = (
        _box(tiles, h_size, 1)[:, :, r:-r],
        _box(tiles, h_size, 2)[:, r:-r, :],
        _diag_box(tiles, h_size, anti=False),
        _diag_box(tiles, h_size, anti=True),
    )
    energy = np.empty((4, tiles.shape[0]), dtype=np.float32)
    lost = np.empty_like(energy)
    for d, b in enumerate(soft):
        ds = _shift_diff(core, d)
        energy[d] = ds.sum(axis=(1, 2))
        lost[d] = np.maximum(ds - _shift_diff(b, d), 0.0).sum(axis=(1, 2))
    return energy, lost


def sharpness(image: LoadedImage) -> float:
    """1 - Crété-Roffet blur effect of the most structured quarter of the image (higher is
    sharper; about 0.6-0.8 for sharp photos, below 0.3 for heavy blur).

    Only the 32×32 tiles with the most gradient energy are measured: an in-focus subject
    carries the image's strongest edges, so a sharp subject in front of a soft (bokeh)
    background reads as sharp, and flat tiles (sky, walls) say nothing about focus anyway.
    The blur is the worst of four directions, which catches motion blur along any of them.
    Measuring only those tiles also keeps it fast.
    """
    g = _detail(image)
    m, t = 6, TILE  # m: context around a tile for the 11-sample re-blur
    ny, nx = (g.shape[0] - 2 * m) // t, (g.shape[1] - 2 * m) // t
    if ny < 1 or nx < 1:
        from skimage.measure import blur_effect

        return float(1.0 - blur_effect(g))
    inner = g[m : m + ny * t, m : m + nx * t]
    act = np.abs(np.diff(inner, axis=0))[:, :-1] + np.abs(np.diff(inner, axis=1))[:-1, :]
    proxy = _tile_sums(np.pad(act, ((0, 1), (0, 1))), t).ravel()
    n = max(4, int(np.ceil(proxy.size / 4)))
    pick = np.argsort(proxy)[::-1][:n]
    windows = np.lib.stride_tricks.sliding_window_view(g, (t + 2 * m, t + 2 * m))[::t, ::t]
    tiles = windows[pick // nx, pick % nx]
    energy, lost = blur_effect_tiles(np.ascontiguousarray(tiles, dtype=np.float32))
    e = energy.sum(axis=1)
    if float(e.min()) <= 1e-6:
        return 0.0
    return float(np.min(lost.sum(axis=1) / e))


# -- noise ---------------------------------------------------------------------------------


def noise(image: LoadedImage) -> float:
    """Noise sigma on the [0, 1] scale (lower is better).

    Immerkær's (1996) operator, the separable [1 -2 1] ⊗ [1 -2 1] mask, cancels smooth
    image structure up to second order and leaves mostly noise; its mean absolute response
    (times sqrt(pi/2) / 6 for Gaussian noise) per 16×16 tile, in the quieter tiles (20th
    percentile), estimates the noise where texture does not mask it. Tiles clipped to black
    or white are skipped since clipping removes the noise there. (``skimage.restoration.
    estimate_sigma`` needs PyWavelets, which is not a dependency, and is much slower.)
    """
    g = _full(image)
    v = g[:-2] - 2.0 * g[1:-1] + g[2:]
    r = np.abs(v[:, :-2] - 2.0 * v[:, 1:-1] + v[:, 2:])
    t = NOISE_TILE
    if min(r.shape) < t:
        return float(np.sqrt(np.pi / 2) * r.mean() / 6.0)
    sig = _tile_sums(r, t) * np.float32(np.sqrt(np.pi / 2) / (6.0 * t * t))
    src = g[1 : 1 + r.shape[0], 1 : 1 + r.shape[1]]
    clipped = _tile_sums(((src <= 1.5 / 255) | (src >= 253.5 / 255)).astype(np.float32), t)
    ok = clipped.ravel() <= 0.2 * t * t
    s = sig.ravel()
    keep = s[ok] if ok.sum() >= 4 else s
    return float(np.percentile(keep, 20))


# -- compression: JPEG blockiness and pixelation -------------------------------------------


def _column_energy(image: LoadedImage, axis: int) -> F32:
    """Mean |step| between neighbouring columns (axis 1) or rows (axis 0), full resolution."""

    def make() -> F32:
        d = np.abs(np.diff(_full(image), axis=axis))
        return d.mean(axis=1 - axis, dtype=np.float32)

    return _cached(image, f"det:steps{axis}", make)


def _grid_ratio(c: F32, period: int = 8) -> float:
    """How far the strongest phase of the grid stands out above the runner-up, relative to
    the median phase. Only one phase in eight carries JPEG block edges; pixelation with
    blocks of 2, 3, 4, 6 or 9 pixels puts its edges on several phases equally, and natural
    content on all of them."""
    n = (c.size // period) * period
    if n < 4 * period:
        return 0.0
    phases = np.sort(c[:n].reshape(-1, period).mean(axis=0))
    med = float(np.median(phases))
    return float((phases[-1] - phases[-2]) / med) if med > 1e-6 else 0.0


def blockiness(image: LoadedImage) -> float:
    """How much stronger luma steps are on one phase of an 8-pixel grid than on any other
    (lower is better). JPEG codes 8×8 blocks independently, so heavy compression leaves
    steps at every 8th row and column; natural content has no preferred phase (about 0)."""
    return 0.5 * (_grid_ratio(_column_energy(image, 1)) + _grid_ratio(_column_energy(image, 0)))


def _dead_fraction(c: F32) -> float:
    if c.size < 8:
        return 0.0
    # a column is "dead" when it barely changes while its neighbourhood does: pixelation
    # repeats each column b times, so (b - 1)/b of them are dead; flat areas are not counted
    # the maximum over 17 neighbours (edges repeated); numpy, so the default tools need no scipy
    local = np.lib.stride_tricks.sliding_window_view(np.pad(c, 8, mode="edge"), 17).max(axis=1)
    live = local > 2e-3
    if live.sum() < 8:
        return 0.0
    dead = (c < 0.15 * local) & live
    return float(dead.sum() / live.sum())


def pixelation(image: LoadedImage) -> float:
    """Fraction of rows/columns that repeat their neighbour (lower is better): 0 for
    natural images, (b - 1)/b for blocks of b pixels."""
    return 0.5 * (
        _dead_fraction(_column_energy(image, 1)) + _dead_fraction(_column_energy(image, 0))
    )


# -- exposure and contrast -----------------------------------------------------------------


def underexposure(image: LoadedImage) -> float:
    """Highlight level: the 99.5th percentile of luma (higher is better).

    Darkening scales it down. A well-exposed photo has some bright content, even a night
    scene (its lights) or a dim interior; so high a percentile varies much less between
    contents than the mean or the median does.
    """
    return float(np.percentile(_luma(_sample(image)), 99.5))


def overexposure(image: LoadedImage) -> float:
    """Highlight mass: mean of clip((luma - 0.7) / 0.3, 0, 1) (lower is better).

    Counts blown-out pixels fully and near-white ones in part, so it grows smoothly as an
    image is brightened, before large areas clip. Ordinary photos read below 0.12; a white
    background (product shots, snow) reads high too: that is a limit of a no-reference
    reading, not a bug.
    """
    lum = _luma(_sample(image))
    return float(np.clip((lum - 0.7) / 0.3, 0.0, 1.0).mean())


def contrast(image: LoadedImage) -> float:
    """Luma spread between the 0.5th and 99.5th percentiles (higher is better)."""
    lo, hi = np.percentile(_luma(_sample(image)), [0.5, 99.5])
    return float(hi - lo)


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


def colorcast(image: LoadedImage) -> float:
    """Colour cast: CIELAB chroma of the weighted mean of near-neutral, bright pixels
    (lower is better).

    Grey-world on the tones that should be grey, after Gasparini & Schettini (2004): each
    pixel weighs exp(-(chroma / 20)²) · (L / 100)², so strongly coloured objects (an orange
    cat, a red car) hardly count while whites and light greys, the tones a white-balance
    error shows on most, count most. Neutral photos read 0-15; a visible white-balance
    error 12-30.
    """
    from skimage.color import rgb2lab

    # a quarter of the sample is plenty for a mean, and CIELAB conversion is the slow part
    lab = rgb2lab(_sample(image)[::4][None])[0]
    ab = lab[:, 1:]
    w = np.exp(-np.sum(ab * ab, axis=1) / 400.0) * (lab[:, 0] / 100.0) ** 2
    if float(w.sum()) < 1e-6 * w.size:
        return float(np.hypot(*ab.mean(axis=0)))  # nothing light and near neutral: all pixels
    mean = (ab * w[:, None]).sum(axis=0) / w.sum()
    return float(np.hypot(mean[0], mean[1]))


def saturation_clip(image: LoadedImage) -> float:
    """Fraction of vivid pixels flattened against the gamut (lower is better): a channel
    clipped at 0 or 1 in a strongly coloured pixel *and* in its neighbour on the sampling
    grid. Oversaturation pushes whole areas out of gamut; noise clips isolated pixels,
    which the neighbour condition leaves out."""
    p = _grid(image)
    if p.shape[1] < 2:
        return 0.0
    chans = [np.ascontiguousarray(p[..., c]) for c in range(3)]
    hi = np.maximum(np.maximum(chans[0], chans[1]), chans[2])
    lo = np.minimum(np.minimum(chans[0], chans[1]), chans[2])
    vivid = (hi - lo)[:, 1:] > 0.4
    flat = np.zeros_like(vivid)
    for ch in chans:
        top, bottom = ch >= 254.5 / 255, ch <= 0.5 / 255
        flat |= (top[:, 1:] & top[:, :-1]) | (bottom[:, 1:] & bottom[:, :-1])
    return float((flat & vivid).mean())


DETECTORS: dict[str, Callable[[LoadedImage], float]] = {
    "sharpness": sharpness,
    "noise": noise,
    "blockiness": blockiness,
    "pixelation": pixelation,
    "underexposure": underexposure,
    "overexposure": overexposure,
    "contrast": contrast,
    "colorfulness": colorfulness,
    "colorcast": colorcast,
    "saturation_clip": saturation_clip,
}


def detect_all(image: LoadedImage) -> dict[str, float]:
    """Every detector's raw reading for one image."""
    return {name: fn(image) for name, fn in DETECTORS.items()}


def detect(image: LoadedImage) -> list[Finding]:
    """Findings of all detectors on one image (shipped cards for severities)."""
    return findings(detect_all(image))
