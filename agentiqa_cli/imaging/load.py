"""Decode any image a user may have into one RGB array, or fail with a clear reason.

Every failure is an ``ImageError`` whose message becomes the ``error`` cell of that
image's row; nothing here ends a batch.
"""

from __future__ import annotations

import hashlib
import io
import os
import stat
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, BinaryIO, cast

import numpy as np
from numpy.typing import NDArray
from PIL import Image, ImageOps, UnidentifiedImageError

from agentiqa_cli import heavy
from agentiqa_cli.errors import ImageError

DEFAULT_MAX_PIXELS = 100_000_000  # 100 MP; larger files are refused as possible decompression bombs
MIN_SIDE = 16
# Pillow's own bomb guard (89 MP) would override --max-pixels; ours checks the header first
Image.MAX_IMAGE_PIXELS = (
    None  # smaller images carry too little signal for any IQA metric (SSIM's window is 11)
)


def display_path(path: Path | str) -> str:
    """A printable, UTF-8-safe form of a path (undecodable bytes become \\xNN)."""
    raw = os.fsencode(path)
    return raw.decode("utf-8", errors="backslashreplace")


F32 = NDArray[np.float32]
U8 = NDArray[np.uint8]


class LoadedImage:
    """One decoded image, shared by all tools that run on it.

    ``pixels`` is H×W×3 RGB float32 in [0, 1]. An 8-bit file is kept as decoded (``rgb8``,
    a quarter of that size) and ``pixels`` is made from it on first use; tools that read
    only part of an image (``rows``, ``strided``: the built-in detectors) never make it, so
    a 16 MP photo costs 48 MiB instead of 192 MiB (and its copies) while they run. The
    values are the same either way: ``rgb8 / 255`` in float32.
    """

    def __init__(
        self,
        path: Path,
        pixels: F32 | None = None,
        sha256: str = "",
        original_mode: str = "",
        *,
        rgb8: U8 | None = None,
    ):
        if (pixels is None) == (rgb8 is None):
            raise ValueError("LoadedImage needs either pixels or rgb8")
        self.path = path
        self.sha256 = sha256
        self.original_mode = original_mode
        self._pixels = pixels
        self._rgb8 = rgb8
        self._tensors: dict[str, Any] = {}  # derived planes and tensors, made once each

    def __repr__(self) -> str:
        w, h = self.size
        return f"LoadedImage(path={self.path!r}, size={w}×{h}, sha256={self.sha256[:12]!r})"

    @property
    def pixels(self) -> F32:
        if self._pixels is None:
            assert self._rgb8 is not None
            self._pixels = _unit_float(self._rgb8)
        return self._pixels

    @property
    def shape(self) -> tuple[int, int]:
        """(height, width)."""
        a = self._pixels if self._pixels is not None else self._rgb8
        assert a is not None
        return int(a.shape[0]), int(a.shape[1])

    @property
    def size(self) -> tuple[int, int]:
        """(width, height)."""
        h, w = self.shape
        return w, h

    def rows(self, start: int, stop: int) -> F32:
        """``pixels[start:stop]`` without making the whole float image."""
        if self._pixels is not None or self._rgb8 is None:
            return self.pixels[start:stop]
        return _unit_float(self._rgb8[start:stop])

    def rows_max(self, start: int, stop: int) -> F32:
        """The brightest channel of ``pixels[start:stop]`` (an H×W plane), taken on the 8-bit
        pixels when they are kept (max commutes with the scaling to [0, 1])."""
        if self._pixels is not None or self._rgb8 is None:
            p = self.pixels[start:stop]
            return np.maximum(np.maximum(p[..., 0], p[..., 1]), p[..., 2])
        # three planes compared pairwise: several times faster than a max over the last axis
        a = self._rgb8[start:stop]
        out = np.maximum(np.maximum(a[..., 0], a[..., 1]), a[..., 2]).astype(np.float32)
        out /= np.float32(255.0)
        return out

    def area_mean(self, f: int, start: int, stop: int, *, brightest: bool = False) -> F32:
        """Rows ``start:stop`` of the RGB pixels (or, ``brightest``, of their brightest
        channel) averaged over f×f blocks, whole blocks only. From 8-bit pixels the block
        sums are exact integers, so no float copy of the rows is made."""
        a: U8 | F32 = self._rgb8 if self._pixels is None and self._rgb8 is not None else self.pixels
        a = a[start:stop]
        if brightest:
            a = np.maximum(np.maximum(a[..., 0], a[..., 1]), a[..., 2])
        return block_mean(a, f)

    def strided(self, step: int) -> F32:
        """``pixels[::step, ::step]`` without making the whole float image."""
        if self._pixels is not None or self._rgb8 is None:
            return self.pixels[::step, ::step]
        return _unit_float(self._rgb8[::step, ::step])

    def tensor(self, device: str = "cpu") -> Any:
        """1×3×H×W float tensor in [0, 1] on ``device``, made once per device."""
        if device not in self._tensors:
            # torch: the [pyiqa] extra's (the signal detectors never need it)
            t = heavy.torch.from_numpy(np.ascontiguousarray(self.pixels.transpose(2, 0, 1)))[None]
            self._tensors[device] = t.to(device)
        return self._tensors[device]

    def gray(self) -> F32:
        """Luma (ITU-R BT.601) in [0, 1]."""
        if "gray" not in self._tensors:
            p = self.pixels
            self._tensors["gray"] = (
                0.299 * p[..., 0] + 0.587 * p[..., 1] + 0.114 * p[..., 2]
            ).astype(np.float32)
        gray: F32 = self._tensors["gray"]
        return gray


