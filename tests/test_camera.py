"""The camera series (bench.camera): damage in linear light, then a camera JPEG save."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from agentiqa_cli.bench.camera import (
    CAMERA_KINDS,
    CAMERA_QUALITY,
    DEFAULT_RECIPE,
    HELD_OUT_RECIPE,
    Recipe,
    _linear,
    camera_damage,
    generate_camera,
    shake_kernel,
    walk_kernel,
)
from agentiqa_cli.bench.synth import read_manifest, sample_photos
from agentiqa_cli.imaging.distort import item_rng


@pytest.fixture(scope="module")
def photo() -> np.ndarray:
    rng = np.random.default_rng(3)
    y, x = np.mgrid[0:96, 0:128] / 128.0
    base = 0.5 + 0.3 * np.sin(12 * x) * np.cos(9 * y)
    img = np.stack([base, base * 0.9, base * 0.7], axis=-1) + rng.normal(0, 0.02, (96, 128, 3))
    return np.clip(img, 0, 1).astype(np.float32)


def _hf(x: np.ndarray) -> float:
    g = x.mean(axis=2)
    return float(np.abs(np.diff(g, axis=1)).mean() + np.abs(np.diff(g, axis=0)).mean())


def test_every_kind_keeps_shape_and_range(photo: np.ndarray) -> None:
    for kind in CAMERA_KINDS:
        y = camera_damage(photo, kind, 3, item_rng(0, "p", kind))
        assert y.shape == photo.shape and y.dtype == np.float32
        assert y.min() >= 0.0 and y.max() <= 1.0, kind


RECIPES = [DEFAULT_RECIPE, HELD_OUT_RECIPE]


@pytest.mark.parametrize("recipe", RECIPES, ids=["default", "held-out"])
def test_levels_order_as_a_photographer_would(photo: np.ndarray, recipe: Recipe) -> None:
    def series(kind: str) -> list[np.ndarray]:
        return [
            camera_damage(photo, kind, lv, item_rng(0, "p", kind), recipe) for lv in range(1, 6)
        ]

    for kind in ("defocus", "shake", "resolution"):
        hf = [_hf(y) for y in series(kind)]
        assert hf == sorted(hf, reverse=True), (kind, hf)
    over = [float(y.mean()) for y in series("overexpose")]
    under = [float(y.mean()) for y in series("underexpose")]
    assert over == sorted(over) and over[0] > photo.mean()
    assert under == sorted(under, reverse=True) and under[0] < photo.mean()
    noisy = [float(np.std(y - photo)) for y in series("sensor_noise")]
    assert noisy == sorted(noisy)


def test_sensor_noise_grows_with_the_signal() -> None:
    flat = np.concatenate(
        [np.full((64, 64, 3), 0.35, np.float32), np.full((64, 64, 3), 0.8, np.float32)], axis=1
    )
    y = _linear(camera_damage(flat, "sensor_noise", 4, item_rng(0, "flat", "sensor_noise")))
    dark, bright = y[:, :64] - _linear(flat[:, :64]), y[:, 64:] - _linear(flat[:, 64:])
    # in linear light the variance grows with the signal (shot noise), about in proportion
    ratio = bright.var() / dark.var()
    lin = _linear(np.array([0.8, 0.35], np.float32))
    assert 0.6 * lin[0] / lin[1] < ratio < 1.4 * lin[0] / lin[1]
    # chroma noise: the channels are drawn apart, not one grey noise
    assert np.corrcoef(bright[..., 0].ravel(), bright[..., 2].ravel())[0, 1] < 0.5


def test_the_held_out_recipe_changes_how_the_damage_is_made_not_how_much(
    photo: np.ndarray,
) -> None:
    for kind in ("defocus", "shake", "sensor_noise", "resolution", "overexpose", "underexpose"):
        a = camera_damage(photo, kind, 3, item_rng(0, "p", kind))
        b = camera_damage(photo, kind, 3, item_rng(0, "p", kind), HELD_OUT_RECIPE)
        assert not np.allclose(a, b), kind
        # the same amount of damage: detail lost, noise or light changed within a factor of 1.6
        if kind == "sensor_noise":
            ratio = float(np.std(b - photo) / np.std(a - photo))
        elif kind.endswith("expose"):
            ratio = float((b - photo).mean() / (a - photo).mean())
        else:
            ratio = (_hf(photo) - _hf(b)) / (_hf(photo) - _hf(a))
        assert 1 / 1.6 < ratio < 1.6, (kind, ratio)
    # flat noise: as strong in the shadows as in the highlights (shot noise grows with signal)
    steps = np.concatenate(
        [np.full((64, 64, 3), 0.2, np.float32), np.full((64, 64, 3), 0.8, np.float32)], axis=1
    )
    for recipe, flat in ((DEFAULT_RECIPE, False), (HELD_OUT_RECIPE, True)):
        y = camera_damage(steps, "sensor_noise", 3, item_rng(0, "s", "n"), recipe) - steps
        spread = float(y[:, 64:].std() / y[:, :64].std())
        assert (0.8 < spread < 1.25) == flat, (recipe, spread)


def test_walk_kernel_spans_its_length_and_wanders() -> None:
    for i in range(6):
        k = walk_kernel(22, np.random.default_rng(i))
        lit = np.argwhere(k > 0)
        assert k.sum() == pytest.approx(1.0, abs=1e-5)
        assert 20 <= float(np.hypot(*np.ptp(lit, axis=0))) <= 24
        assert float(np.abs(k - k[::-1, ::-1]).sum()) > 0.5  # not a straight line


def test_held_out_recipe_saves_q92_without_chroma_subsampling(tmp_path: Path) -> None:
    from PIL import JpegImagePlugin

    (clean,) = sample_photos(tmp_path / "clean", 64, ["coffee"])
    items = generate_camera([clean], tmp_path / "o", ["shake"], [2], recipe=HELD_OUT_RECIPE)
    assert items[0].path.name == "coffee__clean_q92.jpg"
    for it in items:
        with Image.open(it.path) as im:
            assert JpegImagePlugin.get_sampling(im) == 0  # 4:4:4
    (plain,) = generate_camera([clean], tmp_path / "p", ["shake"], [2])[:1]
    with Image.open(plain.path) as im:
        assert JpegImagePlugin.get_sampling(im) == 2  # the codec's 4:2:0


def test_shake_kernel_any_direction_and_curved() -> None:
    kernels = [shake_kernel(20, np.random.default_rng(i)) for i in range(12)]
    for k in kernels:
        assert k.sum() == pytest.approx(1.0, abs=1e-5) and k.min() >= 0
    # the support is a path, not a square: few of its pixels are lit
    assert all((k > 1e-4).mean() < 0.35 for k in kernels)
    # straight kernels are symmetric under a half-turn, curved ones are not
    asym = [float(np.abs(k - k[::-1, ::-1]).sum()) for k in kernels]
    assert min(asym) < 0.05 < max(asym)


def test_generate_camera_writes_jpegs_and_manifest(tmp_path: Path) -> None:
    (clean,) = sample_photos(tmp_path / "clean", 128, ["coffee"])
    items = generate_camera([clean], tmp_path / "cam", ["shake", "noise_jpeg"], [1, 5], seed=0)
    kinds = sorted({it.kind for it in items})
    assert kinds == ["clean", "clean_q75", "noise_jpeg", "shake"]
    for it in items:
        assert it.path.suffix == ".jpg" and it.clean == clean
        with Image.open(it.path) as im:
            assert im.format == "JPEG" and im.size == Image.open(clean).size
    q = int(next(it for it in items if it.kind == "clean").path.stem.rsplit("_q", 1)[1])
    assert CAMERA_QUALITY[0] <= q <= CAMERA_QUALITY[1]
    back = read_manifest(tmp_path / "cam" / "manifest.csv")
    assert [(b.kind, b.level) for b in back] == [(it.kind, it.level) for it in items]
    again = generate_camera([clean], tmp_path / "cam2", ["shake"], [5], seed=0)
    assert again[-1].path.read_bytes() == items[3].path.read_bytes()  # shake 5: deterministic
