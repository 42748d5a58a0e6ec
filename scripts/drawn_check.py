"""How ``detectors.drawn_white`` reads drawings against photographs, on its design data only.

Drawings: the ``bench.drawings.DESIGN`` packages' PNGs (matplotlib plots of the scikit-learn
and pandas docs, Octave's manual, GIMP's dialogs) and ``bench.renders`` at seeds 1-4 (the
quality check's renders are seed 0). Photographs: the fit set (``make realset``'s builder,
scripts/fitset.yaml): its clean images and every damaged series, the over-exposed ones
included. The held-out drawings are measured by ``scripts/quality_check.py --series
drawings``, never here.

    python scripts/drawn_check.py [--fitset .cache/fitset] [--drawings .cache/drawings]

Prints, for drawings and photos with a third or more of white and for all: how many read
as a drawing on white (``drawn_white`` above 0.5) and on another flat background
(``drawn_flat``), and the percentiles of the white reading's shoulder and texture. The fit
set holds a few flat graphics (wallpapers) among its photographs.
"""

from __future__ import annotations

import argparse
import sys
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np

from agentiqa_cli.bench.drawings import DESIGN, drawings
from agentiqa_cli.bench.renders import generate_renders

ROOT = Path(__file__).resolve().parent.parent


def _read(path: Path) -> tuple[float, float, float, float, float]:
    """(white share, light tones outside fills per white sample, texture, drawn_white,
    drawn_flat) of one image."""
    from agentiqa_cli.imaging.load import load_image
    from agentiqa_cli.tools.detectors import drawn_flat, drawn_parts, drawn_white

    image = load_image(path)
    share, shoulder, fills, texture, _ = drawn_parts(image)
    return share, min(99.0, shoulder - fills), texture, drawn_white(image), drawn_flat(image)


def main() -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--fitset", type=Path, default=ROOT / ".cache" / "fitset")
    ap.add_argument("--drawings", type=Path, default=ROOT / ".cache" / "drawings")
    args = ap.parse_args()
    if not (args.fitset / "camera").is_dir():
        print(
            f"drawn_check: no fit set at {args.fitset} (make camera-model builds it)",
            file=sys.stderr,
        )
        return 2
    drawn = drawings(DESIGN, args.drawings)
    for seed in (1, 2, 3, 4):
        drawn += [r.path for r in generate_renders(args.drawings / f"renders-{seed}", seed=seed)]
    photos = sorted(
        [
            *args.fitset.glob("camera/*.jpg"),
            *args.fitset.glob("lossless/*.png"),
            *args.fitset.glob("clean/*.png"),
        ]
    )
    with ProcessPoolExecutor(2) as pool:
        groups = {
            "drawings": np.array(list(pool.map(_read, drawn, chunksize=8))),
            "fit set": np.array(list(pool.map(_read, photos, chunksize=8))),
        }
    print(
        f"{'':10s} {'where':12s} {'n':>5s} {'white>0.5':>9s} {'flat>0.5':>8s}  "
        "shoulder p10/50/90   texture p10/50/90"
    )
    for name, v in groups.items():
        for where, keep in (("white>=1/3", v[:, 0] >= 1 / 3), ("all", v[:, 0] >= 0)):
            s = v[keep]
            if not len(s):
                continue
            sh = np.percentile(s[:, 1], [10, 50, 90])
            tx = np.percentile(s[:, 2], [10, 50, 90])
            print(
                f"{name:10s} {where:12s} {len(s):5d} {np.mean(s[:, 3] > 0.5):9.3f} "
                f"{np.mean(s[:, 4] > 0.5):8.3f}  "
                f"{sh[0]:5.2f} {sh[1]:5.2f} {sh[2]:5.2f}    {tx[0]:5.2f} {tx[1]:5.2f} {tx[2]:5.2f}"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
