"""Fit the built-in detectors' logistic parameters on synthetic distortions.

There is no human-rated data set on this machine, so each detector is fitted against a
pseudo-MOS on the synthetic set of ``bench.synth``: an undistorted photo is 5, and a photo
distorted at level L (1..5) by a kind the detector is built for is ``5 - 0.8 L`` (level 5
→ 1). Only the clean photos and the detector's own kinds enter its fit: what a detector
reads on other kinds (noise makes the sharpness detector read *sharper*) is not a
statement about its own attribute, and fusion relies on the clean plateau at 5 absorbing it.
The clean images weigh four times as much in total as the distorted ones
(``CLEAN_WEIGHT``), so that the curve puts undistorted images of every content and style
on that plateau.

The curve is the 5-parameter logistic of ``tools.logistic`` with its linear term fixed at
0 (b4 = 0): a monotone sigmoid from the clean plateau to the worst one. With b4 unsigned,
least squares traded a huge b1 against a huge b4 on these data (noise: b1 = -80, b4 = 75),
which turned the curve back up just outside the fitted readings (``tools.logistic.
fit_logistic`` now ties b4's sign to the direction); ``fit_detector`` also checks the
direction over the card's whole raw range.

agentiqa's own full-reference measures (``tools.native.BUILTIN_FR``: ``detail``) are fitted
the same way, each distorted image read against its clean photo; a clean photo against
itself reads the measure's identical-pair value (0 for ``detail``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from scipy.optimize import curve_fit

from agentiqa_cli.bench.synth import SynthItem
from agentiqa_cli.categories import DETECTOR_CATEGORY, kinds_of_detector
from agentiqa_cli.imaging.distort import KINDS
from agentiqa_cli.imaging.load import LoadedImage, load_image
from agentiqa_cli.tools.builtin import DETECTORS
from agentiqa_cli.tools.detectors import SIGNALS
from agentiqa_cli.tools.logistic import logistic5
from agentiqa_cli.tools.native import BUILTIN_FR

# detector → the synthetic kinds it is built to see: a finding detector's are its
# distortions' (categories.py); the two colour readings that make no finding and the
# full-reference ``detail`` (BUILTIN_FR) are listed here
TARGETS: dict[str, tuple[str, ...]] = {
    # the lossless kinds of bench.synth (the camera model's heads are trained, not fitted)
    **{
        name: tuple(k for k in kinds_of_detector(name) if k in KINDS)
        for name in DETECTOR_CATEGORY
        if name in SIGNALS
    },
    "colorfulness": ("desaturate",),
    "colorcast": ("color_cast",),
    # the kinds that destroy or falsify detail
    "detail": ("blur", "motion_blur", "noise", "jpeg", "pixelate"),
}

# colour detectors cannot judge black-and-white photos: those are left out of their fits
COLOUR_ONLY = frozenset({"colorfulness", "colorcast", "saturation_clip"})
# The distortion response is learned on photographs, the clean plateau on every image. The
# synthetic levels are defined for photos: blurring a flat graphic, brightening a dark
# gradient or pushing a cast onto a single-hue design barely moves a reading, and such
# pairs would only flatten the curve (a bottom plateau far above 1, readings of level 5
# tied with level 2). Graphics still enter as clean images: content a detector must read
# as clean. ``fit_detector``'s ``photos`` names the photographs.
MONOCHROME_COLORFULNESS = 0.002


# total weight of the clean images relative to the distorted ones in a fit: 4 keeps every
# style of the clean fit images on the plateau (1 let the curves cross into "moderate" for
# shallow depth of field, low-key and vivid images) while the level response keeps its
# slope (measured on the realset: scripts/quality_check.py)
CLEAN_WEIGHT = 4.0


def pseudo_mos(level: int) -> float:
    return 5.0 - 0.8 * level


@dataclass(frozen=True)
class Reading:
    """All detectors' raw values on one synthetic item."""

    photo: str  # the clean image's stem
    kind: str
    level: int
    raw: Mapping[str, float]


