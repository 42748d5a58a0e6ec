"""Regenerate the logistic parameters of the built-in detectors' tool cards.

Procedure (deterministic; see agentiqa_cli/bench/builtin_fit.py for the pseudo-MOS):
  1. write the photos bundled with scikit-image (bench.synth.PHOTOS) at 512 px on the long side;
  2. distort each with every kind of bench.synth at levels 1-5, seed 0;
  3. read every built-in detector on every image;
  4. per detector, fit the logistic of tools.logistic with its linear term fixed at 0 (a
     monotone sigmoid; bench.builtin_fit.fit_sigmoid) of its reading against pseudo-MOS = 5
     (clean) or 5 - 0.8 * level (the kinds it targets), and write the parameters into
     tool_cards/<name>.yaml with that procedure as logistic.source.

    python scripts/fit_builtin_cards.py [--cards tool_cards] [--work DIR] [--dry-run]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

from agentiqa_cli.bench.builtin_fit import COLOUR_ONLY, TARGETS, fit_detector, read_items
from agentiqa_cli.bench.synth import KINDS, PHOTOS, generate, sample_photos
from agentiqa_cli.tools.cards import Logistic, load_card, write_card_logistic

SIZE = 512
SEED = 0


def source_text(kinds: tuple[str, ...], n: int, photos: int, rmse: float, colour: bool) -> str:
    which = f"{photos} colour photos" if colour else f"{photos} photos"
    return (
        f"scripts/fit_builtin_cards.py: bench.synth on the {which} bundled with scikit-image "
        f"({SIZE} px long side, seed {SEED}); pseudo-MOS 5 for clean, 5 - 0.8*level for "
        f"{'/'.join(kinds)} levels 1-5, clean weighted to balance; 5PL with b4 = 0; {n} images, RMSE {rmse:.3f}"
    )


def main() -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--cards", type=Path, default=Path("tool_cards"))
    ap.add_argument("--work", type=Path, default=None, help="keep the synthetic images here")
    ap.add_argument("--dry-run", action="store_true", help="print the fits, write nothing")
    args = ap.parse_args()

    with tempfile.TemporaryDirectory() as tmp:
        work = args.work or Path(tmp)
        clean = sample_photos(work / "clean", SIZE)
        items = generate(clean, work / "synth", sorted(KINDS), range(1, 6), SEED)
        readings = read_items(items)
    for name, kinds in TARGETS.items():
        path = args.cards / f"{name}.yaml"
        card = load_card(path)
        fit = fit_detector(name, readings, card.lower_better, card.raw_range)
        source = source_text(kinds, fit.n, fit.photos, fit.rmse, name in COLOUR_ONLY)
        print(
            f"{name:16s} rmse {fit.rmse:.3f}  n {fit.n:3d}  params {[round(p, 4) for p in fit.params]}"
        )
        if not args.dry_run:
            write_card_logistic(path, Logistic(params=fit.params, source=source))
    print(f"{len(PHOTOS)} photos, {len(items)} images")
    return 0


if __name__ == "__main__":
    sys.exit(main())
