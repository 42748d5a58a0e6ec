"""Typed records of context-aware probing (Q-Probe; the rules version is ours: docs/fidelity.md).

The two VLM replies (``ProbeTurnReply`` per turn, ``ProbeFinalReply`` at the end) are the
output schemas of ``prompts/probe.yaml`` and ``prompts/probe_final.yaml``; ``ProbeOutcome``
is what the VLM loop and the rules version both return.

A turn reply's boxes are deliberately *not* range-checked here: the output schema bounds
them for constrained decoding, and the code (``agent/probe/crops.py``) rejects a bad box with a
note instead of failing the whole reply, so one bad box never costs the image.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field

from agentiqa_cli.categories import category_of_artefact
from agentiqa_cli.records import Box, Decode, Finding, Severity

# What a crop can be judged to show: the paper's man-made artefacts, plus noise and blur.
ARTEFACT_TYPES: tuple[str, ...] = (
    "none",
    "mosaic",
    "jpeg",
    "posterize",
    "scanlines",
    "grid",
    "noise",
    "blur",
    "other",
)
ArtefactType = Literal[
    "none", "mosaic", "jpeg", "posterize", "scanlines", "grid", "noise", "blur", "other"
]


# Rules version (ours, docs/fidelity.md): penalty by severity before the location weight.
SEVERITY_PENALTY: dict[str, float] = {
    "none": 0.0,
    "slight": 0.25,
    "moderate": 0.5,
    "severe": 1.0,
    "extreme": 1.5,
}
SUBJECT_WEIGHT, ELSEWHERE_WEIGHT = 1.0, 0.5

MAX_BOXES = 3  # per turn
MAX_TURNS = 6  # the paper's T; every VLM reply counts

Stop = Literal["final", "no_box", "limit", "error"]


class _Rec(BaseModel):
    model_config = ConfigDict(extra="forbid")


# -- the VLM's replies -----------------------------------------------------------------------


# Numbers are generated on a grid (``Decode``): scores and penalties in steps of 0.05, box
# coordinates in steps of 0.01 over [0, 1]. Box values are bounded only while decoding:
# the code rejects a bad box with a note rather than failing the reply.
Score = Annotated[float, Field(ge=1.0, le=5.0), Decode(grid=0.05)]
Coordinate = Annotated[float, Decode(grid=0.01, low=0.0, high=1.0)]


class ProbeTurnReply(_Rec):
    """One probing turn: what the model thinks, a tentative score, and where to look next."""

    thought: str = Field(max_length=400)
    tentative_score: Score
    action: Literal["crop", "final"]
    # [x1, y1, x2, y2] each; values and count are checked in code (crops.accept_boxes)
    boxes: Annotated[
        list[tuple[Coordinate, Coordinate, Coordinate, Coordinate]], Decode(max_items=3)
    ] = Field(default_factory=list)


class CropVerdict(_Rec):
    """The model's judgement of one crop (the paper's step-2 crop details)."""

    id: Annotated[str, Field(max_length=16), Decode(enum_from="@value")]
    status: Literal["Clean", "Degraded"]
    type: ArtefactType
    reasoning: str = Field(max_length=200)
    penalty: Annotated[float, Field(ge=0.0, le=2.0), Decode(grid=0.05)]


class ProbeFinalReply(_Rec):
    """The final judgement: a global base score, one verdict per crop, and a final score
    that the code recomputes as clip(base - Σ degraded penalties, 1, 5)."""

    base_score: Score
    crops: Annotated[
        list[CropVerdict], Field(max_length=3 * MAX_TURNS), Decode(items_from="crop_ids")
    ]
    summary: str = Field(max_length=300)
    final_score: Score


# -- the outcome -------------------------------------------------------------------------------


class CropRecord(_Rec):
    """One crop: where it was cut, its identity, and how it was judged and counted."""

    id: str
    turn: int
    box: Box
    pixels: tuple[int, int, int, int] = Field(description="x0, y0, x1, y1 in the original")
    size: tuple[int, int] = Field(description="native width, height")
    sent_size: tuple[int, int] = Field(description="width, height shown (≤ the pixel budget)")
    sha256: str = Field(description="of the native crop's float32 RGB bytes")
    status: Literal["Clean", "Degraded", "Unjudged"] = "Unjudged"
    type: ArtefactType = "none"
    severity: Severity | None = None  # rules version only
    reasoning: str = ""
    penalty_asked: float = 0.0
    penalty: float = 0.0  # what counts, after the zero-penalty and bokeh rules
    on_subject: bool = False
    note: str | None = None


class TurnRecord(_Rec):
    turn: int
    action: Literal["crop", "final"]
    thought: str = ""
    tentative_score: float | None = None
    requested: list[list[float]] = Field(default_factory=list, description="boxes as asked")
    crops: list[str] = Field(default_factory=list, description="ids of the crops cut")
    notes: list[str] = Field(default_factory=list)


class SubjectRecord(_Rec):
    """Where the image is in focus: the bokeh rule and the rules version's weights use it."""

    box: Box | None = None  # None: no structured region at all
    sharp: bool = True  # False: not even the subject is sharp (then blur counts anywhere)
    sharpness: float | None = Field(
        default=None, description="best cell's normalized sharpness, 1-5"
    )


class ProbeOutcome(_Rec):
    method: Literal["vlm", "rules"]
    turns: int = Field(description="VLM replies (every reply counts), or rules turns")
    stop: Stop
    records: list[TurnRecord] = Field(default_factory=list)
    crops: list[CropRecord] = Field(default_factory=list)
    subject: SubjectRecord = Field(default_factory=lambda: SubjectRecord())
    base_score: float
    penalty: float = Field(description="Σ counted penalties of degraded crops")
    final_score: float = Field(description="clip(base - penalty, 1, 5), computed in code")
    reply_final_score: float | None = Field(
        default=None, description="the model's own, if it differs"
    )
    summary: str = ""
    notes: list[str] = Field(default_factory=list)

    @property
    def degraded(self) -> list[CropRecord]:
        return [c for c in self.crops if c.status == "Degraded" and c.penalty > 0]

    def findings(self) -> list[Finding]:
        """The counted crop defects as findings, scoped to the crop's box."""
        out: list[Finding] = []
        for c in self.degraded:
            sev: Severity = c.severity or _severity_for_penalty(c.penalty)
            out.append(
                Finding(
                    scope=f"{c.id} {c.box.as_list(3)}",
                    category=category_of_artefact(c.type),
                    severity=sev,
                    reason=f"{c.type}: {c.reasoning}"[:200],
                )
            )
        return out


def _severity_for_penalty(penalty: float) -> Severity:
    """The VLM gives a penalty, not a severity: read it back on the rules version's scale."""
    if penalty >= 1.25:
        return "extreme"
    if penalty >= 0.75:
        return "severe"
    if penalty >= 0.375:
        return "moderate"
    return "slight"
