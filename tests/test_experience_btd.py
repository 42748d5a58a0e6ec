"""Voting (EvoIR-Agent Eq. 6) and the Bradley–Terry–Davidson fit with its Wald test (Eqs. 8–10)."""

from __future__ import annotations

import numpy as np
import pytest

from agentiqa_cli.experience import btd
from agentiqa_cli.experience.vote import Counts, borda, outcome, preference, vote

DIRS = {"srcc": "higher", "rmse": "lower"}


def test_preference_respects_directions_and_exact_ties() -> None:
    a = {"srcc": 0.9, "rmse": 0.2}
    b = {"srcc": 0.5, "rmse": 0.4}
    assert preference(a, b, DIRS) == 1.0  # higher srcc and lower rmse both favour a
    assert preference(b, a, DIRS) == 0.0
    c = {"srcc": 0.9, "rmse": 0.6}  # equal srcc, worse rmse
    assert preference(a, c, DIRS) == 0.75 and preference(c, a, DIRS) == 0.25
    assert preference(a, dict(a), DIRS) == 0.5  # every metric tied: a tie, both ways
    assert preference(a, {"srcc": None, "rmse": 0.1}, DIRS) == 0.0  # srcc left out of |M|
    assert preference({"srcc": None}, {"rmse": 1.0}, DIRS) is None
    assert [outcome(r) for r in (0.75, 0.5, 0.25)] == ["w", "t", "l"]


def test_vote_counts_are_antisymmetric() -> None:
    m = [{"srcc": 0.9, "rmse": 0.1}, {"srcc": 0.9, "rmse": 0.1}, {"srcc": 0.1, "rmse": 0.9}]
    c = vote(m, DIRS)
    assert c.ties[0, 1] == c.ties[1, 0] == 1
    assert c.wins[0, 2] == c.wins[1, 2] == 1 and c.wins[2].sum() == 0
    assert list(borda(c)) == [0.75, 0.75, 0.0]


def centred(theta: list[float]) -> np.ndarray:
    t = np.asarray(theta)
    return t - t.mean()


def test_mle_recovers_theta_and_nu() -> None:
    rng = np.random.default_rng(7)
    counts = btd.simulate(np.array([1.0, 0.0, -1.0]), 0.3, 2000, rng)
    f = btd.fit(counts)
    assert f.converged
    assert np.allclose(centred(f.theta), [1.0, 0.0, -1.0], atol=0.1)
    assert abs(f.nu - 0.3) <= 0.1
    assert f.order == [0, 1, 2] and f.significant


def test_all_ties_give_equal_theta_and_large_nu() -> None:
    c = Counts.zeros(3)
    c.ties[:] = 200
    np.fill_diagonal(c.ties, 0)
    f = btd.fit(c)
    assert np.allclose(f.theta, 0.0, atol=1e-4)
    assert f.nu > 50  # 200 ties against the 0.5 pseudo-wins: ν ≈ 200
    assert not f.significant


def test_analytic_hessian_matches_finite_differences() -> None:
    rng = np.random.default_rng(3)
    counts = btd.simulate(np.array([0.5, 0.0, -0.2, 0.8]), 0.6, 40, rng)
    x = np.array([0.0, -0.4, 0.3, 1.1, np.log(0.7)])  # away from the optimum
    h = btd.hessian(x[:-1], x[-1], counts)
    g = btd.gradient(x[:-1], x[-1], counts)
    eps = 1e-6
    num_h = np.zeros_like(h)
    num_g = np.zeros_like(g)
    for a in range(x.size):
        up, dn = x.copy(), x.copy()
        up[a] += eps
        dn[a] -= eps
        num_h[:, a] = (btd.gradient(up[:-1], up[-1], counts) -
                       btd.gradient(dn[:-1], dn[-1], counts)) / (2 * eps)  # fmt: skip
        num_g[a] = (btd.neg_loglik(up[:-1], up[-1], counts) -
                    btd.neg_loglik(dn[:-1], dn[-1], counts)) / (2 * eps)  # fmt: skip
    assert np.allclose(g, num_g, rtol=1e-5, atol=1e-5)
    assert np.allclose(h, num_h, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize(("records", "significant"), [(200, True), (3, False)])
def test_wald_test_needs_enough_records(records: int, significant: bool) -> None:
    """The same 70/30 superiority of tool 0 over tool 1 (tool 2 far behind): significant
    from 200 records, not from 3."""
    rng = np.random.default_rng(11)
    c = Counts.zeros(3)
    for _ in range(records):
        m = [{"a": rng.normal(1.0, 1.0), "b": rng.normal(1.0, 1.0)},
             {"a": rng.normal(0.3, 1.0), "b": rng.normal(0.3, 1.0)},
             {"a": -5.0, "b": -5.0}]  # fmt: skip
        c = c + vote(m, {"a": "higher", "b": "higher"})
    f = btd.fit(c)
    assert f.significant is significant
    assert f.se is not None and f.d is not None and f.d >= 0
    if significant:
        assert f.order[0] == 0
