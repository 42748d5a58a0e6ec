"""`eval-bench vqpp` and `agentiqa fix` against a real vLLM serving a tiny random Qwen2-VL.

The model's choices are noise; what is checked is that its replies are decoded under the
fix and locate roles' bounded schemas, that every image gets a decision or a traced
refusal, and that the report is complete. Needs ``scripts/vllm_env.sh`` (skipped without).
"""

from __future__ import annotations

import csv
import json
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from agentiqa_cli.bench.synth import bundled_photos
from tests import vllm_server
from tests.test_cli_score import invoke

pytestmark = pytest.mark.vllm_server


def test_vqpp_and_fix_with_a_served_model(
    vllm: vllm_server.VLLMServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AGENTIQA_API_KEY", vllm_server.KEY)
    clean = tmp_path / "clean"
    clean.mkdir()
    for name, x in zip(("chelsea", "coffee"), bundled_photos(("chelsea", "coffee")), strict=True):
        im = Image.fromarray((x * 255).astype(np.uint8))
        im.thumbnail((160, 160))
        im.save(clean / f"{name}.png")
    vlm = ["--vlm", vllm.base_url, "--model", vllm_server.SERVED_NAME]
    code, _ = invoke(
        "eval-bench", "vqpp", clean, "-o", tmp_path / "vq", "--size", "160", *vlm, "-q"
    )
    assert code == 0
    with open(tmp_path / "vq" / "vqpp.csv", newline="") as f:
        rows = {r["kind"]: r for r in csv.DictReader(f)}
    assert rows["overall"]["n"] == "24" and len(rows) == 13  # 2 × (original + 11 kinds)
    decisions = [
        json.loads(x) for x in (tmp_path / "vq" / "decisions.jsonl").read_text().splitlines()
    ]
    trace = (tmp_path / "vq" / "trace.jsonl").read_text()
    for d in decisions:  # a decision within bounds, or a refusal the trace explains
        assert d["chosen"] is None or len(d["chosen"]) <= 4
    if any(d["chosen"] is None for d in decisions):
        assert "fix refused" in trace
    code, _ = invoke("fix", clean, "--out", tmp_path / "fixed", *vlm, "-q")
    assert code in (0, 3)
    assert {p.name for p in clean.iterdir()} == {"chelsea.png", "coffee.png"}
