"""`agentiqa eval-bench vqpp`'s run: the V-QPP-Bench images, the backend's decisions on
them, the per-type report and table."""

from __future__ import annotations

import asyncio
from pathlib import Path

from rich.table import Table

from agentiqa_cli.bench import vqpp
from agentiqa_cli.cli import render as ui
from agentiqa_cli.cli.options import Common
from agentiqa_cli.cli.session import note_backend, say_notes, with_runtime
from agentiqa_cli.cli.work.bench_run import fmt
from agentiqa_cli.errors import ConfigError
from agentiqa_cli.imperfect.records import Operation
from agentiqa_cli.io.guard import check_out_dir
from agentiqa_cli.io.trace import TraceWriter
from agentiqa_cli.runtime import Runtime


def run(
    clean_dir: Path,
    opts: Common,
    seed: int,
    size: int,
    limit: int | None,
    out_dir: Path,
    force: bool,
    generator: str,
) -> None:
    settings = opts.settings()
    sources = sorted(p for p in clean_dir.iterdir() if p.is_file()) if clean_dir.is_dir() else []
    if not sources:
        raise ConfigError(f"{clean_dir}: not a folder of images")
    check_out_dir(out_dir, ("trace.jsonl", "vqpp.csv", "decisions.jsonl"), sources,
                  input_dir=clean_dir, force=force)  # fmt: skip
    items = vqpp.build(clean_dir, out_dir / "images", seed=seed, size=size, limit=limit,
                       generator=generator, query=settings.query)  # fmt: skip
    reporter = ui.Reporter(len(items), "eval-bench vqpp")

    async def decide(rt: Runtime) -> tuple[dict[str, list[Operation] | None], dict[str, list[str]]]:
        note_backend(rt)
        asker = await rt.asker()
        say_notes(rt)
        tracer = TraceWriter(out_dir / "trace.jsonl", header=rt.header("eval-bench vqpp"))
        try:
            with reporter.running():
                return await vqpp.decide_all(
                    rt, asker, items, out_dir / "images", tracer,
                    lambda r: reporter.advance(r.image, r.status),
                )  # fmt: skip
        finally:
            tracer.close()

    chosen, found = asyncio.run(with_runtime(settings, decide))
    rows = vqpp.report(items, chosen, found)
    vqpp.write_report(rows, out_dir / "vqpp.csv")
    vqpp.write_decisions(items, chosen, found, out_dir / "decisions.jsonl")
    t = Table(
        title=f"V-QPP ({generator} generator) on {clean_dir}: {len(items)} images, "
        f"backend {settings.vlm}",
        title_justify="left",
    )
    for col in ("type", "n", "failed", "TSA", "PS", "false fixes", "false findings"):
        t.add_column(col, justify="left" if col == "type" else "right")
    for r in rows:
        t.add_row(r.kind, str(r.n), str(r.failed), fmt(r.tsa), fmt(r.ps),
                  fmt(r.false_fix), fmt(r.false_finding))  # fmt: skip
    ui.out.print(t)
    ui.out.print(f"→ {out_dir / 'vqpp.csv'}, {out_dir / 'decisions.jsonl'}", highlight=False)
