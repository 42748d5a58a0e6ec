"""Agreement between predictions and MOS: SRCC, KRCC, and PLCC/RMSE after the standard
five-parameter logistic mapping (VQEG; Sheikh et al. 2006), overall and per group.

SRCC and KRCC need no mapping (they are rank statistics). PLCC and RMSE are computed
between the MOS and the predictions mapped onto the MOS scale by the fitted logistic;
RMSE is therefore in the dataset's own MOS units. The mapping absorbs the direction, so
PLCC comes out positive for a lower-is-better score too; SRCC and KRCC keep the sign.

When the logistic cannot be fitted — fewer than 10 points (with 5 parameters it would
pass through 5 points exactly and report PLCC 1), no convergence, a degenerate curve — a
straight line is fitted instead and ``fit`` says so, so a reader never mistakes one for
the other.

The bootstrap interval on SRCC answers Evaluation Agent's point that few-sample evaluations are
noisy: with 30 images an SRCC of 0.8 can easily be 0.6–0.9.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from typing import Literal

import numpy as np
from numpy.typing import ArrayLike, NDArray
from pydantic import BaseModel, ConfigDict

from agentiqa_cli import heavy
from agentiqa_cli.tools.logistic import fit_logistic, logistic5

FitKind = Literal["logistic", "linear", "none"]
MIN_LOGISTIC_POINTS = 10


class Correlation(BaseModel):
    """Agreement on ``n`` valid (prediction, MOS) pairs; ``None`` where undefined."""

    model_config = ConfigDict(extra="forbid")

    n: int
    srcc: float | None = None
    krcc: float | None = None
    plcc: float | None = None
    rmse: float | None = None
    fit: FitKind = "none"
    params: list[float] | None = None  # logistic b1..b5, or [slope, intercept]
    srcc_low: float | None = None  # bootstrap 95% interval, when asked for
    srcc_high: float | None = None


def _finite(x: float) -> float | None:
    return float(x) if np.isfinite(x) else None


def _constant(a: NDArray) -> bool:
    return bool(a.size == 0 or np.ptp(a) == 0)


def _correlation(name: str, x: ArrayLike, y: ArrayLike) -> float | None:
    """scipy.stats' ``name`` correlation; None when it is undefined (< 2 points, constant)."""
    xa, ya = np.asarray(x, float), np.asarray(y, float)
    if xa.size < 2 or _constant(xa) or _constant(ya):
        return None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # near-constant input: the value is still right
        return _finite(getattr(heavy.stats, name)(xa, ya).statistic)


def spearman(x: ArrayLike, y: ArrayLike) -> float | None:
    return _correlation("spearmanr", x, y)


def kendall(x: ArrayLike, y: ArrayLike) -> float | None:
    return _correlation("kendalltau", x, y)


def pearson(x: ArrayLike, y: ArrayLike) -> float | None:
    return _correlation("pearsonr", x, y)


def apply_fit(kind: FitKind, params: Sequence[float] | None, x: ArrayLike) -> NDArray:
    xa = np.asarray(x, dtype=np.float64)
    if kind == "logistic" and params is not None:
        return logistic5(xa, *params)
    if kind == "linear" and params is not None:
        return params[0] * xa + params[1]
    return xa


def fit_mapping(pred: ArrayLike, mos: ArrayLike) -> tuple[FitKind, list[float] | None]:
    """The logistic mapping of predictions onto MOS, or a line when that fails."""
    x, y = np.asarray(pred, float), np.asarray(mos, float)
    if x.size < 2 or _constant(x):
        return "none", None
    if x.size >= MIN_LOGISTIC_POINTS:
        try:
            with warnings.catch_warnings(), np.errstate(all="ignore"):
                warnings.simplefilter("ignore")  # curve_fit's OptimizeWarning on covariance
                params, _ = fit_logistic(x, y)
            fitted = logistic5(x, *params)
            if np.all(np.isfinite(fitted)) and not _constant(fitted):
                return "logistic", params
        except (ValueError, RuntimeError, FloatingPointError):
            pass
    slope, intercept = np.polyfit(x, y, 1)
    return "linear", [float(slope), float(intercept)]


def bootstrap_srcc(
    x: ArrayLike, y: ArrayLike, rounds: int = 1000, seed: int = 0, level: float = 0.95
) -> tuple[float, float] | None:
    """Percentile bootstrap interval of SRCC (resampling pairs); None if too few points."""
    xa, ya = np.asarray(x, float), np.asarray(y, float)
    n = xa.size
    if n < 4 or rounds < 1 or _constant(xa) or _constant(ya):
        return None
    rankdata = heavy.stats.rankdata
    rng = np.random.default_rng(seed)
    stats: list[NDArray] = []
    chunk = max(1, 2_000_000 // n)  # bound memory on 10k-image datasets
    for start in range(0, rounds, chunk):
        idx = rng.integers(0, n, size=(min(chunk, rounds - start), n))
        rx = rankdata(xa[idx], axis=1)
        ry = rankdata(ya[idx], axis=1)
        rx -= rx.mean(axis=1, keepdims=True)
        ry -= ry.mean(axis=1, keepdims=True)
        with np.errstate(invalid="ignore", divide="ignore"):
            r = (rx * ry).sum(1) / np.sqrt((rx * rx).sum(1) * (ry * ry).sum(1))
        stats.append(r)
    r_all = np.concatenate(stats)
    r_all = r_all[np.isfinite(r_all)]  # a resample with constant values has no SRCC
    if r_all.size == 0:
        return None
    tail = (1.0 - level) / 2.0 * 100.0
    lo, hi = np.percentile(r_all, [tail, 100.0 - tail])
    return float(lo), float(hi)


def correlations(
    pred: Sequence[float | None],
    mos: Sequence[float] | ArrayLike,
    *,
    bootstrap: int = 0,
    seed: int = 0,
) -> Correlation:
    """All four statistics on the pairs whose prediction is a finite number."""
    p = np.array([np.nan if v is None else float(v) for v in pred], dtype=np.float64)
    m = np.asarray(mos, dtype=np.float64)
    if p.shape != m.shape:
        raise ValueError(f"{p.size} predictions for {m.size} MOS values")
    ok = np.isfinite(p) & np.isfinite(m)
    x, y = p[ok], m[ok]
    result = Correlation(n=int(x.size), srcc=spearman(x, y), krcc=kendall(x, y))
    kind, params = fit_mapping(x, y)
    if kind != "none":
        fitted = apply_fit(kind, params, x)
        result.fit, result.params = kind, params
        result.plcc = pearson(fitted, y)
        result.rmse = float(np.sqrt(np.mean((fitted - y) ** 2)))
    if bootstrap and result.srcc is not None:
        ci = bootstrap_srcc(x, y, bootstrap, seed)
        if ci is not None:
            result.srcc_low, result.srcc_high = ci
    return result


def grouped(
    pred: Sequence[float | None],
    mos: Sequence[float],
    groups: Sequence[str | None],
    *,
    bootstrap: int = 0,
    seed: int = 0,
) -> dict[str, Correlation]:
    """``{"overall": ..., group: ...}``, groups sorted by name; ``None`` groups count only
    in overall."""
    out = {"overall": correlations(pred, mos, bootstrap=bootstrap, seed=seed)}
    for g in sorted({g for g in groups if g}):
        idx = [i for i, gi in enumerate(groups) if gi == g]
        out[g] = correlations(
            [pred[i] for i in idx], [mos[i] for i in idx], bootstrap=bootstrap, seed=seed
        )
    return out
