"""`agentiqa eval-bench mos|mcq|synth` and `agentiqa calibrate`."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.table import Table

from agentiqa_cli.cli import render as ui
from agentiqa_cli.cli.app import app, bench_app
from agentiqa_cli.cli.options import (
    CardsDir,
    ConfigOpt,
    Device,
    FallbackOpt,
    ModelOpt,
    PromptsDir,
    Quiet,
    VlmOpt,
    make_settings,
)
from agentiqa_cli.errors import ConfigError, VLMError

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
OutDir = Annotated[Path, typer.Option("--out-dir", "-o", help="Where the report files go.")]


def _tool_list(tools: str | None) -> list[str]:
    return [t.strip() for t in (tools or "").split(",") if t.strip()]


def _session(config: Path | None, **flags: Any) -> Any:
    from agentiqa_cli.session import Session

    session = Session(make_settings(config, **flags))
    return session


def _methods(
    session: Any,
    tool_names: list[str],
    assess: bool,
    trace: Any,
    store: dict[str, Any],
    reporter: ui.Reporter,
    has_refs: bool,
) -> dict[str, Any]:
    from agentiqa_cli.bench.agent_method import agent_method
    from agentiqa_cli.bench.methods import tool_method

    methods: dict[str, Any] = {}
    if assess:
        methods["assess"] = agent_method(
            session, trace, store, on_item=lambda: reporter.advance("", "ok")
        )
    for card in session.cards.resolve(tool_names):
        if card.mode == "FR" and not has_refs:
            raise ConfigError(f"{card.name} is full-reference but the dataset has no references")
        methods[card.name] = tool_method(
            session.runner, card, on_item=lambda: reporter.advance("", "ok")
        )
    if not methods:
        raise ConfigError("nothing to evaluate: give --tools and/or keep --assess")
    return methods


def _fmt(v: float | None) -> str:
    return "-" if v is None else f"{v:.3f}"


@bench_app.command("mos")
def mos(
    dataset: Annotated[
        Path, typer.Argument(help="A dataset file or folder with human opinion scores.")
    ],
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
    vlm: VlmOpt = None,
    model: ModelOpt = None,
    vlm_fallback: FallbackOpt = None,
    device: Device = None,
    config: ConfigOpt = None,
    prompts: PromptsDir = None,
    tool_cards: CardsDir = None,
    quiet: Quiet = False,
) -> None:
    """SRCC, KRCC, PLCC and RMSE against MOS, overall and per distortion type; scatter plot."""
    from agentiqa_cli.bench.datasets import load_dataset
    from agentiqa_cli.bench.mos import evaluate_mos, write_mos_csv, write_predictions_csv
    from agentiqa_cli.bench.plot import plot_scatter
    from agentiqa_cli.io.trace import TraceWriter

    session = _session(
        config,
        vlm=vlm,
        model=model,
        vlm_fallback=vlm_fallback,
        device=device,
        prompts_dir=prompts,
        cards_dir=tool_cards,
    )
    data = load_dataset(dataset, layout, limit=limit, sample=sample, seed=seed)
    for n in data.notes:
        ui.note(n, quiet)
    out_dir.mkdir(parents=True, exist_ok=True)
    trace = TraceWriter(out_dir / "trace.jsonl")
    names = _tool_list(tools)
    has_refs = any(i.reference for i in data.items)
    total = len(data.items) * (len(names) + int(assess))
    reporter = ui.Reporter(total, f"eval-bench mos ({data.name})", quiet)
    store: dict[str, Any] = {}
    with reporter.running():
        methods = _methods(session, names, assess, trace, store, reporter, has_refs)
        report = evaluate_mos(data, methods, bootstrap=bootstrap, seed=seed)
    trace.close()
    write_mos_csv(report, out_dir / "summary.csv")
    write_predictions_csv(report, out_dir / "predictions.csv")
    png = plot_scatter(report, out_dir / "scatter.png")
    t = Table(title=f"{data.name} ({data.layout}, {len(data.items)} images)", title_justify="left")
    for col in ("method", "group", "n", "failed", "SRCC", "KRCC", "PLCC", "RMSE"):
        t.add_column(col, justify="left" if col in ("method", "group") else "right")
    for r in report.rows:
        t.add_row(
            r.method,
            r.group,
            str(r.n),
            str(r.failed),
            _fmt(r.srcc),
            _fmt(r.krcc),
            _fmt(r.plcc),
            _fmt(r.rmse),
        )
    ui.out.print(t)
    ui.out.print(
        f"→ {out_dir / 'summary.csv'}, {out_dir / 'predictions.csv'}, {png}", highlight=False
    )


@bench_app.command("mcq")
def mcq(
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
    vlm: VlmOpt = None,
    model: ModelOpt = None,
    vlm_fallback: FallbackOpt = None,
    device: Device = None,
    config: ConfigOpt = None,
    prompts: PromptsDir = None,
    tool_cards: CardsDir = None,
    quiet: Quiet = False,
) -> None:
    """Multiple-choice accuracy per track (planner, executor-distortion, executor-tool, summarizer)."""
    from agentiqa_cli.bench.agent_method import answer_questions
    from agentiqa_cli.bench.mcq import load_mcq, make_example_mcq, score_mcq, write_mcq_csv
    from agentiqa_cli.io.trace import TraceWriter

    if example is not None:
        path = make_example_mcq(example)
        ui.out.print(f"example questions → {path}", highlight=False)
        return
    if questions is None:
        raise ConfigError("give a questions JSONL file (or --write-example DIR)")
    session = _session(
        config,
        vlm=vlm,
        model=model,
        vlm_fallback=vlm_fallback,
        device=device,
        prompts_dir=prompts,
        cards_dir=tool_cards,
    )
    qs = load_mcq(questions)
    out_dir.mkdir(parents=True, exist_ok=True)
    trace = TraceWriter(out_dir / "trace.jsonl")
    reporter = ui.Reporter(len(qs), "eval-bench mcq", quiet)
    with reporter.running():
        answers = asyncio.run(
            answer_questions(session, trace, qs, on_item=lambda: reporter.advance("", "ok"))
        )
    trace.close()

    def answer(q: Any) -> tuple[str | None, dict[str, Any]]:
        letter, info = answers[q.id]
        if letter is None:  # unanswered: recorded with its reason, counted wrong
            raise VLMError(str(info.get("error", "no answer")))
        return letter, info

    report = score_mcq(qs, answer)
    write_mcq_csv(report, out_dir / "answers.csv")
    t = Table(
        title=f"{questions.name}: {report.n} questions, backend {session.settings.vlm}",
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
def synth(
    clean_dir: Annotated[Path, typer.Argument(help="A folder of clean images.")],
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
    device: Device = None,
    vlm: VlmOpt = None,
    model: ModelOpt = None,
    config: ConfigOpt = None,
    tool_cards: CardsDir = None,
    quiet: Quiet = False,
) -> None:
    """Distort clean images (5 levels per kind, fixed seed) and check each method's score falls."""
    from agentiqa_cli.bench.synth_eval import write_synth_csv

    session = _session(config, vlm=vlm, model=model, device=device, cards_dir=tool_cards)
    rows, report = run_synth(
        session,
        clean_dir,
        out_dir,
        _tool_list(tools),
        assess,
        _tool_list(kinds) or None,
        levels,
        size,
        seed,
        quiet,
    )
    write_synth_csv(report, out_dir / "synth.csv")
    ui.out.print(synth_table(report))
    ui.out.print(f"{len(rows)} images → {out_dir / 'synth.csv'}", highlight=False)


