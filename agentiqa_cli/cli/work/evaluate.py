"""`agentiqa evaluate`'s run: the rounds on a Runtime, the verdict's table or JSON, the
gates and the exit code."""

from __future__ import annotations

import asyncio
from pathlib import Path

import typer
from rich.table import Table

from agentiqa_cli.cli import render as ui
from agentiqa_cli.cli.options import Common, tool_list
from agentiqa_cli.cli.session import note_backend, say_notes, with_runtime
from agentiqa_cli.config import DEFAULT_QUERY
from agentiqa_cli.errors import ConfigError
from agentiqa_cli.evaluate import draws, generator, loop
from agentiqa_cli.evaluate.draws import Folder, GeneratorSource
from agentiqa_cli.evaluate.loop import Evaluation
from agentiqa_cli.evaluate.records import Estimate, RoundDraw, Verdict
from agentiqa_cli.evaluate.tiers import TierName, Tiers, parse_tier, tiers_from_reference
from agentiqa_cli.gate import EXIT_GATE, EXIT_INPUT, EXIT_OK
from agentiqa_cli.io.guard import check_gen_dir, trace_path_for
from agentiqa_cli.records import Result
from agentiqa_cli.runtime import Runtime


def run(
    opts: Common,
    source: list[str] | None,
    query: str | None,
    command: str | None,
    gen_dir: Path | None,
    generator_timeout: float,
    max_rounds: int,
    max_samples: int,
    seed: int,
    tiers: Path | None,
    fail_under_tier: str | None,
    tools: str | None,
    fusion: str | None,
    learned_tools: bool | None,
) -> None:
    settings = opts.settings(
        query=query or DEFAULT_QUERY,
        tools=tool_list(tools),
        fusion=fusion,
        learned_tools=learned_tools,
    )
    if bool(command) == bool(source):
        raise ConfigError("give either SOURCE (folders, files, globs) or --generator, not both")
    density = tiers is not None and str(tiers) == "density" and not tiers.exists()
    if density and command:
        raise ConfigError("--tiers density needs a folder (its images' scores give the density)")
    cuts = tiers_from_reference(tiers) if tiers is not None and not density else Tiers()
    gate_tier = parse_tier(fail_under_tier) if fail_under_tier else None
    config = loop.EvalConfig(settings.query, max_rounds, max_samples, seed, cuts, density=density)
    gen = generator.Generator.parse(command, generator_timeout) if command else None
    opts.outputs()  # --format and -o - against the flags they exclude; -o -'s --trace
    if gen is not None and gen_dir is None and opts.to_stdout:
        raise ConfigError("--generator with -o - needs --gen-dir (where the images go)")
    gen_dir = gen_dir or opts.out.with_name(opts.out.stem + "-images")
    if gen is not None:
        check_gen_dir(gen_dir, opts.out, opts.resume, opts.force)  # exit 2 before any work
    reporter = ui.Reporter(
        max_samples, "evaluate", live=not ui.rows_to_terminal(opts.stream is not None)
    )

    def on_round(d: RoundDraw) -> None:
        hard = sum(s.stratum == "hard" for s in d.samples)
        how = (
            f"{hard} hardest of {d.pool} screened + {len(d.samples) - hard} random"
            if d.detector
            else "random"
        )
        asked = f", asking {d.question!r}" if d.question and d.tool == "assess" else ""
        ui.note(
            f"round {d.round}: {d.sub_aspect.name} with {d.tool}, {len(d.samples)} images "
            f"({how}){asked}",
        )

    hooks = loop.Hooks(
        on_round=on_round,
        on_result=lambda r: reporter.advance(r.image, r.status, _detail(r)),
        on_note=ui.note,
    )

    async def main(rt: Runtime) -> tuple[Evaluation, Verdict]:
        note_backend(rt)
        if gen is not None:
            src: Folder | GeneratorSource = draws.GeneratorSource(gen, gen_dir)
        else:
            src = draws.Folder(rt.jobs(source or [], None, opts.outputs()))
        rt.check_agent_setup()
        await rt.connect()  # a wrong model is exit 2 here, before any output
        say_notes(rt)
        ev = loop.Evaluation(rt, config, src, hooks)
        with rt.outputs(opts.out, opts.trace, opts.resume, "evaluate",
                        extra_columns=loop.EVAL_COLUMNS, extra=ev.cells_of, force=opts.force,
                        stream=opts.stream) as (writer, tracer), reporter.running():  # fmt: skip
            if opts.resume:
                done = ev.resume(trace_path_for(opts.out, opts.trace), opts.out)
                ui.note(f"resuming after {done} round(s) drawn")
            verdict = await ev.run(writer, tracer)
        return ev, verdict

    ev, verdict = asyncio.run(with_runtime(settings, main))
    failed_planner = ev.stop is not None and ev.stop.failed
    gate = _gate(verdict, gate_tier, cuts, opts.fail_under, opts.fail_mean_under)
    code = EXIT_INPUT if (verdict.errors or failed_planner) else EXIT_GATE if gate else EXIT_OK
    if opts.json_out:
        ui.print_json({"verdict": verdict.model_dump(mode="json"), "gate_failed": gate,
                       "exit_code": code, "csv": str(opts.out)})  # fmt: skip
    elif opts.stream is not None:  # stdout carries the rows only: the verdict goes to stderr
        ui.note(verdict.summary)
        ui.note(f"stopped: {verdict.stop_reason} → {opts.out_name}")
    else:
        ui.out.print(_table(verdict))
        ui.out.print(ui.cell(verdict.summary), highlight=False)
        ui.out.print(
            f"stopped: {ui.cell(verdict.stop_reason)} → {ui.cell(opts.out_name)}", highlight=False
        )
    if gate and ui.quiet():  # the verdict the table would have shown
        ui.fail(f"quality gate failed: {verdict.summary}")
    for why in gate:  # errors: said even with -q
        ui.fail(f"quality gate: {why}")
    if verdict.errors:
        ui.warn(
            f"{verdict.errors} sampled image(s) could not be assessed; see the error column of {opts.out_name}"
        )
    raise typer.Exit(code)


