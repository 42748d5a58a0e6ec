"""The rules checks: honest signal methods over an H×W×3 float32 array in [0, 1].

Each check measures one signal and reports an ``Imperfection`` with the operations that
would undo it, or nothing. Where no signal method exists (rotation, flip and watermark
text need to recognise content), the rules answer "pass" and a VLM's ``fix`` role is
needed; ``NEEDS_VLM`` lists them.

- borders: rows/columns of one constant colour at opposite edges (letterbox, pillarbox),
  or a near-black/white band at any edge → crop to the content;
- expand: a 2×2 collage's seams: an abrupt step along the whole of x = W/2 *and*
  y = H/2 → crop a quadrant (which one is the query's business: the rules keep the top-left);
- overlay: a pasted or blended rectangle anywhere: lines with long runs of step edges
  are candidate sides, and a box whose inner sides all step (and whose lines stop at its
  corners), each at one pixel (a real object's edge is spread), is one → fill it white;
- recapture: a screen's dark bezel (a near-black frame around a brighter inside), else
  screen moiré (an isolated peak in the luma spectrum away from the axes, whose energy
  map gives the box) → crop to the screen;
- brightness: the brightest 0.1% far below white (dark), or a large clipped share with a
  bright median (bright) → lum; both survive a JPEG save;
- blur: the steepness of the strongest edges for their contrast → deblur;
- noise: the built-in noise detector (``tools/detectors.py``) beyond clean photos → denoise;
- CleanVision's per-image properties (no fix): low information (luma entropy), odd
  aspect ratio, odd (tiny) size, grayscale.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np
from numpy.typing import NDArray

from agentiqa_cli import heavy
from agentiqa_cli.imaging.load import LoadedImage
from agentiqa_cli.imperfect.records import (
    FIXABLE,
    Crop,
    Deblur,
    Denoise,
    Fill,
    Imperfection,
    Lum,
)
from agentiqa_cli.records import Box
from agentiqa_cli.tools.detectors import noise as noise_sigma

Array = NDArray[np.float32]
NEEDS_VLM: tuple[str, ...] = ("rotation", "flip", "watermark")
FIXABLE_TYPES = FIXABLE

# thresholds (measured on the bundled photos and Debian's wallpapers; docs/guides.md)
BORDER_STD, BORDER_TOL, BORDER_MIN = 0.012, 0.02, 0.015  # flat row std, colour drift, share
SEAM_RATIO, SEAM_SHARE = 4.0, 0.35  # step / nearby steps; share of the seam that steps
SEAM_UNIQUE = 0.6  # no other full line of a collage steps on this share (a grid does)
# (overlay constants: tuned on the fit set's 46 images, both generators at 384 px)
OVERLAY_SHARE = 0.7  # mean share of the inner sides of a box with a step
OVERLAY_CORNER_SHARE = 0.85  # a box in a corner has two sides: half the evidence
OVERLAY_MIN_SIDE = 0.45  # and on every inner side at least this share
OVERLAY_BEYOND = 0.5  # at most this share on the same lines beyond the box
OVERLAY_RATIO, OVERLAY_FLOOR = 2.5, 0.02  # a step edge: wide step / nearby + floor
OVERLAY_RUN = 0.05  # a candidate side: a run of step edges this share of the image long
OVERLAY_LINES = 24  # candidate sides per axis (the longest runs)
OVERLAY_THROUGH = 0.84  # a line stepping on this share of its length is texture
OVERLAY_MAX_SIDE = 0.75  # an overlay covers at most this share of a side
OVERLAY_CONTENT = 0.06  # luma std inside: a pasted picture, not a flat panel
OVERLAY_MIN_BOX = 0.095  # and at least this share of each side (small panels are objects)
# a pasted box's sides spill at most this into their neighbours (``box_spill``; fit set:
# true boxes 0.18 at most, the real rectangles the step edges take for overlays 0.40+)
OVERLAY_SPILL = 0.25
OVERLAY_SPILL_STEP = 0.02  # a side whose luma steps less (RMS) says nothing either way
DARK_TOP = 0.55  # the brightest 0.1% below this: under-exposed
# over-exposed: this share of the pixels clipped (a channel at BRIGHT_LEVEL or above) and
# the median luma at least BRIGHT_MEDIAN (fit set: clean photos clip up to 30%)
BRIGHT_LEVEL, BRIGHT_CLIP, BRIGHT_MEDIAN = 0.97, 0.35, 0.5
BRIGHT_FACTOR = 0.6  # V-QPP-Bench's over-exposures (1.5, 1.75) are undone by 0.67 / 0.57
EDGE_MIN = 0.32  # edge steepness below clean photos' (0.39+ measured)
NOISE_MAX = 0.03  # the noise detector's sigma beyond clean photos'
MOIRE_PEAK = 400.0
BEZEL_DARK = 0.045  # a screen's frame is darker than a dim room  # spectral peak / median magnitude in its band
LOW_ENTROPY_BITS, ODD_ASPECT, TINY_SIDE = 2.0, 0.4, 64

_LUMA = np.array([0.299, 0.587, 0.114], dtype=np.float32)


def luma(x: Array) -> Array:
    return np.asarray(x @ _LUMA, dtype=np.float32)


# -- borders -------------------------------------------------------------------------------
def _flat_run(x: Array) -> int:
    """How many leading rows of ``x`` (rows × cols × 3) are one constant colour, the first
    row's."""
    first = x[0].mean(axis=0)
    n = 0
    for row in x:
        if (
            row.std(axis=0).max() > BORDER_STD
            or np.abs(row.mean(axis=0) - first).max() > BORDER_TOL
        ):
            break
        n += 1
    return n


