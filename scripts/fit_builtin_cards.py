"""Regenerate the logistic parameters of the built-in detectors' tool cards.

Procedure (deterministic; see agentiqa_cli/bench/builtin_fit.py for the pseudo-MOS):
  1. the fit set: the photos bundled with scikit-image (bench.synth.PHOTOS) and the clean
     Debian wallpapers of scripts/fitset.yaml (photos and graphics, none of them in the
     realset, which stays held out for `make quality`), all at 512 px on the long side;
  2. distort each with every kind of bench.synth at levels 1-5, seed 0; for the cards in
     ``CAMERA_CLEAN`` (or every no-reference card, ``--camera-clean``) the clean camera JPEGs
     of the fit set's camera series, q75 and q80-95, join as clean images: a camera's JPEG
     save clamps the ringing at the edges of deep colours to 0 or 255, so a vivid clean photo
     reads more clipped chroma as a JPEG than as a PNG. Tried for blockiness, they stopped
     it naming a q15 JPEG, so the other cards do not use them;
  3. read every built-in detector on every image,
     and built-in full-reference measure (``detail``: each image against its clean one);
  4. per detector, fit the logistic of tools.logistic with its linear term fixed at 0 (a
     monotone sigmoid; bench.builtin_fit.fit_sigmoid) of its reading against pseudo-MOS = 5
     (clean) or 5 - 0.8 * level (the kinds it targets), and write the parameters into
     tool_cards/<name>.yaml with that procedure as logistic.source.

    python scripts/fit_builtin_cards.py [--cards tool_cards] [--fitset scripts/fitset.yaml]
                                        [--cache .cache/fitset] [--skimage-only] [--dry-run]
                                        [--only NAME,...]

The fit set's downloads, working copies and distorted images are cached in --cache.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from realset import build_set

from agentiqa_cli.bench.builtin_fit import (
    CLEAN_WEIGHT,
    COLOUR_ONLY,
    TARGETS,
    fit_detector,
    read_items,
)
from agentiqa_cli.bench.synth import PHOTOS, SynthItem, generate, read_manifest, sample_photos
from agentiqa_cli.imaging.distort import KINDS
from agentiqa_cli.tools.cards import Logistic, load_card, write_card_logistic

ROOT = Path(__file__).resolve().parent.parent
SIZE = 512
SEED = 0
# the cards fitted with the fit set's clean camera JPEGs among their clean images: without
# them a vivid yellow flower saved as a camera JPEG (q75, q94) read "moderate" clipped
# chroma; with them 1 of the fit set's 108 clean images does (3 before), and level 4-5
# oversaturation is found by this reading alone 81% of the time (83% before)
CAMERA_CLEAN = ("saturation_clip",)


def source_text(
    kinds: tuple[str, ...],
    n: int,
    photos: int,
    rmse: float,
    colour: bool,
    wallpapers: int,
    fr: bool = False,
    cameras: int = 0,
) -> str:
    which = f"{photos} colour images" if colour else f"{photos} images"
    extra = (
        f" and {wallpapers} Debian wallpapers of scripts/fitset.yaml (none in the realset)"
        if wallpapers
        else ""
    )
    against = "; each image against its clean original" if fr else ""
    camera = f" and {cameras} clean camera JPEGs of its photos (q75, q80-95)" if cameras else ""
    return (
        f"scripts/fit_builtin_cards.py: bench.synth on {which}: the photos bundled with "
        f"scikit-image{extra} ({SIZE} px long side, seed {SEED}){camera}{against}; pseudo-MOS 5 for clean "
        f"(all), 5 - 0.8*level for {'/'.join(kinds)} levels 1-5 (photographs only), clean "
        f"weighted {CLEAN_WEIGHT:g}x the distorted in total; 5PL with "
        f"b4 = 0; {n} images, RMSE {rmse:.3f}"
    )


def synth_items(clean: list[Path], work: Path) -> list[SynthItem]:
    """The distorted set of ``clean`` in ``work``, generated once and reused."""
    manifest = work / "manifest.csv"
    kinds = sorted(KINDS)
    if manifest.exists():
        items = read_manifest(manifest)
        have = {(it.clean.name, it.kind, it.level) for it in items if it.path.exists()}
        need = {(c.name, k, lv) for c in clean for k in kinds for lv in range(1, 6)}
        if need <= have and {it.clean.name for it in items} == {c.name for c in clean}:
            return items
    return generate(clean, work, kinds, range(1, 6), SEED)


def camera_clean(cache: Path) -> list[SynthItem]:
    """The clean camera JPEGs of the fit set's camera series (``make realset`` builds it with
    ``camera_photos: fitted``), none if it is not built."""
    manifest = cache / "camera" / "manifest.csv"
    if not manifest.exists():
        return []
    return [it for it in read_manifest(manifest) if it.level == 0 and it.path.exists()]


def main() -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--cards", type=Path, default=ROOT / "tool_cards")
    ap.add_argument("--fitset", type=Path, default=ROOT / "scripts" / "fitset.yaml")
    ap.add_argument("--cache", type=Path, default=ROOT / ".cache" / "fitset")
    ap.add_argument("--skimage-only", action="store_true", help="the scikit-image photos only")
    ap.add_argument("--dry-run", action="store_true", help="print the fits, write nothing")
    ap.add_argument(
        "--camera-clean",
        action="store_true",
        help="the fit set's clean camera JPEGs (q75, q80-95) join every no-reference card's "
        f"clean images (without it: only {', '.join(CAMERA_CLEAN)}'s)",
    )
    ap.add_argument("--only", default="", help="refit only these detectors' cards (comma list)")
    args = ap.parse_args()
    only = [n for n in args.only.split(",") if n]
    unknown = set(only) - set(TARGETS)
    if unknown:
        print(f"--only: unknown detectors {sorted(unknown)}; known: {', '.join(TARGETS)}")
        return 2

    clean = sample_photos(args.cache / "skimage", SIZE)
    wallpapers = 0
    photos = set(PHOTOS)  # photographs, whose distortions the curves learn (builtin_fit)
    if not args.skimage_only:
        _, records = build_set(args.fitset, args.cache, "fit set")
        clean += [args.cache / r.file for r in records]
        photos |= {r.name for r in records if r.kind == "photo"}
        wallpapers = len(records)
    work = args.cache / ("synth-skimage" if args.skimage_only else "synth")
    items = synth_items(clean, work)
    # read the clean camera JPEGs only when a card being refitted uses them
    wanted = args.camera_clean or any(n in CAMERA_CLEAN for n in (only or TARGETS))
    cameras = camera_clean(args.cache) if wanted and not args.skimage_only else []
    items += cameras
    readings = read_items(items, only or None)
    for name, kinds in TARGETS.items():
        if only and name not in only:
            continue
        path = args.cards / f"{name}.yaml"
        card = load_card(path)
        # a full-reference measure reads a camera JPEG against its lossless original: that
        # save's own loss is not the clean plateau, so only no-reference curves see them
        with_cameras = card.mode == "NR" and (args.camera_clean or name in CAMERA_CLEAN)
        rows = readings if with_cameras else readings[: len(readings) - len(cameras)]
        fit = fit_detector(name, rows, card.lower_better, card.raw_range, photos=photos)
        source = source_text(
            kinds,
            fit.n,
            fit.photos,
            fit.rmse,
            name in COLOUR_ONLY,
            wallpapers,
            fr=card.mode == "FR",
            cameras=len(cameras) if with_cameras else 0,
        )
        print(
            f"{name:16s} rmse {fit.rmse:.3f}  n {fit.n:4d}  params {[round(p, 4) for p in fit.params]}"
        )
        if not args.dry_run:
            write_card_logistic(path, Logistic(params=fit.params, source=source))
    print(f"{len(PHOTOS)} scikit-image photos + {wallpapers} wallpapers, {len(items)} images")
    return 0


if __name__ == "__main__":
    sys.exit(main())
