"""The command line: parse flags, build the pieces, call the core, render. Nothing else.

Exit codes: 0 ok · 1 quality gate failed · 2 usage/configuration error · 3 some inputs failed.
"""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path
from typing import Annotated, Any

import typer

from agentiqa_cli import __version__
from agentiqa_cli import render as ui
from agentiqa_cli.config import Settings, load_settings
from agentiqa_cli.errors import AgentIQAError
from agentiqa_cli.gate import evaluate_gate

EXIT_CODES_HELP = (
    "Exit codes: 0 all processed and gate passed; 1 quality gate failed; "
    "2 usage or configuration error; 3 some inputs could not be processed (rows say why)."
)

app = typer.Typer(
    name="agentiqa",
    help="Batch image quality assessment: an agentic VLM over IQA tools.\n\n" + EXIT_CODES_HELP,
    no_args_is_help=True,
    add_completion=False,
    context_settings={"help_option_names": ["-h", "--help"]},
    pretty_exceptions_enable=False,
)
tools_app = typer.Typer(help="The tool cards, and which tools can run here.", no_args_is_help=True)
app.add_typer(tools_app, name="tools")

_state: dict[str, Any] = {"debug": False}

# -- shared options ------------------------------------------------------------------------
Paths = Annotated[
    list[str], typer.Argument(help="Image files, folders or glob patterns.", show_default=False)
]
Ref = Annotated[
    str | None,
    typer.Option(
        "--ref", "-r", help="Reference image, or a folder matched by relative path / file name."
    ),
]
Out = Annotated[
    Path,
    typer.Option("--out", "-o", help="Results CSV (one row per image, flushed as they finish)."),
]
TraceOpt = Annotated[
    Path | None, typer.Option("--trace", help="JSONL trace of every step. Default: next to --out.")
]
Resume = Annotated[
    bool,
    typer.Option("--resume", help="Skip images whose key is already in --out; append the rest."),
]
Recursive = Annotated[bool, typer.Option("--recursive", "-R", help="Descend into sub-folders.")]
Device = Annotated[
    str | None, typer.Option("--device", help="auto | cpu | cuda[:N] for the tools.")
]
Concurrency = Annotated[
    int | None, typer.Option("--concurrency", "-j", min=1, help="Images in flight at once.")
]
ConfigOpt = Annotated[
    Path | None,
    typer.Option("--config", help="YAML config file (default: ./agentiqa.yaml if present)."),
]
FailUnder = Annotated[
    float | None, typer.Option("--fail-under", help="Gate: exit 1 if any image scores below this.")
]
FailMeanUnder = Annotated[
    float | None,
    typer.Option("--fail-mean-under", help="Gate: exit 1 if the mean score is below this."),
]
JsonOut = Annotated[
    bool, typer.Option("--json", help="Machine-readable JSON on stdout instead of the table.")
]
Quiet = Annotated[bool, typer.Option("--quiet", "-q", help="No progress or notes on stderr.")]
Calibration = Annotated[
    Path | None,
    typer.Option("--calibration", help="Calibration overlay YAML written by `agentiqa calibrate`."),
]
CardsDir = Annotated[
    Path | None,
    typer.Option(
        "--tool-cards", help="Folder of tool card YAML files (default: the shipped cards)."
    ),
]
MaxPixels = Annotated[
    int | None,
    typer.Option("--max-pixels", help="Refuse images with more pixels (decompression bombs)."),
]


@app.callback(invoke_without_command=True)
def _root(
    version: Annotated[bool, typer.Option("--version", help="Show the version and exit.")] = False,
    debug: Annotated[bool, typer.Option("--debug", help="Show tracebacks for errors.")] = False,
) -> None:
    _state["debug"] = debug
    if version:
        typer.echo(f"agentiqa {__version__}")
        raise typer.Exit(0)


