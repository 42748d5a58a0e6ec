"""How `agentiqa fix` encodes a fixed image: in the input's format and quality class.

A JPEG (or a camera's MPO) in gives a JPEG at quality 95 out, a WebP gives a WebP (lossless
when the input was, else quality 95), anything else (PNG, TIFF, BMP, GIF, ...) a PNG;
``--format`` chooses one for every image. The input's ICC profile and EXIF go along, the
EXIF orientation tag left out: the decoder (``imaging/load.py``) has applied it, so the
pixels are upright and a viewer must not turn them again.
"""

from __future__ import annotations

import io
import struct
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO, Literal, get_args

import numpy as np
from numpy.typing import NDArray
from PIL import Image

from agentiqa_cli.errors import ImageError
from agentiqa_cli.imaging.load import open_regular

ImageFormat = Literal["png", "jpeg", "webp"]
IMAGE_FORMATS: tuple[str, ...] = get_args(ImageFormat)
LOSSY_QUALITY = 95  # JPEG and lossy WebP: visually lossless, a third of a PNG's size
SUFFIXES: dict[str, str] = {"png": ".png", "jpeg": ".jpg", "webp": ".webp"}
_PIL_NAMES: dict[str, str] = {"png": "PNG", "jpeg": "JPEG", "webp": "WEBP"}
_FROM_PIL: dict[str, ImageFormat] = {"JPEG": "jpeg", "MPO": "jpeg", "WEBP": "webp"}
ORIENTATION = 0x0112  # the EXIF tag the decoder applies


@dataclass(frozen=True)
class Encoding:
    """What an output is written as: the format, lossless (PNG, lossless WebP) or not, and
    the metadata carried over from the input."""

    format: ImageFormat = "png"
    lossless: bool = True
    icc_profile: bytes | None = None
    exif: bytes | None = None

    @property
    def suffix(self) -> str:
        return SUFFIXES[self.format]

    @property
    def label(self) -> str:
        """``jpeg q95``, ``png``, ``webp lossless``: for the trace."""
        if self.format == "png":
            return "png"
        return f"{self.format} {'lossless' if self.lossless else f'q{LOSSY_QUALITY}'}"


def _webp_lossless(f: BinaryIO) -> bool:
    """Whether a WebP file's image chunk is VP8L (lossless): the RIFF chunks are walked
    from the start (an extended file's VP8X, ICCP, EXIF chunks come first)."""
    f.seek(12)  # "RIFF" size "WEBP"
    while len(head := f.read(8)) == 8:
        tag, size = head[:4], struct.unpack("<I", head[4:])[0]
        if tag in (b"VP8 ", b"VP8L"):
            return tag == b"VP8L"
        if tag == b"ANMF":  # an animation frame holds its image chunk inside
            f.seek(16, io.SEEK_CUR)
            continue
        f.seek(size + (size & 1), io.SEEK_CUR)
    return False


def encoding_of(path: Path, chosen: ImageFormat | None = None) -> Encoding:
    """How ``path``'s fixed image is written: ``chosen`` (``--format``) or the input's own
    format class, with the input's ICC profile and EXIF (orientation left out). A header
    that cannot be read again gives a plain PNG."""
    try:
        with open_regular(path) as f, Image.open(f) as im:
            own = _FROM_PIL.get(im.format or "", "png")
            lossless = own == "png" or (own == "webp" and _webp_lossless(f))
            icc = im.info.get("icc_profile") or None
            exif = im.getexif()
            exif.pop(ORIENTATION, None)
            exif_bytes = exif.tobytes() if len(exif) else None
    except (ImageError, OSError, ValueError, SyntaxError, EOFError, struct.error):
        # the pixels were decoded already: the format class and metadata are a bonus
        return Encoding(format=chosen or "png", lossless=chosen in (None, "png"))
    fmt = chosen or own
    lossless = fmt == "png" or (fmt == "webp" and own == "webp" and lossless)
    return Encoding(format=fmt, lossless=lossless, icc_profile=icc, exif=exif_bytes)


def encode(u8: NDArray[np.uint8], enc: Encoding) -> bytes:
    """``u8`` (H×W×3) as ``enc`` says; metadata Pillow refuses to write is dropped."""
    options: dict[str, Any] = {}
    if enc.format == "jpeg":
        options = {"quality": LOSSY_QUALITY}
    elif enc.format == "webp":
        options = {"lossless": True} if enc.lossless else {"quality": LOSSY_QUALITY}
    meta = {k: v for k, v in (("icc_profile", enc.icc_profile), ("exif", enc.exif)) if v}
    image = Image.fromarray(np.ascontiguousarray(u8))
    try:
        return _save(image, enc.format, {**options, **meta})
    except (OSError, ValueError, TypeError, struct.error):
        if not meta:
            raise
    return _save(image, enc.format, options)


def _save(image: Image.Image, fmt: ImageFormat, options: dict[str, Any]) -> bytes:
    buf = io.BytesIO()
    image.save(buf, format=_PIL_NAMES[fmt], **options)
    return buf.getvalue()