def read_items(items: Iterable[SynthItem], names: Iterable[str] | None = None) -> list[Reading]:
    """Every detector's and built-in full-reference measure's reading (or only ``names``'s,
    plus colourfulness, which tells the black-and-white photos the colour fits leave out) on
    each item; a full-reference measure reads the item against its clean image."""
    want = None if names is None else set(names) | {"colorfulness"}
    use = {n: f for n, f in DETECTORS.items() if want is None or n in want}
    use_fr = {n: m.fn for n, m in BUILTIN_FR.items() if want is None or n in want}
    out = []
    ref: tuple[Path, LoadedImage] | None = None  # items come grouped by clean image
    for it in items:
        img = load_image(it.path)
        raw = {name: fn(img) for name, fn in use.items()}
        if use_fr:
            if ref is None or ref[0] != it.clean:
                ref = (it.clean, load_image(it.clean))
            raw |= {name: fn(img, ref[1]) for name, fn in use_fr.items()}
        out.append(Reading(it.clean.stem, it.kind, it.level, raw))
    return out


@dataclass(frozen=True)
class Fit:
    name: str
    params: list[float]
    rmse: float
    n: int
    photos: int


def _monochrome(readings: Sequence[Reading]) -> set[str]:
    return {
        r.photo
        for r in readings
        if r.level == 0 and r.raw["colorfulness"] < MONOCHROME_COLORFULNESS
    }


def fit_sigmoid(
    x: np.ndarray, y: np.ndarray, higher_better: bool, weight: np.ndarray | None = None
) -> tuple[list[float], float]:
    """Weighted least-squares b1, b2, b3, b5 of ``logistic5`` with b4 = 0 and b1 >= 0, so
    the curve rises with x when ``higher_better`` and falls otherwise. Returns (params,
    weighted RMSE)."""

    def f(v: np.ndarray, b1: float, b2: float, b3: float, b5: float) -> np.ndarray:
        return logistic5(v, b1, b2, b3, 0.0, b5)

    w = np.ones_like(x) if weight is None else np.asarray(weight, dtype=float)
    sigma = 1.0 / np.sqrt(w)
    spread = float(np.std(x)) or 1.0
    sign = 1.0 if higher_better else -1.0
    lo_b2, hi_b2 = (0.0, np.inf) if higher_better else (-np.inf, 0.0)
    best: tuple[list[float], float] | None = None
    for b3 in np.percentile(x, [10, 30, 50, 70, 90]):
        for scale in (1.0, 10.0):
            p0 = [4.0, sign * scale / spread, float(b3), 3.0]
            try:
                popt, _ = curve_fit(
                    f,
                    x,
                    y,
                    p0=p0,
                    sigma=sigma,
                    bounds=([0.0, lo_b2, -np.inf, -np.inf], [np.inf, hi_b2, np.inf, np.inf]),
                    maxfev=20000,
                )
            except (RuntimeError, ValueError):
                continue
            rmse = float(np.sqrt(np.average((f(x, *popt) - y) ** 2, weights=w)))
            if best is None or rmse < best[1] - 1e-9:
                b1, b2, b3_, b5 = (float(v) for v in popt)
                best = ([b1, b2, b3_, 0.0, b5], rmse)
    if best is None:
        raise ValueError("logistic fit did not converge")
    return best


def fit_detector(
    name: str,
    readings: Sequence[Reading],
    lower_better: bool,
    raw_range: tuple[float, float],
    exclude: Iterable[str] = (),
    photos: Iterable[str] | None = None,
) -> Fit:
    """The detector's logistic against the pseudo-MOS (see the module docstring).
    ``photos``: the photographs among the readings' images (None: all are), whose distorted
    rows alone enter the fit; every clean row does."""
    skip = set(exclude) | (_monochrome(readings) if name in COLOUR_ONLY else set())
    kinds = set(TARGETS[name])
    real = None if photos is None else set(photos)
    rows = [
        r
        for r in readings
        if r.photo not in skip
        and (r.level == 0 or (r.kind in kinds and (real is None or r.photo in real)))
    ]
    x = np.array([r.raw[name] for r in rows], dtype=float)
    y = np.array([pseudo_mos(r.level) for r in rows], dtype=float)
    clean = np.array([r.level == 0 for r in rows])
    # clean images weigh CLEAN_WEIGHT times the distorted ones in total, so "clean content
    # reads clean" is not outvoted five (or ten) to one by the distorted levels
    w = np.where(clean, CLEAN_WEIGHT * (~clean).sum() / max(1, clean.sum()), 1.0)
    params, rmse = fit_sigmoid(x, y, not lower_better, w)
    grid = np.linspace(raw_range[0], raw_range[1], 2048)
    step = np.diff(logistic5(grid, *params))
    if bool((step > 1e-12).any() if lower_better else (step < -1e-12).any()):
        raise ValueError(f"{name}: fitted logistic is not monotone over the raw range {raw_range}")
    return Fit(name, params, rmse, len(rows), len({r.photo for r in rows}))
