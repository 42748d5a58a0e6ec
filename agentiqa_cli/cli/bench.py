"""`agentiqa eval-bench mos|mcq|synth|vqpp` and `agentiqa calibrate`: the flags and help
only. Each section's run is a module of ``cli/work/`` (imported when the command runs: the
benchmarks load scipy and the distortion library), which runs ``bench/runs.py`` through the
same Runtime as `score`/`assess` and prints the tables."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from agentiqa_cli.cli import work
from agentiqa_cli.cli.app import app, bench_app
from agentiqa_cli.cli.options import (
    Common,
    Force,
    deprecated,
    deprecated_option,
    out_dir_option,
    shared,
)
from agentiqa_cli.tools.extras import require_matplotlib

ToolsOpt = Annotated[
    str | None,
    typer.Option("--tools", "-t", help="Single tools to evaluate side by side (comma-separated)."),
]
AssessOpt = Annotated[
    bool, typer.Option("--assess/--no-assess", help="Also evaluate the full agent (`assess`).")
]
Layout = Annotated[
    str | None,
    typer.Option(
        "--layout",
        help="csv | kadid10k | tid2013 | koniq10k | spaq | agiqa3k | bid (default: detected).",
    ),
]
Limit = Annotated[int | None, typer.Option("--limit", min=1, help="Only the first N images.")]
Sample = Annotated[
    int | None, typer.Option("--sample", min=1, help="A random N images (see --seed).")
]
Seed = Annotated[int, typer.Option("--seed", help="Seed for --sample and synthetic distortions.")]
OutDir = Annotated[Path, out_dir_option("Where the report files go.")]
OldOutDir = Annotated[Path | None, deprecated_option("--out-dir", "-o")]


def _out_dir(out_dir: Path, old: Path | None) -> Path:
    """``-o DIR`` named eval-bench's folder before ``-o`` meant the results file everywhere."""
    if old is None:
        return out_dir
    deprecated("eval-bench -o DIR", "--out-dir DIR")
    return old


@bench_app.command("mos")
@shared("vlm", "setup", "run")
def mos(
    dataset: Annotated[
        Path, typer.Argument(help="A dataset file or folder with human opinion scores.")
    ],
    opts: Common,
    layout: Layout = None,
    tools: ToolsOpt = None,
    assess: AssessOpt = True,
    limit: Limit = None,
    sample: Sample = None,
    seed: Seed = 0,
    bootstrap: Annotated[
        int, typer.Option("--bootstrap", help="Bootstrap resamples for SRCC intervals.")
    ] = 0,
    out_dir: OutDir = Path("eval-mos"),
    old_out_dir: OldOutDir = None,
    force: Force = False,
) -> None:
    """SRCC, KRCC, PLCC and RMSE against MOS, overall and per distortion type; scatter plot."""
    out_dir = _out_dir(out_dir, old_out_dir)
    require_matplotlib("the scatter plot of eval-bench mos")  # exit 2 naming the extra
    work.bench_mos.run(dataset, opts, layout, tools, assess, limit, sample, seed, bootstrap,
                       out_dir, force)  # fmt: skip


@bench_app.command("mcq")
@shared("vlm", "setup", "run")
def mcq(
    opts: Common,
    questions: Annotated[
        Path | None, typer.Argument(help="Questions JSONL (AgenticIQA-Eval style).")
    ] = None,
    example: Annotated[
        Path | None,
        typer.Option(
            "--write-example", help="Write the example question set to this folder and exit."
        ),
    ] = None,
    out_dir: OutDir = Path("eval-mcq"),
    old_out_dir: OldOutDir = None,
    force: Force = False,
    whole_agent: Annotated[
        bool,
        typer.Option(
            "--whole-agent",
            help="Answer every track from the whole agent (default: each track from the "
            "component it tests, as AgenticIQA §4 evaluates them).",
        ),
    ] = False,
) -> None:
    """Multiple-choice accuracy per track (planner, executor-distortion, executor-tool, summarizer)."""
    out_dir = _out_dir(out_dir, old_out_dir)
    work.bench_mcq.run(opts, questions, example, out_dir, force, whole_agent)


