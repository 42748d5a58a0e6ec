"""Typed records shared by the core: plans, findings, tool scores, results, trace events.

CSV rows and JSONL trace lines are produced from these models and nothing else.
"""

from __future__ import annotations

import hashlib
import math
import re
from dataclasses import dataclass
from typing import Annotated, Literal, get_args

from pydantic import BaseModel, ConfigDict, Field, JsonValue, model_validator

# re-exported: records are where most modules import the category type from
from agentiqa_cli.categories import CATEGORIES as CATEGORIES
from agentiqa_cli.categories import Category as Category

# Quality levels, worst first: the level's index + 1 is its score on the 1–5 scale.
Level = Literal["bad", "poor", "fair", "good", "excellent"]
LEVELS: tuple[Level, ...] = get_args(Level)

PresentSeverity = Literal["slight", "moderate", "severe", "extreme"]
Severity = Literal["none", PresentSeverity]
SEVERITIES: tuple[Severity, ...] = ("none", *get_args(PresentSeverity))

# how many images a round of `agentiqa evaluate` samples, and sub-aspects a query names
EVAL_N_MIN, EVAL_N_MAX = 3, 9
EVAL_MAX_ASPECTS = 5

# AgenticIQA-Eval's tracks: the component a multiple-choice question tests (AgenticIQA §4)
# as many letters as a question file may give options (bench/mcq.py accepts A-Z)
Letter = Literal[
    "A", "B", "C", "D", "E", "F", "G", "H", "I", "J", "K", "L", "M",
    "N", "O", "P", "Q", "R", "S", "T", "U", "V", "W", "X", "Y", "Z",
]  # fmt: skip
OPTION_LETTERS = "".join(get_args(Letter))  # an interpret reply's alphabet

Track = Literal["planner", "executor-distortion", "executor-tool", "summarizer"]

Mode = Literal["FR", "NR"]
# tools that need downloaded weights, offered to the agent: when cached, always, or never
LearnedTools = Literal["auto", "on", "off"]
Status = Literal["ok", "error"]


def level_of(score: float) -> Level:
    """The level whose integer score is nearest (1 bad … 5 excellent)."""
    return LEVELS[min(4, max(0, math.floor(score + 0.5) - 1))]


_LEVEL_WORDS = re.compile(rf"^({'|'.join(LEVELS)}) quality\b", re.IGNORECASE)


def answer_at_level(answer: str, level: str) -> str:
    """``answer`` with a leading "<level> quality" set to the row's ``level``, so the words
    a user reads match the row's level when the score moved after the answer was written
    (a probe's penalties, the findings' cap). Other answers are kept as written."""
    if not level:
        return answer
    return _LEVEL_WORDS.sub(f"{level.capitalize()} quality", answer, count=1)


