"""The HTTP and in-process backends against a real vLLM serving a tiny random Qwen2-VL.

The model's answers are noise; what is real and checked here is the protocol: the chat
template with an image, JSON-schema and choice constraints, log-probabilities, usage,
authentication and errors. Needs ``scripts/vllm_env.sh``; skipped without it unless
AGENTIQA_REQUIRE_VLLM=1, which turns the skip into a failure (for CI that installed it).
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import jsonschema
import numpy as np
import pytest

from agentiqa_cli.asking.asker import parse_reply
from agentiqa_cli.errors import VLMError
from agentiqa_cli.records import CATEGORIES, Plan
from agentiqa_cli.vlm.base import ImagePart, Message, VLMReply, VLMRequest
from agentiqa_cli.vlm.http import OpenAIHTTPVLM
from tests import vllm_server
from tests.conftest import LEVELS, level_schema, wave_images

pytestmark = pytest.mark.vllm_server

# Bounded like the real prompts' schemas: enums, short strings, few items, all keys required.
PLAN_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "query_type": {"enum": ["IQA", "Other"]},
        "distortion_source": {"enum": ["explicit", "inferred"]},
        "distortions": {"type": "array", "items": {"enum": list(CATEGORIES)}, "maxItems": 3},
        "reference_mode": {"enum": ["Full-Reference", "No-Reference"]},
        "note": {"type": "string", "maxLength": 30},
        "plan": {
            "type": "object",
            "properties": {
                k: {"type": "boolean"}
                for k in ("distortion_detection", "distortion_analysis", "tool_execute")
            },
            "required": ["distortion_detection", "distortion_analysis", "tool_execute"],
            "additionalProperties": False,
        },
    },
    "required": [
        "query_type",
        "distortion_source",
        "distortions",
        "reference_mode",
        "note",
        "plan",
    ],
    "additionalProperties": False,
}


def image_part(seed: int, h: int = 240, w: int = 320) -> ImagePart:
    rng = np.random.default_rng(seed)
    pixels = rng.random((h, w, 3), dtype=np.float32)
    return ImagePart(sha256=f"{seed:064x}", path=f"mem-{seed}.png", pixels=pixels)


def user(text: str, seed: int | None = 0) -> list[Message]:
    images = [image_part(seed)] if seed is not None else []
    return [
        Message(role="system", text="You assess image quality."),
        Message(role="user", text=text, images=images),
    ]


def run(coro_fn: Any, **kw: Any) -> Any:
    async def go() -> Any:
        vlm = OpenAIHTTPVLM(kw.pop("url"), **kw)
        try:
            return await coro_fn(vlm)
        finally:
            await vlm.aclose()

    return asyncio.run(go())


def opts(vllm: vllm_server.VLLMServer, **kw: Any) -> dict[str, Any]:
    base = {"url": vllm.base_url, "model": vllm_server.SERVED_NAME, "api_key": vllm_server.KEY}
    base.update(kw)
    return base


def ask(
    vllm: vllm_server.VLLMServer, role: str, text: str, seed: int | None = 0, **fields: Any
) -> VLMReply:
    """The server's reply to ``text`` with ``user``'s image of ``seed``, asked as ``role``
    under the request ``fields`` (schema or choices, limits)."""
    req = VLMRequest(role=role, messages=user(text, seed=seed), **fields)
    return run(lambda v: v.complete(req), **opts(vllm))


def test_check_finds_the_model_and_rejects_a_wrong_name(
    vllm: vllm_server.VLLMServer,
) -> None:
    assert run(lambda v: v.served_models(), **opts(vllm)) == [vllm_server.SERVED_NAME]
    with pytest.raises(VLMError, match=f"available: {vllm_server.SERVED_NAME}"):
        run(lambda v: v.check(), **opts(vllm, model="qwen-72b"))


def test_missing_api_key_is_rejected_without_retries(vllm: vllm_server.VLLMServer) -> None:
    with pytest.raises(VLMError, match="HTTP 401"):
        run(lambda v: v.check(), **opts(vllm, api_key=None))


def test_json_schema_request_with_an_image(vllm: vllm_server.VLLMServer) -> None:
    req = VLMRequest(
        role="planner",
        messages=user("Plan the assessment of this image. Is the bird in focus?"),
        json_schema=PLAN_SCHEMA,
        max_tokens=400,
    )
    reply = run(lambda v: v.complete(req), **opts(vllm))
    assert reply.finish_reason == "stop", reply.text
    jsonschema.validate(json.loads(reply.text), PLAN_SCHEMA)
    # The image really is in the prompt: the processor fits 320×240 under its 224×224 pixel
    # cap as 252×168 = 18×12 patches of 14 px, merged 2×2 into 54 tokens, + start/end markers.
    text_only = run(
        lambda v: v.complete(req.model_copy(update={"messages": user(req.messages[1].text, None)})),
        **opts(vllm),
    )
    assert reply.usage.prompt_tokens - text_only.usage.prompt_tokens == 54 + 2
    assert reply.usage.completion_tokens > 0 and reply.model == vllm_server.SERVED_NAME


def test_schema_via_vllm_structured_outputs_field(vllm: vllm_server.VLLMServer) -> None:
    req = VLMRequest(
        role="planner", messages=user("Plan."), json_schema=PLAN_SCHEMA, max_tokens=400
    )
    reply = run(lambda v: v.complete(req), **opts(vllm, schema_field="structured_outputs"))
    jsonschema.validate(json.loads(reply.text), PLAN_SCHEMA)


def test_five_level_choice_with_top_logprobs(vllm: vllm_server.VLLMServer) -> None:
    reply = ask(
        vllm, "score", "Rate the overall quality.", seed=1, choices=LEVELS, top_logprobs=5,
        max_tokens=8,
    )  # fmt: skip
    answer = reply.text.strip()
    assert answer in LEVELS
    assert reply.top_logprobs is not None and len(reply.top_logprobs) >= 1
    first = reply.top_logprobs[0]
    assert 1 <= len(first) <= 6 and all(lp <= 0.0 for lp in first.values())
    # Under the choice grammar every first-position alternative starts some allowed level.
    assert all(any(level.startswith(tok) for level in LEVELS) for tok in first), first
    assert any(answer.startswith(tok) for tok in first)


def test_level_logprobs_inside_json_reach_the_fusion(vllm: vllm_server.VLLMServer) -> None:
    """The summarizer's shape: JSON whose first value is the level. The tokens and their
    top log-probabilities must let the pipeline find the level's position and read p_c."""
    from agentiqa_cli.agent.fusion import level_logprobs

    schema = level_schema(max_answer=20)
    reply = ask(
        vllm, "summarize", "Rate it.", seed=3, json_schema=schema, top_logprobs=5,
        max_tokens=120,
    )  # fmt: skip
    value = json.loads(reply.text)
    jsonschema.validate(value, schema)
    assert reply.tokens is not None and reply.top_logprobs is not None
    assert "".join(reply.tokens) == reply.text + "<|im_end|>"  # the stop token is generated
    assert len(reply.tokens) == len(reply.top_logprobs) == reply.usage.completion_tokens
    levels = level_logprobs(reply, prefix='{"level":"')
    assert levels is not None and value["level"] in levels, (reply.tokens[:6], levels)


