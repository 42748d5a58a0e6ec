"""The ten V-QPP corruptions of V-QPP-Bench (Table 1, App. A.1) with the paper's levels, and
the oracle operations that undo each one.

``corrupt(kind, clean, others, rng)`` returns the imperfect image, the oracle operations
and the drawn parameters. ``others`` are unrelated clean images (expand's three mosaic
tiles, overlay's distractor, recapture's room). Recapture stands in for the paper's
"RealWorld" screen templates: the image on a screen with a dark bezel, pixel-grid moiré
and a slight keystone, inside a blurred, dimmed room photo. "borders" is ours, not the
paper's: letterbox or pillarbox bands of 5-15% a side, black or white.

Two generators: ``paper`` draws the paper's levels (overlays at 15 anchor boxes);
``random`` draws what a check must not key on anywhere in between: an overlay of any
size (10-50% of each side, any aspect) at any position, pasted or blended (opacity
0.6-0.9), and a brightness gain anywhere in [0.25, 0.5] or [1.5, 1.75]. The benchmark's
``random`` build also re-saves every image (originals included) as JPEG at a drawn quality
(``jpeg_quality``), which removes the 8-bit traces a gain leaves.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray
from PIL import Image, ImageDraw, ImageFont
from scipy import ndimage

from agentiqa_cli.imperfect.fixes import flip, rotate
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
from agentiqa_cli.records import Box

Array = NDArray[np.float32]

ANCHORS = ("TL", "TR", "BL", "BR", "C")
OVERLAY_SCALES = (0.125, 0.25, 0.5)
KINDS: tuple[str, ...] = (
    "rotation",
    "flip",
    "brightness",
    "blur",
    "noise",
    "crop",
    "expand",
    "overlay",
    "watermark",
    "recapture",
    "borders",  # ours, not V-QPP-Bench's: letterbox / pillarbox bands
)
LEVELS: dict[str, tuple[Any, ...]] = {
    "rotation": (90, 180, 270),
    "flip": ("horizontal", "vertical", "both"),
    "brightness": (0.25, 0.5, 1.5, 1.75),
    "blur": (9, 15, 21, 27),
    "noise": (0.05, 0.1, 0.15, 0.2),
    "crop": (0.4, 0.5, 0.6, 0.7),
    "expand": ("TL", "TR", "BL", "BR"),
    "overlay": tuple((loc, f) for loc in ANCHORS for f in OVERLAY_SCALES),
    "watermark": (1, 2, 3),
    "recapture": (1, 2, 3, 4),
    "borders": tuple(
        (side, f, colour)
        for side in ("letterbox", "pillarbox")
        for f in (0.05, 0.1, 0.15)
        for colour in ("black", "white")
    ),
}
WATERMARK_TEXT = "Sanfrancisco, California"
OTHERS_NEEDED = {"expand": 3, "overlay": 1, "recapture": 1}
GENERATORS = ("paper", "random")
RESAVE_SHARE, RESAVE_QUALITY = 0.75, (60, 95)  # random: this share re-saved at q in range
# where the screen sits in each recapture template (V-QPP-Bench App. A.1 reformulates the
# query with it: "According to the image on [location], ...")
SCREEN_PLACES = ("the top-left screen", "the top-right screen", "the central screen",
                 "the bottom-left screen")  # fmt: skip
QUADRANT_WORDS = {"TL": "top-left", "TR": "top-right", "BL": "bottom-left", "BR": "bottom-right"}


def jpeg_quality(rng: np.random.Generator) -> int | None:
    """The random generator's re-save: a JPEG quality, or None (kept lossless)."""
    if rng.random() >= RESAVE_SHARE:
        return None
    return int(rng.integers(RESAVE_QUALITY[0], RESAVE_QUALITY[1] + 1))


def located_query(kind: str, param: str, query: str) -> str:
    """V-QPP-Bench App. A.1's reformulation: expand and recapture name where the target is."""
    q = query[:1].lower() + query[1:]
    if kind == "expand":
        return f"According to the {QUADRANT_WORDS[param]} part of the image, {q}"
    if kind == "recapture":
        return f"According to the image on {SCREEN_PLACES[int(param) - 1]}, {q}"
    return query


def random_box(w: int, h: int, rng: np.random.Generator) -> tuple[int, int, int, int]:
    """An overlay's box for the random generator: 10-50% of the width, an aspect within
    0.6-1.6 (the height also within 10-50%), anywhere inside the image."""
    fw = rng.uniform(0.1, 0.5)
    fh = float(np.clip(fw * np.exp(rng.uniform(-0.5, 0.5)), 0.1, 0.5))
    bw, bh = max(8, round(fw * w)), max(8, round(fh * h))
    left, top = int(rng.integers(0, w - bw + 1)), int(rng.integers(0, h - bh + 1))
    return left, top, left + bw, top + bh


