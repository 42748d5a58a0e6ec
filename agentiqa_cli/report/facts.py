"""What the report measures on each image file: one decode, every property, hashes, a thumbnail.

The properties follow CleanVision's image-property checks (brightness percentiles, entropy,
sharpness, aspect ratio, colour) so the dataset-level issues mean what users of that
tool expect; the thresholds that turn them into issues live in ``issues.py``.
"""

from __future__ import annotations

import base64
import hashlib
import io
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

import imagehash
import numpy as np
from PIL import Image, ImageOps, UnidentifiedImageError, features

from agentiqa_cli.errors import ImageError
from agentiqa_cli.imaging.load import (
    DECODE_ERRORS,
    DEFAULT_MAX_PIXELS,
    LoadedImage,
    display_path,
    max_file_bytes,
    open_image,
    open_regular,
)
from agentiqa_cli.tools.detectors import DETAIL_SIDE, sharpness

WORK_SIDE = 512  # brightness, entropy and colour: histograms barely change below this
THUMB_SIDE = 160
ICON_SIDE = 64  # the all-images table's thumbnails: small, so 10,000 rows stay one page
# WebP where Pillow has it: half a JPEG's bytes at this size (no 600-byte JPEG header)
ICON_FORMAT = "WEBP" if features.check("webp") else "JPEG"
GRAY_SIDE = 96  # the near-duplicate check's view: squashed to a square, gray


@dataclass(frozen=True)
class ImageFacts:
    """One image's measurements; ``error`` is set (and nothing else) when it cannot be read."""

    path: Path
    error: str = ""
    sha256: str = ""
    width: int = 0
    height: int = 0
    bright_p5: float = 0.0  # perceived brightness percentiles in [0, 1]
    bright_p99: float = 0.0
    entropy: float = 0.0  # bits over the RGB histogram (PIL's Image.entropy)
    sharpness: float = 0.0  # the built-in sharpness detector (1 - blur effect), in [0, 1]
    grayscale: bool = False
    phash: int = 0  # 64-bit perceptual hash (DCT)
    dhash: int = 0  # 64-bit difference hash
    thumbnail: str = ""  # data: URI of a small JPEG
    icon: str = ""  # data: URI of a smaller one, for the table of every image
    gray: bytes = b""  # GRAY_SIDE² luma bytes, squashed to a square (near-duplicate check)

    @property
    def ok(self) -> bool:
        return not self.error

    @property
    def name(self) -> str:
        return display_path(self.path)


def _hash_int(h: imagehash.ImageHash) -> int:
    return int(str(h), 16)


def perceived_brightness(rgb: np.ndarray) -> np.ndarray:
    """CleanVision's per-pixel brightness: sqrt(.241 R² + .691 G² + .068 B²), in [0, 1]."""
    f = rgb.astype(np.float32) / 255.0
    return np.sqrt(0.241 * f[..., 0] ** 2 + 0.691 * f[..., 1] ** 2 + 0.068 * f[..., 2] ** 2)


def thumbnail_uri(
    im: Image.Image, side: int = THUMB_SIDE, quality: int = 80, fmt: str = "JPEG"
) -> str:
    t = im.copy()
    t.thumbnail((side, side), Image.Resampling.BILINEAR)
    buf = io.BytesIO()
    t.save(buf, format=fmt, quality=quality)
    return f"data:image/{fmt.lower()};base64," + base64.b64encode(buf.getvalue()).decode("ascii")


def measure(path: Path, max_pixels: int = DEFAULT_MAX_PIXELS) -> ImageFacts:
    """Every property of ``path``; an unreadable file gives facts with ``error`` set."""
    shown = display_path(path)
    if not path.exists():
        return ImageFacts(path, error=f"{shown}: file not found")
    try:  # regular files only, bounded by size: a FIFO or /dev/zero never hangs the report
        with open_regular(path, max_file_bytes(max_pixels)) as f:
            # decoded from the file, not from a copy of it in memory: a 700 MB file that
            # is no image costs its header's read, an image its decoded pixels
            facts = _decoded(path, f, max_pixels)
            if isinstance(facts, ImageFacts):
                return facts
            rgb_im, w, h = facts
            f.seek(0)
            digest = hashlib.sha256()
            while chunk := f.read(1 << 20):
                digest.update(chunk)
    except ImageError as e:
        return ImageFacts(path, error=str(e))
    except OSError as e:
        return ImageFacts(path, error=f"{shown}: cannot read: {e.strerror or e}")
    return _facts(path, rgb_im, w, h, digest.hexdigest())


