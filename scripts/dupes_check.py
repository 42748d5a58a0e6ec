"""Near-duplicate detection on real photos: recall on edited copies, precision on distinct photos.

Originals: every image file under the given folders (one per wallpaper: the largest file in
each folder, so the same picture at several resolutions counts once) plus scikit-image's
bundled photos. Each original is brought to at most 1600 px and gets six copies: resized
50 % (JPEG q90), resized 25 % (PNG), recompressed (JPEG q30), cropped 3 % per side,
cropped 6 % at one corner and resized 70 %, resized 80 % as WebP q50. Every pair inside a
group (original + copies) is a true near duplicate; every pair across groups is not.

    python scripts/dupes_check.py [FOLDER...] [--work DIR] [--similarities 0.85,0.9,0.95]

Without folders it uses the Debian wallpaper packages unpacked under /tmp/rep/x (see the
README's "Report" section for the two commands that fetch them) when present.
"""

from __future__ import annotations

import argparse
import sys
from itertools import combinations
from pathlib import Path

from PIL import Image

from agentiqa_cli.imaging.discover import IMAGE_EXTENSIONS
from agentiqa_cli.report.duplicates import (
    DEFAULT_MAX_DISTANCE,
    DEFAULT_MIN_SIMILARITY,
    connected_sets,
    near_pairs,
)
from agentiqa_cli.report.facts import measure

DEFAULT_FOLDERS = [
    Path("/tmp/rep/x/usr/share/wallpapers"),
    Path("/tmp/rep/x/usr/share/backgrounds"),
]
SKIMAGE = ["astronaut", "brick", "camera", "cell", "chelsea", "clock", "coffee", "coins",
           "colorwheel", "grass", "gravel", "horse", "hubble_deep_field", "immunohistochemistry",
           "logo", "microaneurysms", "moon", "page", "retina", "rocket", "text"]  # fmt: skip
MAX_SIDE = 1600


def originals(folders: list[Path]) -> list[tuple[str, Image.Image]]:
    found: list[tuple[str, Image.Image]] = []
    for folder in folders:
        by_dir: dict[Path, list[Path]] = {}
        for p in sorted(folder.rglob("*")):
            if p.suffix.lower() in IMAGE_EXTENSIONS and "screenshot" not in p.name:
                if "images_dark" in p.parts or p.stem.endswith("-d"):
                    continue  # dark variants of a light wallpaper: same design, not distinct
                by_dir.setdefault(p.parent, []).append(p)
        for files in by_dir.values():
            if "images" in files[0].parts:  # one wallpaper at several sizes: keep the largest
                files = [max(files, key=lambda f: f.stat().st_size)]
            for f in files:
                label = f.parents[2].name if "images" in f.parts else f.stem
                with Image.open(f) as im:
                    found.append((label, im.convert("RGB")))
    try:
        from skimage import data
    except ImportError:
        return found
    for name in SKIMAGE:
        try:
            arr = getattr(data, name)()
        except Exception:  # a dataset that needs a download: not bundled here
            continue
        im = Image.fromarray(arr)
        found.append((f"skimage-{name}", im.convert("RGB")))
    return found


def copies(im: Image.Image) -> list[tuple[str, Image.Image, dict[str, int]]]:
    w, h = im.size

    def resized(f: float) -> Image.Image:
        return im.resize((max(16, round(w * f)), max(16, round(h * f))), Image.Resampling.LANCZOS)

    c3 = im.crop((round(w * 0.03), round(h * 0.03), round(w * 0.97), round(h * 0.97)))
    c6 = im.crop((round(w * 0.06), round(h * 0.06), w, h))
    c6 = c6.resize((round(c6.width * 0.7), round(c6.height * 0.7)), Image.Resampling.BILINEAR)
    return [
        ("half.jpg", resized(0.5), {"quality": 90}),
        ("quarter.png", resized(0.25), {}),
        ("q30.jpg", im, {"quality": 30}),
        ("crop3.jpg", c3, {"quality": 90}),
        ("crop6.jpg", c6, {"quality": 90}),
        ("small.webp", resized(0.8), {"quality": 50}),
    ]


