"""`agentiqa fix`: imperfection checks and fixes before assessment (V-QPP-Bench); the flags
here, the run in ``cli/work/fix.py`` (the checks and fixes load scipy and scikit-image)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from agentiqa_cli.cli import work
from agentiqa_cli.cli.app import app
from agentiqa_cli.cli.options import (
    EXIT_CODES_HELP,
    Common,
    JsonOut,
    Paths,
    deprecated_option,
    out_dir_option,
    shared,
)


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
    work.fix.run(paths, opts, out_dir, check, image_format, tolerance, query, csv, json_out)
