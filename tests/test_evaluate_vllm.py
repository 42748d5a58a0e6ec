"""`agentiqa evaluate --vlm URL` against the real tiny vLLM server (the lead runs it).

The model is noise, so nothing is asserted about what it plans; what is real: the
eval_plan prompt renders, its bounded schema is accepted by vLLM's guidance backend, every
constrained reply parses into the reply model, refusals and the n/tool limits hold, each
sampled image is assessed by the agent on the same server, and the key stays out of the trace.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from agentiqa_cli.asking.asker import parse_reply
from agentiqa_cli.evaluate.planning import EvalPlanReply
from agentiqa_cli.evaluate.records import RoundEvent, Verdict
from agentiqa_cli.vlm.base import VLMReply
from tests import vllm_server
from tests.conftest import wave_images

pytestmark = pytest.mark.vllm_server


def test_evaluate_end_to_end_against_the_server(
    vllm: vllm_server.VLLMServer, tmp_path: Path
) -> None:
    imgs = wave_images(tmp_path / "imgs", 8)
    out = tmp_path / "e.csv"
    env = {**os.environ, "AGENTIQA_API_KEY": vllm_server.KEY}
    cmd = [sys.executable, "-m", "agentiqa_cli", "evaluate", str(imgs), "--vlm", vllm.base_url,
           "--model", vllm_server.SERVED_NAME, "--max-rounds", "2", "--max-samples", "6",
           "-o", str(out), "-j", "2", "-q", "--json"]  # fmt: skip
    r = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=900)
    assert r.returncode == 0, r.stderr[-3000:]
    verdict = Verdict.model_validate(json.loads(r.stdout)["verdict"])
    df = pd.read_csv(out, keep_default_na=False)
    assert 3 <= len(df) <= 6 and df["image"].is_unique and (df["status"] == "ok").all()
    assert set(df["round"]) <= {1, 2} and (df["sub_aspect"] != "").all()
    assert verdict.assessed == len(df) and verdict.planner.calls >= verdict.rounds
    text = (tmp_path / "e.trace.jsonl").read_text()
    assert vllm_server.KEY not in text
    events = [json.loads(line) for line in text.splitlines()]
    asked = [e for e in events if e["step"] == "eval_plan" and "reply" in e]
    assert asked and all(e["request"]["constrained"] for e in asked)
    for e in asked:  # every constrained reply of the model parses (n in [3, 9], the schema)
        reply = VLMReply(text=e["reply"]["text"], finish_reason=e["reply"]["finish_reason"])
        parsed = parse_reply(reply, EvalPlanReply)
        assert 3 <= parsed.n <= 9
    sampled = [RoundEvent.model_validate(e["parsed"]) for e in events
               if e["step"] == "eval_round" and e["parsed"]["phase"] == "sampled"]  # fmt: skip
    names = [d.draw.sub_aspect.key for d in sampled if d.draw is not None]
    assert len(names) == len(set(names)) == verdict.rounds  # no sub-aspect twice
    assert sum(e["step"] == "final" for e in events) == len(
        df
    )  # each image went through assess or score
