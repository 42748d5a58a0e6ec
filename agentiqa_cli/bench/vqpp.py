"""`eval-bench vqpp`: the V-QPP-Bench benchmark over a folder of clean images.

Every clean image yields the original plus the ten corruptions, each with a parameter drawn
from the paper's levels by a generator seeded with (seed, image, kind), so one item never
depends on which others are built. The configured backend (rules, a scripted model, a
served VLM) decides each image's operations as `agentiqa fix` does, and per kind:

- tool-selection accuracy (TSA): the chosen tools include every oracle tool type; for the
  original and crop, only when nothing is chosen (V-QPP-Bench §4.3);
- parameter score (PS): exact degrees/direction for rotate/flip, exp(-0.5·|φ-φ*|) for lum,
  the IoU of the box for crop/fill, 0 for a wrong selection; none for deblur/denoise;
- false fixes: originals given any operation; false findings: originals with any fixable
  imperfection reported.
"""

from __future__ import annotations

import csv
import json
import math
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np
from PIL import Image
from pydantic import BaseModel, ConfigDict, Field

from agentiqa_cli.asking.asker import Asker, images_of
from agentiqa_cli.batch import Pair
from agentiqa_cli.config import DEFAULT_QUERY
from agentiqa_cli.errors import ConfigError
from agentiqa_cli.imaging.discover import IMAGE_EXTENSIONS, Job
from agentiqa_cli.imaging.distort import item_rng
from agentiqa_cli.imaging.load import load_image
from agentiqa_cli.imperfect.corrupt import (
    GENERATORS,
    KINDS,
    OTHERS_NEEDED,
    corrupt,
    jpeg_quality,
    located_query,
)
from agentiqa_cli.imperfect.records import (
    _OPERATIONS,
    FIXABLE,
    Crop,
    Fill,
    Flip,
    Lum,
    Operation,
    Rotate,
    describe,
)
from agentiqa_cli.imperfect.roles import decide
from agentiqa_cli.io.guard import whole_file
from agentiqa_cli.io.trace import TraceWriter
from agentiqa_cli.records import FixOutcome, Result
from agentiqa_cli.runtime import Runtime

KINDS_AND_ORIGINAL: tuple[str, ...] = ("original", *KINDS)


