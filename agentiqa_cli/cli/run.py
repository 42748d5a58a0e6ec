"""`score`, `plan` and `assess`: the commands that run over images."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Annotated, Any

import typer

from agentiqa_cli.cli import render as ui
from agentiqa_cli.cli.app import app
from agentiqa_cli.cli.options import (
    EXIT_CODES_HELP,
    Calibration,
    CardsDir,
    Concurrency,
    ConfigOpt,
    Device,
    FailMeanUnder,
    FailUnder,
    FallbackOpt,
    JsonOut,
    MaxPixels,
    ModelOpt,
    Out,
    Paths,
    PromptsDir,
    Quiet,
    Recursive,
    Ref,
    Resume,
    TraceOpt,
    VlmOpt,
    make_settings,
)
from agentiqa_cli.config import redact_url
from agentiqa_cli.errors import VLMUnreachableError
from agentiqa_cli.gate import evaluate_gate


# -- score ---------------------------------------------------------------------------------
@app.command(epilog=EXIT_CODES_HELP)
def score(
    paths: Paths,
    tools: Annotated[
        str | None,
        typer.Option(
            "--tools",
            "-t",
            help="Comma-separated tool names (see `agentiqa tools list`). Default: a no-reference set that runs offline, or psnr,ssim,gmsd with --ref.",
        ),
    ] = None,
    ref: Ref = None,
    fusion: Annotated[
        str | None,
        typer.Option(
            "--fusion",
            help="mean: the mean of the tools' 1-5 scores (the paper's). min: the worst tool, "
            "for gating on specialised detectors (one bad attribute barely moves a mean of seven).",
        ),
    ] = None,
    out: Out = Path("results.csv"),
    trace: TraceOpt = None,
    resume: Resume = False,
    recursive: Recursive = False,
    device: Device = None,
    concurrency: Concurrency = None,
    config: ConfigOpt = None,
    fail_under: FailUnder = None,
    fail_mean_under: FailMeanUnder = None,
    json_out: JsonOut = False,
    quiet: Quiet = False,
    calibration: Calibration = None,
    tool_cards: CardsDir = None,
    max_pixels: MaxPixels = None,
) -> None:
    """Tools only, no VLM: raw and normalized (1-5) score per tool, fused by their mean (or min)."""
    from agentiqa_cli.scoring import ToolScorer
    from agentiqa_cli.session import Session

    settings = make_settings(
        config,
        device=device,
        concurrency=concurrency,
        calibration=calibration,
        cards_dir=tool_cards,
        max_pixels=max_pixels,
        recursive=recursive or None,
        fusion=fusion,
        tools=[t.strip() for t in tools.split(",") if t.strip()] if tools else None,
    )
    session = Session(settings)
    jobs = session.jobs(paths, ref)
    cards = session.score_cards(has_reference=ref is not None)
    names = [c.name for c in cards]
    for problem in session.prepare_tools(cards):  # card errors exit 2 before any output
        ui.warn(problem)
    with session.outputs(out, trace, resume, columns_tools=names, command="score") as (
        writer,
        tracer,
    ):
        scorer = ToolScorer(session.runner, cards, tracer, settings.fusion)
        summary = _run(
            session, "score", jobs, scorer, writer, tracer, quiet, f"score ({', '.join(names)})"
        )
    _finish(
        summary.results,
        summary.skipped,
        out,
        fail_under,
        fail_mean_under,
        json_out,
        quiet,
        "agentiqa score",
    )


def _run(
    session: Any,
    command: str,
    jobs: list[Any],
    process: Any,
    writer: Any,
    tracer: Any,
    quiet: bool,
    label: str,
    closer: Any = None,
    startup: Any = None,
) -> Any:
    from agentiqa_cli.batch import run_batch

    reporter = ui.Reporter(len(jobs), label, quiet)

    async def go() -> Any:
        nonlocal process
        try:
            if startup is not None:
                try:
                    note = await startup()
                    if note:
                        ui.warn(note)
                except VLMUnreachableError as e:
                    process = _failing(e)  # every image gets its error row; no per-image retries
            return await run_batch(
                jobs,
                process,
                fingerprint=session.fingerprint(command),  # after startup: the resolved model
                decoder=session.decoder,
                writer=writer,
                trace=tracer,
                concurrency=session.settings.concurrency,
                on_result=lambda r: reporter.advance(r.image, r.status, _detail(r)),
                on_skip=lambda j: reporter.advance(j.name, "skipped"),
            )
        finally:
            if closer is not None:
                await closer()

    with reporter.running():
        return asyncio.run(go())


def _failing(error: Exception) -> Any:
    async def process(pair: Any) -> Any:
        raise error

    return process


def _detail(r: Any) -> str:
    if r.status == "error":
        return str(r.error)
    return f"{r.score:.2f}" if r.score is not None else ""


def _finish(
    results: list[Any],
    skipped: int,
    out: Path,
    fail_under: float | None,
    fail_mean_under: float | None,
    json_out: bool,
    quiet: bool,
    title: str,
) -> None:
    gate = evaluate_gate(results, fail_under, fail_mean_under)
    if json_out:
        ui.print_json(
            {
                "results": [r.model_dump(mode="json") for r in results],
                "summary": {
                    "processed": gate.processed,
                    "skipped": skipped,
                    "errors": gate.errors,
                    "mean": gate.mean,
                    "below_fail_under": gate.below,
                    "gate_failed": gate.gate_failed,
                    "exit_code": gate.exit_code,
                    "csv": str(out),
                },
            }
        )
    else:
        if results:
            ui.out.print(ui.results_table(results, title))
        mean = f"{gate.mean:.3f}" if gate.mean is not None else "-"
        ui.out.print(
            f"{gate.processed} processed, {skipped} skipped (resume), {gate.errors} errors, mean score {mean} → {out}",
            highlight=False,
        )
    if gate.gate_failed and not quiet:
        if gate.below:
            ui.fail(f"quality gate: {len(gate.below)} image(s) below {fail_under}")
        if fail_mean_under is not None and gate.mean is not None and gate.mean < fail_mean_under:
            ui.fail(f"quality gate: mean {gate.mean:.3f} below {fail_mean_under}")
        if gate.unscored:
            ui.fail(f"quality gate: {len(gate.unscored)} image(s) could not be scored")
    if gate.errors and not quiet:
        ui.warn(f"{gate.errors} input(s) could not be processed; see the error column of {out}")
    raise typer.Exit(gate.exit_code)


# -- plan / assess ------------------------------------------------------------------------
@app.command(epilog=EXIT_CODES_HELP)
def plan(
    query: Annotated[str, typer.Argument(help="The question to plan for.")],
    image: Annotated[
        Path | None,
        typer.Option(
            "--image",
            help="An image the question is about (the plan does not depend on its pixels).",
        ),
    ] = None,
    ref: Ref = None,
    vlm: VlmOpt = None,
    model: ModelOpt = None,
    config: ConfigOpt = None,
    prompts: PromptsDir = None,
    tool_cards: CardsDir = None,
) -> None:
    """Run only the planner and print the validated plan as JSON."""
    from agentiqa_cli.io.trace import TraceWriter
    from agentiqa_cli.records import Usage
    from agentiqa_cli.session import Session

    session = Session(
        make_settings(
            config, vlm=vlm, model=model, prompts_dir=prompts, cards_dir=tool_cards, query=query
        )
    )
    _note_backend(session, quiet=False)
    asker = session.asker(TraceWriter(None), query)
    names = session.cards.names()
    result = asyncio.run(_plan_once(session, asker, query, ref is not None, names, Usage()))
    ui.print_json(result.model_dump(mode="json"))


async def _plan_once(
    session: Any, asker: Any, query: str, has_ref: bool, names: list[str], usage: Any
) -> Any:
    try:
        return await asker.plan(query, has_ref, names, usage)
    finally:
        await session.vlm.aclose()


def _note_backend(session: Any, quiet: bool) -> None:
    if session.settings.vlm == "rules":
        ui.note(
            "note: no VLM configured; using the deterministic rules backend "
            "(set --vlm URL --model NAME or AGENTIQA_VLM_URL for a vision-language model)",
            quiet,
        )


@app.command(epilog=EXIT_CODES_HELP)
def assess(
    paths: Paths,
    query: Annotated[
        str | None,
        typer.Option(
            "--query",
            "-Q",
            help="The question to answer about each image. Default: overall quality.",
        ),
    ] = None,
    ref: Ref = None,
    vlm: VlmOpt = None,
    model: ModelOpt = None,
    vlm_fallback: FallbackOpt = None,
    tools: Annotated[
        str | None,
        typer.Option(
            "--tools",
            "-t",
            help="Tools to run when nothing specific is detected (default: the offline set).",
        ),
    ] = None,
    learned_tools: Annotated[
        bool | None,
        typer.Option(
            "--learned-tools/--no-learned-tools",
            help="Let the agent pick tools that need downloaded weights.",
        ),
    ] = None,
    out: Out = Path("results.csv"),
    trace: TraceOpt = None,
    resume: Resume = False,
    recursive: Recursive = False,
    device: Device = None,
    concurrency: Concurrency = None,
    config: ConfigOpt = None,
    fail_under: FailUnder = None,
    fail_mean_under: FailMeanUnder = None,
    json_out: JsonOut = False,
    quiet: Quiet = False,
    calibration: Calibration = None,
    prompts: PromptsDir = None,
    tool_cards: CardsDir = None,
    max_pixels: MaxPixels = None,
) -> None:
    """The full agent per image: plan, detect, analyse, select tools, run them, summarize."""
    from agentiqa_cli.session import Session

    settings = make_settings(
        config,
        query=query,
        vlm=vlm,
        model=model,
        vlm_fallback=vlm_fallback,
        device=device,
        concurrency=concurrency,
        calibration=calibration,
        prompts_dir=prompts,
        cards_dir=tool_cards,
        max_pixels=max_pixels,
        recursive=recursive or None,
        learned_tools=learned_tools,
        tools=[t.strip() for t in tools.split(",") if t.strip()] if tools else None,
    )
    session = Session(settings)
    _note_backend(session, quiet)
    jobs = session.jobs(paths, ref)
    session.check_agent_setup()  # unknown tools, bad prompts, bad --vlm: exit 2, outputs untouched
    header = {
        "vlm": redact_url(settings.vlm),
        "model": settings.model,
        "prompts": session.prompt_versions(),
    }
    with session.outputs(
        out, trace, resume, columns_tools=None, command="assess", header_extra=header
    ) as (
        writer,
        tracer,
    ):
        agent = session.agent(tracer)
        summary = _run(
            session,
            "assess",
            jobs,
            agent,
            writer,
            tracer,
            quiet,
            "assess",
            closer=session.vlm.aclose,
            startup=lambda: session.connect(agent),
        )
    _finish(
        summary.results,
        summary.skipped,
        out,
        fail_under,
        fail_mean_under,
        json_out,
        quiet,
        "agentiqa assess",
    )
