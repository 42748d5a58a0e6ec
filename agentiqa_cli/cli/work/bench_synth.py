"""`agentiqa eval-bench synth`'s run: clean images distorted at five levels per kind, and
whether each method's score falls with the level."""

from __future__ import annotations

from pathlib import Path

from rich.table import Table

from agentiqa_cli.bench.runs import Bench, run_synth
from agentiqa_cli.bench.synth_eval import SynthReport, write_synth_csv
from agentiqa_cli.cli import render as ui
from agentiqa_cli.cli.options import Common, tool_list
from agentiqa_cli.cli.session import note_backend
from agentiqa_cli.cli.work.bench_run import fmt, run_bench
from agentiqa_cli.imaging.distort import check_kinds
from agentiqa_cli.io.guard import check_out_dir
from agentiqa_cli.tools.extras import require_extras


def run(
    clean_dir: Path,
    opts: Common,
    tools: str | None,
    assess: bool,
    kinds: str | None,
    levels: int,
    size: int,
    seed: int,
    out_dir: Path,
    force: bool,
) -> None:
    if kinds is not None:
        check_kinds(tool_list(kinds) or [])  # exit 2 before anything is written
    settings = opts.settings()
    clean = sorted(clean_dir.iterdir()) if clean_dir.is_dir() else []
    check_out_dir(out_dir, ("trace.jsonl", "synth.csv"), clean, input_dir=clean_dir, force=force)
    out_dir.mkdir(parents=True, exist_ok=True)
    names = tool_list(tools)

    async def main(b: Bench) -> SynthReport:
        note_backend(b.rt)
        cards = b.rt.cards.resolve(names) if names else b.rt.score_cards(has_reference=False)
        require_extras(cards)
        return await run_synth(b, clean_dir, out_dir, cards, assess, kinds=tool_list(kinds),
                               levels=levels, size=size, seed=seed)  # fmt: skip

    report = run_bench(settings, out_dir / "trace.jsonl", 0, "eval-bench synth", main,
                       command="eval-bench synth")  # fmt: skip
    write_synth_csv(report, out_dir / "synth.csv")
    ui.out.print(synth_table(report))
    n = report.methods[0].n if report.methods else 0
    ui.out.print(f"{n} images → {out_dir / 'synth.csv'}", highlight=False)


def synth_table(report: SynthReport) -> Table:
    kinds = sorted({k.kind for m in report.methods for k in m.kinds})
    t = Table(
        title="score falls with distortion level: -SRCC(score, level) per kind",
        title_justify="left",
    )
    t.add_column("method")
    for k in kinds:
        t.add_column(k, justify="right")
    for col in ("mean", "clean>heavy", "false alarms"):
        t.add_column(col, justify="right")
    for m in report.methods:
        per = {k.kind: k.srcc_level for k in m.kinds}
        fa = "-" if m.false_alarm_moderate is None else f"{m.false_alarm_moderate:.0%}"
        t.add_row(
            m.method,
            *(fmt(per.get(k)) for k in kinds),
            fmt(m.mean_srcc_level),
            fmt(m.rank_rate),
            fa,
        )
    return t