def test_truncated_json_is_an_error(vllm: vllm_server.VLLMServer) -> None:
    reply = ask(vllm, "planner", "Plan.", json_schema=PLAN_SCHEMA, max_tokens=4)
    assert reply.truncated
    with pytest.raises(VLMError, match="finish_reason=length"):
        parse_reply(reply, Plan)


def test_throughput_concurrency_1_vs_8(
    vllm: vllm_server.VLLMServer, capsys: pytest.CaptureFixture[str]
) -> None:
    """Measured and printed, not asserted: the machine is shared."""
    workloads = {
        "5-level choice": (16, {"choices": LEVELS, "top_logprobs": 5, "max_tokens": 8}),
        "plan JSON schema": (8, {"json_schema": PLAN_SCHEMA, "max_tokens": 400}),
    }
    lines = [
        f"[vllm] server ready in {vllm.ready_seconds:.1f} s, RSS {vllm.rss_bytes() / 2**30:.2f} GiB"
    ]
    for label, (n, constraint) in workloads.items():
        for conc in (1, 8):
            reqs = [
                VLMRequest(role="score", messages=user("Rate it.", seed=100 + i), **constraint)
                for i in range(n)
            ]

            async def batch(v: OpenAIHTTPVLM, reqs: list[VLMRequest] = reqs) -> list[Any]:
                return await asyncio.gather(*(v.complete(r) for r in reqs))

            t0 = time.perf_counter()
            replies = run(batch, **opts(vllm, concurrency=conc))
            dt = time.perf_counter() - t0
            assert all(r.finish_reason == "stop" for r in replies)
            prompt = sum(r.usage.prompt_tokens for r in replies) / n
            completion = sum(r.usage.completion_tokens for r in replies) / n
            lines.append(
                f"[vllm] {label}, concurrency {conc}: {n} images in {dt:.2f} s = "
                f"{n / dt:.1f} images/s ({prompt:.0f} prompt + {completion:.1f} completion "
                "tokens per request)"
            )
    with capsys.disabled():
        sys.stderr.write("\n" + "\n".join(lines) + "\n")


