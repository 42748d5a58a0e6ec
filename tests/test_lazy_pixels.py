"""An 8-bit image stays 8-bit until a tool needs float pixels; the detectors never do."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from agentiqa_cli.imaging.load import LoadedImage, load_image
from agentiqa_cli.tools import detectors as det
from agentiqa_cli.tools.builtin import detect_all


@pytest.fixture()
def big(tmp_path: Path) -> Path:
    """2100×1500: larger than the detectors' 1024 px planes in both directions."""
    rng = np.random.default_rng(0)
    base = rng.integers(0, 256, (150, 210, 3), dtype=np.uint8)
    im = Image.fromarray(base).resize((2100, 1500), Image.Resampling.BICUBIC)
    p = tmp_path / "big.jpg"
    im.save(p, quality=85)
    return p


def test_pixels_made_on_demand_with_the_same_values(big: Path) -> None:
    img = load_image(big)
    assert img._pixels is None and img._rgb8 is not None
    assert img.size == (2100, 1500) and img.shape == (1500, 2100)
    expected = np.asarray(Image.open(big).convert("RGB"), dtype=np.float32) / 255.0
    np.testing.assert_array_equal(img.rows(10, 20), expected[10:20])
    np.testing.assert_array_equal(img.strided(7), expected[::7, ::7])
    np.testing.assert_array_equal(img.pixels, expected)
    with pytest.raises(ValueError, match="either pixels or rgb8"):
        LoadedImage(Path("x"), sha256="x")


def test_detectors_read_8bit_images_without_float_pixels(big: Path) -> None:
    img = load_image(big)
    readings = detect_all(img)
    assert img._pixels is None  # no full float copy was made
    ref = LoadedImage(Path("f"), pixels=load_image(big).pixels, sha256="f")
    assert detect_all(ref) == pytest.approx(readings, rel=1e-6, abs=1e-7)
    for a, b in zip(det._crops(img), det._crops(ref), strict=True):
        assert np.array_equal(a, b)