def _decoded(path: Path, f: BinaryIO, max_pixels: int) -> ImageFacts | tuple[Image.Image, int, int]:
    """The upright RGB image and its size as stored upright, or facts saying why not."""
    shown = display_path(path)
    try:
        with open_image(f) as im:
            w, h = im.size
            if w * h > max_pixels:
                return ImageFacts(path, error=f"{shown}: {w}×{h} exceeds the pixel limit")
            im.draft("RGB", (WORK_SIDE * 2, WORK_SIDE * 2))  # JPEG: decode at 1/2..1/8
            im.seek(0)
            im.load()
            upright = ImageOps.exif_transpose(im) or im
            iw, ih = im.size
            if iw != ih and upright.size == (ih, iw):  # EXIF rotated by 90°
                w, h = h, w
            rgb_im = _rgb(upright)
    except (UnidentifiedImageError, Image.DecompressionBombError, Image.DecompressionBombWarning):
        return ImageFacts(path, error=f"{shown}: not a readable image")
    except DECODE_ERRORS as e:
        return ImageFacts(path, error=f"{shown}: corrupt or truncated image ({e})")
    return rgb_im, w, h


def _facts(path: Path, rgb_im: Image.Image, w: int, h: int, sha256: str) -> ImageFacts:
    work = rgb_im.copy()
    work.thumbnail((WORK_SIDE, WORK_SIDE), Image.Resampling.BILINEAR)
    arr = np.asarray(work)
    bright = perceived_brightness(arr)
    p5, p99 = (float(v) for v in np.percentile(bright, [5, 99]))
    spread = arr.max(axis=2).astype(np.int16) - arr.min(axis=2).astype(np.int16)
    return ImageFacts(
        path,
        sha256=sha256,
        width=w,
        height=h,
        bright_p5=p5,
        bright_p99=p99,
        entropy=float(work.entropy()),
        sharpness=_sharpness(path, rgb_im),
        grayscale=bool(np.percentile(spread, 99) <= 2),  # R=G=B up to compression noise
        phash=_hash_int(imagehash.phash(rgb_im)),
        dhash=_hash_int(imagehash.dhash(rgb_im)),
        thumbnail=thumbnail_uri(rgb_im),
        icon=thumbnail_uri(work, ICON_SIDE, quality=60, fmt=ICON_FORMAT),
        gray=work.convert("L").resize((GRAY_SIDE, GRAY_SIDE), Image.Resampling.BOX).tobytes(),
    )


def _sharpness(path: Path, rgb_im: Image.Image) -> float:
    """The sharpness detector that ``score`` runs, on the image at its detail scale.

    CleanVision's edge variance at 64 px cannot see blur that a viewer sees at full size.
    """
    im = rgb_im.copy()
    im.thumbnail((DETAIL_SIDE, DETAIL_SIDE), Image.Resampling.BILINEAR)
    pixels = np.asarray(im, dtype=np.float32) / 255.0
    return float(sharpness(LoadedImage(path=path, pixels=pixels, sha256="")))


def _rgb(im: Image.Image) -> Image.Image:
    if im.mode in ("RGBA", "LA", "PA", "P"):
        rgba = im.convert("RGBA")
        bg = Image.new("RGBA", rgba.size, (255, 255, 255, 255))
        return Image.alpha_composite(bg, rgba).convert("RGB")
    if im.mode in ("I;16", "I;16B", "I;16L", "I", "F"):
        a = np.asarray(im, dtype=np.float64)
        lo, hi = float(a.min()), float(a.max())
        g = (a - lo) / (hi - lo) * 255.0 if hi > lo else np.zeros_like(a)
        return Image.fromarray(g.astype(np.uint8)).convert("RGB")
    return im.convert("RGB")
