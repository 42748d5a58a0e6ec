"""Scores use the whole 1-5 scale: identical pairs reach the top with --ref, heavy
distortions the bottom in the default `score` (issue 8 part 5)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from agentiqa_cli.bench.synth import generate, sample_photos
from agentiqa_cli.tools.logistic import anchor_top, logistic5
from tests.test_cli_score import invoke


def test_anchor_top_stretches_the_curve_to_five_and_keeps_its_order() -> None:
    params = [1.70437, 0.400075, 22.5531, 0.0, 2.71729]  # psnr's earlier fit: tops at 3.57
    assert logistic5(80.0, *params) == pytest.approx(3.57, abs=0.01)
    top = anchor_top(params, 80.0)
    assert logistic5(80.0, *top) == pytest.approx(5.0)
    x = np.linspace(0.0, 80.0, 200)
    old, new = logistic5(x, *params), logistic5(x, *top)
    assert (np.diff(new) >= 0).all() and np.allclose(
        new - 1, (old - 1) * 4 / (3.5695 - 1), atol=0.01
    )
    assert anchor_top([4.0, 1.0, 0.0, 0.0, 4.0], 10.0) == [4.0, 1.0, 0.0, 0.0, 4.0]  # tops at 6


@pytest.fixture(scope="module")
def photos(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[Path]]:
    work = tmp_path_factory.mktemp("scale")
    clean = sample_photos(work / "clean", 256, ["chelsea", "coffee"])
    items = generate(clean, work / "dist", ["noise", "blur", "jpeg"], [5], seed=0)
    return work, [it.path for it in items if it.level == 5]


def _scores(csv: Path) -> dict[str, float]:
    df = pd.read_csv(csv)
    return {Path(i).name: float(s) for i, s in zip(df["image"], df["score"], strict=True)}


def test_identical_pairs_score_at_least_4_5_with_ref(photos: tuple[Path, list[Path]]) -> None:
    work, _ = photos
    out = work / "identical.csv"
    code, _ = invoke("score", work / "clean", "--ref", work / "clean", "--out", out)
    assert code == 0
    scores = _scores(out)
    assert len(scores) == 2 and min(scores.values()) >= 4.5, scores


def test_level_5_falls_below_2_5_in_the_default_score(photos: tuple[Path, list[Path]]) -> None:
    work, heavy = photos
    out = work / "heavy.csv"
    code, _ = invoke("score", *heavy, "--out", out)
    assert code == 0
    scores = _scores(out)
    assert len(scores) == 6 and max(scores.values()) < 2.5, scores
    clean = work / "clean.csv"
    assert invoke("score", work / "clean", "--out", clean)[0] == 0
    assert min(_scores(clean).values()) >= 3.5


def test_sigma_25_noise_is_not_excellent(photos: tuple[Path, list[Path]]) -> None:
    from PIL import Image

    work, _ = photos
    x = np.asarray(Image.open(work / "clean" / "chelsea.png"), dtype=np.float32) / 255.0
    y = x + np.random.default_rng(0).normal(0.0, 25 / 255, x.shape).astype(np.float32)
    noisy = work / "sigma25.png"
    Image.fromarray((np.clip(y, 0, 1) * 255 + 0.5).astype(np.uint8)).save(noisy)
    out = work / "sigma25.csv"
    assert invoke("score", noisy, "--out", out)[0] == 0
    assert pd.read_csv(out)["level"][0] in ("bad", "poor", "fair")
