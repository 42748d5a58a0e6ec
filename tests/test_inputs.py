"""Each role's typed input renders its prompt: its variables are the prompt's inputs."""

from __future__ import annotations

import pytest

from agentiqa_cli.agent import inputs as I
from agentiqa_cli.asking.prompts import load_prompts
from agentiqa_cli.asking.rules import RulesVLM
from agentiqa_cli.imperfect.records import Fill, Imperfection
from agentiqa_cli.imperfect.roles import FixInput, LocateInput
from agentiqa_cli.records import Box, Finding, Plan, PlanSwitches, ToolScore
from agentiqa_cli.resources import default_cards_dir, default_prompts_dir
from agentiqa_cli.tools.cards import load_cards
from agentiqa_cli.vlm.base import RoleInput

PLAN = Plan(query_type="IQA", query_scope="Global", distortion_source="inferred",
            reference_mode="No-Reference",
            plan=PlanSwitches(distortion_detection=True, distortion_analysis=True,
                              tool_selection=True, tool_execute=True))  # fmt: skip
EVIDENCE = [ToolScore(tool="noise", raw=0.05, norm=2.0)]
CARDS = load_cards(default_cards_dir())
_BOX = Box(x1=0.0, y1=0.0, x2=0.25, y2=0.25)
HINT = Imperfection(type="overlay", box=_BOX, operations=[Fill(bbox=_BOX)])


def examples() -> list[RoleInput]:
    look = {"query": "How is it?", "has_reference": False, "evidence": EVIDENCE}
    return [
        I.PlannerInput(query="Is it sharp?", has_reference=False, tool_names=["noise"]),
        I.ExamineInput(scopes=["Global"], **look),
        I.DetectInput(scopes=["Global"], **look),
        I.AnalyzeInput(distortions={"Global": ["Noise"]}, **look),
        I.SelectInput(
            query="q", full_reference=False, categories=["Noise"], candidates=[CARDS.get("noise")]
        ),
        I.SummarizeInput(plan=PLAN, **look),
        I.InterpretInput(plan=PLAN, options={"A": "noise", "B": "blur"}, **look),
        FixInput(query="q", width=64, height=48, hints=[HINT]),
        LocateInput(query="q", target="the pasted picture", width=64, height=48, hints=[HINT]),
    ]


@pytest.mark.parametrize("inputs", examples(), ids=lambda i: i.role)
def test_variables_are_the_prompt_inputs_and_render(inputs: RoleInput) -> None:
    spec = load_prompts(default_prompts_dir())[inputs.role]
    assert set(inputs.variables()) == set(spec.inputs)
    messages = spec.render(**inputs.variables())
    assert messages[0].text and messages[1].text
    spec.schema_for(**inputs.dynamic())  # the schema's run-time values are all there


@pytest.mark.parametrize("inputs", examples(), ids=lambda i: i.role)
def test_rules_backend_answers_every_role_input(inputs: RoleInput) -> None:
    if isinstance(inputs, I.InterpretInput):  # evidence that decides it: noise was found
        found = Finding(category="Noise", severity="severe", reason="grain")
        inputs = inputs.model_copy(update={"findings": [found]})
    reply = RulesVLM(CARDS).answer(inputs)
    assert reply.model_dump()


def test_rules_backend_refuses_a_request_without_input() -> None:
    with pytest.raises(ValueError, match="cannot answer"):
        RulesVLM(CARDS).answer(None)