def run_synth(
    session: Any,
    clean_dir: Path,
    out_dir: Path,
    tool_names: list[str],
    assess: bool,
    kinds: list[str] | None,
    levels: int,
    size: int,
    seed: int,
    quiet: bool,
) -> tuple[Any, Any]:
    from agentiqa_cli.bench.agent_method import agent_method
    from agentiqa_cli.bench.methods import tool_method
    from agentiqa_cli.bench.synth import generate_from_dir
    from agentiqa_cli.bench.synth_eval import evaluate_synth, load_manifest, synth_items
    from agentiqa_cli.io.trace import TraceWriter

    out_dir.mkdir(parents=True, exist_ok=True)
    manifest = generate_from_dir(
        clean_dir, out_dir / "images", kinds=kinds, levels=levels, size=size, seed=seed
    )
    rows = load_manifest(manifest)
    items = synth_items(rows, with_reference=False)
    default_nr = [c.name for c in session.cards.default_set(has_reference=False)]
    names = tool_names or default_nr
    trace = TraceWriter(out_dir / "trace.jsonl")
    reporter = ui.Reporter(len(items) * (len(names) + int(assess)), "eval-bench synth", quiet)
    store: dict[str, Any] = {}
    preds: dict[str, list[float | None]] = {}
    findings: dict[str, Any] = {}
    with reporter.running():
        tick = lambda: reporter.advance("", "ok")  # noqa: E731
        if assess:
            preds["assess"] = agent_method(session, trace, store, on_item=tick)(items)
            findings["assess"] = [
                r.distortions if r.status == "ok" else None for r in store["assess"]
            ]
        for card in session.cards.resolve(names):
            if card.mode == "FR":
                raise ConfigError(
                    f"{card.name} is full-reference; synth compares no-reference methods"
                )
            preds[card.name] = tool_method(session.runner, card, on_item=tick)(items)
    # `agentiqa score`'s default: the plain mean of the default no-reference set
    if default_nr and all(n in preds for n in default_nr):
        cols = [preds[n] for n in default_nr]
        preds["score (default set)"] = [
            None if any(v is None for v in row) else sum(row) / len(row)
            for row in zip(*cols, strict=True)
        ]
    trace.close()
    return rows, evaluate_synth(rows, preds, findings)


