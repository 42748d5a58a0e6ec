"""The rounds of an evaluation: plan → sample → assess → feedback (Evaluation Agent §3.2.3).

Each round the planner (``eval_plan``: a VLM, or the rules version) names a sub-aspect, a
tool and n; n images are drawn without replacement (half the hardest of a random pool on
the sub-aspect's detector, half random) or generated from the plan's prompts; each is
assessed by the real ``assess`` agent or a card's scorer through ``Runtime.run``, so rows
are exactly what ``assess``/``score`` write; the estimates go back to the planner. The loop
refuses a repeated sub-aspect and a stop that comes before every sub-aspect had a round,
and ends at ``max_rounds``/``max_samples`` whatever the planner says.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from agentiqa_cli.asking.asker import Asker
from agentiqa_cli.batch import Process
from agentiqa_cli.errors import VLMError
from agentiqa_cli.evaluate.aspects import detectors_for, measured_categories, resolve
from agentiqa_cli.evaluate.draws import Folder, GeneratorSource, drawn, generated
from agentiqa_cli.evaluate.planning import (
    N_MIN,
    EvalPlanInput,
    EvalPlanReply,
    RoundView,
    rules_eval_plan,
)
from agentiqa_cli.evaluate.records import (
    Estimate,
    RoundDraw,
    RoundEvent,
    RunIdentity,
    Sample,
    SubAspect,
    Verdict,
    aspect_key,
)
from agentiqa_cli.evaluate.state import (
    SAMPLED,
    EvalState,
    Measure,
    estimates,
    read_draws,
    read_rows,
    tier_mix,
)
from agentiqa_cli.evaluate.tiers import Tiers
from agentiqa_cli.evaluate.verdict import make_verdict
from agentiqa_cli.imaging.discover import Job
from agentiqa_cli.io.stream import RowWriter
from agentiqa_cli.io.trace import ImageTrace, TraceWriter
from agentiqa_cli.records import CATEGORIES, Result
from agentiqa_cli.runtime import Runtime

EVAL_COLUMNS = ["round", "sub_aspect", "sample", "tier", "prompt"]


@dataclass(frozen=True)
class EvalConfig:
    query: str
    max_rounds: int = 5
    max_samples: int = 45
    seed: int = 0
    tiers: Tiers = field(default_factory=Tiers)
    reasks: int = 2  # refused replies asked again before the rules version plans the round


@dataclass
class Hooks:
    """What the command shows while it runs (the core never prints)."""

    on_round: Callable[[RoundDraw], None] | None = None
    on_result: Callable[[Result], None] | None = None
    on_note: Callable[[str], None] | None = None


@dataclass(frozen=True)
class Stop:
    reason: str
    summary: str = ""
    failed: bool = False  # the planner broke down: the verdict rests on fewer rounds


class Evaluation:
    def __init__(
        self,
        rt: Runtime,
        config: EvalConfig,
        source: Folder | GeneratorSource,
        hooks: Hooks | None = None,
    ):
        self.rt = rt
        self.config = config
        self.source = source
        self.hooks = hooks or Hooks()
        self.state = EvalState()
        self.cells: dict[str, dict[str, str]] = {}  # image → its evaluate columns
        settings = rt.settings
        self.measure = Measure(
            rt.cards, frozenset(settings.tools or [c.name for c in rt.cards.default_set(False)])
        )
        usable = [
            c for c in rt.cards if c.mode == "NR" and (settings.learned_tools or not c.weights)
        ]
        self.tool_names = ["assess", *sorted(c.name for c in usable)]
        self.assess_measures = measured_categories(self.measure.assess_set, rt.cards)
        self.card_for = {
            str(c): detectors_for(c, rt.cards)[0]
            for c in CATEGORIES
            if c not in self.assess_measures and detectors_for(c, rt.cards)
        }
        self._processes: dict[str, tuple[Process, str]] = {}
        self.stop: Stop | None = None

    # -- identity, CSV cells, resume --------------------------------------------------------
    @property
    def population(self) -> int | None:
        return len(self.source.names) if isinstance(self.source, Folder) else None

    def identity(self) -> RunIdentity:
        """What a resumed run must share with the cut one."""
        if isinstance(self.source, Folder):
            digest = hashlib.sha256("\0".join(self.source.names).encode()).hexdigest()[:16]
            src = f"folder:{len(self.source.names)}:{digest}"
        else:
            src = "generator:" + " ".join(self.source.generator.argv)
        return {
            "query": self.config.query,
            "seed": self.config.seed,
            "source": src,
            "tiers": list(self.config.tiers.cuts),
        }

    def cells_of(self, result: Result) -> Mapping[str, str]:
        """The evaluate columns of a row (the results writer's ``extra``)."""
        cells = dict(self.cells.get(result.image, {}))
        if result.status == "ok" and result.score is not None:
            cells["tier"] = self.config.tiers.tier(result.score)
        return cells

    def resume(self, trace: Path, csv_path: Path) -> int:
        """Take over a cut run's rounds and rows; returns how many rounds it had drawn."""
        self.state.rounds, self.state.declared = read_draws(trace, self.identity())
        rows = read_rows(csv_path)
        self.state.rows = {s: rows[s] for s in self.state.sampled if s in rows}
        for draw in self.state.rounds:
            self._register(draw, draw.samples)
        return len(self.state.rounds)

    # -- the loop -------------------------------------------------------------------------------
    async def run(self, writer: RowWriter, tracer: TraceWriter) -> Verdict:
        t0 = time.perf_counter()
        self.writer, self.tracer = writer, tracer
        self.events: ImageTrace = tracer.bind(None)
        self.asker: Asker = await self.rt.asker()
        for draw, todo in self.state.pending():  # a resumed run first finishes its rounds
            await self._assess(draw, [draw.samples[i] for i in todo])
        self.stop = await self._rounds()
        verdict = self.verdict(time.perf_counter() - t0)
        self._event(RoundEvent(phase="verdict", verdict=verdict))
        return verdict

    async def _rounds(self) -> Stop:
        cfg = self.config
        while True:
            if len(self.state.rounds) >= cfg.max_rounds:
                return Stop(f"reached --max-rounds {cfg.max_rounds}")
            left = cfg.max_samples - self.state.drawn
            if left < N_MIN:
                return Stop(f"reached --max-samples {cfg.max_samples}")
            if isinstance(self.source, Folder) and not self._remaining():
                return Stop("every image of the folder was assessed")
            decision = await self._decide()
            if isinstance(decision, Stop):
                return decision
            reply, aspect = decision
            draw = await self._draw(reply, aspect, min(reply.n, left))
            self.state.rounds.append(draw)
            self._event(
                RoundEvent(
                    phase=SAMPLED,
                    round=draw.round,
                    run=self.identity(),
                    declared=self.state.declared,
                    draw=draw,
                )
            )
            if self.hooks.on_round:
                self.hooks.on_round(draw)
            await self._assess(draw, draw.samples)
            self._event(RoundEvent(phase="assessed", round=draw.round, estimates=self.estimates()))

    # -- plan ---------------------------------------------------------------------------------
    def plan_input(self, feedback: str = "") -> EvalPlanInput:
        cfg = self.config
        return EvalPlanInput(
            query=cfg.query,
            round=len(self.state.rounds) + 1,
            max_rounds=cfg.max_rounds,
            samples_left=cfg.max_samples - self.state.drawn,
            population=self.population,
            tool_names=self.tool_names,
            cuts=list(cfg.tiers.cuts),
            history=[self._view(r) for r in self.state.rounds],
            estimates=self.estimates(),
            declared=self.state.declared,
            assess_measures=self.assess_measures,
            card_for=self.card_for,
            seed=cfg.seed,
            feedback=feedback,
        )

    async def _decide(self) -> tuple[EvalPlanReply, SubAspect] | Stop:
        feedback = ""
        k = len(self.state.rounds) + 1
        for _ in range(self.config.reasks + 1):
            try:
                reply, _ = await self.asker.ask(
                    self.plan_input(feedback), EvalPlanReply, self.state.planner, self.events
                )
            except VLMError as e:
                return Stop(f"the planner failed: {e}", failed=True)
            if not self.state.declared:
                self.state.declared = list(
                    dict.fromkeys(resolve(a).name for a in reply.sub_aspects)
                )
            why = self.refusal(reply)
            if why is None:
                return _accept(reply)
            self._note(f"round {k}: the planner's reply was refused: {why}")
            self._event(RoundEvent(phase="refused", round=k, reason=why, reply=reply.model_dump()))
            feedback = why
        reply = rules_eval_plan(self.plan_input(feedback))
        self._note(f"round {k}: the rules version plans it after {self.config.reasks + 1} refusals")
        self.events.emit("eval_plan", parsed=reply.model_dump(), note="rules version (refusals)")
        return _accept(reply)

    def refusal(self, reply: EvalPlanReply) -> str | None:
        """Why the loop will not follow ``reply`` (None: it will)."""
        probed = self.state.probed()
        if reply.done:
            if not self.state.rounds:
                return "no round has run yet; sample before concluding"
            if not reply.summary.strip():
                return "a stop needs a summary that justifies the verdict"
            missing = [d for d in self.state.declared if aspect_key(d) not in probed]
            if missing:
                return f"sub-aspects without a round yet: {', '.join(missing)}"
            return None
        aspect = resolve(reply.sub_aspect)
        if aspect.key in probed:
            return (
                f"sub-aspect {aspect.name!r} already had round {probed[aspect.key]}; "
                "repeated sub-aspects are refused, choose another"
            )
        if reply.tool not in self.tool_names:
            return f"unknown tool {reply.tool!r}; one of {', '.join(self.tool_names)}"
        return None

    # -- sample ---------------------------------------------------------------------------------
    def _remaining(self) -> list[str]:
        assert isinstance(self.source, Folder)
        taken = self.state.sampled
        return [n for n in self.source.names if n not in taken]

    async def _draw(self, reply: EvalPlanReply, aspect: SubAspect, n: int) -> RoundDraw:
        k, cfg = len(self.state.rounds) + 1, self.config
        if isinstance(self.source, GeneratorSource):
            return generated(self.source, k, aspect, reply, cfg.query, n, cfg.seed)
        default_set = sorted(self.measure.assess_set)
        return await drawn(
            self.rt, self.source, self.state.sampled, k, aspect, reply, n, cfg.seed, default_set
        )

    # -- assess ---------------------------------------------------------------------------------
    def _register(self, draw: RoundDraw, samples: list[Sample]) -> None:
        for s in samples:
            self.cells[s.image] = {
                "round": str(draw.round),
                "sub_aspect": draw.sub_aspect.name,
                "sample": s.stratum,
                "prompt": s.prompt,
            }

    async def _process(self, tool: str) -> tuple[Process, str]:
        if tool not in self._processes:
            if tool == "assess":
                self._processes[tool] = (await self.rt.agent(self.config.query), "assess")
            else:
                self._processes[tool] = (self.rt.scorer([self.rt.cards.get(tool)]), "score")
        return self._processes[tool]

    async def _assess(self, draw: RoundDraw, samples: list[Sample]) -> None:
        self._register(draw, samples)
        process, command = await self._process(draw.tool)
        if isinstance(self.source, GeneratorSource):
            jobs = await self._generate(draw, samples)
        else:
            jobs = [self.source.job(s.image) for s in samples]
        summary = await self.rt.run(
            jobs,
            process,
            command=command,
            trace=self.tracer,
            writer=self.writer,
            on_result=self.hooks.on_result,
        )
        for r in summary.results:
            self.state.rows[r.image] = r

    async def _generate(self, draw: RoundDraw, samples: list[Sample]) -> list[Job]:
        """One image per sample, one call at a time (generators are usually one GPU job);
        a failed call becomes the sample's error row and the round goes on."""
        assert isinstance(self.source, GeneratorSource)
        jobs = []
        for s in samples:
            path = Path(s.image)
            seed = self.config.seed * 1000 + draw.round * 10 + draw.samples.index(s)
            why = await self.source.generator.run(s.prompt, path, seed)
            if why is None:
                jobs.append(Job(image=path, root=path.parent, tag=s.prompt))
                continue
            key = hashlib.sha256(f"{self.identity()}|{s.image}|{s.prompt}".encode()).hexdigest()
            row = Result(image=s.image, key=key[:24], status="error", error=why, transient=True)
            self.writer.write(row)
            self.tracer.bind(row.image, row.key).emit("error", note=why)
            self.state.rows[row.image] = row
            if self.hooks.on_result:
                self.hooks.on_result(row)
        return jobs

    # -- feedback and verdict ---------------------------------------------------------------------
    def estimates(self) -> list[Estimate]:
        return estimates(self.state, self.population, self.config.tiers, self.measure)

    def _view(self, r: RoundDraw) -> RoundView:
        rows = [self.state.rows.get(s.image) for s in r.samples]
        return RoundView(
            round=r.round,
            sub_aspect=r.sub_aspect.name,
            tool=r.tool,
            n=r.n,
            assessed=sum(row is not None for row in rows),
            errors=sum(row is not None and row.status == "error" for row in rows),
        )

    def verdict(self, seconds: float = 0.0) -> Verdict:
        stop = self.stop or Stop("not run")
        return make_verdict(
            self.config.query,
            self.estimates(),
            tier_mix(self.state, self.population, self.config.tiers, self.measure),
            self.state,
            self.population,
            self.config.tiers,
            stop.reason,
            stop.summary,
            seconds,
        )

    def _event(self, event: RoundEvent) -> None:
        self.events.emit("eval_round", parsed=event.model_dump(mode="json", exclude_none=True))

    def _note(self, message: str) -> None:
        if self.hooks.on_note:
            self.hooks.on_note(message)


def _accept(reply: EvalPlanReply) -> tuple[EvalPlanReply, SubAspect] | Stop:
    if reply.done:
        return Stop("the planner judged the evidence sufficient", summary=reply.summary)
    return reply, resolve(reply.sub_aspect)