@dataclass(frozen=True)
class Decode:
    """Bounds a field gets when a VLM generates it under constrained decoding.

    Validation ignores them; ``agent.schemas.reply_schema`` turns a reply model with these
    annotations into its output schema. ``*_from`` name a value known only at run time
    (``asking/schemas.py``): ``enum_from`` a string that is one of its values, ``keys_from``
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


# a fraction of an image side; generated on a 1% grid when a model writes it
Unit = Annotated[float, Field(ge=0.0, le=1.0), Decode(grid=0.01)]

# A coordinate this close to a pixel edge is on it: ``Box.of_pixels`` divides, and the
# product back (29/100·100 = 28.999…) must not move the edge by a pixel.
_EDGE_SLIP = 1e-6


class Box(BaseModel):
    """A region as fractions of the image's width and height: (x1, y1) top-left, (x2, y2)
    bottom-right, x to the right, y downwards, in [0, 1], with x1 < x2 and y1 < y2.
    The one box of the project: probe crops, located objects, imperfection regions and the
    crop/fill operations."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    x1: Unit
    y1: Unit
    x2: Unit
    y2: Unit

    @model_validator(mode="after")
    def _ordered(self) -> Box:
        if not (self.x1 < self.x2 and self.y1 < self.y2):
            raise ValueError("a box needs x1 < x2 and y1 < y2")
        return self

    @classmethod
    def of_pixels(cls, left: int, top: int, right: int, bottom: int, w: int, h: int) -> Box:
        """The box whose ``pixels(w, h)`` is exactly this rectangle (right/bottom exclusive)."""
        return cls(x1=left / w, y1=top / h, x2=right / w, y2=bottom / h)

    def pixels(self, width: int, height: int) -> tuple[int, int, int, int]:
        """(left, top, right, bottom), right/bottom exclusive, never empty: every pixel the
        box touches (Q-Probe Eq. 9: columns ⌊x1·W⌋..⌈x2·W⌉, rows ⌊y1·H⌋..⌈y2·H⌉)."""
        left = min(width - 1, math.floor(self.x1 * width + _EDGE_SLIP))
        top = min(height - 1, math.floor(self.y1 * height + _EDGE_SLIP))
        right = max(left + 1, min(width, math.ceil(self.x2 * width - _EDGE_SLIP)))
        bottom = max(top + 1, min(height, math.ceil(self.y2 * height - _EDGE_SLIP)))
        return left, top, right, bottom

    @property
    def area(self) -> float:
        return (self.x2 - self.x1) * (self.y2 - self.y1)

    def intersection(self, other: Box) -> float:
        w = min(self.x2, other.x2) - max(self.x1, other.x1)
        h = min(self.y2, other.y2) - max(self.y1, other.y1)
        return max(0.0, w) * max(0.0, h)

    def iou(self, other: Box) -> float:
        inter = self.intersection(other)
        union = self.area + other.area - inter
        return inter / union if union > 0 else 0.0

    def as_list(self, digits: int = 4) -> list[float]:
        """[x1, y1, x2, y2] rounded, for JSON (trace) and notes."""
        return [round(v, digits) for v in (self.x1, self.y1, self.x2, self.y2)]

    def cell(self) -> str:
        """``x1,y1,x2,y2`` for a CSV cell or an operation token: 3 decimals when they are
        the value, else every digit (``repr``), so the cell always reads back as this box:
        rounded, an off-grid box could lose its area or cover other pixels."""
        return ",".join(
            f"{v:.3f}" if round(v, 3) == v else repr(float(v))
            for v in (self.x1, self.y1, self.x2, self.y2)
        )


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
    """The planner's output (AgenticIQA §3.1, Appendix A.2)."""

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
    # what the distortion is within its category when the category alone does not say it
    # (under-exposed / over-exposed, resolution loss): categories.Distortion.says
    says: str = ""

    @property
    def named(self) -> str:
        """The category in words, with what it is when that adds anything."""
        return self.category.lower() + (f" ({self.says})" if self.says else "")


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
    # the data its card's logistic was fitted on when that is not the run's own (a pyiqa
    # no-reference card's shipped curve, ``CardSet.fitted_elsewhere``): ``norm``'s level is
    # that data's, not necessarily this image's
    fit: str | None = None

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
    # --fix all: the score before quality restoration; `agentiqa fix`: the input's score
    score_before: float | None = None
    score_after: float | None = None  # `agentiqa fix`: the fixed image's, as it is written
    kept: bool | None = None  # `agentiqa fix`: the fix was kept (None: nothing to fix)
    verdict: str = ""  # why it was kept or refused
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
            f"{f.category.lower().replace(' ', '_')}"
            + (f"({f.says})" if f.says else "")
            + f":{f.severity}"
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
STEPS: tuple[Step, ...] = get_args(Step)


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

    text: str  # the first TRACED_TEXT characters of a longer reply: its length and hash follow
    finish_reason: str | None = None
    model: str = ""
    tokens: list[str] | None = None
    top_logprobs: list[dict[str, float]] | None = None
    text_length: int | None = None  # the whole reply's, when ``text`` is cut
    text_sha256: str | None = None

    @classmethod
    def bounded(cls, text: str, **fields: object) -> ReplyRecord:
        """A record of a reply whose text the trace keeps at most ``TRACED_TEXT`` of."""
        if len(text) <= TRACED_TEXT:
            return cls(text=text, **fields)  # type: ignore[arg-type]
        digest = hashlib.sha256(text.encode("utf-8", errors="surrogatepass")).hexdigest()
        return cls(text=text[:TRACED_TEXT], text_length=len(text), text_sha256=digest,
                   **fields)  # type: ignore[arg-type]  # fmt: skip


TRACED_TEXT = 64 * 1024  # characters of one reply kept in the trace


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
