"""Fit each tool's five-parameter logistic (raw score → quality on [1, 5]) on labelled data
and write the parameters as a tool-card overlay (``--calibration FILE``).

MOS scale: tool cards normalize onto [1, 5], so MOS is mapped linearly onto [1, 5] before
the fit. The scale is the dataset layout's nominal range when known (KADID-10k 1–5, TID2013
0–9, SPAQ 0–100, ...), else ``mos_range=`` if given, else guessed from the largest value:
all within [1, 5] → 1–5; max ≤ 1 → 0–1; ≤ 5 → 0–5; ≤ 10 → 0–10; ≤ 100 → 0–100; larger →
the observed min–max. MOS must mean "higher is better" (a DMOS column shows up as a fit
running the wrong way, which the direction check below reports).

Direction check: a card's ``lower_better`` says which way the fitted curve must run. A
curve rising with the raw score of a lower-is-better tool (or falling for a higher-is-
better one) means the data disagree with the tool's direction; such a fit is marked
``suspect``, warned about, and left out of the overlay unless asked for.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from pathlib import Path

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from agentiqa_cli.bench.metrics import pearson, spearman
from agentiqa_cli.tools.cards import Logistic, ToolCard
from agentiqa_cli.tools.cards import write_overlay as write_overlay_file
from agentiqa_cli.tools.logistic import fit_logistic, logistic5

FEW_POINTS = 30  # below this the five parameters are poorly determined
WEAK_SRCC = 0.2


class CalibrationFit(BaseModel):
    model_config = ConfigDict(extra="forbid")

    tool: str
    n: int  # (raw, MOS) pairs used
    failed: int  # images the tool gave no score for
    params: list[float] | None = None
    srcc: float | None = None  # fitted quality vs MOS (on the 1–5 scale)
    plcc: float | None = None
    rmse: float | None = None
    raw_srcc: float | None = None  # raw score vs MOS, signed: < 0 for lower-is-better tools
    increasing: bool | None = None  # does the fitted curve rise with the raw score?
    mos_range: tuple[float, float]
    suspect: bool = False
    warnings: list[str] = Field(default_factory=list)
    error: str | None = None


def mos_scale(
    mos: Sequence[float], mos_range: tuple[float, float] | None = None
) -> tuple[float, float]:
    """The MOS scale to map onto [1, 5] (see the module docstring)."""
    if mos_range is not None:
        lo, hi = float(mos_range[0]), float(mos_range[1])
        if not hi > lo:
            raise ValueError(f"MOS range must be low < high, got {mos_range}")
        return lo, hi
    a = np.asarray(mos, dtype=float)
    lo, hi = float(a.min()), float(a.max())
    if lo >= 1.0 and hi <= 5.0:
        return 1.0, 5.0
    if lo >= 0.0:
        for top in (1.0, 5.0, 10.0, 100.0):
            if hi <= top:
                return 0.0, top
    return (lo, hi) if hi > lo else (lo, lo + 1.0)


def rescale_mos(mos: Sequence[float], scale: tuple[float, float]) -> np.ndarray:
    lo, hi = scale
    return 1.0 + 4.0 * (np.asarray(mos, dtype=float) - lo) / (hi - lo)


def fit_tool(
    card: ToolCard,
    raw: Sequence[float | None],
    mos: Sequence[float],
    mos_range: tuple[float, float] | None = None,
) -> CalibrationFit:
    """Fit ``card``'s logistic on (raw, MOS) pairs; MOS on its own scale (rescaled here)."""
    scale = mos_scale(mos, mos_range)
    r = np.array([np.nan if v is None else float(v) for v in raw], dtype=float)
    m = rescale_mos(mos, scale)
    ok = np.isfinite(r) & np.isfinite(m)
    x, y = r[ok], m[ok]
    fit = CalibrationFit(tool=card.name, n=int(x.size), failed=int((~ok).sum()), mos_range=scale)
    fit.raw_srcc = spearman(x, y)
    try:
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore")
            params, _ = fit_logistic(x, y)
    except ValueError as e:
        fit.error = str(e)
        return fit
    fitted = logistic5(x, *params)
    if not np.all(np.isfinite(fitted)) or np.ptp(fitted) == 0:
        fit.error = "the fitted curve is flat or not finite"
        return fit
    fit.params = params
    fit.srcc, fit.plcc = spearman(fitted, y), pearson(fitted, y)
    fit.rmse = float(np.sqrt(np.mean((fitted - y) ** 2)))
    p05, p95 = np.percentile(x, [5, 95])
    fit.increasing = bool(logistic5(p95, *params) > logistic5(p05, *params))
    if fit.increasing == card.lower_better:
        fit.suspect = True
        way = "rises" if fit.increasing else "falls"
        fit.warnings.append(
            f"fitted curve {way} with the raw score but the card says lower_better="
            f"{card.lower_better}: the data disagree with the tool's direction (MOS given as "
            f"DMOS? broken tool?); not written to the overlay"
        )
    if fit.raw_srcc is not None and abs(fit.raw_srcc) < WEAK_SRCC:
        fit.warnings.append(f"raw score barely correlates with MOS (SRCC {fit.raw_srcc:+.2f})")
    if fit.n < FEW_POINTS:
        fit.warnings.append(f"only {fit.n} points: the five parameters are poorly determined")
    return fit


def _source_text(fit: CalibrationFit, source: str) -> str:
    lo, hi = fit.mos_range
    stats = ", ".join(
        f"{k} {v:.3f}"
        for k, v in (("SRCC", fit.srcc), ("PLCC", fit.plcc), ("RMSE", fit.rmse))
        if v is not None
    )
    return f"{source}; n={fit.n}; MOS {lo:g}-{hi:g} mapped to 1-5; {stats}"


def write_overlay(
    fits: Sequence[CalibrationFit], path: Path, source: str, include_suspect: bool = False
) -> int:
    """Write every usable fit to a calibration overlay (``cards.write_overlay``); returns
    how many tools were written (0 = none usable)."""
    tools = {
        f.tool: Logistic(params=f.params, source=_source_text(f, source))
        for f in sorted(fits, key=lambda f: f.tool)
        if f.params is not None and (include_suspect or not f.suspect)
    }
    header = (
        "agentiqa calibration overlay: five-parameter logistic (raw score -> quality 1-5)\n"
        "fitted by `agentiqa calibrate`; apply with --calibration FILE"
    )
    if tools:  # none usable: the previous overlay, if any, stays as it was
        write_overlay_file(Path(path), tools, header)
    return len(tools)
