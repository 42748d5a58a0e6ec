"""The structured replies each role returns, and the one source of their output schemas.

A VLM reply is validated into one of these models; the rules backend builds them directly.
The JSON schema a role is decoded with is derived from its model (``REPLY_SCHEMAS``): the
Python types give the properties, enums and validated lengths, and ``Decode`` annotations
add what only bounds generation (one key per scope, at most 7 items, tool names of the run).
"""

from __future__ import annotations

from typing import Annotated, Any, Literal, get_args

from pydantic import BaseModel, ConfigDict, Field

from agentiqa_cli.agent.probe_records import ProbeFinalReply, ProbeTurnReply
from agentiqa_cli.asking.schemas import reply_schema, schema_problems
from agentiqa_cli.imperfect.records import FixReply, LocateReply
from agentiqa_cli.records import (
    CATEGORIES,
    EVAL_MAX_ASPECTS,
    EVAL_N_MAX,
    EVAL_N_MIN,
    Category,
    Decode,
    Level,
    Plan,
    PresentSeverity,
    Severity,
)

__all__ = [
    "OPTION_LETTERS",
    "REPLY_MODELS",
    "REPLY_SCHEMAS",
    "AnalysisItem",
    "AnalyzeReply",
    "DetectReply",
    "EvalPlanReply",
    "ExamineItem",
    "ExamineReply",
    "InterpretReply",
    "Plan",
    "ScoreReply",
    "SelectReply",
]

# as many letters as a question file may give options (bench/mcq.py accepts A-Z)
Letter = Literal[
    "A", "B", "C", "D", "E", "F", "G", "H", "I", "J", "K", "L", "M",
    "N", "O", "P", "Q", "R", "S", "T", "U", "V", "W", "X", "Y", "Z",
]  # fmt: skip
OPTION_LETTERS = "".join(get_args(Letter))  # InterpretReply.final_answer's alphabet

Explanation = Annotated[str, Field(max_length=200)]
# each category at most once per scope
_PerScope = Decode(max_items=len(CATEGORIES))


class _Reply(BaseModel):
    model_config = ConfigDict(extra="forbid")


class DetectReply(_Reply):
    """Distortion detection: scope (object name or "Global") → categories."""

    distortion_set: Annotated[
        dict[str, Annotated[list[Category], _PerScope]], Decode(keys_from="scopes")
    ]


class AnalysisItem(_Reply):
    # decoded for the analyze role: one item per listed category, of that category
    type: Annotated[Category, Decode(enum_from="@value")]
    severity: Severity
    explanation: Explanation


class AnalyzeReply(_Reply):
    """Distortion analysis (also the combined detect+analyse reply): scope → findings."""

    distortion_analysis: Annotated[
        dict[str, Annotated[list[AnalysisItem], Decode(items_from="@value")]],
        Decode(keys_from="distortions"),
    ]


class ExamineItem(_Reply):
    type: Category
    severity: PresentSeverity  # only distortions that are present are reported
    explanation: Explanation


class ExamineReply(_Reply):
    """What the examine role (detection and analysis in one call) may generate; every
    ExamineReply is also a valid AnalyzeReply, which is what the pipeline reads."""

    distortion_analysis: Annotated[
        dict[str, Annotated[list[ExamineItem], _PerScope]], Decode(keys_from="scopes")
    ]


_ToolName = Annotated[str, Decode(enum_from="tool_names")]


class SelectReply(_Reply):
    """Tool selection: scope → {category: tool name}."""

    selected_tools: Annotated[
        dict[str, Annotated[dict[Category, _ToolName], Decode(keys_from="@value")]],
        Decode(keys_from="distortions"),
    ]


class ScoreReply(_Reply):
    """Summarizer for assessment. ``level`` comes first so its tokens are the reply's first
    value: their top log-probabilities give the five-level distribution used in fusion."""

    level: Level
    answer: str = Field(max_length=300)
    reasoning: str = Field(max_length=500)
    sufficient: bool = True


class InterpretReply(_Reply):
    """Summarizer for a multiple-choice question: one option letter and why."""

    final_answer: Annotated[Letter, Decode(enum_from="letters")]  # only the question's letters
    quality_reasoning: str = Field(max_length=500)
    sufficient: bool = True


class EvalPlanReply(_Reply):
    """The evaluation planner's decision (seed 004's Plan Agent); ``thought`` first, as in
    the paper (explain, then act)."""

    thought: str = Field(max_length=300)
    sub_aspects: list[Annotated[str, Field(min_length=1, max_length=60)]] = Field(
        min_length=1, max_length=EVAL_MAX_ASPECTS
    )
    done: bool
    summary: str = Field(max_length=400)  # why the evidence suffices (when done)
    sub_aspect: str = Field(min_length=1, max_length=60)  # the next round's (if not done)
    tool: _ToolName
    n: int = Field(ge=EVAL_N_MIN, le=EVAL_N_MAX)
    prompts: list[Annotated[str, Field(min_length=1, max_length=160)]] = Field(
        default_factory=list, max_length=EVAL_N_MAX
    )


# The reply model each role's output is decoded with.
REPLY_MODELS: dict[str, type[BaseModel]] = {
    "planner": Plan,
    "detect": DetectReply,
    "analyze": AnalyzeReply,
    "examine": ExamineReply,
    "select": SelectReply,
    "summarize": ScoreReply,
    "interpret": InterpretReply,
    "probe": ProbeTurnReply,
    "probe_final": ProbeFinalReply,
    "eval_plan": EvalPlanReply,
    "fix": FixReply,
    "locate": LocateReply,
}


def _schemas() -> dict[str, dict[str, Any]]:
    out = {role: reply_schema(model) for role, model in REPLY_MODELS.items()}
    for role, schema in out.items():
        problems = schema_problems(schema, directives=True)
        if problems:  # a programming error: every shipped reply must decode in bounded time
            raise TypeError(f"{REPLY_MODELS[role].__name__}: {'; '.join(problems[:3])}")
    return out


# role → output schema with run-time directives (expanded by ``PromptSpec.schema_for``)
REPLY_SCHEMAS: dict[str, dict[str, Any]] = _schemas()
