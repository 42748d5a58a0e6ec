"""What an experience pool changes in `assess`: select calls and quality, on a synthetic set.

The clean photos of ``--clean`` (default: the photos bundled with scikit-image) are distorted
at levels 1-5 (``bench.synth``; kinds ``--kinds``), then the ``assess`` agent runs over them
twice on the rules backend — without the pool and with ``--experience POOL`` — with every
VLM request counted per role. Reported per run: tools per image (the tools each result rests
on, its ``tools`` column), ``select`` calls and all VLM calls (also per image), which tool
measured each category, and the quality that ``eval-bench synth`` reports (-SRCC(score,
level) per kind, its mean, and clean > heavy rank rate). ``make bench`` (section 11) runs it.

    python scripts/experience_check.py POOL [--clean DIR] [--kinds a,b] [--levels 1,3,5]
                                            [--work DIR] [--json]
    python scripts/experience_check.py POOL --manifest .cache/realset/synth/manifest.csv
                                            [--contents 3] [--kinds a,b]

``--manifest`` runs on an existing synthetic set instead (e.g. the realset's), its first
``--contents`` clean images with every level of ``--kinds``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from collections import Counter
from pathlib import Path
from typing import Any

from agentiqa_cli.asking.rules import RulesVLM
from agentiqa_cli.bench.runs import Bench
from agentiqa_cli.bench.synth import generate_from_dir, sample_photos
from agentiqa_cli.bench.synth_eval import SynthRow, evaluate_synth, load_manifest, synth_items
from agentiqa_cli.config import Settings
from agentiqa_cli.io.trace import TraceWriter
from agentiqa_cli.resources import default_cards_dir
from agentiqa_cli.tools.cards import load_cards
from agentiqa_cli.vlm.base import VLMReply, VLMRequest
from agentiqa_cli.wiring import build_runtime

KINDS = "blur,motion_blur,noise,jpeg,darken,brighten,contrast,desaturate,pixelate"


class CountingRules(RulesVLM):
    """The rules backend, counting the requests per role."""

    def __init__(self) -> None:
        super().__init__(load_cards(default_cards_dir()))
        self.roles: Counter[str] = Counter()

    async def complete(self, request: VLMRequest) -> VLMReply:
        self.roles[request.role] += 1
        return await super().complete(request)


def select_rows(manifest: Path, contents: int | None, kinds: set[str]) -> list[SynthRow]:
    """The rows of the first ``contents`` clean images (all when None) of ``kinds``."""
    rows = load_manifest(manifest)
    refs = list(dict.fromkeys(str(r.reference or r.image) for r in rows))
    keep = set(refs[:contents] if contents else refs)
    return [
        r for r in rows if str(r.reference or r.image) in keep and (r.level == 0 or r.kind in kinds)
    ]


async def one_run(pool: Path | None, rows: list[SynthRow], trace: Path) -> dict[str, Any]:
    settings = Settings.model_validate({"experience": pool, "concurrency": 2, "zoom": "off"})
    vlm = CountingRules()
    items = synth_items(rows, with_reference=False)
    tracer = TraceWriter(trace)
    try:
        async with build_runtime(settings, vlm=vlm) as rt:
            bench = Bench(rt, tracer)
            results = await bench.run("assess", items, await rt.agent(), "assess", False)
    finally:
        tracer.close()
    scores = [r.score if r.status == "ok" else None for r in results]
    report = evaluate_synth(rows, {"assess": scores}).methods[0]
    chosen: Counter[str] = Counter(
        f"{t.distortion}:{t.tool}" for r in results for t in r.tools if t.distortion
    )
    lines = trace.read_text().splitlines()
    advised = sum(1 for line in lines if '"select"' in line and "experience pool" in line)
    pool_only = sum(1 for line in lines if "experience pool named every tool" in line)
    return {
        "pool": str(pool) if pool else None,
        "images": len(results),
        "errors": sum(r.status != "ok" for r in results),
        "select_calls": vlm.roles["select"],
        "vlm_calls": sum(vlm.roles.values()),
        "images_advised": advised,
        "pool_only": pool_only,
        "tools_per_image": sum(len(r.tools) for r in results) / max(1, len(results)),
        "chosen": dict(sorted(chosen.items())),
        "srcc_level": {k.kind: k.srcc_level for k in report.kinds},
        "mean_srcc_level": report.mean_srcc_level,
        "mean_srcc_within": report.mean_srcc_within,
        "rank_rate": report.rank_rate,
    }


def _num(v: float | None) -> str:
    return "-" if v is None else f"{v:.4f}"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("pool", type=Path)
    ap.add_argument("--clean", type=Path, help="clean photos (default: scikit-image's)")
    ap.add_argument("--kinds", default=KINDS)
    ap.add_argument("--levels", default="1,2,3,4,5", help="levels to generate, e.g. 1,3,5")
    ap.add_argument("--size", type=int, default=256)
    ap.add_argument("--work", type=Path, default=Path("experience-check"))
    ap.add_argument("--manifest", type=Path, help="an existing synthetic set's manifest.csv")
    ap.add_argument("--contents", type=int, help="with --manifest: its first N clean images")
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args()
    clean = a.clean
    if a.manifest is not None:
        manifest = a.manifest
    elif clean is None:
        clean = a.work / "clean-src"
        if not clean.is_dir():
            sample_photos(clean, 512)
    if a.manifest is None:
        manifest = a.work / "images" / "manifest.csv"
    if a.manifest is None and not manifest.is_file():  # cached: the same seed gives the same images
        levels = [int(v) for v in a.levels.split(",")]
        generate_from_dir(clean, a.work / "images", kinds=a.kinds.split(","), levels=levels,
                          size=a.size)  # fmt: skip
    rows = select_rows(manifest, a.contents, set(a.kinds.split(",")))
    a.work.mkdir(parents=True, exist_ok=True)
    out = [asyncio.run(one_run(p, rows, a.work / f"trace-{i}.jsonl"))
           for i, p in enumerate([None, a.pool])]  # fmt: skip
    if a.json:
        print(json.dumps(out, indent=2))
        return 0
    for r in out:
        print(f"== {'with ' + r['pool'] if r['pool'] else 'without a pool'}: {r['images']} images")
        n = max(1, r["images"])
        print(f"  per image: tools {r['tools_per_image']:.3f}, select calls "
              f"{r['select_calls'] / n:.4f}, all VLM calls {r['vlm_calls'] / n:.4f}")  # fmt: skip
        print(f"  select calls {r['select_calls']}, all VLM calls {r['vlm_calls']}, "
              f"images advised by the pool {r['images_advised']}, "
              f"images measured by the pool's tools alone {r['pool_only']}")  # fmt: skip
        print("  chosen: " + ", ".join(f"{k} x{v}" for k, v in r["chosen"].items()))
        per = ", ".join(f"{k} {v:.3f}" for k, v in r["srcc_level"].items() if v is not None)
        print(f"  -SRCC(score, level): {per}")
        print(f"  mean {_num(r['mean_srcc_level'])}, within {_num(r['mean_srcc_within'])}, "
              f"clean>heavy {_num(r['rank_rate'])}")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
