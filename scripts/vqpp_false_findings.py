"""False findings of the V-QPP rules checks (imperfect/checks.py) on clean photos, at
their own size: the share of images with any fixable finding, and per type.

    python scripts/vqpp_false_findings.py FOLDER [FOLDER ...] [--match clean]

``--match``: only files whose name contains it (the realset's camera folder holds clean
JPEGs and degraded ones: ``--match __clean_``). The checks' thresholds were tuned on the
fit set (.cache/fitset/clean); report on other folders (docs/vqpp.md).
"""

from __future__ import annotations

import argparse
from collections import Counter
from pathlib import Path

from agentiqa_cli.imaging.discover import IMAGE_EXTENSIONS
from agentiqa_cli.imaging.load import load_image
from agentiqa_cli.imperfect.checks import FIXABLE_TYPES, check


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("folders", nargs="+", type=Path)
    ap.add_argument("--match", default="")
    args = ap.parse_args()
    for folder in args.folders:
        paths = sorted(p for p in folder.iterdir()
                       if p.suffix.lower() in IMAGE_EXTENSIONS and args.match in p.name)  # fmt: skip
        by_type: Counter[str] = Counter()
        flagged = []
        for p in paths:
            types = {f.type for f in check(load_image(p).pixels)} & set(FIXABLE_TYPES)
            by_type.update(types)
            if types:
                flagged.append(f"{p.name} ({', '.join(sorted(types))})")
        n = len(paths)
        print(
            f"{folder}: {len(flagged)}/{n} = {len(flagged) / max(1, n):.1%} with a fixable finding"
        )
        for t, k in sorted(by_type.items()):
            print(f"  {t}: {k}/{n} = {k / max(1, n):.1%}")
        for f in flagged:
            print(f"    {f}")


if __name__ == "__main__":
    main()