def build(folders: list[Path], work: Path) -> list[tuple[Path, int]]:
    """The generated set as (file, group); cached in ``work``."""
    listing = work / "groups.tsv"
    if listing.exists():
        rows = [line.split("\t") for line in listing.read_text().splitlines()]
        return [(work / name, int(g)) for name, g in rows]
    work.mkdir(parents=True, exist_ok=True)
    out: list[tuple[Path, int]] = []
    for g, (name, im) in enumerate(originals(folders)):
        im.thumbnail((MAX_SIDE, MAX_SIDE), Image.Resampling.LANCZOS)
        orig = work / f"{g:03d}-{name}-orig.png"
        im.save(orig)
        out.append((orig, g))
        for suffix, copy, kw in copies(im):
            f = work / f"{g:03d}-{name}-{suffix}"
            copy.save(f, **kw)
            out.append((f, g))
    listing.write_text("".join(f"{p.name}\t{g}\n" for p, g in out))
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("folders", nargs="*", type=Path)
    ap.add_argument("--work", type=Path, default=Path(".cache/dupes_check"))
    ap.add_argument("--similarities", default="0.85,0.9,0.95")
    args = ap.parse_args()
    folders = args.folders or [f for f in DEFAULT_FOLDERS if f.is_dir()]
    items = build(folders, args.work)
    groups = [g for _, g in items]
    facts = [measure(p) for p, _ in items]
    bad = [f.error for f in facts if not f.ok]
    if bad:
        print("\n".join(bad), file=sys.stderr)
        return 1
    n = len(items)
    true_pairs = {(i, j) for i, j in combinations(range(n), 2) if groups[i] == groups[j]}
    print(f"{n} images: {len(set(groups))} originals, each with 6 edited copies; "
          f"{len(true_pairs)} true pairs, {n * (n - 1) // 2 - len(true_pairs)} distinct pairs")  # fmt: skip
    ph, dh, gr = [f.phash for f in facts], [f.dhash for f in facts], [f.gray for f in facts]
    failed = 0
    sims = {float(s) for s in args.similarities.split(",")} | {DEFAULT_MIN_SIMILARITY}
    for sim in sorted(sims):
        found = {(i, j) for i, j, _ in near_pairs(ph, dh, gr, DEFAULT_MAX_DISTANCE, sim)}
        in_set = {(i, j) for s in connected_sets(n, sorted(found)) for i, j in combinations(s, 2)}
        default = sim == DEFAULT_MIN_SIMILARITY
        for label, got in (("pairs", found), ("sets ", in_set)):
            tp = len(got & true_pairs)
            recall, precision = tp / len(true_pairs), tp / len(got) if got else 1.0
            print(f"similarity ≥ {sim:.2f}, hash distance ≤ {DEFAULT_MAX_DISTANCE}, {label}: "
                  f"recall {recall:.4f}  precision {precision:.4f}  "
                  f"({len(got) - tp} false){'  <- default' if default else ''}")  # fmt: skip
            if default and label == "sets ":
                failed = int(recall < 0.95 or precision < 0.99)
        if default:
            kinds = [p.name.rsplit("-", 1)[-1] for p, _ in items]
            per_kind: dict[str, list[int]] = {}
            for i, j in true_pairs:
                if "orig.png" in (kinds[i], kinds[j]):
                    other = kinds[j] if kinds[i] == "orig.png" else kinds[i]
                    per_kind.setdefault(other, []).append(int((i, j) in found))
            print("  pairs with the original, recall by copy: " + ", ".join(
                f"{k} {sum(v) / len(v):.3f}" for k, v in sorted(per_kind.items())))  # fmt: skip
    return failed


if __name__ == "__main__":
    sys.exit(main())
