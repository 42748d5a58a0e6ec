"""Records from the user's own images: synthetic levels (or MOS), the metrics that vote, the votes.

Each clean image is distorted at levels 1..5 by every kind of a distortion category (as
``eval-bench synth`` does, ``bench/synth.py``, same seeds) and every candidate tool scores
the series. Per tool and series four metrics vote (*ours*, docs/guides.md):

- ``monotonicity`` (higher better): −SRCC(score, level) over the clean image and its levels;
- ``margin`` (higher better): clean score minus the level-3 score;
- ``shortfall`` (lower better): how far the clean image's score falls below 4.6;
- ``rmse`` (lower better): RMSE of the pseudo-MOS (5 − 0.8·level) predicted from the score
  through a logistic fitted per (tool, kind) over the whole build set.

One series (one content, one kind) is one record: the tools' pairwise outcomes (Eq. 6), its
pattern profile (the standardised detector readings of its level-3 image) and its best tool.

A MOS table (any ``eval-bench mos`` layout with a distortion type per image) gives series
too: the images of one reference and one distortion type, with their MOS rescaled to 1–5
as the target instead of the pseudo-MOS, and the reference itself (when the table names
one) as the clean point. The same four metrics then read: SRCC against the target, the
best image's score minus that of the image nearest 2.6 (level 3's pseudo-MOS), the clean
reference's shortfall (left out without one), and the logistic RMSE against the target.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from agentiqa_cli.bench.builtin_fit import pseudo_mos
from agentiqa_cli.bench.layouts import MosItem
from agentiqa_cli.bench.metrics import spearman
from agentiqa_cli.categories import category_of_type
from agentiqa_cli.categories import kinds_of as categories_kinds_of
from agentiqa_cli.errors import ImageError
from agentiqa_cli.experience.pool import Meta, Record, set_key
from agentiqa_cli.experience.vote import Direction, borda, vote
from agentiqa_cli.imaging.distort import KINDS, distort, item_rng, resize_long_side
from agentiqa_cli.imaging.load import LoadedImage, load_image
from agentiqa_cli.records import Category, Mode
from agentiqa_cli.tools.builtin import DETECTORS
from agentiqa_cli.tools.cards import ToolCard
from agentiqa_cli.tools.logistic import logistic5
from agentiqa_cli.tools.runner import ToolRunner

DIRECTIONS: dict[str, Direction] = {
    "monotonicity": "higher",
    "margin": "higher",
    "shortfall": "lower",
    "rmse": "lower",
}
CLEAN_TARGET = 4.6
MARGIN_LEVEL = 3
PROFILE_LEVEL = 3
COUPLED = "+"  # joins the parts of a coupled kind
LEVELS = (1, 2, 3, 4, 5)


def kinds_of(categories: Iterable[str]) -> list[str]:
    """The synthetic kinds of ``categories`` that ``bench/synth.py`` can make."""
    return [k for k in categories_kinds_of(categories) if k in KINDS]


def coupled_kinds(categories: Sequence[str]) -> list[str]:
    """One coupled kind per pair of ``categories`` (the first synthetic kind of each), for
    the pool's degradation-set keys of two categories."""
    firsts = [ks[0] for c in categories if (ks := kinds_of([c]))]
    return [f"{a}{COUPLED}{b}" for i, a in enumerate(firsts) for b in firsts[i + 1 :]]


@dataclass
class Series:
    """Every tool's normalised score on one content at the points of one kind: the clean
    image and levels 1..5 (targets: the pseudo-MOS), or a MOS table's images."""

    source: str
    kind: str
    norms: dict[str, list[float | None]]
    readings: dict[str, float] = field(default_factory=dict)  # detectors at PROFILE_LEVEL
    targets: list[float] = field(default_factory=lambda: [pseudo_mos(L) for L in (0, *LEVELS)])
    clean: bool = True  # the first point is an undistorted image

    @property
    def degradations(self) -> str:
        """The degradation-set key of the kind (a coupled kind ``blur+noise``: both)."""
        cats: list[Category] = []
        for part in self.kind.split(COUPLED):
            c = category_of_type(part)
            assert c is not None
            cats.append(c)
        return set_key(cats)