def anchor_box(loc: str, f: float, w: int, h: int) -> tuple[int, int, int, int]:
    """The pixel box (left, top, right, bottom) of an f·W × f·H rectangle at a corner or
    the centre: where V-QPP-Bench pastes overlays, and where the overlay check looks."""
    bw, bh = round(f * w), round(f * h)
    left = {"TL": 0, "BL": 0, "TR": w - bw, "BR": w - bw}.get(loc, (w - bw) // 2)
    top = {"TL": 0, "TR": 0, "BL": h - bh, "BR": h - bh}.get(loc, (h - bh) // 2)
    return left, top, left + bw, top + bh


def gaussian_sigma(k: int) -> float:
    """OpenCV's sigma for a k-tap Gaussian kernel (``cv2.GaussianBlur`` with sigma 0)."""
    return 0.3 * ((k - 1) * 0.5 - 1) + 0.8


def _resize(x: Array, w: int, h: int) -> Array:
    im = Image.fromarray((np.clip(x, 0, 1) * 255 + 0.5).astype(np.uint8))
    return np.asarray(im.resize((w, h), Image.Resampling.LANCZOS), dtype=np.float32) / 255.0


def _watermark(x: Array, scale: int) -> tuple[Array, tuple[int, int, int, int]]:
    h, w = x.shape[:2]
    size = max(8, round(scale * min(w, h) / 28))
    font = ImageFont.load_default(size=size)
    probe = ImageDraw.Draw(Image.new("L", (1, 1)))
    left, top, right, bottom = probe.textbbox((0, 0), WATERMARK_TEXT, font=font)
    tw, th = right - left, bottom - top
    if tw > w - 8:  # the largest size on a small image: shrink to fit
        font = ImageFont.load_default(size=max(8, int(size * (w - 8) / tw)))
        left, top, right, bottom = probe.textbbox((0, 0), WATERMARK_TEXT, font=font)
        tw, th = right - left, bottom - top
    margin = max(4, w // 50)
    x0, y0 = w - tw - margin, h - th - margin
    mask = Image.new("L", (w, h), 0)
    ImageDraw.Draw(mask).text((x0 - left, y0 - top), WATERMARK_TEXT, font=font, fill=255)
    a = np.asarray(mask, dtype=np.float32)[..., None] / 255.0 * 0.5  # semi-transparent white
    return x * (1 - a) + a, (x0, y0, x0 + tw, y0 + th)


def _recapture(
    x: Array, room: Array, template: int, rng: np.random.Generator
) -> tuple[Array, tuple[int, int, int, int]]:
    h, w = x.shape[:2]
    canvas = ndimage.gaussian_filter(_resize(room, w, h), sigma=(3, 3, 0)) * 0.55
    s = (0.62, 0.55, 0.7, 0.5)[template - 1]
    sw, sh = round(s * w), round(s * h)
    left = (round(0.08 * w), w - sw - round(0.08 * w), (w - sw) // 2, round(0.12 * w))[template - 1]
    top = (round(0.1 * h), round(0.12 * h), (h - sh) // 2, h - sh - round(0.1 * h))[template - 1]
    screen = _resize(x, sw, sh)
    yy, xx = np.mgrid[0:sh, 0:sw].astype(np.float32)
    # moiré: the camera's sampling beats with the screen's pixel grid (period near 2 px)
    period, angle = rng.uniform(2.2, 3.2), rng.uniform(0.15, 0.5)
    phase = 2 * np.pi * (xx * np.cos(angle) + yy * np.sin(angle)) / period
    screen = screen * (0.82 + 0.18 * np.cos(phase))[..., None]
    # keystone: rows shrink towards the top by up to 4% (an off-axis camera)
    shrink = 0.04 * (1 - yy[:, :1] / max(1, sh - 1))
    cols = (xx - sw / 2) / (1 - shrink) + sw / 2
    screen = np.stack(
        [ndimage.map_coordinates(screen[..., c], [yy, cols], order=1, cval=0.03) for c in range(3)],
        axis=-1,
    )
    bezel = max(3, round(0.025 * w))
    canvas[top - bezel : top + sh + bezel, left - bezel : left + sw + bezel] = 0.03
    canvas[top : top + sh, left : left + sw] = screen
    return np.clip(canvas, 0, 1).astype(np.float32), (left, top, left + sw, top + sh)


def corrupt(
    kind: str,
    clean: Array,
    others: Sequence[Array],
    rng: np.random.Generator,
    generator: str = "paper",
) -> tuple[Array, list[Operation], str]:
    """(imperfect image, oracle operations, parameter) for one clean image."""
    h, w = clean.shape[:2]
    levels = LEVELS[kind]
    param = levels[int(rng.integers(len(levels)))]
    x = clean
    if generator == "random" and kind == "brightness":
        beta = float(rng.uniform(0.25, 0.5) if rng.random() < 0.5 else rng.uniform(1.5, 1.75))
        out = np.clip(x * beta, 0, 1).astype(np.float32)
        return out, [Lum(factor=1 / beta)], f"{beta:.3f}"
    if generator == "random" and kind == "overlay":
        left, top, right, bottom = random_box(w, h, rng)
        alpha = 1.0 if rng.random() < 0.5 else float(rng.uniform(0.6, 0.9))
        out = x.copy()
        patch = _resize(others[0], right - left, bottom - top)
        out[top:bottom, left:right] = alpha * patch + (1 - alpha) * x[top:bottom, left:right]
        box = Box.of_pixels(left, top, right, bottom, w, h)
        return out, [Fill(bbox=box)], f"{left},{top},{right},{bottom}:{alpha:.2f}"
    if kind == "rotation":
        return rotate(x, param), [Rotate(degrees=360 - param)], str(param)
    if kind == "flip":
        return flip(x, param), [Flip(direction=param)], param
    if kind == "brightness":
        return np.clip(x * param, 0, 1).astype(np.float32), [Lum(factor=1 / param)], str(param)
    if kind == "blur":
        sigma = gaussian_sigma(param)
        out = ndimage.gaussian_filter(x, (sigma, sigma, 0), truncate=((param - 1) / 2) / sigma)
        return out.astype(np.float32), [Deblur()], str(param)
    if kind == "noise":
        out = x + rng.normal(0.0, param, x.shape).astype(np.float32)
        return np.clip(out, 0, 1).astype(np.float32), [Denoise()], str(param)
    if kind == "crop":
        cw, ch = round(param * w), round(param * h)
        left, top = int(rng.integers(0, w - cw + 1)), int(rng.integers(0, h - ch + 1))
        return np.ascontiguousarray(x[top : top + ch, left : left + cw]), [], str(param)
    if kind == "expand":
        tiles = [_resize(o, w, h) for o in others[:3]]
        at = ("TL", "TR", "BL", "BR").index(param)
        tiles.insert(at, x)
        out = np.concatenate(
            [np.concatenate(tiles[:2], axis=1), np.concatenate(tiles[2:], axis=1)], axis=0
        )
        col, row = at % 2, at // 2
        box = Box(x1=col / 2, y1=row / 2, x2=(col + 1) / 2, y2=(row + 1) / 2)
        return out, [Crop(bbox=box)], param
    if kind == "overlay":
        loc, f = param
        left, top, right, bottom = anchor_box(loc, f, w, h)
        out = x.copy()
        out[top:bottom, left:right] = _resize(others[0], right - left, bottom - top)
        box = Box.of_pixels(left, top, right, bottom, w, h)
        return out, [Fill(bbox=box)], f"{loc}:{f}"
    if kind == "watermark":
        out, (l0, t0, r0, b0) = _watermark(x, param)
        return out.astype(np.float32), [Fill(bbox=Box.of_pixels(l0, t0, r0, b0, w, h))], str(param)
    if kind == "recapture":
        out, (l0, t0, r0, b0) = _recapture(x, others[0], param, rng)
        return out, [Crop(bbox=Box.of_pixels(l0, t0, r0, b0, w, h))], str(param)
    if kind == "borders":
        side, f, colour = param
        value = 0.0 if colour == "black" else 1.0
        if side == "letterbox":
            band = max(2, round(f * h))
            out = np.full((h + 2 * band, w, 3), value, np.float32)
            out[band : band + h] = x
            box = Box.of_pixels(0, band, w, band + h, w, h + 2 * band)
        else:
            band = max(2, round(f * w))
            out = np.full((h, w + 2 * band, 3), value, np.float32)
            out[:, band : band + w] = x
            box = Box.of_pixels(band, 0, band + w, h, w + 2 * band, h)
        return out, [Crop(bbox=box)], f"{side}:{f}:{colour}"
    raise ValueError(f"unknown corruption {kind!r}")
