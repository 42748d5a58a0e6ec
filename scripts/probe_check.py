"""How the rules version of probing behaves on real images (a measurement, not a test).

    python scripts/probe_check.py IMAGE_OR_FOLDER... [--patched N]

For every image: does ``probe_rules`` charge a penalty (on clean images it should not)?
Then 256² patches (mosaic of 16 and 8 px, JPEG q 5 and 20, Gaussian noise sigma 0.06 and
0.03, 4-bit posterization (16 levels a channel), Gaussian blur sigma 4) are pasted at two places into
the first N images: is a degraded crop covering the patch found? Also times probe_rules on
the 2048² scikit-image canvas of tests/test_probe.py.
"""

from __future__ import annotations

import argparse
import io
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
from PIL import Image

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from agentiqa_cli.agent.probe import probe_rules
from agentiqa_cli.errors import ImageError
from agentiqa_cli.imaging.discover import IMAGE_EXTENSIONS
from agentiqa_cli.imaging.load import LoadedImage, load_image

SIDE = 256
Paste = Callable[[np.ndarray, int, int], np.ndarray]


def mosaic(block: int) -> Paste:
    def paste(px: np.ndarray, y: int, x: int) -> np.ndarray:
        out = px.copy()
        cells = out[y : y + SIDE, x : x + SIDE].reshape(
            SIDE // block, block, SIDE // block, block, 3
        )
        means = cells.mean(axis=(1, 3))
        out[y : y + SIDE, x : x + SIDE] = np.repeat(np.repeat(means, block, 0), block, 1)
        return out

    return paste


def jpeg(quality: int) -> Paste:
    def paste(px: np.ndarray, y: int, x: int) -> np.ndarray:
        out = px.copy()
        buf = io.BytesIO()
        u8 = (out[y : y + SIDE, x : x + SIDE] * 255 + 0.5).astype(np.uint8)
        Image.fromarray(u8).save(buf, "JPEG", quality=quality)
        out[y : y + SIDE, x : x + SIDE] = np.asarray(Image.open(buf).convert("RGB")) / 255
        return out

    return paste


def noise(sigma: float) -> Paste:
    def paste(px: np.ndarray, y: int, x: int) -> np.ndarray:
        out = px.copy()
        rng = np.random.default_rng(y * 100_003 + x)
        patch = out[y : y + SIDE, x : x + SIDE] + rng.normal(0, sigma, (SIDE, SIDE, 3))
        out[y : y + SIDE, x : x + SIDE] = np.clip(patch, 0, 1)
        return out

    return paste


def posterize(levels: int) -> Paste:
    def paste(px: np.ndarray, y: int, x: int) -> np.ndarray:
        out = px.copy()
        out[y : y + SIDE, x : x + SIDE] = (
            np.round(out[y : y + SIDE, x : x + SIDE] * levels) / levels
        )
        return out

    return paste


def blur(sigma: float) -> Paste:
    def paste(px: np.ndarray, y: int, x: int) -> np.ndarray:
        from scipy import ndimage

        out = px.copy()
        out[y : y + SIDE, x : x + SIDE] = ndimage.gaussian_filter(
            out[y : y + SIDE, x : x + SIDE], (sigma, sigma, 0)
        )
        return out

    return paste


PATCHES: dict[str, Paste] = {
    "mosaic16": mosaic(16),
    "mosaic8": mosaic(8),
    "jpeg5": jpeg(5),
    "jpeg20": jpeg(20),
    "noise6": noise(0.06),
    "noise3": noise(0.03),
    "poster15": posterize(15),
    "blur4": blur(4.0),
}


def images(args: list[str]) -> list[Path]:
    out: list[Path] = []
    for a in args:
        p = Path(a)
        if p.is_dir():
            out += sorted(q for q in p.rglob("*") if q.suffix.lower() in IMAGE_EXTENSIONS)
        else:
            out.append(p)
    return out


def wrap(pixels: np.ndarray, name: str) -> LoadedImage:
    return LoadedImage(
        path=Path(name), pixels=np.ascontiguousarray(pixels, np.float32), sha256=name
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("paths", nargs="+")
    ap.add_argument("--patched", type=int, default=8, help="images to paste patches into")
    ap.add_argument("--patches", default=",".join(PATCHES), help="which patches (comma list)")
    ns = ap.parse_args()
    loaded: list[LoadedImage] = []
    for path in images(ns.paths):
        try:
            loaded.append(load_image(path))
        except ImageError as e:
            print(f"skip {e}")
    flagged = 0
    t0 = time.perf_counter()
    for im in loaded:
        out = probe_rules(im)
        if out.degraded:
            flagged += 1
            print(f"  penalty on clean {im.path.name}: {out.summary}")
    print(f"clean: {flagged}/{len(loaded)} images penalized ({time.perf_counter() - t0:.1f}s)")
    found = {k: [0, 0] for k in PATCHES if k in ns.patches.split(",")}
    big = [im for im in loaded if min(im.size) >= 2 * SIDE][: ns.patched]
    for im in big:
        w, h = im.size
        for fy, fx in ((0.55, 0.35), (0.2, 0.7)):
            y, x = int(fy * (h - SIDE)), int(fx * (w - SIDE))
            for kind, paste in PATCHES.items():
                if kind not in ns.patches.split(","):
                    continue
                out = probe_rules(wrap(paste(im.pixels, y, x), im.path.name))
                hit = any(
                    c.pixels[0] <= x and c.pixels[1] <= y
                    and c.pixels[2] >= x + SIDE and c.pixels[3] >= y + SIDE
                    for c in out.degraded
                )  # fmt: skip
                if kind.startswith("blur"):  # charged and overlapping it (a soft area's crop
                    # has an eighth of context, so it need not cover the patch's border)
                    hit = any(
                        c.type == "blur" and c.pixels[0] < x + SIDE and c.pixels[2] > x
                        and c.pixels[1] < y + SIDE and c.pixels[3] > y
                        for c in out.degraded
                    )  # fmt: skip
                found[kind][0] += hit
                found[kind][1] += 1
    for kind, (n_hit, n) in found.items():
        print(f"{kind:9s} patch found {n_hit}/{n}")
    from tests.test_probe import _mosaic, _photo_canvas

    canvas = _mosaic(_photo_canvas())
    probe_rules(wrap(canvas, "warm-up"))
    times = []
    for _ in range(5):
        t = time.perf_counter()
        probe_rules(wrap(canvas, "canvas"))
        times.append(time.perf_counter() - t)
    print(f"probe_rules on the 2048² canvas: median {np.median(times):.3f}s, min {min(times):.3f}s")


if __name__ == "__main__":
    main()
