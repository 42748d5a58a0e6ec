"""agentiqa's own full-reference measure ``detail``: the share of the reference's band-pass
detail the image lost or got wrong (tools/native.py), its card and the runner's support."""

from __future__ import annotations

import io
import itertools
import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from PIL import Image
from scipy import ndimage

from agentiqa_cli.bench.synth import bundled_photos
from agentiqa_cli.errors import ConfigError
from agentiqa_cli.imaging.load import LoadedImage
from agentiqa_cli.resources import default_cards_dir
from agentiqa_cli.tools.cards import CardSet, load_cards
from agentiqa_cli.tools.native import BUILTIN_FR, detail
from agentiqa_cli.tools.runner import ToolRunner


def _img(px: np.ndarray, name: str = "x.png") -> LoadedImage:
    """As decoded from an 8-bit file."""
    px = np.round(np.clip(px, 0, 1) * 255) / 255
    return LoadedImage(path=Path(name), pixels=np.ascontiguousarray(px, np.float32), sha256=name)


def _jpeg(px: np.ndarray, quality: int) -> np.ndarray:
    buf = io.BytesIO()
    Image.fromarray((np.clip(px, 0, 1) * 255).round().astype(np.uint8)).save(
        buf, "JPEG", quality=quality
    )
    buf.seek(0)
    return np.asarray(Image.open(buf).convert("RGB"), dtype=np.float32) / 255


def _blur(px: np.ndarray, sigma: float) -> np.ndarray:
    return ndimage.gaussian_filter(px, (sigma, sigma, 0), mode="reflect")


def _noise(px: np.ndarray, sigma: float, seed: int = 0) -> np.ndarray:
    return px + np.random.default_rng(seed).normal(0, sigma, px.shape).astype(np.float32)


@pytest.fixture(scope="module")
def photo() -> np.ndarray:
    (px,) = bundled_photos(["astronaut"])
    im = Image.fromarray((px * 255 + 0.5).astype(np.uint8)).resize((256, 256))
    return np.asarray(im, dtype=np.float32) / 255


@pytest.fixture(scope="module")
def gradient() -> np.ndarray:
    """A smooth two-colour gradient, as wallpapers are."""
    h, w = 192, 256
    t = np.linspace(0, 1, w, dtype=np.float32)[None, :, None] * np.ones((h, 1, 1), np.float32)
    s = np.linspace(0, 1, h, dtype=np.float32)[:, None, None]
    a, b = np.array([0.15, 0.25, 0.55], np.float32), np.array([0.85, 0.45, 0.30], np.float32)
    return (a * (1 - t) + b * t) * (0.8 + 0.2 * s)


@pytest.fixture(scope="module")
def cards() -> CardSet:
    return load_cards(default_cards_dir())


def test_identical_pair_reads_the_top(photo: np.ndarray, cards: CardSet) -> None:
    ref = _img(photo)
    assert detail(ref, ref) == 0.0
    assert detail(_img(photo, "copy.png"), ref) == 0.0
    card = cards.get("detail")
    assert card.identical == 0 and card.normalize(0.0) == pytest.approx(5.0)


@pytest.mark.parametrize("distort", ["blur", "noise"])
def test_monotone_in_strength(photo: np.ndarray, distort: str) -> None:
    ref = _img(photo)
    if distort == "blur":
        strengths = [0.5, 1.0, 2.0, 4.0, 8.0]
        reads = [detail(_img(_blur(photo, s)), ref) for s in strengths]
    else:
        strengths = [0.01, 0.03, 0.06, 0.12, 0.25]
        reads = [detail(_img(_noise(photo, s)), ref) for s in strengths]
    assert all(0 < a < b < 1 for a, b in itertools.pairwise(reads)), reads


def test_shapes_must_match(photo: np.ndarray) -> None:
    with pytest.raises(ValueError, match="reference is 200×256"):
        detail(_img(photo), _img(photo[:256, :200]))


def test_flat_images_do_not_divide_by_zero() -> None:
    grey = np.full((64, 48, 3), 0.5, np.float32)
    assert detail(_img(grey), _img(grey)) == 0.0
    shifted = detail(_img(grey + 0.1), _img(grey))  # a brightness step has no band-pass detail
    assert math.isfinite(shifted) and shifted == pytest.approx(0.0, abs=1e-9)
    noisy = detail(_img(_noise(grey, 0.1)), _img(grey))
    assert math.isfinite(noisy) and noisy > 0.2
    tiny = np.full((5, 3, 3), 0.2, np.float32)  # smaller than one octave: nothing to compare
    assert detail(_img(tiny + 0.3), _img(tiny)) == 0.0


