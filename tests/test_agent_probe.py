"""Probing inside the agent: `assess --zoom`, the rules version and a scripted VLM."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from agentiqa_cli.batch import Decoder, Pair
from agentiqa_cli.config import Settings
from agentiqa_cli.imaging.discover import Job
from agentiqa_cli.vlm.base import VLMRequest
from agentiqa_cli.vlm.fake import ScriptedVLM
from agentiqa_cli.wiring import build_runtime
from tests.conftest import natural_like, save_rgb
from tests.test_agent import EXAMINE_NOISE, PLAN_GLOBAL, SELECT_NOISE, summary_reply
from tests.test_cli_score import invoke
from tests.test_probe import _mosaic, _photo_canvas


@pytest.fixture(scope="module")
def canvases(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("zoom")
    clean = _photo_canvas()
    return {
        "clean": save_rgb(folder / "clean.png", clean),
        "mosaic": save_rgb(folder / "mosaic.png", _mosaic(clean)),
    }


def _assess(path: Path, tmp: Path, zoom: str) -> dict[str, Any]:
    code, out = invoke("assess", path, "--zoom", zoom, "--json", "-q", "-o", tmp / f"{zoom}.csv")
    assert code == 0, out
    row: dict[str, Any] = json.loads(out)["results"][0]
    return row


def test_zoom_finds_a_local_mosaic_the_global_view_misses(
    canvases: dict[str, Path], tmp_path: Path
) -> None:
    off = _assess(canvases["mosaic"], tmp_path, "off")
    on = _assess(canvases["mosaic"], tmp_path, "on")
    clean = _assess(canvases["clean"], tmp_path, "on")
    assert not [d for d in off["distortions"] if d["scope"].startswith("crop")]
    local = [d for d in on["distortions"] if d["scope"].startswith("crop")]
    assert local, on["distortions"]
    assert on["score"] < off["score"]
    # the probe's penalty moved the score after the answer was written: the words follow it
    for row in (off, on, clean):
        assert row["answer"].lower().startswith(f"{row['level']} quality"), row
    assert not [d for d in clean["distortions"] if d["scope"].startswith("crop")]
    assert clean["score"] > on["score"]
    # 2048² is above 4× the default pixel budget, but the rules backend reads every pixel
    # already: auto does not probe without a VLM (a large photo is not judged harsher)
    assert _assess(canvases["mosaic"], tmp_path, "auto")["score"] == pytest.approx(off["score"])


def _always_crop(req: VLMRequest) -> dict[str, Any]:
    x = 0.15 * (req.inputs.turn - 1)  # type: ignore[union-attr]  # a new box every turn
    return {"thought": "look closer", "tentative_score": 4.0, "action": "crop",
            "boxes": [[x, 0.1, x + 0.15, 0.3]]}  # fmt: skip


def _all_degraded(req: VLMRequest) -> dict[str, Any]:
    ids = req.inputs.dynamic()["crop_ids"]  # type: ignore[union-attr]
    crops = [{"id": i, "status": "Degraded", "type": "mosaic", "reasoning": "blocks",
              "penalty": 0.1} for i in ids]  # fmt: skip
    return {"base_score": 4.0, "crops": crops, "summary": "blocks", "final_score": 4.0}


@pytest.mark.parametrize("turns", [1, 3, 6])
def test_a_model_that_always_crops_gets_at_most_zoom_turns_calls(
    tmp_path: Path, turns: int
) -> None:
    settings = Settings(tools=["noise"], zoom="on", zoom_turns=turns)
    script = {"planner": PLAN_GLOBAL, "examine": EXAMINE_NOISE, "select": SELECT_NOISE,
              "summarize": lambda r: summary_reply(), "probe": _always_crop,
              "probe_final": _all_degraded}  # fmt: skip
    vlm = ScriptedVLM(script)  # type: ignore[arg-type]
    path = save_rgb(tmp_path / "big.png", natural_like(600, 800, seed=5))
    job = Job(image=path, root=tmp_path)
    image, _ = Decoder(10**8).decode(job)
    item = Pair(job, image, None, key="k")

    async def go() -> Any:
        async with build_runtime(settings, vlm=vlm) as rt:
            return await (await rt.agent())(item)

    result = asyncio.run(go())
    probing = len(vlm.calls("probe")) + len(vlm.calls("probe_final"))
    assert probing <= turns
    if turns > 1:
        assert len(vlm.calls("probe_final")) == 1  # forced at the limit
        crops = [d for d in result.distortions if d.scope.startswith("crop")]
        assert len(crops) == turns - 1  # one degraded crop per cropping turn
    assert result.usage.calls == len(vlm.requests)
    assert np.isfinite(result.score)