def _image(pixels: np.ndarray, name: str) -> LoadedImage:
    return LoadedImage(path=Path(name), pixels=pixels.astype(np.float32, copy=False), sha256="")


def _norms(runner: ToolRunner, cards: Sequence[ToolCard], img: LoadedImage,
           ref: LoadedImage) -> dict[str, float | None]:  # fmt: skip
    out: dict[str, float | None] = {}
    for card in cards:
        s = runner.run(card, img, ref if card.mode == "FR" else None)
        out[card.name] = s.norm if s.ok else None
    return out


def measure(
    pixels: np.ndarray,
    source: str,
    kinds: Sequence[str],
    runner: ToolRunner,
    cards: Sequence[ToolCard],
    seed: int = 0,
    size: int | None = 384,
) -> list[Series]:
    """One series per kind for one clean image (resized to ``size`` on its long side)."""
    x = resize_long_side(pixels.astype(np.float32, copy=False), size)
    clean = _image(x, f"{source}__clean")
    at_clean = _norms(runner, cards, clean, clean)
    out = []
    for kind in kinds:
        norms: dict[str, list[float | None]] = {c.name: [at_clean[c.name]] for c in cards}
        readings: dict[str, float] = {}
        for level in LEVELS:
            y = _image(coupled(x, kind, level, seed, source), f"{source}__{kind}_{level}")
            for name, v in _norms(runner, cards, y, clean).items():
                norms[name].append(v)
            if level == PROFILE_LEVEL:
                readings = {n: float(fn(y)) for n, fn in DETECTORS.items()}
        out.append(Series(source, kind, norms, readings))
    return out


def coupled(x: np.ndarray, kind: str, level: int, seed: int, source: str) -> np.ndarray:
    """``x`` distorted by ``kind`` at ``level``; a coupled kind (``blur+noise``) applies its
    parts in turn, each at the level (its records key on the set of their categories)."""
    for part in kind.split(COUPLED):
        x = distort(x, part, level, item_rng(seed, source, part))
    return x


def _key(tool: str, kind: str) -> str:
    return f"{tool}|{kind}"


def fit_curves(series: Sequence[Series]) -> dict[str, list[float] | None]:
    """Per (tool, kind): the logistic from score to pseudo-MOS over all contents (None when
    it cannot be fitted: then the RMSE is against the pseudo-MOS mean)."""
    pooled: dict[str, tuple[list[float], list[float]]] = {}
    for s in series:
        for tool, vals in s.norms.items():
            xs, ys = pooled.setdefault(_key(tool, s.kind), ([], []))
            for v, target in zip(vals, s.targets, strict=True):
                if v is not None:
                    xs.append(v)
                    ys.append(target)
    return {key: fit_curve(xs, ys) for key, (xs, ys) in pooled.items()}


def fit_curve(xs: Sequence[float], ys: Sequence[float]) -> list[float] | None:
    """Least-squares ``logistic5`` parameters (b1, b2, b3, b4, b5) from score to pseudo-MOS,
    by variable projection: for each (b2, b3) on a grid (slopes of either sign over the
    scores' spread, centres at their deciles) b1 and b5 are linear and solved exactly, and
    the straight line (b1 = 0) competes too. Milliseconds, deterministic, never diverges —
    the iterative fit of ``tools.logistic`` takes seconds per curve on flat data."""
    x = np.asarray(xs, dtype=float)
    y = np.asarray(ys, dtype=float)
    if x.size < 3 or np.ptp(x) == 0:
        return None
    slope, icpt = np.polyfit(x, y, 1)
    best = [0.0, 0.0, 0.0, float(slope), float(icpt)]
    best_sse = float(np.sum((slope * x + icpt - y) ** 2))
    spread = float(np.std(x))
    for b3 in np.percentile(x, np.arange(10, 100, 10)):
        for b2 in np.array([0.5, 1, 2, 4, 8, 16, 32]) / spread:
            for sign in (1.0, -1.0):
                g = 0.5 - 1.0 / (1.0 + np.exp(np.clip(sign * b2 * (x - b3), -700, 700)))
                a = np.stack([g, np.ones_like(g)], axis=1)
                coef, *_ = np.linalg.lstsq(a, y, rcond=None)
                sse = float(np.sum((a @ coef - y) ** 2))
                if sse < best_sse - 1e-12:
                    best_sse = sse
                    best = [float(coef[0]), float(sign * b2), float(b3), 0.0, float(coef[1])]
    return best


