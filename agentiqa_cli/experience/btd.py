"""Bradley–Terry–Davidson ranking with a Wald test (EvoIR-Agent Eqs. 8–10).

``Z_ij = e^θi + e^θj + 2ν e^{(θi+θj)/2}``; ``P(i≻j) = e^θi / Z_ij``,
``P(i=j) = 2ν e^{(θi+θj)/2} / Z_ij``. The negative log-likelihood of the win/tie counts is
minimised by L-BFGS with θ_0 pinned at 0 and ν = e^λ (so ν > 0 without bounds); *ours*: a
0.5 pseudo-count on each pair's wins and losses keeps an unbeaten candidate's θ finite.
Each pair's ``ln Z`` is a log-sum-exp of three terms linear in (θi, θj, λ), so the gradient
is ``Uᵀp`` and the Hessian ``Uᵀ(diag p − ppᵀ)U``: both are exact, and the covariance of
the estimate is the inverse of that Hessian at the optimum. The top two are significantly
ordered when ``d − z·SE(d) ≥ 0`` with ``d = θ(1) − θ(2)`` and z = 1.96.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from agentiqa_cli import heavy
from agentiqa_cli.experience.vote import Counts

Z_975 = 1.959963984540054
PSEUDO = 0.5
Vec = NDArray[np.float64]

# u = U · (θi, θj, λ) + const for the three outcomes: i wins, j wins, tie (+ ln 2)
_U = np.array([[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.5, 0.5, 1.0]])


def _pairs(counts: Counts, pseudo: float) -> tuple[Vec, Vec, Vec, Vec, Vec]:
    i, j = np.triu_indices(counts.k, 1)
    w = counts.wins[i, j] + pseudo
    lo = counts.wins[j, i] + pseudo
    t = counts.ties[i, j]
    return i.astype(float), j.astype(float), w, lo, t


def _terms(full: Vec, counts: Counts, pseudo: float) -> tuple[float, Vec, Vec]:
    """−ℓ, its gradient and Hessian in the full coordinates (θ_0..θ_{k−1}, λ)."""
    k = counts.k
    fi, fj, w, lo, t = _pairs(counts, pseudo)
    i, j = fi.astype(int), fj.astype(int)
    a, b, lam = full[i], full[j], full[k]
    u = np.stack([a, b, math.log(2.0) + lam + 0.5 * (a + b)], axis=1)
    m = u.max(axis=1, keepdims=True)
    e = np.exp(u - m)
    z = e.sum(axis=1, keepdims=True)
    p = e / z
    log_z = (m + np.log(z))[:, 0]
    n = w + lo + t
    value = float(np.sum(n * log_z - (w * u[:, 0] + lo * u[:, 1] + t * u[:, 2])))
    # gradient: n Uᵀp − (w, l, t)·U
    g_local = n[:, None] * (p @ _U) - np.stack([w + 0.5 * t, lo + 0.5 * t, t], axis=1)
    grad = np.zeros(k + 1)
    np.add.at(grad, i, g_local[:, 0])
    np.add.at(grad, j, g_local[:, 1])
    grad[k] += g_local[:, 2].sum()
    # Hessian: n Uᵀ(diag p − ppᵀ)U per pair, scattered into (i, j, λ)
    cov = np.einsum("pa,ab->pab", p, np.eye(3)) - np.einsum("pa,pb->pab", p, p)
    h_local = n[:, None, None] * np.einsum("ai,pab,bj->pij", _U, cov, _U)
    hess = np.zeros((k + 1, k + 1))
    idx = np.stack([i, j, np.full_like(i, k)], axis=1)
    for r in range(3):
        for c in range(3):
            np.add.at(hess, (idx[:, r], idx[:, c]), h_local[:, r, c])
    return value, grad, hess


def neg_loglik(theta: Vec, lam: float, counts: Counts, pseudo: float = PSEUDO) -> float:
    return _terms(np.append(theta, lam), counts, pseudo)[0]


def gradient(theta: Vec, lam: float, counts: Counts, pseudo: float = PSEUDO) -> Vec:
    return _terms(np.append(theta, lam), counts, pseudo)[1]


def hessian(theta: Vec, lam: float, counts: Counts, pseudo: float = PSEUDO) -> Vec:
    """∂²(−ℓ) over (θ_0..θ_{k−1}, λ)."""
    return _terms(np.append(theta, lam), counts, pseudo)[2]


@dataclass(frozen=True)
class Fit:
    theta: list[float]  # θ_0 = 0 (pinned)
    nu: float
    cov: list[list[float]]  # Cov(θ), k×k; row and column 0 are 0 (pinned)
    order: list[int]  # candidates best first (Eq. 9)
    d: float | None  # θ(1) − θ(2)
    se: float | None
    significant: bool
    converged: bool


def fit(counts: Counts, pseudo: float = PSEUDO, z: float = Z_975) -> Fit:
    """The MLE of θ (θ_0 = 0) and ν, its covariance, and the Wald test on the top two."""
    k = counts.k
    if k < 2:
        return Fit([0.0] * k, 0.0, [[0.0] * k for _ in range(k)], list(range(k)), None, None,
                   False, True)  # fmt: skip

    def fun(x: Vec) -> tuple[float, Vec]:
        full = np.concatenate([[0.0], x])
        v, g, _ = _terms(full, counts, pseudo)
        return v, g[1:]

    x0 = np.zeros(k)  # θ_1..θ_{k-1} and λ
    res = heavy.optimize.minimize(fun, x0, jac=True, method="L-BFGS-B",
                                  options={"maxiter": 2000, "gtol": 1e-9, "ftol": 1e-15})  # fmt: skip
    full = np.concatenate([[0.0], res.x])
    h = _terms(full, counts, pseudo)[2][1:, 1:]
    try:
        inv = np.linalg.inv(h)
        ok = bool(np.all(np.isfinite(inv)))
    except np.linalg.LinAlgError:
        inv, ok = np.full_like(h, np.nan), False
    cov = np.zeros((k, k))
    cov[1:, 1:] = inv[: k - 1, : k - 1]
    theta = full[:k]
    order = [int(v) for v in np.argsort(-theta, kind="stable")]
    a, b = order[0], order[1]
    d = float(theta[a] - theta[b])
    var = cov[a, a] + cov[b, b] - 2.0 * cov[a, b]
    se = math.sqrt(var) if ok and var >= 0 and math.isfinite(var) else None
    significant = se is not None and d - z * se >= 0
    return Fit(
        theta=[float(v) for v in theta],
        nu=float(math.exp(full[k])),
        cov=cov.tolist(),
        order=order,
        d=d,
        se=se,
        significant=bool(significant),
        converged=bool(res.success),
    )


def simulate(theta: Vec, nu: float, per_pair: int, rng: np.random.Generator) -> Counts:
    """Counts drawn from the Davidson model (for tests and checks)."""
    k = len(theta)
    c = Counts.zeros(k)
    for i in range(k):
        for j in range(i + 1, k):
            ei, ej, et = (
                math.exp(theta[i]),
                math.exp(theta[j]),
                2 * nu * math.exp((theta[i] + theta[j]) / 2),
            )
            p = np.array([ei, ej, et]) / (ei + ej + et)
            w, lo, t = rng.multinomial(per_pair, p)
            c.wins[i, j] += w
            c.wins[j, i] += lo
            c.ties[i, j] += t
            c.ties[j, i] += t
    return c


def outcome_probabilities(theta_i: float, theta_j: float, nu: float) -> tuple[float, float]:
    """(P(i≻j), P(i=j)) of Eq. 8 for abilities ``theta_i``, ``theta_j`` and tie intensity ν."""
    m = max(theta_i, theta_j)
    a, b = math.exp(theta_i - m), math.exp(theta_j - m)
    t = 2.0 * nu * math.exp(0.5 * (theta_i + theta_j) - m)
    z = a + b + t
    return a / z, t / z
