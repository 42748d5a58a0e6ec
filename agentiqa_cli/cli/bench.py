"""`agentiqa eval-bench mos|mcq|synth` and `agentiqa calibrate`: the run happens in
``bench/runs.py`` through the same Runtime as `score`/`assess`; here only flags and tables."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, TypeVar

import typer
from rich.table import Table

from agentiqa_cli.cli import render as ui
from agentiqa_cli.cli.app import app, bench_app
from agentiqa_cli.cli.options import (
    Common,
    Force,
    deprecated,
    deprecated_option,
    out_dir_option,
    shared,
    tool_list,
)
from agentiqa_cli.cli.run import note_backend, say_notes, with_runtime
from agentiqa_cli.config import Settings, redact_url
from agentiqa_cli.errors import ConfigError
from agentiqa_cli.io.guard import check_out_dir, check_overlay_out
from agentiqa_cli.io.trace import TraceWriter
from agentiqa_cli.runtime import Runtime
from agentiqa_cli.tools.extras import require_extras, require_matplotlib

if TYPE_CHECKING:  # the benchmarks load scipy and scikit-image: only when a command runs
    from agentiqa_cli.bench.calibrate import CalibrationFit
    from agentiqa_cli.bench.layouts import MosItem
    from agentiqa_cli.bench.mcq import MCQReport, MCQuestion
    from agentiqa_cli.bench.mos import MosReport
    from agentiqa_cli.bench.runs import Bench
    from agentiqa_cli.bench.synth_eval import SynthReport
    from agentiqa_cli.imperfect.records import Operation

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


T = TypeVar("T")


def _bench(
    settings: Settings,
    trace: Path | None,
    total: int,
    label: str,
    main: Callable[[Bench], Awaitable[T]],
    *,
    command: str,
) -> T:
    """Run ``main`` on a Runtime with a progress bar (``label``) ticking once per result row;
    the trace starts with the run header naming ``command``."""
    # start-up time: each command loads its benchmark (scipy, the distortion library) itself
    from agentiqa_cli.bench.runs import Bench

    reporter = ui.Reporter(total, label)

    async def go(rt: Runtime) -> T:
        tracer = TraceWriter(trace, header=rt.header(command))
        try:
            with reporter.running():
                value = await main(Bench(rt, tracer, lambda r: reporter.advance(r.image, r.status)))
            say_notes(rt)
            return value
        finally:
            tracer.close()

    return asyncio.run(with_runtime(settings, go))


def _inputs(source: Path, items: Iterable[MosItem | MCQuestion]) -> list[Path]:
    """What a run reads, that none of its outputs may be: the list and its images."""
    refs = [i.reference for i in items if i.reference is not None]
    return [source, *(i.image for i in items), *refs]


def _fmt(v: float | None) -> str:
    return "-" if v is None else f"{v:.3f}"


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
    # start-up time: as in _bench; plot imports matplotlib (the [plot] extra, checked above)
    from agentiqa_cli.bench import datasets, mos, plot, runs

    settings = opts.settings()
    data = datasets.load_dataset(dataset, layout, limit=limit, sample=sample, seed=seed)
    for n in data.notes:
        ui.note(n)
    names = tool_list(tools) or []
    check_out_dir(out_dir, ("trace.jsonl", "summary.csv", "predictions.csv", "scatter.png"),
                  _inputs(data.source, data.items), force=force)  # fmt: skip
    out_dir.mkdir(parents=True, exist_ok=True)

    async def main(b: Bench) -> MosReport:
        note_backend(b.rt)
        cards = b.rt.cards.resolve(names)
        require_extras(cards)
        return await runs.run_mos(b, data, cards, assess, bootstrap=bootstrap, seed=seed)

    total = len(data.items) * (len(names) + int(assess))
    report = _bench(settings, out_dir / "trace.jsonl", total, f"eval-bench mos ({data.name})",
                    main, command="eval-bench mos")  # fmt: skip
    mos.write_mos_csv(report, out_dir / "summary.csv")
    mos.write_predictions_csv(report, out_dir / "predictions.csv")
    png = plot.plot_scatter(report, out_dir / "scatter.png")
    t = Table(title=f"{data.name} ({data.layout}, {len(data.items)} images)", title_justify="left")
    for col in ("method", "group", "n", "failed", "SRCC", "KRCC", "PLCC", "RMSE"):
        t.add_column(col, justify="left" if col in ("method", "group") else "right")
    for r in report.rows:
        t.add_row(r.method, r.group, str(r.n), str(r.failed), _fmt(r.srcc), _fmt(r.krcc),
                  _fmt(r.plcc), _fmt(r.rmse))  # fmt: skip
    ui.out.print(t)
    ui.out.print(
        f"→ {out_dir / 'summary.csv'}, {out_dir / 'predictions.csv'}, {png}", highlight=False
    )


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
    # start-up time: as in _bench
    from agentiqa_cli.bench import mcq, runs

    out_dir = _out_dir(out_dir, old_out_dir)
    if example is not None:
        path = mcq.make_example_mcq(example)
        ui.out.print(f"example questions → {path}", highlight=False)
        return
    if questions is None:
        raise ConfigError("give a questions JSONL file (or --write-example DIR)")
    settings = opts.settings()
    qs = mcq.load_mcq(questions)
    check_out_dir(out_dir, ("trace.jsonl", "answers.csv"), _inputs(questions, qs), force=force)
    out_dir.mkdir(parents=True, exist_ok=True)

    async def main(b: Bench) -> MCQReport:
        note_backend(b.rt)
        return await runs.run_mcq(b, qs, whole_agent)

    report = _bench(settings, out_dir / "trace.jsonl", len(qs), "eval-bench mcq", main,
                    command="eval-bench mcq")  # fmt: skip
    mcq.write_mcq_csv(report, out_dir / "answers.csv")
    t = Table(
        title=f"{questions.name}: {report.n} questions, backend {redact_url(settings.vlm)}",
        title_justify="left",
    )
    for col in ("track", "n", "correct", "accuracy"):
        t.add_column(col, justify="left" if col == "track" else "right")
    for tr in report.tracks:
        t.add_row(tr.track, str(tr.n), str(tr.correct), _fmt(tr.accuracy))
    t.add_row("overall (mean of tracks)", str(report.n), str(report.correct), _fmt(report.overall))
    ui.out.print(t)
    ui.out.print(f"{report.failed} unanswered → {out_dir / 'answers.csv'}", highlight=False)


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
    # start-up time: as in _bench
    from agentiqa_cli.bench.synth_eval import write_synth_csv
    from agentiqa_cli.imaging.distort import check_kinds

    out_dir = _out_dir(out_dir, old_out_dir)
    if kinds is not None:
        check_kinds(tool_list(kinds) or [])  # exit 2 before anything is written
    settings = opts.settings()
    clean = sorted(clean_dir.iterdir()) if clean_dir.is_dir() else []
    check_out_dir(out_dir, ("trace.jsonl", "synth.csv"), clean, input_dir=clean_dir, force=force)
    out_dir.mkdir(parents=True, exist_ok=True)
    report = synth_report(settings, clean_dir, out_dir, tool_list(tools), assess,
                          tool_list(kinds), levels, size, seed)  # fmt: skip
    write_synth_csv(report, out_dir / "synth.csv")
    ui.out.print(synth_table(report))
    n = report.methods[0].n if report.methods else 0
    ui.out.print(f"{n} images → {out_dir / 'synth.csv'}", highlight=False)


def synth_report(
    settings: Settings,
    clean_dir: Path,
    out_dir: Path,
    tools: list[str] | None,
    assess: bool,
    kinds: list[str] | None,
    levels: int,
    size: int,
    seed: int,
) -> SynthReport:
    """`eval-bench synth`'s run (also used by the benchmark script)."""
    # start-up time: as in _bench
    from agentiqa_cli.bench.runs import run_synth

    async def main(b: Bench) -> SynthReport:
        note_backend(b.rt)
        cards = b.rt.cards.resolve(tools) if tools else b.rt.score_cards(has_reference=False)
        require_extras(cards)
        return await run_synth(b, clean_dir, out_dir, cards, assess, kinds=kinds, levels=levels,
                               size=size, seed=seed)  # fmt: skip

    return _bench(settings, out_dir / "trace.jsonl", 0, "eval-bench synth", main,
                  command="eval-bench synth")  # fmt: skip


