"""Train the camera model (``make camera-model``): a small no-reference network over the
camera readings (tools/camera_features.py), one head per distortion it names.

Data: the fit set only (scripts/fitset.yaml, built into .cache/fitset by ``make realset``'s
builder): its photographs' camera series (bench/camera.py: damage, then a camera JPEG save),
the camera series of the photos bundled with scikit-image (512 px, all but one) and a
lossless series of every fit image (bench/synth.py kinds, 512 px; graphics as clean images
only). The realset stays held out for ``make quality``.

Targets (a pseudo-MOS, as the built-in cards are fitted): per head, 5 for an image without
that head's damage, ``5 - 0.8 * level`` for its kinds (both parts of a compound pair);
resolution loss (on the blur head: its band statistics are a defocus's) follows the
downscale factor instead (a 2x upscale viewed at fit-to-screen is still good:
``RESOLUTION_TARGETS``). Clean images weigh ``CLEAN_WEIGHT`` times as much
in total, so every style of clean image stays on the plateau.

    python scripts/train_camera_model.py [--fitset .cache/fitset] [--out PATH] [--check]

Prints each head's fit, the leave-photos-out (5 folds) error and the levels where a head's
output rises with the level on a fit photo (monotony), then writes the weights (JSON).
"""

from __future__ import annotations

import argparse
import itertools
import json
import sys
import time
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from functools import partial
from pathlib import Path

import numpy as np

from agentiqa_cli.bench.camera import generate_camera
from agentiqa_cli.bench.realset import load_records
from agentiqa_cli.bench.synth import PHOTOS, SynthItem, generate, read_manifest, sample_photos
from agentiqa_cli.imaging.load import LoadedImage, load_image
from agentiqa_cli.tools.camera_features import (
    BAND_FEATURES,
    DETECTOR_FEATURES,
    DIRECTION_FEATURES,
    FEATURES,
    JPEG_FEATURES,
    NSS_FEATURES,
    OCTAVE_FEATURES,
    directions,
    features,
    jpeg_quality,
    octave_slopes,
    scene_statistics,
)
from agentiqa_cli.tools.camera_fit import fit_network
from agentiqa_cli.tools.camera_model import (
    HEADS,
    HELD_OUT_PHOTO,
    MODEL_PATH,
    RESOLUTION_TARGETS,
    CameraModel,
)
from agentiqa_cli.tools.cards import Logistic, write_card_logistic
from agentiqa_cli.tools.logistic import sigmoid_through

ROOT = Path(__file__).resolve().parent.parent
LOSSLESS_KINDS = ("blur", "motion_blur", "noise", "jpeg", "brighten", "darken", "pixelate")
# which head each kind's damage belongs to (compound kinds: both parts)
KIND_HEADS: dict[str, tuple[str, ...]] = {
    "defocus": ("blur",), "shake": ("blur",), "blur": ("blur",), "motion_blur": ("blur",),
    # resolution loss reads as lost detail: no band statistic tells it from a defocus
    "resolution": ("blur",), "pixelate": ("compression",),
    "sensor_noise": ("noise",), "noise": ("noise",),
    "low_jpeg": ("compression",), "jpeg": ("compression",),
    "underexpose": ("under",), "darken": ("under",),
    "overexpose": ("over",), "brighten": ("over",),
    "low_light": ("under", "noise"),
    "noise_jpeg": ("noise", "compression"), "blur_jpeg": ("blur", "compression"),
    "lowlight_jpeg": ("under", "noise", "compression"), "shake_noise": ("blur", "noise"),
}  # fmt: skip
CLEAN_WEIGHT = 8.0


def target(kind: str, level: int, head: str) -> float:
    if level == 0 or head not in KIND_HEADS.get(kind, ()):
        return 5.0
    if kind == "resolution":
        return RESOLUTION_TARGETS[level - 1]
    return 5.0 - 0.8 * level


# the photos bundled with scikit-image add content the wallpapers lack (a black background,
# a night sky, black and white, a crowded street); one stays out for tests/test_camera_model.py
SKIMAGE = tuple(p for p in PHOTOS if p != HELD_OUT_PHOTO)


