"""Built-in signal detectors: direction, bokeh robustness, findings, cards."""

from __future__ import annotations

import io
import itertools
import math
from pathlib import Path

import numpy as np
import pytest
from PIL import Image
from scipy import ndimage

from agentiqa_cli.bench.camera import disc_kernel
from agentiqa_cli.bench.synth import bundled_photos
from agentiqa_cli.imaging.distort import distort
from agentiqa_cli.imaging.load import LoadedImage
from agentiqa_cli.records import SEVERITIES
from agentiqa_cli.resources import default_cards_dir
from agentiqa_cli.tools.builtin import DETECTORS, detect_all
from agentiqa_cli.tools.cards import load_cards
from agentiqa_cli.tools.detectors import (
    DRAWN_SHOULDER,
    DRAWN_TEXTURE,
    DRAWN_WHITE,
    LATTICE,
    QUARTER,
    SIGNAL_DETECTORS,
    SIGNALS,
    _grid_luma,
    _texture,
    blur_effect,
    drawn,
    drawn_flat,
    drawn_parts,
    drawn_plain,
    drawn_white,
    enlarged,
    findings,
    lattice_found,
    motion_length,
    page,
    quarter_lattice,
    resampling,
    ringing,
)
from agentiqa_cli.tools.logistic import logistic5
from agentiqa_cli.tools.severity import severity_of


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
    ("posterization", "posterize", -1),
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


def test_colour_cast_reading_grows_with_the_cast(photo):
    # a lower bound of the cast: 0 until the evidence agrees, then rising with the level
    values = [
        DETECTORS["colorcast"](_img(distort(photo, "color_cast", lv, np.random.default_rng(0))))
        for lv in range(1, 6)
    ]
    assert all(a <= b for a, b in itertools.pairwise(values)), values
    assert values[4] > values[2] + 0.1, values


def test_a_cast_on_a_near_neutral_photo_reads_above_a_vivid_clean_photo():
    # the reading asks grey edges, grey pixels and highlights to agree on the light: a vivid
    # but balanced photo (saturation about doubled) keeps them near grey, while a level-5
    # cast on the near-neutral coins photo moves all three by the same gain
    for name in ("coffee", "chelsea"):
        vivid = DETECTORS["colorcast"](_img(_vivid(_photo(name))))
        assert vivid < 0.15, (name, vivid)
    coins = _photo("coins")
    cast = DETECTORS["colorcast"](_img(distort(coins, "color_cast", 5, np.random.default_rng(0))))
    # on grey content the reading is the cast's log gain itself (0.55 at level 5)
    assert cast == pytest.approx(0.55, abs=0.05)


def test_colour_cast_reads_higher_than_clean(photo):
    clean = DETECTORS["colorcast"](_img(photo))
    cast = DETECTORS["colorcast"](_img(distort(photo, "color_cast", 5, np.random.default_rng(0))))
    assert clean < 0.05
    assert cast > clean + 0.2


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
    assert SEVERITIES.index(sev["Blurs"]) < SEVERITIES.index("moderate")
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
    found = findings(
        {"underexposure": 0.05, "overexposure": 0.0, "noise": 0.2, "psnr": 30.0}, cards
    )
    cats = [f.category for f in found]
    assert len(cats) == len(set(cats))
    bright = next(f for f in found if f.category == "Brightness change")
    assert (
        SEVERITIES.index(bright.severity) >= SEVERITIES.index("severe") and "0.05" in bright.reason
    )
    assert SEVERITIES.index(found[0].severity) >= SEVERITIES.index(found[-1].severity)


def test_slight_darkness_with_slight_noise_is_low_light_named_as_both(cards):
    def reading(name: str, severity: str) -> float:
        lo, hi = cards.get(name).raw_range
        return next(
            v
            for v in np.linspace(lo, hi, 3001)
            if severity_of(cards.get(name).normalize(v)) == severity
        )

    def named(readings: dict[str, float]) -> dict[str, str]:
        return {f.category: f.severity for f in findings(readings, cards)}

    dark, grain = reading("underexposure", "slight"), reading("noise", "slight")
    quiet, lit = reading("noise", "none"), reading("underexposure", "none")
    # either alone is within what clean photos show
    assert named({"underexposure": dark, "noise": quiet}) == {
        "Brightness change": "slight",
        "Noise": "none",
    }
    assert named({"underexposure": lit, "noise": grain})["Noise"] == "slight"
    # together they are a low-light shot: both named, each visible
    both = findings({"underexposure": dark, "noise": grain}, cards)
    assert {f.category: f.severity for f in both} == {
        "Brightness change": "moderate",
        "Noise": "moderate",
    }
    assert all("low light" in f.reason for f in both)
    # a brightened image's grain is no low light
    assert named({"overexposure": reading("overexposure", "slight"), "noise": grain}) == {
        "Brightness change": "slight",
        "Noise": "slight",
    }
    # a worse part keeps its own severity
    worse = named({"underexposure": reading("underexposure", "severe"), "noise": grain})
    assert worse == {"Brightness change": "severe", "Noise": "moderate"}


def _beside_a_lattice(cards, detector: str, category: str, top: float):
    """Readings of ``detector`` where its "moderate" and its "severe" bands start, and the
    severity of its finding in ``category`` beside a ``jpeg_quality`` reading."""

    def severity(raw: float) -> str:
        return severity_of(cards.get(detector).normalize(raw))

    grid = np.linspace(0.0, top, 1001)
    moderate = next(v for v in grid if severity(v) == "moderate")
    severe = next(v for v in grid if severity(v) == "severe")

    def named(raw: float, quality: float) -> str:
        found = findings({detector: raw, "jpeg_quality": quality}, cards)
        return next(f.severity for f in found if f.category == category)

    return moderate, severe, named


def test_blockiness_names_compression_only_with_a_coarse_jpeg_lattice(cards):
    moderate, severe, named = _beside_a_lattice(cards, "blockiness", "Compression", 5.0)
    # a camera's own q75 save (or no coarser lattice at all): its steps are not damage
    assert named(moderate, 75.0) == "slight" and named(moderate, 100.0) == "slight"
    # a coarse earlier save corroborates them: the worse of the two readings is named
    assert named(moderate, 45.0) == "moderate" and named(severe, 45.0) == "severe"
    # steps a smooth sky keeps from a q75-85 save, read as severe: the lattice says which
    # save made them, and it is a camera's own
    assert named(severe, 75.0) == "slight" and named(severe, 82.0) == "slight"
    assert named(severe, 100.0) == "severe"  # severe blocking stands without a lattice


def test_clipped_chroma_of_a_camera_save_is_no_colour_distortion(cards):
    moderate, severe, named = _beside_a_lattice(cards, "saturation_clip", "Color distortions", 1.0)
    # a vivid flower's q75-85 save: the save clamped the ringing at its deep colours' edges
    assert named(moderate, 75.0) == "slight" and named(moderate, 92.9) == "slight"
    # no save the lattice can read (a PNG, q85+), a coarse earlier save, or a severe share:
    # named as read
    assert named(moderate, 100.0) == "moderate" and named(moderate, 45.0) == "moderate"
    assert named(severe, 75.0) == "severe"


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
        # the signal detectors are fitted; the camera model's readings are trained scores;
        # a drawing's ringing is fitted on the design drawings, a page's blur on drawn pages
        own = {"ringing": "fit_ringing_card", "page_sharpness": "fit_page_card"}
        fitted = "fit_builtin_cards" if name in SIGNALS else own.get(name, "train_camera_model")
        assert card.logistic is not None and fitted in card.logistic.source, name
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
    # noise is read at viewing scale (1024 px: 2x2 block means, then resampled the rest of
    # the way, which averages neighbours too: below sigma / 2), as a viewer of the whole
    # photo sees it and as the same photo at half the size reads
    assert 0.003 < sigma < 0.008
    DETECTORS["sharpness"](img)
    DETECTORS["blockiness"](img)  # the JPEG grid is read on full-resolution crops
    assert img._tensors["det:detail"].shape[1] <= 1024
    assert all(max(c.shape) <= 1024 for c in img._tensors["det:crops"])


