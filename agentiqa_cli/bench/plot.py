"""Scatter plots of prediction vs MOS, one panel per method, with the fitted mapping.

matplotlib (the [plot] extra) is imported only here, and this module only when a plot is
asked for (`eval-bench mos`, after checking the extra is installed); the figure is drawn
on an Agg canvas directly, so no global backend is switched and no window can open.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from agentiqa_cli.bench.metrics import apply_fit
from agentiqa_cli.bench.mos import MosReport
from agentiqa_cli.io.guard import whole_file


def _fmt(v: float | None) -> str:
    return "n/a" if v is None else f"{v:.3f}"


def plot_scatter(report: MosReport, path: Path, group: str = "overall") -> Path:
    """Write a PNG with one panel per method; ``group`` selects a distortion type."""
    methods = report.methods or ["(none)"]
    cols = min(3, len(methods))
    rows = math.ceil(len(methods) / cols)
    fig = Figure(figsize=(4.2 * cols, 3.8 * rows), dpi=100)
    FigureCanvasAgg(fig)
    mos = np.asarray(report.mos, dtype=float)
    in_group = np.array([group == "overall" or d == group for d in report.distortions], dtype=bool)
    for k, method in enumerate(report.methods):
        ax = fig.add_subplot(rows, cols, k + 1)
        pred = np.array(
            [np.nan if v is None else v for v in report.predictions.get(method, [])], dtype=float
        )
        ok = in_group & np.isfinite(pred) if pred.size == mos.size else np.zeros_like(in_group)
        ax.scatter(pred[ok], mos[ok], s=8, alpha=0.5, edgecolors="none")
        try:
            row = report.row(method, group)
        except KeyError:
            row = None
        if row is not None and row.fit != "none" and ok.any():
            xs = np.linspace(float(pred[ok].min()), float(pred[ok].max()), 200)
            ax.plot(xs, apply_fit(row.fit, row.params, xs), color="C3", lw=1.5, label=row.fit)
            ax.legend(loc="lower right", fontsize=8)
        stats = f"SRCC {_fmt(row.srcc)}  PLCC {_fmt(row.plcc)}  n={row.n}" if row else "no data"
        ax.set_title(f"{method}\n{stats}", fontsize=9)
        ax.set_xlabel("prediction")
        ax.set_ylabel("MOS")
        ax.grid(alpha=0.3)
    fig.suptitle(f"{report.dataset} — {group}", fontsize=10)
    fig.tight_layout()
    path = Path(path)
    with whole_file(path, "wb") as f:  # renamed into place once complete
        fig.savefig(f, format="png")
    return path
