"""The structured replies the agent's roles return (declared with them in agent/roles.py).

A VLM reply is validated into one of these models; the rules backend builds them directly.
The JSON schema a role is decoded with is derived from its model (``Role.schema``): the
Python types give the properties, enums and validated lengths, and ``Decode`` annotations
add what only bounds generation (one key per scope, at most 7 items, tool names of the run).
"""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field

from agentiqa_cli.records import (
    CATEGORIES,
    OPTION_LETTERS,
    Category,
    Decode,
    Letter,
    Level,
    Plan,
    PresentSeverity,
    Severity,
)

__all__ = [
    "OPTION_LETTERS",
    "AnalysisItem",
    "AnalyzeReply",
    "DetectReply",
    "ExamineItem",
    "ExamineReply",
    "InterpretReply",
    "Plan",
    "ScoreReply",
    "SelectReply",
]

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