def metrics(
    norms: Sequence[float | None],
    params: Sequence[float] | None,
    targets: Sequence[float] | None = None,
    clean: bool = True,
) -> dict[str, float | None]:
    """The four voting metrics of one tool on one series (None: not measurable).
    ``targets`` default to the pseudo-MOS of levels 0..5."""
    if any(v is None for v in norms):
        return dict.fromkeys(DIRECTIONS)
    x = np.asarray(norms, dtype=float)
    target = np.asarray(
        targets if targets is not None else [pseudo_mos(L) for L in range(len(x))], float
    )
    if np.ptp(x) == 0 or np.ptp(target) == 0:
        mono = 0.0  # a tool that does not react at all
    else:
        r = spearman(x, target)
        mono = r if r is not None else 0.0
    best = int(np.argmax(target))
    mid = int(np.argmin(np.abs(target - pseudo_mos(MARGIN_LEVEL))))
    pred = logistic5(x, *params) if params is not None else np.full_like(target, target.mean())
    return {
        "monotonicity": float(mono),
        "margin": float(x[best] - x[mid]),
        "shortfall": float(max(0.0, CLEAN_TARGET - x[0])) if clean else None,
        "rmse": float(np.sqrt(np.mean((pred - target) ** 2))),
    }


def standardizer(series: Sequence[Series]) -> dict[str, tuple[float, float]]:
    out = {}
    for det in DETECTORS:
        vals = np.array([s.readings[det] for s in series if det in s.readings], dtype=float)
        vals = vals[np.isfinite(vals)]
        mean = float(vals.mean()) if vals.size else 0.0
        std = float(vals.std()) if vals.size > 1 else 1.0
        out[det] = (mean, std if std > 1e-12 else 1.0)
    return out


def profile(readings: Mapping[str, float], std: Mapping[str, tuple[float, float]]) -> list[float]:
    """Standardised detector readings in ``std``'s order (a missing reading reads as the mean)."""
    out = []
    for det, (mean, sd) in std.items():
        v = readings.get(det)
        out.append(0.0 if v is None or not np.isfinite(v) else (float(v) - mean) / sd)
    return out


def record(series: Series, mode: Mode, tools: Sequence[str], meta: Meta) -> Record:
    m = [
        metrics(series.norms[t], meta.fits.get(_key(t, series.kind)), series.targets, series.clean)
        for t in tools
    ]
    counts = vote(m, DIRECTIONS)
    r = borda(counts)
    top = np.flatnonzero(r == np.nanmax(r)) if np.isfinite(r).any() else np.array([])
    return Record(
        mode=mode,
        degradations=series.degradations,
        source=series.source,
        kind=series.kind,
        tools=list(tools),
        wins=counts.wins.tolist(),
        ties=counts.ties.tolist(),
        profile=profile(series.readings, meta.standardize) if series.readings else None,
        best=tools[int(top[0])] if len(top) == 1 else None,
    )


def build_records(
    images: Iterable[tuple[str, np.ndarray]],
    runner: ToolRunner,
    tools: Mapping[Mode, Sequence[ToolCard]],
    *,
    cards_hashes: Mapping[str, str],
    calibration: str | None,
    categories: Sequence[str],
    seed: int = 0,
    size: int | None = 384,
    source: str = "",
    on_image: Callable[[str], None] | None = None,
    coupled: bool = False,
) -> tuple[Meta, list[Record]]:
    """Measure every image under every kind of ``categories`` (and, with ``coupled``, every
    pair of them together), then vote per mode."""
    union = union_of(tools)
    kinds = kinds_of(categories) + (coupled_kinds(categories) if coupled else [])
    series: list[Series] = []
    for name, pixels in images:
        series += measure(pixels, name, kinds, runner, union, seed, size)
        if on_image is not None:
            on_image(name)
    return vote_series(series, tools, cards_hashes=cards_hashes, calibration=calibration,
                       source=source, size=size, seed=seed)  # fmt: skip


