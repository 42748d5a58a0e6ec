"""`agentiqa eval-bench mos`'s run: predictions against human opinion scores, the CSVs,
the scatter plot and the table."""

from __future__ import annotations

from pathlib import Path

from rich.table import Table

from agentiqa_cli.bench import datasets, plot, runs
from agentiqa_cli.bench.mos import MosReport, write_mos_csv, write_predictions_csv
from agentiqa_cli.bench.runs import Bench
from agentiqa_cli.cli import render as ui
from agentiqa_cli.cli.options import Common, tool_list
from agentiqa_cli.cli.session import note_backend
from agentiqa_cli.cli.work.bench_run import fmt, inputs, run_bench
from agentiqa_cli.io.guard import check_out_dir
from agentiqa_cli.tools.extras import require_extras


def run(
    dataset: Path,
    opts: Common,
    layout: str | None,
    tools: str | None,
    assess: bool,
    limit: int | None,
    sample: int | None,
    seed: int,
    bootstrap: int,
    out_dir: Path,
    force: bool,
) -> None:
    settings = opts.settings()
    data = datasets.load_dataset(dataset, layout, limit=limit, sample=sample, seed=seed)
    for n in data.notes:
        ui.note(n)
    names = tool_list(tools) or []
    check_out_dir(out_dir, ("trace.jsonl", "summary.csv", "predictions.csv", "scatter.png"),
                  inputs(data.source, data.items), force=force)  # fmt: skip
    out_dir.mkdir(parents=True, exist_ok=True)

    async def main(b: Bench) -> MosReport:
        note_backend(b.rt)
        cards = b.rt.cards.resolve(names)
        require_extras(cards)
        return await runs.run_mos(b, data, cards, assess, bootstrap=bootstrap, seed=seed)

    total = len(data.items) * (len(names) + int(assess))
    report = run_bench(settings, out_dir / "trace.jsonl", total, f"eval-bench mos ({data.name})",
                       main, command="eval-bench mos")  # fmt: skip
    write_mos_csv(report, out_dir / "summary.csv")
    write_predictions_csv(report, out_dir / "predictions.csv")
    png = plot.plot_scatter(report, out_dir / "scatter.png")
    t = Table(title=f"{data.name} ({data.layout}, {len(data.items)} images)", title_justify="left")
    for col in ("method", "group", "n", "failed", "SRCC", "KRCC", "PLCC", "RMSE"):
        t.add_column(col, justify="left" if col in ("method", "group") else "right")
    for r in report.rows:
        t.add_row(r.method, r.group, str(r.n), str(r.failed), fmt(r.srcc), fmt(r.krcc),
                  fmt(r.plcc), fmt(r.rmse))  # fmt: skip
    ui.out.print(t)
    ui.out.print(
        f"→ {out_dir / 'summary.csv'}, {out_dir / 'predictions.csv'}, {png}", highlight=False
    )
