"""Can a colour cast be told from scene colour without a reference? The measurement behind
the ``colorcast`` detector and the absence of a cast finding (tools/severity.py).

Clean images: the fit set (scikit-image photos + scripts/fitset.yaml wallpapers, built by
scripts/fit_builtin_cards.py in --fitset-cache) and the held-out realset's clean images
(``make realset``; without the scikit-image photos it shares with the fit set). Casts: every fit-set photograph under bench.synth's color_cast at levels
1-5 with --hues random hues each (seed --seed), and the realset's own color_cast series.

For each reading it prints the AUC of level 4-5 casts against clean images, the mean
within-photo SRCC of the reading against the level (realset series: clean + levels 1-5),
and, at two thresholds taken from the fit set's clean images only (their 97th percentile
and their maximum), the share of clean images above it (false alarms; realset photos apart)
and the recall of level 4-5 casts. Readings:

  colorcast     the detector (tools/detectors.colorcast)
  white_point   log-chroma distance from grey of the channels' 99.5th percentiles
  gs_k          Gasparini & Schettini's cast index: CIELab mean chroma D over spread sigma
  low_chroma    log chroma of the median of the least chromatic tenth of the pixels
  shared        the chroma offset the darkest and the brightest tenth share (a gain moves
                both alike): the smaller magnitude times the cosine between them
  clipped       share of pixels with a channel at >= 0.99 (a gain above 1 clips a channel)
  logistic      a logistic over all of the above, fitted on the fit set only (clean
                weighted 4x in total, as bench.builtin_fit)

    python scripts/cast_check.py [--fitset-cache .cache/fitset] [--realset .cache/realset]
                                 [--hues 4] [--seed 1]
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from PIL import Image
from scipy.optimize import minimize
from scipy.stats import spearmanr

from agentiqa_cli.bench.realset import load_records
from agentiqa_cli.imaging.distort import distort
from agentiqa_cli.imaging.load import LoadedImage
from agentiqa_cli.tools import detectors as det

ROOT = Path(__file__).resolve().parent.parent
READINGS = ("colorcast", "white_point", "gs_k", "low_chroma", "shared", "clipped")
LC = det._LOG_CHROMA.astype(np.float64)


@dataclass
class Row:
    split: str  # "fit" or "real"
    name: str
    photo: bool
    level: int
    values: dict[str, float]


def _lc(rgb: np.ndarray) -> np.ndarray:
    return np.asarray(np.log(np.maximum(rgb, 1e-4)) @ LC.T)


def readings(rgb8: np.ndarray) -> dict[str, float]:
    from skimage.color import rgb2lab

    img = LoadedImage(Path("cast.png"), rgb8=np.ascontiguousarray(rgb8))
    p = det._sample(img).astype(np.float64)
    out = {"colorcast": det.colorcast(img)}
    out["white_point"] = float(np.hypot(*_lc(np.percentile(p, 99.5, axis=0))))
    lab = rgb2lab(p[None])[0]
    keep = (lab[:, 0] > 5) & (lab[:, 0] < 98)
    ab = lab[keep, 1:] if keep.sum() > 64 else lab[:, 1:]
    sigma = float(np.hypot(*ab.std(axis=0)))
    out["gs_k"] = float(np.hypot(*ab.mean(axis=0))) / max(sigma, 1e-6)
    q = p[(p.max(axis=1) < 0.98) & (p.min(axis=1) > 0.02)]
    if len(q) > 200:
        lum, lc = q @ det._BT601, _lc(q)
        chroma = np.hypot(*lc.T)
        out["low_chroma"] = float(np.hypot(*np.median(lc[chroma <= np.percentile(chroma, 10)], 0)))
        lo = lc[lum <= np.percentile(lum, 10)].mean(axis=0)
        hi = lc[lum >= np.percentile(lum, 90)].mean(axis=0)
        a, b = float(np.hypot(*lo)), float(np.hypot(*hi))
        out["shared"] = min(a, b) * max(0.0, float(lo @ hi) / max(a * b, 1e-9))
    else:
        out["low_chroma"] = out["shared"] = 0.0
    out["clipped"] = float((p.max(axis=1) >= 0.99).mean())
    return out


def _rgb8(path: Path) -> np.ndarray:
    with Image.open(path) as im:
        return np.asarray(im.convert("RGB"))


def collect(fit_cache: Path, realset: Path, hues: int, seed: int) -> list[Row]:
    rows: list[Row] = []
    rng = np.random.default_rng(seed)
    fit = [(p, True) for p in sorted((fit_cache / "skimage").glob("*.png"))]
    fit += [(fit_cache / r.file, r.kind == "photo") for r in load_records(fit_cache)]
    for path, photo in fit:
        a = _rgb8(path)
        rows.append(Row("fit", path.stem, photo, 0, readings(a)))
        if not photo:
            continue
        x = a.astype(np.float32) / 255
        for level in range(1, 6):
            for _ in range(hues):
                y = np.rint(distort(x, "color_cast", level, rng) * 255).astype(np.uint8)
                rows.append(Row("fit", path.stem, True, level, readings(y)))
    for r in load_records(realset):
        if r.fitted:  # the scikit-image photos are in the fit set too
            continue
        rows.append(Row("real", r.name, r.kind == "photo", 0, readings(_rgb8(realset / r.file))))
    for path in sorted((realset / "synth").glob("*__color_cast_*.png")):
        name, rest = path.stem.split("__")
        rows.append(Row("real", name, True, int(rest.rsplit("_", 1)[1]), readings(_rgb8(path))))
    return rows


def add_logistic(rows: list[Row]) -> None:
    """A ridge-regularized logistic over READINGS (z-scored on the fit set), fitted on the
    fit set's clean images against its level 4-5 casts."""
    train = [r for r in rows if r.split == "fit" and (r.level == 0 or r.level >= 4)]
    x = np.array([[r.values[k] for k in READINGS] for r in train])
    y = np.array([r.level > 0 for r in train], dtype=float)
    mu, sd = x.mean(axis=0), x.std(axis=0) + 1e-9
    z = (x - mu) / sd
    w = np.where(y == 0, 4.0 * y.sum() / max(1.0, (1 - y).sum()), 1.0)

    def loss(b: np.ndarray) -> float:
        t = z @ b[1:] + b[0]
        return float(np.sum(w * (np.logaddexp(0, t) - y * t)) + 0.5 * np.sum(b[1:] ** 2))

    b = minimize(loss, np.zeros(len(READINGS) + 1)).x
    print("logistic weights (z-scored):", dict(zip(READINGS, np.round(b[1:], 2), strict=True)))
    for r in rows:
        v = (np.array([r.values[k] for k in READINGS]) - mu) / sd
        r.values["logistic"] = float(v @ b[1:] + b[0])