def borders(x: Array) -> Imperfection | None:
    h, w = x.shape[:2]
    runs = {
        "top": _flat_run(x),
        "bottom": _flat_run(x[::-1]),
        "left": _flat_run(x.transpose(1, 0, 2)),
        "right": _flat_run(x.transpose(1, 0, 2)[::-1]),
    }
    side = {"top": h, "bottom": h, "left": w, "right": w}
    band = {
        k: v if v >= max(2, BORDER_MIN * side[k]) and v < side[k] // 2 else 0
        for k, v in runs.items()
    }
    colour = {
        "top": x[0].mean(axis=0), "bottom": x[-1].mean(axis=0),
        "left": x[:, 0].mean(axis=0), "right": x[:, -1].mean(axis=0),
    }  # fmt: skip

    def extreme(k: str) -> bool:
        return bool(colour[k].max() < 0.06 or colour[k].min() > 0.94)

    keep = dict.fromkeys(band, 0)
    for a, b in (("top", "bottom"), ("left", "right")):
        symmetric = abs(band[a] - band[b]) <= 2 + 0.01 * side[a]
        if band[a] and band[b] and symmetric and np.abs(colour[a] - colour[b]).max() <= BORDER_TOL:
            keep[a], keep[b] = band[a], band[b]  # letterbox / pillarbox
    for k in band:
        if band[k] and extreme(k):
            keep[k] = band[k]
    if not any(keep.values()):
        return None
    left, top, right, bottom = keep["left"], keep["top"], w - keep["right"], h - keep["bottom"]
    box = Box.of_pixels(left, top, right, bottom, w, h)
    sides = ", ".join(f"{k} {v}px" for k, v in keep.items() if v)
    return Imperfection(type="borders", box=box, reason=f"constant-colour bands: {sides}",
                        operations=[Crop(bbox=box)])  # fmt: skip


# -- seams and step edges ------------------------------------------------------------------
def _step_share(a: Array, b: Array, near: list[tuple[Array, Array]]) -> float:
    """The share of positions along a line where the step between ``a`` and ``b`` (two
    neighbouring pixel lines) is far above the steps between lines nearby."""
    step = np.abs(a - b).max(axis=-1)
    base = np.median(np.stack([np.abs(p - q).max(axis=-1) for p, q in near]), axis=0)
    return float(np.mean(step > SEAM_RATIO * base + 0.03))


def _col_share(x: Array, c: int, rows: slice) -> float:
    """Step share along the vertical line between columns c-1 and c (best of c±1)."""
    w = x.shape[1]
    best = 0.0
    for cc in (c - 1, c, c + 1):
        if not 4 <= cc <= w - 4:
            continue
        near = [(x[rows, cc + k], x[rows, cc + k - 1]) for k in (-3, -2, 2, 3)]
        best = max(best, _step_share(x[rows, cc], x[rows, cc - 1], near))
    return best


