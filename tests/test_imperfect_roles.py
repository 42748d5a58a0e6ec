"""The fix and locate roles: rules answers, a scripted model, refused replies."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import numpy as np

from agentiqa_cli.asking.asker import Asker
from agentiqa_cli.asking.prompts import load_prompts
from agentiqa_cli.asking.rules import RulesVLM
from agentiqa_cli.imperfect.corrupt import corrupt
from agentiqa_cli.imperfect.records import Fill, Rotate
from agentiqa_cli.imperfect.roles import Decision, decide
from agentiqa_cli.io.trace import TraceWriter
from agentiqa_cli.records import Box, Usage
from agentiqa_cli.resources import default_cards_dir, default_prompts_dir
from agentiqa_cli.tools.cards import load_cards
from agentiqa_cli.vlm.base import VLM, ImagePart
from agentiqa_cli.vlm.fake import ScriptedVLM

PROMPTS = load_prompts(default_prompts_dir())
IMAGE = ImagePart(sha256="ab" * 32, path="x.png")


def _photo(seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    base = rng.random((6, 8, 3)).astype(np.float32)
    from scipy import ndimage

    return np.clip(ndimage.zoom(base, (32, 32, 1), order=3), 0, 1).astype(np.float32)


def run(vlm: VLM, x: np.ndarray, trace_path: Path) -> tuple[Decision, list[dict[str, object]]]:
    writer = TraceWriter(trace_path)
    asker = Asker(vlm, PROMPTS, reasks=1)
    d = asyncio.run(decide(asker, x, IMAGE, "How is it?", Usage(), writer.bind("x.png")))
    writer.close()
    return d, [json.loads(line) for line in trace_path.read_text().splitlines()]


def test_rules_backend_fills_a_pasted_overlay(tmp_path: Path) -> None:
    clean, other = _photo(1), _photo(2)
    x, oracle, _ = corrupt("overlay", clean, [other], np.random.default_rng(0))
    d, events = run(RulesVLM(load_cards(default_cards_dir())), x, tmp_path / "t.jsonl")
    assert [f.type for f in d.found][:1] == ["overlay"]
    assert isinstance(d.operations[0], Fill)  # (this smooth test image also reads as soft)
    assert d.operations[0].bbox.iou(oracle[0].bbox) > 0.9  # type: ignore[union-attr]
    assert any(e["step"] == "imperfect" and e.get("note") == "decision" for e in events)


def test_a_model_box_to_locate_is_asked_for(tmp_path: Path) -> None:
    vlm = ScriptedVLM(
        {
            "fix": {"imperfections": ["watermark", "rotation"],
                    "operations": [{"tool": "rotate", "degrees": 270},
                                   {"tool": "fill", "bbox": None, "target": "the watermark"}]},
            "locate": {"found": True, "box": {"x1": 0.6, "y1": 0.9, "x2": 0.98, "y2": 0.97}},
        }
    )  # fmt: skip
    d, _ = run(vlm, _photo(3), tmp_path / "t.jsonl")
    assert d.operations[0] == Rotate(degrees=270)
    assert isinstance(d.operations[1], Fill) and d.operations[1].bbox is not None
    assert d.operations[1].bbox.x1 == 0.6
    assert [r.role for r in vlm.requests] == ["fix", "locate"]
    assert vlm.requests[0].json_schema is not None  # constrained by the bounded schema


def test_out_of_range_box_and_unknown_tool_are_refused_with_a_note(tmp_path: Path) -> None:
    bad = [
        {"operations": [{"tool": "crop", "bbox": {"x1": 0.2, "y1": 0.2, "x2": 1.4, "y2": 0.9}}]},
        {"operations": [{"tool": "sharpen"}]},
    ]
    vlm = ScriptedVLM({"fix": bad})
    d, events = run(vlm, _photo(4), tmp_path / "t.jsonl")
    assert d.operations == [] and d.refused and "fix refused" in d.refused[0]
    notes = [e.get("note", "") for e in events]
    assert any("fix refused" in n for n in notes)
    assert len(vlm.calls("fix")) == 2  # asked again once, then refused


def test_degrees_outside_the_enum_are_refused(tmp_path: Path) -> None:
    vlm = ScriptedVLM({"fix": {"operations": [{"tool": "rotate", "degrees": 45}]}})
    d, _ = run(vlm, _photo(5), tmp_path / "t.jsonl")
    assert d.operations == [] and d.refused


def test_the_rules_crop_the_quadrant_the_query_names() -> None:
    from agentiqa_cli.imperfect.records import Crop, Imperfection
    from agentiqa_cli.imperfect.roles import FixInput, rules_fix

    hint = Imperfection(type="expand", reason="collage",
                        operations=[Crop(bbox=Box(x1=0.0, y1=0.0, x2=0.5, y2=0.5))])  # fmt: skip
    asked = FixInput(query="According to the bottom-right part of the image, how is it?",
                     width=8, height=8, hints=[hint])  # fmt: skip
    (op,) = rules_fix(asked).operations
    assert isinstance(op, Crop) and op.bbox == Box(x1=0.5, y1=0.5, x2=1.0, y2=1.0)
    plain = asked.model_copy(update={"query": "How is the overall quality of this image?"})
    assert rules_fix(plain).operations == hint.operations
