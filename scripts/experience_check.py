"""What an experience pool changes in `assess`: select calls and quality, on a synthetic set.

The clean photos of ``--clean`` (default: the photos bundled with scikit-image) are distorted
at levels 1-5 (``bench.synth``; kinds ``--kinds``), then the ``assess`` agent runs over them
twice on the rules backend — without the pool and with ``--experience POOL`` — with every
VLM request counted per role. Reported per run: ``select`` calls, all VLM calls, tools run per
image, which tool measured each category, and the quality that ``eval-bench synth`` reports
(-SRCC(score, level) per kind, its mean, and clean > heavy rank rate).

    python scripts/experience_check.py POOL [--clean DIR] [--kinds a,b] [--levels 1,3,5]
                                            [--work DIR] [--json]
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
from agentiqa_cli.bench.synth_eval import evaluate_synth, load_manifest, synth_items
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


async def one_run(pool: Path | None, manifest: Path, trace: Path) -> dict[str, Any]:
    settings = Settings.model_validate({"experience": pool, "concurrency": 2, "zoom": "off"})
    vlm = CountingRules()
    rows = load_manifest(manifest)
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
    advised = sum(
        1
        for line in trace.read_text().splitlines()
        if '"select"' in line and "experience pool" in line
    )
    return {
        "pool": str(pool) if pool else None,
        "images": len(results),
        "errors": sum(r.status != "ok" for r in results),
        "select_calls": vlm.roles["select"],
        "vlm_calls": sum(vlm.roles.values()),
        "images_advised": advised,
        "tools_per_image": sum(len(r.tools) for r in results) / max(1, len(results)),
        "chosen": dict(sorted(chosen.items())),
        "srcc_level": {k.kind: k.srcc_level for k in report.kinds},
        "mean_srcc_level": report.mean_srcc_level,
        "mean_srcc_within": report.mean_srcc_within,
        "rank_rate": report.rank_rate,
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("pool", type=Path)
    ap.add_argument("--clean", type=Path, help="clean photos (default: scikit-image's)")
    ap.add_argument("--kinds", default=KINDS)
    ap.add_argument("--levels", default="1,2,3,4,5", help="levels to generate, e.g. 1,3,5")
    ap.add_argument("--size", type=int, default=256)
    ap.add_argument("--work", type=Path, default=Path("experience-check"))
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args()
    clean = a.clean
    if clean is None:
        clean = a.work / "clean-src"
        if not clean.is_dir():
            sample_photos(clean, 512)
    manifest = a.work / "images" / "manifest.csv"
    if not manifest.is_file():  # cached: the same seed gives the same images
        levels = [int(v) for v in a.levels.split(",")]
        generate_from_dir(clean, a.work / "images", kinds=a.kinds.split(","), levels=levels,
                          size=a.size)  # fmt: skip
    out = [asyncio.run(one_run(p, manifest, a.work / f"trace-{i}.jsonl"))
           for i, p in enumerate([None, a.pool])]  # fmt: skip
    if a.json:
        print(json.dumps(out, indent=2))
        return 0
    for r in out:
        print(f"== {'with ' + r['pool'] if r['pool'] else 'without a pool'}: {r['images']} images")
        print(f"  select calls {r['select_calls']}, all VLM calls {r['vlm_calls']}, "
              f"images advised by the pool {r['images_advised']}, "
              f"tools per image {r['tools_per_image']:.2f}")  # fmt: skip
        print("  chosen: " + ", ".join(f"{k} x{v}" for k, v in r["chosen"].items()))
        per = ", ".join(f"{k} {v:.3f}" for k, v in r["srcc_level"].items() if v is not None)
        print(f"  -SRCC(score, level): {per}")
        print(f"  mean {r['mean_srcc_level']:.4f}, within {r['mean_srcc_within']:.4f}, "
              f"clean>heavy {r['rank_rate']:.4f}")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
