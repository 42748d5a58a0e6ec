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
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

import numpy as np
from PIL import Image
from scipy import ndimage, signal

from agentiqa_cli.bench.synth import SynthItem, _read_rgb, write_manifest
from agentiqa_cli.errors import ConfigError
from agentiqa_cli.imaging.distort import Array, _codec, _from_u8, _to_u8, item_rng

CameraKind = Callable[[Array, int, np.random.Generator], Array]

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


def defocus(x: Array, level: int, rng: np.random.Generator) -> Array:
    r = _param("defocus", level)
    n = int(np.ceil(r)) + 1
    yy, xx = np.mgrid[-n : n + 1, -n : n + 1]
    # a disc with an antialiased rim (the out-of-focus point spread of a round aperture)
    k = np.clip(r + 0.5 - np.hypot(yy, xx), 0.0, 1.0).astype(np.float32)
    return _srgb(_convolve(_linear(x), k / k.sum()))


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


def shake(x: Array, level: int, rng: np.random.Generator) -> Array:
    return _srgb(_convolve(_linear(x), shake_kernel(_param("shake", level), rng)))


def _sensor(lin: Array, a: float, rng: np.random.Generator) -> Array:
    """Poisson-Gaussian sensor noise in linear light: variance a*signal + read noise, each
    channel its own draw (chroma noise), softened by demosaicing (a 0.6 px blur, gain kept)."""
    var = a * np.clip(lin, 0.0, 1.0) + a * 0.01
    z = rng.standard_normal(lin.shape).astype(np.float32)
    z = ndimage.gaussian_filter(z, sigma=(0.6, 0.6, 0))
    z /= max(float(z.std()), 1e-6)
    return lin + np.sqrt(var) * z


def sensor_noise(x: Array, level: int, rng: np.random.Generator) -> Array:
    return _srgb(_sensor(_linear(x), _param("sensor_noise", level), rng))


def overexpose(x: Array, level: int, rng: np.random.Generator) -> Array:
    return _srgb(_linear(x) * _param("overexpose", level))


def underexpose(x: Array, level: int, rng: np.random.Generator) -> Array:
    return _srgb(_linear(x) * _param("underexpose", level))


def low_light(x: Array, level: int, rng: np.random.Generator) -> Array:
    """Too little light: the sensor sees ``light`` of the scene with its shot and read noise
    (at a base ISO's noise), then the camera gains it back part of the way (auto ISO tops out),
    so the photo ends both darker and noisier."""
    light = _param("low_light", level)
    lin = _sensor(_linear(x) * light, 0.00025, rng)
    gain = (1.0 / light) ** 0.7
    return _srgb(lin * gain)


def resolution(x: Array, level: int, rng: np.random.Generator) -> Array:
    """Resolution loss: downscaled (area average) by the level's factor, then upscaled back
    with bicubic or bilinear (drawn), as a small image blown up to full size."""
    f = _param("resolution", level)
    h, w = x.shape[:2]
    im = Image.fromarray(_to_u8(x))
    small = im.resize((max(8, round(w / f)), max(8, round(h / f))), Image.Resampling.BOX)
    up = Image.Resampling.BICUBIC if rng.random() < 0.5 else Image.Resampling.BILINEAR
    return _from_u8(np.asarray(small.resize((w, h), up)))


def low_jpeg(x: Array, level: int, rng: np.random.Generator) -> Array:
    return _codec(x, format="JPEG", quality=int(_param("low_jpeg", level)))


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


def camera_damage(x: Array, kind: str, level: int, rng: np.random.Generator) -> Array:
    """The damage of ``kind`` at ``level`` (before the camera's save), clipped to [0, 1]."""
    if kind in SIMPLE:
        y = SIMPLE[kind](x, level, rng)
    elif kind in COMPOUNDS:
        first, second = COMPOUNDS[kind]
        y = SIMPLE[second](np.clip(SIMPLE[first](x, level, rng), 0.0, 1.0), level, rng)
    else:
        raise ValueError(f"unknown camera kind {kind!r}; known: {', '.join(CAMERA_KINDS)}")
    return np.clip(y, 0.0, 1.0).astype(np.float32)


def camera_quality(rng: np.random.Generator) -> int:
    lo, hi = CAMERA_QUALITY
    return int(rng.integers(lo, hi + 1))


def check_camera_kinds(kinds: Iterable[str]) -> list[str]:
    out = list(kinds)
    unknown = [k for k in out if k not in CAMERA_KINDS]
    if unknown:
        raise ConfigError(f"unknown camera kinds {unknown}; known: {', '.join(CAMERA_KINDS)}")
    return out


def _save_jpeg(x: Array, path: Path, quality: int) -> None:
    Image.fromarray(_to_u8(x)).save(path, format="JPEG", quality=quality)


def generate_camera(
    clean_paths: Sequence[Path],
    out_dir: Path,
    kinds: Iterable[str] | None = None,
    levels: Iterable[int] = (1, 2, 3, 4, 5),
    seed: int = 0,
) -> list[SynthItem]:
    """Write every (clean photo, kind, level) as a camera JPEG in ``out_dir``, the clean photo
    itself as two camera JPEGs (``clean`` at q80-95, level 0; ``clean_q75``, level 0), and
    ``manifest.csv`` (the format of ``synth.generate``'s; the reference is the lossless
    original)."""
    kind_list = list(CAMERA_KINDS) if kinds is None else check_camera_kinds(kinds)
    level_list = sorted(set(levels))
    out_dir.mkdir(parents=True, exist_ok=True)
    items: list[SynthItem] = []
    for clean in clean_paths:
        clean = Path(clean)
        stem = clean.stem
        x = _read_rgb(clean)
        q = camera_quality(item_rng(seed, stem, "clean"))
        path = out_dir / f"{stem}__clean_q{q}.jpg"
        _save_jpeg(x, path, q)
        items.append(SynthItem(path, clean, "clean", 0))
        path = out_dir / f"{stem}__clean_q{CLEAN_Q75}.jpg"
        _save_jpeg(x, path, CLEAN_Q75)
        items.append(SynthItem(path, clean, "clean_q75", 0))
        for kind in kind_list:
            for level in level_list:
                # the levels of one photo share the damage's draw (the same shake path and
                # noise pattern, stronger); the camera's quality is drawn per item
                y = camera_damage(x, kind, level, item_rng(seed, stem, kind))
                path = out_dir / f"{stem}__{kind}_{level}.jpg"
                _save_jpeg(y, path, camera_quality(item_rng(seed, stem, f"{kind}/{level}")))
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
