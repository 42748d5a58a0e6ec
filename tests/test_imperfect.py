"""Imperfection checks and fixes (V-QPP-Bench): pure functions over arrays."""

from __future__ import annotations

import numpy as np
import pytest
from pydantic import ValidationError

from agentiqa_cli.bench.synth import bundled_photos
from agentiqa_cli.imperfect import checks
from agentiqa_cli.imperfect.corrupt import anchor_box, corrupt
from agentiqa_cli.imperfect.fixes import apply
from agentiqa_cli.imperfect.records import Crop, Fill, FixReply, Rotate, describe
from agentiqa_cli.records import Box


@pytest.fixture(scope="module")
def photos() -> list[np.ndarray]:
    from PIL import Image

    out = []
    for x in bundled_photos(("astronaut", "chelsea", "coffee", "motorcycle")):
        im = Image.fromarray((x * 255).astype(np.uint8))
        im.thumbnail((256, 256))
        out.append(np.asarray(im, dtype=np.float32) / 255)
    return out


def types(x: np.ndarray) -> set[str]:
    return {f.type for f in checks.check(x)}


def test_clean_photos_have_no_fixable_findings(photos: list[np.ndarray]) -> None:
    # a known false finding (docs/vqpp.md): the overlay check, which looks anywhere, reads
    # the sheet of paper pinned on the motorcycle photo's wall as a pasted rectangle
    known = [set(), set(), set(), {"overlay"}]
    for x, allowed in zip(photos, known, strict=True):
        assert not (types(x) - allowed) & set(checks.FIXABLE_TYPES), types(x)


@pytest.mark.parametrize("kind", ["expand", "overlay", "brightness", "noise", "blur"])
def test_checks_find_what_was_done_and_the_oracle_box(kind: str, photos: list[np.ndarray]) -> None:
    x, oracle, _ = corrupt(kind, photos[0], photos[1:], np.random.default_rng(3))
    found = [f for f in checks.check(x) if f.type == kind]
    assert found, checks.check(x)
    ops = found[0].operations
    assert [o.tool for o in ops] == [o.tool for o in oracle]
    if kind == "overlay":
        assert isinstance(ops[0], Fill) and ops[0].bbox is not None
        assert ops[0].bbox.iou(oracle[0].bbox) > 0.9  # type: ignore[union-attr]


def _jpeg(x: np.ndarray, quality: int) -> np.ndarray:
    import io

    from PIL import Image

    buf = io.BytesIO()
    Image.fromarray(np.clip(np.rint(x * 255), 0, 255).astype(np.uint8)).save(
        buf, format="JPEG", quality=quality
    )
    return np.asarray(Image.open(buf).convert("RGB"), dtype=np.float32) / 255


@pytest.mark.parametrize(
    ("box", "alpha", "quality"),
    [((20, 30, 90, 80), 1.0, 75), ((140, 100, 230, 150), 0.75, None)],
)
def test_an_overlay_off_the_anchor_boxes_is_found_blended_and_through_a_jpeg_save(
    photos: list[np.ndarray], box: tuple[int, int, int, int], alpha: float, quality: int | None
) -> None:
    from agentiqa_cli.imperfect.corrupt import _resize

    x = photos[0].copy()
    left, top, right, bottom = box
    patch = _resize(photos[2], right - left, bottom - top)
    x[top:bottom, left:right] = alpha * patch + (1 - alpha) * x[top:bottom, left:right]
    want = Box.of_pixels(*box, x.shape[1], x.shape[0])
    for y in (x,) if quality is None else (x, _jpeg(x, quality)):
        found = checks.overlay(checks.shrink(y))
        assert found is not None and found.box is not None
        assert found.box.iou(want) > 0.8, found.box


def _photographed(
    scene: np.ndarray, objects: list[tuple[np.ndarray, tuple[int, int, int, int]]], seed: int
) -> np.ndarray:
    """``scene`` as a camera would take it with ``objects`` (picture, box at 4× the
    scene's size) in it: composed at 4×, through a lens (Gaussian σ 1.5 px at 4×),
    area-averaged down and given one sensor noise (σ 0.01) everywhere."""
    from scipy import ndimage

    from agentiqa_cli.imperfect.corrupt import _resize

    h, w = scene.shape[:2]
    x = _resize(scene, 4 * w, 4 * h)
    for picture, (left, top, right, bottom) in objects:
        x[top:bottom, left:right] = _resize(picture, right - left, bottom - top)
    x = ndimage.gaussian_filter(x, (1.5, 1.5, 0)).reshape(h, 4, w, 4, 3).mean(axis=(1, 3))
    noise = np.random.default_rng(seed).normal(0.0, 0.01, x.shape)
    return np.clip(x + noise, 0, 1).astype(np.float32)


@pytest.mark.parametrize("box", [(60, 40, 160, 120), (140, 100, 230, 150)])
@pytest.mark.parametrize("quality", [None, 90])
def test_a_real_rectangle_is_not_an_overlay_but_the_same_picture_pasted_is(
    photos: list[np.ndarray], box: tuple[int, int, int, int], quality: int | None
) -> None:
    """A picture that was in the scene (a print on a wall: its edges spread by the lens and
    the resize, the noise the same as around it) has every step edge the overlay check
    reads, and is not an overlay; the same picture pasted afterwards with a noise of its
    own changes at one pixel along each side, and is one."""
    from agentiqa_cli.imperfect.corrupt import _resize

    left, top, right, bottom = box
    sub = (4 * left + 1, 4 * top + 2, 4 * right + 3, 4 * bottom + 1)  # between pixels
    real = _photographed(photos[0], [(photos[2], sub)], seed=0)
    pasted = _photographed(photos[0], [], seed=0)
    patch = _resize(photos[2], right - left, bottom - top)
    noise = np.random.default_rng(1).normal(0.0, 0.03, patch.shape)
    pasted[top:bottom, left:right] = np.clip(patch + noise, 0, 1)
    if quality is not None:
        real, pasted = _jpeg(real, quality), _jpeg(pasted, quality)
    g = checks.luma(pasted)
    assert (checks.box_spill(g, box) or 1.0) < checks.OVERLAY_SPILL
    assert (checks.box_spill(checks.luma(real), box) or 0.0) > checks.OVERLAY_SPILL
    found = checks.overlay(pasted)
    assert found is not None and found.box is not None
    assert found.box.iou(Box.of_pixels(*box, g.shape[1], g.shape[0])) > 0.9
    assert checks.overlay(real) is None
    if quality is None:  # the step edges alone (what the check read before) take it for one
        assert checks.overlay_boxes(real, spill=False)