def _shapes(w: int, h: int, blur_at_view: float) -> np.ndarray:
    """Flat grey rectangles on grey, placed relative to the width (the same scene at any
    size), blurred by ``blur_at_view`` px of a 1024 px view."""
    rng = np.random.default_rng(3)
    yy, xx = np.mgrid[0:h, 0:w] / w
    g = np.full((h, w), 0.5, np.float32)
    for _ in range(60):
        x0, y0 = rng.random(2) * [1, h / w]
        side, tone = rng.random() * 0.15 + 0.02, rng.random()
        g[(xx >= x0) & (xx < x0 + side) & (yy >= y0) & (yy < y0 + 0.7 * side)] = tone
    g = ndimage.gaussian_filter(g, blur_at_view * w / 1024)
    return np.repeat(g[..., None], 3, axis=2).astype(np.float32)


@pytest.mark.parametrize("side", [1100, 1620, 2048, 3000])
def test_every_image_larger_than_the_view_is_read_at_the_views_size(side):
    # an integer reduction alone read a 1100 px photo at 550 px and a 1620 px one at 810:
    # its blur at half the size, so the same scene read sharper the more pixels it had
    at_view = DETECTORS["sharpness"](_img(_shapes(1024, 683, 2.0)))
    img = _img(_shapes(side, side * 2 // 3, 2.0))
    assert abs(DETECTORS["sharpness"](img) - at_view) < 0.02
    assert max(img._tensors["det:detail"].shape) == 1024


def test_large_image_is_read_beyond_its_centre():
    # JPEG-like 8x8 steps and pixel repetition only in a corner of a large frame
    rng = np.random.default_rng(1)
    big = ndimage.gaussian_filter(rng.random((1600, 2400)).astype(np.float32), 2.0)
    px = np.repeat(big[..., None], 3, axis=2)
    clean = DETECTORS["pixelation"](_img(px))
    corner = px.copy()
    block = corner[:800, :1200:4].repeat(4, axis=1)[:, :1200]
    corner[:800, :1200] = block
    assert DETECTORS["pixelation"](_img(corner)) > clean + 0.05


def test_detect_gives_findings_for_a_noisy_photo(photo):
    from agentiqa_cli.tools.builtin import detect

    noisy = distort(photo, "noise", 5, np.random.default_rng(0))
    sev = {f.category: f.severity for f in detect(_img(noisy))}
    assert SEVERITIES.index(sev["Noise"]) >= SEVERITIES.index("severe")


# -- defects, not style (issue 8): what clean content of every style must not trigger, and
# what real defects must still trigger


def _visible(found, category):
    return [
        f
        for f in found
        if f.category == category and f.severity in ("moderate", "severe", "extreme")
    ]


def _vivid(photo: np.ndarray) -> np.ndarray:
    """Saturation boosted in HSV (s -> 1 - (1 - s)^2, about doubled for pale colours) without
    pushing any colour out of gamut: a vivid, well-balanced image, like a flower close-up."""
    from skimage.color import hsv2rgb, rgb2hsv

    hsv = rgb2hsv(photo)
    hsv[..., 1] = 1.0 - (1.0 - hsv[..., 1]) ** 2
    return hsv2rgb(hsv).astype(np.float32)


def test_vivid_saturated_image_without_cast_is_not_colour_distorted(cards):
    px = _vivid(_photo("astronaut"))
    found = findings(detect_all(_img(px)), cards)
    assert not _visible(found, "Color distortions"), found
    assert DETECTORS["saturation_clip"](_img(px)) < 0.01


def test_clipped_chroma_is_found(cards):
    photo = _photo("astronaut")
    # oversaturation that clips chroma and loses texture: a colour distortion
    over = distort(photo, "oversaturate", 5, np.random.default_rng(0))
    assert _visible(findings(detect_all(_img(over)), cards), "Color distortions")


def test_a_blown_sky_is_over_exposure_and_a_boosted_one_is_clipped_chroma(cards):
    # a textured blue sky: over-exposure lifts every channel, so where blue clips the colour
    # has gone pale (red and green lifted with it, red above half the scale): a blown
    # highlight, not a colour defect; a chroma boost of the same sky pulls red down as blue
    # clips: clipped chroma (before the deep-colour condition the blown sky read 0.76)
    rng = np.random.default_rng(0)
    tex = ndimage.gaussian_filter(rng.standard_normal((240, 320)).astype(np.float32), 2.0)
    shade = (1 + 0.05 * tex / tex.std())[..., None]
    sky = np.clip(np.array([0.35, 0.5, 0.8], np.float32) * shade, 0, 1)
    blown = np.clip(sky * 1.6, 0, 1)
    assert DETECTORS["saturation_clip"](_img(blown)) < 0.05
    found = findings(detect_all(_img(blown)), cards)
    assert not _visible(found, "Color distortions"), found
    assert _visible(found, "Brightness change"), found
    boosted = distort(sky, "oversaturate", 2, rng)
    assert DETECTORS["saturation_clip"](_img(boosted)) > 0.5
    assert _visible(findings(detect_all(_img(boosted)), cards), "Color distortions")


def test_a_strong_cast_of_a_colourful_photo_reads_high_but_makes_no_finding(cards):
    photo = _photo("astronaut")
    assert DETECTORS["colorcast"](_img(photo)) < 0.05
    # a white-balance error of +50% red, -35% blue: every estimate, in every region, moves
    # the same way
    cast = np.clip(photo * np.array([1.5, 1.0, 0.65], np.float32), 0, 1)
    assert DETECTORS["colorcast"](_img(cast)) > 0.3
    # the reading scores as a tool but makes no finding: a frame filled by one coloured
    # subject reads as high (tools/severity.py)
    assert findings({"colorcast": 2.0}, cards) == []
    assert cards.get("colorcast").normalize(2.0) < 3.5


def test_toned_monochrome_reads_as_a_cast_but_a_sunset_does_not(cards):
    # a black-and-white photo toned one colour (sepia-like) and a grey scene under a cast are
    # the same pixels: the reading says so (scripts/cast_check.py: asking for more hues read
    # casts on near-neutral photos as 0 too), and no finding is made from it
    grey = _photo("camera")
    toned = np.clip(grey * np.array([1.3, 1.0, 0.6], np.float32), 0, 1)
    assert DETECTORS["colorcast"](_img(toned)) > 0.3
    assert not _visible(findings(detect_all(_img(toned)), cards), "Color distortions")
    # a sunset: a sky from violet to orange over a dark silhouette; its warmth is the light's
    # and the scene's, and the estimates (regions of sky and of hills) disagree on how much
    h, w = 240, 320
    t = np.linspace(0, 1, h, dtype=np.float32)[:, None, None]
    top, horizon = np.array([0.25, 0.2, 0.45], np.float32), np.array([1.0, 0.55, 0.15], np.float32)
    px = np.broadcast_to(top + (horizon - top) * t**1.5, (h, w, 3)).copy()
    hills = np.arange(h)[:, None] > 170 + 20 * np.sin(np.arange(w)[None, :] / 30)
    px[hills] = (0.06, 0.04, 0.05)
    px = np.clip(px + np.random.default_rng(0).normal(0, 0.01, px.shape), 0, 1)
    assert DETECTORS["colorcast"](_img(px)) < 0.25  # below the level-3 cast's shift
    assert not _visible(findings(detect_all(_img(px)), cards), "Color distortions")


def test_posterized_gradient_is_found_and_a_smooth_one_is_not(cards):
    # a smooth two-colour gradient with a little noise, as a camera or a renderer makes it
    h, w = 200, 300
    t = np.linspace(0, 1, w, dtype=np.float32)[None, :, None]
    ramp = np.array([0.1, 0.3, 0.6], np.float32) + t * np.array([0.7, 0.4, -0.3], np.float32)
    smooth = np.clip(np.broadcast_to(ramp, (h, w, 3)), 0, 1)
    assert DETECTORS["posterization"](_img(smooth)) < 0.1
    assert not _visible(findings(detect_all(_img(smooth)), cards), "Color distortions")
    banded = distort(smooth, "posterize", 2, np.random.default_rng(0))  # 4 bits: 16 levels
    assert DETECTORS["posterization"](_img(banded)) > 3.5
    assert _visible(findings(detect_all(_img(banded)), cards), "Color distortions")


def test_flat_pure_colour_fills_are_not_clipped_chroma():
    px = np.zeros((200, 300, 3), np.float32)
    px[:, :100] = (1.0, 0.0, 0.0)
    px[:, 100:200] = (0.0, 0.4, 1.0)
    px[:, 200:] = (1.0, 0.85, 0.0)
    assert DETECTORS["saturation_clip"](_img(px)) == 0.0


def _high_key(side: int = 384) -> np.ndarray:
    """Pale wood: bright (mean ~0.85) with grain texture, nothing clipped."""
    rng = np.random.default_rng(3)
    y, x = np.mgrid[0:side, 0:side].astype(np.float32)
    grain = 0.04 * np.sin(x / 3.0 + 2.0 * np.sin(y / 40.0)) + 0.02 * ndimage.gaussian_filter(
        rng.standard_normal((side, side)).astype(np.float32), 1.0
    )
    base = 0.84 + grain
    return np.clip(np.stack([base, base * 0.97, base * 0.9], -1), 0, 1).astype(np.float32)


def test_bright_high_key_image_with_detail_is_not_overexposed(cards):
    px = _high_key()
    assert float(px.mean()) > 0.75
    found = findings(detect_all(_img(px)), cards)
    assert not _visible(found, "Brightness change"), found
    # the same scene blown out loses its grain to white: that is over-exposure
    blown = np.clip(px * 1.5, 0, 1)
    assert _visible(findings(detect_all(_img(blown)), cards), "Brightness change")


def test_night_scene_with_lights_is_not_underexposed(cards):
    rng = np.random.default_rng(4)
    px = np.full((400, 600, 3), 0.04, np.float32) + 0.01 * rng.random((400, 600, 1)).astype(
        np.float32
    )
    for y, x in rng.integers(20, 380, size=(40, 2)):  # stars and lights, a few px each
        px[y : y + 3, x : x + 3] = 0.95
    found = findings(detect_all(_img(px)), cards)
    assert not _visible(found, "Brightness change"), found


def test_dark_photo_is_underexposed(photo, cards):
    dark = distort(photo, "darken", 5, np.random.default_rng(0))
    assert _visible(findings(detect_all(_img(dark)), cards), "Brightness change")


def _gradient_graphic(h: int = 360, w: int = 540) -> np.ndarray:
    """A smooth diagonal gradient with crisp-edged flat shapes on it (a wallpaper render)."""
    y, x = np.mgrid[0:h, 0:w].astype(np.float32)
    t = (x / w + y / h) / 2
    px = np.stack([0.2 + 0.5 * t, 0.3 + 0.3 * t, 0.8 - 0.4 * t], -1)
    px[60:160, 80:220] = (0.95, 0.7, 0.2)
    px[200:300, 300:480] = (0.1, 0.15, 0.3)
    px[((x - 420) ** 2 + (y - 90) ** 2) < 50**2] = (0.9, 0.9, 0.95)
    return px.astype(np.float32)


def test_smooth_gradient_with_crisp_edges_is_not_blurry(cards):
    px = _gradient_graphic()
    found = findings(detect_all(_img(px)), cards)
    assert not _visible(found, "Blurs"), found
    # a pure gradient has nothing blur could remove: not blurry either
    plain = _gradient_graphic()
    y, x = np.mgrid[0:360, 0:540].astype(np.float32)
    plain[:] = np.stack([x / 540, y / 360, 0.5 + 0 * x], -1)
    assert not _visible(findings(detect_all(_img(plain)), cards), "Blurs")
    # the same graphic out of focus is blurry
    soft = ndimage.gaussian_filter(px, sigma=(5, 5, 0))
    assert _visible(findings(detect_all(_img(soft)), cards), "Blurs")


def test_pastel_palette_with_colour_contrast_is_not_low_contrast(cards):
    # orange against blue at nearly the same luma: little luma spread, clear colour contrast
    px = np.zeros((300, 400, 3), np.float32)
    px[:, :200] = (0.95, 0.62, 0.45)
    px[:, 200:] = (0.55, 0.72, 0.95)
    px += 0.02 * np.random.default_rng(5).standard_normal(px.shape).astype(np.float32)
    found = findings(detect_all(_img(np.clip(px, 0, 1))), cards)
    assert not _visible(found, "Contrast"), found


def test_pixelation_is_a_compression_finding(photo, cards):
    px = distort(photo, "pixelate", 5, np.random.default_rng(0))
    cats = {f.category for f in _visible(findings(detect_all(_img(px)), cards), "Compression")}
    assert cats == {"Compression"}


def test_a_smooth_skys_q75_save_is_no_mosaic_and_no_blocking(photo):
    """A fog's gentle gradient, saved at q75, steps by one code value on a few rows of some
    columns and on none of the others, which repeat their neighbour as a mosaic's do: read
    from half a code value this was 0.74, a severe mosaic. Read where a column's steps reach
    one code value, it is none; a mosaic of blocks of 4 keeps most of its (b - 1)/b after
    the same save. Its block edges stand out by half a code value over almost nothing
    inside the blocks: a ratio of 86 against that median, below 1 against half a code."""
    h, w = 480, 640
    y, x = np.mgrid[0:h, 0:w].astype(np.float32)
    fog = 0.22 + 0.18 * y / h + 0.03 * np.sin(x / 90.0) * np.cos(y / 70.0)
    sky = np.stack([fog * 0.7, fog * 0.85, fog * 1.1], axis=2)
    assert DETECTORS["pixelation"](_img(_jpeg(sky, 75))) < 0.05
    assert DETECTORS["blockiness"](_img(_jpeg(sky, 75))) < 1.0
    mosaic = distort(photo, "pixelate", 3, np.random.default_rng(0))
    assert DETECTORS["pixelation"](_img(_jpeg(np.clip(mosaic, 0, 1), 75))) > 0.6


def test_dilate_is_scipys_binary_dilation() -> None:
    from scipy import ndimage

    from agentiqa_cli.tools.detectors import dilate

    rng = np.random.default_rng(0)
    for shape in ((1, 1), (5, 7), (40, 33)):
        mask = rng.random(shape) > 0.93
        for n in (1, 2, 3):
            assert np.array_equal(dilate(mask, n), ndimage.binary_dilation(mask, iterations=n))


def test_dilate_by_the_square_is_scipys():
    from agentiqa_cli.tools.detectors import dilate

    mask = np.random.default_rng(0).random((41, 37)) < 0.03
    for r in (1, 2, 6):
        expected = ndimage.binary_dilation(mask, structure=np.ones((3, 3)), iterations=r)
        assert np.array_equal(dilate(mask, r, square=True), expected), r
        # r squares of 3 px are one square of 2r + 1 px
        square = ndimage.maximum_filter(mask, size=2 * r + 1, mode="constant")
        assert np.array_equal(dilate(mask, r, square=True), square), r


def _dithered(side: int = 256) -> np.ndarray:
    """A pixel-art wallpaper: a flat tan fill under a one-pixel checkerboard dither, with a
    patch of a coarser three-pixel pattern (periods 2 and 3, as in a downscaled design)."""
    y, x = np.mgrid[0:side, 0:side]
    px = np.full((side, side, 3), (0.78, 0.6, 0.48), np.float32)
    px += (0.06 * (((x + y) % 2) * 2 - 1))[..., None].astype(np.float32)
    patch = (slice(64, 192), slice(64, 192))
    px[patch] += (0.05 * ((x[patch] // 3 + y[patch] // 3) % 2 * 2 - 1))[..., None]
    return np.clip(px, 0, 1)


def test_regular_dither_is_not_noise_and_noise_on_it_is(cards):
    px = _dithered()
    clean = DETECTORS["noise"](_img(px))
    assert clean < 0.004, clean  # the operator alone reads the dither as sigma ~0.09
    assert not _visible(findings({"noise": clean}, cards), "Noise")
    rng = np.random.default_rng(7)
    noisy = np.clip(px + 0.04 * rng.standard_normal(px.shape[:2])[..., None], 0, 1)
    sigma = DETECTORS["noise"](_img(noisy.astype(np.float32)))
    assert 0.03 < sigma < 0.05, sigma  # independent noise on the pattern is still read
    assert _visible(findings({"noise": sigma}, cards), "Noise")


def test_saturated_dark_hue_at_full_strength_is_not_underexposed(cards):
    # a purple-blue gradient whose blue reaches 0.95: luma tops out near 0.3, yet the
    # brightest channel is near full scale
    y, x = np.mgrid[0:300, 0:400].astype(np.float32)
    t = (x / 400 + y / 300) / 2
    px = np.stack([0.15 + 0.3 * t, 0.05 + 0.15 * t, 0.35 + 0.6 * t], -1).astype(np.float32)
    assert float(np.percentile(px @ np.array([0.299, 0.587, 0.114]), 99.9)) < 0.4
    assert not _visible(findings(detect_all(_img(px)), cards), "Brightness change")
    # the same gradient darkened to a third: now even its brightest channel is dark
    assert _visible(findings(detect_all(_img(px * 0.3)), cards), "Brightness change")


def test_clipped_channel_over_exposes_a_colourful_sky(cards):
    # a textured blue sky brightened: the blue channel reaches full scale over most of
    # it while luma stays near 0.6, which luma-based whites would not count
    rng = np.random.default_rng(3)
    grain = ndimage.gaussian_filter(rng.standard_normal((300, 400)).astype(np.float32), 2.0)
    sky = np.stack([0.1 + 0.2 * grain, 0.3 + 0.2 * grain, 0.5 + 0.2 * grain], -1)
    sky = np.clip(sky, 0, 1).astype(np.float32)
    assert not _visible(findings(detect_all(_img(sky)), cards), "Brightness change")
    bright = np.clip(sky * 2.7, 0, 1)
    assert float((bright @ np.array([0.299, 0.587, 0.114])).mean()) < 0.8
    assert _visible(findings(detect_all(_img(bright)), cards), "Brightness change")


def _flat_symbols(h: int = 320, w: int = 480) -> np.ndarray:
    """A flat saturated green with slightly darker crisp-edged symbols (a flat design)."""
    px = np.full((h, w, 3), (0.18, 0.70, 0.52), np.float32)
    for i, (yy, xx) in enumerate(itertools.product(range(20, h - 20, 40), range(20, w - 20, 40))):
        if i % 3:
            px[yy : yy + 12, xx : xx + 12] = (0.14, 0.62, 0.46)
    return px


def test_flat_saturated_design_with_crisp_edges_is_not_low_contrast_or_blurry(cards):
    px = _flat_symbols()
    found = findings(detect_all(_img(px)), cards)
    assert not _visible(found, "Contrast"), found
    assert not _visible(found, "Blurs"), found
    # a loss of contrast pulls its colours towards one grey: that is low contrast
    flat = distort(px, "contrast", 5, np.random.default_rng(0))
    assert _visible(findings(detect_all(_img(flat)), cards), "Contrast")


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_linear_motion_blur_is_found_at_any_angle_with_its_length(photo, cards, seed):
    assert motion_length(_img(photo)) == 0.0
    for level, length in ((2, 9), (4, 23)):  # bench.synth: a line of that length, random angle
        smeared = distort(photo, "motion_blur", level, np.random.default_rng(seed))
        img = _img(smeared)
        assert abs(motion_length(img) - length) <= 1.5, (seed, length, motion_length(img))
        assert _visible(findings(detect_all(img), cards), "Blurs")


def test_pixelation_and_crisp_oblique_edges_are_not_motion_blur(photo, cards):
    from agentiqa_cli.tools.detectors import motion_length

    blocky = distort(photo, "pixelate", 2, np.random.default_rng(0))
    assert DETECTORS["sharpness"](_img(blocky)) > 0.7  # its blocks are crisp
    # crisp bands of uneven widths all running at 15-25° to the rows (a facade of panels):
    # seen along the rows each edge is a ramp of ~3 px, yet nothing is smeared
    y, x = np.mgrid[0:360, 0:540].astype(np.float32)
    edges = np.cumsum(np.random.default_rng(2).uniform(12, 40, 40)) - 200
    v = y - np.tan(np.radians(20)) * x + 0.0003 * (x - 270) ** 2
    bands = (np.searchsorted(edges, v) % 2).astype(np.float32)
    px = np.repeat((0.1 + 0.8 * bands)[..., None], 3, axis=-1)
    assert motion_length(_img(px)) == 0.0
    assert not _visible(findings(detect_all(_img(px)), cards), "Blurs")


def _q8(px: np.ndarray) -> np.ndarray:
    return (np.clip(px, 0, 1) * 255 + 0.5).astype(np.uint8).astype(np.float32) / 255


def _grey(plane: np.ndarray) -> np.ndarray:
    return _q8(np.repeat(plane[..., None], 3, axis=-1).astype(np.float32))


def _dusk(seed: int, h: int = 320, w: int = 480) -> np.ndarray:
    """A smooth sky over a dark anti-aliased hill line, nearly without texture, in 8 bits."""
    rng = np.random.default_rng(seed)
    y, x = np.mgrid[0:h, 0:w].astype(np.float32)
    clouds = ndimage.gaussian_filter(rng.standard_normal((h, w)), 20) * 20
    sky = 0.55 - 0.25 * y / h + 0.04 * clouds
    ridge = h * 0.6 + 30 * np.sin(x / 60.0 + seed) + 12 * np.sin(x / 17.0)
    land = np.clip(y - ridge + 0.5, 0, 1)
    return _grey((1 - land) * sky + land * 0.12)


@pytest.mark.parametrize(("seed", "level"), [(0, 4), (0, 5), (1, 5), (3, 4), (3, 5)])
def test_weak_motion_blur_on_a_smooth_image_is_found_with_its_length(cards, seed, level):
    from agentiqa_cli.tools import detectors

    clean = _dusk(seed)
    assert detectors.motion_length(_img(clean)) == 0.0
    assert not _visible(findings(detect_all(_img(clean)), cards), "Blurs")
    smeared = _q8(distort(clean, "motion_blur", level, np.random.default_rng(seed)))
    length = (9, 15, 23, 33)[level - 2]
    # the cepstral spike alone is too weak here: only the check along its direction finds it
    strong_only = pytest.MonkeyPatch()
    strong_only.setattr(detectors, "MOTION_WEAK_Z", detectors.MOTION_Z)
    try:
        assert detectors.motion_length(_img(smeared)) == 0.0
    finally:
        strong_only.undo()
    img = _img(smeared)
    assert abs(detectors.motion_length(img) - length) <= 1.5, detectors.motion_length(img)
    assert DETECTORS["sharpness"](img) < 0.15
    assert _visible(findings(detect_all(img), cards), "Blurs")


def _wood(angle: float, h: int = 320, w: int = 480) -> np.ndarray:
    """Wood grain: noise stretched along one direction (smooth along it, crisp across)."""
    n = 2 * max(h, w)
    grain = ndimage.gaussian_filter(np.random.default_rng(0).standard_normal((n, n)), (0.8, 14))
    grain = ndimage.rotate(grain, angle, reshape=False, order=1)
    y0, x0 = (n - h) // 2, (n - w) // 2
    g = grain[y0 : y0 + h, x0 : x0 + w]
    return 0.45 + 0.25 * g / g.std()


def _grass(h: int = 320, w: int = 480) -> np.ndarray:
    """Crisp thin blades, most of them nearly upright."""
    rng = np.random.default_rng(0)
    px = np.full((h, w), 0.3)
    y, x = np.mgrid[0:h, 0:w]
    for _ in range(900):
        x0, y0 = rng.uniform(0, w), rng.uniform(h * 0.1, h)
        tilt, length, v = rng.normal(0, 0.15), rng.uniform(30, 120), rng.uniform(0.1, 0.8)
        t = (y0 - y) / length
        on = (t >= 0) & (t <= 1) & (np.abs(x - (x0 + tilt * (y0 - y))) < 0.9 * (1 - t) + 0.4)
        px[on] = v
    return px


def _water(h: int = 320, w: int = 480) -> np.ndarray:
    """Horizontal ripples, wobbling and narrowing with distance."""
    y, _ = np.mgrid[0:h, 0:w].astype(np.float64)
    wob = ndimage.gaussian_filter(np.random.default_rng(0).standard_normal((h, w)), (3, 25)) * 40
    band = np.sin((y + wob) / 2.5 * (1 + y / h))
    return 0.4 + 0.3 * np.tanh(3 * band) * (0.5 + y / h)


@pytest.mark.parametrize(
    "name", ["wood0", "wood30", "wood60", "wood90", "wood135", "grass", "water"]
)
def test_directional_clean_texture_is_not_motion_blur(cards, name):
    from agentiqa_cli.tools.detectors import _sharpest_region, motion_length

    plane = _grass() if name == "grass" else _water() if name == "water" else _wood(float(name[4:]))
    img = _img(_grey(plane))
    assert motion_length(img) == 0.0
    assert DETECTORS["sharpness"](img) == _sharpest_region(img) > 0.6
    assert not _visible(findings(detect_all(img), cards), "Blurs")


def test_crisp_along_reads_the_motion_direction_only(photo):
    from agentiqa_cli.tools.detectors import _crisp_along

    # a horizontal smear of 21 px: every edge is a long ramp along the rows, none across
    smeared = ndimage.uniform_filter1d(photo, 21, axis=1)
    along, across = _crisp_along(_img(smeared), 0.0, 1.0), _crisp_along(_img(smeared), 1.0, 0.0)
    sharp = min(_crisp_along(_img(photo), np.sin(a), np.cos(a)) for a in np.radians([0, 45, 90]))
    assert along < 0.3 < 0.6 < across
    assert sharp > 0.6


def test_a_picture_too_small_for_tiles_is_judged_whole_and_blur_lowers_it(photo) -> None:
    """Below 44 px a side there are no 32 px tiles: the whole-image blur effect (numpy, no
    scikit-image) reads a crisp crop sharper than the same crop blurred."""
    crop = photo[100:136, 120:160]
    blurred = ndimage.gaussian_filter(crop, (1.5, 1.5, 0))
    assert DETECTORS["sharpness"](_img(crop)) > DETECTORS["sharpness"](_img(blurred)) + 0.1


def test_the_whole_image_blur_effect_is_scikit_images() -> None:
    measure = pytest.importorskip("skimage.measure")
    rng = np.random.default_rng(0)
    gray = _photo("camera", 512)[..., 0]
    for i in range(40):
        h, w = (int(v) for v in rng.integers(16, 44, 2))
        y, x = (int(v) for v in rng.integers(0, 400, 2))
        g = gray[y : y + h, x : x + w]
        g = ndimage.gaussian_filter(g, 1 + i % 3) if i % 2 else g
        assert blur_effect(g) == pytest.approx(float(measure.blur_effect(g)), abs=1e-5)


def test_the_tiles_blur_effect_equals_an_explicit_box_re_blur() -> None:
    """``blur_effect_tiles`` reads the re-blurred copy's neighbour steps as differences of
    samples 11 px apart; that is the same as blurring each tile with an 11-sample box along
    each direction and taking its steps, which this test does the long way."""
    from agentiqa_cli.tools.detectors import blur_effect_tiles

    rng = np.random.default_rng(3)
    tiles = ndimage.gaussian_filter(rng.random((6, 42, 42)), (0, 1.2, 1.2)).astype(np.float32)
    h, r, n = 11, 5, 42 - 10
    diag = np.eye(h) / h
    kernels = (np.ones((h, 1)) / h, np.ones((1, h)) / h, diag, diag[::-1])
    # each direction's neighbour pairs: rows, columns, diagonal, anti-diagonal
    pairs = ((np.s_[1:, :], np.s_[:-1, :]), (np.s_[:, 1:], np.s_[:, :-1]),
             (np.s_[1:, 1:], np.s_[:-1, :-1]), (np.s_[1:, :-1], np.s_[:-1, 1:]))  # fmt: skip
    energy, lost = blur_effect_tiles(tiles, h)
    for d, (kernel, (a, b)) in enumerate(zip(kernels, pairs, strict=True)):
        for i, tile in enumerate(tiles.astype(np.float64)):
            soft = ndimage.correlate(tile, kernel, mode="constant")[r:-r, r:-r]
            core = tile[r:-r, r:-r]
            step, soft_step = np.abs(core[a] - core[b]), np.abs(soft[a] - soft[b])
            assert soft.shape == (n, n)
            assert energy[d, i] == pytest.approx(step.sum(), rel=1e-5)
            assert lost[d, i] == pytest.approx(np.maximum(step - soft_step, 0).sum(), rel=1e-4)


def _jpeg(px: np.ndarray, quality: int) -> np.ndarray:
    import io

    buf = io.BytesIO()
    Image.fromarray((px * 255 + 0.5).astype(np.uint8)).save(buf, "JPEG", quality=quality)
    return np.asarray(Image.open(buf).convert("RGB"), dtype=np.float32) / 255.0


def test_block_steps_too_small_to_see_are_not_blocking():
    """A smooth gradient's q90 save leaves its block edges a fraction of a code value above
    the rest; inside the blocks there are no steps at all, so a ratio alone read that as
    severe blocking (which stands whatever the JPEG lattice says). Scaled by how visible the
    steps are, it is a moderate reading that a fine save's lattice clears; a heavy save of
    the same gradient still reads severe compression."""
    y, x = np.mgrid[0:480, 0:640].astype(np.float32)
    t = (0.6 * x / 640 + 0.4 * y / 480)[..., None]
    purple, orange = np.array([0.45, 0.15, 0.4]), np.array([0.85, 0.4, 0.2])
    gradient = ((1 - t) * purple + t * orange).astype(np.float32)

    def compression(px: np.ndarray) -> str:
        found = findings(detect_all(_img(px)))
        return next(f.severity for f in found if f.category == "Compression")

    assert compression(_jpeg(gradient, 90)) in ("none", "slight")
    assert SEVERITIES.index(compression(_jpeg(gradient, 10))) >= SEVERITIES.index("severe")


def _decoded(px: np.ndarray, **save: object) -> np.ndarray:
    """``px`` saved with Pillow (e.g. format="JPEG", quality=90) and decoded again."""
    buf = io.BytesIO()
    Image.fromarray((np.clip(px, 0, 1) * 255 + 0.5).astype(np.uint8)).save(buf, **save)
    return np.asarray(Image.open(buf).convert("RGB"), dtype=np.float32) / 255.0


def test_an_enlargement_by_4_is_found_by_its_phase(cards):
    """An enlargement by 4 puts its lattice on the 8x8 grid's second harmonic, which a
    camera's save has too; where the original samples sit (px 1.5, 5.5, ... of each 8) tells
    them apart. A reduction by nearest neighbour (no low-pass: its aliasing keeps detail the
    blur head reads as kept) and a bilinear enlargement, then a q92 save: resolution loss;
    the photo's own q92 and q15 saves, a defocus and a shake: none."""
    from agentiqa_cli.bench.camera import DEFAULT_RECIPE, defocus, shake

    photo = _photo("coffee", 768)
    h, w = photo.shape[:2]
    im = Image.fromarray((photo * 255 + 0.5).astype(np.uint8))
    small = im.resize((w // 4, h // 4), Image.Resampling.NEAREST)
    big = np.asarray(small.resize((w, h), Image.Resampling.BILINEAR), np.float32) / 255.0
    blown = _img(_decoded(big, format="JPEG", quality=92, subsampling=0))
    assert quarter_lattice(blown) >= QUARTER and resampling(blown) < LATTICE
    assert enlarged(blown)
    readings = detect_all(blown)
    assert readings["camera_blur"] == 5.0  # the detail lost is the resolution finding's
    found = findings(readings, cards)
    assert _visible(found, "Sharpness"), found
    others = [
        _decoded(photo, format="JPEG", quality=92),
        _decoded(photo, format="JPEG", quality=15),
        _decoded(defocus(photo, 4, np.random.default_rng(0), DEFAULT_RECIPE), format="JPEG"),
        _decoded(shake(photo, 4, np.random.default_rng(0), DEFAULT_RECIPE), format="JPEG"),
    ]
    for px in others:
        assert quarter_lattice(_img(px)) < QUARTER
    # a drawing's own lines on its 4 px grid (at px 1 or 5 of each 8: bars, ticks, hatching)
    rng = np.random.default_rng(1)
    page = np.ones((480, 640, 3), np.float32)
    for x in rng.choice(np.arange(80, 560, 8), 30, replace=False) + rng.choice([1, 5], 30):
        y0 = rng.integers(60, 300)
        page[y0 : y0 + rng.integers(40, 160), x] = rng.uniform(0.1, 0.6)
    page[400:404, 60:580] = 0.0
    assert drawn_white(_img(page)) > 0.9 and not enlarged(_img(page))


@pytest.mark.parametrize("resample", [Image.Resampling.BICUBIC, Image.Resampling.BILINEAR])
def test_a_lattice_in_one_axis_is_no_enlargement(resample):
    """An enlargement resamples both axes: its lattice stands in the rows' profile and in the
    columns' alike. The same photo stretched by 1.5 along one axis only (what a page's
    glyphs at a regular pitch look like to the profiles) keeps a strong peak in one of them:
    no enlargement."""
    im = Image.fromarray((_photo("astronaut", 400) * 255 + 0.5).astype(np.uint8))
    w, h = im.size
    both = np.asarray(im.resize((w * 3 // 2, h * 3 // 2), resample), np.float32) / 255.0
    one = np.asarray(im.resize((w * 3 // 2, h), resample), np.float32) / 255.0
    assert lattice_found(_img(both)) and enlarged(_img(both))
    assert resampling(_img(one)) >= LATTICE
    assert not lattice_found(_img(one)) and not enlarged(_img(one))


@pytest.fixture(scope="module")
def rendered(tmp_path_factory) -> dict[tuple[str, str], np.ndarray]:
    """Charts, a text page and a dashboard on white and dark backgrounds (bench.renders at a
    seed the quality check does not use), as drawn: (kind, background) -> pixels."""
    from agentiqa_cli.bench.renders import generate_renders

    out = tmp_path_factory.mktemp("drawings")
    return {
        (r.kind, r.background): np.asarray(Image.open(r.path).convert("RGB"), np.float32) / 255.0
        for r in generate_renders(out, seed=7)
        if r.saved == "png"
    }


@pytest.fixture(scope="module")
def drawings(rendered) -> dict[str, np.ndarray]:
    return {kind: px for (kind, background), px in rendered.items() if background == "white"}


@pytest.mark.parametrize("kind", ["line", "bars", "pie", "scatter", "page", "dashboard"])
def test_a_drawing_on_white_is_not_over_exposed_or_blocky(drawings, kind, cards):
    for px in (drawings[kind], _decoded(drawings[kind], format="JPEG", quality=90)):
        image = _img(px)
        assert drawn_white(image) > 0.9
        found = findings(detect_all(image), cards)
        assert not _visible(found, "Brightness change"), found
        assert not _visible(found, "Compression"), found


def _disc_blur(px: np.ndarray, radius: float) -> np.ndarray:
    k = disc_kernel(radius)
    return np.stack([ndimage.convolve(px[..., c], k) for c in range(3)], -1)


@pytest.mark.parametrize("background", ["white", "dark"])
def test_a_defocused_page_is_named_blurred(rendered, background, cards):
    """The camera model learned photographs and reads a page's glyphs as sharp whatever their
    focus (a page defocused by a 3 px disc read "contrast", no blur). A page (no colour,
    plain paper, ink in many tiles) is judged by how sharp its glyphs are: as drawn, as a
    phone sees it (grey paper lit unevenly, sensor noise) and with its light falling off
    by half towards a corner, in focus it is no blur; defocused
    by a 3 px disc at the view (the camera series' level 3) its glyphs name it. Its glyphs
    at a regular pitch were read as an enlargement's lattice ("resolution loss") and its
    white paper, once the glyphs' edges roll into it, as blown light ("over-exposed")."""
    px = rendered[("page", background)]
    h, w = px.shape[:2]
    light = 0.8 + 0.15 * np.linspace(0.0, 1.0, w)[None, :, None]
    # a book page's light falling off towards a corner (as scikit-image's scanned page)
    shade = 1.0 - 0.25 * (
        np.linspace(0.0, 1.0, w)[None, :, None] + np.linspace(0.0, 1.0, h)[:, None, None]
    )
    rng = np.random.default_rng(3)
    view = max(h, w) / 1024
    shots = (
        lambda a: a,
        lambda a: a * light * 0.9 + 0.06 + rng.normal(0, 0.012, a.shape),
        lambda a: a * shade,
    )
    for shot in shots:
        sharp = _img(_decoded(shot(px), format="JPEG", quality=90))
        assert page(sharp)
        assert not _visible(findings(detect_all(sharp), cards), "Blurs")
        soft = _img(_decoded(shot(_disc_blur(px, 3 * view)), format="JPEG", quality=90))
        readings = detect_all(soft)
        found = findings(readings, cards)
        assert page(soft) and _visible(found, "Blurs")
        own = cards.get("page_sharpness").normalize(readings["page_sharpness"])
        assert severity_of(own) in ("moderate", "severe"), own
        # its glyphs' regular pitch is no enlargement, its white paper no blown light
        assert not enlarged(soft)
        if background == "white":
            assert not _visible(found, "Brightness change"), found


@pytest.mark.parametrize("level", [4, 5])
def test_a_blown_black_and_white_photo_is_no_page(level, cards):
    """A black-and-white photo over-exposed until most of it is white has paper-like white
    and ink-like remains, in many tiles; but they are areas, not strokes. It is no page, so
    its white is blown light, named over-exposed (on a page the exposure readings stand
    aside)."""
    from agentiqa_cli.bench.camera import DEFAULT_RECIPE, camera_damage

    px = _photo("astronaut", 768)
    grey = np.repeat(px.mean(axis=2, keepdims=True), 3, axis=2)
    blown = camera_damage(grey, "overexpose", level, np.random.default_rng(0), DEFAULT_RECIPE)
    image = _img(_decoded(blown, format="JPEG", quality=90))
    assert not page(image)
    assert _visible(findings(detect_all(image), cards), "Brightness change")


def test_a_grey_photograph_is_no_page(photo):
    """Only a page's glyphs are judged so: a black-and-white photograph, a grey macro shot in
    the dark and a soft one keep the photograph's judgement (fog and bokeh are no defect)."""
    grey = np.repeat(photo.mean(axis=2, keepdims=True), 3, axis=2)
    camera = _photo("camera", 512)
    for px in (grey, camera, 1.0 - camera, _disc_blur(camera, 3.0), grey * 0.4):
        image = _img(_decoded(px, format="JPEG", quality=90))
        assert not page(image) and detect_all(image)["page_sharpness"] == 1.0


def _pastel_regions() -> np.ndarray:
    """A decision-boundary plot: three pastel regions (light tones, luma 0.8-0.9) over half
    of the frame, white margins, dark markers and axes."""
    h, w = 480, 640
    px = np.ones((h, w, 3), np.float32)
    yy, xx = np.mgrid[0:h, 0:w]
    inside = (yy > 40) & (yy < 440) & (xx > 60) & (xx < 420)
    pastels = np.array([[0.98, 0.80, 0.80], [0.80, 0.92, 0.80], [0.82, 0.84, 0.98]], np.float32)
    region = np.clip((xx - 60) * 3 // 360 + ((yy - 40) > 300), 0, 2)
    px[inside] = pastels[region[inside]]
    px[38:42, 58:422] = px[438:442, 58:422] = 0.1
    px[38:442, 58:62] = px[38:442, 418:422] = 0.1
    rng = np.random.default_rng(3)
    for y, x in zip(rng.integers(60, 420, 60), rng.integers(80, 400, 60), strict=True):
        px[y - 3 : y + 3, x - 3 : x + 3] = (0.15, 0.2, 0.5)
    return px


def test_a_drawing_with_pastel_fills_is_not_over_exposed(cards):
    """Light fills of a few exact colours are a drawing's design, not a photo's tones rolling
    into the clip (DRAWN_FILL)."""
    for px in (_pastel_regions(), _decoded(_pastel_regions(), format="JPEG", quality=90)):
        image = _img(px)
        _, shoulder, fills, _, _ = drawn_parts(image)
        # all its light tones would be a photo's shoulder; its fills are nearly all of them
        assert shoulder > DRAWN_SHOULDER[1] and fills > 0.7 * shoulder
        assert drawn_white(image) > 0.9
        assert not _visible(findings(detect_all(image), cards), "Brightness change")


def test_a_drawing_saved_coarsely_still_reads_compressed(drawings, cards):
    """Standing aside on a drawing leaves its save to jpeg_quality (the quantizer's lattice,
    which a drawing's edges do not make). (Where the save leaves too few non-flat blocks to
    read a lattice, as on a sparse plot, a coarse save goes unread: docs/tools.md.)"""
    coarse = _img(_decoded(drawings["dashboard"], format="JPEG", quality=10))
    assert drawn_white(coarse) > 0.9
    assert DETECTORS["jpeg_quality"](coarse) < 20
    assert _visible(findings(detect_all(coarse), cards), "Compression")


def _sparse_plot() -> np.ndarray:
    """A plot with one horizontal line, its frame and ticks on white: its blocks with
    detail repeat a few exact contents."""
    px = np.ones((600, 800, 3), np.float32)
    px[60:62, 100:720] = px[538:540, 100:720] = 0.0
    px[60:540, 100:102] = px[60:540, 718:720] = 0.0
    px[147, 101:710], px[148, 101:710] = (0.3, 0.3, 0.9), (0.6, 0.6, 0.95)
    for x in range(100, 720, 155):
        px[530:538, x : x + 2] = 0.0
    return px


def test_a_sparse_plot_has_no_jpeg_lattice_unless_it_was_saved(monkeypatch):
    """A few exact coefficient values are a lattice of any step they share: without the
    ringing check (KEPT_FLAT) the PNG reads an extreme save. Its real q10 save rings, and
    still reads coarse."""
    plot = _sparse_plot()
    assert DETECTORS["jpeg_quality"](_img(plot)) == 100.0
    assert DETECTORS["jpeg_quality"](_img(_decoded(plot, format="JPEG", quality=10))) < 20
    monkeypatch.setattr("agentiqa_cli.tools.detectors.KEPT_FLAT", 1.0)
    assert DETECTORS["jpeg_quality"](_img(plot)) < 20


@pytest.mark.parametrize("kind", ["pie", "page", "dashboard"])
def test_a_drawings_coarse_save_is_named_by_its_ringing(drawings, kind, cards):
    """Around a drawing's lines on white a coarse save overshoots full scale and is clipped,
    which hides its lattice from jpeg_quality; its ringing, confined to the blocks that hold
    the lines, names the save. As published, and saved at q90, nothing is named."""
    px = drawings[kind]
    assert abs(ringing(_img(px))) < 0.5
    for clean in (px, _decoded(px, format="JPEG", quality=90)):
        assert not _visible(findings(detect_all(_img(clean)), cards), "Compression")
    coarse = _img(_decoded(px, format="JPEG", quality=20))
    assert ringing(coarse) > 3.5
    assert _visible(findings(detect_all(coarse), cards), "Compression")
    if kind == "pie":  # the case the reading is for: no lattice left to read
        assert DETECTORS["jpeg_quality"](coarse) == 100.0


def test_ringing_counts_only_spread_confined_to_the_blocks_with_ink(drawings):
    """Spread near the ink reads as a save's ringing only where it stops at the 8x8 blocks
    that hold the ink: grain over the whole drawing spreads on both sides alike."""
    px = drawings["pie"]
    rng = np.random.default_rng(1)
    grain = rng.normal(0.0, 3.0 / 255, px.shape[:2]).astype(np.float32)[..., None]
    assert abs(ringing(_img(px + grain))) < 0.5
    ink = np.abs(_img(px).gray() - 1.0) > 32 / 255
    h, w = ink.shape[0] // 8 * 8, ink.shape[1] // 8 * 8
    blocks = ink[:h, :w].reshape(h // 8, 8, w // 8, 8).any(axis=(1, 3))
    inside = np.zeros(ink.shape, bool)
    inside[:h, :w] = np.repeat(np.repeat(blocks, 8, axis=0), 8, axis=1)
    assert ringing(_img(px + grain * inside[..., None])) > 2.0


def test_a_photo_has_no_flat_background_to_ring(photo):
    for quality in (90, 20):
        assert ringing(_img(_decoded(photo, format="JPEG", quality=quality))) == 0.0


def test_an_over_exposed_photo_is_not_a_drawing(photo, cards):
    from agentiqa_cli.bench.camera import DEFAULT_RECIPE, overexpose

    for level in (3, 4, 5):
        blown = _decoded(
            overexpose(photo, level, np.random.default_rng(level), DEFAULT_RECIPE),
            format="JPEG",
            quality=90,
        )
        image = _img(blown)
        assert drawn_white(image) < 0.1, level
        assert _visible(findings(detect_all(image), cards), "Brightness change"), level
    # the over-exposure reading stands aside by drawn_white only: on a photo it is the raw one
    assert DETECTORS["overexposure"](image) == SIGNAL_DETECTORS["overexposure"](image)


@pytest.mark.parametrize("kind", ["line", "bars", "pie", "scatter", "page", "dashboard"])
def test_a_drawing_on_a_dark_theme_is_not_blocky(rendered, kind, cards):
    px = rendered[(kind, "dark")]
    # its few white labels are no white background (their share of the grid scales it down)
    assert drawn_white(_img(px)) < 0.05
    assert drawn_flat(_img(px)) > 0.9
    for image in (_img(px), _img(_decoded(px, format="JPEG", quality=90))):
        assert not _visible(findings(detect_all(image), cards), "Compression")


def test_photos_made_flat_by_damage_are_not_drawings(photo):
    """Under-exposure crushes a photo's shadows to one colour, and a coarse save makes flat
    blocks (the lossless series keeps them exact): neither is a drawing's background."""
    from agentiqa_cli.bench.camera import DEFAULT_RECIPE, low_light, underexpose

    for damage in (underexpose, low_light):
        for level in (3, 5):
            dark = damage(photo, level, np.random.default_rng(level), DEFAULT_RECIPE)
            assert drawn(_img(_decoded(dark, format="JPEG", quality=90))) < 0.1
    # a foggy field (a faint gradient and grain) with the photo in a corner: a coarse save
    # turns most of the field into blocks of one colour, kept exact by a lossless re-save
    fog = np.broadcast_to(0.55 + 0.05 * np.arange(512, dtype=np.float32) / 512, (384, 512))
    field = np.stack([fog, fog * 1.02, fog * 1.08], -1)
    field += np.random.default_rng(0).normal(0.0, 0.004, field.shape).astype(np.float32)
    small = photo[::2, ::2]
    field[-small.shape[0] :, -small.shape[1] :] = small
    for quality in (5, 10):
        coarse = _img(_decoded(_decoded(field, format="JPEG", quality=quality), format="PNG"))
        assert drawn_flat(coarse) == 0.0, quality


def test_a_dense_scatter_plot_has_no_photographic_texture(cards):
    """Steps from or to a fill colour (a marker's inside, alone among the colours near it)
    are no texture: 1,500 antialiased markers in three colours read as a drawing, where all
    their edge steps made a photo's texture."""
    from PIL import ImageDraw

    big = Image.new("RGB", (2560, 1920), "white")
    draw = ImageDraw.Draw(big)
    rng = np.random.default_rng(0)
    colours = [(31, 119, 180), (214, 39, 40), (44, 160, 44)]
    for i in range(1500):
        x, y = rng.uniform(100, 2460), rng.uniform(100, 1820)
        draw.ellipse((x - 24, y - 24, x + 24, y + 24), fill=colours[i % 3])
    px = np.asarray(big.resize((640, 480), Image.Resampling.LANCZOS), np.float32) / 255.0
    image = _img(px)
    lum = _grid_luma(image)
    white = lum >= DRAWN_WHITE
    assert _texture(lum, white, np.zeros_like(white)) > DRAWN_TEXTURE[1]  # every step counted
    assert drawn_parts(image)[3] < DRAWN_TEXTURE[0]
    assert drawn_white(image) > 0.9
    assert not _visible(findings(detect_all(image), cards), "Brightness change")


def test_evenly_spaced_error_bars_are_no_motion(cards):
    """A plot's evenly spaced error bars make a deep cepstral dip, as a linear motion does;
    but a motion smears every edge along it, and the plot's stay crisp (CRISP_PATTERN)."""
    from PIL import ImageDraw

    s = 4  # drawn at 4x, then reduced: antialiased lines
    big = Image.new("RGB", (750 * s, 525 * s), "white")
    draw = ImageDraw.Draw(big)
    xs = np.arange(100, 680, 10) * s
    ys = (255 + 190 * np.sin(xs / s / 95.0)) * s
    blue = (0, 114, 189)
    draw.line(list(zip(xs.tolist(), ys.tolist(), strict=True)), fill=blue, width=s)
    for x, y in zip(xs, ys, strict=True):
        draw.line((x, y - 14 * s, x, y + 14 * s), fill=blue, width=s)
        for cap in (y - 14 * s, y + 14 * s):
            draw.line((x - 3 * s, cap, x + 3 * s, cap), fill=blue, width=s)
    px = np.asarray(big.resize((750, 525), Image.Resampling.LANCZOS), np.float32) / 255.0
    image = _img(px)
    assert motion_length(image) == 0.0
    assert not _visible(findings(detect_all(image), cards), "Blurs")


def test_a_pixelated_bright_photo_has_no_fills(photo, cards):
    """A pixelated photo's light blocks repeat exact colours too, but neighbouring blocks
    differ by a code or two (DRAWN_FILL's bin): a black-and-white photo brightened, then
    pixelated, is no drawing and keeps its finding."""
    from agentiqa_cli.imaging.distort import distort

    grey = np.repeat((photo @ np.array([0.299, 0.587, 0.114], np.float32))[..., None], 3, 2)
    bright = np.clip(distort(grey, "brighten", 2, np.random.default_rng(0)), 0.0, 1.0)
    blocks = np.clip(distort(bright, "pixelate", 5, np.random.default_rng(5)), 0.0, 1.0)
    image = _img(_decoded(blocks, format="PNG"))
    _, shoulder, fills, _, _ = drawn_parts(image)
    assert fills < 0.5 * shoulder
    assert drawn_white(image) < 0.1
    assert _visible(findings(detect_all(image), cards), "Compression")


def test_noise_on_a_drawing_is_still_noise(drawings, cards):
    """A JPEG's ringing around a scatter plot's markers is not noise on a plain white; on a
    noisy white the noise readings do not stand aside."""
    scatter = _img(_decoded(drawings["scatter"], format="JPEG", quality=90))
    assert not _visible(findings(detect_all(scatter), cards), "Noise")
    rng = np.random.default_rng(0)
    noisy = np.clip(drawings["page"] + rng.normal(0.0, 0.03, drawings["page"].shape), 0, 1)
    image = _img(_decoded(noisy, format="PNG"))
    assert drawn_white(image) > 0.9  # still a drawing on white: over-exposure stands aside
    assert drawn_plain(image) == 0.0  # but the noise readings do not
    assert DETECTORS["noise"](image) == SIGNAL_DETECTORS["noise"](image)


def test_a_blank_or_dark_image_is_not_a_drawing_on_white():
    white = np.ones((200, 300, 3), np.float32)
    white[100, 150] = 0.0  # a speck: less than DRAWN_CONTENT of the image is not white
    assert drawn_white(_img(white)) == 0.0
    dark = np.full((200, 300, 3), 0.1, np.float32)
    assert drawn_white(_img(dark)) == 0.0
