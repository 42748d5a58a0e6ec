"""Deterministic synthetic distortions (KADID-10k style kinds, 5 levels), the distortion library.

Each kind is a function ``(rgb, level, rng) -> rgb`` on H×W×3 float32 arrays in [0, 1].
Levels 1..5 go from just visible to very strong on a ~512-pixel photo; the parameters are
in ``LEVELS`` so reports can quote them. Compression kinds go through a real encode/decode
with Pillow. The randomness (noise, motion direction, cast hue) comes from a generator seeded by
(seed, clean file name, kind) (``item_rng``), so one item's bytes do not depend on which other
items are generated or in what order, and the levels of one image share the same draw: they
differ in strength only (the same noise pattern scaled up, the same motion direction).
The benchmark sets built from it are in ``bench/synth.py``.
"""

from __future__ import annotations

import difflib
import io
import math
import zlib
from collections.abc import Callable, Iterable

import numpy as np
from numpy.typing import NDArray
from PIL import Image, features
from scipy import ndimage, signal

from agentiqa_cli.errors import ConfigError

Array = NDArray[np.float32]
Kind = Callable[[Array, int, np.random.Generator], Array]

# Parameters per level 1..5. Pixel sizes assume photos of roughly 400-800 pixels a side.
LEVELS: dict[str, tuple[float, ...]] = {
    "blur": (1.0, 1.8, 2.8, 4.2, 6.0),  # gaussian sigma, px
    "motion_blur": (5, 9, 15, 23, 33),  # line length, px, random direction
    "noise": (0.02, 0.04, 0.07, 0.11, 0.16),  # gaussian sigma on [0, 1]
    "jpeg": (40, 25, 15, 8, 3),  # Pillow JPEG quality
    "jpeg2000": (30, 60, 120, 240, 480),  # compression ratio (4 and 5 merge below ~190 px)
    "brighten": (1.25, 1.5, 1.8, 2.2, 2.7),  # gain, then clipped (V-QPP-Bench A.1: beta > 1)
    "darken": (0.75, 0.58, 0.42, 0.3, 0.2),  # gain (V-QPP-Bench A.1: beta < 1)
    "contrast": (0.7, 0.5, 0.35, 0.22, 0.12),  # spread kept around the mean luma
    "desaturate": (0.6, 0.4, 0.25, 0.12, 0.0),  # chroma kept
    "oversaturate": (1.5, 2.0, 2.6, 3.3, 4.2),  # chroma gain, then clipped
    "pixelate": (2, 3, 4, 6, 9),  # block size, px
    "color_cast": (0.08, 0.15, 0.25, 0.38, 0.55),  # log channel gain, random hue direction
    "posterize": (5, 4, 3, 2, 1),  # bits per channel (32 ... 2 levels, black and white kept)
}

# The eight kinds of the default quality check (scripts/quality_check.py).
CHECK_KINDS: tuple[str, ...] = (
    "blur",
    "motion_blur",
    "noise",
    "jpeg",
    "brighten",
    "darken",
    "contrast",
    "pixelate",
)

_LUMA = np.array([0.299, 0.587, 0.114], dtype=np.float32)


def _param(kind: str, level: int) -> float:
    if not 1 <= level <= 5:
        raise ValueError(f"level must be 1..5, got {level}")
    return LEVELS[kind][level - 1]


def _to_u8(x: Array) -> NDArray[np.uint8]:
    return (np.clip(x, 0.0, 1.0) * 255.0 + 0.5).astype(np.uint8)


def _from_u8(x: NDArray[np.uint8]) -> Array:
    return x.astype(np.float32) / 255.0