def _settings(config: Path | None, **flags: Any) -> Settings:
    return load_settings(flags, config)


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
    """Tools only, no VLM: raw and normalized (1-5) score per tool, and their mean."""
    from agentiqa_cli.scoring import ToolScorer
    from agentiqa_cli.session import Session

    settings = _settings(
        config,
        device=device,
        concurrency=concurrency,
        calibration=calibration,
        cards_dir=tool_cards,
        max_pixels=max_pixels,
        recursive=recursive or None,
        tools=[t for t in tools.split(",") if t.strip()] if tools else None,
    )
    session = Session(settings)
    jobs = session.jobs(paths, ref)
    cards = session.score_cards(has_reference=ref is not None)
    names = [c.name for c in cards]
    with session.outputs(out, trace, resume, columns_tools=names, command="score") as (
        writer,
        tracer,
    ):
        scorer = ToolScorer(session.runner, cards, tracer)
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
) -> Any:
    from agentiqa_cli.batch import run_batch

    reporter = ui.Reporter(len(jobs), label, quiet)

    async def go() -> Any:
        try:
            return await run_batch(
                jobs,
                process,
                fingerprint=session.fingerprint(command),
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
    if gate.errors and not quiet:
        ui.warn(f"{gate.errors} input(s) could not be processed; see the error column of {out}")
    raise typer.Exit(gate.exit_code)


# -- plan / assess ------------------------------------------------------------------------
VlmOpt = Annotated[
    str | None,
    typer.Option(
        "--vlm",
        help="rules (default, no model) | http://HOST:PORT/v1 (OpenAI-compatible, e.g. vLLM) | vllm:MODEL_PATH (in-process). Env: AGENTIQA_VLM_URL.",
    ),
]
ModelOpt = Annotated[
    str | None, typer.Option("--model", "-m", help="Model name served at --vlm URL.")
]
FallbackOpt = Annotated[
    str | None,
    typer.Option(
        "--vlm-fallback", help="none | rules: answer a failed VLM step with the rules backend."
    ),
]
PromptsDir = Annotated[
    Path | None,
    typer.Option("--prompts", help="Folder of prompt YAML files (default: the shipped prompts)."),
]


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
        _settings(
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

    settings = _settings(
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
        tools=[t for t in tools.split(",") if t.strip()] if tools else None,
    )
    session = Session(settings)
    _note_backend(session, quiet)
    jobs = session.jobs(paths, ref)
    header = {"vlm": settings.vlm, "model": settings.model, "prompts": session.prompt_versions()}
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


# -- tools ---------------------------------------------------------------------------------
@tools_app.command("list")
def tools_list(
    json_out: JsonOut = False,
    tool_cards: CardsDir = None,
    config: ConfigOpt = None,
) -> None:
    """All tool cards: mode, direction, weights, calibration, strengths."""
    from rich.table import Table

    from agentiqa_cli.session import Session

    session = Session(_settings(config, cards_dir=tool_cards))
    cards = list(session.cards)
    if json_out:
        ui.print_json([c.model_dump(mode="json") for c in cards])
        return
    t = Table(title=f"{len(cards)} tools", title_justify="left")
    for col in ("name", "backend", "mode", "lower better", "weights", "calibrated", "best at"):
        t.add_column(col)
    for c in sorted(cards, key=lambda c: (c.mode, c.backend, c.name)):
        t.add_row(
            c.name,
            c.backend,
            c.mode,
            "yes" if c.lower_better else "no",
            "yes" if c.weights else "no",
            "yes" if c.calibrated else "no",
            ", ".join(c.distortions) or "-",
        )
    ui.out.print(t)


@tools_app.command("show")
def tools_show(name: str, tool_cards: CardsDir = None, config: ConfigOpt = None) -> None:
    """One tool card in full."""
    import yaml

    from agentiqa_cli.session import Session

    session = Session(_settings(config, cards_dir=tool_cards))
    card = session.cards.get(name)
    sys.stdout.write(
        yaml.safe_dump(card.model_dump(mode="json"), sort_keys=False, allow_unicode=True)
    )


@tools_app.command("check")
def tools_check(
    names: Annotated[
        list[str] | None, typer.Argument(help="Tools to check (default: all).", show_default=False)
    ] = None,
    json_out: JsonOut = False,
    device: Device = None,
    tool_cards: CardsDir = None,
    config: ConfigOpt = None,
) -> None:
    """Which tools can run here now (builds each metric; weights must be present or downloadable)."""
    from rich.table import Table

    from agentiqa_cli.session import Session

    session = Session(_settings(config, cards_dir=tool_cards, device=device))
    cards = session.cards.resolve(names) if names else list(session.cards)
    rows: list[dict[str, Any]] = []
    for c in cards:
        ok, why = session.runner.availability(c)
        needs = "reference" if c.mode == "FR" else ""
        rows.append({"tool": c.name, "ready": ok, "needs": needs, "detail": why})
    if json_out:
        ui.print_json(rows)
    else:
        t = Table(title=f"tools on {session.runner.device}", title_justify="left")
        for col in ("tool", "ready", "needs", "detail"):
            t.add_column(col, overflow="fold")
        for r in rows:
            ready = "[green]yes[/]" if r["ready"] else "[red]no[/]"
            t.add_row(str(r["tool"]), ready, str(r["needs"]), str(r["detail"]))
        ui.out.print(t)
        n = sum(r["ready"] for r in rows)
        ui.out.print(f"{n} of {len(rows)} tools can run here.")


# -- entry point ---------------------------------------------------------------------------
def main() -> None:
    """Console-script entry: one error boundary for the whole tool.

    Parser errors exit 2 through typer's own handling; domain errors become one red line.
    """
    try:
        app()
    except AgentIQAError as e:
        if _state["debug"] or os.environ.get("AGENTIQA_DEBUG"):
            raise
        ui.fail(str(e))
        sys.exit(e.exit_code)
    except KeyboardInterrupt:
        ui.fail("interrupted; rows written so far are complete (use --resume to continue)")
        sys.exit(130)


__all__ = ["app", "main"]
