"""Built-in signal detectors: direction, bokeh robustness, findings, cards."""

from __future__ import annotations

import itertools
import math
from pathlib import Path

import numpy as np
import pytest
from PIL import Image
from scipy import ndimage

from agentiqa_cli.bench.synth import bundled_photos, distort
from agentiqa_cli.imaging.load import LoadedImage
from agentiqa_cli.records import SEVERITIES
from agentiqa_cli.resources import default_cards_dir
from agentiqa_cli.tools.cards import load_cards
from agentiqa_cli.tools.detectors import DETECTORS, detect_all, findings
from agentiqa_cli.tools.logistic import logistic5


def _photo(name: str = "astronaut", side: int = 320) -> np.ndarray:
    (px,) = bundled_photos([name])
    im = Image.fromarray((px * 255 + 0.5).astype(np.uint8))
    s = side / max(im.size)
    im = im.resize((round(im.width * s), round(im.height * s)), Image.Resampling.LANCZOS)
    return np.asarray(im, dtype=np.float32) / 255.0


def _img(px: np.ndarray) -> LoadedImage:
    return LoadedImage(path=Path("x.png"), pixels=np.ascontiguousarray(px, np.float32), sha256="x")


@pytest.fixture(scope="module")
def photo() -> np.ndarray:
    return _photo()


@pytest.fixture(scope="module")
def cards():
    return load_cards(default_cards_dir())


# detector, distortion kind, +1 if the reading rises with quality, -1 if it falls
DIRECTIONS = [
    ("sharpness", "blur", 1),
    ("sharpness", "motion_blur", 1),
    ("noise", "noise", -1),
    ("blockiness", "jpeg", -1),
    ("pixelation", "pixelate", -1),
    ("underexposure", "darken", 1),
    ("overexposure", "brighten", -1),
    ("contrast", "contrast", 1),
    ("colorfulness", "desaturate", 1),
    ("saturation_clip", "oversaturate", -1),
]


@pytest.mark.parametrize(("name", "kind", "sign"), DIRECTIONS)
def test_detector_reading_worsens_with_level(photo, name, kind, sign):
    values = [DETECTORS[name](_img(photo))]
    for level in range(1, 6):
        # one draw for all levels (as generate does): same motion direction, same noise
        rng = np.random.default_rng(0)
        values.append(DETECTORS[name](_img(distort(photo, kind, level, rng))))
    quality = [sign * v for v in values]
    assert all(a > b for a, b in itertools.pairwise(quality)), (name, kind, values)


def test_colour_cast_reads_higher_than_clean(photo):
    clean = DETECTORS["colorcast"](_img(photo))
    cast = DETECTORS["colorcast"](_img(distort(photo, "color_cast", 5, np.random.default_rng(0))))
    assert cast > clean + 5


def test_sharp_subject_on_soft_background_is_not_blurry(photo, cards):
    h, w = photo.shape[:2]
    soft = ndimage.gaussian_filter(photo, sigma=(5, 5, 0))
    bokeh = soft.copy()
    # a sharp subject over a third of the frame, the rest out of focus
    y0, y1, x0, x1 = h // 5, h // 5 + h // 2, w // 4, w // 4 + int(w * 0.6)
    bokeh[y0:y1, x0:x1] = photo[y0:y1, x0:x1]
    sharp, blurred, mixed = (DETECTORS["sharpness"](_img(p)) for p in (photo, soft, bokeh))
    assert mixed > 0.9 * sharp
    assert mixed > blurred + 0.3
    sev = {f.category: f.severity for f in findings({"sharpness": mixed}, cards)}
    assert sev["Blurs"] == "none"
    sev_blurred = {f.category: f.severity for f in findings({"sharpness": blurred}, cards)}
    assert SEVERITIES.index(sev_blurred["Blurs"]) >= SEVERITIES.index("severe")


