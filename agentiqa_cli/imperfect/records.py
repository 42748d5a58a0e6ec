"""Typed records of imperfection checks and fixes: boxes, operations, findings, replies.

Everything a model may generate is bounded here, once: at most four operations, degrees and
directions as enums, boxes (``records.Box``) normalized to [0, 1] with positive extent,
short strings. The ``fix`` and ``locate`` roles' JSON schemas are derived from these models
(declared with the roles in ``imperfect/roles.py``), so a reply outside them is refused before anything runs.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Literal, get_args

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter

from agentiqa_cli.records import Box, Decode, Result, Unit

MAX_OPERATIONS = 4

# The ten corruption types of V-QPP-Bench (Table 1) that have a fix, then the per-image
# properties CleanVision reports (informational: no operation restores them).
Fixable = Literal[
    "rotation", "flip", "brightness", "blur", "noise",
    "expand", "overlay", "watermark", "recapture", "borders",
]  # fmt: skip
Property = Literal["low_information", "odd_aspect_ratio", "odd_size", "grayscale"]
ImperfectionType = Literal[Fixable, Property]
FIXABLE: tuple[str, ...] = get_args(Fixable)
PROPERTIES: tuple[str, ...] = get_args(Property)
ToolName = Literal["rotate", "flip", "lum", "deblur", "denoise", "crop", "fill"]
GEOMETRY_TOOLS: frozenset[str] = frozenset({"rotate", "flip", "crop", "fill"})
QUALITY_TOOLS: frozenset[str] = frozenset({"lum", "deblur", "denoise"})


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


# -- operations (V-QPP-Bench Table 2; locate is a role of its own) ---------------------------
class Rotate(_Model):
    tool: Literal["rotate"] = "rotate"
    degrees: Literal[90, 180, 270]  # clockwise


class Flip(_Model):
    tool: Literal["flip"] = "flip"
    direction: Literal["horizontal", "vertical", "both"]


class Lum(_Model):
    tool: Literal["lum"] = "lum"
    factor: Annotated[float, Field(ge=0.25, le=4.0), Decode(grid=0.05)]  # I' = clip(factor · I)


class Deblur(_Model):
    tool: Literal["deblur"] = "deblur"


class Denoise(_Model):
    tool: Literal["denoise"] = "denoise"


Target = Annotated[str, Field(max_length=60)]


class Crop(_Model):
    """Keep only ``bbox``; without a box the ``locate`` role is asked for ``target``."""

    tool: Literal["crop"] = "crop"
    bbox: Box | None = None
    target: Target = ""


class Fill(_Model):
    """Paint ``bbox`` white (V-QPP-Bench: masks a distractor without moving anything)."""

    tool: Literal["fill"] = "fill"
    bbox: Box | None = None
    target: Target = ""


Operation = Annotated[
    Rotate | Flip | Lum | Deblur | Denoise | Crop | Fill, Field(discriminator="tool")
]


_OPERATIONS: TypeAdapter[list[Operation]] = TypeAdapter(list[Operation])  # (de)serialise lists


def describe(op: Operation) -> str:
    """One operation as a CSV/trace token: ``rotate:90``, ``crop:0.000,0.000,0.500,0.500``."""
    match op:
        case Rotate():
            return f"rotate:{op.degrees}"
        case Flip():
            return f"flip:{op.direction}"
        case Lum():
            return f"lum:{op.factor:.3g}"
        case Crop() | Fill():
            return f"{op.tool}:{op.bbox.cell() if op.bbox else op.target}"
    return op.tool


class Imperfection(_Model):
    """One finding: its type, how sure the check is (0-1), the region when it has one,
    the measured signal in words, and the operations that would undo it."""

    type: ImperfectionType
    confidence: Unit = 1.0
    box: Box | None = None
    reason: Annotated[str, Field(max_length=200)] = ""
    operations: list[Operation] = Field(default_factory=list, max_length=MAX_OPERATIONS)


def imperfections_cell(found: list[Imperfection]) -> str:
    return ";".join(f.type for f in found)


def operations_cell(ops: list[Operation]) -> str:
    return ";".join(describe(op) for op in ops)


# -- the roles' replies --------------------------------------------------------------------
class FixReply(_Model):
    """The ``fix`` role: the imperfections seen and at most four operations, in order;
    an empty list is "pass"."""

    imperfections: list[ImperfectionType] = Field(default_factory=list, max_length=6)
    operations: list[Operation] = Field(default_factory=list, max_length=MAX_OPERATIONS)


class LocateReply(_Model):
    """The ``locate`` role: the box of the named thing, or ``found: false``."""

    found: bool
    box: Box | None = None


# the fix columns of a results CSV (fix; assess --fix), here so that a plain assess does not
# load the fixes (scipy.signal, PyWavelets) to write them
FixMode = Literal["off", "check", "geometry", "all"]
FIX_MODES: tuple[str, ...] = get_args(FixMode)
FIX_COLUMNS = [
    "imperfections", "operations", "refused",
    "score_before", "score_after", "kept", "verdict", "output",
]  # fmt: skip
ASSESS_FIX_COLUMNS = ["imperfections", "operations", "refused", "score_before"]


def fix_cells(r: Result) -> Mapping[str, str]:
    """The fix columns of one row (empty when nothing ran)."""
    f = r.fix
    if f is None:
        return {}
    return {
        "imperfections": ";".join(f.imperfections),
        "operations": ";".join(f.operations),
        "refused": " | ".join(f.refused),
        "score_before": "" if f.score_before is None else f"{f.score_before:.3f}",
        "score_after": "" if f.score_after is None else f"{f.score_after:.3f}",
        "kept": "" if f.kept is None else ("yes" if f.kept else "no"),
        "verdict": f.verdict,
        "output": f.output,
    }