@bench_app.command("synth")
@shared("vlm", "setup", "run")
def synth(
    clean_dir: Annotated[Path, typer.Argument(help="A folder of clean images.")],
    opts: Common,
    tools: ToolsOpt = None,
    assess: AssessOpt = True,
    kinds: Annotated[
        str | None, typer.Option("--kinds", help="Distortion kinds (default: all).")
    ] = None,
    levels: Annotated[int, typer.Option("--levels", min=1, max=5, help="Levels per kind.")] = 5,
    size: Annotated[
        int, typer.Option("--size", help="Resize clean images to this longer side first.")
    ] = 384,
    seed: Seed = 0,
    out_dir: OutDir = Path("eval-synth"),
    old_out_dir: OldOutDir = None,
    force: Force = False,
) -> None:
    """Distort clean images (5 levels per kind, fixed seed) and check each method's score falls."""
    out_dir = _out_dir(out_dir, old_out_dir)
    work.bench_synth.run(clean_dir, opts, tools, assess, kinds, levels, size, seed, out_dir, force)


@app.command()
@shared("setup", "run")
def calibrate(
    dataset: Annotated[
        Path, typer.Argument(help="A labelled dataset (any eval-bench mos layout).")
    ],
    opts: Common,
    tools: Annotated[str, typer.Option("--tools", "-t", help="Tools to fit (comma-separated).")],
    overlay: Annotated[
        Path,
        typer.Option(
            "--overlay", help="The calibration overlay YAML to write (read by --calibration)."
        ),
    ] = Path("calibration.yaml"),
    old_out: Annotated[Path | None, deprecated_option("--overlay", "--out", "-o")] = None,
    force: Force = False,
    layout: Layout = None,
    mos_range: Annotated[
        str | None,
        typer.Option(
            "--mos-range",
            help="LO,HI of the dataset's MOS scale (default: the layout's, or guessed).",
        ),
    ] = None,
    include_suspect: Annotated[
        bool,
        typer.Option("--include-suspect", help="Keep fits that run against the card's direction."),
    ] = False,
    limit: Limit = None,
    sample: Sample = None,
    seed: Seed = 0,
) -> None:
    """Fit each tool's five-parameter logistic to MOS and write an overlay for --calibration."""
    old = old_out
    if old is not None:
        deprecated("calibrate -o/--out", "--overlay")
        overlay = old
    work.bench_calibrate.run(dataset, opts, tools, overlay, "--overlay" if old is None else "--out",
                             force, layout, mos_range, include_suspect, limit, sample,
                             seed)  # fmt: skip


@bench_app.command("vqpp")
@shared("vlm", "setup", "run")
def vqpp(
    clean_dir: Annotated[Path, typer.Argument(help="A folder of clean images.")],
    opts: Common,
    seed: Seed = 0,
    size: Annotated[
        int, typer.Option("--size", min=64, help="Long side the clean images are resized to.")
    ] = 384,
    limit: Limit = None,
    out_dir: OutDir = Path("eval-vqpp"),
    old_out_dir: OldOutDir = None,
    force: Force = False,
    generator: Annotated[
        str,
        typer.Option(
            "--generator",
            help="paper: the paper's levels and anchor boxes; random: overlays of any size "
            "and place (pasted or blended), gains between the levels, JPEG re-saves.",
        ),
    ] = "paper",
) -> None:
    """The V-QPP-Bench benchmark: the original and ten imperfections per clean image (the
    paper's levels, fixed seed); per type tool-selection accuracy, parameter score and
    false fixes on originals, for the configured backend (rules or a VLM)."""
    out_dir = _out_dir(out_dir, old_out_dir)
    work.bench_vqpp.run(clean_dir, opts, seed, size, limit, out_dir, force, generator)
