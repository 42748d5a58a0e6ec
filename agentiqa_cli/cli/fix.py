"""`agentiqa fix`: imperfection checks and fixes before assessment (V-QPP-Bench)."""

from __future__ import annotations

import asyncio
import dataclasses
from pathlib import Path
from typing import Annotated

import typer

from agentiqa_cli.batch import BatchSummary
from agentiqa_cli.cli import render as ui
from agentiqa_cli.cli.app import app
from agentiqa_cli.cli.options import EXIT_CODES_HELP, Common, JsonOut, Paths, shared
from agentiqa_cli.cli.run import _with_runtime, note_backend, say_notes
from agentiqa_cli.errors import ConfigError
from agentiqa_cli.gate import EXIT_INPUT
from agentiqa_cli.runtime import Runtime


@app.command(epilog=EXIT_CODES_HELP)
@shared("vlm", "setup", "run")
def fix(
    paths: Paths,
    opts: Common,
    out: Annotated[
        Path,
        typer.Option(
            "--out",
            "-o",
            help="Folder for the fixed images (<stem>-<sha8>.png) and fixes.csv; "
            "an input file is never overwritten.",
        ),
    ],
    query: Annotated[
        str | None,
        typer.Option("--query", "-Q", help="What the image is for (the fix role reads it)."),
    ] = None,
    csv: Annotated[
        Path | None,
        typer.Option("--csv", help="The operations CSV (default: OUT/fixes.csv)."),
    ] = None,
    trace: Annotated[
        Path | None, typer.Option("--trace", help="JSONL trace (default: next to the CSV).")
    ] = None,
    resume: Annotated[
        bool, typer.Option("--resume", help="Skip images already in the CSV; append the rest.")
    ] = False,
    recursive: Annotated[
        bool, typer.Option("--recursive", "-R", help="Descend into sub-folders.")
    ] = False,
    json_out: JsonOut = False,
) -> None:
    """Find imperfections (rotation, flip, exposure, blur, noise, collage, overlay, watermark,
    photo of a screen, borders) and write fixed images: rotate, flip, lum, deblur, denoise,
    crop, fill. Every operation is in the CSV and the trace; unfixed images are not written."""
    # start-up time: the fixes load scikit-image and scipy
    from agentiqa_cli.imperfect.apply import FIX_COLUMNS, Fixer, fix_cells

    if out.exists() and not out.is_dir():
        raise ConfigError(f"--out {out}: not a folder")
    opts = dataclasses.replace(
        opts, out=csv or out / "fixes.csv", trace=trace, resume=resume, recursive=recursive
    )
    settings = opts.settings(query=query)

    async def main(rt: Runtime) -> BatchSummary:
        note_backend(rt)
        jobs = rt.jobs(paths, None, opts.outputs())  # CSV and trace checked: exit 2 first
        asker = await rt.asker()
        say_notes(rt)
        fixer = Fixer(asker, rt.settings.query, out, [j.image for j in jobs])
        reporter = ui.Reporter(len(jobs), "fix")
        with (
            rt.outputs(opts.out, opts.trace, opts.resume, "fix", None, FIX_COLUMNS, fix_cells)
            as (writer, tracer),
            reporter.running(),
        ):  # fmt: skip
            return await rt.run(
                jobs,
                fixer,
                command="fix",
                trace=tracer,
                writer=writer,
                on_result=lambda r: reporter.advance(
                    r.image, r.status, ";".join(r.fix.operations) if r.fix else r.error
                ),
                on_skip=lambda j: reporter.advance(j.name, "skipped"),
            )

    summary = asyncio.run(_with_runtime(settings, main))
    results = summary.results
    errors = sum(r.status == "error" for r in results)
    written = sum(bool(r.fix and r.fix.output) for r in results)
    if json_out:
        ui.print_json({"results": [r.model_dump(mode="json") for r in results],
                       "summary": {"processed": len(results) - errors, "errors": errors,
                                   "written": written, "csv": str(opts.out)}})  # fmt: skip
    else:
        if results:
            ui.out.print(ui.fix_table(results, "agentiqa fix"))
        ui.out.print(
            f"{len(results) - errors} processed, {summary.skipped} skipped (resume), {errors} "
            f"errors, {written} fixed image(s) in {out} → {opts.out}",
            highlight=False,
        )
    raise typer.Exit(EXIT_INPUT if errors else 0)