PROBE = r"""
import asyncio, json, sys
import numpy as np
from agentiqa_cli.vlm.base import ImagePart, Message, VLMRequest
from agentiqa_cli.vlm.inprocess import InProcessVLM

schema, levels = json.loads(sys.argv[1]), json.loads(sys.argv[2])

def msgs(seed):
    px = np.random.default_rng(seed).random((200, 300, 3), dtype=np.float32)
    img = ImagePart(sha256=f"{seed:064x}", path="mem.png", pixels=px)
    return [Message(role="user", text="Assess this image.", images=[img])]

async def main():
    vlm = InProcessVLM(sys.argv[3], engine_args={
        "dtype": "float32", "max_model_len": 4096, "enforce_eager": True, "seed": 0,
    })
    await vlm.check()
    calls = []
    inner = vlm._llm.chat
    def spy(convs, **kw):
        calls.append(len(convs))
        return inner(convs, **kw)
    vlm._llm.chat = spy
    reqs = [VLMRequest(role="plan", messages=msgs(i), json_schema=schema, max_tokens=400)
            for i in range(3)]
    reqs.append(VLMRequest(role="score", messages=msgs(9), choices=levels, top_logprobs=5,
                           max_tokens=8))
    reqs.append(VLMRequest(role="plan", messages=msgs(5), json_schema=schema, max_tokens=3))
    res = await asyncio.gather(*(vlm.complete(r) for r in reqs), return_exceptions=True)
    await vlm.aclose()
    out = [{"error": str(r)} if isinstance(r, BaseException) else r.model_dump() for r in res]
    print("PROBE-RESULT " + json.dumps({"replies": out, "chat_calls": calls}))

asyncio.run(main())
"""


