"""The agent pipeline with a scripted VLM: schemas, caches, switches, fusion, replanning."""

from __future__ import annotations

import asyncio
import json
import math
from pathlib import Path
from typing import Any

import pytest

from agentiqa_cli.agent.fusion import fuse, softmax_levels
from agentiqa_cli.batch import Decoder, Pair
from agentiqa_cli.config import Settings
from agentiqa_cli.errors import VLMError
from agentiqa_cli.imaging.discover import Job
from agentiqa_cli.io.trace import TraceWriter
from agentiqa_cli.vlm.base import VLMReply, VLMRequest
from agentiqa_cli.vlm.fake import ScriptedVLM
from agentiqa_cli.wiring import build_runtime
from tests.conftest import natural_like, save_rgb

PLAN_GLOBAL = {
    "query_type": "IQA", "query_scope": "Global", "distortion_source": "inferred",
    "distortions": None, "reference_mode": "No-Reference", "required_tools": None,
    "plan": {"distortion_detection": True, "distortion_analysis": True,
             "tool_selection": True, "tool_execute": True},
}  # fmt: skip
EXAMINE_NOISE = {"distortion_analysis": {"Global": [
    {"type": "Noise", "severity": "moderate", "explanation": "grain in flat areas"}]}}  # fmt: skip
SELECT_NOISE = {"selected_tools": {"Global": {"Noise": "piqe"}}}


def summary_reply(
    level: str = "good", sufficient: bool = True, lps: dict[str, float] | None = None
) -> VLMReply:
    body = {
        "level": level,
        "answer": f"{level} overall",
        "reasoning": "as measured",
        "sufficient": sufficient,
    }
    text = json.dumps(body, separators=(",", ":"))
    tokens = ['{"', "level", '":"', level, '","', "answer", '":"', "rest", '"}']
    top: list[dict[str, float]] = [{} for _ in tokens]
    top[3] = lps or {level: -0.05}
    return VLMReply(
        text=text, tokens=tokens, top_logprobs=top, finish_reason="stop", model="scripted"
    )


def make_session(tmp_path: Path, **settings: Any) -> Settings:
    return Settings(tools=["piqe"], concurrency=2, **settings)


def pairs(tmp_path: Path, n: int, settings: Settings) -> list[Pair]:
    dec = Decoder(10**8)
    out = []
    for i in range(n):
        p = save_rgb(tmp_path / f"img{i}.png", natural_like(64, 80, seed=i))
        job = Job(image=p, root=tmp_path)
        img, ref = dec.decode(job)
        out.append(Pair(job, img, ref, key=f"k{i}"))
    return out


def run_agent(
    settings: Settings,
    vlm: ScriptedVLM,
    items: list[Pair],
    trace: Path | None = None,
    query: str | None = None,
) -> list[Any]:
    tracer = TraceWriter(trace)
    for p in items:
        p.trace = tracer.bind(p.job.name, p.key)

    async def go() -> list[Any]:
        async with build_runtime(settings, vlm=vlm) as rt:
            agent = await rt.agent(query)
            return await asyncio.gather(*(agent(p) for p in items))

    try:
        return asyncio.run(go())
    finally:
        tracer.close()


def test_calls_per_image_plan_once_select_cached(tmp_path: Path) -> None:
    session = make_session(tmp_path)
    vlm = ScriptedVLM({"planner": PLAN_GLOBAL, "examine": EXAMINE_NOISE, "select": SELECT_NOISE,
                       "summarize": lambda r: summary_reply()})  # fmt: skip
    results = run_agent(session, vlm, pairs(tmp_path, 5, session))
    assert [len(vlm.calls(r)) for r in ("planner", "examine", "select", "summarize")] == [
        1,
        5,
        1,
        5,
    ]
    assert sum(r.usage.calls for r in results) == len(vlm.requests) == 12
    # every role asked with a constrained schema; the summarizer also for log-probabilities
    assert all(req.json_schema for req in vlm.requests)
    assert all(req.top_logprobs > 0 for req in vlm.calls("summarize"))
    # examine and summarize see the image (by hash in the trace), the planner does not
    assert all(len(req.messages[-1].images) == 1 for req in vlm.calls("examine"))
    assert not vlm.calls("planner")[0].messages[-1].images
    for r in results:
        assert r.status == "ok"
        assert [t.tool for t in r.tools] == ["piqe"] and r.tools[0].distortion == "Noise"
        assert r.distortions_cell() == "noise:moderate"


