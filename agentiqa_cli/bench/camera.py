"""The camera series: damage as a camera makes it, then the camera's JPEG save.

Users' photos are camera and phone JPEGs whose damage happened before the save. Each kind
here is ``(rgb, level, rng) -> rgb`` on H×W×3 float32 sRGB arrays in [0, 1], like
``bench.synth``'s, but the optics and the sensor act in linear light (shake, defocus,
exposure, sensor noise whose variance grows with the signal, with chroma noise), and every
item is then saved as a JPEG at a quality drawn from 80-95 (``CAMERA_QUALITY``), the file
itself being that JPEG. The clean originals are saved the same way (kind ``clean``) and at
q75 (kind ``clean_q75``, measured apart: a clean photo a careful user would still call clean).

Levels 1..5 are set for photos of about 1024 pixels on the long side and ordered as a
photographer would order them (level 1 visible at 100 %, level 5 a photo nobody keeps);
``CAMERA_LEVELS`` holds the parameters so reports can quote them. The randomness (shake
path, noise pattern, upscaling filter, JPEG quality) comes from ``synth.item_rng``, so one
item's bytes depend on its photo, kind and level only.

A ``Recipe`` says how the damage is made. The series the camera model is trained and
measured on use the default; ``HELD_OUT_RECIPE`` makes the same damage as no training series
makes it (blurs on the sRGB values, a hand's tremor, noise of one spread at every tone, gains
on the sRGB values, nearest-neighbour reductions, q92 4:4:4 saves), so ``make quality`` can
measure how the judgement reads a pipeline it never saw (``--series camera-other``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import numpy as np
from PIL import Image
from scipy import ndimage, signal

from agentiqa_cli.bench.synth import SynthItem, _read_rgb, write_manifest
from agentiqa_cli.errors import ConfigError
from agentiqa_cli.imaging.distort import Array, _codec, _from_u8, _to_u8, item_rng

Resampling = Image.Resampling


@dataclass(frozen=True)
class Recipe:
    """How each damage is made; the default is the camera series' own."""

    # a smooth path (straight or curved, bench.camera.shake_kernel) or a hand's tremor (a
    # random walk that dwells, walk_kernel); both span the level's length
    shake: Literal["path", "walk"] = "path"
    spread_in: Literal["linear", "srgb"] = "linear"  # where a blur spreads the light
    noise: Literal["shot", "flat"] = "shot"  # flat: one spread at every tone, on sRGB values
    exposure: Literal["linear", "srgb"] = "linear"  # srgb: the pixel values times gain^(1/2.2)
    downscale: Resampling = Resampling.BOX  # a resolution loss's reduction
    upscale: tuple[Resampling, ...] = (Resampling.BICUBIC, Resampling.BILINEAR)  # one drawn
    subsampling: int | None = None  # of every JPEG save (0: 4:4:4; None: the codec's 4:2:0)
    quality: tuple[int, int] | None = None  # the camera's save (None: CAMERA_QUALITY)


DEFAULT_RECIPE = Recipe()
# every choice unlike the default's: how the judgement reads a pipeline it was never fitted on
HELD_OUT_RECIPE = Recipe(
    shake="walk",
    spread_in="srgb",
    noise="flat",
    exposure="srgb",
    downscale=Resampling.NEAREST,
    upscale=(Resampling.BILINEAR,),
    subsampling=0,
    quality=(92, 92),
)

CameraKind = Callable[[Array, int, np.random.Generator, Recipe], Array]

CAMERA_QUALITY = (80, 95)  # the camera's own JPEG save, drawn per item
CLEAN_Q75 = 75

CAMERA_LEVELS: dict[str, tuple[float, ...]] = {
    "defocus": (1.2, 2.0, 3.0, 4.5, 6.5),  # disc radius, px (a lens out of focus)
    "shake": (6, 10, 15, 22, 32),  # path length, px, any direction, straight or curved
    "sensor_noise": (0.0006, 0.0016, 0.0035, 0.007, 0.013),  # shot-noise variance per unit signal
    "overexpose": (1.6, 2.2, 3.0, 4.2, 6.0),  # linear gain (+0.7 ... +2.6 stops), clipped
    "underexpose": (0.6, 0.42, 0.28, 0.18, 0.11),  # linear gain (-0.7 ... -3.2 stops)
    "low_light": (0.35, 0.2, 0.11, 0.06, 0.03),  # light reaching the sensor; gained back
    "resolution": (1.5, 2.0, 3.0, 4.0, 6.0),  # downscale factor, then upscaled back
    "low_jpeg": (60, 45, 32, 22, 14),  # an earlier low-quality JPEG save
}