def test_inprocess_backend_batches_on_the_real_engine() -> None:
    vllm_server.skip_unless_available()
    env = vllm_server.server_env()
    env["PYTHONPATH"] = str(vllm_server.ROOT)
    proc = subprocess.run(
        [
            str(vllm_server.venv_python()),
            "-c",
            PROBE,
            json.dumps(PLAN_SCHEMA),
            json.dumps(LEVELS),
            str(vllm_server.model_dir()),
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=400,
        cwd=vllm_server.ROOT,
    )
    line = next((x for x in proc.stdout.splitlines() if x.startswith("PROBE-RESULT ")), None)
    assert line is not None, proc.stderr[-3000:]
    result = json.loads(line.removeprefix("PROBE-RESULT "))
    replies = result["replies"]
    assert result["chat_calls"] == [5], "the five concurrent requests went as one LLM.chat batch"
    for r in replies[:3]:
        jsonschema.validate(json.loads(r["text"]), PLAN_SCHEMA)
        assert r["usage"]["prompt_tokens"] > 54 and r["finish_reason"] == "stop"
    score = replies[3]
    assert score["text"] in LEVELS and score["top_logprobs"], score
    assert replies[4]["finish_reason"] == "length"  # cut short: parse_reply refuses it


def test_assess_end_to_end_against_the_server(vllm: vllm_server.VLLMServer, tmp_path: Path) -> None:
    """`agentiqa assess --vlm URL` on real images: every constrained reply parses, the
    level log-probabilities in the trace are the p used in fusion, rows are whole, and the
    API key never reaches the trace. The model is noise, so no assertion on content."""
    import pandas as pd

    from agentiqa_cli.agent.fusion import fuse, level_logprobs, softmax_levels
    from agentiqa_cli.agent.pipeline import SUMMARY_PREFIX
    from agentiqa_cli.agent.replies import AnalyzeReply, ScoreReply, SelectReply
    from agentiqa_cli.asking.asker import parse_reply
    from agentiqa_cli.records import Plan
    from agentiqa_cli.scoring import fuse_tools
    from agentiqa_cli.vlm.base import VLMReply

    imgs = wave_images(tmp_path / "imgs", 2)
    out = tmp_path / "r.csv"
    env = {**os.environ, "AGENTIQA_API_KEY": vllm_server.KEY}
    cmd = [sys.executable, "-m", "agentiqa_cli", "assess", str(imgs), "--vlm", vllm.base_url,
           "--model", vllm_server.SERVED_NAME, "-o", str(out), "-j", "2", "-q"]  # fmt: skip
    r = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]
    df = pd.read_csv(out)
    assert len(df) == 2 and (df["status"] == "ok").all()
    assert df["score"].between(1, 5).all() and (df["vlm_calls"] >= 2).all()
    text = (tmp_path / "r.trace.jsonl").read_text()
    assert vllm_server.KEY not in text
    events = [json.loads(line) for line in text.splitlines()]
    models = {"plan": Plan, "analyze": AnalyzeReply, "select": SelectReply, "summarize": ScoreReply}
    last_summary: dict[str, dict[str, Any]] = {}
    for e in events:
        if e["step"] in models and "reply" in e:
            reply = VLMReply(text=e["reply"]["text"], finish_reason=e["reply"]["finish_reason"])
            parse_reply(reply, models[e["step"]])  # every constrained reply parses
            assert e["request"]["constrained"]
        if e["step"] == "summarize" and "reply" in e:
            last_summary[e["image"]] = e
    finals = [e for e in events if e["step"] == "final"]
    assert len(finals) == 2
    for f in finals:
        s = last_summary[f["image"]]["reply"]
        assert s["top_logprobs"], "the level's log-probabilities must be requested and returned"
        lp = level_logprobs(
            VLMReply(text=s["text"], tokens=s["tokens"], top_logprobs=s["top_logprobs"]),
            SUMMARY_PREFIX,
        )
        assert lp, "the level position must carry level tokens"
        p = softmax_levels(lp)
        assert f["parsed"]["p"] == pytest.approx(p)
        row = df[df["image"] == f["image"]].iloc[0]
        norms = [float(x.split("=")[1]) for x in str(row["tools"]).split(";") if "=" in x]
        qbar = fuse_tools(norms, f["parsed"]["fusion"])
        assert f["parsed"]["qbar"] == pytest.approx(qbar, abs=2e-3)
        assert f["parsed"]["fused"] == pytest.approx(fuse(qbar, p), abs=2e-3)
        # visible findings may only lower it (words and numbers agree)
        assert row["score"] <= f["parsed"]["fused"] + 2e-3
