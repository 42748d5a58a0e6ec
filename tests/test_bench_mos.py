"""MOS benchmark over methods, its CSV and plot, and single-tool methods."""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from agentiqa_cli.bench import methods as methods_mod
from agentiqa_cli.bench.datasets import load_dataset
from agentiqa_cli.bench.methods import Item, tool_method
from agentiqa_cli.bench.mos import evaluate_mos, write_mos_csv, write_predictions_csv
from agentiqa_cli.bench.plot import plot_scatter
from agentiqa_cli.imaging.load import LoadedImage
from agentiqa_cli.records import ToolScore
from agentiqa_cli.tools.cards import ToolCard


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

    report = evaluate_mos(ds, {"bright": brightness, "flaky": flaky}, bootstrap=100)
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


class FakeRunner:
    """Stands in for ToolRunner: raw = mean pixel value (× reference mean for FR)."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, str | None]] = []

    def run(self, card: ToolCard, image: LoadedImage, ref: LoadedImage | None = None) -> ToolScore:
        self.calls.append((image.path.name, ref.path.name if ref else None))
        if card.mode == "FR" and ref is None:
            return ToolScore(tool=card.name, error="needs a reference")
        raw = float(image.pixels.mean()) * (float(ref.pixels.mean()) if ref else 1.0)
        return ToolScore(tool=card.name, raw=raw, norm=card.normalize(raw))


def _card(name: str, mode: str) -> ToolCard:
    return ToolCard.model_validate(
        dict(name=name, backend="pyiqa", metric=name, mode=mode, lower_better=False,
             raw_range=(0.0, 1.0), description="a test tool card", weights=False, licence="MIT")
    )  # fmt: skip


def test_tool_method_decodes_each_file_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name, v in (("r1", 255), ("r2", 128), ("a", 64), ("b", 128), ("c", 255)):
        _gray(tmp_path / f"{name}.png", v)
    (tmp_path / "broken.png").write_bytes(b"not an image")
    decoded: list[str] = []
    real = methods_mod.load_image
    monkeypatch.setattr(methods_mod, "load_image", lambda p: decoded.append(p.name) or real(p))
    items = [
        Item(tmp_path / "a.png", tmp_path / "r1.png"),
        Item(tmp_path / "b.png", tmp_path / "r2.png"),
        Item(tmp_path / "broken.png", tmp_path / "r1.png"),
        Item(tmp_path / "c.png", tmp_path / "r1.png"),
    ]
    runner = FakeRunner()
    fr = tool_method(runner, _card("fr_tool", "FR"), raw=True)  # type: ignore[arg-type]
    out = fr(items)
    assert out[2] is None
    assert out[0] == pytest.approx(64 / 255) and out[1] == pytest.approx((128 / 255) ** 2)
    assert out[3] == pytest.approx(1.0)
    assert sorted(decoded) == sorted(["r1.png", "r2.png", "a.png", "b.png", "broken.png", "c.png"])

    decoded.clear()
    ticks: list[int] = []
    nr = tool_method(runner, _card("nr_tool", "NR"), on_item=lambda: ticks.append(1))  # type: ignore[arg-type]
    norm = nr(items)
    assert "r1.png" not in decoded and "r2.png" not in decoded  # NR tools never decode refs
    assert norm[0] == pytest.approx(1 + 4 * 64 / 255) and len(ticks) == 4
