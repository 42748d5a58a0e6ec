"""Imperfection fixes around a batch: `agentiqa fix` (write fixed images, each only if it
scores no lower than its input) and `assess --fix` (assess what the fixes leave).

``--fix geometry`` applies only operations that change what is looked at (rotate, flip,
crop, fill); ``--fix all`` also restores quality (lum, deblur, denoise) and scores the
image before that restoration (geometry fixed) and after it. ``--fix check`` runs only the
rules checks (no model call) to fill the ``imperfections`` column; ``--fix off`` (the
default) runs nothing: the checks cost about as much as the rules agent itself.
"""

from __future__ import annotations

import asyncio
import dataclasses
import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

import numpy as np
from numpy.typing import NDArray
from pydantic import JsonValue

from agentiqa_cli.asking.asker import Asker, images_of
from agentiqa_cli.batch import Pair
from agentiqa_cli.errors import ImageError
from agentiqa_cli.imaging.load import DEFAULT_MAX_PIXELS, LoadedImage, decode_bytes
from agentiqa_cli.imperfect.checks import check
from agentiqa_cli.imperfect.fixes import apply
from agentiqa_cli.imperfect.output import Encoding, ImageFormat, encode, encoding_of
from agentiqa_cli.imperfect.records import (
    GEOMETRY_TOOLS,
    FixMode,
    Operation,
    describe,
)
from agentiqa_cli.imperfect.roles import Decision, decide
from agentiqa_cli.io.guard import identities, image_out_refusal, write_whole
from agentiqa_cli.records import FixOutcome, Result
from agentiqa_cli.scoring import ToolScorer


def _image(pair: Pair, pixels: NDArray[np.float32]) -> LoadedImage:
    digest = hashlib.sha256(np.ascontiguousarray(pixels).tobytes()).hexdigest()
    return LoadedImage(path=pair.image.path, pixels=pixels, sha256=digest,
                       original_mode=pair.image.original_mode)  # fmt: skip


def _outcome(d: Decision, ops: Sequence[Operation]) -> FixOutcome:
    return FixOutcome(
        imperfections=[f.type for f in d.found],
        operations=[describe(o) for o in ops],
        refused=list(d.refused),
    )


async def _decide(asker: Asker, pair: Pair, query: str) -> Decision:
    """The decision for ``pair``, its calls counted on the image's usage record."""
    return await decide(asker, pair.image.pixels, images_of(pair)[0], query, pair.usage, pair.trace)


async def _apply(
    pixels: NDArray[np.float32], ops: Sequence[Operation], pair: Pair
) -> tuple[NDArray[np.float32], list[Operation], list[str]]:
    """Run ``ops`` in order; one that fails (a crop too small) is skipped with a note."""

    def run() -> tuple[NDArray[np.float32], list[Operation], list[str]]:
        x, done, notes = pixels, [], []
        for op in ops:
            try:
                x = apply(x, [op])
            except ValueError as e:
                notes.append(f"{describe(op)} skipped: {e}")
                continue
            done.append(op)
        return x, done, notes

    x, done, notes = await asyncio.to_thread(run)
    for n in notes:
        pair.trace.emit("imperfect", note=n)
    pair.trace.emit("imperfect", parsed={"applied": [describe(o) for o in done]})
    return x, done, notes


class Assessor(Protocol):
    """The agent ``assess --fix`` runs on the fixed image; the fix role asks through its
    asker, about its query (the one source of both)."""

    @property
    def ask(self) -> Asker: ...

    @property
    def query(self) -> str: ...

    async def __call__(self, pair: Pair) -> Result: ...


class FixingAgent:
    """``assess --fix``: checks (and the fix role) before the agent, per image."""

    def __init__(self, agent: Assessor, mode: FixMode):
        self.agent, self.asker, self.query, self.mode = agent, agent.ask, agent.query, mode

    async def __call__(self, pair: Pair) -> Result:
        if self.mode == "off":
            return await self.agent(pair)
        if self.mode == "check":
            found = await asyncio.to_thread(check, pair.image.pixels)
            result = await self.agent(pair)
            result.fix = FixOutcome(imperfections=[f.type for f in found])
            return result
        # the image's one usage record: the agent runs below add to it too (the pairs they
        # get share it), and an error row still counts what was spent
        usage = pair.usage
        d = await _decide(self.asker, pair, self.query)
        geometry = [o for o in d.operations if o.tool in GEOMETRY_TOOLS]
        x, done, notes = await _apply(pair.image.pixels, geometry, pair)
        fixed = dataclasses.replace(pair, image=_image(pair, x)) if done else pair
        if self.mode == "geometry":
            result = await self.agent(fixed)
            result.fix = _outcome(d, done)
            result.fix.refused += notes
        else:
            quality = [o for o in d.operations if o.tool not in GEOMETRY_TOOLS]
            before = await self.agent(fixed) if quality else None
            x2, done2, notes2 = await _apply(x, quality, pair)
            restored = dataclasses.replace(pair, image=_image(pair, x2)) if done2 else fixed
            result = await self.agent(restored)
            result.fix = _outcome(d, done + done2)
            result.fix.refused += notes + notes2
            result.fix.score_before = (before or result).score
        result.usage = usage
        return result


