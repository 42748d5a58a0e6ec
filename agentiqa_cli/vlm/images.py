"""Turn an ``ImagePart`` into what a VLM server accepts: a downscaled base64 data URL."""

from __future__ import annotations

import base64
import io
import math
from typing import Literal

import numpy as np
from PIL import Image, ImageOps

from agentiqa_cli.errors import ImageError
from agentiqa_cli.vlm.base import ImagePart

ImageFormat = Literal["PNG", "JPEG"]


def part_to_pil(part: ImagePart) -> Image.Image:
    """The part's pixels (preferred: already decoded once) or, failing that, its file."""
    if part.pixels is not None:
        arr = np.asarray(part.pixels, dtype=np.float32)
        if arr.ndim != 3 or arr.shape[2] != 3:
            raise ImageError(f"{part.path}: expected H×W×3 pixels, got shape {arr.shape}")
        u8 = (np.clip(arr, 0.0, 1.0) * 255.0 + 0.5).astype(np.uint8)
        return Image.fromarray(u8, mode="RGB")
    try:
        with Image.open(part.path) as im:
            return (ImageOps.exif_transpose(im) or im).convert("RGB")
    except OSError as e:
        raise ImageError(f"{part.path}: cannot read image for the VLM: {e}") from None


def fit_pixels(im: Image.Image, max_pixels: int) -> Image.Image:
    """Downscale keeping the aspect ratio so width × height ≤ ``max_pixels``; never upscale.

    The VLM's own processor would resize anyway; sending fewer bytes keeps requests small
    and makes the server's preprocessing cost bounded and predictable.
    """
    w, h = im.size
    if w * h <= max_pixels:
        return im
    scale = math.sqrt(max_pixels / (w * h))
    nw, nh = max(1, math.floor(w * scale)), max(1, math.floor(h * scale))
    return im.resize((nw, nh), Image.Resampling.BICUBIC)


def encode(im: Image.Image, fmt: ImageFormat = "PNG", quality: int = 90) -> bytes:
    buf = io.BytesIO()
    if fmt == "JPEG":
        im.save(buf, format="JPEG", quality=quality)
    else:
        im.save(buf, format="PNG", compress_level=1)  # speed over size: it is base64'd anyway
    return buf.getvalue()


def data_url(part: ImagePart, max_pixels: int, fmt: ImageFormat = "PNG") -> str:
    raw = encode(fit_pixels(part_to_pil(part), max_pixels), fmt)
    mime = "image/png" if fmt == "PNG" else "image/jpeg"
    return f"data:{mime};base64,{base64.b64encode(raw).decode('ascii')}"
