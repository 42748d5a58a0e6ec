"""Synthetic benchmark sets (the distortion library of ``imaging/distort.py`` applied to
clean photos, with a manifest) and the bundled clean photos."""

from __future__ import annotations

import csv
import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from numpy.typing import NDArray
from PIL import Image

from agentiqa_cli.errors import ConfigError, MissingExtraError
from agentiqa_cli.imaging.discover import IMAGE_EXTENSIONS
from agentiqa_cli.imaging.distort import (
    KINDS,
    Array,
    _from_u8,
    _to_u8,
    check_kinds,
    distort,
    item_rng,
    resize_long_side,
)
from agentiqa_cli.imaging.load import load_image


@dataclass(frozen=True)
class SynthItem:
    path: Path
    clean: Path
    kind: str  # "clean" for the undistorted image (level 0)
    level: int


def _read_rgb(path: Path) -> Array:
    with Image.open(path) as im:
        return _from_u8(np.asarray(im.convert("RGB")))


def generate(
    clean_paths: Sequence[Path],
    out_dir: Path,
    kinds: Iterable[str] | None = None,
    levels: Iterable[int] = (1, 2, 3, 4, 5),
    seed: int = 0,
) -> list[SynthItem]:
    """Write every (clean image, kind, level) as a PNG in ``out_dir`` plus ``manifest.csv``.

    The manifest has columns ``image, reference, kind, level`` with paths relative to
    ``out_dir`` (so two runs into different folders write identical manifests); it lists the
    clean images too, as kind ``clean``, level 0, with themselves as reference.
    """
    kind_list = list(KINDS) if kinds is None else check_kinds(kinds)
    level_list = sorted(set(levels))
    out_dir.mkdir(parents=True, exist_ok=True)
    items: list[SynthItem] = []
    stems: set[str] = set()
    for i, clean in enumerate(clean_paths):
        clean = Path(clean)
        stem = clean.stem if clean.stem not in stems else f"{clean.stem}_{i}"
        stems.add(stem)
        x = _read_rgb(clean)
        items.append(SynthItem(clean, clean, "clean", 0))
        for kind in kind_list:
            for level in level_list:
                y = distort(x, kind, level, item_rng(seed, stem, kind))
                path = out_dir / f"{stem}__{kind}_{level}.png"
                Image.fromarray(_to_u8(y)).save(path, format="PNG", compress_level=1)
                items.append(SynthItem(path, clean, kind, level))
    write_manifest(items, out_dir / "manifest.csv")
    return items


def write_manifest(items: Sequence[SynthItem], path: Path) -> None:
    base = path.parent.resolve()

    def rel(p: Path) -> str:
        return Path(os.path.relpath(Path(p).resolve(), base)).as_posix()

    with open(path, "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(["image", "reference", "kind", "level"])
        for it in items:
            w.writerow([rel(it.path), rel(it.clean), it.kind, it.level])


def read_manifest(path: Path) -> list[SynthItem]:
    """The items of a manifest written by ``generate``, with paths resolved against its folder."""
    base = path.parent
    with open(path, newline="", encoding="utf-8") as f:
        return [
            SynthItem(base / r["image"], base / r["reference"], r["kind"], int(r["level"]))
            for r in csv.DictReader(f)
        ]


# -- bundled clean photos ------------------------------------------------------------------

# Photographs shipped inside scikit-image (no pooch download needed), which the ``samples``
# extra installs: `make demo`, the benchmarks and the fit scripts start from them. "rocket" is
# a night scene and "coffee" has a shallow depth of field: both are there to catch false alarms.
PHOTOS: tuple[str, ...] = (
    "astronaut",
    "coffee",
    "chelsea",
    "rocket",
    "camera",
    "coins",
    "motorcycle",
    "gravel",
)


def _skimage_photo(name: str) -> NDArray[np.uint8]:
    # an optional extra (samples): the core install has no scikit-image
    try:
        from skimage import data
    except ImportError as e:
        raise MissingExtraError("the sample photos bundled with scikit-image", "samples") from e
    img = data.stereo_motorcycle()[0] if name == "motorcycle" else getattr(data, name)()
    img = np.asarray(img)
    if img.ndim == 2:
        img = np.repeat(img[..., None], 3, axis=2)
    return np.ascontiguousarray(img[..., :3].astype(np.uint8))


def sample_photos(
    out_dir: Path, size: int | tuple[int, int] = 512, names: Sequence[str] = PHOTOS
) -> list[Path]:
    """Write the bundled photos as clean PNGs.

    ``size`` is the long side (aspect kept) or an exact ``(width, height)`` (centre crop to
    that aspect, then resize). Resizing uses Lanczos from larger originals, so the results
    stay sharp.
    """
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = []
    for name in names:
        im = Image.fromarray(_skimage_photo(name))
        w, h = im.size
        if isinstance(size, int):
            s = size / max(w, h)
            target = (max(16, round(w * s)), max(16, round(h * s)))
        else:
            target = (int(size[0]), int(size[1]))
            aspect = target[0] / target[1]
            if w / h > aspect:
                cw = round(h * aspect)
                im = im.crop(((w - cw) // 2, 0, (w - cw) // 2 + cw, h))
            else:
                ch = round(w / aspect)
                im = im.crop((0, (h - ch) // 2, w, (h - ch) // 2 + ch))
        im = im.resize(target, Image.Resampling.LANCZOS)
        path = out_dir / f"{name}.png"
        im.save(path, format="PNG", compress_level=1)
        paths.append(path)
    return paths


def bundled_photos(names: Sequence[str] = PHOTOS) -> list[Array]:
    """The bundled photos at their original sizes, as RGB float32 arrays in [0, 1]."""
    return [_from_u8(_skimage_photo(n)) for n in names]


def write_bundled_photos(out_dir: Path, size: int | tuple[int, int] = 512) -> list[Path]:
    """Alias of ``sample_photos`` for scripts: the bundled photos as clean PNGs."""
    return sample_photos(out_dir, size)


def generate_from_dir(
    clean_dir: Path,
    out_dir: Path,
    kinds: Iterable[str] | None = None,
    levels: int | Iterable[int] = 5,
    size: int | None = 384,
    seed: int = 0,
) -> Path:
    """Distort every image of ``clean_dir`` (not recursive); returns the manifest's path.

    The clean images are first decoded (any mode → RGB) and resized to ``size`` on the long
    side (None keeps them as they are) into ``out_dir/clean``, so the distortion parameters,
    which are in pixels, mean the same whatever the input resolution. ``levels`` is a count
    (1..levels) or an explicit list. Unreadable files raise ``ImageError``.
    """

    sources = sorted(
        p for p in Path(clean_dir).iterdir() if p.is_file() and p.suffix.lower() in IMAGE_EXTENSIONS
    )
    if not sources:
        raise ConfigError(f"no images in {clean_dir}")
    clean_out = Path(out_dir) / "clean"
    clean_out.mkdir(parents=True, exist_ok=True)
    cleaned = []
    used: set[str] = set()
    for p in sources:
        img = load_image(p)
        im = Image.fromarray(_to_u8(resize_long_side(img.pixels, size)))
        stem = p.stem if p.stem not in used else f"{p.stem}_{len(used)}"
        used.add(stem)
        dst = clean_out / f"{stem}.png"
        im.save(dst, format="PNG", compress_level=1)
        cleaned.append(dst)
    level_list = range(1, levels + 1) if isinstance(levels, int) else levels
    generate(cleaned, Path(out_dir), kinds, level_list, seed)
    return Path(out_dir) / "manifest.csv"