class VqppItem(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    image: str  # relative to the benchmark folder
    clean: str
    kind: str
    param: str = ""
    oracle: list[Operation] = Field(default_factory=list)
    # the question asked with this image: for expand and recapture, V-QPP-Bench App. A.1's
    # reformulation naming where the target is; empty: the run's query
    query: str = ""
    jpeg: int | None = None  # the random generator's re-save quality


class VqppRow(BaseModel):
    """One kind's figures (``kind == "overall"``: the mean over kinds)."""

    kind: str
    n: int
    failed: int = 0
    tsa: float | None = None
    ps: float | None = None
    false_fix: float | None = None  # originals only
    false_finding: float | None = None  # originals only


def _u8(x: np.ndarray) -> np.ndarray:
    return np.asarray(np.clip(np.rint(x * 255.0), 0, 255), dtype=np.uint8)


def build(
    clean_dir: Path,
    out_dir: Path,
    seed: int = 0,
    size: int | None = 384,
    limit: int | None = None,
    generator: str = "paper",
    query: str = DEFAULT_QUERY,
    kinds: Sequence[str] = KINDS_AND_ORIGINAL,
) -> list[VqppItem]:
    """Write the originals and their corruptions as PNG (the random generator: JPEG where a
    re-save was drawn) under ``out_dir`` with ``manifest.jsonl``; returns the items.
    ``limit``: the first N clean images (by name). ``query``: the question each item is
    asked with, reformulated with the target's location for expand and recapture.
    ``kinds``: build only these (each item is drawn from its own (seed, image, kind)
    generator, so a subset holds the same items as a full build)."""
    unknown = set(kinds) - set(KINDS_AND_ORIGINAL)
    if unknown:
        raise ConfigError(f"unknown kinds: {', '.join(sorted(unknown))}")
    if generator not in GENERATORS:
        raise ConfigError(f"unknown generator {generator!r} (one of {', '.join(GENERATORS)})")

    sources = sorted(
        p for p in Path(clean_dir).iterdir() if p.is_file() and p.suffix.lower() in IMAGE_EXTENSIONS
    )
    sources = sources[:limit] if limit else sources
    if len(sources) < 2:
        raise ConfigError(f"{clean_dir}: needs at least 2 clean images (collages use others)")
    cleans: list[np.ndarray] = []
    for p in sources:
        im = Image.fromarray(_u8(load_image(p).pixels))
        if size:
            s = size / max(im.size)
            im = im.resize((max(16, round(im.width * s)), max(16, round(im.height * s))),
                           Image.Resampling.LANCZOS)  # fmt: skip
        cleans.append(np.asarray(im, dtype=np.float32) / 255.0)
    out_dir.mkdir(parents=True, exist_ok=True)
    items = []
    for i, (src, x) in enumerate(zip(sources, cleans, strict=True)):
        for kind in (k for k in KINDS_AND_ORIGINAL if k in kinds):
            rng = item_rng(seed, src.name, kind)
            (out_dir / kind).mkdir(exist_ok=True)
            oracle: list[Operation] = []
            if kind == "original":
                y, param = x, ""
            else:
                pool = [j for j in range(len(cleans)) if j != i]
                need = OTHERS_NEEDED.get(kind, 0)
                picks = [int(j) for j in rng.choice(pool, size=need, replace=len(pool) < need)]
                y, oracle, param = corrupt(kind, x, [cleans[j] for j in picks], rng, generator)
            q = jpeg_quality(rng) if generator == "random" else None
            rel = f"{kind}/{src.stem}.{'png' if q is None else 'jpg'}"
            if q is None:
                Image.fromarray(_u8(y)).save(out_dir / rel, format="PNG", compress_level=1)
            else:
                Image.fromarray(_u8(y)).save(out_dir / rel, format="JPEG", quality=q)
            items.append(VqppItem(image=rel, clean=src.name, kind=kind, param=param,
                                  oracle=oracle, query=located_query(kind, param, query),
                                  jpeg=q))  # fmt: skip
    with whole_file(out_dir / "manifest.jsonl", "w", encoding="utf-8") as f:
        for it in items:
            f.write(it.model_dump_json() + "\n")
    return items


def read_manifest(path: Path) -> list[VqppItem]:
    return [VqppItem.model_validate_json(line) for line in path.read_text().splitlines() if line]


# -- deciding ------------------------------------------------------------------------------
async def decide_all(
    rt: Runtime,
    asker: Asker,
    items: Sequence[VqppItem],
    root: Path,
    trace: TraceWriter,
    on_result: Callable[[Result], None] | None = None,
) -> tuple[dict[str, list[Operation] | None], dict[str, list[str]]]:
    """Each item's operations (None: the decision failed or was refused) and findings, by
    the Runtime's batch (decoding, concurrency, error rows, trace) and ``asker``."""

    chosen: dict[str, list[Operation] | None] = {it.image: None for it in items}
    found: dict[str, list[str]] = {}
    name_of = {str(root / it.image): it.image for it in items}
    query_of = {it.image: it.query for it in items}

    async def process(pair: Pair) -> Result:
        usage = pair.usage  # shared with the batch: an error row still counts the calls
        item = name_of[str(pair.job.image)]
        query = query_of[item] or rt.settings.query
        d = await decide(asker, pair.image.pixels, images_of(pair)[0], query, usage,
                         pair.trace)  # fmt: skip
        fix_failed = any(r.startswith("fix refused") for r in d.refused)
        chosen[item] = None if fix_failed else d.operations
        found[item] = [f.type for f in d.found]
        result = pair.result()
        result.fix = FixOutcome(imperfections=found[item], operations=[describe(o) for o in
                                d.operations], refused=d.refused)  # fmt: skip
        result.usage = usage
        return result

    jobs = [Job(image=root / it.image, root=root) for it in items]
    await rt.run(jobs, process, command="eval-bench vqpp", trace=trace, on_result=on_result)
    return chosen, found


# -- metrics -------------------------------------------------------------------------------
def tool_selected(item: VqppItem, chosen: Sequence[Operation]) -> bool:
    if item.kind in ("original", "crop"):
        return not chosen
    return {o.tool for o in item.oracle} <= {o.tool for o in chosen}


def parameter_score(item: VqppItem, chosen: Sequence[Operation]) -> float | None:
    """Mean over the oracle's parametrized operations; None when it has none."""
    scores = []
    for want in item.oracle:
        same = [o for o in chosen if o.tool == want.tool]
        match want:
            case Rotate() | Flip():
                scores.append(float(any(o == want for o in same)))
            case Lum():
                scores.append(max((math.exp(-0.5 * abs(o.factor - want.factor))
                                   for o in same if isinstance(o, Lum)), default=0.0))  # fmt: skip
            case Crop() | Fill():
                assert want.bbox is not None
                ious = [o.bbox.iou(want.bbox) for o in same
                        if isinstance(o, Crop | Fill) and o.bbox is not None]  # fmt: skip
                scores.append(max(ious, default=0.0))
    return float(np.mean(scores)) if scores else None


def report(
    items: Sequence[VqppItem],
    chosen: dict[str, list[Operation] | None],
    found: dict[str, list[str]],
) -> list[VqppRow]:
    """Per kind, then the mean over kinds; an item without a decision (None) failed and
    counts as wrong."""
    rows = []
    for kind in KINDS_AND_ORIGINAL:
        its = [it for it in items if it.kind == kind]
        if not its:
            continue
        ok, ps, failed = [], [], 0
        for it in its:
            ops = chosen.get(it.image)
            if ops is None:
                failed += 1
                ok.append(False)
                ps.append(0.0 if it.oracle else None)
                continue
            hit = tool_selected(it, ops)
            ok.append(hit)
            p = parameter_score(it, ops)
            ps.append(p if hit or p is None else 0.0)
        defined = [p for p in ps if p is not None]
        row = VqppRow(kind=kind, n=len(its), failed=failed, tsa=float(np.mean(ok)),
                      ps=float(np.mean(defined)) if defined else None)  # fmt: skip
        if kind == "original":
            row.false_fix = float(np.mean([bool(chosen.get(it.image)) for it in its]))
            row.false_finding = float(
                np.mean([bool(set(found.get(it.image, [])) & set(FIXABLE)) for it in its])
            )
        rows.append(row)
    tsas = [r.tsa for r in rows if r.tsa is not None]
    pss = [r.ps for r in rows if r.ps is not None]
    rows.append(VqppRow(kind="overall", n=len(items), failed=sum(r.failed for r in rows),
                        tsa=float(np.mean(tsas)) if tsas else None,
                        ps=float(np.mean(pss)) if pss else None))  # fmt: skip
    return rows


def write_report(rows: Sequence[VqppRow], path: Path) -> None:
    with whole_file(path, "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        fields = list(VqppRow.model_fields)
        w.writerow(fields)
        for r in rows:
            d = r.model_dump()
            w.writerow(["" if d[k] is None else (f"{d[k]:.4f}" if isinstance(d[k], float)
                        else d[k]) for k in fields])  # fmt: skip


def write_decisions(
    items: Sequence[VqppItem],
    chosen: dict[str, list[Operation] | None],
    found: dict[str, list[str]],
    path: Path,
) -> None:
    """One JSON line per item: what was done, what the oracle does, what was chosen."""
    with whole_file(path, "w", encoding="utf-8") as f:
        for it in items:
            ops = chosen.get(it.image)
            f.write(json.dumps({
                "image": it.image, "kind": it.kind, "param": it.param, "jpeg": it.jpeg,
                "oracle": _OPERATIONS.dump_python(it.oracle, mode="json"),
                "chosen": None if ops is None else _OPERATIONS.dump_python(ops, mode="json"),
                "found": found.get(it.image, []),
            }) + "\n")  # fmt: skip