def _items(fitset: Path) -> list[SynthItem]:
    camera = read_manifest(fitset / "camera" / "manifest.csv")
    bundled = fitset / "skimage_camera"
    if not (bundled / "manifest.csv").exists():
        generate_camera(sample_photos(bundled / "clean", 512, SKIMAGE), bundled)
    camera += read_manifest(bundled / "manifest.csv")
    records = load_records(fitset)
    lossless = fitset / "lossless"
    manifest = lossless / "manifest.csv"
    photos = [fitset / r.file for r in records if r.kind == "photo"]
    graphics = [fitset / r.file for r in records if r.kind == "graphic"]
    if not manifest.exists():
        generate(photos, lossless, LOSSLESS_KINDS, range(1, 6), seed=0)
    items = read_manifest(manifest)
    items += [SynthItem(g, g, "clean", 0) for g in graphics]
    return camera + items


def _read(path: str) -> list[float]:
    return [float(v) for v in features(load_image(path))[: len(CACHED)]]


def _reading(read: Callable[[LoadedImage], float | list[float]], path: str) -> list[float]:
    """``read`` (a camera_features reading) of the image at ``path``, as a list."""
    out = read(load_image(path))
    return [float(v) for v in (out if isinstance(out, list) else [out])]


# the detector and band readings are cached apart from the octave slopes, the JPEG quality,
# the scene statistics and the directions, which were added later: adding a reading re-reads
# only that one
CACHED = DETECTOR_FEATURES + BAND_FEATURES


def _cached_readings(
    items: list[SynthItem], cache: Path, count: int, read: Callable[[str], list[float]]
) -> np.ndarray:
    """Every item's ``read`` (``count`` values), cached by path, size and count in ``cache``."""
    known: dict[str, list[float]] = json.loads(cache.read_text()) if cache.exists() else {}
    key = {str(it.path): f"{it.path}:{it.path.stat().st_size}:{count}" for it in items}
    todo = sorted({str(it.path) for it in items if key[str(it.path)] not in known})
    if todo:
        t0 = time.perf_counter()
        with ProcessPoolExecutor(2) as pool:
            for path, vec in zip(todo, pool.map(read, todo, chunksize=8), strict=True):
                known[key[path]] = vec
        cache.write_text(json.dumps(known))
        print(f"read {len(todo)} images in {time.perf_counter() - t0:.0f} s", flush=True)
    return np.array([known[key[str(it.path)]] for it in items])


def read_features(items: list[SynthItem], fitset: Path) -> np.ndarray:
    """Every item's feature vector (``FEATURES`` order), read once and cached in ``fitset``."""
    readings = (  # cache file, values, reading
        ("camera_features.json", len(CACHED), _read),
        ("camera_octaves.json", len(OCTAVE_FEATURES), partial(_reading, octave_slopes)),
        ("camera_jpeg.json", len(JPEG_FEATURES), partial(_reading, jpeg_quality)),
        ("camera_nss.json", len(NSS_FEATURES), partial(_reading, scene_statistics)),
        ("camera_directions.json", len(DIRECTION_FEATURES), partial(_reading, directions)),
    )
    x = np.hstack([_cached_readings(items, fitset / f, n, read) for f, n, read in readings])
    assert x.shape[1] == len(FEATURES)
    return x


def monotone_pairs(items: list[SynthItem]) -> np.ndarray:
    """Rows ``(lower, higher, head)``: within one photo's series of a kind, each level and the
    next (the clean image before level 1), for every head the kind's damage belongs to."""
    series: dict[tuple[str, str], dict[int, int]] = {}
    clean: dict[str, int] = {}
    for i, it in enumerate(items):
        if it.level == 0:
            clean.setdefault(str(it.clean), i)
        else:
            series.setdefault((str(it.clean), it.kind), {})[it.level] = i
    rows = []
    for (photo, kind), levels in series.items():
        chain = ([clean[photo]] if photo in clean else []) + [levels[lv] for lv in sorted(levels)]
        for h in KIND_HEADS.get(kind, ()):
            j = HEADS.index(h)
            rows += [(a, b, j) for a, b in itertools.pairwise(chain)]
    return np.array(rows, dtype=np.intp).reshape(-1, 3)


