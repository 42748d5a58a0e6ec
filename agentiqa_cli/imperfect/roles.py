"""The ``fix`` and ``locate`` roles: typed inputs, the rules backend's answers, and the
decision for one image (checks → fix → locate → operations), every step traced.

A model sees the image and the rules checks' findings as hints; the rules backend answers
from the findings alone. A reply outside the bounded schema (a box out of range, an
unknown tool, degrees outside the enum) is refused by validation: the Asker asks again,
then the decision is "no operations" with a trace note, and the image keeps its row.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import ClassVar

import numpy as np
from numpy.typing import NDArray
from pydantic import Field, JsonValue

from agentiqa_cli.asking.asker import Asker
from agentiqa_cli.asking.registry import Role, register
from agentiqa_cli.errors import VLMError
from agentiqa_cli.imperfect.checks import check
from agentiqa_cli.imperfect.records import (
    FIXABLE,
    Crop,
    Fill,
    FixReply,
    Imperfection,
    LocateReply,
    Operation,
    describe,
)
from agentiqa_cli.io.trace import ImageTrace
from agentiqa_cli.records import Box, Usage
from agentiqa_cli.vlm.base import ImagePart, RoleInput

# what a locate target names, for the rules backend: words → the finding that has the box
_TARGET_WORDS: dict[str, tuple[str, ...]] = {
    "overlay": ("overlay", "pasted", "distractor", "sticker", "occlu", "inset"),
    "watermark": ("watermark", "logo", "caption", "text"),
    "recapture": ("screen", "monitor", "display", "phone", "tv"),
    "expand": ("quadrant", "tile", "panel", "collage", "target"),
    "borders": ("content", "border", "letterbox", "frame"),
}


def hints_view(found: Sequence[Imperfection]) -> list[dict[str, JsonValue]]:
    return [
        {
            "type": f.type,
            "reason": f.reason,
            "box": f.box.cell() if f.box else "",
            "operations": [describe(o) for o in f.operations],
        }
        for f in found
    ]


class FixInput(RoleInput):
    """Which operations (at most four) would undo the image's imperfections."""

    role: ClassVar[str] = "fix"

    query: str
    width: int
    height: int
    hints: list[Imperfection] = Field(default_factory=list)  # the rules checks' findings

    def variables(self) -> dict[str, object]:
        return {
            "query": self.query,
            "width": self.width,
            "height": self.height,
            "hints": hints_view(self.hints),
        }


class LocateInput(RoleInput):
    """The box of ``target`` (V-QPP-Bench's locate tool, as a role)."""

    role: ClassVar[str] = "locate"

    query: str
    target: str
    width: int
    height: int
    hints: list[Imperfection] = Field(default_factory=list)

    def variables(self) -> dict[str, object]:
        return {
            "query": self.query,
            "target": self.target,
            "width": self.width,
            "height": self.height,
        }


# -- the rules backend's answers -----------------------------------------------------------
_QUADRANTS: dict[str, Box] = {
    "top-left": Box(x1=0.0, y1=0.0, x2=0.5, y2=0.5),
    "top-right": Box(x1=0.5, y1=0.0, x2=1.0, y2=0.5),
    "bottom-left": Box(x1=0.0, y1=0.5, x2=0.5, y2=1.0),
    "bottom-right": Box(x1=0.5, y1=0.5, x2=1.0, y2=1.0),
}


def named_quadrant(query: str) -> Box | None:
    """The quadrant a query names ("According to the top-right part of the image, ...":
    V-QPP-Bench App. A.1's reformulation for a collage), or None."""
    q = re.sub(r"[\s_]+", "-", query.lower())
    found = [box for name, box in _QUADRANTS.items() if name in q]
    return found[0] if len(found) == 1 else None


