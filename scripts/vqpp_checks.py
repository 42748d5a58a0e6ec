"""The V-QPP rules checks on `eval-bench vqpp` builds, several seeds and both generators,
without the batch machinery: per kind, the tool-selection accuracy (TSA) and parameter
score (PS) the rules backend's `fix` gets (``imperfect.roles.rules_fix`` over
``imperfect.checks.check``, what `eval-bench vqpp` with the rules backend decides).

    python scripts/vqpp_checks.py CLEAN_DIR --work /tmp/vq [--seeds 0 1 2]
        [--generators paper random] [--kinds original brightness overlay] [--size 384] [-v]
        [--overlay-spill 0.25]

Builds (of the kinds asked for only) go to ``WORK/<parent>-<folder>-<generator>-<seed>``
and are reused when their manifest holds every kind asked for. ``-v``: every wrong item with
its parameter and what the checks found. ``--overlay-spill``: the overlay check's limit on
how far a box's steps spread (``checks.OVERLAY_SPILL``; ``inf``: the check without it).
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

from agentiqa_cli.bench.vqpp import build, parameter_score, read_manifest, tool_selected
from agentiqa_cli.config import DEFAULT_QUERY
from agentiqa_cli.imaging.load import load_image
from agentiqa_cli.imperfect import checks
from agentiqa_cli.imperfect.checks import check
from agentiqa_cli.imperfect.roles import FixInput, rules_fix


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("clean", type=Path)
    ap.add_argument("--work", type=Path, required=True)
    ap.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    ap.add_argument("--generators", nargs="+", default=["paper", "random"])
    ap.add_argument("--kinds", nargs="+", default=["original", "brightness", "overlay"])
    ap.add_argument("--size", type=int, default=384)
    ap.add_argument("-v", "--verbose", action="store_true")
    ap.add_argument("--overlay-spill", type=float, default=checks.OVERLAY_SPILL)
    args = ap.parse_args()
    checks.OVERLAY_SPILL = args.overlay_spill
    for gen in args.generators:
        tsa: dict[str, list[float]] = {k: [] for k in args.kinds}
        ps: dict[str, list[float]] = {k: [] for k in args.kinds}
        for seed in args.seeds:
            root = args.work / f"{args.clean.parent.name}-{args.clean.name}-{gen}-{seed}"
            items = []
            if (root / "manifest.jsonl").exists():
                items = read_manifest(root / "manifest.jsonl")
            if not set(args.kinds) <= {it.kind for it in items}:
                items = build(args.clean, root, seed=seed, size=args.size, generator=gen,
                              kinds=args.kinds)  # fmt: skip
            for kind in args.kinds:
                ok, scores = [], []
                for it in (i for i in items if i.kind == kind):
                    x = load_image(root / it.image).pixels
                    hints = check(x)
                    q = it.query or DEFAULT_QUERY
                    h, w = x.shape[:2]
                    ops = rules_fix(FixInput(query=q, width=w, height=h, hints=hints)).operations
                    hit = tool_selected(it, ops)
                    ok.append(hit)
                    p = parameter_score(it, ops)
                    if p is not None:
                        scores.append(p if hit else 0.0)
                    if args.verbose and not hit:
                        found = "; ".join(f"{f.type}: {f.reason}" for f in hints) or "-"
                        print(f"  miss {gen} s{seed} {it.image} [{it.param} q{it.jpeg}] {found}")
                tsa[kind].append(float(np.mean(ok)))
                if scores:
                    ps[kind].append(float(np.mean(scores)))
        for kind in args.kinds:
            per = " ".join(f"{t:.3f}" for t in tsa[kind])
            line = f"{args.clean.parent.name} {gen:6s} {kind:10s} TSA {per}  mean {np.mean(tsa[kind]):.3f}"
            if ps[kind]:
                line += f"  PS mean {np.mean(ps[kind]):.3f}"
            print(line, flush=True)


if __name__ == "__main__":
    main()