# Each head's card maps its output to the 1-5 scale so that the clean images of photos the
# head was not trained on (the 5 folds' predictions) read "none" at their 3rd percentile: the
# clean plateau is set by how the model generalizes, not by the photos it has seen.
CLEAN_PERCENTILE = 3.0
LOW_ANCHOR = (1.8, 1.5)  # an output of 1.8 (level 4-5) still reads 1.5 ("extreme")


def head_logistic(p3: float, photos: int) -> Logistic:
    """``5 - 4 / (1 + exp(b2 (x - b3)))`` through (p3, 4.6) and ``LOW_ANCHOR``: 4.6 is the
    "none" cut of tools/severity.py. A head whose clean images stay above the level-1 target
    (4.2) is anchored there instead, so clean images keep the top of the scale."""
    clean = p3
    p3 = min(p3, 5.0 - 0.8)
    lo_x, lo_q = LOW_ANCHOR
    return Logistic(
        params=[round(v, 6) for v in sigmoid_through((p3, 4.6), LOW_ANCHOR)],
        source=(
            f"scripts/train_camera_model.py: the head's output {p3:.2f} reads 4.6 (percentile "
            f"{CLEAN_PERCENTILE:g} of clean images of photos left out, 5 folds over {photos} fit "
            f"images: {clean:.2f}{'' if clean == p3 else ', capped at the level-1 target'}), "
            f"{lo_x} reads {lo_q}"
        ),
    )


def jpeg_logistic(quality: np.ndarray, items: list[SynthItem]) -> Logistic:
    """The jpeg_quality card: ``5 - 4 / (1 + exp(b2 (q - b3)))`` fitted (least squares) to the
    fit set's camera JPEGs, clean (q75 and q80-95) and of the earlier low-quality saves, against
    the compression head's pseudo-MOS."""
    from scipy.optimize import least_squares  # fitting only: scoring never loads it

    keep = [i for i, it in enumerate(items) if it.kind in ("clean", "clean_q75", "low_jpeg")
            and it.path.suffix == ".jpg"]  # fmt: skip
    q = quality[keep]
    y = np.array([target(items[i].kind, items[i].level, "compression") for i in keep])
    fit = least_squares(lambda b: 5.0 - 4.0 / (1.0 + np.exp(b[0] * (q - b[1]))) - y, [0.06, 40.0])
    b2, b3 = (float(v) for v in fit.x)
    rmse = float(np.sqrt(np.mean(fit.fun**2)))
    return Logistic(
        params=[4.0, round(b2, 6), round(b3, 6), 0.0, 3.0],
        source=(
            f"scripts/train_camera_model.py: the reading on the fit set's {len(keep)} camera "
            "JPEGs, clean (q75 and q80-95) and saved earlier at q60/45/32/22/14, against the "
            f"pseudo-MOS (5 clean, 5 - 0.8 * level); b1 = 4, b5 = 3, b4 = 0; RMSE {rmse:.3f}"
        ),
    )


# the model is the mean of this many networks fitted alike from different starting weights,
# so that one fit's wobble is no judgement: with the direction readings on every head, one
# fold's over-exposure head wandered (leave-photos-out RMSE 0.551; five: 0.429). As
# shipped, five against one: blur 0.803 -> 0.795, over 0.415 -> 0.422, the rest within 0.002
MEMBERS = 5


# which inputs each head reads: all but a blur's direction, which only the blur head reads
# (the noise head read it too and grew milder on held-out sensor noise)
HEAD_READS = np.array(
    [[f not in DIRECTION_FEATURES or h == "blur" for h in HEADS] for f in FEATURES]
)


def fit_model(
    x: np.ndarray,
    y: np.ndarray,
    w: np.ndarray,
    args: argparse.Namespace,
    pairs: np.ndarray,
    seed: int,
    source: str,
) -> CameraModel:
    """``args.members`` networks, each from its own starting weights (``seed``, ``seed +
    100``, ...), as one model."""
    nets = [
        fit_network(
            x,
            y,
            w,
            args.hidden,
            args.l2,
            seed + 100 * m,
            not args.shared,
            pairs,
            args.mono,
            reads=HEAD_READS,
        )
        for m in range(args.members)
    ]
    return CameraModel.from_networks(nets, source)


