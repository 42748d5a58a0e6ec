"""The structured replies each role returns; prompts' JSON schemas must agree with these.

A VLM reply is validated into one of these models; the rules backend builds them directly.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from agentiqa_cli.records import Category, Level, Plan, Severity

__all__ = [
    "AnalysisItem",
    "AnalyzeReply",
    "DetectReply",
    "InterpretReply",
    "Plan",
    "ScoreReply",
    "SelectReply",
]


class _Reply(BaseModel):
    model_config = ConfigDict(extra="forbid")


class DetectReply(_Reply):
    """Distortion detection: scope (object name or "Global") → categories."""

    distortion_set: dict[str, list[Category]]


class AnalysisItem(_Reply):
    type: Category
    severity: Severity
    explanation: str = Field(max_length=200)


class AnalyzeReply(_Reply):
    """Distortion analysis (also the combined detect+analyse reply): scope → findings."""

    distortion_analysis: dict[str, list[AnalysisItem]]


class SelectReply(_Reply):
    """Tool selection: scope → {category: tool name}."""

    selected_tools: dict[str, dict[Category, str]]


class ScoreReply(_Reply):
    """Summarizer for assessment. ``level`` comes first so its tokens are the reply's first
    value: their top log-probabilities give the five-level distribution used in fusion."""

    level: Level
    answer: str = Field(max_length=300)
    reasoning: str = Field(max_length=500)
    sufficient: bool = True


class InterpretReply(_Reply):
    """Summarizer for a multiple-choice question: one option letter and why."""

    final_answer: Literal["A", "B", "C", "D", "E", "F"]
    quality_reasoning: str = Field(max_length=500)
    sufficient: bool = True