def test_fusion_uses_summarizer_logprobs(tmp_path: Path) -> None:
    session = make_session(tmp_path)
    lps = {"good": math.log(0.7), "fair": math.log(0.2), "excellent": math.log(0.1)}
    vlm = ScriptedVLM({"planner": PLAN_GLOBAL, "examine": EXAMINE_NOISE, "select": SELECT_NOISE,
                       "summarize": lambda r: summary_reply("good", lps=lps)})  # fmt: skip
    (result,) = run_agent(session, vlm, pairs(tmp_path, 1, session))
    norm = result.tools[0].norm
    expected = fuse(norm, softmax_levels(lps))
    # the moderate noise finding caps at most at 3.8 (the top of "moderate")
    assert result.score == pytest.approx(min(expected, 3.8))
    # differs from q̄ alone: the log-probabilities were really used
    assert expected != pytest.approx(fuse(norm, None))


def test_no_logprobs_means_the_tools_score(tmp_path: Path) -> None:
    session = make_session(tmp_path)
    body = {"level": "excellent", "answer": "a", "reasoning": "b", "sufficient": True}
    vlm = ScriptedVLM({"planner": PLAN_GLOBAL, "examine": EXAMINE_NOISE, "select": SELECT_NOISE,
                       "summarize": body})  # fmt: skip
    (result,) = run_agent(session, vlm, pairs(tmp_path, 1, session))
    # no log-probabilities: the tools' score itself (capped by the moderate noise finding)
    norm = result.tools[0].norm
    assert result.score == pytest.approx(min(norm, 3.8)) and result.score <= norm


def test_replans_at_most_twice(tmp_path: Path) -> None:
    session = make_session(tmp_path)
    vlm = ScriptedVLM({"planner": PLAN_GLOBAL, "examine": EXAMINE_NOISE, "select": SELECT_NOISE,
                       "summarize": lambda r: summary_reply(sufficient=False)})  # fmt: skip
    trace = tmp_path / "t.jsonl"
    (result,) = run_agent(session, vlm, pairs(tmp_path, 1, session), trace)
    assert len(vlm.calls("summarize")) == 3  # first round + 2 replans
    assert len(vlm.calls("planner")) == 3  # the plan, then one per replan
    feedback = [r.messages[-1].text + r.messages[0].text for r in vlm.calls("planner")[1:]]
    assert all("round" in f for f in feedback)
    assert result.status == "ok" and result.score is not None


def test_switches_obeyed_for_other_query(tmp_path: Path) -> None:
    session = make_session(tmp_path)
    plan = dict(PLAN_GLOBAL, query_type="Other", plan={k: False for k in PLAN_GLOBAL["plan"]})
    vlm = ScriptedVLM({"planner": plan, "summarize": lambda r: summary_reply("fair")})
    (result,) = run_agent(session, vlm, pairs(tmp_path, 1, session), query="Is it beautiful?")
    assert not vlm.calls("examine") and not vlm.calls("select")
    assert result.tools == []
    # no tools: q = Σ p_c c from the level probabilities alone
    assert result.score == pytest.approx(fuse(None, softmax_levels({"fair": -0.05})))


def test_explicit_distortion_analysed_not_detected(tmp_path: Path) -> None:
    session = make_session(tmp_path)
    plan = dict(PLAN_GLOBAL, distortion_source="explicit", distortions={"Global": ["Blurs"]},
                plan=dict(PLAN_GLOBAL["plan"], distortion_detection=False))  # fmt: skip
    analysis = {
        "distortion_analysis": {
            "Global": [{"type": "Blurs", "severity": "severe", "explanation": "soft"}]
        }
    }
    vlm = ScriptedVLM({"planner": plan, "analyze": analysis,
                       "select": {"selected_tools": {"Global": {"Blurs": "piqe"}}},
                       "summarize": lambda r: summary_reply("poor")})  # fmt: skip
    (result,) = run_agent(session, vlm, pairs(tmp_path, 1, session), query="Is it blurry?")
    assert not vlm.calls("examine") and len(vlm.calls("analyze")) == 1
    schema = vlm.calls("analyze")[0].json_schema
    assert "Blurs" in json.dumps(schema)
    assert result.distortions_cell() == "blurs:severe"


