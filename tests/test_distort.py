"""The distortion library's own anti-aliased line (motion blur's kernel), against
``skimage.draw.line_aa`` when scikit-image is installed (the samples extra)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from agentiqa_cli.imaging.distort import line_aa, motion_blur


def _endpoints() -> list[tuple[int, ...]]:
    rng = np.random.default_rng(0)
    near = itertools.product(range(-3, 4), repeat=4)  # every direction and the point line
    return [*near, *(tuple(int(v) for v in p) for p in rng.integers(-40, 41, (2000, 4)))]


def test_the_line_is_scikit_images_pixel_for_pixel() -> None:
    draw = pytest.importorskip("skimage.draw")
    for p in _endpoints():
        ours, theirs = line_aa(*p), draw.line_aa(*p)
        for a, b in zip(ours, theirs, strict=True):
            assert a.dtype == b.dtype and np.array_equal(a, b), p


def test_each_pixels_coverage_is_one_minus_its_distance_from_the_line() -> None:
    for r0, c0, r1, c1 in _endpoints():
        rr, cc, val = line_aa(r0, c0, r1, c1)
        assert (rr[0], cc[0], val[0]) == (r0, c0, 1.0) and (r1, c1) in set(zip(rr, cc, strict=True))
        if (r0, c0) == (r1, c1):
            assert len(rr) == 1
            continue
        # perpendicular distance of each pixel centre from the line through the two ends
        far = np.abs((cc - c0) * (r1 - r0) - (rr - r0) * (c1 - c0)) / np.hypot(r1 - r0, c1 - c0)
        assert np.allclose(1.0 - val, far, atol=1e-12)
        assert np.all(far < 1.0)


def test_motion_blur_is_what_scikit_images_line_made() -> None:
    """The distorted images (and so the fitted cards) are unchanged by the port."""
    draw = pytest.importorskip("skimage.draw")
    import agentiqa_cli.imaging.distort as distort_module

    x = np.random.default_rng(1).random((48, 64, 3)).astype(np.float32)
    ours = [motion_blur(x, level, np.random.default_rng(level)) for level in range(1, 6)]
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(distort_module, "line_aa", draw.line_aa)
        theirs = [motion_blur(x, level, np.random.default_rng(level)) for level in range(1, 6)]
    for a, b in zip(ours, theirs, strict=True):
        assert np.array_equal(a, b)
