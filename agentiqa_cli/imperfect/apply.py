"""Imperfection fixes around a batch: `agentiqa fix` (write fixed images) and
`assess --fix` (assess what the fixes leave).

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
import io
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Literal, Protocol, get_args

import numpy as np
from numpy.typing import NDArray
from PIL import Image

from agentiqa_cli.asking.asker import Asker, images_of
from agentiqa_cli.batch import Pair
from agentiqa_cli.errors import ImageError
from agentiqa_cli.imaging.load import LoadedImage
from agentiqa_cli.imperfect.checks import check
from agentiqa_cli.imperfect.fixes import apply
from agentiqa_cli.imperfect.records import GEOMETRY_TOOLS, Operation, describe
from agentiqa_cli.imperfect.roles import Decision, decide
from agentiqa_cli.io.guard import identities, image_out_refusal, write_whole
from agentiqa_cli.records import FixOutcome, Result

FixMode = Literal["off", "check", "geometry", "all"]
FIX_MODES: tuple[str, ...] = get_args(FixMode)
FIX_COLUMNS = ["imperfections", "operations", "refused", "output"]
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
        "output": f.output,
    }


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


def _write_png(u8: NDArray[np.uint8], out: Path) -> None:
    buf = io.BytesIO()
    Image.fromarray(u8).save(buf, format="PNG")
    write_whole(out, buf.getvalue())  # renamed into place whole: never half an image


class Fixer:
    """`agentiqa fix`: decide, apply every operation, write the fixed image into ``out_dir``
    (PNG, ``<stem>-<sha8>.png``); never over an input file."""

    def __init__(self, asker: Asker, query: str, out_dir: Path, inputs: Sequence[Path]):
        self.asker, self.query, self.out_dir = asker, query, out_dir
        self.inputs = identities(inputs)  # by (device, inode): links count

    def target(self, pair: Pair) -> Path:
        return self.out_dir / f"{pair.image.path.stem}-{pair.image.sha256[:8]}.png"

    async def __call__(self, pair: Pair) -> Result:
        usage = pair.usage  # shared with the batch: an error row still counts the calls
        d = await _decide(self.asker, pair, self.query)
        x, done, notes = await _apply(pair.image.pixels, d.operations, pair)
        result = pair.result()
        result.fix = _outcome(d, done)
        result.fix.refused += notes
        result.usage = usage
        if done:
            out = self.target(pair)
            if (why := image_out_refusal(out, self.inputs)) is not None:
                raise ImageError(why)
            u8 = (np.clip(x, 0.0, 1.0) * 255.0 + 0.5).astype(np.uint8)
            await asyncio.to_thread(_write_png, u8, out)
            result.fix.output = str(out)
        return result
