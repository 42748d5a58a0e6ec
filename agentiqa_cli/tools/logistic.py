"""Five-parameter logistic of Sheikh et al. (2006) mapping raw tool scores to [1, 5].

AgenticIQA Eq. 6 prints ``1 / exp(b2 (x - b3))``; the standard form (and the only one for
which Table 5's parameters give scores on the 1–5 scale) is ``1 / (1 + exp(...))``.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from numpy.typing import ArrayLike, NDArray

from agentiqa_cli import heavy


def logistic5(x: ArrayLike, b1: float, b2: float, b3: float, b4: float, b5: float) -> NDArray:
    x = np.asarray(x, dtype=np.float64)
    # exp overflows for large arguments; clip it: 1/(1+e^709) is already 0 in float64
    z = np.clip(b2 * (x - b3), -700.0, 700.0)
    return b1 * (0.5 - 1.0 / (1.0 + np.exp(z))) + b4 * x + b5


def normalize(raw: float, params: Sequence[float]) -> float:
    """Raw score → quality in [1, 5], higher is better."""
    return float(np.clip(logistic5(raw, *params), 1.0, 5.0))


def sigmoid_through(
    a: tuple[float, float], b: tuple[float, float], span: float = 4.0
) -> list[float]:
    """The parameters of ``3 + span (1/2 - 1 / (1 + exp(b2 (x - b3))))`` (b1 = span, b4 = 0,
    b5 = 3; with the default span the whole 1-5 scale, monotone) through two points (raw,
    quality), each quality strictly inside the curve's range: a card anchored at a clean
    reading and a damaged one. A wider span reaches 5 (the score is clipped there) at a
    finite reading."""
    (xa, qa), (xb, qb) = a, b
    ua, ub = (float(np.log(1.0 / (0.5 - (q - 3.0) / span) - 1.0)) for q in (qa, qb))
    b2 = (ua - ub) / (xa - xb)
    return [span, b2, xa - ua / b2, 0.0, 3.0]


def fit_logistic(
    x: ArrayLike, y: ArrayLike, increasing: bool | None = None
) -> tuple[list[float], float]:
    """Least-squares fit of the five parameters; returns (params, RMSE of the fit).

    The curve is monotone by construction: b1 >= 0, and b2 and the linear term b4 share the
    direction's sign, so the sigmoid and the line never pull against each other (free
    parameters let least squares trade a large b1 against a large b4, and the curve then
    turns back inside the raw range: raw 0.3 -> 3.18, 0.7 -> 2.73, 0.76 -> 3.90). Both
    directions are tried unless ``increasing`` fixes one, and the better fit is kept, so
    lower-is-better raw scores fit as well as higher-is-better ones.
    """
    xa = np.asarray(x, dtype=np.float64)
    ya = np.asarray(y, dtype=np.float64)
    if xa.size < 5:
        raise ValueError(f"need at least 5 points to fit 5 parameters, got {xa.size}")
    spread = float(np.std(xa)) or 1.0
    xr = float(np.ptp(xa)) or 1.0
    yr = float(np.ptp(ya)) or 1.0
    b5 = (float(ya.min()) - 50 * yr, float(ya.max()) + 50 * yr)
    b3 = (float(xa.min()) - xr, float(xa.max()) + xr)
    best: tuple[list[float], float] | None = None
    signs = (1.0, -1.0) if increasing is None else ((1.0,) if increasing else (-1.0,))
    for sign in signs:
        # bounds also keep nearly linear data from drifting to huge parameters
        b2 = (0.0, 100 / spread) if sign > 0 else (-100 / spread, 0.0)
        b4 = (0.0, 10 * yr / xr) if sign > 0 else (-10 * yr / xr, 0.0)
        lower = [0.0, b2[0], b3[0], b4[0], b5[0]]
        upper = [50 * yr, b2[1], b3[1], b4[1], b5[1]]
        p0 = [yr, sign / spread, float(np.mean(xa)), 0.0, float(np.mean(ya))]
        try:
            popt, _ = heavy.optimize.curve_fit(
                logistic5, xa, ya, p0=p0, bounds=(lower, upper), maxfev=5000
            )
        except (RuntimeError, ValueError):
            continue
        rmse = float(np.sqrt(np.mean((logistic5(xa, *popt) - ya) ** 2)))
        if best is None or rmse < best[1]:
            best = ([float(v) for v in popt], rmse)
    if best is None:
        raise ValueError("logistic fit did not converge")
    return best


def anchor_top(params: Sequence[float], raw_top: float, top: float = 5.0) -> list[float]:
    """The same curve stretched about 1 so that ``raw_top`` maps to ``top``.

    For full-reference tools ``raw_top`` is the reading of an image against an identical
    copy (psnr 80 dB in pyiqa, ssim 1, gmsd 0): fidelity cannot be better, so it is 5.
    Curves fitted to human scores (Table 5) or to a pseudo-MOS top out lower (psnr's
    synthetic fit at 3.57), because even pristine references are rated below 5. The
    logistic is affine in b1, b4 and b5, so ``1 + k (q - 1)`` is again a logistic: same
    shape, same order, only the scale changes. Curves already reaching ``top`` are kept.
    """
    b1, b2, b3, b4, b5 = (float(p) for p in params)
    q = float(logistic5(raw_top, b1, b2, b3, b4, b5))
    if q >= top:
        return [b1, b2, b3, b4, b5]
    if q <= 1.0:
        raise ValueError(f"the curve maps {raw_top} to {q:.3f}: nothing to stretch")
    k = (top - 1.0) / (q - 1.0)
    return [k * b1, b2, b3, k * b4, k * b5 + 1.0 - k]
