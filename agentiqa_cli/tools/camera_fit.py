"""Fitting the camera model (``make camera-model``): L-BFGS on a weighted squared error.

Kept apart from ``tools/camera_model.py`` so that scoring an image never imports
``scipy.optimize`` (about 0.3 s of every command's start-up).
"""

from __future__ import annotations

import numpy as np
from scipy.optimize import minimize

from agentiqa_cli.tools.camera_model import F64, Network, _standard


def fit_network(
    x: F64,
    y: F64,
    weight: F64,
    hidden: int = 16,
    l2: float = 3e-3,
    seed: int = 0,
    separate: bool = False,
) -> Network:
    """Weighted least squares with an L2 penalty on the weights, by L-BFGS. ``separate``:
    each output reads only its own share of the hidden units (one small network per head,
    fitted at once), so a head that is hard to fit cannot take another's units."""
    mean, scale = x.mean(axis=0), x.std(axis=0) + 1e-6
    xs = _standard(x, mean, scale)
    d = xs.shape[1]
    k = y.shape[1]
    shapes = [(d, hidden), (hidden,), (hidden, k), (k,)]
    sizes = [int(np.prod(s)) for s in shapes]
    w = weight / weight.sum()
    mask = np.ones((hidden, k))
    if separate:
        mask[:] = 0.0
        for j, units in enumerate(np.array_split(np.arange(hidden), k)):
            mask[units, j] = 1.0

    def unpack(theta: F64) -> list[F64]:
        out, i = [], 0
        for s, m in zip(shapes, sizes, strict=True):
            out.append(theta[i : i + m].reshape(s))
            i += m
        return out

    def loss(theta: F64) -> tuple[float, F64]:
        w1, b1, w2, b2 = unpack(theta)
        w2 = w2 * mask
        h = np.tanh(xs @ w1 + b1)
        s = 1.0 / (1.0 + np.exp(-(h @ w2 + b2)))
        err = 1.0 + 4.0 * s - y
        f = float((w[:, None] * err**2).sum() / k + l2 * ((w1**2).sum() + (w2**2).sum()))
        g_out = (2.0 / k) * w[:, None] * err * 4.0 * s * (1.0 - s)
        g_w2 = (h.T @ g_out + 2 * l2 * w2) * mask
        g_b2 = g_out.sum(axis=0)
        g_h = (g_out @ w2.T) * (1.0 - h**2)
        g_w1 = xs.T @ g_h + 2 * l2 * w1
        g_b1 = g_h.sum(axis=0)
        return f, np.concatenate([g.ravel() for g in (g_w1, g_b1, g_w2, g_b2)])

    rng = np.random.default_rng(seed)
    theta = rng.normal(0.0, 0.3, sum(sizes))
    theta[sum(sizes[:3]) :] = 2.0  # outputs start near the clean plateau
    res = minimize(loss, theta, jac=True, method="L-BFGS-B", options={"maxiter": 3000})
    w1, b1, w2, b2 = unpack(res.x)
    return Network(mean, scale, w1, b1, w2 * mask, b2)