# A fix is kept when the fixed image's score is at least the input's minus this. The
# default tools are deterministic and the fixed image is measured exactly as it will be
# read back, so no margin is needed for noise: 0 means never lower. Measured on the
# realset's over-exposed and clean photos, 0.01 would have kept two outputs 0.001 and 0.006
# below their inputs (a lum and a border crop); --tolerance loosens it, e.g. for a VLM's
# rotations, which the no-reference tools cannot see but which move their score by a few
# hundredths (docs/guides.md, "A fix never makes the image worse").
TOLERANCE = 0.0


@dataclass(frozen=True)
class Verdict:
    """Whether a fix is kept: both scores as ``score`` reports them, and why."""

    before: float | None
    after: float | None
    kept: bool
    reason: str


def judge(scorer: ToolScorer, before: LoadedImage, after: LoadedImage, tolerance: float) -> Verdict:
    """Keep the fix only when ``after`` (the fixed image as written) scores at least
    ``before`` (the input) minus ``tolerance``; a score that cannot be measured keeps
    nothing (never worse means never unmeasured either)."""
    b, b_scores = scorer.measure(before)
    a, a_scores = scorer.measure(after)
    for name, value, scores in (("input", b, b_scores), ("fixed image", a, a_scores)):
        if value is None:
            why = "; ".join(s.error or f"{s.tool} not on the 1-5 scale" for s in scores
                            if not (s.ok and s.calibrated)) or "no tool"  # fmt: skip
            return Verdict(b, a, False, f"refused: the {name}'s score cannot be measured ({why})")
    assert a is not None and b is not None
    change = f"score {b:.3f} → {a:.3f}"
    if a >= b - tolerance:
        return Verdict(b, a, True, f"kept: {change}")
    return Verdict(b, a, False, f"refused: {change} is below the input's (tolerance {tolerance:g})")


def _u8(x: NDArray[np.float32]) -> NDArray[np.uint8]:
    return (np.clip(x, 0.0, 1.0) * 255.0 + 0.5).astype(np.uint8)


class Fixer:
    """`agentiqa fix`: decide, apply every operation, then keep the fix only if the fixed
    image (encoded as it will be written) scores no lower than the input by ``scorer``
    (``score``'s default no-reference tools and fusion); a kept fix is written into
    ``out_dir`` as ``<stem>-<sha8>.<ext>`` in the input's format class (``output.py``),
    never over an input file. Without ``out_dir`` (``--check``) nothing is written."""

    def __init__(
        self,
        asker: Asker,
        query: str,
        out_dir: Path | None,
        inputs: Sequence[Path],
        scorer: ToolScorer,
        *,
        tolerance: float = TOLERANCE,
        image_format: ImageFormat | None = None,
        max_pixels: int = DEFAULT_MAX_PIXELS,
    ):
        self.asker, self.query, self.out_dir = asker, query, out_dir
        self.inputs = identities(inputs)  # by (device, inode): links count
        self.scorer, self.tolerance = scorer, tolerance
        self.image_format, self.max_pixels = image_format, max_pixels

    def target(self, pair: Pair, enc: Encoding) -> Path:
        assert self.out_dir is not None
        return self.out_dir / f"{pair.image.path.stem}-{pair.image.sha256[:8]}{enc.suffix}"

    def _measure(self, pair: Pair, x: NDArray[np.float32]) -> tuple[Encoding, bytes, Verdict]:
        enc = encoding_of(pair.image.path, self.image_format)
        data = encode(_u8(x), enc)
        fixed = decode_bytes(data, pair.image.path, self.max_pixels)  # as `score` will read it
        return enc, data, judge(self.scorer, pair.image, fixed, self.tolerance)

    async def __call__(self, pair: Pair) -> Result:
        usage = pair.usage  # shared with the batch: an error row still counts the calls
        d = await _decide(self.asker, pair, self.query)
        x, done, notes = await _apply(pair.image.pixels, d.operations, pair)
        result = pair.result()
        result.fix = fix = _outcome(d, done)
        fix.refused += notes
        result.usage = usage
        if not done:
            return result
        enc, data, verdict = await asyncio.to_thread(self._measure, pair, x)
        fix.score_before, fix.score_after = verdict.before, verdict.after
        fix.kept, fix.verdict = verdict.kept, verdict.reason
        seen: dict[str, JsonValue] = {"score_before": verdict.before, "kept": verdict.kept,
                                      "score_after": verdict.after, "encoding": enc.label}  # fmt: skip
        pair.trace.emit("imperfect", parsed=seen, note=verdict.reason)
        if verdict.kept and self.out_dir is not None:
            out = self.target(pair, enc)
            if (why := image_out_refusal(out, self.inputs)) is not None:
                raise ImageError(why)
            await asyncio.to_thread(write_whole, out, data)  # renamed into place whole
            fix.output = str(out)
        return result