def test_invalid_json_reasked_then_error(tmp_path: Path) -> None:
    session = make_session(tmp_path)
    vlm = ScriptedVLM({"planner": PLAN_GLOBAL, "examine": ['{"distortion_analysis": ', "not json"]})
    items = pairs(tmp_path, 1, session)
    with pytest.raises(VLMError, match="not valid JSON"):
        run_agent(session, vlm, items)
    assert len(vlm.calls("examine")) == 2  # asked again once


def test_truncated_reply_is_an_error(tmp_path: Path) -> None:
    session = make_session(tmp_path)

    def truncated(req: VLMRequest) -> VLMReply:
        return VLMReply(text='{"distortion_analysis": {"Glo', finish_reason="length")

    vlm = ScriptedVLM({"planner": PLAN_GLOBAL, "examine": truncated})
    with pytest.raises(VLMError, match="truncated"):
        run_agent(session, vlm, pairs(tmp_path, 1, session))


def test_trace_has_every_step_without_pixels(tmp_path: Path) -> None:
    session = make_session(tmp_path)
    vlm = ScriptedVLM({"planner": PLAN_GLOBAL, "examine": EXAMINE_NOISE, "select": SELECT_NOISE,
                       "summarize": lambda r: summary_reply()})  # fmt: skip
    trace = tmp_path / "t.jsonl"
    items = pairs(tmp_path, 1, session)
    run_agent(session, vlm, items, trace)
    events = [json.loads(line) for line in trace.read_text().splitlines()]
    steps = [e["step"] for e in events]
    for step in ("plan", "analyze", "select", "tool", "summarize", "final"):
        assert step in steps
    text = trace.read_text()
    assert items[0].image.sha256 in text
    assert '"pixels"' not in text  # images appear by hash, never as bytes
    summ = next(e for e in events if e["step"] == "summarize")
    assert summ["reply"]["top_logprobs"] and summ["parsed"]["level"] == "good"


@pytest.mark.parametrize("evidence", [True, False])
def test_no_evidence_keeps_readings_out_of_the_prompts(tmp_path: Path, evidence: bool) -> None:
    settings = make_session(tmp_path, evidence=evidence)
    vlm = ScriptedVLM({"planner": PLAN_GLOBAL, "examine": EXAMINE_NOISE, "select": SELECT_NOISE,
                       "summarize": lambda r: summary_reply()})  # fmt: skip
    (result,) = run_agent(settings, vlm, pairs(tmp_path, 1, settings))
    prompts = [
        m.text for role in ("examine", "summarize") for r in vlm.calls(role) for m in r.messages
    ]
    shown = any("sharpness" in t and "quality" in t for t in prompts)
    assert shown == evidence
    assert result.status == "ok" and result.tools  # the tools still ran either way


INTERPRET_A = {"final_answer": "A", "quality_reasoning": "as seen", "sufficient": True}


def run_answer(settings: Settings, vlm: ScriptedVLM, item: Pair, query: str,
               track: Any) -> Any:  # fmt: skip
    async def go() -> Any:
        async with build_runtime(settings, vlm=vlm) as rt:
            agent = await rt.agent(query)
            return await agent.answer(item, {"A": "Noise", "B": "Blur"}, track)

    return asyncio.run(go())


def test_mcq_replans_on_insufficient_evidence(tmp_path: Path) -> None:
    settings = make_session(tmp_path)
    unsure = dict(INTERPRET_A, sufficient=False)
    vlm = ScriptedVLM({"planner": PLAN_GLOBAL, "examine": EXAMINE_NOISE, "select": SELECT_NOISE,
                       "interpret": [unsure, unsure, INTERPRET_A]})  # fmt: skip
    (item,) = pairs(tmp_path, 1, settings)
    r = run_answer(settings, vlm, item, "Which distortion?", None)
    assert r.choice == "A"
    assert len(vlm.calls("interpret")) == 3 and len(vlm.calls("planner")) == 3  # 2 replans


