"""Fitting the camera model (``make camera-model``): L-BFGS on a weighted squared error.

Kept apart from ``tools/camera_model.py`` so that scoring an image never imports
``scipy.optimize`` (about 0.3 s of every command's start-up).
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray
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
    pairs: NDArray[np.intp] | None = None,
    mono: float = 1.0,
    margin: float = 0.1,
    reads: NDArray[np.bool_] | None = None,
) -> Network:
    """Weighted least squares with an L2 penalty on the weights, by L-BFGS. ``separate``:
    each output reads only its own share of the hidden units (one small network per head,
    fitted at once), so a head that is hard to fit cannot take another's units.

    ``pairs`` (rows ``lower, higher, head``: sample ``higher`` carries more of that head's
    damage than sample ``lower``, e.g. the next level of one photo's series) add a squared
    hinge ``mono · max(0, out[higher] - out[lower] + margin)²`` (mean over pairs): the head
    must fall with every level of every series it was trained on, not only on average.

    ``reads`` (inputs × outputs, with ``separate``): which inputs each output's hidden units
    read; the others' weights stay 0."""
    mean, scale = x.mean(axis=0), x.std(axis=0) + 1e-6
    xs = _standard(x, mean, scale)
    d = xs.shape[1]
    k = y.shape[1]
    shapes = [(d, hidden), (hidden,), (hidden, k), (k,)]
    sizes = [int(np.prod(s)) for s in shapes]
    w = weight / weight.sum()
    mask = np.ones((hidden, k))  # which hidden units feed each output
    mask_in = np.ones((d, hidden))  # which inputs each hidden unit reads
    if separate:
        mask[:] = 0.0
        for j, units in enumerate(np.array_split(np.arange(hidden), k)):
            mask[units, j] = 1.0
            if reads is not None:
                mask_in[:, units] = reads[:, j : j + 1]

    def unpack(theta: F64) -> list[F64]:
        out, i = [], 0
        for s, m in zip(shapes, sizes, strict=True):
            out.append(theta[i : i + m].reshape(s))
            i += m
        return out

    def loss(theta: F64) -> tuple[float, F64]:
        w1, b1, w2, b2 = unpack(theta)
        w1 = w1 * mask_in
        w2 = w2 * mask
        h = np.tanh(xs @ w1 + b1)
        s = 1.0 / (1.0 + np.exp(-(h @ w2 + b2)))
        out = 1.0 + 4.0 * s
        err = out - y
        f = float((w[:, None] * err**2).sum() / k + l2 * ((w1**2).sum() + (w2**2).sum()))
        g_pred = (2.0 / k) * w[:, None] * err
        if pairs is not None and len(pairs):
            lo, hi, j = pairs[:, 0], pairs[:, 1], pairs[:, 2]
            gap = np.maximum(0.0, out[hi, j] - out[lo, j] + margin)
            f += float(mono * np.mean(gap**2))
            g = 2.0 * mono * gap / len(pairs)
            np.add.at(g_pred, (hi, j), g)
            np.add.at(g_pred, (lo, j), -g)
        g_out = g_pred * 4.0 * s * (1.0 - s)
        g_w2 = (h.T @ g_out + 2 * l2 * w2) * mask
        g_b2 = g_out.sum(axis=0)
        g_h = (g_out @ w2.T) * (1.0 - h**2)
        g_w1 = (xs.T @ g_h + 2 * l2 * w1) * mask_in
        g_b1 = g_h.sum(axis=0)
        return f, np.concatenate([g.ravel() for g in (g_w1, g_b1, g_w2, g_b2)])

    rng = np.random.default_rng(seed)
    theta = rng.normal(0.0, 0.3, sum(sizes))
    theta[sum(sizes[:3]) :] = 2.0  # outputs start near the clean plateau
    res = minimize(loss, theta, jac=True, method="L-BFGS-B", options={"maxiter": 3000})
    w1, b1, w2, b2 = unpack(res.x)
    return Network(mean, scale, w1 * mask_in, b1, w2 * mask, b2)
