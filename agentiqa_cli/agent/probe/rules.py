"""Probing without a VLM: the built-in detectors look where a model would zoom.

1. Whole image: every built-in detector once (the base score, unless the caller gives one,
   and the global severity of each local artefact).
2. Cells (``scan``, about 128 px): pixelation, JPEG blockiness, noise, blur and
   posterization (banding). A cell is suspect when it reads bad on its own, clearly worse
   than the image's reference cell (the median cell; for blur the sharp end, the 90th
   percentile, since a shallow depth of field can blur most of the frame), visibly so in
   absolute luma (each detector's gate, below), and worse than the whole image reads
   (what the global view saw is in the base score already and is not charged twice).
3. Connected suspect cells form one candidate; a blur candidate must also be local (two
   cells at least, its bounding box at most half the cells along each axis, and 80% of
   the ring of cells around that box within 1 of the sharp end): a soft area that runs on
   into more soft area (a shallow depth of field, sky, mist) is the picture's, and is left
   to the global view and, with a VLM, to the bokeh rule. Candidates are ranked worst first
   and taken three per turn. The crop is the candidate's cells grown by an eighth of its
   size per side, and at least one cell: a defect fills the cells that fire, so one cell
   of growth covers its partly filled border (and gives the context Q-Probe's Table 4
   found essential: SRCC 0.728 with context vs 0.510 for defect-only crops).
4. Each crop is judged by the detectors that fired, read on the cells they fired on (the
   growth is context, not something to dilute the reading with): penalty by severity
   (slight 0.25, moderate 0.5, severe 1.0, extreme 1.5) × 1.0 on the subject, 0.5
   elsewhere; then the shared zero-penalty and bokeh rules (Q-Probe App. B: blur away from
   a sharp subject is depth of field and costs nothing); final = clip(base - Σ, 1, 5).

The gates. The cell severities use the tool cards' curves, fitted on whole images; on a
128-px cell the readings are noisier, and some things read as defects there that are not:
a flat 8-bit sky repeats columns (pixelation), mild camera-JPEG blocking stands out
against nothing in a flat sky, one strong straight edge inside a cell tops the blockiness
ratio and makes its neighbours look like repeated columns, a flat-colour graphic has flat
runs with hard edges (and few codes: posterization), texture reads as noise, and a smooth
part of a photo reads as blur. Hence:
- mosaic: flat runs and hard steps on a lattice of at least four lines along both axes
  (``scan.mosaic_like``);
- JPEG: a raw blockiness of 2 or more (the card levels off at 1.43 and never reads
  extreme; on the fit set's clean camera JPEGs no 128-px cell whose grid passes the next
  gate reads above 1.29, the cells of a q5 patch in a photo read 2.3-4.2), with an 8-px
  grid that stands out by at least one 8-bit level in every period
  (``scan.grid_excess``);
- noise: independent from pixel to pixel: a 2×2 average at least 1.6× quieter
  (``scan.white_noise_like``; texture keeps its energy at the coarser scale);
- blur: severe, 2 below the sharp end, on a cell with structure at an 8-px scale
  (``scan.structured``; flat sky reads blurred to any sharpness measure);
- posterization: flat bands between which each channel steps by one quantization step,
  read on the cell and its neighbours (``scan.false_contours``). Like the
  detector, it reads banding only as quantized: a JPEG save fills the empty codes.
Measured before the last three (scripts and images outside the repository; see the report
of the probing branch): 38 clean images (19 Debian wallpapers at 1.7-15 MP, camera JPEGs
and graphics; 16 GNOME 4096² graphics; the scikit-image canvas of tests/test_probe.py,
tiled to 6000×4000 and shifted off the cell grid) get no penalty; of 256² patches pasted
at two places into 8 of them, 14/16 mosaic-16, 13/16 mosaic-8, 13/16 JPEG q 5 and 7/16
JPEG q 20 are found (misses: patches on flat sky, where mosaic changes nothing visible,
and the milder JPEG on textured content). Noise, blur and banding: docs/vqpp.md.

Deterministic: no randomness, cells and candidates in a fixed order.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from statistics import fmean
from typing import Any

import numpy as np
from numpy.typing import NDArray

from agentiqa_cli import heavy
from agentiqa_cli.agent.probe.crops import CropBook, subject_overlap
from agentiqa_cli.agent.probe.records import (
    ELSEWHERE_WEIGHT,
    MAX_BOXES,
    MAX_TURNS,
    SEVERITY_PENALTY,
    SUBJECT_WEIGHT,
    CropRecord,
    ProbeOutcome,
    SubjectRecord,
    TurnRecord,
)
from agentiqa_cli.agent.probe.scan import (
    F32,
    LOCAL_DETECTORS,
    PxBox,
    Reading,
    count,
    default_cards,
    false_contours,
    find_subject,
    finish,
    grid_excess,
    grid_for,
    luma,
    mosaic_like,
    read,
    region,
    severity_rank,
    structured,
    white_noise_like,
)
from agentiqa_cli.imaging.load import LoadedImage
from agentiqa_cli.records import Box
from agentiqa_cli.tools.builtin import DETECTORS
from agentiqa_cli.tools.cards import CardSet

Emit = Callable[[str, dict[str, Any]], None]


@dataclass
class Candidate:
    cells: PxBox  # the suspect cells' bounding box
    # each detector that fired → the bounding box of the cells it fired on
    detectors: dict[str, PxBox] = field(default_factory=dict)
    worst: int = 0
    n_cells: int = 0


def _base(readings: dict[str, Reading]) -> float:
    """The mean normalized score of the built-in detectors (the paper's fusion)."""
    norms = [r.norm for r in readings.values() if r.norm is not None]
    return float(fmean(norms)) if norms else 3.0


@dataclass(frozen=True)
class CellRule:
    """When a cell is suspect for one detector (measured, see the module docstring)."""

    worst_severity: str  # at least this severe on its own
    below_median: float  # normalized score at least this far below the reference cell
    gate: Callable[[F32], bool]  # and visibly so in absolute luma (the cell's grey plane)
    rgb: bool = False  # the gate reads the cell's RGB pixels instead
    context: int = 0  # and the cells this far around it (bands can be a cell wide)
    # the reference: this percentile of the cells' normalized scores (the median: what the
    # image is like; for blur the sharp end, what is in focus, since a shallow depth of
    # field can blur most of the frame)
    reference: float = 50.0
    # a local defect only where the cells around the candidate are fine: at least this
    # share of them reads within ``ENCLOSED_MARGIN`` of the reference (0: no such test).
    # A soft area that runs on into more soft area (a shallow depth of field, sky, mist)
    # is the picture's and left to the global view; a soft patch in sharp content is not
    enclosed: float = 0.0
    # a candidate needs this many suspect cells (a single soft cell is often just a
    # smooth part of a photo: a petal, a cheek, a soft shadow)
    min_cells: int = 1
    # and its raw reading at least this bad (higher is worse), where the card's scale
    # levels off before the severity the rule means
    raw_floor: float = -math.inf


ENCLOSED_MARGIN = 1.0


CELL_RULES: dict[str, CellRule] = {
    "pixelation": CellRule("moderate", 1.0, mosaic_like),
    "blockiness": CellRule("severe", 1.5, lambda g: grid_excess(g) >= 1 / 255, raw_floor=2.0),
    "noise": CellRule("moderate", 1.0, white_noise_like),
    "sharpness": CellRule("severe", 2.0, structured, reference=90.0, enclosed=0.8, min_cells=2),
    "posterization": CellRule("moderate", 1.0, false_contours, rgb=True, context=1),
}


def _suspects(image: LoadedImage, cards: CardSet, glob: dict[str, Reading]) -> list[Candidate]:
    w, h = image.size
    grid = grid_for(w, h)
    side = min(grid.cell, max(w, h))
    xs, ys = grid.cells(side)
    names = [n for n in CELL_RULES if n in LOCAL_DETECTORS]
    norms = {n: np.full((len(ys), len(xs)), np.nan) for n in names}
    raws = {n: np.full((len(ys), len(xs)), np.nan) for n in names}
    sevs = {n: np.zeros((len(ys), len(xs)), dtype=np.int_) for n in names}
    for i, y in enumerate(ys):
        for j, x in enumerate(xs):
            got = read(region(image, (x, y, min(w, x + side), min(h, y + side))), names, cards)
            for name, r in got.items():
                norms[name][i, j] = np.nan if r.norm is None else r.norm
                raws[name][i, j] = r.raw
                sevs[name][i, j] = severity_rank(r.severity)
    gray: F32 | None = None  # made only when some cell gets as far as the gate
    hits = {n: np.zeros((len(ys), len(xs)), dtype=bool) for n in names}
    for name in names:
        rule, n = CELL_RULES[name], norms[name]
        if not np.isfinite(n).any():
            continue
        floor = max(
            severity_rank(rule.worst_severity),
            severity_rank(glob[name].severity) + 1 if name in glob else 0,
        )
        cut = float(np.nanpercentile(n, rule.reference)) - rule.below_median
        bad_enough = (sevs[name] >= floor) & (n <= cut) & (raws[name] >= rule.raw_floor)
        for i, j in np.argwhere(bad_enough).tolist():
            x, y = xs[j], ys[i]
            gray = luma(image) if gray is None else gray
            plane = image.pixels if rule.rgb else gray
            m = rule.context * side
            if rule.gate(plane[max(0, y - m) : y + side + m, max(0, x - m) : x + side + m]):
                hits[name][i, j] = True
    out: list[Candidate] = []
    for enclosed in (False, True):
        group = [n for n in names if (CELL_RULES[n].enclosed > 0) == enclosed]
        if not group:
            continue
        suspect = np.logical_or.reduce([hits[n] for n in group])
        labels, _ = heavy.ndimage.label(suspect, structure=np.ones((3, 3), dtype=bool))
        if enclosed:
            labels = _enclosed_only(labels, group, norms)
        least = max((CELL_RULES[n].min_cells for n in group), default=1)
        for k in np.unique(labels[labels > 0]).tolist():
            rows, cols = np.nonzero(labels == k)
            if len(rows) < least:
                continue
            cand = Candidate(
                cells=(
                    xs[cols.min()],
                    ys[rows.min()],
                    min(w, xs[cols.max()] + side),
                    min(h, ys[rows.max()] + side),
                ),
                n_cells=len(rows),
            )
            for ri, ci in zip(rows.tolist(), cols.tolist(), strict=True):
                px = (xs[ci], ys[ri], min(w, xs[ci] + side), min(h, ys[ri] + side))
                for name in group:
                    if not hits[name][ri, ci]:
                        continue
                    old = cand.detectors.get(name, px)
                    cand.detectors[name] = (
                        min(old[0], px[0]),
                        min(old[1], px[1]),
                        max(old[2], px[2]),
                        max(old[3], px[3]),
                    )
                    cand.worst = max(cand.worst, int(sevs[name][ri, ci]))
            out.append(cand)
    # worst first, then the larger, then top-left first: a fixed order
    out.sort(key=lambda c: (-c.worst, -c.n_cells, c.cells[1], c.cells[0]))
    return out


def _enclosed_only(
    labels: NDArray[np.int_], group: list[str], norms: dict[str, NDArray[np.float64]]
) -> NDArray[np.int_]:
    """``labels`` without the components that are not local defects for any detector of
    ``group``: a component's bounding box must span at most half the cells along each
    axis, and the ring of cells around that box be fine enough (``CellRule.enclosed``)."""
    out = labels.copy()
    rows, cols = labels.shape
    for k in range(1, int(labels.max()) + 1):
        rr, cc = np.nonzero(labels == k)
        r0, r1, c0, c1 = int(rr.min()), int(rr.max()) + 1, int(cc.min()), int(cc.max()) + 1
        ring = np.zeros(labels.shape, dtype=bool)
        ring[max(0, r0 - 1) : r1 + 1, max(0, c0 - 1) : c1 + 1] = True
        ring[r0:r1, c0:c1] = False
        keep = False
        if 2 * (r1 - r0) <= rows and 2 * (c1 - c0) <= cols and ring.any():
            for name in group:
                rule, n = CELL_RULES[name], norms[name]
                ref = float(np.nanpercentile(n, rule.reference))
                fine = np.nan_to_num(n[ring], nan=-np.inf) >= ref - ENCLOSED_MARGIN
                keep |= bool(fine.mean() >= rule.enclosed)
        if not keep:
            out[labels == k] = 0
    return out


def _grow(px: PxBox, cell: int, w: int, h: int) -> PxBox:
    """An eighth of the box per side and at least ``cell``."""
    x0, y0, x1, y1 = px
    gx = max(cell, math.ceil(0.125 * (x1 - x0)))
    gy = max(cell, math.ceil(0.125 * (y1 - y0)))
    return max(0, x0 - gx), max(0, y0 - gy), min(w, x1 + gx), min(h, y1 + gy)


def _judge(
    image: LoadedImage,
    cand: Candidate,
    crop: CropRecord,
    cards: CardSet,
    glob: dict[str, Reading],
    on_subject: bool,
) -> None:
    """Each detector that fired reads the cells it fired on; the worst reading is the verdict."""
    worst: Reading | None = None
    for name, px in sorted(cand.detectors.items()):
        r = read(region(image, px), [name], cards).get(name)
        if r is not None and (
            worst is None or severity_rank(r.severity) > severity_rank(worst.severity)
        ):
            worst = r
    if worst is None:
        crop.status, crop.reasoning = "Clean", "no detector reading on this region"
        return
    crop.type = LOCAL_DETECTORS[worst.detector]  # type: ignore[assignment]
    crop.severity = worst.severity
    g = glob.get(worst.detector)
    gs = severity_rank(g.severity) if g is not None else 0
    if worst.severity == "none" or severity_rank(worst.severity) <= gs:
        crop.status = "Clean"
        crop.reasoning = f"{worst.reason}; no worse than the whole image"
        return
    weight = SUBJECT_WEIGHT if on_subject else ELSEWHERE_WEIGHT
    crop.status = "Degraded"
    crop.reasoning = f"{worst.reason} on {'the subject' if on_subject else 'the background'}"
    crop.penalty_asked = SEVERITY_PENALTY[worst.severity] * weight


def probe_rules(
    image: LoadedImage,
    cards: CardSet | None = None,
    emit: Emit | None = None,
    *,
    turns: int = MAX_TURNS,
    base_score: float | None = None,
    pixel_budget: int | None = None,
    subject: SubjectRecord | None = None,
    readings: Mapping[str, float] | None = None,
) -> ProbeOutcome:
    """Probe ``image`` with the built-in detectors; up to ``turns - 1`` crop turns of at
    most three crops, then the final judgement (the VLM loop's budget).

    ``base_score`` defaults to the mean normalized score of the built-in detectors on the
    whole image (the paper's fusion); the pipeline passes its own fused
    score. ``readings``: raw whole-image readings of built-in detectors the caller already
    has (tool name → raw), so they are not measured twice. ``pixel_budget`` only sets the
    crops' ``sent_size`` (the rules version sends nothing). ``subject`` defaults to
    ``find_subject(image, cards)``.
    """
    if turns < 1:
        raise ValueError(f"turns must be at least 1, got {turns}")
    cards = cards or default_cards()
    emit = emit or _no_emit
    w, h = image.size
    glob = read(image, DETECTORS, cards, known=readings)
    base = float(base_score) if base_score is not None else _base(glob)
    sub = subject or find_subject(image, cards)
    queue = _suspects(image, cards, glob)
    book = CropBook(image.pixels, pixel_budget)
    cell = grid_for(w, h).cell
    outcome = ProbeOutcome(
        method="rules",
        turns=0,
        stop="no_box",
        subject=sub,
        base_score=base,
        penalty=0.0,
        final_score=base,
    )
    turn = 0
    while queue and turn < turns - 1:
        turn += 1
        rec = TurnRecord(turn=turn, action="crop", tentative_score=round(base, 3))
        taken, queue = queue[:MAX_BOXES], queue[MAX_BOXES:]
        for cand in taken:
            box = Box.of_pixels(*_grow(cand.cells, cell, w, h), w, h)
            rec.requested.append(box.as_list())
            crop, why = book.add_box(box, turn)
            if crop is None:
                rec.notes.append(f"{box.as_list()} skipped: {why}")
                continue
            record = crop.record()
            _judge(image, cand, record, cards, glob, subject_overlap(box, sub.box))
            count(record, sub)
            rec.crops.append(record.id)
            outcome.crops.append(record)
            emit("crop", record.model_dump(mode="json"))
        outcome.records.append(rec)
        emit("probe", {"method": "rules", **rec.model_dump(mode="json")})
    outcome.stop = "limit" if queue else "no_box"
    final = TurnRecord(turn=turn + 1, action="final", tentative_score=round(base, 3))
    if not outcome.crops:
        final.notes.append("no region reads worse than the whole image")
    outcome.records.append(final)
    outcome.turns = len(outcome.records)
    finish(outcome)
    outcome.summary = _summary(outcome)
    emit(
        "probe",
        {
            "method": "rules",
            **final.model_dump(mode="json"),
            "base_score": outcome.base_score,
            "penalty": outcome.penalty,
            "final_score": outcome.final_score,
        },
    )
    return outcome


def _summary(o: ProbeOutcome) -> str:
    bad = o.degraded
    if not bad:
        return f"base {o.base_score:.2f}; no local defect beyond the global view"
    parts = ", ".join(f"{c.id} {c.type} {c.severity} -{c.penalty:.2f}" for c in bad)
    return f"base {o.base_score:.2f} minus {o.penalty:.2f} ({parts}) = {o.final_score:.2f}"


def _no_emit(step: str, payload: dict[str, Any]) -> None:
    return None
