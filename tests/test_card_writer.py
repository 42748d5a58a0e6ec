"""The one writer of logistic parameters: into card files and into calibration overlays."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from agentiqa_cli.errors import ConfigError
from agentiqa_cli.resources import default_cards_dir
from agentiqa_cli.tools.cards import (
    Logistic,
    load_card,
    load_overlay,
    write_card_logistic,
    write_overlay,
)

NEW = Logistic(
    params=[26.2656801612345, -4.27, 1.28597646812, 0.0, -8.0228064451],
    source="unit test: a refit on data that does not exist, with a source long enough to be "
    "folded over more than one line of the card file (it must read back unchanged)",
)


def _without_entry(text: str, key: str) -> list[str]:
    return re.sub(rf"^{key}:.*?(?=^\S|\Z)", "", text, flags=re.S | re.M).splitlines()


@pytest.mark.parametrize("name", ["pixelation", "psnr", "mad"])  # mad: logistic: null
def test_a_refit_changes_only_the_logistic_entry(tmp_path: Path, name: str) -> None:
    path = tmp_path / f"{name}.yaml"
    shutil.copy(default_cards_dir() / path.name, path)
    before_text, before = path.read_text(encoding="utf-8"), load_card(path)
    written = write_card_logistic(path, NEW)
    after_text, after = path.read_text(encoding="utf-8"), load_card(path)
    assert after == written
    assert _without_entry(after_text, "logistic") == _without_entry(before_text, "logistic")
    assert after.logistic is not None and after.logistic.source == NEW.source
    assert after.logistic.params == pytest.approx(NEW.params, rel=1e-9)
    assert after.model_dump(exclude={"logistic"}) == before.model_dump(exclude={"logistic"})
    assert max(len(line) for line in after_text.splitlines() if "source" in line) <= 100
    assert not list(tmp_path.glob("*.tmp"))


def test_notes_can_be_rewritten_with_the_parameters(tmp_path: Path) -> None:
    path = tmp_path / "psnr.yaml"
    shutil.copy(default_cards_dir() / path.name, path)
    notes = "Weight-free.  Two spaces and\na line break survive the round trip."
    card = write_card_logistic(path, NEW, notes=notes)
    assert card.notes == notes == load_card(path).notes
    assert load_card(path).name == "psnr"


def test_a_card_that_does_not_load_is_not_rewritten(tmp_path: Path) -> None:
    path = tmp_path / "psnr.yaml"
    path.write_text("name: psnr\nbackend: nowhere\n", encoding="utf-8")
    with pytest.raises(ConfigError):
        write_card_logistic(path, NEW)
    assert path.read_text(encoding="utf-8") == "name: psnr\nbackend: nowhere\n"


def test_overlay_round_trip_keeps_floats_exactly(tmp_path: Path) -> None:
    path = tmp_path / "overlay.yaml"
    write_overlay(path, {"psnr": NEW, "ssim": Logistic(params=[1, 2, 3, 4, 5], source="s")}, "a\nb")
    text = path.read_text(encoding="utf-8")
    assert text.startswith("# a\n# b\n")
    overlay = load_overlay(path)
    assert overlay == {"psnr": NEW, "ssim": Logistic(params=[1, 2, 3, 4, 5], source="s")}


def test_the_scripts_and_calibrate_use_the_package_writer() -> None:
    root = Path(__file__).resolve().parent.parent
    for script in ("scripts/fit_builtin_cards.py", "scripts/calibrate_cards.py"):
        text = (root / script).read_text(encoding="utf-8")
        assert "write_card_logistic" in text and ".write_text(" not in text, script
    calibrate = (root / "agentiqa_cli/bench/calibrate.py").read_text(encoding="utf-8")
    assert "yaml" not in calibrate and "write_overlay_file" in calibrate
