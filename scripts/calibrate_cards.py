"""Fit the logistic of every weight-free pyiqa card that Table 5 leaves uncalibrated.

No human-rated data set can be downloaded here, so the fit uses `eval-bench synth` data
made from the photos bundled with scikit-image and a documented pseudo-MOS: the clean
photo gets 5 and an image distorted at level L (1..5) gets 5 - 0.8·L (full-reference tools
compare each image with its clean photo). The curve is the monotone form the built-in
detectors use (bench.builtin_fit.fit_sigmoid: b4 = 0, direction from the card), because
the free linear term turns these curves the wrong way inside the raw range. Clean photos
weigh as much in total as the distorted ones; a full-reference curve is then stretched so
that an identical pair (the clean rows) maps to 5 (tools.logistic.anchor_top). The
parameters and their provenance are recorded on each card.

    python scripts/calibrate_cards.py [--size 256] [--tools psnr,vsi,...] [--dry-run]
"""

from __future__ import annotations

import argparse
import asyncio
import re
import tempfile
from pathlib import Path

import numpy as np

from agentiqa_cli.bench.builtin_fit import fit_sigmoid, pseudo_mos
from agentiqa_cli.bench.methods import Item
from agentiqa_cli.bench.metrics import spearman
from agentiqa_cli.bench.runs import Bench, raw_of
from agentiqa_cli.bench.synth import generate_from_dir, sample_photos
from agentiqa_cli.bench.synth_eval import load_manifest
from agentiqa_cli.config import Settings
from agentiqa_cli.io.trace import TraceWriter
from agentiqa_cli.records import Result
from agentiqa_cli.resources import default_cards_dir
from agentiqa_cli.tools.cards import Logistic, ToolCard, load_cards, write_card_logistic
from agentiqa_cli.tools.logistic import anchor_top
from agentiqa_cli.wiring import build_runtime

ROOT = Path(__file__).resolve().parent.parent


def uncalibrated_weight_free() -> list[str]:
    cards = load_cards(default_cards_dir())
    return [c.name for c in cards if c.backend == "pyiqa" and not c.weights and not c.calibrated]


def calibrated_notes(notes: str) -> str:
    return re.sub(
        r"Not in Table 5: uncalibrated.*?\.(?=\s|$)",
        "Not in Table 5: calibrated on synthetic data (see logistic.source).",
        notes,
        count=1,
        flags=re.S,
    )


async def _raw_rows(items: list[Item], cards: list[ToolCard]) -> list[Result]:
    """Every tool on every item through the same Runtime as `agentiqa score`."""
    async with build_runtime(Settings(device="cpu")) as rt:
        bench = Bench(rt, TraceWriter(None))
        return await bench.run("raw", items, rt.scorer(cards), "score", refs=True)


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
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        sample_photos(work / "photos", 512)
        manifest = generate_from_dir(work / "photos", work / "synth", size=args.size, seed=0)
        rows = load_manifest(manifest)
        kinds = len({r.kind for r in rows if r.level > 0})
        items = [Item(image=r.image, reference=r.reference or r.image) for r in rows]
        mos = np.array([pseudo_mos(r.level) for r in rows])
        levels = np.array([r.level for r in rows])
        chosen = [cards.get(n) for n in names]
        rows_out = asyncio.run(_raw_rows(items, chosen))
        for card in chosen:
            raw = [raw_of(r, card.name) for r in rows_out]
            x = np.array([np.nan if v is None else v for v in raw], dtype=float)
            ok = np.isfinite(x)
            clean = levels[ok] == 0
            # clean images weigh as much in total as the distorted ones (as the detectors'
            # fits do), so the curve's clean plateau is not outvoted by 60 distorted levels
            w = np.where(clean, (~clean).sum() / max(1, clean.sum()), 1.0)
            params, rmse = fit_sigmoid(x[ok], mos[ok], not card.lower_better, w)
            if card.mode == "FR":  # a clean row is an identical pair: fidelity is perfect
                params = anchor_top(params, float(np.median(x[ok][clean])))
            srcc = spearman(x[ok], mos[ok])
            print(
                f"{card.name:10s} n={int(ok.sum()):4d} raw SRCC {srcc:+.3f} fit RMSE {rmse:.3f} params {[round(p, 4) for p in params]}"
            )
            if args.dry_run:
                continue
            source = (
                f"scripts/calibrate_cards.py on eval-bench synth: {int(ok.sum())} images (clean "
                f"and {kinds} kinds x 5 levels) from the 8 photos bundled with scikit-image at "
                f"{args.size} px, seed 0; pseudo-MOS 5 - 0.8*level, clean weighing as much as "
                f"distorted; monotone logistic (b4 = 0)"
                + ("; stretched so an identical pair maps to 5" if card.mode == "FR" else "")
                + f"; raw SRCC {srcc:+.2f}"
            )
            write_card_logistic(
                default_cards_dir() / f"{card.name}.yaml",
                Logistic(params=params, source=source),
                notes=calibrated_notes(card.notes),
            )


if __name__ == "__main__":
    main()
