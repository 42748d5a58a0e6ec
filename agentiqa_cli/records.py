"""Typed records shared by the core: plans, findings, tool scores, results, trace events.

CSV rows and JSONL trace lines are produced from these models and nothing else.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Annotated, Literal, get_args

from pydantic import BaseModel, ConfigDict, Field, JsonValue

# Quality levels, worst first: the level's index + 1 is its score on the 1–5 scale.
Level = Literal["bad", "poor", "fair", "good", "excellent"]
LEVELS: tuple[Level, ...] = get_args(Level)

PresentSeverity = Literal["slight", "moderate", "severe", "extreme"]
Severity = Literal["none", PresentSeverity]
SEVERITIES: tuple[Severity, ...] = ("none", *get_args(PresentSeverity))

# Seed 000 Appendix A.2: the executor's valid distortion categories.
Category = Literal[
    "Blurs",
    "Color distortions",
    "Compression",
    "Noise",
    "Brightness change",
    "Sharpness",
    "Contrast",
]
CATEGORIES: tuple[Category, ...] = get_args(Category)

# how many images a round of `agentiqa evaluate` samples, and sub-aspects a query names
EVAL_N_MIN, EVAL_N_MAX = 3, 9
EVAL_MAX_ASPECTS = 5

# AgenticIQA-Eval's tracks: the component a multiple-choice question tests (seed 000 §4)
Track = Literal["planner", "executor-distortion", "executor-tool", "summarizer"]

Mode = Literal["FR", "NR"]
# tools that need downloaded weights, offered to the agent: when cached, always, or never
LearnedTools = Literal["auto", "on", "off"]
Status = Literal["ok", "error"]


def level_of(score: float) -> Level:
    """The level whose integer score is nearest (1 bad … 5 excellent)."""
    return LEVELS[min(4, max(0, math.floor(score + 0.5) - 1))]


@dataclass(frozen=True)
class Decode:
    """Bounds a field gets when a VLM generates it under constrained decoding.

    Validation ignores them; ``agent.schemas.reply_schema`` turns a reply model with these
    annotations into its output schema. ``*_from`` name a value known only at run time
    (``agent/schemas.py``): ``enum_from`` a string that is one of its values, ``keys_from``
    a mapping with exactly one key per value, ``items_from`` a list with one item per value.
    ``min_items``/``max_items`` bound a list's items or a mapping's keys; ``key_pattern``
    is the regex every key of a mapping matches; ``grid`` turns a number into an enum of
    the grid's values over [``low``, ``high``].
    """

    enum_from: str | None = None
    keys_from: str | None = None
    items_from: str | None = None
    key_pattern: str | None = None
    min_items: int | None = None
    max_items: int | None = None
    min_length: int | None = None
    max_length: int | None = None
    # a number generated as one of the values low, low + grid, ..., high: a bare JSON number
    # has no bound on its digits, and a weak model under constrained decoding writes
    # hundreds of them; low/high default to the field's validated ge/le
    grid: float | None = None
    low: float | None = None
    high: float | None = None


class Record(BaseModel):
    model_config = ConfigDict(extra="forbid")


class PlanSwitches(Record):
    distortion_detection: bool
    distortion_analysis: bool
    tool_selection: bool
    tool_execute: bool


# What the planner may generate: at most 4 objects with names of 1-40 characters, at most
# 7 categories for each, at most 4 tools named by the run (``Decode``: decoding-only bounds;
# the rules planner keeps to the same limits).
MAX_SCOPES = 4  # objects a plan may name: the planner's schema and the rules planner
_ScopeName = Annotated[str, Decode(min_length=1, max_length=40)]
_ScopeKeys = Decode(
    key_pattern=r"^[A-Za-z0-9][A-Za-z0-9 ',_-]{0,39}$", min_items=1, max_items=MAX_SCOPES
)
_PlanCategories = Annotated[list[Category], Decode(min_items=1, max_items=len(CATEGORIES))]
_ToolName = Annotated[str, Decode(enum_from="tool_names")]


class Plan(Record):
    """The planner's output (seed 000 §3.1, Appendix A.2)."""

    query_type: Literal["IQA", "Other"]
    query_scope: (
        Annotated[list[_ScopeName], Decode(min_items=1, max_items=MAX_SCOPES)] | Literal["Global"]
    )
    distortion_source: Literal["explicit", "inferred"]
    distortions: Annotated[dict[str, _PlanCategories], _ScopeKeys] | None = None
    reference_mode: Literal["Full-Reference", "No-Reference"]
    required_tools: Annotated[list[_ToolName], Decode(min_items=1, max_items=4)] | None = None
    plan: PlanSwitches

    @property
    def scopes(self) -> list[str]:
        return ["Global"] if self.query_scope == "Global" else list(self.query_scope)