# compound damage: (first part, second part); level L applies both parts at level L
COMPOUNDS: dict[str, tuple[str, str]] = {
    "noise_jpeg": ("sensor_noise", "low_jpeg"),
    "blur_jpeg": ("defocus", "low_jpeg"),
    "lowlight_jpeg": ("low_light", "low_jpeg"),
    "shake_noise": ("shake", "sensor_noise"),
}


def _linear(x: Array) -> Array:
    """sRGB -> linear light (IEC 61966-2-1)."""
    x = np.clip(x, 0.0, 1.0)
    return np.where(x <= 0.04045, x / 12.92, ((x + 0.055) / 1.055) ** 2.4).astype(np.float32)


def _srgb(x: Array) -> Array:
    x = np.clip(x, 0.0, 1.0)
    return np.where(x <= 0.0031308, x * 12.92, 1.055 * x ** (1 / 2.4) - 0.055).astype(np.float32)


def _param(kind: str, level: int) -> float:
    if not 1 <= level <= 5:
        raise ValueError(f"level must be 1..5, got {level}")
    return CAMERA_LEVELS[kind][level - 1]


def _convolve(lin: Array, k: Array) -> Array:
    r0, r1 = k.shape[0] // 2, k.shape[1] // 2
    xp = np.pad(lin, ((r0, r0), (r1, r1), (0, 0)), mode="reflect")
    out = signal.fftconvolve(xp, k[..., None], mode="valid", axes=(0, 1))
    return out.astype(np.float32)


def disc_kernel(radius: float) -> Array:
    """A disc of ``radius`` px with an antialiased rim, summing to 1: the out-of-focus point
    spread of a round aperture."""
    n = int(np.ceil(radius)) + 1
    yy, xx = np.mgrid[-n : n + 1, -n : n + 1]
    k = np.clip(radius + 0.5 - np.hypot(yy, xx), 0.0, 1.0).astype(np.float32)
    return k / k.sum()


def defocus(x: Array, level: int, rng: np.random.Generator, recipe: Recipe) -> Array:
    return _spread(x, disc_kernel(_param("defocus", level)), recipe)


def _spread(x: Array, k: Array, recipe: Recipe) -> Array:
    """A blur by the point spread ``k``, in linear light (as a lens spreads it) or, as simple
    editors blur, on the sRGB values."""
    if recipe.spread_in == "srgb":
        return _convolve(x, k)
    return _srgb(_convolve(_linear(x), k))


def shake_kernel(length: float, rng: np.random.Generator) -> Array:
    """A camera-shake point spread: a straight line in any direction, or (every other draw) a
    short curved path whose heading turns smoothly, sampled densely and drawn antialiased."""
    angle = rng.uniform(0.0, 2 * np.pi)
    curved = rng.random() < 0.5
    turn = rng.normal(0.0, 1.6) if curved else 0.0  # total turn over the path, radians
    t = np.linspace(0.0, 1.0, max(8, int(length * 4)))
    heading = angle + turn * t + (rng.normal(0.0, 0.5) * np.sin(np.pi * t) if curved else 0.0)
    step = length / (len(t) - 1)
    px = np.concatenate([[0.0], np.cumsum(np.cos(heading[1:]) * step)])
    py = np.concatenate([[0.0], np.cumsum(np.sin(heading[1:]) * step)])
    px -= (px.max() + px.min()) / 2
    py -= (py.max() + py.min()) / 2
    n = int(np.ceil(max(np.abs(px).max(), np.abs(py).max()))) + 2
    k = np.zeros((2 * n + 1, 2 * n + 1), dtype=np.float32)
    for cx, cy in zip(px + n, py + n, strict=True):  # bilinear splat of each path sample
        x0, y0 = int(np.floor(cx)), int(np.floor(cy))
        fx, fy = cx - x0, cy - y0
        k[y0, x0] += (1 - fx) * (1 - fy)
        k[y0, x0 + 1] += fx * (1 - fy)
        k[y0 + 1, x0] += (1 - fx) * fy
        k[y0 + 1, x0 + 1] += fx * fy
    return k / k.sum()