def _detail(r: Result) -> str:
    if r.status == "error":
        return r.error
    return f"{r.score:.2f}" if r.score is not None else ""


def _gate(
    v: Verdict,
    tier: TierName | None,
    tiers: Tiers,
    fail_under: float | None,
    fail_mean_under: float | None,
) -> list[str]:
    """Why the verdict fails the gates (empty: it passes). No verdict fails any gate set."""
    o = v.overall
    why = []
    if tier is not None and (o.tier is None or tiers.rank(o.tier) < tiers.rank(tier)):
        why.append(f"overall tier {o.tier or 'unknown'} is below {tier}")
    if fail_mean_under is not None and (o.mean is None or o.mean < fail_mean_under):
        why.append(f"estimated mean {_num(o.mean)} is below {fail_mean_under}")
    if fail_under is not None and (o.lo is None or o.lo < fail_under):
        why.append(f"the 95% interval reaches {_num(o.lo)}, below {fail_under}")
    return why


def _num(x: float | None) -> str:
    return "-" if x is None else f"{x:.2f}"


def _table(v: Verdict) -> Table:
    table = Table(title=f"agentiqa evaluate: {ui.cell(v.query)}", title_justify="left")
    for col, justify in (("sub-aspect", "left"), ("tier", "left"), ("mean", "right"),
                         ("95% interval", "right"), ("samples", "right"), ("probed", "right"),
                         ("question asked", "left")):  # fmt: skip
        table.add_column(col, justify=justify)  # type: ignore[arg-type]
    for e in [v.overall, *v.sub_aspects]:
        table.add_row(*_cells(e, v))
    pop = f" of {v.population}" if v.population is not None else ""
    table.caption = (
        f"{v.assessed}{pop} images assessed in {v.rounds} rounds, {v.screened} screened "
        f"with detectors, {v.seconds:.1f} s; tiers: {ui.cell(v.tiers_source)}"
    )
    return table


def _cells(e: Estimate, v: Verdict) -> list[str]:
    name = ui.cell(e.sub_aspect) + (" (lowest)" if e.sub_aspect == v.worst else "")
    if e.mean is None or e.lo is None or e.hi is None:
        return [name, "-", "-", "-", str(e.samples), _round(e), ui.cell(e.question)]
    spread = "exact" if e.exact else f"{e.lo:.2f}-{e.hi:.2f}" + ("" if e.fits else " (spans tiers)")
    tier = f"[bold]{e.tier}[/]" if e.kind == "overall" else str(e.tier)
    return [name, tier, f"{e.mean:.2f}", spread, str(e.samples), _round(e), ui.cell(e.question)]


def _round(e: Estimate) -> str:
    return "" if e.round is None else str(e.round)
