"""`score`, `plan` and `assess`: the commands that run over images."""

from __future__ import annotations

import asyncio
import functools
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, cast

import typer

from agentiqa_cli.batch import BatchSummary, Process
from agentiqa_cli.cli import render as ui
from agentiqa_cli.cli import work
from agentiqa_cli.cli.app import app
from agentiqa_cli.cli.options import (
    EXIT_CODES_HELP,
    Common,
    EngineOpt,
    EvolveOpt,
    ExperienceOpt,
    FusionOpt,
    LearnedToolsOpt,
    Paths,
    Ref,
    shared,
    tool_list,
)
from agentiqa_cli.cli.report import ReportOpt, report_after_run
from agentiqa_cli.cli.session import note_backend, run_images, say_notes, with_runtime
from agentiqa_cli.errors import ConfigError
from agentiqa_cli.gate import evaluate_gate
from agentiqa_cli.imperfect.records import ASSESS_FIX_COLUMNS, FIX_MODES, FixMode, fix_cells
from agentiqa_cli.io.trace import NO_TRACE
from agentiqa_cli.records import Usage
from agentiqa_cli.runtime import Runtime
from agentiqa_cli.wiring import build_runtime

if TYPE_CHECKING:
    from agentiqa_cli.agent.pipeline import Agent


# -- score ---------------------------------------------------------------------------------
@app.command(epilog=EXIT_CODES_HELP)
@shared("output", "gate", "setup", "run")
def score(
    paths: Paths,
    opts: Common,
    tools: Annotated[
        str | None,
        typer.Option(
            "--tools",
            "-t",
            help="Comma-separated tool names (see `agentiqa tools list`). Default: a no-reference set that runs offline, or psnr,ssim,gmsd,detail with --ref.",
        ),
    ] = None,
    ref: Ref = None,
    fusion: FusionOpt = None,
    report: ReportOpt = None,
    engine: EngineOpt = None,
) -> None:
    """Tools only, no VLM: raw and normalized (1-5) score per tool, fused by the worst (or the mean)."""
    settings = opts.settings(fusion=fusion, tools=tool_list(tools), engine=engine)

    async def main(rt: Runtime) -> BatchSummary:
        jobs = rt.jobs(paths, ref, opts.outputs(report))  # outputs checked: exit 2 before work
        say_notes(rt)  # folders a pattern passed through but could not list
        cards = rt.score_cards(has_reference=ref is not None)
        names = [c.name for c in cards]
        for problem in rt.tool_problems(cards):  # card errors exit 2 before any output
            ui.warn(problem)
        for note in rt.fit_notes(cards):  # curves fitted on other content than this run's
            ui.warn(note)
        label = f"score ({', '.join(names)})"
        return await run_images(rt, opts, "score", jobs, rt.scorer(cards), label, names,
                                remote=functools.partial(scorer_of, tuple(names)))  # fmt: skip

    summary = asyncio.run(with_runtime(settings, main))
    report_after_run(opts.out, report)
    finish(summary, opts, "agentiqa score")


# how a Ray worker rebuilds each command's process from its own Runtime (module level, so
# they travel by reference)
async def scorer_of(tools: tuple[str, ...], rt: Runtime) -> Process:
    return rt.scorer(rt.cards.resolve(tools))


async def fixing_agent_of(fix: str, rt: Runtime) -> Process:
    return _with_fixes(await rt.agent(), fix)


def _with_fixes(agent: Agent, fix: str) -> Process:
    """``assess --fix``'s checks (and fixes) around ``agent``; the agent itself when off."""
    if fix == "off":
        return agent
    return work.fix.fixing_agent(agent, cast(FixMode, fix))


