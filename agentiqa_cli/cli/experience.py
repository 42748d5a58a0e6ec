"""`experience build` and `experience show`: the pool that learns which tool to trust (the
flags here; the pool is built by ``cli/work/experience.py``, shown by ``pool_show.py``)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from agentiqa_cli.cli import work
from agentiqa_cli.cli.app import experience_app
from agentiqa_cli.cli.options import (
    EXIT_CODES_HELP,
    Common,
    Force,
    JsonOut,
    Recursive,
    shared,
)


@experience_app.command(epilog=EXIT_CODES_HELP)
@shared("setup", "run")
def build(
    data: Annotated[
        Path,
        typer.Argument(
            help="Folder of your own clean images, or a MOS table (CSV with image, mos, "
            "distortion[, reference]; or an eval-bench mos layout, see --layout).",
            show_default=False,
        ),
    ],
    opts: Common,
    out: Annotated[Path, typer.Option("--out", "-o", help="The pool file to write.")] = Path(
        "experience.db"
    ),
    tools: Annotated[
        str | None,
        typer.Option(
            "--tools",
            "-t",
            help="Comma-separated candidate tools. Default: those the agent selects from.",
        ),
    ] = None,
    mode: Annotated[
        str, typer.Option("--mode", help="NR, FR or both: the reference modes to learn.")
    ] = "NR",
    categories: Annotated[
        str | None,
        typer.Option("--categories", help="Comma-separated distortion categories (default all)."),
    ] = None,
    size: Annotated[
        int, typer.Option("--size", min=64, help="Long side the images are resized to.")
    ] = 384,
    seed: Annotated[int, typer.Option("--seed", help="Seed of the synthetic distortions.")] = 0,
    recursive: Recursive = False,
    force: Force = False,
    layout: Annotated[
        str | None,
        typer.Option(
            "--layout",
            help="DATA is a MOS dataset of this eval-bench mos layout (csv, kadid10k, ...).",
        ),
    ] = None,
    coupled: Annotated[
        bool,
        typer.Option(
            "--coupled",
            help="Also distort with every pair of categories together: keys for degradation "
            "sets of two (slower: one more series per pair).",
        ),
    ] = False,
    json_out: JsonOut = False,
) -> None:
    """Learn which tool to trust per distortion: synthetic levels of your images, four metrics
    vote per tool, a Bradley-Terry-Davidson ranking with a Wald test per category."""
    work.experience.build(data, opts, out, tools, mode, categories, size, seed, recursive, force,
                          layout, coupled, json_out)  # fmt: skip


@experience_app.command(epilog=EXIT_CODES_HELP)
def show(
    pool: Annotated[Path, typer.Argument(help="The pool file.", show_default=False)],
    json_out: JsonOut = False,
) -> None:
    """The rankings per (mode, degradation set): θ, d and SE of the top two, significance,
    pattern profiles and the insight text `select` is shown."""
    work.pool_show.show_file(pool, json_out)