def block_mean(a: U8 | F32, f: int) -> F32:
    """Means of ``a``'s f×f blocks over its first two axes (whole blocks only), in [0, 1] for
    8-bit input. Strided sums: several times faster than a mean over a 4-D reshape; 8-bit
    blocks are summed as exact integers (up to f = 16)."""
    h, w = (a.shape[0] // f) * f, (a.shape[1] // f) * f
    exact = a.dtype == np.uint8 and f <= 16
    rows: NDArray[Any] = a[0:h:f, :w].astype(np.uint16 if exact else np.float32)
    for i in range(1, f):
        np.add(rows, a[i:h:f, :w], out=rows)
    sums = rows[:, 0::f].copy()
    for i in range(1, f):
        np.add(sums, rows[:, i::f], out=sums)
    out = sums.astype(np.float32, copy=False)
    out *= np.float32(1.0 / (f * f * (255.0 if a.dtype == np.uint8 else 1.0)))
    return out


def _unit_float(rgb8: U8) -> F32:
    out = rgb8.astype(np.float32)
    out /= np.float32(255.0)  # in place: the same values as rgb8 / 255.0, one array fewer
    return out


# An image within --max-pixels never needs more than 8 bytes a pixel (16-bit RGBA, stored
# uncompressed), plus room for metadata; a larger file is refused before anything is read.
BYTES_PER_PIXEL = 8
METADATA_ALLOWANCE = 64 << 20


def max_file_bytes(max_pixels: int = DEFAULT_MAX_PIXELS) -> int:
    """The largest file read as an image under ``max_pixels``."""
    return max_pixels * BYTES_PER_PIXEL + METADATA_ALLOWANCE


NOT_REGULAR = "not a regular file (FIFO, device or socket)"


def missing(path: Path) -> str:
    """Why ``path``, which is neither a regular file nor a folder, cannot be read: not there,
    a dangling link, not reachable, or there but a FIFO, device or socket."""
    try:
        os.stat(path)
    except FileNotFoundError:
        return "a symbolic link to nothing" if os.path.islink(path) else "no such file or folder"
    except OSError as e:
        return f"cannot read: {e.strerror or e}"
    return NOT_REGULAR


_NONBLOCK = getattr(os, "O_NONBLOCK", 0)  # POSIX; Windows has no FIFOs to wait on


@contextmanager
def open_regular(path: Path, max_bytes: int | None = None) -> Iterator[BinaryIO]:
    """Open ``path`` for reading only if it is a regular file (after symlinks) and, with
    ``max_bytes``, not larger than that. A FIFO, device (``/dev/zero``), socket or folder
    is an ``ImageError`` at once: opened non-blocking, so a FIFO never waits for a writer."""
    shown = display_path(path)
    try:
        fd = os.open(path, os.O_RDONLY | _NONBLOCK | getattr(os, "O_NOCTTY", 0))
    except PermissionError:
        raise ImageError(f"{shown}: permission denied") from None
    except IsADirectoryError:
        raise ImageError(f"{shown}: is a directory") from None
    except OSError as e:
        raise ImageError(f"{shown}: cannot read: {e.strerror or e}") from None
    try:
        st = os.fstat(fd)
        if stat.S_ISDIR(st.st_mode):
            raise ImageError(f"{shown}: is a directory")
        if not stat.S_ISREG(st.st_mode):
            raise ImageError(f"{shown}: {NOT_REGULAR}; skipped")
        if max_bytes is not None and st.st_size > max_bytes:
            raise ImageError(
                f"{shown}: {st.st_size:,} bytes is larger than any image within the pixel "
                f"limit can be ({max_bytes:,} bytes; --max-pixels)"
            )
        if _NONBLOCK:
            os.set_blocking(fd, True)  # a regular file: ordinary reads from here on
        f = os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise
    with f:
        yield f


def _sha256_of(f: BinaryIO) -> str:
    h = hashlib.sha256()
    for chunk in iter(lambda: f.read(1 << 20), b""):
        h.update(chunk)
    return h.hexdigest()


def file_sha256(path: Path, max_bytes: int | None = None) -> str:
    """SHA-256 of a regular file, read in chunks (``ImageError`` for anything else)."""
    with open_regular(path, max_bytes) as f:
        return _sha256_of(f)


def load_image(path: Path, max_pixels: int = DEFAULT_MAX_PIXELS) -> LoadedImage:
    """Decode ``path``: EXIF orientation applied, first frame of animations, any mode → RGB.

    Only regular files no larger than ``max_file_bytes(max_pixels)`` are read; the file is
    hashed in chunks and decoded from the file itself, so a large non-image costs its
    header, not its size, in memory."""
    shown = display_path(path)
    with open_regular(path, max_file_bytes(max_pixels)) as f:
        try:
            digest = _sha256_of(f)
            size = f.tell()
            f.seek(0)
        except OSError as e:
            raise ImageError(f"{shown}: cannot read: {e.strerror or e}") from None
        if size == 0:
            raise ImageError(f"{shown}: empty file (0 bytes)")
        return _decode(f, path, digest, max_pixels)


def decode_bytes(data: bytes, path: Path, max_pixels: int = DEFAULT_MAX_PIXELS) -> LoadedImage:
    """Decode an encoded image held in memory exactly as ``load_image`` decodes a file
    (``fix`` measures the bytes it is about to write as ``score`` will read them)."""
    return _decode(io.BytesIO(data), path, hashlib.sha256(data).hexdigest(), max_pixels)


# what Pillow raises on a file it recognises but cannot decode (a corrupt or truncated image)
DECODE_ERRORS: tuple[type[Exception], ...] = (OSError, SyntaxError, ValueError, EOFError)


@contextmanager
def open_image(f: BinaryIO) -> Iterator[Image.Image]:
    """``Image.open`` with Pillow's decompression-bomb warning raised as an error: an image
    past Pillow's own pixel limit is refused, never decoded."""
    with warnings.catch_warnings():
        warnings.simplefilter("error", Image.DecompressionBombWarning)
        with Image.open(f) as im:
            yield im


def _decode(f: BinaryIO, path: Path, digest: str, max_pixels: int) -> LoadedImage:
    shown = display_path(path)
    try:
        with open_image(f) as im:
            w, h = im.size
            if w * h > max_pixels:
                raise ImageError(
                    f"{shown}: {w}×{h} = {w * h:,} pixels exceeds the limit of "
                    f"{max_pixels:,} (--max-pixels)"
                )
            mode = im.mode
            im.seek(0)  # first frame of an animation
            im.load()
            # in place: a photo that needs no turn is not copied (a 12 MP copy is ~90 ms)
            ImageOps.exif_transpose(im, in_place=True)
            decoded = _to_rgb(im)
    except ImageError:
        raise
    except UnidentifiedImageError:
        raise ImageError(f"{shown}: not a recognised image format") from None
    except (Image.DecompressionBombError, Image.DecompressionBombWarning):
        raise ImageError(f"{shown}: refused as a possible decompression bomb") from None
    except DECODE_ERRORS as e:
        raise ImageError(f"{shown}: corrupt or truncated image ({e})") from None
    hgt, wid = decoded.shape[:2]
    if min(hgt, wid) < MIN_SIDE:
        raise ImageError(f"{shown}: image is {wid}×{hgt}; at least {MIN_SIDE}×{MIN_SIDE} is needed")
    if decoded.dtype == np.uint8:
        return LoadedImage(path=path, rgb8=cast(U8, decoded), sha256=digest, original_mode=mode)
    return LoadedImage(path=path, pixels=cast(F32, decoded), sha256=digest, original_mode=mode)


STRIP_PIXELS = 1 << 20  # pixels converted at a time by ``_to_rgb``: its working copies stay small


def over_white(im: Image.Image) -> Image.Image:
    """``im`` as RGB with its transparent areas composited over white, as a viewer shows it."""
    rgba = im if im.mode == "RGBA" else im.convert("RGBA")
    bg = Image.new("RGBA", rgba.size, (255, 255, 255, 255))
    return Image.alpha_composite(bg, rgba).convert("RGB")


def _strips(height: int, width: int) -> Iterator[tuple[int, int]]:
    step = max(1, STRIP_PIXELS // max(1, width))
    for top in range(0, height, step):
        yield top, min(height, top + step)


def _to_rgb(im: Image.Image) -> NDArray[np.uint8] | NDArray[np.float32]:
    """8-bit RGB for 8-bit images; float32 in [0, 1] for 16-bit and float ones.

    Conversions are made a strip of rows at a time (each pixel's value is computed as on
    the whole image), so a 100 MP 16-bit or transparent image costs its result and a
    strip, not several whole-image float64 or RGBA copies."""
    mode = im.mode
    w, h = im.size
    if mode in ("I;16", "I;16B", "I;16L", "I;16N", "I", "F"):
        a = np.asarray(im)  # the samples as decoded (2 or 4 bytes a pixel)
        out = np.empty((h, w, 3), dtype=np.float32)
        if mode == "F":
            lo, hi = float(np.nanmin(a)), float(np.nanmax(a))
        else:
            lo, hi = 0.0, 65535.0 if mode != "I" or a.max() > 255 else 255.0
        for top, bottom in _strips(h, w):
            f = a[top:bottom].astype(np.float64)
            if mode == "F":
                g = ((f - lo) / (hi - lo) if hi > lo else np.zeros_like(f)).astype(np.float32)
            else:
                g = np.clip(f / hi, 0.0, 1.0).astype(np.float32)
            out[top:bottom] = g[..., None]
        return out
    if mode in ("P", "RGBA", "LA", "PA", "RGBa", "La"):
        # transparent areas are composited over white, as a viewer would show them (a
        # palette image too, whether or not its palette has transparent entries)
        rgb8 = np.empty((h, w, 3), dtype=np.uint8)
        for top, bottom in _strips(h, w):
            rgb8[top:bottom] = np.asarray(over_white(im.crop((0, top, w, bottom))))
        return rgb8
    rgb = im if im.mode == "RGB" else im.convert("RGB")
    return np.ascontiguousarray(np.asarray(rgb, dtype=np.uint8))
