"""The fixes' restoration (imaging/restore.py) on numpy, scipy and PyWavelets: what it does on
its own, and that it computes what scikit-image's ``skimage.restoration`` computes (the fixes'
previous implementation), compared when scikit-image is installed (the samples extra)."""

from __future__ import annotations

import numpy as np
import pytest
from PIL import Image
from scipy import ndimage

from agentiqa_cli.imaging.restore import estimate_sigma, nl_means, richardson_lucy
from agentiqa_cli.imperfect.fixes import _psf, deblur, denoise
from tests.conftest import scene


def _clean() -> np.ndarray:
    return np.asarray(scene(4, 192, 160), dtype=np.float32) / 255.0


def _noisy(x: np.ndarray, sigma: float, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return np.clip(x + rng.normal(0.0, sigma, x.shape), 0.0, 1.0).astype(np.float32)


def _rmse(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.sqrt(np.mean((a.astype(np.float64) - b) ** 2)))


def _photo() -> np.ndarray:
    """scikit-image's astronaut at 256 px, RGB float32 in [0, 1]."""
    data = pytest.importorskip("skimage.data")
    small = Image.fromarray(data.astronaut()).resize((256, 256), Image.Resampling.LANCZOS)
    return np.asarray(small, dtype=np.float32) / 255.0


def test_the_noise_estimate_reads_the_added_noise() -> None:
    clean = _clean()
    for sigma in (0.02, 0.05, 0.1):
        noisy = _noisy(clean, sigma)
        read = np.mean([estimate_sigma(noisy[..., c]) for c in range(3)])
        assert read == pytest.approx(sigma, rel=0.15)
    assert estimate_sigma(np.full((32, 32), 0.5, np.float32)) == pytest.approx(0.0, abs=1e-9)


def test_non_local_means_removes_most_of_the_noise() -> None:
    clean = _clean()
    noisy = _noisy(clean, 0.06)
    sigma = float(np.mean([estimate_sigma(noisy[..., c]) for c in range(3)]))
    out = nl_means(noisy, h=0.8 * sigma, sigma=sigma)
    assert out.shape == noisy.shape
    assert _rmse(out, clean) < 0.6 * _rmse(noisy, clean)


def test_the_bands_change_nothing_but_rounding() -> None:
    noisy = _noisy(_clean(), 0.05)
    whole = nl_means(noisy, 0.04, 0.05, band=10_000)
    assert np.abs(nl_means(noisy, 0.04, 0.05, band=17) - whole).max() < 1e-5  # float32 sums


def test_richardson_lucy_undoes_the_blur_of_its_psf() -> None:
    clean = _clean()[..., 1].astype(np.float64)
    blurred = ndimage.convolve(clean, _psf(), mode="reflect")
    sharp = richardson_lucy(blurred, _psf(), 30)
    inner = (slice(16, -16), slice(16, -16))  # away from the borders' ringing
    assert _rmse(sharp[inner], clean[inner]) < 0.8 * _rmse(blurred[inner], clean[inner])


def test_denoise_leaves_an_image_without_detail_as_it_is() -> None:
    flat = np.full((40, 48, 3), 0.25, np.float32)
    assert np.array_equal(denoise(flat), flat)


def test_richardson_lucy_and_the_noise_estimate_are_scikit_images() -> None:
    restoration = pytest.importorskip("skimage.restoration")
    x = _noisy(_photo(), 0.04)
    channel = np.pad(x[..., 0].astype(np.float64), 15, mode="reflect")
    ours = richardson_lucy(channel, _psf(), 30)
    theirs = restoration.richardson_lucy(channel, _psf(), num_iter=30, clip=True)
    assert np.array_equal(ours, theirs)
    for c in range(3):
        assert estimate_sigma(x[..., c]) == restoration.estimate_sigma(x[..., c])


def test_non_local_means_matches_scikit_images_fast_mode() -> None:
    """The same algorithm; scikit-image's weights use an approximate exp: within a code value."""
    restoration = pytest.importorskip("skimage.restoration")
    x = _noisy(_photo(), 0.06)
    sigma = float(np.mean(restoration.estimate_sigma(x, channel_axis=-1)))
    theirs = restoration.denoise_nl_means(
        x, h=0.8 * sigma, sigma=sigma, patch_size=5, patch_distance=6, fast_mode=True,
        channel_axis=-1,
    )  # fmt: skip
    ours = nl_means(x, h=0.8 * sigma, sigma=sigma, patch=5, distance=6)
    diff = np.abs(ours - theirs)
    assert diff.max() < 1 / 255 and diff.mean() < 3e-4
    assert np.abs(denoise(x) - np.clip(theirs, 0, 1)).max() < 1 / 255
    # and both remove the noise: the comparison is not between two unchanged images
    assert np.abs(ours - x).mean() > 0.02


def test_deblur_is_scikit_images_richardson_lucy() -> None:
    restoration = pytest.importorskip("skimage.restoration")
    x = ndimage.gaussian_filter(_photo()[:96, :128], (1.5, 1.5, 0))
    expected = np.empty_like(x)
    for c in range(3):
        ch = np.pad(x[..., c].astype(np.float64), 15, mode="reflect")
        rl = restoration.richardson_lucy(ch, _psf(), num_iter=30, clip=True)
        expected[..., c] = rl[15:-15, 15:-15]
    assert np.array_equal(deblur(x), np.clip(expected, 0.0, 1.0).astype(np.float32))
