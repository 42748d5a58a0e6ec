"""Default tool sets and detector categories live on the tool cards, and every reader uses them."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pandas as pd
import pytest

from agentiqa_cli.categories import DETECTOR_CATEGORY
from agentiqa_cli.errors import ConfigError
from agentiqa_cli.resources import default_cards_dir
from agentiqa_cli.tools.cards import CardSet, load_cards
from tests.test_cli_score import invoke


@pytest.fixture(scope="module")
def shipped() -> CardSet:
    return load_cards(default_cards_dir())


def test_the_shipped_default_sets(shipped: CardSet) -> None:
    assert [c.name for c in shipped.default_set(has_reference=False)] == [
        *("sharpness", "noise", "pixelation"),
        *("underexposure", "overexposure", "contrast", "posterization"),
        # the camera model's heads and the resolution detector (trained on camera photos)
        *("camera_blur", "camera_noise", "camera_compression", "camera_under", "camera_over"),
        "resolution",
        "jpeg_quality",  # the JPEG quality of the coarsest save, from the pixels
        "ringing",  # a drawing's coarse save, where clipping at white hid the lattice
        "page_sharpness",  # a page's blur, which the camera model (photographs) cannot read
    ]
    assert [c.name for c in shipped.default_set(has_reference=True)] == [
        *("psnr", "ssim", "gmsd", "detail"),
    ]
    assert all(c.mode == "NR" and not c.weights for c in shipped.default_set(False))


def test_weight_free_is_every_card_of_the_mode_without_weights(shipped: CardSet) -> None:
    free = shipped.weight_free("NR")
    assert {c.name for c in free} == {c.name for c in shipped if c.mode == "NR" and not c.weights}
    default = shipped.default_set(False)
    assert [c.name for c in free[: len(default)]] == [c.name for c in default]
    assert {"piqe", "colorfulness"} <= {c.name for c in free}
    assert "niqe" not in {c.name for c in free}  # needs its parameter file


def test_a_detectors_category_is_the_first_of_its_distortions(shipped: CardSet) -> None:
    assert shipped.get("pixelation").category == "Compression"  # as the planner files it
    assert shipped.get("psnr").category is None  # no strengths listed
    # categories.py names each detector's category; it must agree with the card
    for name, category in DETECTOR_CATEGORY.items():
        assert shipped.get(name).category == category, name


def _cards_copy(tmp_path: Path) -> Path:
    folder = tmp_path / "cards"
    shutil.copytree(default_cards_dir(), folder)
    return folder


def _set_order(folder: Path, name: str, order: int | None) -> None:
    path = folder / f"{name}.yaml"
    text = re.sub(r"^default_order: .*\n", "", path.read_text(encoding="utf-8"), flags=re.M)
    path.write_text(text + ("" if order is None else f"default_order: {order}\n"), "utf-8")


def test_score_without_tools_runs_the_default_set_of_the_cards(tmp_path: Path, photo: Path) -> None:
    folder = _cards_copy(tmp_path)
    for card in load_cards(folder).default_set(has_reference=False):
        _set_order(folder, card.name, None)
    _set_order(folder, "contrast", 1)
    _set_order(folder, "noise", 2)
    out = tmp_path / "scores.csv"
    code, _ = invoke("score", photo, "--tool-cards", folder, "-o", out, "-q")
    assert code == 0
    columns = [c for c in pd.read_csv(out).columns if c.endswith("_norm")]
    assert columns == ["contrast_norm", "noise_norm"]


def test_a_card_folder_without_defaults_asks_for_tools(tmp_path: Path, photo: Path) -> None:
    folder = _cards_copy(tmp_path)
    for card in load_cards(folder).default_set(has_reference=False):
        _set_order(folder, card.name, None)
    code, _ = invoke("score", photo, "--tool-cards", folder, "-o", tmp_path / "s.csv", "-q")
    assert code == 2


def test_two_cards_in_the_same_place_are_refused(tmp_path: Path) -> None:
    folder = _cards_copy(tmp_path)
    _set_order(folder, "noise", 1)  # sharpness is 1 too
    with pytest.raises(ConfigError, match=r"(noise and sharpness|sharpness and noise) both"):
        load_cards(folder)
    _set_order(folder, "noise", 8)
    _set_order(folder, "psnr", 3)
    _set_order(folder, "gmsd", 1)  # FR and NR sets are numbered separately: sharpness is 1
    cards = load_cards(folder)
    assert [c.name for c in cards.default_set(True)] == ["gmsd", "ssim", "psnr", "detail"]
    assert cards.default_set(False)[0].name == "sharpness"
