"""Departures from AgenticIQA that were bugs (issue: fidelity to the paper)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from agentiqa_cli.batch import Decoder, Pair
from agentiqa_cli.config import Settings
from agentiqa_cli.imaging.discover import Job
from agentiqa_cli.vlm.fake import ScriptedVLM
from tests.conftest import natural_like, save_rgb
from tests.test_agent import run_agent, summary_reply
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


# -- item 6: per-object tool execution ------------------------------------------------------------
def _half_blurred(tmp_path: Path) -> Pair:
    """Crisp 8-px colour blocks; the right half blurred (the sharpest region, the left half,
    is what the whole image's sharpness reads)."""
    from scipy.ndimage import gaussian_filter

    cells = np.random.default_rng(3).random((20, 32, 3)).astype(np.float32)
    img = np.kron(cells, np.ones((8, 8, 1), np.float32))
    img[:, 128:] = gaussian_filter(img[:, 128:], sigma=(4, 4, 0))
    path = save_rgb(tmp_path / "face.png", img)
    job = Job(image=path, root=tmp_path)
    image, ref = Decoder(10**8).decode(job)
    return Pair(job, image, ref, key="k")


def _object_script(locate: dict[str, object]) -> dict[str, object]:
    plan = {
        "query_type": "IQA", "query_scope": ["the face"], "distortion_source": "explicit",
        "distortions": {"the face": ["Blurs"]}, "reference_mode": "No-Reference",
        "required_tools": None,
        "plan": {"distortion_detection": True, "distortion_analysis": True,
                 "tool_selection": True, "tool_execute": True},
    }  # fmt: skip
    examine = {"distortion_analysis": {"the face": [
        {"type": "Blurs", "severity": "moderate", "explanation": "soft"}]}}  # fmt: skip
    return {
        "planner": plan,
        "examine": examine,
        "select": {"selected_tools": {"the face": {"Blurs": "sharpness"}}},
        "locate": locate,
        "summarize": lambda r: summary_reply("fair"),
    }


def test_a_distortion_of_a_named_object_is_measured_on_its_located_region(tmp_path: Path) -> None:
    settings = Settings(concurrency=1)
    vlm = ScriptedVLM(_object_script({"found": True, "box": {"x1": 0.5, "y1": 0.0, "x2": 1.0, "y2": 1.0}}))  # fmt: skip
    trace = tmp_path / "t.jsonl"
    (result,) = run_agent(settings, vlm, [_half_blurred(tmp_path)], trace, "Is the face in focus?")
    # the Blurs instrument: whichever of its built-in detectors measured the problem
    face = next(t for t in result.tools if t.scope == "the face")
    whole = next(t for t in result.tools if t.tool == face.tool and t.scope is None)
    assert face.tool in ("sharpness", "camera_blur")
    assert face.distortion == "Blurs" and face.norm is not None and whole.norm is not None
    assert face.norm < whole.norm - 0.5  # the blurred half reads as blurred on its own
    assert len(vlm.calls("locate")) == 1 and vlm.calls("locate")[0].messages[-1].images
    assert f"{face.tool}@the face={face.norm:.3f}" in result.tools_cell()
    events = [json.loads(x) for x in trace.read_text().splitlines()]
    assert any(e["step"] == "tool" and e.get("note") == "on the region of the face" for e in events)
    # the summarizer is told which reading is the object's
    summary_prompt = (
        vlm.calls("summarize")[0].messages[-1].text + vlm.calls("summarize")[0].messages[0].text
    )
    assert "(for Blurs of the face)" in summary_prompt


def test_an_object_not_found_keeps_the_whole_image_reading_only(tmp_path: Path) -> None:
    settings = Settings(concurrency=1)
    vlm = ScriptedVLM(_object_script({"found": False, "box": None}))
    trace = tmp_path / "t.jsonl"
    (result,) = run_agent(settings, vlm, [_half_blurred(tmp_path)], trace, "Is the face in focus?")
    assert result.status == "ok" and all(t.scope is None for t in result.tools)
    events = [json.loads(x) for x in trace.read_text().splitlines()]
    assert any("the face: not found" in (e.get("note") or "") for e in events)


def test_a_tool_chosen_for_two_categories_reads_as_the_first_on_the_image_and_the_object(
    tmp_path: Path,
) -> None:
    """One rule for the whole-image and the per-object reading of a tool chosen for several
    distortions: the first in the findings' order (not the select reply's order)."""
    from scipy.ndimage import gaussian_filter

    cells = np.random.default_rng(3).random((20, 32, 3)).astype(np.float32)
    img = gaussian_filter(np.kron(cells, np.ones((8, 8, 1), np.float32)), sigma=(4, 4, 0))
    job = Job(image=save_rgb(tmp_path / "soft.png", img), root=tmp_path)
    pair = Pair(job, *Decoder(10**8).decode(job), key="k")
    script = _object_script({"found": True, "box": {"x1": 0.5, "y1": 0.0, "x2": 1.0, "y2": 1.0}})
    script["examine"] = {"distortion_analysis": {"the face": [
        {"type": "Blurs", "severity": "moderate", "explanation": "soft"},
        {"type": "Sharpness", "severity": "moderate", "explanation": "no crisp edge"}]}}  # fmt: skip
    script["select"] = {"selected_tools": {"the face": {"Sharpness": "sharpness", "Blurs": "sharpness"}}}  # fmt: skip
    vlm = ScriptedVLM(script)
    from agentiqa_cli.resources import default_cards_dir

    # the signal detectors' cards only: with the camera model's, Blurs' worst reading is its
    # blur head and no one tool serves both categories
    cards = tmp_path / "cards"
    cards.mkdir()
    for card in default_cards_dir().glob("*.yaml"):
        if not card.name.startswith("camera_") and card.name != "resolution.yaml":
            (cards / card.name).write_bytes(card.read_bytes())
    settings = Settings(concurrency=1, cards_dir=cards)
    (result,) = run_agent(settings, vlm, [pair], tmp_path / "t.jsonl", "Is the face in focus?")
    # sharpness, the worst reading of both categories on this soft image, serves both
    assert {t.tool for t in result.tools if t.distortion} == {"sharpness"}, result.tools
    readings = {t.scope: t.distortion for t in result.tools if t.tool == "sharpness"}
    assert readings == {None: "Blurs", "the face": "Blurs"}