@pytest.mark.parametrize(
    ("name", "kind"), [("noise", "noise"), ("sharpness", "blur"), ("blockiness", "jpeg")]
)
def test_finding_severity_rises_with_level(photo, cards, name, kind):
    sevs = []
    for level in range(0, 6):
        px = photo if level == 0 else distort(photo, kind, level, np.random.default_rng(1))
        (f,) = [f for f in findings({name: DETECTORS[name](_img(px))}, cards)]
        sevs.append(SEVERITIES.index(f.severity))
        assert f"{DETECTORS[name](_img(px)):.2f}"[:3] in f.reason  # the reason cites the value
    assert sevs[0] == 0
    assert sevs == sorted(sevs)
    assert sevs[-1] >= SEVERITIES.index("severe")


@pytest.mark.parametrize("name", ["astronaut", "coffee", "motorcycle"])
def test_clean_photos_have_no_moderate_findings(cards, name):
    found = findings(detect_all(_img(_photo(name))), cards)
    assert not [f for f in found if SEVERITIES.index(f.severity) >= SEVERITIES.index("moderate")]


def test_findings_keep_one_per_category_worst_first(cards):
    found = findings({"underexposure": 0.1, "overexposure": 0.0, "noise": 0.2, "psnr": 30.0}, cards)
    cats = [f.category for f in found]
    assert len(cats) == len(set(cats))
    bright = next(f for f in found if f.category == "Brightness change")
    assert bright.severity == "extreme" and "0.10" in bright.reason
    assert SEVERITIES.index(found[0].severity) >= SEVERITIES.index(found[-1].severity)


def test_black_and_white_photo_is_not_a_colour_distortion(cards):
    grey = _photo("camera")
    found = findings(detect_all(_img(grey)), cards)
    assert all(f.severity == "none" for f in found if f.category == "Color distortions")


@pytest.mark.parametrize(
    "px",
    [
        np.full((16, 16, 3), 0.5, np.float32),
        np.zeros((40, 300, 3), np.float32),
        np.ones((64, 64, 3), np.float32),
        np.random.default_rng(0).random((17, 23, 3)).astype(np.float32),
    ],
    ids=["tiny-flat", "black-strip", "white", "tiny-random"],
)
def test_detectors_return_finite_numbers_on_degenerate_images(px):
    for name, value in detect_all(_img(px)).items():
        assert math.isfinite(value), name


def test_every_detector_has_a_monotone_builtin_card(cards):
    for name in DETECTORS:
        card = cards.get(name)
        assert card.backend == "builtin" and card.metric == name and card.mode == "NR"
        assert card.logistic is not None and "fit_builtin_cards" in card.logistic.source
        grid = np.linspace(*card.raw_range, 400)
        q = logistic5(grid, *card.logistic.params)
        steps = np.diff(q)
        assert (steps <= 1e-9).all() if card.lower_better else (steps >= -1e-9).all(), name


def test_clean_photo_scores_high_and_heavy_blur_low(photo, cards):
    card = cards.get("sharpness")
    clean = card.normalize(DETECTORS["sharpness"](_img(photo)))
    heavy = card.normalize(
        DETECTORS["sharpness"](_img(distort(photo, "blur", 5, np.random.default_rng(0))))
    )
    assert clean >= 4.5 and heavy <= 2.0


def test_large_image_is_measured_on_reduced_planes():
    rng = np.random.default_rng(0)
    big = np.clip(0.5 + 0.02 * rng.standard_normal((1500, 2100, 3)), 0, 1).astype(np.float32)
    img = _img(big)
    sigma = DETECTORS["noise"](img)
    assert 0.012 < sigma < 0.03  # full-resolution noise survives the reduction
    DETECTORS["sharpness"](img)
    assert img._tensors["det:detail"].shape[1] <= 1024
    assert max(img._tensors["det:full"].shape) <= 1024


def test_detect_gives_findings_for_a_noisy_photo(photo):
    from agentiqa_cli.tools.detectors import detect

    noisy = distort(photo, "noise", 5, np.random.default_rng(0))
    sev = {f.category: f.severity for f in detect(_img(noisy))}
    assert SEVERITIES.index(sev["Noise"]) >= SEVERITIES.index("severe")