def union_of(tools: Mapping[Mode, Sequence[ToolCard]]) -> list[ToolCard]:
    return list({c.name: c for cards in tools.values() for c in cards}.values())


def vote_series(
    series: Sequence[Series],
    tools: Mapping[Mode, Sequence[ToolCard]],
    *,
    cards_hashes: Mapping[str, str],
    calibration: str | None,
    source: str,
    size: int | None,
    seed: int,
) -> tuple[Meta, list[Record]]:
    """The pool's metadata (standardisation, logistic fits) and one record per series and
    mode."""
    measured = {c.name for c in union_of(tools)} | set(DETECTORS)
    meta = Meta(
        cards={n: h for n, h in cards_hashes.items() if n in measured},
        calibration=calibration,
        detectors=list(DETECTORS),
        standardize=standardizer(series),
        fits=fit_curves(series),
        source=source,
        size=size,
        seed=seed,
    )
    records = [
        record(s, mode, [c.name for c in cards], meta)
        for mode, cards in tools.items()
        for s in series
    ]
    return meta, records


def mos_series(
    items: Sequence[MosItem],
    mos_range: tuple[float, float] | None,
    runner: ToolRunner,
    cards: Sequence[ToolCard],
    *,
    max_pixels: int = 100_000_000,
    on_image: Callable[[str, str], None] | None = None,
) -> tuple[list[Series], list[str]]:
    """Series from a MOS table: one per (reference, distortion type) with at least three
    points, the reference first when there is one. Returns the series and notes on what was
    left out (rows without a known category, unreadable images)."""
    notes: list[str] = []
    usable = [i for i in items if i.distortion and category_of_type(i.distortion)]
    if len(usable) < len(items):
        notes.append(
            f"{len(items) - len(usable)} rows without a known distortion category left out"
        )
    if not usable:
        return [], notes
    mos = [i.mos for i in usable]
    lo, hi = mos_range or (min(mos), max(mos))
    span = (hi - lo) or 1.0
    groups: dict[tuple[str, str], list[MosItem]] = {}
    for i in usable:
        groups.setdefault((str(i.reference or ""), str(i.distortion)), []).append(i)
    scored: dict[Path, tuple[dict[str, float | None], dict[str, float]] | None] = {}

    def score(
        path: Path, ref: Path | None
    ) -> tuple[dict[str, float | None], dict[str, float]] | None:
        if path not in scored:
            try:
                img = load_image(path, max_pixels)
                reference = load_image(ref, max_pixels) if ref is not None else img
            except ImageError as e:
                scored[path] = None
                if on_image is not None:
                    on_image(str(path), str(e))
                return None
            usable_cards = [c for c in cards if c.mode == "NR" or ref is not None]
            norms = _norms(runner, usable_cards, img, reference)
            scored[path] = (norms, {n: float(fn(img)) for n, fn in DETECTORS.items()})
            if on_image is not None:
                on_image(str(path), "ok")
        return scored[path]

    out = []
    for (ref_name, kind), group in groups.items():
        ref = Path(ref_name) if ref_name else None
        points: list[tuple[float, tuple[dict[str, float | None], dict[str, float]]]] = []
        clean = False
        if ref is not None and (r := score(ref, ref)) is not None:
            points.append((5.0, r))
            clean = True
        for it in sorted(group, key=lambda i: -i.mos):
            if (s := score(it.image, ref)) is not None:
                points.append((1.0 + 4.0 * (it.mos - lo) / span, s))
        if len(points) < 3:
            continue
        targets = [t for t, _ in points]
        mid = int(np.argmin(np.abs(np.asarray(targets) - pseudo_mos(MARGIN_LEVEL))))
        out.append(
            Series(
                source=ref.stem if ref is not None else kind,
                kind=kind,
                norms={c.name: [p[1][0].get(c.name) for p in points] for c in cards},
                readings=points[mid][1][1],
                targets=targets,
                clean=clean,
            )
        )
    return out, notes
