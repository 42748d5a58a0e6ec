"""Per-tool logistic calibration and the overlay round trip through load_overlay."""

from __future__ import annotations

import asyncio
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from agentiqa_cli.bench.calibrate import (
    CalibrationFit,
    fit_tool,
    mos_scale,
    rescale_mos,
    write_overlay,
)
from agentiqa_cli.bench.datasets import load_dataset
from agentiqa_cli.bench.runs import Bench, run_calibrate
from agentiqa_cli.config import Settings
from agentiqa_cli.imaging.load import LoadedImage
from agentiqa_cli.io.trace import TraceWriter
from agentiqa_cli.records import ToolScore
from agentiqa_cli.tools.cards import CardSet, ToolCard, load_overlay
from agentiqa_cli.tools.logistic import logistic5, normalize, sigmoid_through
from agentiqa_cli.wiring import build_runtime

TRUE = [3.0, 1.5, 0.5, 0.1, 3.0]


def card(name: str, lower_better: bool = False, mode: str = "NR") -> ToolCard:
    return ToolCard.model_validate(
        dict(name=name, backend="builtin", metric=name, mode=mode, lower_better=lower_better,
             raw_range=(-10.0, 10.0), description="a test tool card", weights=False,
             licence="MIT")
    )  # fmt: skip