def line_aa(r0: int, c0: int, r1: int, c1: int) -> tuple[NDArray[np.intp], NDArray[np.intp], NDArray[np.float64]]:  # fmt: skip
    """The pixels of an anti-aliased line from (r0, c0) to (r1, c1) and their coverage in
    (0, 1]: A. Zingl, "A Rasterizing Algorithm for Drawing Curves" (2012), section 7.1,
    "Anti-aliased line", with the exact distance norm. The same pixels, order and values as
    ``skimage.draw.line_aa`` (tests/test_distort.py compares them when it is installed).
    """
    dc, dr = abs(c1 - c0), abs(r1 - r0)
    step_c, step_r = (1 if c0 < c1 else -1), (1 if r0 < r1 else -1)
    norm = 1.0 if dc + dr == 0 else math.sqrt(dc * dc + dr * dr)
    err = dc - dr  # the error of the next diagonal step
    rows: list[int] = []
    cols: list[int] = []
    far: list[float] = []  # each pixel's distance from the ideal line, in pixel widths
    r, c = r0, c0
    while True:
        rows.append(r)
        cols.append(c)
        far.append(abs(err - dc + dr) / norm)
        e, c_before = err, c
        if 2 * e >= -dc:  # a step along the columns
            if c == c1:
                break
            if e + dr < norm:  # the pixel beside it, across the line
                rows.append(r + step_r)
                cols.append(c)
                far.append(abs(e + dr) / norm)
            err -= dr
            c += step_c
        if 2 * e <= dr:  # a step along the rows
            if r == r1:
                break
            if dc - e < norm:
                rows.append(r)
                cols.append(c_before + step_c)
                far.append(abs(dc - e) / norm)
            err += dc
            r += step_r
    return (np.array(rows, dtype=np.intp), np.array(cols, dtype=np.intp),
            1.0 - np.array(far, dtype=np.float64))  # fmt: skip


def blur(x: Array, level: int, rng: np.random.Generator) -> Array:
    s = _param("blur", level)
    return ndimage.gaussian_filter(x, sigma=(s, s, 0), mode="reflect")


def motion_blur(x: Array, level: int, rng: np.random.Generator) -> Array:
    length = int(_param("motion_blur", level))
    angle = rng.uniform(0.0, np.pi)
    r = length // 2
    k = np.zeros((2 * r + 1, 2 * r + 1), dtype=np.float32)
    dy, dx = r * np.sin(angle), r * np.cos(angle)
    rr, cc, val = line_aa(round(r - dy), round(r - dx), round(r + dy), round(r + dx))
    k[rr, cc] = np.maximum(k[rr, cc], val)
    k /= k.sum()
    pad = ((r, r), (r, r), (0, 0))
    xp = np.pad(x, pad, mode="reflect")
    return signal.fftconvolve(xp, k[..., None], mode="valid", axes=(0, 1)).astype(np.float32)


def noise(x: Array, level: int, rng: np.random.Generator) -> Array:
    s = _param("noise", level)
    return x + rng.normal(0.0, s, size=x.shape).astype(np.float32)


def _codec(x: Array, **save: object) -> Array:
    buf = io.BytesIO()
    Image.fromarray(_to_u8(x)).save(buf, **save)  # type: ignore[arg-type]
    buf.seek(0)
    with Image.open(buf) as im:
        return _from_u8(np.asarray(im.convert("RGB")))


def jpeg(x: Array, level: int, rng: np.random.Generator) -> Array:
    return _codec(x, format="JPEG", quality=int(_param("jpeg", level)))


def jpeg2000(x: Array, level: int, rng: np.random.Generator) -> Array:
    return _codec(
        x,
        format="JPEG2000",
        quality_mode="rates",
        quality_layers=[_param("jpeg2000", level)],
        irreversible=True,
    )


def brighten(x: Array, level: int, rng: np.random.Generator) -> Array:
    return x * _param("brighten", level)


def darken(x: Array, level: int, rng: np.random.Generator) -> Array:
    return x * _param("darken", level)


def contrast(x: Array, level: int, rng: np.random.Generator) -> Array:
    m = float((x @ _LUMA).mean())
    return m + (x - m) * _param("contrast", level)


def _chroma(x: Array, gain: float) -> Array:
    y = (x @ _LUMA)[..., None]
    return (y + (x - y) * gain).astype(np.float32, copy=False)