def test_invisible_errors_on_a_smooth_gradient_stay_mild(
    gradient: np.ndarray, photo: np.ndarray, cards: CardSet
) -> None:
    """The visibility floor: q95 JPEG and sigma-1 (of 255) noise on a flat graphic are not a
    large share of its near-zero detail, while heavy noise on it is."""
    card = cards.get("detail")
    ref = _img(gradient)
    for faint in (_jpeg(gradient, 95), _noise(gradient, 1 / 255)):
        assert card.normalize(detail(_img(faint), ref)) > 4.5
    assert card.normalize(detail(_img(_noise(gradient, 40 / 255)), ref)) < 2.5
    # the same faint noise on a photo reads mild too
    assert card.normalize(detail(_img(_noise(photo, 1 / 255)), _img(photo))) > 4.5


def test_heavy_blur_of_a_low_contrast_photo_reads_low(photo: np.ndarray, cards: CardSet) -> None:
    """Where psnr/ssim average a blur away: a dim, low-contrast copy of a photo (its detail
    mostly in a small part of the frame) blurred hard still loses most of its detail."""
    dim = 0.2 + 0.15 * photo
    dim[:, 128:] = dim[:, 128:].mean(axis=(0, 1))  # half the frame flat
    card = cards.get("detail")
    blurred = detail(_img(_blur(dim, 6.0)), _img(dim))
    assert card.normalize(blurred) < 2.5


def test_a_jpeg_resave_reads_the_same(photo: np.ndarray) -> None:
    """The reading measures the visible defect, not how it was made: re-saving the distorted
    image as a good JPEG moves it little."""
    ref = _img(photo)
    for distorted in (_blur(photo, 3.0), _noise(photo, 0.08)):
        a = detail(_img(distorted), ref)
        b = detail(_img(_jpeg(distorted, 92)), ref)
        assert b == pytest.approx(a, rel=0.15), (a, b)


def test_runner_runs_the_builtin_fr_card(photo: np.ndarray, cards: CardSet) -> None:
    card = cards.get("detail")
    assert card.backend == "builtin" and card.mode == "FR" and card.lower_better
    # not a signal detector: the agent does not read it as evidence on every image
    assert not card.detector and cards.get("sharpness").detector
    assert "detail" in [c.name for c in cards.default_set(has_reference=True)]
    assert "detail" not in [c.name for c in cards.default_set(has_reference=False)]
    runner = ToolRunner(cards, "auto")
    dist, ref = _img(_blur(photo, 2.0)), _img(photo)
    score = runner.run(card, dist, ref)
    assert score.error is None and score.raw == pytest.approx(detail(dist, ref))
    assert score.norm is not None and 1.0 <= score.norm < 5.0
    assert "needs --ref" in (runner.run(card, dist, None).error or "")
    # a builtin FR card must name a measure of BUILTIN_FR, in its direction
    bad = card.model_copy(update={"name": "nope", "metric": "sharpness"})
    with pytest.raises(ConfigError, match="no builtin full-reference measure"):
        ToolRunner(cards, "cpu")._build(bad)
    wrong = card.model_copy(update={"name": "up", "lower_better": False})
    with pytest.raises(ConfigError, match="lower_better"):
        ToolRunner(cards, "cpu")._build(wrong)
    assert set(BUILTIN_FR) == {"detail"}


def test_default_fr_score_never_imports_torch(tmp_path: Path, photo: np.ndarray) -> None:
    for im, name in ((_blur(photo, 2.0), "d"), (photo, "r")):
        (tmp_path / name).mkdir()
        Image.fromarray((im * 255).round().astype(np.uint8)).save(tmp_path / name / "a.png")
    code = (
        "import sys; from agentiqa_cli.cli import main\n"
        "try:\n    main()\nexcept SystemExit as e:\n    code = e.code\n"
        "print('TORCH' if 'torch' in sys.modules else 'NO-TORCH', code)"
    )
    out = tmp_path / "o.csv"
    args = ["score", str(tmp_path / "d"), "--ref", str(tmp_path / "r"), "-o", str(out), "-q"]
    r = subprocess.run(
        [sys.executable, "-c", code, *args],
        capture_output=True,
        text=True,
        cwd=Path(__file__).resolve().parent.parent,
    )
    assert r.stdout.strip().splitlines()[-1].startswith("NO-TORCH"), r.stdout + r.stderr
    assert "detail_raw" in out.read_text().splitlines()[0]
