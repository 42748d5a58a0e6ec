"""MOS benchmark report over methods' predictions, its CSV and plot."""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from agentiqa_cli.bench.datasets import load_dataset
from agentiqa_cli.bench.methods import Item
from agentiqa_cli.bench.mos import report_from_predictions, write_mos_csv, write_predictions_csv
from agentiqa_cli.bench.plot import plot_scatter


def _gray(path: Path, value: int) -> None:
    Image.new("RGB", (24, 24), (value, value, value)).save(path)


@pytest.fixture
def dataset_csv(tmp_path: Path) -> Path:
    rows = ["image,mos,reference,distortion"]
    _gray(tmp_path / "ref.png", 128)
    for k in range(12):
        _gray(tmp_path / f"d{k}.png", 20 * k)
        rows.append(f"d{k}.png,{1 + k / 3:.3f},ref.png,{'blur' if k % 2 else 'noise'}")
    (tmp_path / "ds.csv").write_text("\n".join(rows) + "\n")
    return tmp_path / "ds.csv"


def test_evaluate_mos_reports_each_method_and_group(dataset_csv: Path, tmp_path: Path) -> None:
    ds = load_dataset(dataset_csv)

    def brightness(items: list[Item]) -> list[float | None]:
        return [float(np.asarray(Image.open(i.image)).mean()) for i in items]

    def flaky(items: list[Item]) -> list[float | None]:
        return [None if k % 4 == 0 else -float(k) for k, _ in enumerate(items)]

    items = [i.item() for i in ds.items]
    preds = {"bright": brightness(items), "flaky": flaky(items)}
    report = report_from_predictions(ds, preds, bootstrap=100)
    assert report.methods == ["bright", "flaky"]
    assert {(r.method, r.group) for r in report.rows} == {
        (m, g) for m in ("bright", "flaky") for g in ("overall", "blur", "noise")
    }
    bright = report.row("bright")
    assert bright.n == 12 and bright.failed == 0 and bright.srcc == pytest.approx(1.0)
    assert bright.plcc is not None and bright.plcc > 0.99
    flaky_all = report.row("flaky")
    assert (flaky_all.n, flaky_all.failed) == (9, 3) and flaky_all.srcc == pytest.approx(-1.0)
    assert report.row("flaky", "noise").failed == 3  # rows 0, 4, 8 are all "noise"

    out = tmp_path / "summary.csv"
    write_mos_csv(report, out)
    with open(out) as f:
        rows = list(csv.DictReader(f))
    assert len(rows) == 6 and rows[0]["method"] == "bright" and float(rows[0]["srcc"]) == 1.0
    preds = tmp_path / "preds.csv"
    write_predictions_csv(report, preds)
    with open(preds) as f:
        prow = list(csv.DictReader(f))
    assert len(prow) == 12 and prow[0]["flaky"] == "" and prow[1]["flaky"] == "-1.0000"

    png = plot_scatter(report, tmp_path / "scatter.png")
    with Image.open(png) as im:
        assert im.format == "PNG" and im.size[0] > 400
