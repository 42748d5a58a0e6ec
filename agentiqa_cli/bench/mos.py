"""MOS benchmark: run each method over a dataset and report SRCC/KRCC/PLCC/RMSE per
method, overall and per distortion type (AgenticIQA Table 2 reports SRCC and PLCC)."""

from __future__ import annotations

import csv
from collections.abc import Mapping
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from agentiqa_cli.bench.datasets import MosDataset
from agentiqa_cli.bench.metrics import Correlation, FitKind, grouped
from agentiqa_cli.io.guard import whole_file
from agentiqa_cli.io.results import safe_row


class MosRow(BaseModel):
    """One method on one group (``overall`` or a distortion type)."""

    model_config = ConfigDict(extra="forbid")

    method: str
    group: str
    n: int  # images scored
    failed: int  # images the method returned no score for
    srcc: float | None = None
    krcc: float | None = None
    plcc: float | None = None
    rmse: float | None = None
    fit: FitKind = "none"
    params: list[float] | None = None
    srcc_low: float | None = None
    srcc_high: float | None = None


class MosReport(BaseModel):
    model_config = ConfigDict(extra="forbid")

    dataset: str
    layout: str
    mos_range: tuple[float, float] | None = None
    methods: list[str]
    rows: list[MosRow]
    images: list[str]
    references: list[str | None]
    distortions: list[str | None]
    mos: list[float]
    predictions: dict[str, list[float | None]] = Field(default_factory=dict)

    def row(self, method: str, group: str = "overall") -> MosRow:
        for r in self.rows:
            if r.method == method and r.group == group:
                return r
        raise KeyError((method, group))


def report_from_predictions(
    dataset: MosDataset,
    predictions: Mapping[str, list[float | None]],
    *,
    bootstrap: int = 1000,
    seed: int = 0,
) -> MosReport:
    """The report for predictions already made (one list per method, in dataset order)."""
    mos = [i.mos for i in dataset.items]
    groups = [i.distortion for i in dataset.items]
    rows = []
    for method, pred in predictions.items():
        if len(pred) != len(mos):
            raise ValueError(f"method {method} returned {len(pred)} scores for {len(mos)} images")
        stats: dict[str, Correlation] = grouped(pred, mos, groups, bootstrap=bootstrap, seed=seed)
        for group, c in stats.items():
            total = len(mos) if group == "overall" else sum(g == group for g in groups)
            rows.append(MosRow(method=method, group=group, failed=total - c.n, **c.model_dump()))
    return MosReport(
        dataset=dataset.name,
        layout=dataset.layout,
        mos_range=dataset.mos_range,
        methods=list(predictions),
        rows=rows,
        images=[str(i.image) for i in dataset.items],
        references=[str(i.reference) if i.reference else None for i in dataset.items],
        distortions=groups,
        mos=mos,
        predictions={k: list(v) for k, v in predictions.items()},
    )


def _cell(v: float | None) -> str:
    return "" if v is None else f"{v:.4f}"


def write_mos_csv(report: MosReport, path: Path) -> None:
    """One row per method × group: the summary table."""
    cols = [
        "method",
        "group",
        "n",
        "failed",
        "srcc",
        "krcc",
        "plcc",
        "rmse",
        "fit",
        "srcc_low",
        "srcc_high",
    ]
    with whole_file(path, "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(cols)
        for r in report.rows:
            w.writerow(
                [r.method, r.group, r.n, r.failed, _cell(r.srcc), _cell(r.krcc), _cell(r.plcc),
                 _cell(r.rmse), r.fit, _cell(r.srcc_low), _cell(r.srcc_high)]
            )  # fmt: skip


def write_predictions_csv(report: MosReport, path: Path) -> None:
    """One row per image: MOS and each method's prediction (empty = failed)."""
    with whole_file(path, "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(["image", "reference", "distortion", "mos", *report.methods])
        for k, image in enumerate(report.images):
            preds = [_cell(report.predictions[m][k]) for m in report.methods]
            w.writerow(
                safe_row(
                    [
                        image,
                        report.references[k] or "",
                        report.distortions[k] or "",
                        report.mos[k],
                        *preds,
                    ]
                )
            )
