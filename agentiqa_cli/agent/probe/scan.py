"""The built-in detectors over regions of one image: the scan grid, the subject, cell readings,
and the counting rules both probing versions share.

Grid (ours, docs/fidelity.md): g = ⌈max(W, H) / 512⌉ tiles per side. The detectors are
area statistics (column-step energies, percentiles of tile noise), so a defect has to fill
most of the window they read: a 256² mosaic patch moves a 512² tile's pixelation reading
from 0.02 to 0.03, which no threshold can use. The scan therefore reads *cells* of a
quarter tile (about 128 px, never below 64), and the subject (where the image is sharp)
on half tiles, where the blur measure has enough 32-px tiles to choose from.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import lru_cache

import numpy as np
from numpy.typing import NDArray

from agentiqa_cli import heavy
from agentiqa_cli.agent.probe.crops import subject_overlap
from agentiqa_cli.agent.probe.records import CropRecord, ProbeOutcome, SubjectRecord
from agentiqa_cli.categories import artefact_of_detector
from agentiqa_cli.imaging.load import LoadedImage
from agentiqa_cli.records import SEVERITIES, Box, Severity
from agentiqa_cli.resources import default_cards_dir
from agentiqa_cli.tools.builtin import DETECTORS
from agentiqa_cli.tools.cards import CardSet, load_cards
from agentiqa_cli.tools.severity import findings

F32 = NDArray[np.float32]
PxBox = tuple[int, int, int, int]  # x0, y0, x1, y1, end exclusive

TILE_TARGET = 512
MIN_CELL = 64
# the detectors the rules version reads per cell, and the artefact each one reads
LOCAL_DETECTORS: dict[str, str] = {
    name: artefact
    for name in ("blockiness", "pixelation", "noise", "sharpness", "posterization")
    if (artefact := artefact_of_detector(name))
}
BLUR_DETECTOR = "sharpness"
FOCUS_MARGIN = 0.5  # cells this close (normalized score) to the sharpest one are in focus
# mean |∇luma| per pixel below which a cell is flat: sky, walls, studio backgrounds. Such a
# cell reads "blurred" to any sharpness measure, but there is nothing in it to be in focus.
FLAT_ENERGY = 0.006

COARSE_ENERGY = 0.02  # structured: mean step between 8-px block means (a sky: 0.004)
NOISE_SCALE_DROP = 1.6  # white_noise_like: fine / coarse response (2 for white noise)
BAND_STEP = 24 / 255  # false_contours: the steps between bands stay this small
BAND_SAME = 0.7  # false_contours: this share of a channel's steps is one quantization step

_BT601 = np.array([0.299, 0.587, 0.114], dtype=np.float32)


@lru_cache(maxsize=1)
def default_cards() -> CardSet:
    return load_cards(default_cards_dir())


def severity_rank(sev: Severity | str) -> int:
    return SEVERITIES.index(sev)


@dataclass(frozen=True)
class Grid:
    width: int
    height: int
    g: int  # tiles per side
    tile: int
    cell: int

    def cells(self, side: int) -> tuple[list[int], list[int]]:
        """Left and top edges of square cells of ``side`` px that cover the image; the last
        cell of a row/column is moved back to end at the border (it may overlap)."""
        return _starts(self.width, side), _starts(self.height, side)


def _starts(n: int, side: int) -> list[int]:
    if n <= side:
        return [0]
    out = list(range(0, n - side + 1, side))
    if out[-1] + side < n:
        out.append(n - side)
    return out


def grid_for(width: int, height: int) -> Grid:
    g = max(1, math.ceil(max(width, height) / TILE_TARGET))
    tile = math.ceil(max(width, height) / g)
    return Grid(width, height, g, tile, max(MIN_CELL, math.ceil(tile / 4)))


def region(image: LoadedImage, px: PxBox) -> LoadedImage:
    """A region of the original as an image of its own, for the detectors."""
    x0, y0, x1, y1 = px
    return LoadedImage(
        path=image.path,
        pixels=np.ascontiguousarray(image.pixels[y0:y1, x0:x1]),
        sha256=f"{image.sha256}@{x0},{y0},{x1},{y1}",
    )


@dataclass(frozen=True)
class Reading:
    detector: str
    raw: float
    norm: float | None
    severity: Severity
    reason: str


def read(
    image: LoadedImage,
    names: Iterable[str],
    cards: CardSet,
    known: Mapping[str, float] | None = None,
) -> dict[str, Reading]:
    """The named detectors' readings on ``image``, with severities from ``findings``;
    ``known`` raw readings (already measured by the caller) are not measured again."""
    out: dict[str, Reading] = {}
    for name in names:
        fn = DETECTORS.get(name)
        if fn is None or name not in cards:
            continue  # a detector the reworked set no longer has, or a card the user dropped
        raw = float(known[name]) if known and name in known else float(fn(image))
        found = findings({name: raw}, cards)
        if not found:  # NaN reading, or a monochrome exemption
            continue
        out[name] = Reading(
            name, raw, cards.get(name).normalize(raw), found[0].severity, found[0].reason
        )
    return out


def luma(image: LoadedImage) -> F32:
    return image.pixels @ _BT601


def visible_steps(gray: F32, level: float = 4 / 255, share: float = 0.01) -> bool:
    """Whether at least ``share`` of the neighbour steps reach ``level``: a pixelated
    region has hard block edges, a flat 8-bit sky only one-level steps (whose repeated
    columns read as pixelation too)."""
    dx = np.abs(np.diff(gray, axis=1)) >= level
    dy = np.abs(np.diff(gray, axis=0)) >= level
    return bool(max(dx.mean(), dy.mean()) >= share) if dx.size and dy.size else False


def flat_runs(gray: F32, share: float = 0.5) -> bool:
    """Whether most neighbour steps along both axes are exactly nothing (below half an 8-bit
    level): inside mosaic blocks they are; across textured content, or beside one strong
    edge (which the pixelation reading mistakes for repeated columns), they are not."""
    dx = np.abs(np.diff(gray, axis=1)) < 0.5 / 255
    dy = np.abs(np.diff(gray, axis=0)) < 0.5 / 255
    return bool(min(dx.mean(), dy.mean()) >= share) if dx.size and dy.size else False


def lattice_lines(c: F32, max_period: int = 32, share: float = 0.6) -> int:
    """How many evenly spaced lines carry the step energy ``c`` (per column, or per row):
    the most, over periods 3..``max_period``, of the strong lines on the phase holding at
    least ``share`` of all the energy. A mosaic's block edges form such a lattice; the
    edges of a flat-colour graphic (arcs, diagonals, a single straight border) do not."""
    total = float(c.sum())
    if total <= 0:
        return 0
    strong = c >= 0.2 / 255  # off the lattice, a mosaic has no steps at all
    best = 0
    for period in range(3, min(max_period, c.size // 3) + 1):
        n = (c.size // period) * period
        phases = c[:n].reshape(-1, period)
        p = int(np.argmax(phases.sum(axis=0)))
        if phases[:, p].sum() >= share * total:
            best = max(best, int(strong[:n].reshape(-1, period)[:, p].sum()))
    return best


def mosaic_like(gray: F32, lines: int = 4) -> bool:
    """Flat blocks (``flat_runs``) with hard edges (``visible_steps``) on a lattice of at
    least ``lines`` lines along both axes."""
    if not (visible_steps(gray) and flat_runs(gray)):
        return False
    cols = np.abs(np.diff(gray, axis=1)).mean(axis=0)
    rows = np.abs(np.diff(gray, axis=0)).mean(axis=1)
    return min(lattice_lines(cols), lattice_lines(rows)) >= lines


def grid_excess(gray: F32, period: int = 8) -> float:
    """How far the strongest phase of an 8-px grid stands out above the median phase, in
    luma (the smaller of the two axes' values). Like the blockiness detector's ratio, but
    absolute, so that one-level steps in a flat sky (large relative to nothing) do not
    count, and with each phase's *median* over the periods, so that one strong straight
    edge (a horizon, a seam) is not a grid: JPEG blocking repeats in every period."""
    out = []
    for axis in (1, 0):
        c = np.abs(np.diff(gray, axis=axis)).mean(axis=1 - axis)
        n = (c.size // period) * period
        if n < 2 * period:
            return 0.0
        phases = np.sort(np.median(c[:n].reshape(-1, period), axis=0))
        out.append(float(phases[-1] - np.median(phases)))
    return float(min(out))


def _immerkaer(gray: F32) -> float:
    """The median absolute response of Immerkær's [1 -2 1] ⊗ [1 -2 1] operator, scaled to
    a Gaussian noise sigma (robust to the few strong edges a cell holds)."""
    v = gray[:-2] - 2.0 * gray[1:-1] + gray[2:]
    r = v[:, :-2] - 2.0 * v[:, 1:-1] + v[:, 2:]
    return float(np.median(np.abs(r)) * 1.4826 / 6.0) if r.size else 0.0


def white_noise_like(gray: F32, drop: float = NOISE_SCALE_DROP) -> bool:
    """Whether what the noise detector reads is independent from pixel to pixel: averaging
    2×2 blocks halves independent noise's spread, while texture (grass, fabric, foliage,
    which the per-tile noise estimate also reads) keeps its energy at the coarser scale.
    The response at full resolution must be at least ``drop`` times that of the 2×2-block
    average (about 2 for white noise, about 1 or less for texture), and visible (at least
    one 8-bit level)."""
    h, w = gray.shape
    if min(h, w) < 16:
        return False
    fine = _immerkaer(gray)
    g2 = gray[: h // 2 * 2, : w // 2 * 2].reshape(h // 2, 2, w // 2, 2).mean(axis=(1, 3))
    coarse = _immerkaer(g2)
    return bool(fine >= 1 / 255 and fine >= drop * max(coarse, 1e-6))


def structured(gray: F32, block: int = 8) -> bool:
    """Whether a cell holds structure that could be in or out of focus (not flat sky, wall
    or studio backdrop, which reads "blurred" to any sharpness measure): the mean step
    between neighbouring ``block``-px block means (a blur keeps these, a smooth gradient
    has hardly any) is at least ``COARSE_ENERGY``."""
    h, w = gray.shape
    if min(h, w) < 2 * block:
        return False
    g = gray[: h // block * block, : w // block * block]
    g = g.reshape(h // block, block, w // block, block).mean(axis=(1, 3))
    act = np.abs(np.diff(g, axis=1)).mean() + np.abs(np.diff(g, axis=0)).mean()
    return bool(act >= COARSE_ENERGY)


def false_contours(rgb: F32, share: float = 0.5) -> bool:
    """Banding (``rgb``: a cell's pixels): flat bands (most neighbour steps in luma exactly
    nothing, ``flat_runs``) between which each channel steps by one and the same small
    amount, a quantization step: at least ``BAND_SAME`` of a channel's non-zero steps
    within 1.5 levels of their median, which is at most ``BAND_STEP``, and some channel
    has three levels or more (one edge between two fills is not a band). The fills of a
    flat-colour graphic step by amounts as different as their colours, and antialiased
    edges by fractions of them."""
    if not flat_runs(rgb @ _BT601, share):
        return False
    banded = False
    for c in range(rgb.shape[-1]):
        ch = rgb[..., c]
        steps = np.concatenate([np.abs(np.diff(ch, axis=1)).ravel(),
                                np.abs(np.diff(ch, axis=0)).ravel()])  # fmt: skip
        moving = steps[steps >= 0.5 / 255]
        if moving.size < 16:
            continue  # a channel without gradation here says nothing
        mid = float(np.median(moving))
        if mid > BAND_STEP or float(np.mean(np.abs(moving - mid) <= 1.5 / 255)) < BAND_SAME:
            return False
        # bands: at least three levels a step apart (one edge between two fills is not)
        banded |= np.unique(np.rint(ch * 255)).size >= 3
    return banded


def cell_energy(gray: F32, xs: list[int], ys: list[int], side: int) -> F32:
    """Mean |∇luma| per cell (rows: ys, columns: xs): how much structure each holds."""
    act = np.zeros_like(gray)
    act[:, :-1] += np.abs(np.diff(gray, axis=1))
    act[:-1, :] += np.abs(np.diff(gray, axis=0))
    integral = np.pad(act.cumsum(0).cumsum(1), ((1, 0), (1, 0)))
    h, w = gray.shape
    out = np.zeros((len(ys), len(xs)), dtype=np.float32)
    for i, y in enumerate(ys):
        y1 = min(h, y + side)
        for j, x in enumerate(xs):
            x1 = min(w, x + side)
            s = integral[y1, x1] - integral[y, x1] - integral[y1, x] + integral[y, x]
            out[i, j] = s / max(1, (y1 - y) * (x1 - x))
    return out


def find_subject(image: LoadedImage, cards: CardSet | None = None) -> SubjectRecord:
    """Where the image is sharp: the connected in-focus, structured region around the
    sharpest half tile. ``sharp`` is False when even that reads moderately blurred or worse
    (then no region is in focus and blur counts anywhere)."""
    cards = cards or default_cards()
    w, h = image.size
    grid = grid_for(w, h)
    side = min(2 * grid.cell, max(w, h))
    xs, ys = grid.cells(side)
    energy = cell_energy(luma(image), xs, ys, side)
    norms = np.full(energy.shape, -np.inf, dtype=np.float64)
    sev = np.zeros(energy.shape, dtype=np.int_)
    for i, y in enumerate(ys):
        for j, x in enumerate(xs):
            r = read(
                region(image, (x, y, min(w, x + side), min(h, y + side))), [BLUR_DETECTOR], cards
            )
            got = r.get(BLUR_DETECTOR)
            if got is not None and got.norm is not None:
                norms[i, j], sev[i, j] = got.norm, severity_rank(got.severity)
    salient = energy >= max(FLAT_ENERGY, float(np.median(energy)))
    if not salient.any() or not np.isfinite(norms[salient]).any():
        # nothing but flat areas: nothing there can be out of focus
        return SubjectRecord(box=None, sharp=True)
    best = float(norms[salient].max())
    focus = salient & (norms >= best - FOCUS_MARGIN)
    labels, _ = heavy.ndimage.label(focus, structure=np.ones((3, 3), dtype=bool))
    at = np.argwhere(salient & (norms == best))[0]
    rows, cols = np.nonzero(labels == labels[at[0], at[1]])
    x0, y0 = xs[cols.min()], ys[rows.min()]
    x1, y1 = min(w, xs[cols.max()] + side), min(h, ys[rows.max()] + side)
    return SubjectRecord(
        box=Box.of_pixels(x0, y0, x1, y1, w, h),
        sharp=int(sev[at[0], at[1]]) < severity_rank("moderate"),
        sharpness=round(best, 3),
    )


# -- counting: shared by the VLM loop and the rules version ------------------------------------


def count(crop: CropRecord, subject: SubjectRecord) -> CropRecord:
    """Apply the zero-penalty and bokeh rules to a judged crop; sets ``penalty``."""
    crop.on_subject = subject_overlap(crop.box, subject.box)
    if crop.status != "Degraded":
        crop.penalty = 0.0
        if crop.penalty_asked > 0:
            crop.note = f"zero-penalty rule: a {crop.status.lower()} crop costs 0"
        return crop
    if crop.type == "blur" and subject.sharp and not crop.on_subject:
        crop.penalty = 0.0
        crop.note = "bokeh rule: blur away from the in-focus subject is not penalized"
        return crop
    crop.penalty = crop.penalty_asked
    return crop


def clip_score(value: float) -> float:
    return float(min(5.0, max(1.0, value)))


def total_penalty(crops: Iterable[CropRecord]) -> float:
    return float(sum(c.penalty for c in crops if c.status == "Degraded"))


def finish(outcome: ProbeOutcome) -> ProbeOutcome:
    """Recompute Σ penalties and final = clip(base - Σ, 1, 5) from the crops."""
    outcome.penalty = total_penalty(outcome.crops)
    outcome.final_score = clip_score(outcome.base_score - outcome.penalty)
    return outcome