def _row_share(x: Array, r: int, cols: slice) -> float:
    return _col_share(x.transpose(1, 0, 2), r, cols)


def column_shares(x: Array) -> NDArray[np.float64]:
    """Per column c (3 ≤ c < W-3), the step share of the line between c-1 and c over the
    full height (``_step_share`` for every column at once)."""
    step = np.abs(np.diff(x, axis=1)).max(axis=-1)  # step[:, c-1]: between c-1 and c
    n = step.shape[1]
    out = np.zeros(x.shape[1], dtype=np.float64)
    if n < 8:
        return out
    idx = np.arange(3, n - 3)
    base = np.median(np.stack([step[:, idx + k] for k in (-3, -2, 2, 3)]), axis=0)
    out[idx + 1] = np.mean(step[:, idx] > SEAM_RATIO * base + 0.03, axis=0)
    return out


def _unique_seam(shares: NDArray[np.float64], at: int) -> bool:
    """No other line of the image steps like the seam (a grid pattern is not a collage)."""
    others = np.delete(shares, np.arange(max(0, at - 2), min(shares.size, at + 3)))
    return bool(others.size == 0 or others.max() < SEAM_UNIQUE)


def expand(x: Array) -> Imperfection | None:
    h, w = x.shape[:2]
    if h < 32 or w < 32:
        return None
    if not _unique_seam(column_shares(x), w // 2) or not _unique_seam(
        column_shares(x.transpose(1, 0, 2)), h // 2
    ):
        return None
    halves = [
        _col_share(x, w // 2, slice(0, h // 2)), _col_share(x, w // 2, slice(h // 2, h)),
        _row_share(x, h // 2, slice(0, w // 2)), _row_share(x, h // 2, slice(w // 2, w)),
    ]  # fmt: skip
    if min(halves) < SEAM_SHARE:
        return None
    box = Box(x1=0.0, y1=0.0, x2=0.5, y2=0.5)
    return Imperfection(
        type="expand", confidence=min(1.0, min(halves)), box=box,
        reason=f"2×2 collage: seams at W/2 and H/2 step on {min(halves):.0%}+ of their length",
        operations=[Crop(bbox=box)],
    )  # fmt: skip


def step_mask(x: Array) -> NDArray[np.bool_]:
    """Per pixel, whether the line between column c-1 and c is a step edge: the mean of
    the two columns after it minus the mean of the two before it (a step a JPEG save or a
    resize spreads over a few pixels still counts) far above the same difference on the
    lines 3-4 px away. Shape H × W; the first and last columns are False."""
    h, w = x.shape[:2]
    out = np.zeros((h, w), dtype=bool)
    if w < 16:
        return out
    pair = x[:, :-1] + x[:, 1:]  # pair[:, c]: columns c and c+1
    # wide[:, c]: the line between c-1 and c, for 2 <= c <= w-2
    wide = np.zeros((h, w), dtype=np.float32)
    wide[:, 2:-1] = np.abs(pair[:, 2:] - pair[:, :-2]).max(axis=-1) / 2
    idx = np.arange(6, w - 5)
    base = np.median(np.stack([wide[:, idx + k] for k in (-4, -3, 3, 4)]), axis=0)
    out[:, idx] = wide[:, idx] > OVERLAY_RATIO * base + OVERLAY_FLOOR
    return out


def _longest_runs(mask: NDArray[np.bool_], gap: int) -> NDArray[np.int_]:
    """Per column of ``mask``, its longest run of True, gaps up to ``gap`` closed."""
    m = heavy.ndimage.binary_closing(mask, structure=np.ones((2 * gap + 1, 1), dtype=bool))
    m |= mask  # closing never removes, but keep the edges' pixels
    best = np.zeros(m.shape[1], dtype=np.int_)
    run = np.zeros(m.shape[1], dtype=np.int_)
    for row in m:
        run = np.where(row, run + 1, 0)
        np.maximum(best, run, out=best)
    return best


def _candidate_lines(mask: NDArray[np.bool_], length: int, n: int) -> list[int]:
    """Up to ``n`` columns whose longest step run (3-px gaps closed) is at least
    ``length``, the longest first, one per 3 columns. A column that steps along nearly
    all of its length is texture (wood grain, a fence): no box side could stop at the
    box's corners on it (``OVERLAY_BEYOND``), so it is not a candidate."""
    runs = _longest_runs(mask, 3)
    through = mask.mean(axis=0) > OVERLAY_THROUGH
    order = np.argsort(-runs, kind="stable")
    out: list[int] = []
    for c in order.tolist():
        if runs[c] < length or len(out) >= n:
            break
        if not through[c] and all(abs(c - o) > 2 for o in out):
            out.append(int(c))
    return out


def _stretch_shares(
    mask: NDArray[np.bool_], lines: list[int], ends: list[int]
) -> NDArray[np.float64]:
    """S[i, a, b]: the step share of column ``lines[i]`` (best of its neighbours ±1)
    between rows ``ends[a]`` and ``ends[b]`` (a < b; 0 elsewhere)."""
    h, w = mask.shape
    cum = np.zeros((h + 1, w), dtype=np.int32)
    np.cumsum(mask, axis=0, out=cum[1:])
    e = np.asarray(ends)
    out = np.zeros((len(lines), len(ends), len(ends)))
    length = np.maximum(1, e[None, :] - e[:, None]).astype(np.float64)
    for i, c in enumerate(lines):
        if not 0 < c < w:
            continue
        at = cum[e][:, max(0, c - 1) : min(w, c + 2)]  # ends × 3
        counts = (at[None, :, :] - at[:, None, :]).max(axis=-1)
        out[i] = np.where(e[None, :] > e[:, None], counts / length, 0.0)
    return out


def overlay_boxes(x: Array, spill: bool = True) -> list[tuple[float, tuple[int, int, int, int]]]:
    """The pasted or blended rectangles anywhere, best first, as (score, (left, top,
    right, bottom)): the columns and rows with a long run of step edges are the candidate
    sides (with the image's edges), and every box they make is scored at once: each inner
    side (one at least along each axis) steps along the box on at least
    ``OVERLAY_MIN_SIDE`` of it, on ``OVERLAY_SHARE`` on average, and its line does not go
    on stepping beyond the box's corners (a grid, a window frame, a horizon would). Of the
    best 32, those kept have varied content and, unless ``spill`` is False, sides that
    step at one pixel (``box_spill`` at most ``OVERLAY_SPILL``; a box whose sides change
    only in hue is kept): a real rectangle in the photo (a sheet of paper, a window pane)
    has every step edge a pasted one has, but spread."""
    h, w = x.shape[:2]
    if min(h, w) < 32:
        return []
    vmask, hmask = step_mask(x), step_mask(x.transpose(1, 0, 2))
    cols = _candidate_lines(vmask, max(8, round(OVERLAY_RUN * h)), OVERLAY_LINES)
    rows = _candidate_lines(hmask, max(8, round(OVERLAY_RUN * w)), OVERLAY_LINES)
    xs, ys = sorted({0, w, *cols}), sorted({0, h, *rows})
    v = _stretch_shares(vmask, xs, ys)  # v[i, j, k]: column xs[i] from ys[j] to ys[k]
    hz = _stretch_shares(hmask, ys, xs)  # hz[j, i, l]: row ys[j] from xs[i] to xs[l]
    ax, ay = np.asarray(xs), np.asarray(ys)
    vin, hin = (ax > 0) & (ax < w), (ay > 0) & (ay < h)
    # what each inner side's line does beyond the box (0 where the rest is under 8 px)
    v_before = np.where(ay[None, :] >= 8, v[:, 0, :], 0.0)  # [i, j]: above ys[j]
    v_after = np.where(h - ay[None, :] >= 8, v[:, :, -1], 0.0)  # [i, k]: below ys[k]
    h_before = np.where(ax[None, :] >= 8, hz[:, 0, :], 0.0)  # [j, i]: left of xs[i]
    h_after = np.where(w - ax[None, :] >= 8, hz[:, :, -1], 0.0)  # [j, l]: right of xs[l]
    # 4-D over (left i, right l, top j, bottom k)
    il, ir, jt, jb = np.ix_(range(len(xs)), range(len(xs)), range(len(ys)), range(len(ys)))
    sides = [  # (share, inner?, beyond)
        (v[il, jt, jb], vin[il], np.maximum(v_before[il, jt], v_after[il, jb])),
        (v[ir, jt, jb], vin[ir], np.maximum(v_before[ir, jt], v_after[ir, jb])),
        (hz[jt, il, ir], hin[jt], np.maximum(h_before[jt, il], h_after[jt, ir])),
        (hz[jb, il, ir], hin[jb], np.maximum(h_before[jb, il], h_after[jb, ir])),
    ]
    shape = (len(xs), len(xs), len(ys), len(ys))
    share = np.stack(
        [np.broadcast_to(np.where(inner, sh, np.nan), shape) for sh, inner, _ in sides]
    )
    past = np.stack([np.broadcast_to(np.where(inner, b, 0.0), shape) for _, inner, b in sides])
    n_inner = np.isfinite(share).sum(axis=0)
    total = np.nansum(share, axis=0)
    weakest = np.fmin.reduce(np.nan_to_num(share, nan=np.inf), axis=0)
    beyond = past.max(axis=0)
    bw, bh = ax[ir] - ax[il], ay[jb] - ay[jt]
    score = total / np.maximum(1, n_inner)
    ok = (
        (vin[il] | vin[ir]) & (hin[jt] | hin[jb])
        & (bw >= max(8.0, OVERLAY_MIN_BOX * w)) & (bw <= OVERLAY_MAX_SIDE * w)
        & (bh >= max(8.0, OVERLAY_MIN_BOX * h)) & (bh <= OVERLAY_MAX_SIDE * h)
        & (weakest >= OVERLAY_MIN_SIDE) & (beyond <= OVERLAY_BEYOND)
        & (score >= np.where(n_inner <= 2, OVERLAY_CORNER_SHARE, OVERLAY_SHARE))
    )  # fmt: skip
    g = luma(x)
    out: list[tuple[float, tuple[int, int, int, int]]] = []
    for flat in np.argsort(-np.where(ok, score, -1.0), axis=None)[: int(ok.sum())][:32]:
        bi, bl, bj, bk = np.unravel_index(int(flat), ok.shape)
        px = (xs[bi], ys[bj], xs[bl], ys[bk])
        # a distractor is a picture: tones vary inside (a sheet of paper, a door, a
        # window pane framed in a photo are flat)
        if float(g[px[1] + 2 : px[3] - 2, px[0] + 2 : px[2] - 2].std()) < OVERLAY_CONTENT:
            continue
        # and it was pasted: its sides step at one pixel (a real object's edge is spread)
        pooled = box_spill(g, px) if spill else None
        if pooled is None or pooled <= OVERLAY_SPILL:
            out.append((float(score[bi, bl, bj, bk]), px))
    return out


def side_moments(g: Array, c: int, lo: int, hi: int) -> tuple[float, float] | None:
    """The luma step on the vertical line near ``c`` (between columns c-1 and c; the
    strongest of c-2..c+2) over rows ``lo + 2`` to ``hi - 2``, against the steps on
    either side of it: (Σ v·(a + b), Σ v²), whose ratio is how much of the step spills
    into its neighbours (``side_spill``). None when the line barely steps in luma (a
    change of hue only) or is too short."""
    w = g.shape[1]
    rows = slice(lo + 2, hi - 2)
    lines = [cc for cc in range(c - 2, c + 3) if 3 <= cc <= w - 2]
    if not lines or hi - lo < 8:
        return None
    steps = {cc: g[rows, cc] - g[rows, cc - 1] for cc in lines}
    cc = max(lines, key=lambda k: float(np.square(steps[k]).sum()))
    v = steps[cc]
    power = float(np.square(v).sum())
    if power < OVERLAY_SPILL_STEP**2 * v.size:
        return None
    beside = (g[rows, cc - 1] - g[rows, cc - 2]) + (g[rows, cc + 1] - g[rows, cc])
    return float((v * beside).sum()), power


def side_spill(g: Array, c: int, lo: int, hi: int) -> float | None:
    """``side_moments`` as a ratio: the regression of the two neighbouring steps on the
    step. About 0 where two pictures meet at one pixel, 1 for a step spread evenly over
    two pixels."""
    m = side_moments(g, c, lo, hi)
    return None if m is None else m[0] / m[1]


def box_spill(g: Array, px: tuple[int, int, int, int]) -> float | None:
    """How much the steps along the inner sides of the box ``px`` (left, top, right,
    bottom) spill into the pixels beside them, in the luma ``g``: ``side_moments`` pooled
    over the sides (a faint side, whose ratio is mostly its neighbours' texture, weighs
    little). A patch pasted or blended from another picture changes at one pixel, so the
    steps beside its sides belong to the two pictures' own content: about 0 (a little
    below from regression to the mean), and a JPEG save's ringing adds little. A real
    object's edge is spread over two pixels or more by the lens, the sensor and any
    resize. Luma, because a JPEG save halves chroma's resolution and spreads every colour
    step. None when no side steps in luma."""
    left, top, right, bottom = px
    h, w = g.shape
    sides = [
        side_moments(g, left, top, bottom) if left > 0 else None,
        side_moments(g, right, top, bottom) if right < w else None,
        side_moments(g.T, top, left, right) if top > 0 else None,
        side_moments(g.T, bottom, left, right) if bottom < h else None,
    ]
    moments = [m for m in sides if m is not None]
    if not moments:
        return None
    return sum(m[0] for m in moments) / sum(m[1] for m in moments)


def overlay(x: Array) -> Imperfection | None:
    """A pasted or blended rectangle anywhere: the best of ``overlay_boxes``."""
    h, w = x.shape[:2]
    boxes = overlay_boxes(x)
    found = boxes[0] if boxes else None
    if found is None:
        return None
    best = found[0]
    box = Box.of_pixels(*found[1], w, h)
    return Imperfection(
        type="overlay", confidence=min(1.0, best), box=box,
        reason=f"pasted rectangle: step edges on {best:.0%} of its inner sides",
        operations=[Fill(bbox=box)],
    )  # fmt: skip


# -- screen: bezel, moiré ------------------------------------------------------------------
def bezel(x: Array) -> tuple[int, int, int, int] | None:
    """A screen's dark frame: a near-black connected region whose bounding box is dark
    along all four sides (a frame) but not inside; returns the screen inside it (pixels)."""
    h, w = x.shape[:2]
    dark = luma(x) < BEZEL_DARK
    lab, n = heavy.ndimage.label(dark)
    if n == 0:
        return None
    sizes = heavy.ndimage.sum(dark, lab, index=np.arange(1, n + 1))
    objects = heavy.ndimage.find_objects(lab)
    for k in np.argsort(sizes)[::-1][:3]:
        if sizes[k] < 0.01 * h * w:
            break
        rows, cols = objects[k]
        top, bottom, left, right = rows.start, rows.stop, cols.start, cols.stop
        bh, bw = bottom - top, right - left
        if bh < 0.2 * h or bw < 0.2 * w or (bh > 0.97 * h and bw > 0.97 * w):
            continue
        frame = lab[top:bottom, left:right] == k + 1
        t = max(2, min(bh, bw) // 20)
        sides = (frame[:t].mean(), frame[-t:].mean(), frame[:, :t].mean(), frame[:, -t:].mean())
        inner = frame[bh // 4 : 3 * bh // 4, bw // 4 : 3 * bw // 4].mean()
        if min(sides) < 0.7 or inner > 0.5:
            continue
        mid_r, mid_c = frame[bh // 2], frame[:, bw // 2]  # inward to the first screen pixel
        l2, r2 = int(np.argmin(mid_r)), bw - int(np.argmin(mid_r[::-1]))
        t2, b2 = int(np.argmin(mid_c)), bh - int(np.argmin(mid_c[::-1]))
        if r2 - l2 < 8 or b2 - t2 < 8:
            continue
        return left + l2, top + t2, left + r2, top + b2
    return None


# -- screen moiré --------------------------------------------------------------------------
def recapture(x: Array) -> Imperfection | None:
    h, w = x.shape[:2]
    screen = bezel(x)
    if screen is not None:
        box = Box.of_pixels(*screen, w, h)
        return Imperfection(type="recapture", box=box, operations=[Crop(bbox=box)],
                            reason="a screen's dark bezel frames the picture")  # fmt: skip
    return moire(x)


def moire(x: Array) -> Imperfection | None:
    g = luma(x)
    h, w = g.shape
    if min(h, w) < 64:
        return None
    g = g - g.mean()
    win = np.outer(np.hanning(h), np.hanning(w)).astype(np.float32)
    mag = np.abs(np.fft.fftshift(np.fft.fft2(g * win)))
    fy = (np.arange(h) - h // 2)[:, None] / h
    fx = (np.arange(w) - w // 2)[None, :] / w
    r = np.hypot(fx, fy)
    band = (r > 0.2) & (np.abs(fx) > 0.02) & (np.abs(fy) > 0.02)  # fine, off-axis
    if not band.any():
        return None
    vals = mag[band]
    ratio = float(vals.max() / (np.median(vals) + 1e-9))
    if ratio < MOIRE_PEAK:
        return None
    iy, ix = np.unravel_index(np.argmax(np.where(band, mag, 0)), mag.shape)
    # where the peak frequency lives: demodulate and smooth its local amplitude
    yy, xx = np.mgrid[0:h, 0:w]
    carrier = np.exp(-2j * np.pi * (fx[0, ix] * xx + fy[iy, 0] * yy))
    amp = np.abs(
        heavy.ndimage.uniform_filter((g * carrier).real, 9)
        + 1j * heavy.ndimage.uniform_filter((g * carrier).imag, 9)
    )
    mask = amp > 0.5 * np.percentile(amp, 99)
    ys, xs = np.nonzero(mask)
    if ys.size < 0.01 * h * w:
        return None
    top, bottom = np.percentile(ys, [1, 99])
    left, right = np.percentile(xs, [1, 99])
    box = Box.of_pixels(int(left), int(top), int(right) + 1, int(bottom) + 1, w, h)
    return Imperfection(
        type="recapture", confidence=min(1.0, ratio / (4 * MOIRE_PEAK)), box=box,
        reason=f"screen moiré: spectral peak {ratio:.0f}× the band's median",
        operations=[Crop(bbox=box)],
    )  # fmt: skip


# -- exposure, blur, noise -----------------------------------------------------------------
def brightness(x: Array) -> Imperfection | None:
    """Exposure as the image shows it, through a JPEG save: dark when even the brightest
    0.1% stays far below white (a clean photo's highlights reach it); bright when a large
    share of the pixels is clipped (a channel at its top, ``BRIGHT_LEVEL`` leaving room for
    a JPEG save's ringing) and the median tone is high. Not read: the empty 8-bit levels a
    digital gain leaves between populated ones, which any lossy save fills and a real
    over-exposure never has."""
    g = luma(x)
    top = float(np.percentile(x.max(axis=-1), 99.9))  # a clean photo's highlights reach white
    if top < DARK_TOP:
        factor = float(np.clip(0.95 / max(top, 1e-3), 1.0, 4.0))
        return Imperfection(type="brightness", reason=f"dark: brightest 0.1% at {top:.2f}",
                            operations=[Lum(factor=factor)])  # fmt: skip
    clipped = float(np.mean(x.max(axis=-1) >= BRIGHT_LEVEL))
    median = float(np.median(g))
    if clipped >= BRIGHT_CLIP and median >= BRIGHT_MEDIAN:
        return Imperfection(
            type="brightness",
            reason=f"bright: {clipped:.0%} clipped, median luma {median:.2f}",
            operations=[Lum(factor=BRIGHT_FACTOR)],
        )
    return None


def _loaded(x: Array) -> object:
    return LoadedImage(path=Path("<array>"), pixels=x, sha256="")


def edge_steepness(x: Array) -> float | None:
    """How steep the strongest edges are for their contrast: the median, over the 1% of
    high-contrast pixels (a 9×9 range ≥ 0.08) with the largest one-pixel step, of step /
    range. About 0.4-0.7 for sharp photos; a Gaussian blur of sigma s spreads an edge so
    the ratio falls near 0.4/s (0.23 at OpenCV's k = 9). None without enough edges."""
    g = luma(x)
    step = np.zeros_like(g)
    step[:, 1:] = np.abs(np.diff(g, axis=1))
    step[1:] = np.maximum(step[1:], np.abs(np.diff(g, axis=0)))
    spread = heavy.ndimage.maximum_filter(g, 9) - heavy.ndimage.minimum_filter(g, 9)
    edges = spread >= 0.08
    if edges.sum() < 50:
        return None
    v, r = step[edges], spread[edges]
    top = v >= np.percentile(v, 99)
    return float(np.median(v[top] / r[top]))


def blur(x: Array) -> Imperfection | None:
    """Called only on images with information (entropy ≥ 2 bits): one without a single
    contrasted edge is soft all over (a fog photo would be too; measured: no clean one)."""
    s = edge_steepness(x)
    if s is None:
        return Imperfection(type="blur", reason="no edge with contrast anywhere",
                            operations=[Deblur()])  # fmt: skip
    if s >= EDGE_MIN:
        return None
    return Imperfection(type="blur", reason=f"edge steepness {s:.2f} (< {EDGE_MIN})",
                        operations=[Deblur()])  # fmt: skip


def noise(x: Array) -> Imperfection | None:
    s = noise_sigma(_loaded(x))  # type: ignore[arg-type]
    if s <= NOISE_MAX:
        return None
    return Imperfection(type="noise", reason=f"noise sigma {s:.3f} (> {NOISE_MAX})",
                        operations=[Denoise()])  # fmt: skip


# -- CleanVision's per-image properties ----------------------------------------------------
def properties(x: Array, sample: Array | None = None) -> list[Imperfection]:
    """``sample``: the pixels to measure (default all of ``x``); sizes come from ``x``."""
    h, w = x.shape[:2]
    x = x if sample is None else sample
    out = []
    hist = np.bincount((luma(x) * 255 + 0.5).astype(np.int64).ravel(), minlength=256)
    p = hist[hist > 0] / hist.sum()
    bits = float(-(p * np.log2(p)).sum())
    if bits < LOW_ENTROPY_BITS:
        out.append(Imperfection(type="low_information", reason=f"luma entropy {bits:.2f} bits"))
    if min(w, h) / max(w, h) < ODD_ASPECT:
        out.append(Imperfection(type="odd_aspect_ratio", reason=f"{w}×{h}"))
    if min(w, h) < TINY_SIDE:
        out.append(Imperfection(type="odd_size", reason=f"{w}×{h} (< {TINY_SIDE} px a side)"))
    spread = float(np.abs(x - x.mean(axis=-1, keepdims=True)).max())
    if spread < 2 / 255:
        out.append(Imperfection(type="grayscale", reason="R = G = B everywhere"))
    return out


SAMPLE_PIXELS = 1 << 20  # histograms and percentiles read about a megapixel
CHECK_SIDE = 1024  # layout and blur are judged on an area-averaged copy at most this big


def shrink(x: Array, side: int = CHECK_SIDE) -> Array:
    """An integer-factor area average with the long side at most ``side`` (boxes are
    fractions of the image, so they hold for the original)."""
    h, w = x.shape[:2]
    f = -(-max(h, w) // side)
    if f <= 1:
        return x
    hh, ww = h // f, w // f
    return np.asarray(
        x[: hh * f, : ww * f].reshape(hh, f, ww, f, 3).mean(axis=(1, 3)), dtype=np.float32
    )


# layout first: a collage's tiles or a screen's room would confuse the pixel checks; the
# borders and the noise read the full image (the exposure a megapixel sample), the rest a copy
LAYOUT: tuple[Callable[[Array], Imperfection | None], ...] = (expand, recapture, overlay)


def check(x: Array) -> list[Imperfection]:
    """Every rules check on one image: at most one layout finding (the first that fires),
    the pixel-level ones, then CleanVision's properties."""
    small = shrink(x)
    f = max(1, round((x.shape[0] * x.shape[1] / SAMPLE_PIXELS) ** 0.5))
    sample = x[::f, ::f]  # every f-th pixel: the 8-bit levels stay as they are
    found: list[Imperfection] = []
    for i in range(len(LAYOUT) + 1):  # the first that fires ends the layout checks
        hit = borders(x) if i == 0 else LAYOUT[i - 1](small)
        if hit is not None:
            found.append(hit)
            break
    props = properties(x, sample)
    if not any(p.type == "low_information" for p in props):  # nothing to judge on a flat image
        for hit in (brightness(sample), blur(small), noise(x)):
            if hit is not None:
                found.append(hit)
    return found + props
