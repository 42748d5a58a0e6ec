"""Fit the logistic of every weight-free pyiqa card that Table 5 leaves uncalibrated.

No human-rated data set can be downloaded here, so the fit uses `eval-bench synth` data
made from the photos bundled with scikit-image and a documented pseudo-MOS: an image
distorted at level L (1..5) gets 5 - 0.8·L, and, for no-reference tools, the clean photo
gets 5. Full-reference tools are fitted on the distorted images only (a clean image
compared with itself is a degenerate point: PSNR is infinite). It runs `agentiqa
calibrate`'s own code, then records the parameters and their provenance on each card.

    python scripts/calibrate_cards.py [--size 256] [--tools psnr,vsi,...] [--dry-run]
"""

from __future__ import annotations

import argparse
import csv
import re
import tempfile
from pathlib import Path

from agentiqa_cli.bench.builtin_fit import pseudo_mos
from agentiqa_cli.bench.calibrate import calibrate
from agentiqa_cli.bench.datasets import load_dataset
from agentiqa_cli.bench.synth import generate_from_dir, sample_photos
from agentiqa_cli.bench.synth_eval import load_manifest
from agentiqa_cli.resources import default_cards_dir
from agentiqa_cli.tools.cards import load_cards
from agentiqa_cli.tools.runner import ToolRunner

ROOT = Path(__file__).resolve().parent.parent


def uncalibrated_weight_free() -> list[str]:
    cards = load_cards(default_cards_dir())
    return [c.name for c in cards if c.backend == "pyiqa" and not c.weights and not c.calibrated]


def write_dataset(manifest: Path, path: Path, full_reference: bool) -> int:
    rows = load_manifest(manifest)
    n = 0
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["image", "mos", "reference", "distortion"])
        for r in rows:
            if full_reference and r.level == 0:
                continue
            ref = str(r.reference) if (full_reference and r.reference) else ""
            w.writerow([str(r.image), f"{pseudo_mos(r.level):.2f}", ref, r.kind or "clean"])
            n += 1
    return n


def set_logistic(card_path: Path, params: list[float], source: str) -> None:
    """Replace the card's ``logistic:`` entry, leaving the rest of the file as written."""
    text = card_path.read_text(encoding="utf-8")
    block = (
        "logistic:\n"
        f"  params: [{', '.join(f'{p:.6g}' for p in params)}]\n"
        f"  source: >-\n    {source}\n"
    )
    new, n = re.subn(r"^logistic:.*?(?=^\w)", block, text, count=1, flags=re.S | re.M)
    if n != 1:
        raise SystemExit(f"{card_path}: no logistic entry to replace")
    new = re.sub(
        r"Not in Table 5: uncalibrated.*?\.(?=\s|$)",
        "Not in Table 5: calibrated on synthetic data (see logistic.source).",
        new,
        count=1,
        flags=re.S,
    )
    card_path.write_text(new, encoding="utf-8")


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--size", type=int, default=256, help="long side of the synthetic images")
    ap.add_argument(
        "--tools", help="comma-separated (default: every uncalibrated weight-free pyiqa card)"
    )
    ap.add_argument("--dry-run", action="store_true")
    args = ap.parse_args()
    names = args.tools.split(",") if args.tools else uncalibrated_weight_free()
    cards = load_cards(default_cards_dir())
    runner = ToolRunner(cards, "cpu")
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        sample_photos(work / "photos", 512)
        manifest = generate_from_dir(work / "photos", work / "synth", size=args.size, seed=0)
        for mode in ("FR", "NR"):
            chosen = [cards.get(n) for n in names if cards.get(n).mode == mode]
            if not chosen:
                continue
            data_csv = work / f"{mode}.csv"
            n = write_dataset(manifest, data_csv, full_reference=mode == "FR")
            data = load_dataset(data_csv, "csv")
            fits = calibrate(data, runner, chosen, mos_range=(1.0, 5.0))
            what = "distorted images" if mode == "FR" else "clean and distorted images"
            source = (
                f"agentiqa calibrate on eval-bench synth (scripts/calibrate_cards.py): {n} {what} "
                f"from the 8 photos bundled with scikit-image at {args.size} px, "
                f"{len({r.kind for r in load_manifest(manifest)} - {''})} kinds x 5 levels, seed 0; "
                "pseudo-MOS 5 - 0.8*level (clean = 5)"
            )
            for fit in fits:
                status = "SUSPECT" if fit.suspect else ("error" if fit.error else "ok")
                print(
                    f"{fit.tool:10s} n={fit.n:4d} srcc={fit.srcc} rmse={fit.rmse} {status} {fit.warnings or ''} {fit.error or ''}"
                )
                if fit.params is None or fit.suspect or args.dry_run:
                    continue
                set_logistic(default_cards_dir() / f"{fit.tool}.yaml", fit.params, source)


if __name__ == "__main__":
    main()