def rules_fix(inputs: FixInput) -> FixReply:
    """The rules checks' operations, in the order found, at most four; "pass" otherwise.
    A collage's crop takes the quadrant the query names, when it names one."""
    ops: list[Operation] = []
    seen = []
    quadrant = named_quadrant(inputs.query)
    for f in inputs.hints:
        if f.type in FIXABLE:
            seen.append(f.type)
            if f.type == "expand" and quadrant is not None:
                ops.append(Crop(bbox=quadrant))
            else:
                ops += f.operations
    return FixReply(imperfections=seen[:6], operations=ops[:4])


def rules_locate(inputs: LocateInput) -> LocateReply:
    target = inputs.target.lower()
    for f in inputs.hints:
        words = _TARGET_WORDS.get(f.type, ())
        if f.box is not None and (f.type in target or any(w in target for w in words)):
            return LocateReply(found=True, box=f.box)
    return LocateReply(found=False, box=None)


register(Role(FixInput, FixReply, step="imperfect", answer=lambda i, _: rules_fix(i)))
register(Role(LocateInput, LocateReply, step="imperfect", answer=lambda i, _: rules_locate(i)))


# -- one image's decision ------------------------------------------------------------------
class Decision:
    """What was found and what will run; ``refused`` notes what was dropped and why."""

    def __init__(self, found: list[Imperfection], operations: list[Operation], refused: list[str]):
        self.found, self.operations, self.refused = found, operations, refused


async def decide(
    asker: Asker,
    pixels: NDArray[np.float32],
    image: ImagePart,
    query: str,
    usage: Usage,
    trace: ImageTrace,
) -> Decision:
    """Rules checks, then the ``fix`` role (the rules backend or a model), then ``locate``
    for every crop/fill without a box. A refused reply means no operations, with a note."""
    x = np.asarray(pixels, dtype=np.float32)
    h, w = x.shape[:2]
    hints = check(x)
    checks_seen: list[JsonValue] = list(hints_view(hints))
    trace.emit("imperfect", parsed={"checks": checks_seen}, note="rules checks")
    refused: list[str] = []
    inputs = FixInput(query=query, width=w, height=h, hints=hints)
    try:
        reply, _ = await asker.ask(inputs, FixReply, usage, trace, [image])
    except VLMError as e:
        refused.append(f"fix refused: {e}")
        trace.emit("imperfect", note=refused[-1])
        return Decision(_properties(hints), [], refused)
    ops: list[Operation] = []
    for op in reply.operations:
        if isinstance(op, Crop | Fill) and op.bbox is None:
            located = await _locate(asker, op.target, query, w, h, hints, image, usage, trace)
            if located is None:
                refused.append(f"{op.tool}: {op.target!r} not located")
                trace.emit("imperfect", note=refused[-1])
                continue
            op = op.model_copy(update={"bbox": located})
        ops.append(op)
    by_type = {f.type: f for f in hints}
    found = [
        by_type.get(t) or Imperfection(type=t, reason="seen by the fix role")
        for t in dict.fromkeys(reply.imperfections)
    ]
    found += [f for f in _properties(hints) if f.type not in reply.imperfections]
    trace.emit(
        "imperfect",
        parsed={"imperfections": [f.type for f in found], "operations": [describe(o) for o in ops]},
        note="decision",
    )
    return Decision(found, ops, refused)


async def _locate(
    asker: Asker,
    target: str,
    query: str,
    w: int,
    h: int,
    hints: list[Imperfection],
    image: ImagePart,
    usage: Usage,
    trace: ImageTrace,
) -> Box | None:
    inputs = LocateInput(query=query, target=target or "the main subject", width=w, height=h,
                         hints=hints)  # fmt: skip
    try:
        reply, _ = await asker.ask(inputs, LocateReply, usage, trace, [image])
    except VLMError as e:
        trace.emit("imperfect", note=f"locate refused: {e}")
        return None
    return reply.box if reply.found else None


def _properties(hints: list[Imperfection]) -> list[Imperfection]:
    return [f for f in hints if f.type not in FIXABLE]
