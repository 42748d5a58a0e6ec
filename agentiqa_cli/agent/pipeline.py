"""The agent per image: plan → detect/analyse → select → execute tools → summarize (→ replan).

Costs are kept per image: the plan depends only on (query, reference mode) and is made
once per batch; tool selection depends only on the distortion set and the cards and is
cached; detection and analysis share one constrained call when both are on; the level's
log-probabilities come from the summarizer's own constrained answer. Tools run in a worker
thread so other images' VLM requests proceed meanwhile.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import TypeVar

from agentiqa_cli.agent.fusion import fuse, level_logprobs, softmax_levels
from agentiqa_cli.agent.replies import AnalyzeReply, DetectReply, ScoreReply, SelectReply
from agentiqa_cli.agent.roles import Asker
from agentiqa_cli.batch import Pair
from agentiqa_cli.records import (
    LEVELS,
    Finding,
    Plan,
    PlanSwitches,
    Result,
    ToolScore,
    Usage,
    level_of,
)
from agentiqa_cli.tools.cards import CardSet, ToolCard
from agentiqa_cli.tools.runner import ToolRunner

MAX_REPLANS = 2
SUMMARY_PREFIX = '{"level":"'  # the summarizer's JSON starts with the level (see prompts)


@dataclass
class AgentOptions:
    query: str
    learned_tools: bool = False  # offer tools that need downloaded weights to the selector
    default_nr: Sequence[str] = ()
    default_fr: Sequence[str] = ()


class Agent:
    def __init__(self, asker: Asker, cards: CardSet, runner: ToolRunner, options: AgentOptions):
        self.ask = asker
        self.cards = cards
        self.runner = runner
        self.opt = options
        self.evidence_cards = [c for c in cards if c.backend == "builtin"]
        self._plans: dict[tuple[str, bool], asyncio.Future[Plan]] = {}
        self._selections: dict[tuple[frozenset[str], bool], asyncio.Future[dict[str, str]]] = {}

    # -- shared, cached steps ---------------------------------------------------------------
    def candidates(self, full_reference: bool) -> list[ToolCard]:
        return [
            c
            for c in self.cards
            if (full_reference or c.mode == "NR") and (self.opt.learned_tools or not c.weights)
        ]

    async def plan(
        self, query: str, has_reference: bool, usage: Usage, pair: Pair | None = None
    ) -> Plan:
        """The plan for (query, reference mode): asked once per batch, traced for every image."""
        image, image_key = (pair.job.name, pair.key) if pair is not None else (None, None)
        names = [c.name for c in self.cards]
        plan, cached = await _once(
            self._plans,
            (query, has_reference),
            lambda: self.ask.plan(query, has_reference, names, usage, image, key=image_key),
        )
        if cached and pair is not None:
            self.ask.trace_cached(
                "plan", pair, {"query": query, "has_reference": has_reference},
                plan.model_dump(mode="json"),
            )  # fmt: skip
        return plan

    async def select(
        self, categories: Sequence[str], full_reference: bool, usage: Usage, pair: Pair
    ) -> dict[str, str]:
        async def ask() -> dict[str, str]:
            cands = self.candidates(full_reference)
            reply: SelectReply = await self.ask.select(
                categories, full_reference, cands, usage, pair
            )
            names = {c.name for c in cands}
            return {
                str(cat): tool
                for scope_tools in reply.selected_tools.values()
                for cat, tool in scope_tools.items()
                if tool in names
            }

        chosen, cached = await _once(self._selections, (frozenset(categories), full_reference), ask)
        if cached:
            self.ask.trace_cached("select", pair, {"categories": sorted(categories)}, chosen)
        return dict(chosen)

    async def _evidence(self, pair: Pair) -> list[ToolScore]:
        """Every signal detector on the image: cheap, and what detection rests on."""
        evidence = await asyncio.to_thread(
            self.runner.run_many, self.evidence_cards, pair.image, None
        )
        self.ask.trace_tools(pair, evidence, note="evidence (signal detectors)")
        return evidence

    # -- one image ----------------------------------------------------------------------------
    async def __call__(self, pair: Pair) -> Result:
        usage = Usage()
        has_ref = pair.reference is not None
        plan = await self.plan(self.opt.query, has_ref, usage, pair)
        evidence = await self._evidence(pair)

        findings: list[Finding] = []
        scores: list[ToolScore] = []
        summary: ScoreReply | None = None
        reply_lp: dict[str, float] | None = None
        for round_ in range(MAX_REPLANS + 1):
            findings = await self._examine(plan, pair, evidence, usage)
            scores = await self._tools(plan, pair, findings, evidence, usage)
            summary, reply = await self.ask.summarize(plan, pair, findings, scores, evidence, usage)
            reply_lp = level_logprobs(reply, SUMMARY_PREFIX)
            if summary.sufficient or round_ == MAX_REPLANS:
                break
            plan = await self._replan(plan, pair, summary.reasoning, usage, round_ + 1)

        assert summary is not None
        norms = [s.norm for s in scores if s.ok and s.norm is not None]
        p = softmax_levels(reply_lp) if reply_lp else None
        # a score needs evidence: tool scores, or the VLM's level probabilities
        score = fuse(norms, p) if (norms or p) else None
        result = Result(
            image=pair.job.name,
            reference=pair.job.ref_name,
            key=pair.key,
            score=score,
            # no score, no level: the summarizer's stated level alone is not a measurement
            level=level_of(score) if score is not None else "",
            answer=summary.answer,
            distortions=[f for f in findings if f.severity != "none"],
            tools=scores,
            usage=usage,
        )
        self.ask.trace_final(
            pair,
            result,
            {
                "p": p,
                "tool_mean": (sum(norms) / len(norms)) if norms else None,
                "reasoning": summary.reasoning,
                "levels": list(LEVELS),
            },
        )
        return result

    async def answer(self, pair: Pair, options: dict[str, str]) -> tuple[str, Result]:
        """A multiple-choice question about one image (the agent's query is the question):
        the same evidence as ``assess``, then the interpretation summarizer picks a letter."""
        usage = Usage()
        plan = await self.plan(self.opt.query, pair.reference is not None, usage, pair)
        evidence = await self._evidence(pair)
        findings = await self._examine(plan, pair, evidence, usage)
        scores = await self._tools(plan, pair, findings, evidence, usage)
        reply = await self.ask.interpret(
            plan,
            pair,
            options,
            findings,
            scores,
            evidence,
            self.candidates(pair.reference is not None),
            usage,
        )
        result = Result(
            image=pair.job.name,
            reference=pair.job.ref_name,
            key=pair.key,
            answer=f"{reply.final_answer}: {reply.quality_reasoning}"[:300],
            distortions=[f for f in findings if f.severity != "none"],
            tools=scores,
            usage=usage,
        )
        self.ask.trace_final(pair, result, {"final_answer": reply.final_answer})
        return reply.final_answer, result

    async def _replan(
        self, plan: Plan, pair: Pair, feedback: str, usage: Usage, round_: int
    ) -> Plan:
        """Ask the planner again with the summarizer's reason; whatever it answers, the new
        plan runs at least detection, analysis and tools, so the next round has evidence."""
        fresh = await self.ask.plan(
            self.opt.query,
            pair.reference is not None,
            self.cards.names(),
            usage,
            image=pair.job.name,
            feedback=f"round {round_}: {feedback}",
        )
        return widened(fresh if fresh.query_type == "IQA" else plan)

    async def _examine(
        self, plan: Plan, pair: Pair, evidence: list[ToolScore], usage: Usage
    ) -> list[Finding]:
        sw = plan.plan
        if plan.query_type != "IQA":
            return []
        if sw.distortion_detection and sw.distortion_analysis:
            reply: AnalyzeReply = await self.ask.examine(plan, pair, evidence, usage)
            return _findings_of(reply)
        if sw.distortion_detection:
            det: DetectReply = await self.ask.detect(plan, pair, evidence, usage)
            return [
                Finding(
                    scope=s,
                    category=c,
                    severity="moderate",
                    reason="detected; severity not analysed",
                )
                for s, cats in det.distortion_set.items()
                for c in cats
            ]
        if plan.distortions and sw.distortion_analysis:
            return _findings_of(await self.ask.analyze(plan, pair, evidence, usage))
        if plan.distortions:
            return [
                Finding(
                    scope=s,
                    category=c,
                    severity="moderate",
                    reason="named in the query; not analysed",
                )
                for s, cats in plan.distortions.items()
                for c in cats
            ]
        return []

    def _measuring(self, category: str, tool: str, evidence: list[ToolScore]) -> str:
        """A category's built-in detectors act as one instrument: when the selected tool is
        one of them, the reading used is the one that measured the problem in this image
        (the worst of them), e.g. ``underexposure`` rather than ``overexposure`` for a dark
        photo. The selection stays per distortion set (cached); the reading is per image."""
        card = self.cards.get(tool)
        if card.backend != "builtin":
            return tool
        same = [
            s
            for s in evidence
            if s.ok and s.norm is not None and category in self.cards.get(s.tool).distortions
        ]
        return min(same, key=lambda s: (s.norm, s.tool)).tool if same else tool

    async def _tools(
        self,
        plan: Plan,
        pair: Pair,
        findings: list[Finding],
        evidence: list[ToolScore],
        usage: Usage,
    ) -> list[ToolScore]:
        sw = plan.plan
        if plan.query_type != "IQA" or not sw.tool_execute:
            return []
        full_ref = pair.reference is not None
        by_category: dict[str, str] = {}
        if plan.required_tools:
            chosen = [n for n in plan.required_tools if n in self.cards]
        else:
            cats = list(dict.fromkeys(f.category for f in findings if f.severity != "none"))
            if sw.tool_selection and cats and self.candidates(full_ref):
                selected = await self.select(cats, full_ref, usage, pair)
                by_category = {c: self._measuring(c, t, evidence) for c, t in selected.items()}
            chosen = list(dict.fromkeys(by_category.values())) or list(
                self.opt.default_fr if full_ref else self.opt.default_nr
            )
        cards = [self.cards.get(n) for n in chosen]
        if not full_ref:
            cards = [c for c in cards if c.mode == "NR"]
        # evidence already holds the detectors' scores: reuse them instead of recomputing
        done = {s.tool: s for s in evidence}
        todo = [c for c in cards if c.name not in done]
        ran = await asyncio.to_thread(self.runner.run_many, todo, pair.image, pair.reference)
        self.ask.trace_tools(pair, ran)
        fresh = {s.tool: s for s in ran}
        for_cat = {tool: cat for cat, tool in by_category.items()}
        return [
            (done.get(c.name) or fresh[c.name]).model_copy(
                update={"distortion": for_cat.get(c.name)}
            )
            for c in cards
        ]


K = TypeVar("K")
V = TypeVar("V")


async def _once(
    cache: dict[K, asyncio.Future[V]], key: K, make: Callable[[], Awaitable[V]]
) -> tuple[V, bool]:
    """The value for ``key``, made by the first caller; later and concurrent callers await
    the same future. A failure is not kept: the next caller tries again. Returns
    (value, whether it came from the cache)."""
    fut = cache.get(key)
    if fut is not None:
        return await asyncio.shield(fut), True
    fut = asyncio.get_running_loop().create_future()
    cache[key] = fut
    try:
        value = await make()
    except BaseException as e:
        del cache[key]
        fut.set_exception(e)
        fut.exception()  # mark retrieved: waiters re-raise it themselves
        raise
    fut.set_result(value)
    return value, False


def _findings_of(reply: AnalyzeReply) -> list[Finding]:
    return [
        Finding(scope=scope, category=item.type, severity=item.severity, reason=item.explanation)
        for scope, items in reply.distortion_analysis.items()
        for item in items
    ]


def widened(plan: Plan) -> Plan:
    """The summarizer found the evidence insufficient: widen the plan (detect, analyse,
    select and run tools) for another round."""
    return plan.model_copy(
        update={
            "plan": PlanSwitches(
                distortion_detection=plan.distortions is None,
                distortion_analysis=True,
                tool_selection=not plan.required_tools,
                tool_execute=True,
            )
        }
    )
