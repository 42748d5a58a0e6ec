"""`agentiqa eval-bench mcq`'s run: multiple-choice accuracy per track, the CSV and table."""

from __future__ import annotations

from pathlib import Path

from rich.table import Table

from agentiqa_cli.bench import mcq, runs
from agentiqa_cli.bench.mcq import MCQReport
from agentiqa_cli.bench.runs import Bench
from agentiqa_cli.cli import render as ui
from agentiqa_cli.cli.options import Common
from agentiqa_cli.cli.session import note_backend
from agentiqa_cli.cli.work.bench_run import fmt, inputs, run_bench
from agentiqa_cli.config import redact_url
from agentiqa_cli.errors import ConfigError
from agentiqa_cli.io.guard import check_out_dir


def run(
    opts: Common,
    questions: Path | None,
    example: Path | None,
    out_dir: Path,
    force: bool,
    whole_agent: bool,
) -> None:
    if example is not None:
        path = mcq.make_example_mcq(example)
        ui.out.print(f"example questions → {path}", highlight=False)
        return
    if questions is None:
        raise ConfigError("give a questions JSONL file (or --write-example DIR)")
    settings = opts.settings()
    qs = mcq.load_mcq(questions)
    check_out_dir(out_dir, ("trace.jsonl", "answers.csv"), inputs(questions, qs), force=force)
    out_dir.mkdir(parents=True, exist_ok=True)

    async def main(b: Bench) -> MCQReport:
        note_backend(b.rt)
        return await runs.run_mcq(b, qs, whole_agent)

    report = run_bench(settings, out_dir / "trace.jsonl", len(qs), "eval-bench mcq", main,
                       command="eval-bench mcq")  # fmt: skip
    mcq.write_mcq_csv(report, out_dir / "answers.csv")
    t = Table(
        title=f"{questions.name}: {report.n} questions, backend {redact_url(settings.vlm)}",
        title_justify="left",
    )
    for col in ("track", "n", "correct", "accuracy"):
        t.add_column(col, justify="left" if col == "track" else "right")
    for tr in report.tracks:
        t.add_row(tr.track, str(tr.n), str(tr.correct), fmt(tr.accuracy))
    t.add_row("overall (mean of tracks)", str(report.n), str(report.correct), fmt(report.overall))
    ui.out.print(t)
    ui.out.print(f"{report.failed} unanswered → {out_dir / 'answers.csv'}", highlight=False)
