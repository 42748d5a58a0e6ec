"""`agentiqa fix`'s run (the checks and fixes load scipy.ndimage and scikit-image) and
`assess --fix`'s agent."""

from __future__ import annotations

import asyncio
import dataclasses
from pathlib import Path
from typing import TYPE_CHECKING, cast

import typer

from agentiqa_cli.batch import BatchSummary
from agentiqa_cli.cli import render as ui
from agentiqa_cli.cli.options import Common, deprecated
from agentiqa_cli.cli.session import note_backend, run_images, say_notes, with_runtime
from agentiqa_cli.errors import ConfigError
from agentiqa_cli.gate import EXIT_INPUT
from agentiqa_cli.imperfect import apply, output
from agentiqa_cli.imperfect.apply import FixingAgent
from agentiqa_cli.imperfect.records import FIX_COLUMNS, FixMode, fix_cells
from agentiqa_cli.records import Result
from agentiqa_cli.runtime import Runtime

if TYPE_CHECKING:  # `fix` runs no agent; `assess --fix` has loaded it
    from agentiqa_cli.agent.pipeline import Agent


def fixing_agent(agent: Agent, mode: FixMode) -> FixingAgent:
    """``assess --fix``'s checks (and fixes) around ``agent``."""
    return FixingAgent(agent, mode)


def run(
    paths: list[str],
    opts: Common,
    out_dir: Path | None,
    check: bool,
    image_format: str | None,
    tolerance: float | None,
    query: str | None,
    csv: Path | None,
    json_out: bool,
) -> None:
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