def synth_table(report: Any) -> Table:
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
def calibrate(
    dataset: Annotated[
        Path, typer.Argument(help="A labelled dataset (any eval-bench mos layout).")
    ],
    tools: Annotated[str, typer.Option("--tools", "-t", help="Tools to fit (comma-separated).")],
    out: Annotated[Path, typer.Option("--out", "-o", help="The overlay YAML to write.")] = Path(
        "calibration.yaml"
    ),
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
    device: Device = None,
    config: ConfigOpt = None,
    tool_cards: CardsDir = None,
    quiet: Quiet = False,
) -> None:
    """Fit each tool's five-parameter logistic to MOS and write an overlay for --calibration."""
    from agentiqa_cli.bench.calibrate import calibrate as fit_all
    from agentiqa_cli.bench.calibrate import write_overlay
    from agentiqa_cli.bench.datasets import load_dataset

    rng: tuple[float, float] | None = None
    if mos_range:
        try:
            lo, hi = (float(v) for v in mos_range.split(","))
            rng = (lo, hi)
        except ValueError:
            raise ConfigError(f"--mos-range must be LO,HI, got {mos_range!r}") from None
    session = _session(config, device=device, cards_dir=tool_cards)
    cards = session.cards.resolve(_tool_list(tools))
    data = load_dataset(dataset, layout, limit=limit, sample=sample, seed=seed)
    reporter = ui.Reporter(len(data.items), "calibrate", quiet)
    with reporter.running():
        fits = fit_all(
            data, session.runner, cards, mos_range=rng, on_item=lambda: reporter.advance("", "ok")
        )
    written = write_overlay(
        fits, out, f"{data.name} ({data.layout}, {len(data.items)} images)", include_suspect
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
    ui.out.print(f"{written} tool(s) → {out} (apply with --calibration {out})", highlight=False)