def synth_table(report: SynthReport) -> Table:
    kinds = sorted({k.kind for m in report.methods for k in m.kinds})
    t = Table(
        title="score falls with distortion level: -SRCC(score, level) per kind",
        title_justify="left",
    )
    t.add_column("method")
    for k in kinds:
        t.add_column(k, justify="right")
    for col in ("mean", "clean>heavy", "false alarms"):
        t.add_column(col, justify="right")
    for m in report.methods:
        per = {k.kind: k.srcc_level for k in m.kinds}
        fa = "-" if m.false_alarm_moderate is None else f"{m.false_alarm_moderate:.0%}"
        t.add_row(
            m.method,
            *(_fmt(per.get(k)) for k in kinds),
            _fmt(m.mean_srcc_level),
            _fmt(m.rank_rate),
            fa,
        )
    return t


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
    # start-up time: as in _bench
    from agentiqa_cli.bench import calibrate, datasets, runs

    old = old_out
    if old is not None:
        deprecated("calibrate -o/--out", "--overlay")
        overlay = old
    rng: tuple[float, float] | None = None
    if mos_range:
        try:
            lo, hi = (float(v) for v in mos_range.split(","))
            rng = (lo, hi)
        except ValueError:
            raise ConfigError(f"--mos-range must be LO,HI, got {mos_range!r}") from None
    settings = opts.settings()
    data = datasets.load_dataset(dataset, layout, limit=limit, sample=sample, seed=seed)
    overlay_in = [settings.calibration] if settings.calibration else []
    check_overlay_out(overlay, [*_inputs(data.source, data.items), *overlay_in], force,
                      "--overlay" if old is None else "--out")  # fmt: skip

    async def main(b: Bench) -> list[CalibrationFit]:
        cards = b.rt.cards.resolve(tool_list(tools) or [])
        require_extras(cards)
        return await runs.run_calibrate(b, data, cards, rng)

    fits = _bench(settings, None, len(data.items), "calibrate", main,
                  command="calibrate")  # fmt: skip
    written = calibrate.write_overlay(
        fits, overlay, f"{data.name} ({data.layout}, {len(data.items)} images)", include_suspect
    )
    t = Table(title=f"logistic fits on {data.name}", title_justify="left")
    for col in ("tool", "n", "failed", "SRCC", "PLCC", "RMSE", "note"):
        t.add_column(col)
    for f in fits:
        note = f.error or "; ".join(f.warnings) or ""
        t.add_row(f.tool, str(f.n), str(f.failed), _fmt(f.srcc), _fmt(f.plcc), _fmt(f.rmse), note)
    ui.out.print(t)
    if written == 0:
        raise ConfigError("no usable fit; nothing written")
    ui.out.print(
        f"{written} tool(s) → {overlay} (apply with --calibration {overlay})", highlight=False
    )


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
    # start-up time: as in _bench
    from agentiqa_cli.bench import vqpp

    out_dir = _out_dir(out_dir, old_out_dir)
    settings = opts.settings()
    sources = sorted(p for p in clean_dir.iterdir() if p.is_file()) if clean_dir.is_dir() else []
    if not sources:
        raise ConfigError(f"{clean_dir}: not a folder of images")
    check_out_dir(out_dir, ("trace.jsonl", "vqpp.csv", "decisions.jsonl"), sources,
                  input_dir=clean_dir, force=force)  # fmt: skip
    items = vqpp.build(clean_dir, out_dir / "images", seed=seed, size=size, limit=limit,
                       generator=generator, query=settings.query)  # fmt: skip
    reporter = ui.Reporter(len(items), "eval-bench vqpp")

    async def decide(rt: Runtime) -> tuple[dict[str, list[Operation] | None], dict[str, list[str]]]:
        note_backend(rt)
        asker = await rt.asker()
        say_notes(rt)
        tracer = TraceWriter(out_dir / "trace.jsonl", header=rt.header("eval-bench vqpp"))
        try:
            with reporter.running():
                return await vqpp.decide_all(
                    rt, asker, items, out_dir / "images", tracer,
                    lambda r: reporter.advance(r.image, r.status),
                )  # fmt: skip
        finally:
            tracer.close()

    chosen, found = asyncio.run(with_runtime(settings, decide))
    rows = vqpp.report(items, chosen, found)
    vqpp.write_report(rows, out_dir / "vqpp.csv")
    vqpp.write_decisions(items, chosen, found, out_dir / "decisions.jsonl")
    t = Table(
        title=f"V-QPP ({generator} generator) on {clean_dir}: {len(items)} images, "
        f"backend {settings.vlm}",
        title_justify="left",
    )
    for col in ("type", "n", "failed", "TSA", "PS", "false fixes", "false findings"):
        t.add_column(col, justify="left" if col == "type" else "right")
    for r in rows:
        t.add_row(r.kind, str(r.n), str(r.failed), _fmt(r.tsa), _fmt(r.ps),
                  _fmt(r.false_fix), _fmt(r.false_finding))  # fmt: skip
    ui.out.print(t)
    ui.out.print(f"→ {out_dir / 'vqpp.csv'}, {out_dir / 'decisions.jsonl'}", highlight=False)
