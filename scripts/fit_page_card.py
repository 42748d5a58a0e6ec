"""Fit the ``page_sharpness`` card (tool_cards/page_sharpness.yaml) on drawn pages only.

Pages: ``bench.renders``' text page drawn with seeds of this script's own (the realset's
renders use seed 0), white and dark, each made three ways: as drawn (a scan), as a phone
sees paper (grey, lit unevenly, noisy) and as a scan twice as large. Each is defocused by a
disc of ``RADII`` px at the view (1024 px; the camera series' defocus levels 1-5) and saved
at q90. Target: the camera series' pseudo-MOS of that defocus level (``5 - 0.8 * level``),
5 in focus. The held-out renders are measured by ``scripts/quality_check.py --series
renders``, never here.

    python scripts/fit_page_card.py [--fitset .cache/fitset] [--pages 12]

Prints how many pages ``page`` recognizes and their readings per radius, how many of the fit
set's clean photos it takes for a page (none should be), then writes the card's logistic.
"""

from __future__ import annotations

import argparse
import io
import sys
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np
from PIL import Image
from scipy import ndimage

from agentiqa_cli.bench.camera import disc_kernel
from agentiqa_cli.bench.renders import _page
from agentiqa_cli.imaging.load import decode_bytes, load_image
from agentiqa_cli.tools.cards import Logistic, write_card_logistic
from agentiqa_cli.tools.detectors import page, page_sharpness
from agentiqa_cli.tools.logistic import normalize, sigmoid_through

ROOT = Path(__file__).resolve().parent.parent
RADII = (0.0, 1.2, 2.0, 3.0, 4.5, 6.5)  # bench.camera's defocus levels 1-5, at the view
ANCHOR_LEVEL = 3  # its median reads the camera series' target of that level
CLEAN_PERCENTILE = 3.0
SPAN = 5.0
VIEW = 1024
STYLES = ("scan", "phone", "large scan")


def _readings(k: int) -> list[tuple[float, bool]]:
    """(page_sharpness, page) of page ``k`` at every radius of ``RADII``."""
    rng = np.random.default_rng([2026, k])
    style = STYLES[k % len(STYLES)]
    image = _page(k % 4 == 3, rng)
    if style == "large scan":
        image = image.resize((image.width * 2, image.height * 2), Image.Resampling.LANCZOS)
    x = np.asarray(image, np.float32)
    scale = max(x.shape[:2]) / VIEW
    out = []
    for r in RADII:
        y = x
        if r:
            disc = disc_kernel(r * scale)
            y = np.stack([ndimage.convolve(x[..., c], disc, mode="reflect") for c in range(3)], -1)
        if style == "phone":
            h, w = y.shape[:2]
            light = (
                0.75 + 0.15 * np.linspace(0, 1, w)[None, :] + 0.05 * np.linspace(0, 1, h)[:, None]
            )
            y = y * light[..., None] * 0.9 + 15 + rng.normal(0, 3, y.shape)
        buf = io.BytesIO()
        Image.fromarray(np.clip(y + 0.5, 0, 255).astype(np.uint8)).save(buf, "JPEG", quality=90)
        im = decode_bytes(buf.getvalue(), Path(f"page{k}_r{r}.jpg"))
        out.append((page_sharpness(im), page(im)))
    return out


def _photo(path: Path) -> bool:
    return page(load_image(path))


def main() -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--fitset", type=Path, default=ROOT / ".cache" / "fitset")
    ap.add_argument("--cards", type=Path, default=ROOT / "tool_cards")
    ap.add_argument("--pages", type=int, default=12)
    args = ap.parse_args()
    with ProcessPoolExecutor(2) as pool:
        rows = list(pool.map(_readings, range(args.pages)))
    r = np.array([[v for v, _ in row] for row in rows])
    found = np.array([[p for _, p in row] for row in rows])
    targets = [5.0] + [5.0 - 0.8 * level for level in range(1, len(RADII))]
    print(f"{args.pages} pages ({', '.join(STYLES)}), q90: reading percentiles 5, 50, 95")
    for i, radius in enumerate(RADII):
        print(
            f"  disc {radius:3.1f} px  target {targets[i]:.1f}  read as a page {found[:, i].mean():4.0%}"
            f"  {np.round(np.percentile(r[:, i], [5, 50, 95]), 3)}"
        )
    photos = sorted(
        p
        for d in ("camera", "skimage_camera", "camera_crops")
        for p in (args.fitset / d).glob("*clean*.jpg")
    )
    with ProcessPoolExecutor(2) as pool:
        taken = np.array(list(pool.map(_photo, photos, chunksize=16)))
    print(f"fit set clean photos read as a page: {int(taken.sum())} of {len(photos)}")
    # anchored, as the ringing card is: the clean pages' CLEAN_PERCENTILE reads 4.6 (the
    # "none" cut), the median at the ANCHOR_LEVEL's disc its target
    r_clean = float(np.percentile(r[:, 0], CLEAN_PERCENTILE))
    r_level = float(np.median(r[:, ANCHOR_LEVEL]))
    t_level = targets[ANCHOR_LEVEL]
    # a span of 5 reaches 5 by 1.0, what anything that is not a page reads: a photo's
    # judgement is the other tools', and this one must not cap it below their clean scores
    params = sigmoid_through((r_clean, 4.6), (r_level, t_level), span=SPAN)
    assert normalize(1.0, params) == 5.0, params
    logistic = Logistic(
        params=[round(v, 6) for v in params],
        source=(
            f"scripts/fit_page_card.py: {args.pages} drawn pages (bench.renders' page, this "
            f"script's seeds; scans, phone shots of grey paper, larger scans; q90): {r_clean:.3f} "
            f"(percentile {CLEAN_PERCENTILE:g} in focus) reads 4.6, {r_level:.3f} (the median "
            f"defocused by a {RADII[ANCHOR_LEVEL]:g} px disc at the view, the camera series' "
            f"level {ANCHOR_LEVEL}) reads {t_level:.1f}; span {SPAN:g}, so 1 (not a page) reads 5"
        ),
    )
    write_card_logistic(args.cards / "page_sharpness.yaml", logistic)
    print(f"{args.cards / 'page_sharpness.yaml'}: {logistic.source}")
    for i, radius in enumerate(RADII):
        scores = np.array([normalize(v, logistic.params) for v in r[:, i]])
        print(
            f"  disc {radius:3.1f} px: mean score {scores.mean():.2f}, named (below 3.8) {np.mean(scores < 3.8):.0%}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