def auc(pos: list[float], neg: list[float]) -> float:
    p, n = np.asarray(pos)[:, None], np.asarray(neg)[None]
    return float((p > n).mean() + 0.5 * (p == n).mean())


def report(rows: list[Row]) -> None:
    def vals(key: str, split: str, levels: tuple[int, ...], photos: bool = False) -> list[float]:
        return [
            r.values[key]
            for r in rows
            if r.split == split and r.level in levels and (r.photo or not photos)
        ]

    n = {s: len(vals("colorcast", s, (0,))) for s in ("fit", "real")}
    print(
        f"clean: fit {n['fit']}, realset {n['real']} ({len(vals('colorcast', 'real', (0,), True))}"
        f" photos); level 4-5 casts: fit {len(vals('colorcast', 'fit', (4, 5)))}, realset "
        f"{len(vals('colorcast', 'real', (4, 5)))}"
    )
    print(
        f"{'reading':12s} {'AUC fit':>7s} {'real':>5s} {'SRCC':>5s} | thresholds from the fit "
        "set's clean: false alarms fit / real / real photos, recall L4-5 fit / real"
    )
    names = sorted({r.name for r in rows if r.split == "real" and r.level > 0})
    for key in (*READINGS, "logistic"):
        srcc = []
        for name in names:
            series = [r for r in rows if r.split == "real" and r.name == name]
            rho = spearmanr([r.level for r in series], [r.values[key] for r in series])[0]
            srcc.append(0.0 if rho != rho else float(rho))
        clean_fit = vals(key, "fit", (0,))
        line = (
            f"{key:12s} {auc(vals(key, 'fit', (4, 5)), clean_fit):7.3f} "
            f"{auc(vals(key, 'real', (4, 5)), vals(key, 'real', (0,))):5.3f} {np.mean(srcc):5.2f} |"
        )
        for label, thr in (("p97", np.percentile(clean_fit, 97)), ("max", max(clean_fit))):

            def above(v: list[float], t: float = float(thr)) -> float:
                return float(np.mean(np.asarray(v) > t))

            line += (
                f" {label} {thr:.3g}: FA {above(clean_fit):.2f}/{above(vals(key, 'real', (0,))):.2f}"
                f"/{above(vals(key, 'real', (0,), True)):.2f} recall "
                f"{above(vals(key, 'fit', (4, 5))):.2f}/{above(vals(key, 'real', (4, 5))):.2f}"
            )
        print(line)
    print("colorcast on the realset's clean images, highest first:")
    top = sorted(
        (r for r in rows if r.split == "real" and r.level == 0),
        key=lambda r: -r.values["colorcast"],
    )
    print("  " + ", ".join(f"{r.name} {r.values['colorcast']:.2f}" for r in top[:8]))
    for level in range(1, 6):
        v = vals("colorcast", "real", (level,))
        print(f"  realset level {level} casts: colorcast median {np.median(v):.2f}")


def main() -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--fitset-cache", type=Path, default=ROOT / ".cache" / "fitset")
    ap.add_argument("--realset", type=Path, default=ROOT / ".cache" / "realset")
    ap.add_argument("--hues", type=int, default=4, help="random cast hues per fit photo and level")
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    for d in (args.fitset_cache, args.realset):
        if not (d / "manifest.json").exists():
            print(f"{d}: not built (scripts/fit_builtin_cards.py / make realset)", file=sys.stderr)
            return 2
    rows = collect(args.fitset_cache, args.realset, args.hues, args.seed)
    add_logistic(rows)
    report(rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