def finish(summary: BatchSummary, opts: Common, title: str) -> None:
    """The table (or JSON), the gate's verdict, and the exit code."""
    results = summary.results
    gate = evaluate_gate(results, opts.fail_under, opts.fail_mean_under)
    mean = f"{gate.mean:.3f}" if gate.mean is not None else "-"
    line = (
        f"{gate.processed} processed, {summary.skipped} skipped (resume), {gate.errors} "
        f"errors, mean score {mean} → {ui.visible(opts.out_name)}"
    )
    if opts.json_out:
        ui.print_json(
            {
                "results": [r.model_dump(mode="json") for r in results],
                "summary": {
                    "processed": gate.processed,
                    "skipped": summary.skipped,
                    "errors": gate.errors,
                    "mean": gate.mean,
                    "below_fail_under": gate.below,
                    "gate_failed": gate.gate_failed,
                    "exit_code": gate.exit_code,
                    "csv": str(opts.out),
                },
            }
        )
    else:
        if opts.stream is not None:  # stdout carries the rows only: the line goes to stderr
            ui.note(line)
        else:
            if results:
                ui.out.print(ui.results_table(results, title))
            ui.out.print(line, highlight=False)
    if gate.gate_failed:  # errors: said even with -q
        if ui.quiet():  # the summary line the table would have ended with
            ui.fail(f"quality gate failed: {line}")
        if gate.below:
            ui.fail(f"quality gate: {len(gate.below)} image(s) below {opts.fail_under}")
        if (
            opts.fail_mean_under is not None
            and gate.mean is not None
            and gate.mean < opts.fail_mean_under
        ):
            ui.fail(f"quality gate: mean {gate.mean:.3f} below {opts.fail_mean_under}")
        if gate.unscored:
            ui.fail(f"quality gate: {len(gate.unscored)} image(s) could not be scored")
    if gate.errors:
        ui.warn(
            f"{gate.errors} input(s) could not be processed; see the error column of {opts.out_name}"
        )
    raise typer.Exit(gate.exit_code)


# -- plan / assess ------------------------------------------------------------------------
@app.command(epilog=EXIT_CODES_HELP)
@shared("vlm", "setup")
def plan(
    query: Annotated[str, typer.Argument(help="The question to plan for.")],
    opts: Common,
    image: Annotated[
        Path | None,
        typer.Option(
            "--image",
            help="An image the question is about (the plan does not depend on its pixels).",
        ),
    ] = None,
    ref: Ref = None,
) -> None:
    """Run only the planner and print the validated plan as JSON."""

    settings = opts.settings(query=query)

    async def main() -> dict[str, object]:
        async with build_runtime(settings) as rt:
            note_backend(rt)
            agent = await rt.agent()
            say_notes(rt)
            the_plan = await agent.plan(ref is not None, Usage(), NO_TRACE)
            return the_plan.model_dump(mode="json")

    ui.print_json(asyncio.run(main()))


@app.command(epilog=EXIT_CODES_HELP)
@shared("vlm", "output", "gate", "setup", "run")
def assess(
    paths: Paths,
    opts: Common,
    query: Annotated[
        str | None,
        typer.Option(
            "--query",
            "-Q",
            help="The question to answer about each image. Default: overall quality.",
        ),
    ] = None,
    ref: Ref = None,
    tools: Annotated[
        str | None,
        typer.Option(
            "--tools",
            "-t",
            help="Tools to run when nothing specific is detected (default: the offline set).",
        ),
    ] = None,
    learned_tools: LearnedToolsOpt = None,
    fusion: FusionOpt = None,
    fix: Annotated[
        str,
        typer.Option(
            "--fix",
            help="Imperfections before assessment: off | check (the rules checks fill the "
            "imperfections column; nothing changes) | geometry (rotate, flip, crop, fill, then "
            "assess) | all "
            "(also lum, deblur, denoise; score_before is the score before restoration).",
        ),
    ] = "off",
    experience: ExperienceOpt = None,
    evolve: EvolveOpt = False,
    report: ReportOpt = None,
    engine: EngineOpt = None,
) -> None:
    """The full agent per image: plan, detect, analyse, select tools, run them, summarize."""
    if fix not in FIX_MODES:
        raise ConfigError(f"--fix must be one of {', '.join(FIX_MODES)}, got {fix!r}")
    settings = opts.settings(
        query=query,
        tools=tool_list(tools),
        learned_tools=learned_tools,
        fusion=fusion,
        experience=experience,
        evolve=evolve or None,
        engine=engine,
    )

    async def main(rt: Runtime) -> BatchSummary:
        note_backend(rt)
        jobs = rt.jobs(paths, ref, opts.outputs(report))  # outputs checked: exit 2 before work
        rt.check_agent_setup()  # unknown tools, bad prompts, bad --vlm: exit 2, outputs untouched
        agent = await rt.agent()  # a wrong model is exit 2 here, before any output
        say_notes(rt)
        process = _with_fixes(agent, fix)
        command = "assess" if fix == "off" else f"assess --fix {fix}"  # resume keys differ
        return await run_images(
            rt, opts, command, jobs, process, "assess", extra_columns=ASSESS_FIX_COLUMNS,
            extra=fix_cells, remote=functools.partial(fixing_agent_of, fix),
        )  # fmt: skip

    summary = asyncio.run(with_runtime(settings, main))
    report_after_run(opts.out, report)
    finish(summary, opts, "agentiqa assess")