def synthetic(n: int = 300, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    raw = rng.uniform(-3, 4, n)
    return raw, logistic5(raw, *TRUE) + rng.normal(0, 0.02, n)


def test_fit_recovers_known_parameters() -> None:
    raw, mos = synthetic()
    fit = fit_tool(card("t"), list(raw), list(mos), mos_range=(1, 5))
    assert fit.error is None and not fit.suspect and fit.warnings == []
    assert fit.n == 300 and fit.failed == 0 and fit.increasing is True
    p = np.array(fit.params)
    if p[0] < 0:  # (b1, b2) and (-b1, -b2) are the same curve
        p[:2] = -p[:2]
    assert np.allclose(p, TRUE, rtol=0.05, atol=0.02)
    assert fit.srcc is not None and fit.srcc > 0.99 and fit.rmse == pytest.approx(0.02, abs=0.005)


@pytest.mark.parametrize(("a", "b"), [((4.2, 4.6), (1.8, 1.5)), ((2.55, 4.6), (5.27, 1.41))])
def test_a_card_anchored_at_two_points_passes_through_both(a, b) -> None:
    """The camera heads' cards rise with the reading, the ringing card falls: both anchored
    at a clean reading (4.6, the "none" cut) and a damaged one, over the whole 1-5 scale."""
    params = sigmoid_through(a, b)
    assert params[0] == 4.0 and params[3] == 0.0 and params[4] == 3.0
    for x, q in (a, b):
        assert normalize(x, params) == pytest.approx(q, abs=1e-12)
    assert (normalize(a[0] + 0.1, params) > normalize(a[0], params)) == (a[0] > b[0])


def test_mos_scale_detection_and_rescaling() -> None:
    assert mos_scale([1.2, 4.9]) == (1.0, 5.0)
    assert mos_scale([0.3, 4.2]) == (0.0, 5.0)  # BID / AGIQA style
    assert mos_scale([0.2, 7.2]) == (0.0, 10.0)
    assert mos_scale([3.0, 88.0]) == (0.0, 100.0)  # SPAQ style
    assert mos_scale([0.1, 0.9]) == (0.0, 1.0)
    assert mos_scale([1.0, 9.0], (0, 9)) == (0.0, 9.0)
    assert list(rescale_mos([0, 50, 100], (0, 100))) == [1.0, 3.0, 5.0]
    # a fit on a 0-100 scale lands on the same curve as one on 1-5
    raw, mos = synthetic()
    on100 = (mos - 1) / 4 * 100
    fit = fit_tool(card("t"), list(raw), list(on100))
    assert fit.mos_range == (0.0, 100.0)
    grid = np.linspace(-3, 4, 30)
    assert np.max(np.abs(logistic5(grid, *fit.params) - logistic5(grid, *TRUE))) < 0.05  # type: ignore[misc]


def test_direction_disagreement_is_flagged_and_kept_out_of_the_overlay(tmp_path: Path) -> None:
    raw, mos = synthetic()
    suspect = fit_tool(card("wrongway", lower_better=True), list(raw), list(mos), (1, 5))
    assert suspect.suspect and "lower_better=True" in suspect.warnings[0]
    good = fit_tool(card("lowgood", lower_better=True), list(-raw), list(mos), (1, 5))
    assert not good.suspect and good.increasing is False and good.raw_srcc < 0  # type: ignore[operator]
    few = fit_tool(card("few"), [1.0, 2.0, None, 3.0], [1, 2, 3, 4])
    assert few.params is None and "at least 5" in (few.error or "") and few.failed == 1
    path = tmp_path / "overlay.yaml"
    assert write_overlay([suspect, good, few], path, source="synthetic") == 1
    assert set(load_overlay(path)) == {"lowgood"}
    assert write_overlay([suspect, good], path, source="synthetic", include_suspect=True) == 2


def test_overlay_round_trip_applies_to_cards(tmp_path: Path) -> None:
    raw, mos = synthetic()
    fit = fit_tool(card("alpha"), list(raw), list(mos), (1, 5))
    path = tmp_path / "cal.yaml"
    write_overlay([fit], path, source="unit-test data")
    overlay = load_overlay(path)
    assert overlay["alpha"].params == fit.params  # floats survive YAML exactly
    assert overlay["alpha"].source.startswith("unit-test data; n=300; MOS 1-5 mapped to 1-5")
    cards = CardSet([card("alpha"), card("beta")]).with_overlay(overlay)
    alpha, beta = cards.get("alpha"), cards.get("beta")
    assert alpha.calibrated and not beta.calibrated
    for x in (-2.0, 0.5, 3.0):
        expected = float(np.clip(logistic5(x, *fit.params), 1, 5))  # type: ignore[misc]
        assert alpha.normalize(x) == pytest.approx(expected)
        assert abs(alpha.normalize(x) - float(np.clip(logistic5(x, *TRUE), 1, 5))) < 0.05


class MeanRunner:
    """raw = 10 × mean pixel value; records what it was given."""

    def __init__(self) -> None:
        self.seen: list[tuple[str, str, str | None]] = []

    def run(self, c: ToolCard, image: LoadedImage, ref: LoadedImage | None = None) -> ToolScore:
        self.seen.append((c.name, image.path.name, ref.path.name if ref else None))
        if c.mode == "FR" and ref is None:
            return ToolScore(tool=c.name, error="needs a reference")
        raw = 10.0 * float(image.pixels.mean())
        return ToolScore(tool=c.name, raw=raw, norm=c.normalize(raw))

    def run_many(
        self, cards: list[ToolCard], image: LoadedImage, ref: LoadedImage | None = None
    ) -> list[ToolScore]:
        return [self.run(c, image, ref if c.mode == "FR" else None) for c in cards]


def test_calibrate_runs_tools_over_a_dataset(tmp_path: Path) -> None:
    rows = ["image,mos,reference"]
    Image.new("RGB", (16, 16), (200, 200, 200)).save(tmp_path / "ref.png")
    for k in range(40):
        v = 40 + 5 * k
        Image.new("RGB", (16, 16), (v, v, v)).save(tmp_path / f"i{k}.png")
        rows.append(f"i{k}.png,{20 + 2 * k},ref.png")  # MOS on 0-100, rising with brightness
    (tmp_path / "ds.csv").write_text("\n".join(rows) + "\n")
    ds = load_dataset(tmp_path / "ds.csv")
    runner = MeanRunner()

    async def go() -> list[CalibrationFit]:
        async with build_runtime(Settings()) as rt:
            rt.__dict__["runner"] = runner  # the fake behind the cached property
            bench = Bench(rt, TraceWriter(None))
            return await run_calibrate(bench, ds, [card("nr"), card("fr", mode="FR")])

    fits = asyncio.run(go())
    assert [f.tool for f in fits] == ["nr", "fr"]
    for f in fits:
        assert f.n == 40 and f.mos_range == (0.0, 100.0) and f.increasing
        assert f.srcc == pytest.approx(1.0) and f.rmse is not None and f.rmse < 0.05
    assert all(ref is None for name, _, ref in runner.seen if name == "nr")
    assert all(ref == "ref.png" for name, _, ref in runner.seen if name == "fr")


def _dip_data(seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Sharpness-like readings: blurred images low, clean high, and a group of other
    distortions that read sharp but are rated low (noise reads as detail)."""
    rng = np.random.default_rng(seed)
    blurred = rng.uniform(0.05, 0.35, 120)
    mixed = rng.uniform(0.35, 0.7, 80)
    sharp_bad = rng.uniform(0.66, 0.74, 60)
    clean = rng.uniform(0.74, 0.9, 40)
    x = np.concatenate([blurred, mixed, sharp_bad, clean])
    y = np.concatenate(
        [1 + 8 * blurred, np.full(80, 3.4), np.full(60, 2.0), np.full(40, 4.9)]
    ) + rng.normal(0, 0.1, x.size)
    return x, y


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_calibrated_curves_are_monotone_over_the_raw_range(seed: int) -> None:
    raw, mos = _dip_data(seed)
    fit = fit_tool(card("sharp"), list(raw), list(mos), mos_range=(1, 5))
    assert fit.params is not None and fit.increasing is True and not fit.suspect
    grid = np.linspace(-10.0, 10.0, 4001)  # the card's whole raw_range, not just the data
    step = np.diff(logistic5(grid, *fit.params))
    assert (step >= -1e-12).all()
    lo, mid, hi = logistic5(np.array([0.3, 0.7, 0.76]), *fit.params)
    assert lo <= mid <= hi
