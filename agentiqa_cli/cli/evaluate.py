"""`evaluate`: a five-tier verdict on a whole folder (or a generator) from a few samples (the
flags here; the rounds run in ``cli/work/evaluate.py``, with the evaluation loop)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from agentiqa_cli.cli import work
from agentiqa_cli.cli.app import app
from agentiqa_cli.cli.options import (
    EXIT_CODES_HELP,
    Common,
    FusionOpt,
    LearnedToolsOpt,
    shared,
)
from agentiqa_cli.evaluate.tiers import TIER_NAMES
from agentiqa_cli.records import EVAL_N_MIN as N_MIN

EVALUATE_HELP = (
    "Gates on the verdict: --fail-under-tier T fails below tier T; --fail-mean-under X when "
    "the estimated mean is below X; --fail-under X when the 95% interval reaches below X. "
    + EXIT_CODES_HELP
)


@app.command(epilog=EVALUATE_HELP)
@shared("vlm", "output", "gate", "setup", "run")
def evaluate(
    opts: Common,
    source: Annotated[
        list[str] | None,
        typer.Argument(
            help="The collection: image files, folders or glob patterns (none with --generator).",
            show_default=False,
        ),
    ] = None,
    query: Annotated[
        str | None,
        typer.Option(
            "--query", "-Q", help="What to judge the collection on (default: overall quality)."
        ),
    ] = None,
    command: Annotated[
        str | None,
        typer.Option(
            "--generator",
            help="A command that writes one image per call, e.g. 'gen --prompt {prompt} -o {out}' "
            "({prompt}, {out}, {seed} are filled in; run without a shell).",
        ),
    ] = None,
    gen_dir: Annotated[
        Path | None,
        typer.Option("--gen-dir", help="Where generated images go (default: <out>-images/)."),
    ] = None,
    generator_timeout: Annotated[
        float, typer.Option("--generator-timeout", help="Seconds per generator call.")
    ] = 600.0,
    max_rounds: Annotated[
        int, typer.Option("--max-rounds", min=1, help="Hard maximum of rounds.")
    ] = 5,
    max_samples: Annotated[
        int, typer.Option("--max-samples", min=N_MIN, help="Hard maximum of images assessed.")
    ] = 45,
    seed: Annotated[
        int, typer.Option("--seed", help="Seed of the sampling (same seed, same samples).")
    ] = 0,
    tiers: Annotated[
        Path | None,
        typer.Option(
            "--tiers",
            help="A reference results CSV: tier cut points at its scores' 20/40/60/80% quantiles; "
            "or 'density': at the quintiles of the score density of up to 200 of the folder's "
            "images (detectors only, before round 1). Default cut points 1.5, 2.5, 3.5, 4.5.",
        ),
    ] = None,
    fail_under_tier: Annotated[
        str | None,
        typer.Option(
            "--fail-under-tier", help=f"Gate: exit 1 below this tier ({', '.join(TIER_NAMES)})."
        ),
    ] = None,
    tools: Annotated[
        str | None,
        typer.Option("--tools", "-t", help="The agent's default tools (default: the offline set)."),
    ] = None,
    fusion: FusionOpt = None,
    learned_tools: LearnedToolsOpt = None,
) -> None:
    """A verdict in five tiers on a whole folder, or a generator, from a few samples per round:
    plan a sub-aspect, sample (half random, half the hardest), assess, look, repeat."""
    work.evaluate.run(opts, source, query, command, gen_dir, generator_timeout, max_rounds,
                      max_samples, seed, tiers, fail_under_tier, tools, fusion,
                      learned_tools)  # fmt: skip
