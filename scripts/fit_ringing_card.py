"""Fit the ``ringing`` card (tool_cards/ringing.yaml) on the design drawings only.

Drawings: the ``bench.drawings.DESIGN`` packages' PNGs (scikit-learn's and pandas' plots,
Octave's manual, GIMP's dialogs), each read as published (a PNG, over white) and saved as a
JPEG at ``QUALITIES``. Target: what the ``jpeg_quality`` card (fitted on the camera series'
saves) gives that quality, 5 for the PNG, so that a drawing's coarse save reads on the scale a
photo's does. The held-out drawings (``HELD_OUT``: scipy's and statsmodels' plots) are
measured by ``scripts/quality_check.py --series drawings``, never here.

    python scripts/fit_ringing_card.py [--drawings .cache/drawings] [--fitset .cache/fitset]

Prints the reading's percentiles per quality, and on the fit set's photos (camera and
scikit-image camera series, every kind but the earlier JPEG saves), then writes the card's
logistic.
"""

from __future__ import annotations

import argparse
import io
import sys
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np
from PIL import Image

from agentiqa_cli.bench.drawings import DESIGN, drawings
from agentiqa_cli.imaging.load import decode_bytes, load_image, over_white
from agentiqa_cli.tools.cards import Logistic, load_card, write_card_logistic
from agentiqa_cli.tools.detectors import ringing
from agentiqa_cli.tools.logistic import normalize, sigmoid_through

ROOT = Path(__file__).resolve().parent.parent
QUALITIES = (95, 90, 75, 60, 45, 32, 22, 14)
CLEAN_PERCENTILE = 97.0


def _readings(path: Path) -> list[float]:
    """``ringing`` of the drawing as published, then of its JPEG saves at ``QUALITIES``."""
    with Image.open(path) as im:
        rgb = over_white(im)
    out = []
    for q in (None, *QUALITIES):
        buf = io.BytesIO()
        save: dict[str, object] = (
            {"format": "PNG"} if q is None else {"format": "JPEG", "quality": q}
        )
        rgb.save(buf, **save)
        out.append(ringing(decode_bytes(buf.getvalue(), path)))
    return out


def _photo(path: Path) -> float:
    return ringing(load_image(path))


def main() -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--drawings", type=Path, default=ROOT / ".cache" / "drawings")
    ap.add_argument("--fitset", type=Path, default=ROOT / ".cache" / "fitset")
    ap.add_argument("--cards", type=Path, default=ROOT / "tool_cards")
    args = ap.parse_args()
    paths = drawings(DESIGN, args.drawings)
    with ProcessPoolExecutor(2) as pool:
        r = np.array(list(pool.map(_readings, paths, chunksize=8)))
    jpeg = load_card(args.cards / "jpeg_quality.yaml").logistic
    assert jpeg is not None
    targets = [5.0] + [normalize(q, jpeg.params) for q in QUALITIES]
    print(f"ringing of {len(paths)} design drawings (percentiles 5, 25, 50, 75, 95)")
    for name, col, t in zip(["png"] + [f"q{q}" for q in QUALITIES], r.T, targets, strict=True):
        print(f"  {name:5s} target {t:.2f}  {np.round(np.percentile(col, [5, 25, 50, 75, 95]), 2)}")
    photos = sorted(
        p
        for d in ("camera", "skimage_camera")
        for p in (args.fitset / d).glob("*.jpg")
        if "jpeg_" not in p.name  # the earlier low-quality saves ring as they should
    )
    with ProcessPoolExecutor(2) as pool:
        on_photos = np.array(list(pool.map(_photo, photos, chunksize=16)))
    read = on_photos != 0
    print(
        f"fit set photos without an earlier JPEG save: {len(photos)}, read on {read.mean():.1%}"
        f" (a flat background), highest {on_photos.max():.2f}"
    )
    # a drawing without a flat background, or with too few blocks, is not read at any quality
    readable = r[r[:, -1] != 0]
    print(f"read at q{QUALITIES[-1]}: {len(readable)} of {len(r)}")
    # anchored, as the camera model's heads are (train_camera_model.head_logistic): the fine
    # saves' (q90 and up) CLEAN_PERCENTILE reads 4.6, the "none" cut, so a screenshot saved
    # as a careful user would is not named; the coarsest save's median reads its target
    fine = readable[:, : 1 + QUALITIES.index(90) + 1].ravel()
    r_clean = float(np.percentile(fine, CLEAN_PERCENTILE))
    r_low, t_low = float(np.median(readable[:, -1])), targets[-1]
    logistic = Logistic(
        params=[round(v, 6) for v in sigmoid_through((r_clean, 4.6), (r_low, t_low))],
        source=(
            f"scripts/fit_ringing_card.py: on the {len(readable)} of {len(paths)} design "
            "drawings (bench.drawings.DESIGN) it reads, as published and saved at "
            f"q{'/'.join(map(str, QUALITIES))}: {r_clean:.2f} (percentile {CLEAN_PERCENTILE:g} of "
            f"the PNGs and q90-95 saves) reads 4.6, {r_low:.2f} (the q{QUALITIES[-1]} saves' "
            f"median) reads {t_low:.2f}, the jpeg_quality card's score of that quality"
        ),
    )
    write_card_logistic(args.cards / "ringing.yaml", logistic)
    print(f"{args.cards / 'ringing.yaml'}: {logistic.source}")
    for name, col in zip(["png"] + [f"q{q}" for q in QUALITIES], r.T, strict=True):
        scores = np.array([normalize(v, logistic.params) for v in col])
        print(f"  {name:5s} named (score below 3.8): {np.mean(scores < 3.8):.1%}")
    print(f"  photos: highest score loss {5 - normalize(on_photos.max(), logistic.params):.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