def desaturate(x: Array, level: int, rng: np.random.Generator) -> Array:
    return _chroma(x, _param("desaturate", level))


def oversaturate(x: Array, level: int, rng: np.random.Generator) -> Array:
    return _chroma(x, _param("oversaturate", level))


def color_cast(x: Array, level: int, rng: np.random.Generator) -> Array:
    s = _param("color_cast", level)
    phi = rng.uniform(0.0, 2.0 * np.pi)
    # a unit direction orthogonal to grey (1, 1, 1): a white-balance error, not a brightness change
    u = np.cos(phi) * np.array([1.0, -0.5, -0.5]) / np.sqrt(1.5) + np.sin(phi) * np.array(
        [0.0, 1.0, -1.0]
    ) / np.sqrt(2.0)
    return x * np.exp(s * u).astype(np.float32)


def posterize(x: Array, level: int, rng: np.random.Generator) -> Array:
    # uniform quantization of each channel to 2**bits levels including 0 and 1, rounded to
    # the nearest level so the mean brightness stays: smooth gradients turn into flat bands
    n = 2 ** int(_param("posterize", level)) - 1
    return (np.round(np.clip(x, 0.0, 1.0) * n) / n).astype(np.float32)


def pixelate(x: Array, level: int, rng: np.random.Generator) -> Array:
    b = int(_param("pixelate", level))
    h, w = x.shape[:2]
    im = Image.fromarray(_to_u8(x))
    small = im.resize((max(1, round(w / b)), max(1, round(h / b))), Image.Resampling.BOX)
    return _from_u8(np.asarray(small.resize((w, h), Image.Resampling.NEAREST)))


KINDS: dict[str, Kind] = {
    "blur": blur,
    "motion_blur": motion_blur,
    "noise": noise,
    "jpeg": jpeg,
    "brighten": brighten,
    "darken": darken,
    "contrast": contrast,
    "desaturate": desaturate,
    "oversaturate": oversaturate,
    "pixelate": pixelate,
    "color_cast": color_cast,
    "posterize": posterize,
}
if features.check("jpg_2000"):  # Pillow built without OpenJPEG cannot encode it
    KINDS["jpeg2000"] = jpeg2000


def distort(x: Array, kind: str, level: int, rng: np.random.Generator) -> Array:
    """One distorted copy, clipped to [0, 1] and quantized to 8 bits as it will be saved."""
    try:
        fn = KINDS[kind]
    except KeyError:
        raise ValueError(f"unknown distortion kind {kind!r}; known: {', '.join(KINDS)}") from None
    return _from_u8(_to_u8(fn(x.astype(np.float32), level, rng)))


def item_rng(seed: int, name: str, kind: str) -> np.random.Generator:
    key = zlib.crc32(f"{name}\0{kind}".encode())
    return np.random.default_rng([seed, key])


def check_kinds(kinds: Iterable[str]) -> list[str]:
    """``kinds`` if each is known, else a ConfigError naming the closest ones (exit 2)."""
    out = list(kinds)
    for k in out:
        if k not in KINDS:
            close = difflib.get_close_matches(k, KINDS, n=2, cutoff=0.5)
            hint = f"; did you mean {' or '.join(close)}?" if close else ""
            raise ConfigError(f"unknown distortion kind {k!r}{hint} (known: {', '.join(KINDS)})")
    return out


def resize_long_side(x: Array, size: int | None) -> Array:
    """``x`` resized (Lanczos, aspect kept) to ``size`` pixels on its long side; None keeps it.
    The distortion parameters are in pixels: this makes them mean the same on any input."""
    if not size:
        return x
    im = Image.fromarray(_to_u8(x))
    w, h = im.size
    s = size / max(w, h)
    im = im.resize((max(16, round(w * s)), max(16, round(h * s))), Image.Resampling.LANCZOS)
    return _from_u8(np.asarray(im))