def walk_kernel(length: float, rng: np.random.Generator) -> Array:
    """A hand's tremor: a random walk whose heading wanders and whose speed changes (the
    light piles up where the hand slows), scaled so its ends span ``length`` px; each sample
    lands on its nearest pixel."""
    m = max(16, int(length * 4))
    heading = rng.uniform(0.0, 2 * np.pi) + np.cumsum(rng.normal(0.0, 0.12, m))
    slow = np.convolve(rng.normal(0.0, 1.0, m), np.ones(m // 8) / np.sqrt(m // 8), "same")
    speed = np.exp(0.6 * slow)  # varies slowly along the walk
    px, py = np.cumsum(np.cos(heading) * speed), np.cumsum(np.sin(heading) * speed)
    scale = length / max(float(np.hypot(np.ptp(px), np.ptp(py))), 1e-6)
    px = (px - (px.max() + px.min()) / 2) * scale
    py = (py - (py.max() + py.min()) / 2) * scale
    n = int(np.ceil(max(np.abs(px).max(), np.abs(py).max()))) + 1
    k = np.zeros((2 * n + 1, 2 * n + 1), dtype=np.float32)
    np.add.at(k, (np.round(py).astype(int) + n, np.round(px).astype(int) + n), 1.0)
    return k / k.sum()


def shake(x: Array, level: int, rng: np.random.Generator, recipe: Recipe) -> Array:
    length = _param("shake", level)
    if recipe.shake == "walk":
        return _spread(x, walk_kernel(length, rng), recipe)
    return _spread(x, shake_kernel(length, rng), recipe)


def _sensor(lin: Array, a: float, rng: np.random.Generator) -> Array:
    """Poisson-Gaussian sensor noise in linear light: variance a*signal + read noise, each
    channel its own draw (chroma noise), softened by demosaicing (a 0.6 px blur, gain kept)."""
    var = a * np.clip(lin, 0.0, 1.0) + a * 0.01
    z = rng.standard_normal(lin.shape).astype(np.float32)
    z = ndimage.gaussian_filter(z, sigma=(0.6, 0.6, 0))
    z /= max(float(z.std()), 1e-6)
    return lin + np.sqrt(var) * z


def _flat_noise(x: Array, a: float, rng: np.random.Generator) -> Array:
    """Noise of one spread at every tone, on the sRGB values: a grey grain and a blotchy
    (1 px) chroma noise, as large as shot noise of strength ``a`` at a mid-grey."""
    grey = rng.standard_normal(x.shape[:2]).astype(np.float32)[..., None]
    chroma = ndimage.gaussian_filter(rng.standard_normal(x.shape).astype(np.float32), (1, 1, 0))
    chroma /= max(float(chroma.std()), 1e-6)
    return x + 1.1 * np.sqrt(0.2 * a) * (0.8 * grey + 0.6 * chroma)


def sensor_noise(x: Array, level: int, rng: np.random.Generator, recipe: Recipe) -> Array:
    a = _param("sensor_noise", level)
    if recipe.noise == "flat":
        return _flat_noise(x, a, rng)
    return _srgb(_sensor(_linear(x), a, rng))


def _expose(x: Array, gain: float, recipe: Recipe) -> Array:
    if recipe.exposure == "srgb":
        return x * gain ** (1 / 2.2)
    return _srgb(_linear(x) * gain)


def overexpose(x: Array, level: int, rng: np.random.Generator, recipe: Recipe) -> Array:
    return _expose(x, _param("overexpose", level), recipe)


def underexpose(x: Array, level: int, rng: np.random.Generator, recipe: Recipe) -> Array:
    return _expose(x, _param("underexpose", level), recipe)


def low_light(x: Array, level: int, rng: np.random.Generator, recipe: Recipe) -> Array:
    """Too little light: the sensor sees ``light`` of the scene with its shot and read noise
    (at a base ISO's noise), then the camera gains it back part of the way (auto ISO tops out),
    so the photo ends both darker and noisier."""
    light = _param("low_light", level)
    gain = (1.0 / light) ** 0.7
    if recipe.noise == "flat":
        dark = _flat_noise(_expose(x, light, recipe), 0.00025, rng)
        return _expose(dark, gain, recipe)
    lin = _sensor(_linear(x) * light, 0.00025, rng)
    return _srgb(lin * gain)


def resolution(x: Array, level: int, rng: np.random.Generator, recipe: Recipe) -> Array:
    """Resolution loss: downscaled (area average by default) by the level's factor, then
    upscaled back with one of the recipe's filters (drawn: bicubic or bilinear by default), as
    a small image blown up to full size."""
    f = _param("resolution", level)
    h, w = x.shape[:2]
    im = Image.fromarray(_to_u8(x))
    small = im.resize((max(8, round(w / f)), max(8, round(h / f))), recipe.downscale)
    up = recipe.upscale[int(rng.random() * len(recipe.upscale))]
    return _from_u8(np.asarray(small.resize((w, h), up)))


def _chroma(recipe: Recipe) -> dict[str, int]:
    return {} if recipe.subsampling is None else {"subsampling": recipe.subsampling}


def low_jpeg(x: Array, level: int, rng: np.random.Generator, recipe: Recipe) -> Array:
    return _codec(x, format="JPEG", quality=int(_param("low_jpeg", level)), **_chroma(recipe))


SIMPLE: dict[str, CameraKind] = {
    "defocus": defocus,
    "shake": shake,
    "sensor_noise": sensor_noise,
    "overexpose": overexpose,
    "underexpose": underexpose,
    "low_light": low_light,
    "resolution": resolution,
    "low_jpeg": low_jpeg,
}
CAMERA_KINDS: tuple[str, ...] = (*SIMPLE, *COMPOUNDS)


def camera_damage(
    x: Array, kind: str, level: int, rng: np.random.Generator, recipe: Recipe = DEFAULT_RECIPE
) -> Array:
    """The damage of ``kind`` at ``level`` (before the camera's save), clipped to [0, 1]."""
    if kind in SIMPLE:
        y = SIMPLE[kind](x, level, rng, recipe)
    elif kind in COMPOUNDS:
        first, second = COMPOUNDS[kind]
        part = np.clip(SIMPLE[first](x, level, rng, recipe), 0.0, 1.0)
        y = SIMPLE[second](part, level, rng, recipe)
    else:
        raise ValueError(f"unknown camera kind {kind!r}; known: {', '.join(CAMERA_KINDS)}")
    return np.clip(y, 0.0, 1.0).astype(np.float32)


def camera_quality(rng: np.random.Generator, recipe: Recipe = DEFAULT_RECIPE) -> int:
    lo, hi = recipe.quality or CAMERA_QUALITY
    return int(rng.integers(lo, hi + 1))


def check_camera_kinds(kinds: Iterable[str]) -> list[str]:
    out = list(kinds)
    unknown = [k for k in out if k not in CAMERA_KINDS]
    if unknown:
        raise ConfigError(f"unknown camera kinds {unknown}; known: {', '.join(CAMERA_KINDS)}")
    return out


def _save_jpeg(x: Array, path: Path, quality: int, recipe: Recipe) -> None:
    Image.fromarray(_to_u8(x)).save(path, format="JPEG", quality=quality, **_chroma(recipe))


def generate_camera(
    clean_paths: Sequence[Path],
    out_dir: Path,
    kinds: Iterable[str] | None = None,
    levels: Iterable[int] = (1, 2, 3, 4, 5),
    seed: int = 0,
    recipe: Recipe = DEFAULT_RECIPE,
) -> list[SynthItem]:
    """Write every (clean photo, kind, level) as a camera JPEG in ``out_dir``, the clean photo
    itself as two camera JPEGs (``clean`` at q80-95, level 0; ``clean_q75``, level 0), and
    ``manifest.csv`` (the format of ``synth.generate``'s; the reference is the lossless
    original). Every damage and save is made by ``recipe``."""
    kind_list = list(CAMERA_KINDS) if kinds is None else check_camera_kinds(kinds)
    level_list = sorted(set(levels))
    out_dir.mkdir(parents=True, exist_ok=True)
    items: list[SynthItem] = []
    for clean in clean_paths:
        clean = Path(clean)
        stem = clean.stem
        x = _read_rgb(clean)
        q = camera_quality(item_rng(seed, stem, "clean"), recipe)
        path = out_dir / f"{stem}__clean_q{q}.jpg"
        _save_jpeg(x, path, q, recipe)
        items.append(SynthItem(path, clean, "clean", 0))
        path = out_dir / f"{stem}__clean_q{CLEAN_Q75}.jpg"
        _save_jpeg(x, path, CLEAN_Q75, recipe)
        items.append(SynthItem(path, clean, "clean_q75", 0))
        for kind in kind_list:
            for level in level_list:
                # the levels of one photo share the damage's draw (the same shake path and
                # noise pattern, stronger); the camera's quality is drawn per item
                y = camera_damage(x, kind, level, item_rng(seed, stem, kind), recipe)
                path = out_dir / f"{stem}__{kind}_{level}.jpg"
                q = camera_quality(item_rng(seed, stem, f"{kind}/{level}"), recipe)
                _save_jpeg(y, path, q, recipe)
                items.append(SynthItem(path, clean, kind, level))
    write_manifest(items, out_dir / "manifest.csv")
    return items


SIZE_FACTORS = (0.5, 2.0)
SIZE_QUALITY = 90


def size_series(items: Sequence[SynthItem], out_dir: Path) -> list[tuple[SynthItem, float, Path]]:
    """Each item also at ½× (Lanczos) and 2× (bicubic), re-saved as JPEG q90, as a user who
    resized a photo would have it: (item, factor, path) per copy, written once into
    ``out_dir``. The judgement should not depend on which of them it is given."""
    out_dir.mkdir(parents=True, exist_ok=True)
    out = []
    for it in items:
        for f in SIZE_FACTORS:
            path = out_dir / f"{it.path.stem}@{f:g}x.jpg"
            if not path.exists():
                with Image.open(it.path) as im:
                    rgb = im.convert("RGB")
                w, h = rgb.size
                how = Image.Resampling.LANCZOS if f < 1 else Image.Resampling.BICUBIC
                rgb = rgb.resize((max(16, round(w * f)), max(16, round(h * f))), how)
                rgb.save(path, format="JPEG", quality=SIZE_QUALITY)
            out.append((it, f, path))
    return out
