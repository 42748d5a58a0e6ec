"""`agentiqa fix`: imperfection checks and fixes before assessment (V-QPP-Bench)."""

from __future__ import annotations

import asyncio
import dataclasses
from pathlib import Path
from typing import Annotated, cast

import typer

from agentiqa_cli.batch import BatchSummary
from agentiqa_cli.cli import render as ui
from agentiqa_cli.cli.app import app
from agentiqa_cli.cli.options import (
    EXIT_CODES_HELP,
    Common,
    JsonOut,
    Paths,
    deprecated,
    deprecated_option,
    out_dir_option,
    shared,
)
from agentiqa_cli.cli.run import run_images
from agentiqa_cli.cli.session import note_backend, say_notes, with_runtime
from agentiqa_cli.errors import ConfigError
from agentiqa_cli.gate import EXIT_INPUT
from agentiqa_cli.imperfect.records import FIX_COLUMNS, fix_cells
from agentiqa_cli.records import Result
from agentiqa_cli.runtime import Runtime


@app.command(epilog=EXIT_CODES_HELP)
@shared("vlm", "setup", "run", "output")
def fix(
    paths: Paths,
    opts: Common,
    out_dir: Annotated[
        Path | None,
        out_dir_option(
            "Folder for the fixed images (<stem>-<sha8>.<ext>); an input file is never "
            "overwritten. Needed unless --check. The results CSV (--out) defaults to "
            "OUT_DIR/fixes.csv."
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
    csv: Annotated[Path | None, deprecated_option("--out", "--csv")] = None,
    json_out: JsonOut = False,
) -> None:
    """Find imperfections and write fixed copies that score no worse than their inputs.

    The rules backend (the default, no model) finds borders, 2×2 collages, pasted overlays,
    photos of a screen, exposure, blur and noise. Rotation, flip and watermarks need a VLM
    (--vlm): without one they are never reported. Fixes: rotate, flip, lum, deblur,
    denoise, crop, fill.

    A fix is kept only if the fixed image, as written, scores no lower than the input by
    `score`'s default no-reference tools and fusion (--tolerance); a refused fix writes
    nothing. Every image's findings, operations, scores and verdict are in the results CSV
    (OUT_DIR/fixes.csv) and the trace; --check prints them and writes nothing."""
    # start-up time: the checks and fixes load scipy.ndimage and scikit-image
    from agentiqa_cli.imperfect import apply, output

    chosen = {"jpg": "jpeg"}.get(image_format or "", image_format)
    if chosen is not None and chosen not in output.IMAGE_FORMATS:
        raise ConfigError(
            f"--format must be one of {', '.join(output.IMAGE_FORMATS)}, got {chosen!r}"
        )
    opts, out_dir = _spellings(opts, out_dir, csv)
    if check:
        given = [f for f, on in (("--out", opts.explicit("out")), ("--trace", opts.trace),
                                 ("--resume", opts.resume)) if on]  # fmt: skip
        if given:
            raise ConfigError(f"--check writes nothing: {', '.join(given)} needs a run that writes")
        out_dir = None  # an old `--check -o DIR` named a folder it never wrote
    elif out_dir is None:
        raise ConfigError("fix needs --out-dir DIR for the fixed images (or --check to only look)")
    elif out_dir.exists() and not out_dir.is_dir():
        raise ConfigError(f"--out-dir {out_dir}: not a folder")
    if out_dir is not None and not opts.explicit("out"):
        opts = dataclasses.replace(opts, out=out_dir / "fixes.csv")
    settings = opts.settings(query=query)

    async def main(rt: Runtime) -> BatchSummary:
        note_backend(rt)
        # CSV and trace checked: exit 2 first
        jobs = rt.jobs(paths, None, None if check else opts.outputs())
        asker = await rt.asker()
        say_notes(rt)
        cards = rt.score_cards(has_reference=False)  # the tools `score` runs by default
        for problem in rt.tool_problems(cards):  # every fix would be refused: say why once
            ui.warn(problem)
        fixer = apply.Fixer(
            asker, rt.settings.query, out_dir, [j.image for j in jobs], rt.scorer(cards),
            tolerance=apply.TOLERANCE if tolerance is None else tolerance,
            image_format=cast("output.ImageFormat | None", chosen), max_pixels=rt.settings.max_pixels,
        )  # fmt: skip
        label = "fix --check" if check else "fix"
        return await run_images(rt, opts, "fix", jobs, fixer, label, extra_columns=FIX_COLUMNS,
                                extra=fix_cells, detail=_detail, write=not check)  # fmt: skip

    summary = asyncio.run(with_runtime(settings, main))
    results = summary.results
    errors = sum(r.status == "error" for r in results)
    written = sum(bool(r.fix and r.fix.output) for r in results)
    kept = sum(bool(r.fix and r.fix.kept) for r in results)
    refused = sum(bool(r.fix and r.fix.kept is False) for r in results)
    csv_name = None if check else opts.out_name
    if json_out:
        ui.print_json({"results": [r.model_dump(mode="json") for r in results],
                       "summary": {"processed": len(results) - errors, "errors": errors,
                                   "kept": kept, "refused": refused, "written": written,
                                   "check": check, "csv": csv_name}})  # fmt: skip
    else:
        if check:
            line = (f"{len(results) - errors} processed, {errors} errors: {kept} fix(es) would "
                    f"be kept, {refused} refused (the score would drop); nothing written")  # fmt: skip
        else:
            line = (f"{len(results) - errors} processed, {summary.skipped} skipped (resume), "
                    f"{errors} errors, {kept} fix(es) kept, {refused} refused (the score would "
                    f"drop), {written} fixed image(s) in {out_dir} → {csv_name}")  # fmt: skip
        if opts.stream is not None:  # stdout carries the rows only: the line goes to stderr
            ui.note(line)
        else:
            if results:
                title = "agentiqa fix --check (nothing written)" if check else "agentiqa fix"
                ui.out.print(ui.fix_table(results, title, check=check))
            ui.out.print(line, highlight=False)
    raise typer.Exit(EXIT_INPUT if errors else 0)


def _spellings(opts: Common, out_dir: Path | None, csv: Path | None) -> tuple[Common, Path | None]:
    """fix's old spellings, kept for one release with a note: ``-o/--out DIR`` without
    ``--out-dir`` named the images' folder, and ``--csv`` the results CSV."""
    if out_dir is None and opts.explicit("out") and not opts.to_stdout:
        deprecated("fix -o/--out DIR (the fixed images' folder)", "--out-dir DIR")
        out_dir = opts.out
        opts = dataclasses.replace(opts, given=opts.given - {"out"})
    if csv is not None:
        if opts.explicit("out"):
            raise ConfigError("--csv and --out both name the results CSV: give --out")
        deprecated("--csv", "--out")
        opts = dataclasses.replace(opts, out=csv, given=opts.given | {"out"})
    return opts, out_dir


def _detail(r: Result) -> str:
    if r.status == "error" or r.fix is None:
        return r.error
    ops = ";".join(r.fix.operations)
    return {None: ops, True: f"{ops} kept", False: f"{ops} refused"}[r.fix.kept]
