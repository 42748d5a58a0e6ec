"""Correlation metrics agree with scipy's own, and the logistic fit recovers known curves."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from agentiqa_cli.bench.metrics import (
    bootstrap_srcc,
    correlations,
    fit_mapping,
    grouped,
)
from agentiqa_cli.tools.logistic import fit_logistic, logistic5


def _canonical(p: list[float]) -> np.ndarray:
    # b1 (0.5 - 1/(1+e^{b2 z})) is unchanged by flipping the signs of b1 and b2
    a = np.array(p, dtype=float)
    if a[0] < 0:
        a[:2] = -a[:2]
    return a


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_statistics_equal_scipy(seed: int) -> None:
    rng = np.random.default_rng(seed)
    mos = rng.uniform(1, 5, 200)
    pred = 20 * np.tanh(mos - 3) + rng.normal(0, 4, mos.size)  # monotone-ish, noisy, other scale
    c = correlations(list(pred), mos)
    assert c.n == 200 and c.fit == "logistic"
    assert c.srcc == pytest.approx(stats.spearmanr(pred, mos).statistic, abs=1e-12)
    assert c.krcc == pytest.approx(stats.kendalltau(pred, mos).statistic, abs=1e-12)
    params, _ = fit_logistic(pred, mos)
    fitted = logistic5(pred, *params)
    assert c.plcc == pytest.approx(stats.pearsonr(fitted, mos).statistic, abs=1e-9)
    assert c.rmse == pytest.approx(float(np.sqrt(np.mean((fitted - mos) ** 2))), abs=1e-9)
    # PLCC after the nonlinear mapping is at least the raw linear correlation here
    assert c.plcc >= abs(stats.pearsonr(pred, mos).statistic) - 1e-9


def test_logistic_fit_recovers_known_parameters() -> None:
    rng = np.random.default_rng(7)
    true = [3.0, 1.5, 0.5, 0.1, 3.0]
    x = rng.uniform(-3, 4, 400)
    y = logistic5(x, *true) + rng.normal(0, 0.02, x.size)
    params, rmse = fit_logistic(x, y)
    assert np.allclose(_canonical(params), true, rtol=0.05, atol=0.02)
    assert rmse == pytest.approx(0.02, abs=0.005)


def test_logistic_fit_recovers_a_decreasing_curve_far_from_zero() -> None:
    # lower-is-better raw scores around 40 (like BRISQUE): b4 and b5 trade off over this
    # narrow range, so the curve, not each parameter, is what must come back
    rng = np.random.default_rng(3)
    true = [-3.0, 0.4, 40.0, 0.0, 3.0]
    x = rng.uniform(25, 55, 300)
    y = logistic5(x, *true) + rng.normal(0, 0.02, x.size)
    params, _ = fit_logistic(x, y)
    grid = np.linspace(25, 55, 50)
    assert np.max(np.abs(logistic5(grid, *params) - logistic5(grid, *true))) < 0.05
    kind, mapped = fit_mapping(x, y)
    assert kind == "logistic" and mapped is not None


def test_failed_predictions_and_small_samples() -> None:
    c = correlations([1.0, None, 3.0, 2.0, None, 5.0, 4.0], [1, 2, 3, 2, 1, 5, 4])
    assert c.n == 5 and c.srcc == pytest.approx(1.0)
    few = correlations([1.0, 2.0, 3.0, 5.0], [1.0, 2.5, 2.9, 4.0])
    assert few.fit == "linear" and few.params is not None and few.plcc is not None
    flat = correlations([2.0] * 6, [1, 2, 3, 4, 5, 6])
    assert flat.srcc is None and flat.plcc is None and flat.fit == "none"
    assert correlations([None, None], [1, 2]).n == 0


def test_grouped_per_distortion() -> None:
    pred = [1.0, 2.0, 3.0, 3.0, 2.0, 1.0, 0.5]
    mos = [1, 2, 3, 1, 2, 3, 2]
    groups = ["blur", "blur", "blur", "noise", "noise", "noise", None]
    out = grouped(pred, mos, groups)
    assert list(out) == ["overall", "blur", "noise"]
    assert out["blur"].srcc == pytest.approx(1.0)
    assert out["noise"].srcc == pytest.approx(-1.0)
    assert out["overall"].n == 7


def test_bootstrap_interval_is_seeded_and_brackets_the_estimate() -> None:
    rng = np.random.default_rng(0)
    mos = rng.uniform(1, 5, 60)
    pred = mos + rng.normal(0, 0.8, mos.size)
    lo, hi = bootstrap_srcc(pred, mos, rounds=500, seed=1)  # type: ignore[misc]
    assert bootstrap_srcc(pred, mos, rounds=500, seed=1) == (lo, hi)
    srcc = stats.spearmanr(pred, mos).statistic
    assert lo < srcc < hi and hi - lo < 0.5
    c = correlations(list(pred), mos, bootstrap=200)
    assert c.srcc_low is not None and c.srcc_high is not None
    assert c.srcc_low < c.srcc < c.srcc_high  # type: ignore[operator]
