"""Typed inputs of each role: one model renders the prompt *and* drives the rules backend.

A model reads the text rendered from ``variables()``; the rules backend reads the fields.
The variable names are the prompt's declared ``inputs`` (a test holds them equal), and
``dynamic()`` gives the output schema's run-time values (scopes, tool names, letters).
"""

from __future__ import annotations

from typing import ClassVar

from pydantic import Field

from agentiqa_cli.agent.advice import Insight
from agentiqa_cli.records import Category, Finding, Plan, ToolScore, Track
from agentiqa_cli.tools.cards import ToolCard
from agentiqa_cli.vlm.base import RoleInput

__all__ = [
    "AnalyzeInput",
    "DetectInput",
    "ExamineInput",
    "InterpretInput",
    "PlannerInput",
    "SelectInput",
    "SummarizeInput",
]


def evidence_view(scores: list[ToolScore]) -> list[dict[str, object]]:
    """Signal-detector readings as prompt variables: tool, raw reading, 1–5 quality."""
    return [
        {
            "tool": s.tool,
            "reading": f"{s.raw:.4g}",
            "raw": round(s.raw, 4),
            "norm": round(s.norm, 2),
        }
        for s in scores
        if s.ok and s.raw is not None and s.norm is not None
    ]


def analysis_view(findings: list[Finding]) -> dict[str, list[dict[str, str]]]:
    analysis: dict[str, list[dict[str, str]]] = {}
    for f in findings:
        analysis.setdefault(f.scope, []).append(
            {"type": f.category, "severity": f.severity, "explanation": f.reason}
        )
    return analysis


def scores_view(scores: list[ToolScore]) -> list[dict[str, object]]:
    return [
        {"tool": s.tool, "distortion": s.distortion, "scope": s.scope, "norm": s.norm}
        for s in scores
    ]


class PlannerInput(RoleInput):
    role: ClassVar[str] = "planner"

    query: str
    has_reference: bool
    tool_names: list[str]
    feedback: str = ""

    def variables(self) -> dict[str, object]:
        return self.model_dump(include={"query", "has_reference", "tool_names", "feedback"})

    def dynamic(self) -> dict[str, object]:
        return {"tool_names": self.tool_names}


class _Looking(RoleInput):
    """A role that looks at the image, with the detectors' readings as hints. The rules
    backend always reads ``evidence``; a model is shown it unless ``show_evidence`` is off
    (``--no-evidence``: the paper's prompts, which carry no measurements)."""

    query: str
    has_reference: bool
    evidence: list[ToolScore] = Field(default_factory=list)
    show_evidence: bool = True

    def shown_evidence(self) -> list[dict[str, object]]:
        return evidence_view(self.evidence) if self.show_evidence else []

    def _variables(self, **own: object) -> dict[str, object]:
        """The role's own prompt variables with those every looking role's prompt reads."""
        return {
            "query": self.query,
            "has_reference": self.has_reference,
            **own,
            "evidence": self.shown_evidence(),
        }


class ExamineInput(_Looking):
    """Detection and analysis in one call, per scope."""

    role: ClassVar[str] = "examine"

    scopes: list[str]

    def variables(self) -> dict[str, object]:
        return self._variables(scopes=self.scopes)

    def dynamic(self) -> dict[str, object]:
        return {"scopes": self.scopes}


class DetectInput(ExamineInput):
    role: ClassVar[str] = "detect"


class AnalyzeInput(_Looking):
    """Severity of the distortions the query named."""

    role: ClassVar[str] = "analyze"

    distortions: dict[str, list[Category]]

    def variables(self) -> dict[str, object]:
        return self._variables(distortions=self.distortions)

    def dynamic(self) -> dict[str, object]:
        return {"distortions": self.distortions}


class SelectInput(RoleInput):
    """Tool selection sees no image: it depends on the distortion set and the cards only."""

    role: ClassVar[str] = "select"

    query: str
    full_reference: bool
    categories: list[Category]
    candidates: list[ToolCard]
    insights: list[Insight] = Field(default_factory=list)  # an experience pool's, if any

    @property
    def distortions(self) -> dict[str, list[Category]]:
        return {"Global": list(self.categories)}

    def variables(self) -> dict[str, object]:
        return {
            "query": self.query,
            "has_reference": self.full_reference,
            "distortions": self.distortions,
            "tools": [
                {
                    "name": c.name,
                    "mode": c.mode,
                    "description": c.description,
                    "distortions": list(c.distortions),
                }
                for c in self.candidates
            ],
            "insights": [i.text for i in self.insights],
        }

    def dynamic(self) -> dict[str, object]:
        return {"tool_names": [c.name for c in self.candidates], "distortions": self.distortions}


class _Summarizing(_Looking):
    """The evidence a summarizer weighs: the plan, the findings and the tools' scores."""

    plan: Plan
    findings: list[Finding] = Field(default_factory=list)
    tool_scores: list[ToolScore] = Field(default_factory=list)


class SummarizeInput(_Summarizing):
    role: ClassVar[str] = "summarize"

    fusion: str = "mean"  # how the tools' scores combine (a summary must agree with it)

    def variables(self) -> dict[str, object]:
        return self._variables(
            scopes=self.plan.scopes,
            analysis=analysis_view(self.findings),
            tool_scores=scores_view(self.tool_scores),
        )


class InterpretInput(_Summarizing):
    """A multiple-choice question: the same evidence, and the options to choose from."""

    role: ClassVar[str] = "interpret"

    options: dict[str, str]  # letter → text, in display order
    track: Track | None = None  # the component under test (None: the whole agent)
    candidates: list[str] = Field(default_factory=list)  # tools that could have run

    def variables(self) -> dict[str, object]:
        return self._variables(
            options=list(self.options.values()),
            analysis=analysis_view(self.findings),
            tool_scores=scores_view(self.tool_scores),
        )

    def dynamic(self) -> dict[str, object]:
        return {"letters": list(self.options)}