def test_the_spill_of_a_one_pixel_step_and_of_a_spread_one() -> None:
    rng = np.random.default_rng(0)
    texture = rng.normal(0.0, 0.02, (200, 100)).astype(np.float32)
    step = texture + (np.arange(100) >= 50) * 0.4  # two pictures meeting at column 50
    ramp = texture + np.clip((np.arange(100) - 48.5) / 2, 0, 1) * 0.4  # over two pixels
    faint = texture * 0.2  # a change of hue only: luma barely steps
    assert abs(checks.side_spill(step.astype(np.float32), 50, 0, 200) or 1.0) < 0.1
    assert (checks.side_spill(ramp.astype(np.float32), 50, 0, 200) or 0.0) > 0.5
    assert checks.side_spill(faint, 50, 0, 200) is None


@pytest.mark.parametrize("gain", [1.55, 1.7])
def test_an_over_exposure_is_found_after_a_jpeg_save(photos: list[np.ndarray], gain: float) -> None:
    bright = _jpeg(np.clip(photos[0] * gain, 0, 1), 85)
    assert checks.brightness(bright) is not None
    assert checks.brightness(_jpeg(photos[0], 85)) is None


def test_letterbox_is_cropped_back(photos: list[np.ndarray]) -> None:
    x = photos[1]
    h, w = x.shape[:2]
    boxed = np.zeros((h + 40, w, 3), np.float32)
    boxed[20 : 20 + h] = x
    (found,) = [f for f in checks.check(boxed) if f.type == "borders"]
    assert np.allclose(apply(boxed, found.operations), x)


def test_fixes_undo_geometry_exactly(photos: list[np.ndarray]) -> None:
    x = photos[0]
    for kind in ("rotation", "flip", "expand"):
        bad, oracle, _ = corrupt(kind, x, photos[1:], np.random.default_rng(1))
        assert np.array_equal(apply(bad, oracle), x), kind


def test_a_region_found_in_pixels_is_cut_back_to_exactly_those_pixels() -> None:
    """The one ``records.Box``: a region a check measured in pixels (even one pixel, 1% of
    a 100 px side) is a valid box, and the crop/fill operation touches exactly it."""
    for w, h in ((100, 100), (333, 241), (1000, 7)):
        for left in range(0, w - 1, 7):
            box = Box.of_pixels(left, 0, left + 1, h, w, h)
            assert box.pixels(w, h) == (left, 0, left + 1, h), (w, left)
    x = np.zeros((100, 100, 3), np.float32)
    filled = apply(x, [Fill(bbox=Box.of_pixels(29, 2, 30, 98, 100, 100))])
    assert np.argwhere(filled[50, :, 0] == 1.0).ravel().tolist() == [29]
    # a model's box covers every pixel it touches (Q-Probe Eq. 9), on any image size
    assert Box(x1=0.5, y1=0.0, x2=0.75, y2=1.0).pixels(333, 10) == (166, 0, 250, 10)
    assert (
        describe(Crop(bbox=Box(x1=0.0, y1=0.1, x2=0.5, y2=1.0))) == "crop:0.000,0.100,0.500,1.000"
    )


def test_bounded_operations_refuse_bad_values() -> None:
    with pytest.raises(ValidationError):
        Box(x1=0.5, y1=0.1, x2=1.2, y2=0.9)  # out of range
    with pytest.raises(ValidationError):
        Box(x1=0.5, y1=0.1, x2=0.4, y2=0.9)  # empty
    with pytest.raises(ValidationError):
        FixReply.model_validate({"operations": [{"tool": "rotate", "degrees": 45}]})
    with pytest.raises(ValidationError):
        FixReply.model_validate({"operations": [{"tool": "sharpen"}]})
    with pytest.raises(ValidationError):
        FixReply.model_validate({"operations": [{"tool": "deblur"}] * 5})
    ok = FixReply.model_validate({"operations": [{"tool": "rotate", "degrees": 90}]})
    assert ok.operations == [Rotate(degrees=90)]


def test_anchor_boxes_tile_the_corners() -> None:
    assert anchor_box("TL", 0.5, 100, 60) == (0, 0, 50, 30)
    assert anchor_box("BR", 0.25, 100, 60) == (75, 45, 100, 60)
    assert anchor_box("C", 0.5, 100, 60) == (25, 15, 75, 45)


def test_a_photo_of_a_screen_is_cropped_to_the_screen(photos: list[np.ndarray]) -> None:
    x, oracle, _ = corrupt("recapture", photos[0], photos[1:], np.random.default_rng(2))
    (found,) = [f for f in checks.check(x) if f.type == "recapture"]
    assert found.box is not None and found.box.iou(oracle[0].bbox) > 0.8  # type: ignore[union-attr]
    assert not any(f.type == "recapture" for p in photos for f in checks.check(p))
