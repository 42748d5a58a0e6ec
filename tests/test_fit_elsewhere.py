"""pyiqa no-reference curves fitted on other content say so (issue 24, item 6).

NIQE's shipped curve (Table 5, fitted on KADID-10k) never reaches 3.5 and PIQE's (fitted
on synthetic distortions of eight photos) stays below 3.1, so on a folder of camera photos
every image lands in one level. A run using such a card warns once, naming the fit data
and the curve's span, and each row's ToolScore names it (``fit``); a card the run's
``--calibration`` overlay refits is not flagged, nor are the built-in detectors or
full-reference cards.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agentiqa_cli.resources import default_cards_dir
from agentiqa_cli.tools.cards import CardSet, Logistic, load_cards, write_overlay
from tests.conftest import natural_like, save_rgb
from tests.test_cli_score import invoke

CARDS = load_cards(default_cards_dir())


def test_only_shipped_pyiqa_nr_curves_are_fitted_elsewhere() -> None:
    niqe, piqe = CARDS.get("niqe"), CARDS.get("piqe")
    assert CARDS.fitted_elsewhere(niqe) == "AgenticIQA Table 5 (fitted on KADID-10k)"
    assert CARDS.fitted_elsewhere(piqe) is not None
    assert piqe.logistic is not None and ";" in piqe.logistic.source
    assert CARDS.fitted_elsewhere(piqe) == piqe.logistic.source.split(";")[0]
    for name in ("sharpness", "noise", "psnr", "lpips", "mad"):  # builtin, FR, no curve
        assert CARDS.fitted_elsewhere(CARDS.get(name)) is None, name
    refit = CARDS.with_overlay({"niqe": Logistic(params=[4, 0.2, 10, 0, 3], source="mine")})
    assert refit.fitted_elsewhere(refit.get("niqe")) is None
    assert refit.fitted_elsewhere(refit.get("piqe")) is not None
    assert CardSet(list(CARDS)).fitted_elsewhere(niqe) is not None


def test_the_note_gives_the_curves_reach() -> None:
    lo, hi = CARDS.get("niqe").curve_span()
    assert lo == pytest.approx(1.44, abs=0.01) and hi == pytest.approx(3.44, abs=0.01)
    note = CARDS.fit_note(CARDS.get("niqe"))
    assert note is not None and "KADID-10k" in note and "1.44-3.44" in note
    assert "agentiqa calibrate" in note
    assert CARDS.fit_note(CARDS.get("sharpness")) is None


def test_score_warns_once_and_each_row_names_the_fit_data(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for i in range(2):
        save_rgb(tmp_path / "in" / f"{i}.png", natural_like(128, 160, seed=i))
    code, out = invoke("score", tmp_path / "in", "-t", "piqe,sharpness", "--json",
                       "-o", tmp_path / "a.csv")  # fmt: skip
    assert code == 0, out
    err = capsys.readouterr().err
    assert err.count("piqe: its 1-5 curve was fitted on scripts/calibrate_cards.py") == 1
    assert "sharpness: its" not in err
    rows = json.loads(out)["results"]
    assert len(rows) == 2
    for row in rows:
        tools = {t["tool"]: t for t in row["tools"]}
        assert tools["piqe"]["fit"] == CARDS.fitted_elsewhere(CARDS.get("piqe"))
        assert tools["sharpness"]["fit"] is None


def test_a_calibration_overlay_for_the_run_clears_the_note(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    img = save_rgb(tmp_path / "a.png", natural_like(128, 160))
    overlay = tmp_path / "cal.yaml"
    write_overlay(overlay, {"piqe": Logistic(params=[4, -0.05, 50, 0, 3], source="my photos")})
    code, out = invoke("score", img, "-t", "piqe", "--calibration", overlay, "--json",
                       "-o", tmp_path / "a.csv")  # fmt: skip
    assert code == 0, out
    assert "fitted on" not in capsys.readouterr().err
    (row,) = json.loads(out)["results"]
    assert row["tools"][0]["fit"] is None
