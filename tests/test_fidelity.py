"""Departures from seed 000 that were bugs (issue: fidelity to the paper)."""

from __future__ import annotations

import json
from pathlib import Path

from tests.conftest import natural_like, save_rgb
from tests.test_cli_score import invoke


def test_an_uncalibrated_tool_is_reported_but_not_fused(tmp_path: Path) -> None:
    img = save_rgb(tmp_path / "a.png", natural_like(64, 64, seed=1))
    ref = save_rgb(tmp_path / "r.png", natural_like(64, 64, seed=2))
    code, out = invoke("score", img, "--ref", ref, "-t", "mad,psnr", "--json", "-q",
                       "-o", tmp_path / "x.csv")  # fmt: skip
    assert code == 0, out
    (row,) = json.loads(out)["results"]
    tools = {t["tool"]: t for t in row["tools"]}
    assert tools["mad"]["norm"] is not None and not tools["mad"]["calibrated"]
    assert row["score"] == tools["psnr"]["norm"]  # mad's linear map is not on the 1-5 scale
    code, out = invoke("score", img, "--ref", ref, "-t", "mad", "--json", "-q",
                       "-o", tmp_path / "y.csv")  # fmt: skip
    (row,) = json.loads(out)["results"]
    assert code == 3 and row["score"] is None and "agentiqa calibrate" in row["error"]


def test_non_monotone_curves_are_warned_on_the_card_and_by_tools_show(
    capsys: object,
) -> None:
    from agentiqa_cli.resources import default_cards_dir
    from agentiqa_cli.tools.cards import load_cards

    flagged = [c for c in load_cards(default_cards_dir()) if c.curve_problem()]
    assert {"ckdn", "wadiqam_nr", "brisque"} <= {c.name for c in flagged}
    for card in flagged:
        assert "monoton" in card.notes.lower(), card.name  # said on the card too
    assert load_cards(default_cards_dir()).get("sharpness").curve_problem() is None
    code, _ = invoke("tools", "show", "ckdn")
    err = capsys.readouterr().err  # type: ignore[attr-defined]
    assert code == 0 and "not monotone" in err and "agentiqa calibrate" in err
