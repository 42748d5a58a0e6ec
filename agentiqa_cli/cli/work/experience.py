"""`experience build`'s work: the pool built through the one batch path (scipy and the
distortion library load with it), then shown as `experience show` shows it."""

from __future__ import annotations

import asyncio
from pathlib import Path

import typer

from agentiqa_cli.batch import BatchSummary, Process
from agentiqa_cli.cli import render as ui
from agentiqa_cli.cli.options import Common, tool_list
from agentiqa_cli.cli.session import with_runtime
from agentiqa_cli.cli.work import pool_show
from agentiqa_cli.errors import ConfigError
from agentiqa_cli.experience.build import MODES, build_pool
from agentiqa_cli.experience.pool import Pool
from agentiqa_cli.gate import EXIT_INPUT
from agentiqa_cli.imaging.discover import Job
from agentiqa_cli.io.trace import TraceWriter
from agentiqa_cli.records import CATEGORIES, Mode
from agentiqa_cli.runtime import Runtime


def build(
    data: Path,
    opts: Common,
    out: Path,
    tools: str | None,
    mode: str,
    categories: str | None,
    size: int,
    seed: int,
    recursive: bool,
    force: bool,
    layout: str | None,
    coupled: bool,
    json_out: bool,
) -> None:
    modes: list[Mode] = list(MODES) if mode.upper() == "BOTH" else [mode.upper()]  # type: ignore[list-item]
    if any(m not in MODES for m in modes):
        raise ConfigError(f"--mode must be NR, FR or both, got {mode!r}")
    cats = tool_list(categories) or list(CATEGORIES)
    unknown = [c for c in cats if c not in CATEGORIES]
    if unknown:
        raise ConfigError(f"unknown categories {unknown}; known: {', '.join(CATEGORIES)}")
    settings = opts.settings(recursive=recursive or None)
    skipped: list[str] = []
    measured = [0]

    def progress(name: str, status: str) -> None:
        if status != "ok":  # an input that failed: an error, said even with -q
            ui.fail(f"{name}: {status} (skipped)")
            skipped.append(name)
        else:
            measured[0] += 1
            ui.note(f"measured {name} ({measured[0]})")

    notes: list[str] = []

    async def main(rt: Runtime) -> Pool:
        async def run(jobs: list[Job], process: Process) -> BatchSummary:
            """The folder's images through the one batch path (decoding, limits, errors)."""
            return await rt.run(
                jobs, process, command="experience build", trace=TraceWriter(None),
                on_result=lambda r: progress(r.image, r.error if r.status == "error" else "ok"),
            )  # fmt: skip

        return await build_pool(
            data, out, cards=rt.cards, runner=rt.runner, run=run, modes=modes,
            tools=tool_list(tools), learned_tools=settings.learned_tools, categories=cats,
            size=size, seed=seed, calibration=rt.calibration_digest(),
            recursive=settings.recursive, max_pixels=settings.max_pixels, layout=layout,
            on_image=progress, notes=notes, coupled=coupled, force=force,
        )  # fmt: skip

    pool = asyncio.run(with_runtime(settings, main))
    for n in notes:
        ui.note(n)
    pool_show.show(pool, json_out)
    if skipped:  # the pool is written without them; some inputs failed: exit 3
        raise typer.Exit(EXIT_INPUT)
