"""`agentiqa fix`: imperfection checks and fixes before assessment (V-QPP-Bench)."""

from __future__ import annotations

import asyncio
import dataclasses
import functools
from pathlib import Path
from typing import Annotated, cast

import typer

from agentiqa_cli.batch import BatchSummary
from agentiqa_cli.cli import render as ui
from agentiqa_cli.cli.app import app
from agentiqa_cli.cli.options import EXIT_CODES_HELP, Common, JsonOut, Paths, shared
from agentiqa_cli.cli.run import _with_runtime, note_backend, say_notes
from agentiqa_cli.errors import ConfigError
from agentiqa_cli.gate import EXIT_INPUT
from agentiqa_cli.io.trace import TraceWriter
from agentiqa_cli.records import Result
from agentiqa_cli.runtime import Runtime


@app.command(epilog=EXIT_CODES_HELP)
@shared("vlm", "setup", "run")
def fix(
    paths: Paths,
    opts: Common,
    out: Annotated[
        Path | None,
        typer.Option(
            "--out",
            "-o",
            help="Folder for the fixed images (<stem>-<sha8>.<ext>) and fixes.csv; an input "
            "file is never overwritten. Needed unless --check.",
        ),
    ] = None,
    check: Annotated[
        bool,
        typer.Option(
            "--check",
            help="Only look: print what would be fixed per image (findings, operations, "
            "score before → after, kept or refused); write no image, CSV or trace.",
        ),
    ] = False,
    image_format: Annotated[
        str | None,
        typer.Option(
            "--format",
            help="png | jpeg | webp for every fixed image. Default: the input's own class "
            "(JPEG in → JPEG q95 out, WebP → WebP, anything else → PNG).",
        ),
    ] = None,
    tolerance: Annotated[
        float | None,
        typer.Option(
            "--tolerance",
            min=0.0,
            help="Keep a fix when the fixed image scores at least the input's score minus "
            "this (1-5 scale; default 0: never lower).",
        ),
    ] = None,
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
    """Find imperfections and write fixed copies that score no worse than their inputs.

    The rules backend (the default, no model) finds borders, 2×2 collages, pasted overlays,
    photos of a screen, exposure, blur and noise. Rotation, flip and watermarks need a VLM
    (--vlm): without one they are never reported. Fixes: rotate, flip, lum, deblur,
    denoise, crop, fill.

    A fix is kept only if the fixed image, as written, scores no lower than the input by
    `score`'s default no-reference tools and fusion (--tolerance); a refused fix writes
    nothing. Every image's findings, operations, scores and verdict are in OUT/fixes.csv and
    the trace; --check prints them and writes nothing."""
    # start-up time: the fixes load scikit-image and scipy
    from agentiqa_cli.imperfect.apply import FIX_COLUMNS, TOLERANCE, Fixer, fix_cells
    from agentiqa_cli.imperfect.output import IMAGE_FORMATS, ImageFormat

    chosen = {"jpg": "jpeg"}.get(image_format or "", image_format)
    if chosen is not None and chosen not in IMAGE_FORMATS:
        raise ConfigError(f"--format must be one of {', '.join(IMAGE_FORMATS)}, got {chosen!r}")
    if check:
        given = [f for f, on in (("--csv", csv), ("--trace", trace), ("--resume", resume)) if on]
        if given:
            raise ConfigError(f"--check writes nothing: {', '.join(given)} needs a run that writes")
    elif out is None:
        raise ConfigError("fix needs --out DIR for the fixed images (or --check to only look)")
    elif out.exists() and not out.is_dir():
        raise ConfigError(f"--out {out}: not a folder")
    out_dir = None if check else out
    csv_path = None if out_dir is None else csv or out_dir / "fixes.csv"
    if csv_path is not None:
        opts = dataclasses.replace(opts, out=csv_path, trace=trace, resume=resume)
    opts = dataclasses.replace(opts, recursive=recursive)
    settings = opts.settings(query=query)

    async def main(rt: Runtime) -> BatchSummary:
        note_backend(rt)
        # CSV and trace checked: exit 2 first
        jobs = rt.jobs(paths, None, None if csv_path is None else opts.outputs())
        asker = await rt.asker()
        say_notes(rt)
        cards = rt.score_cards(has_reference=False)  # the tools `score` runs by default
        for problem in rt.tool_problems(cards):  # every fix would be refused: say why once
            ui.warn(problem)
        fixer = Fixer(
            asker, rt.settings.query, out_dir, [j.image for j in jobs], rt.scorer(cards),
            tolerance=TOLERANCE if tolerance is None else tolerance,
            image_format=cast("ImageFormat | None", chosen), max_pixels=rt.settings.max_pixels,
        )  # fmt: skip
        reporter = ui.Reporter(len(jobs), "fix --check" if check else "fix")
        run = functools.partial(
            rt.run, jobs, fixer, command="fix",
            on_result=lambda r: reporter.advance(r.image, r.status, _detail(r)),
            on_skip=lambda j: reporter.advance(j.name, "skipped"),
        )  # fmt: skip
        if csv_path is None:
            with reporter.running():
                return await run(trace=TraceWriter(None))
        with (
            rt.outputs(csv_path, opts.trace, opts.resume, "fix", None, FIX_COLUMNS, fix_cells)
            as (writer, tracer),
            reporter.running(),
        ):  # fmt: skip
            return await run(trace=tracer, writer=writer)

    summary = asyncio.run(_with_runtime(settings, main))
    results = summary.results
    errors = sum(r.status == "error" for r in results)
    written = sum(bool(r.fix and r.fix.output) for r in results)
    kept = sum(bool(r.fix and r.fix.kept) for r in results)
    refused = sum(bool(r.fix and r.fix.kept is False) for r in results)
    if json_out:
        ui.print_json({"results": [r.model_dump(mode="json") for r in results],
                       "summary": {"processed": len(results) - errors, "errors": errors,
                                   "kept": kept, "refused": refused, "written": written,
                                   "check": check,
                                   "csv": None if csv_path is None else str(csv_path)}})  # fmt: skip
    else:
        if results:
            title = "agentiqa fix --check (nothing written)" if check else "agentiqa fix"
            ui.out.print(ui.fix_table(results, title, check=check))
        if check:
            line = (f"{len(results) - errors} processed, {errors} errors: {kept} fix(es) would "
                    f"be kept, {refused} refused (the score would drop); nothing written")  # fmt: skip
        else:
            line = (f"{len(results) - errors} processed, {summary.skipped} skipped (resume), "
                    f"{errors} errors, {kept} fix(es) kept, {refused} refused (the score would "
                    f"drop), {written} fixed image(s) in {out} → {csv_path}")  # fmt: skip
        ui.out.print(line, highlight=False)
    raise typer.Exit(EXIT_INPUT if errors else 0)


def _detail(r: Result) -> str:
    if r.status == "error" or r.fix is None:
        return r.error
    ops = ";".join(r.fix.operations)
    return {None: ops, True: f"{ops} kept", False: f"{ops} refused"}[r.fix.kept]