@pytest.mark.parametrize(
    ("track", "asked"),
    [
        ("planner", {"planner"}),
        ("executor-distortion", {"planner", "examine"}),
        ("executor-tool", {"planner", "examine", "select"}),
        (None, {"planner", "examine", "select"}),
    ],
)
def test_mcq_tracks_are_answered_from_their_component(
    tmp_path: Path, track: Any, asked: set[str]
) -> None:
    settings = make_session(tmp_path)
    vlm = ScriptedVLM({"planner": PLAN_GLOBAL, "examine": EXAMINE_NOISE, "select": SELECT_NOISE,
                       "interpret": INTERPRET_A})  # fmt: skip
    (item,) = pairs(tmp_path, 1, settings)
    question = "The user asks: 'Is the sky noisy?' Which distortion does the plan name?"
    r = run_answer(settings, vlm, item, question, track)
    assert {req.role for req in vlm.requests} == asked | {"interpret"}
    planned = vlm.calls("planner")[0].messages[-1].text
    assert ("Is the sky noisy?" in planned) and ((question in planned) == (track != "planner"))
    shown = vlm.calls("interpret")[0].messages[0].text
    assert ("grain in flat areas" in shown) == (track != "planner")  # the analysis
    assert bool(r.tools) == (track in ("executor-tool", None))


def test_mcq_with_more_than_six_options(tmp_path: Path) -> None:
    settings = make_session(tmp_path)
    options = {letter: f"option {letter}" for letter in "ABCDEFGH"}
    vlm = ScriptedVLM({"planner": PLAN_GLOBAL, "examine": EXAMINE_NOISE, "select": SELECT_NOISE,
                       "interpret": dict(INTERPRET_A, final_answer="H")})  # fmt: skip
    (item,) = pairs(tmp_path, 1, settings)

    async def go() -> Any:
        async with build_runtime(settings, vlm=vlm) as rt:
            return await (await rt.agent("Which one?")).answer(item, options)

    assert asyncio.run(go()).choice == "H"
    schema = json.dumps(vlm.calls("interpret")[0].json_schema)
    assert '"H"' in schema and '"I"' not in schema  # only this question's letters


def test_rules_planner_names_at_most_as_many_objects_as_the_schema() -> None:
    from agentiqa_cli.agent.planner_rules import plan_query
    from agentiqa_cli.asking.prompts import load_prompts
    from agentiqa_cli.records import MAX_SCOPES
    from agentiqa_cli.resources import default_prompts_dir

    query = "Are the dog, the cat, the tree, the car, the house and the bike in focus?"
    plan = plan_query(query, False, ["noise"])
    assert plan.query_scope != "Global" and len(plan.query_scope) == MAX_SCOPES
    schema = load_prompts(default_prompts_dir())["planner"].schema_for(tool_names=["noise"])
    scope = schema["properties"]["query_scope"]
    assert MAX_SCOPES in [b.get("maxItems") for b in scope["anyOf"]]


def test_worker_thread_hand_offs_per_image(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each hand-off to a worker thread makes an image wait for a thread and the GIL: an
    image goes there once to be hashed and decoded, once for the detectors, and not again
    when every tool chosen is a detector already run (the default set)."""
    handed: list[str] = []
    real = asyncio.to_thread

    async def counting(fn: Any, /, *args: Any, **kw: Any) -> Any:
        handed.append(getattr(fn, "__name__", "?"))
        return await real(fn, *args, **kw)

    monkeypatch.setattr(asyncio, "to_thread", counting)  # batch.py and pipeline.py use it
    for i in range(3):
        save_rgb(tmp_path / "in" / f"img{i}.png", natural_like(64, 80, seed=i))
    settings = Settings(concurrency=2)  # default tools: the detectors
    vlm = ScriptedVLM({"planner": PLAN_GLOBAL, "examine": EXAMINE_NOISE,
                       "select": {"selected_tools": {"Global": {"Noise": "noise"}}},
                       "summarize": lambda r: summary_reply()})  # fmt: skip

    async def go() -> Any:
        async with build_runtime(settings, vlm=vlm) as rt:
            jobs = rt.jobs([str(tmp_path / "in")], None)
            return await rt.run(jobs, await rt.agent(), command="assess", trace=TraceWriter(None))

    summary = asyncio.run(go())
    assert [r.status for r in summary.results] == ["ok"] * 3
    assert all(r.tools for r in summary.results)
    assert sorted(handed) == sorted(["open_job", "run"] * 3)
