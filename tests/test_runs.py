"""eval-bench measures what users run: the same Runtime, decoding, limits and fusion."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy.ndimage import gaussian_filter

import agentiqa_cli.batch as batch_mod
from agentiqa_cli.bench.methods import Item
from agentiqa_cli.bench.runs import Bench
from agentiqa_cli.config import Settings
from agentiqa_cli.io.trace import TraceWriter
from agentiqa_cli.wiring import build_runtime
from tests.conftest import natural_like, save_rgb
from tests.test_cli_score import invoke


@pytest.fixture
def dataset(tmp_path: Path) -> Path:
    """Six images of rising blur and one too large for --max-pixels 20000, with MOS."""
    d = tmp_path / "ds"
    rows = ["image,mos"]
    base = natural_like(96, 128, seed=3)
    for k in range(6):
        img = gaussian_filter(base, sigma=(0.6 * k, 0.6 * k, 0))
        save_rgb(d / f"b{k}.png", img)
        rows.append(f"b{k}.png,{5 - 0.7 * k:.2f}")
    save_rgb(d / "big.png", natural_like(160, 160, seed=4))  # 25,600 pixels
    rows.append("big.png,3.0")
    (d / "mos.csv").write_text("\n".join(rows) + "\n")
    return d


def _scores(args: list[object]) -> dict[str, float | None]:
    code, out = invoke(*args, "--json", "-q")
    assert code in (0, 3), out
    rows = json.loads(out)["results"]
    return {Path(r["image"]).name: r["score"] for r in rows}


def test_eval_bench_scores_equal_score_and_assess(dataset: Path, tmp_path: Path) -> None:
    limit = ["--max-pixels", "20000"]
    code, out = invoke("eval-bench", "mos", dataset / "mos.csv", "--tools", "sharpness,noise",
                       "--out-dir", tmp_path / "eval", *limit, "-q")  # fmt: skip
    assert code == 0, out
    preds = pd.read_csv(tmp_path / "eval" / "predictions.csv")
    preds["name"] = preds["image"].map(lambda p: Path(p).name)
    preds = preds.set_index("name")
    images = sorted(p for p in dataset.glob("*.png"))
    for method, args in (
        ("sharpness", ["score", *images, "-t", "sharpness"]),
        ("noise", ["score", *images, "-t", "noise"]),
        ("assess", ["assess", *images]),
    ):
        got = _scores([*args, "-o", tmp_path / f"{method}.csv", *limit])
        assert got["big.png"] is None  # refused by the pixel limit, on both paths
        assert np.isnan(preds.loc["big.png", method])
        for name, value in got.items():
            if value is not None:
                # predictions.csv keeps 4 decimals
                assert preds.loc[name, method] == pytest.approx(value, abs=5.1e-5), (method, name)
        assert sum(v is not None for v in got.values()) == 6


def test_bench_decodes_each_reference_once_and_nr_none(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    refs = [save_rgb(tmp_path / f"r{k}.png", natural_like(48, 64, seed=k)) for k in range(2)]
    items = []
    for k in range(6):
        img = save_rgb(tmp_path / f"d{k}.png", natural_like(48, 64, seed=k % 2) * 0.9)
        items.append(Item(image=img, reference=refs[k % 2], key=f"d{k}"))
    decoded: list[str] = []
    real = batch_mod.load_image

    def spy(path: Path, max_pixels: int) -> object:
        decoded.append(path.name)
        return real(path, max_pixels)

    monkeypatch.setattr(batch_mod, "load_image", spy)

    async def go() -> dict[str, list[float | None]]:
        async with build_runtime(Settings(concurrency=2)) as rt:
            bench = Bench(rt, TraceWriter(None))
            cards = rt.cards.resolve(["psnr", "sharpness"])
            return await bench.methods(items, cards, assess=False)

    preds = asyncio.run(go())
    assert all(v is not None for v in preds["psnr"] + preds["sharpness"])
    assert decoded.count("r0.png") == 1 and decoded.count("r1.png") == 1  # FR: once each
    assert sum(n.startswith("d") for n in decoded) == 12  # each image once per method