def main() -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--fitset", type=Path, default=ROOT / ".cache" / "fitset")
    ap.add_argument("--out", type=Path, default=MODEL_PATH)
    ap.add_argument("--hidden", type=int, default=40)
    ap.add_argument("--l2", type=float, default=1e-3)
    ap.add_argument(
        "--members", type=int, default=MEMBERS, help="networks fitted, from different starts"
    )
    ap.add_argument(
        "--shared",
        action="store_true",
        help="every head reads all hidden units (default: each its own share of them)",
    )
    ap.add_argument(
        "--mono", type=float, default=1.0, help="weight of the monotone hinge (0: none)"
    )
    ap.add_argument(
        "--cards", type=Path, default=ROOT / "tool_cards", help="write the heads' card curves here"
    )
    args = ap.parse_args()
    items = _items(args.fitset)
    x = read_features(items, args.fitset)
    pairs = monotone_pairs(items)
    y = np.array([[target(it.kind, it.level, h) for h in HEADS] for it in items])
    clean = np.array([it.level == 0 for it in items])
    w = np.where(clean, CLEAN_WEIGHT * (~clean).sum() / max(1, clean.sum()), 1.0)
    photo = np.array([it.clean.stem for it in items])
    print(f"{len(items)} images ({clean.sum()} clean) of {len(set(photo))} fit images")

    # leave photos out: 5 folds by photo
    names = sorted(set(photo))
    fold = {n: i % 5 for i, n in enumerate(names)}
    f_of = np.array([fold[p] for p in photo])
    pred = np.zeros_like(y)
    for k in range(5):
        tr = f_of != k
        index = np.cumsum(tr) - 1  # an item's row among the training rows
        keep = tr[pairs[:, 0]] & tr[pairs[:, 1]]
        fold_pairs = np.column_stack([index[pairs[keep, 0]], index[pairs[keep, 1]], pairs[keep, 2]])
        pred[~tr] = fit_model(x[tr], y[tr], w[tr], args, fold_pairs, seed=k, source="").predict(
            x[~tr]
        )
    source = f"scripts/train_camera_model.py on {len(items)} images of {len(names)} fit images"
    model = fit_model(x, y, w, args, pairs, seed=0, source=source)
    fit = model.predict(x)
    print(f"\n{'head':12s} {'rmse fit':>9s} {'rmse cv':>8s} {'clean<4.6 cv':>13s}")
    for j, h in enumerate(HEADS):
        rm = np.sqrt(np.mean((fit[:, j] - y[:, j]) ** 2))
        rc = np.sqrt(np.mean((pred[:, j] - y[:, j]) ** 2))
        fa = np.mean(pred[clean, j] < 4.6)
        print(f"{h:12s} {rm:9.3f} {rc:8.3f} {fa:13.1%}")
    lo, hi, j = pairs.T  # each level against the one before it, as the hinge reads them
    rises = int(np.sum(fit[hi, j] - fit[lo, j] > 0.15))
    print(f"level steps where a head's output rises by more than 0.15 (fit): {rises}")
    model.save(args.out)
    print(f"wrote {args.out}")
    if args.cards is not None:
        for j, h in enumerate(HEADS):
            p3 = float(np.percentile(pred[clean, j], CLEAN_PERCENTILE))
            card = args.cards / f"camera_{h}.yaml"
            write_card_logistic(card, head_logistic(p3, len(names)))
            print(
                f"{card}: clean images' percentile {CLEAN_PERCENTILE:g} (photos left out) {p3:.2f}"
            )
            if (
                h == "blur"
            ):  # the resolution detector reads the detail head where it finds a lattice
                write_card_logistic(args.cards / "resolution.yaml", head_logistic(p3, len(names)))
        jpeg = jpeg_logistic(x[:, FEATURES.index("jpeg_quality")], items)
        write_card_logistic(args.cards / "jpeg_quality.yaml", jpeg)
        print(f"{args.cards / 'jpeg_quality.yaml'}: {jpeg.source}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