class Finding(Record):
    """One distortion on one object (or Global), with its severity and a one-line reason."""

    scope: str = "Global"
    category: Category
    severity: Severity = "moderate"
    reason: str = ""


class ToolScore(Record):
    tool: str
    raw: float | None = None
    norm: float | None = None
    seconds: float = 0.0
    error: str | None = None
    distortion: str | None = None  # the distortion it was selected for, if any
    scope: str | None = None  # the object whose located region it measured (None: the image)
    # False: its card has no fitted logistic, so ``norm`` keeps order but not the 1-5
    # scale, and fusions leave it out (``scoring.fusable``)
    calibrated: bool = True

    @property
    def ok(self) -> bool:
        return self.error is None and self.norm is not None


class Usage(Record):
    calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0

    def add(self, other: Usage) -> None:
        self.calls += other.calls
        self.prompt_tokens += other.prompt_tokens
        self.completion_tokens += other.completion_tokens


class FixOutcome(Record):
    """Imperfections found before assessment and the operations applied (``imperfect/``)."""

    imperfections: list[str] = Field(default_factory=list)
    operations: list[str] = Field(default_factory=list)  # as run, e.g. "rotate:90"
    refused: list[str] = Field(default_factory=list)  # a model's reply or step refused, why
    score_before: float | None = None  # --fix all: the score before quality restoration
    output: str = ""  # `agentiqa fix`: the written image


class Result(Record):
    """One image's outcome; one CSV row."""

    image: str
    reference: str = ""
    key: str = ""
    status: Status = "ok"
    error: str = ""
    score: float | None = None
    level: str = ""
    answer: str = ""
    choice: str | None = None  # the option letter, when the query was a multiple-choice one
    distortions: list[Finding] = Field(default_factory=list)
    tools: list[ToolScore] = Field(default_factory=list)
    usage: Usage = Field(default_factory=Usage)
    seconds: float = 0.0
    # an error that may not recur (VLM down, tool failure): --resume tries the image again
    transient: bool = False
    fix: FixOutcome | None = None  # imperfection checks and fixes, when they ran

    def distortions_cell(self) -> str:
        return ";".join(
            f"{f.category.lower().replace(' ', '_')}:{f.severity}"
            + ("" if f.scope == "Global" else f"@{f.scope}")
            for f in self.distortions
        )

    def tools_cell(self) -> str:
        return ";".join(
            f"{t.tool}{'@' + t.scope if t.scope else ''}={t.norm:.3f}"
            for t in self.tools
            if t.ok and t.norm is not None
        )


Step = Literal[
    "run", "plan", "detect", "analyze", "select", "tool", "summarize", "final", "error",
    "probe", "crop", "eval_plan", "eval_round", "imperfect", "experience",
]  # fmt: skip


class PromptRequest(Record):
    """A rendered role request as the trace keeps it: images by hash, never bytes."""

    prompt: str  # name@version#hash
    messages: list[dict[str, JsonValue]]
    constrained: bool
    top_logprobs: int = 0


class ToolRequest(Record):
    """Which tool ran on which image (and reference), by content hash."""

    tool: str
    image: str
    reference: str | None = None


class ReplyRecord(Record):
    """A model's raw reply, with enough log-probability positions to re-derive fusion."""

    text: str
    finish_reason: str | None = None
    model: str = ""
    tokens: list[str] | None = None
    top_logprobs: list[dict[str, float]] | None = None


class TraceEvent(Record):
    """One JSONL line: a step of one image (or the run header), typed per part."""

    step: Step
    image: str | None = None
    key: str | None = None
    request: PromptRequest | ToolRequest | dict[str, JsonValue] | None = None
    reply: ReplyRecord | None = None
    parsed: JsonValue = None
    latency: float | None = None
    tokens: Usage | None = None
    note: str | None = None
