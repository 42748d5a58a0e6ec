"""eval-bench and calibrate run exactly what users run, then reduce the results.

Each method is a process of the commands — ``score`` with one tool, ``score``'s default
set with its fusion, or the ``assess`` agent — run through ``Runtime.run`` (same decoding,
pixel limits, fusion, VLM connection and fallback). The functions here only turn those
``Result`` rows into the benchmark's inputs.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from agentiqa_cli.batch import Pair, Process
from agentiqa_cli.bench.calibrate import CalibrationFit, fit_tool
from agentiqa_cli.bench.datasets import MosDataset
from agentiqa_cli.bench.mcq import MCQReport, MCQuestion, score_mcq
from agentiqa_cli.bench.methods import Item
from agentiqa_cli.bench.mos import MosReport, report_from_predictions
from agentiqa_cli.bench.synth import generate_from_dir
from agentiqa_cli.bench.synth_eval import SynthReport, evaluate_synth, load_manifest, synth_items
from agentiqa_cli.errors import ConfigError
from agentiqa_cli.io.trace import TraceWriter
from agentiqa_cli.records import Finding, Result
from agentiqa_cli.runtime import Runtime
from agentiqa_cli.tools.cards import ToolCard

OnResult = Callable[[Result], None]
DEFAULT_SET = "score (default set)"


@dataclass
class Bench:
    """Where a benchmark's rows go: one trace, one progress callback."""

    rt: Runtime
    trace: TraceWriter
    on_result: OnResult | None = None
    results: dict[str, list[Result]] = field(default_factory=dict)  # method → rows, item order

    async def run(
        self, name: str, items: Sequence[Item], process: Process, command: str, refs: bool
    ) -> list[Result]:
        """One row per item, in item order. Items sharing a reference run next to each other
        so the decoder's reference cache keeps it (81 images per reference in KADID-10k)."""
        jobs = [i.job(with_reference=refs) for i in items]
        order = sorted(jobs, key=lambda j: str(j.reference or ""))
        summary = await self.rt.run(
            order, process, command=command, trace=self.trace, on_result=self.on_result
        )
        by_job = {id(j): r for j, r in zip(summary.jobs, summary.results, strict=True)}
        rows = [by_job[id(j)] for j in jobs]
        self.results[name] = rows
        return rows

    async def methods(
        self,
        items: Sequence[Item],
        tools: Sequence[ToolCard],
        assess: bool,
        default_set: bool = False,
    ) -> dict[str, list[float | None]]:
        """Each method's score per item (None where it gave none)."""
        has_refs = any(i.reference is not None for i in items)
        if not (assess or tools or default_set):
            raise ConfigError("nothing to evaluate: give --tools and/or keep --assess")
        for card in tools:
            if card.mode == "FR" and not has_refs:
                raise ConfigError(
                    f"{card.name} is full-reference but the dataset has no references"
                )
        if assess:
            await self.run("assess", items, await self.rt.agent(), "assess", has_refs)
        for card in tools:
            scorer = self.rt.scorer([card])
            await self.run(card.name, items, scorer, "score", card.mode == "FR")
        if default_set:
            scorer = self.rt.scorer(self.rt.score_cards(has_reference=False))
            await self.run(DEFAULT_SET, items, scorer, "score", False)
        return {name: [scored(r) for r in rows] for name, rows in self.results.items()}


def scored(r: Result) -> float | None:
    return r.score if r.status == "ok" else None


async def run_mos(
    bench: Bench,
    data: MosDataset,
    tools: Sequence[ToolCard],
    assess: bool,
    *,
    bootstrap: int,
    seed: int,
) -> MosReport:
    items = [i.item() for i in data.items]
    predictions = await bench.methods(items, tools, assess)
    return report_from_predictions(data, predictions, bootstrap=bootstrap, seed=seed)


async def run_synth(
    bench: Bench,
    clean_dir: Path,
    out_dir: Path,
    tools: Sequence[ToolCard],
    assess: bool,
    *,
    kinds: list[str] | None,
    levels: int,
    size: int,
    seed: int,
) -> SynthReport:
    """Distort the clean images, then every method plus ``score``'s default set."""
    for card in tools:
        if card.mode == "FR":
            raise ConfigError(f"{card.name} is full-reference; synth compares no-reference methods")
    manifest = generate_from_dir(
        clean_dir, out_dir / "images", kinds=kinds, levels=levels, size=size, seed=seed
    )
    rows = load_manifest(manifest)
    items = synth_items(rows, with_reference=False)
    predictions = await bench.methods(items, tools, assess, default_set=True)
    findings: dict[str, Sequence[Sequence[Finding] | None]] = {}
    if assess:
        findings["assess"] = [
            r.distortions if r.status == "ok" else None for r in bench.results["assess"]
        ]
    return evaluate_synth(rows, predictions, findings)


async def run_mcq(
    bench: Bench, questions: Sequence[MCQuestion], whole_agent: bool = False
) -> MCQReport:
    """Every question through the agent, its question as the query, each track answered
    from the component it tests (``whole_agent``: every track from the whole agent);
    unanswered questions (no evidence decides them, a VLM failure) are error rows, counted
    wrong with the reason."""
    by_id = {q.id: q for q in questions}
    agents = {q.question: await bench.rt.agent(q.question) for q in questions}

    async def answer(pair: Pair) -> Result:
        q = by_id[pair.job.tag]
        return await agents[q.question].answer(pair, q.options, None if whole_agent else q.track)

    items = [q.item() for q in questions]
    rows = await bench.run("mcq", items, answer, "mcq", refs=True)
    return score_mcq(questions, {q.id: r for q, r in zip(questions, rows, strict=True)})


async def run_calibrate(
    bench: Bench,
    data: MosDataset,
    cards: Sequence[ToolCard],
    mos_range: tuple[float, float] | None = None,
) -> list[CalibrationFit]:
    """Raw scores of every tool on every image (one pass, each image decoded once), then
    each tool's logistic fitted against MOS."""
    items = [i.item() for i in data.items]
    refs = any(c.mode == "FR" for c in cards)
    rows = await bench.run("calibrate", items, bench.rt.scorer(cards), "score", refs)
    mos = [i.mos for i in data.items]
    scale = mos_range or data.mos_range
    fits = []
    for card in cards:
        raw = [raw_of(r, card.name) for r in rows]
        fits.append(fit_tool(card, raw, mos, scale))
    return fits


def raw_of(r: Result, tool: str) -> float | None:
    """The raw reading of ``tool`` in a row, when it ran."""
    for s in r.tools:
        if s.tool == tool and s.error is None:
            return s.raw
    return None
