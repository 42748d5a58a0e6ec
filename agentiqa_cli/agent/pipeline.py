"""The agent per image: plan → detect/analyse → select → execute tools → summarize (→ replan).

Costs are kept per image: the plan depends only on (query, reference mode) and is made
once per batch; tool selection depends only on the distortion set and the cards and is
cached; detection and analysis share one constrained call when both are on; the level's
log-probabilities come from the summarizer's own constrained answer. Tools run in a worker
thread so other images' VLM requests proceed meanwhile.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from pydantic import JsonValue

from agentiqa_cli.agent.advice import Advice, ToolAdvisor
from agentiqa_cli.agent.fusion import capped, fuse, level_logprobs, nonfinite_note, softmax_levels
from agentiqa_cli.agent.inputs import (
    AnalyzeInput,
    DetectInput,
    ExamineInput,
    InterpretInput,
    PlannerInput,
    SelectInput,
    SummarizeInput,
)
from agentiqa_cli.agent.probe import ProbeOutcome, probe_rules, probe_vlm, should_zoom
from agentiqa_cli.agent.probe.crops import crop_sha256, cut
from agentiqa_cli.agent.replies import AnalyzeReply, ScoreReply
from agentiqa_cli.agent.roles import AgentAsker, Prober
from agentiqa_cli.asking.asker import Asker, images_of
from agentiqa_cli.batch import Pair, trace_tool_scores
from agentiqa_cli.errors import VLMError
from agentiqa_cli.imaging.load import LoadedImage
from agentiqa_cli.imperfect.records import LocateReply
from agentiqa_cli.imperfect.roles import LocateInput
from agentiqa_cli.io.trace import ImageTrace
from agentiqa_cli.records import (
    LEVELS,
    Category,
    Finding,
    LearnedTools,
    Plan,
    PlanSwitches,
    Result,
    ToolScore,
    Track,
    Usage,
    answer_at_level,
    level_of,
)
from agentiqa_cli.scoring import fusable, fuse_tools
from agentiqa_cli.tools.cards import CardSet, ToolCard
from agentiqa_cli.tools.runner import ToolRunner
from agentiqa_cli.tools.severity import findings as measured_findings
from agentiqa_cli.tools.weights import candidates

MAX_REPLANS = 2
SUMMARY_PREFIX = '{"level":"'  # the summarizer's JSON starts with the level (see prompts)


@dataclass
class AgentOptions:
    query: str
    learned_tools: LearnedTools = "auto"  # weights tools offered: when cached, all, none
    default_nr: Sequence[str] = ()
    default_fr: Sequence[str] = ()
    fusion: str = "mean"  # how the tools' scores combine into q̄ (as `score` fuses them)
    show_evidence: bool = True  # the detectors' readings in the model's prompts
    zoom: str = "off"  # context-aware probing: off | on | auto (above 4× the pixel budget)
    zoom_turns: int = 6  # VLM calls a probe may make, the final judgement included
    pixel_budget: int = 448 * 448  # pixels of an image sent to the VLM


class Agent:
    def __init__(
        self,
        asker: Asker,
        cards: CardSet,
        runner: ToolRunner,
        options: AgentOptions,
        advisor: ToolAdvisor | None = None,
    ):
        """``advisor`` (an experience pool) may choose tools for some categories instead of
        the ``select`` role, and learns from each image (``agent/advice.py``)."""
        self.ask = AgentAsker.of(asker)  # the typed call of each role
        self.advisor = advisor
        self.cards = cards
        self.runner = runner
        self.opt = options
        self.evidence_cards = [c for c in cards if c.detector]
        # what can run here, decided once per run (tools/weights.py: the caches, the flag)
        self._offered = candidates(cards, True, options.learned_tools)
        self._plans: dict[tuple[str, bool], asyncio.Future[Plan]] = {}
        self._selections: dict[tuple[frozenset[str], bool], asyncio.Future[dict[str, str]]] = {}

    @property
    def query(self) -> str:
        """The question every image is assessed for (``--query``)."""
        return self.opt.query

    # -- shared, cached steps ---------------------------------------------------------------
    def candidates(self, full_reference: bool) -> list[ToolCard]:
        return [c for c in self._offered if full_reference or c.mode == "NR"]

    async def plan(
        self, has_reference: bool, usage: Usage, trace: ImageTrace, query: str | None = None
    ) -> Plan:
        """The plan for (query, reference mode): asked once per batch, traced for every image.
        ``query`` defaults to the agent's."""
        query = query or self.opt.query
        inputs = PlannerInput(
            query=query, has_reference=has_reference, tool_names=self.cards.names()
        )
        plan, cached = await _once(
            self._plans, (query, has_reference), lambda: self.ask.plan(inputs, usage, trace)
        )
        if cached:
            trace.emit(
                "plan",
                request={"query": query, "has_reference": has_reference},
                parsed=plan.model_dump(mode="json"),
                note="cached",
            )
        return plan

    async def select(
        self, categories: Sequence[Category], full_reference: bool, pair: Pair
    ) -> dict[str, str]:
        async def ask() -> dict[str, str]:
            cands = self.candidates(full_reference)
            known = self.advisor.insights(categories, full_reference) if self.advisor else []
            inputs = SelectInput(
                query=self.opt.query,
                full_reference=full_reference,
                categories=list(categories),
                candidates=cands,
                insights=known,
            )
            reply = await self.ask.select(inputs, pair)
            names = {c.name for c in cands}
            return {
                str(cat): tool
                for scope_tools in reply.selected_tools.values()
                for cat, tool in scope_tools.items()
                if tool in names
            }

        chosen, cached = await _once(self._selections, (frozenset(categories), full_reference), ask)
        if cached:
            pair.trace.emit(
                "select",
                request={"categories": list(sorted(categories))},
                parsed=dict(chosen),
                note="cached",
            )
        return dict(chosen)

    async def choose(
        self,
        categories: Sequence[Category],
        full_reference: bool,
        evidence: Sequence[ToolScore],
        pair: Pair,
    ) -> tuple[dict[str, str], bool]:
        """A tool per category: from the advisor where it knows (traced with its d and SE;
        no model call), from the ``select`` role for the rest. The flag: the advisor knew
        every category (no model call)."""
        advised: dict[str, Advice] = {}
        if self.advisor is not None:
            advised = self.advisor.advise(categories, full_reference, evidence)
        if advised:
            parsed: dict[str, JsonValue] = {
                cat: {"tool": a.tool, "level": a.level, **a.detail} for cat, a in advised.items()
            }
            pair.trace.emit(
                "select",
                request={"categories": list[JsonValue](sorted(advised))},
                parsed=parsed,
                note="experience pool (no model call)",
            )
        rest = [c for c in categories if c not in advised]
        chosen = await self.select(rest, full_reference, pair) if rest else {}
        return chosen | {cat: a.tool for cat, a in advised.items()}, not rest

    async def _learn(self, pair: Pair, findings: Sequence[Finding]) -> None:
        """The advisor learns from this image (``--evolve``); a failure is traced, never
        the image's error."""
        if self.advisor is None:
            return
        cats = [f.category for f in findings if f.severity != "none"]
        try:
            learnt = await asyncio.to_thread(
                self.advisor.learn, pair.image, cats, pair.reference is not None
            )
        except Exception as e:
            pair.trace.emit("experience", note=f"experience pool not updated: {e}")
            return
        if learnt:
            pair.trace.emit("experience", parsed=learnt)

    async def _evidence(self, pair: Pair) -> list[ToolScore]:
        """Every signal detector on the image: cheap, and what detection rests on."""

        def run() -> list[ToolScore]:
            # the VLM's view needs the float pixels an 8-bit image makes on first use: make
            # them here, in a worker thread, not on the event loop when the view is built
            for image in (pair.image, pair.reference):
                if image is not None:
                    _ = image.pixels
            return self.runner.run_many(self.evidence_cards, pair.image, None)

        evidence = await asyncio.to_thread(run)
        trace_tool_scores(pair, evidence, note="evidence (signal detectors)")
        return evidence

    def _looking(self, has_ref: bool, evidence: list[ToolScore]) -> dict[str, Any]:
        """What every role that looks at the image is told (``inputs._Looking``)."""
        return {
            "query": self.opt.query,
            "has_reference": has_ref,
            "evidence": evidence,
            "show_evidence": self.opt.show_evidence,
        }

    # -- one image ----------------------------------------------------------------------------
    async def __call__(self, pair: Pair) -> Result:
        usage = pair.usage  # shared with the batch: an error row still counts the calls
        has_ref = pair.reference is not None
        plan = await self.plan(has_ref, usage, pair.trace)
        evidence = await self._evidence(pair)
        probe = await self._probe(pair, plan, evidence)
        local = probe.findings() if probe is not None else []

        findings: list[Finding] = []
        scores: list[ToolScore] = []
        summary: ScoreReply | None = None
        reply_lp: dict[str, float] | None = None
        lp_note: str | None = None
        for round_ in range(MAX_REPLANS + 1):
            findings, scores = await self._measure(plan, pair, evidence)
            findings += local
            inputs = SummarizeInput(
                **self._looking(has_ref, evidence),
                plan=plan,
                findings=findings,
                tool_scores=scores,
                fusion=self.opt.fusion,
            )
            summary, reply = await self.ask.summarize(inputs, pair)
            reply_lp = level_logprobs(reply, SUMMARY_PREFIX)
            lp_note = nonfinite_note(reply, SUMMARY_PREFIX)
            if summary.sufficient or round_ == MAX_REPLANS:
                break
            plan = await self._replan(plan, pair, summary.reasoning, round_ + 1)

        assert summary is not None
        norms = fusable(scores)
        qbar = fuse_tools(norms, self.opt.fusion) if norms else None
        p = softmax_levels(reply_lp) if reply_lp else None
        # a score needs evidence: tool scores, or the VLM's level probabilities
        fused = fuse(qbar, p) if (qbar is not None or p) else None
        # words and numbers agree: a visible finding caps the score (the probe's local
        # findings have their own penalty below)
        found = [f for f in findings if f not in local]
        score = capped(fused, found, evidence) if fused is not None else None
        penalty = probe.penalty if probe is not None else 0.0
        if score is not None and penalty:  # Q-Probe: clip(base - Σ penalties, 1, 5)
            score = min(5.0, max(1.0, score - penalty))
        if score is None or not 1.0 <= score <= 5.0:  # (NaN fails too) an ok row has a score
            raise VLMError(
                "no score: no tool measured the image and the reply carried no level probabilities"
                if score is None
                else f"the score {score} is outside 1-5"
            )
        result = pair.result()
        result.score = score
        # no score, no level: the summarizer's stated level alone is not a measurement
        result.level = level_of(score) if score is not None else ""
        result.answer = answer_at_level(summary.answer, result.level)
        result.distortions = [f for f in findings if f.severity != "none"]
        result.tools = scores
        result.usage = usage
        await self._learn(pair, findings)
        _trace_final(
            pair,
            result,
            {
                "p": list(p) if p is not None else None,
                "qbar": qbar,
                "fused": fused,  # Eq. 4 (q̄ itself without log-probabilities), before the cap
                "fusion": self.opt.fusion,
                "probe_penalty": penalty if probe is not None else None,
                "reasoning": summary.reasoning,
                "levels": list(LEVELS),
                **({"logprobs_note": lp_note} if lp_note else {}),
            },
        )
        return result

    async def answer(
        self, pair: Pair, options: dict[str, str], track: Track | None = None
    ) -> Result:
        """A multiple-choice question about one image (the agent's query is the question);
        the interpretation summarizer picks a letter, returned as the result's ``choice``.

        ``track`` isolates the component under test (AgenticIQA §4): a planner question is
        answered from the plan of the user query it quotes, an executor-distortion question
        from the plan and the distortion analysis, an executor-tool question also from the
        tools chosen and run, a summarizer question (or ``None``: the whole agent) from
        everything. Insufficient evidence replans, as in ``assess``."""
        usage = pair.usage  # shared with the batch: an error row still counts the calls
        has_ref = pair.reference is not None
        if track == "planner":
            plan = await self.plan(has_ref, usage, pair.trace, query=quoted_query(self.opt.query))
        else:
            plan = await self.plan(has_ref, usage, pair.trace)
        evidence = await self._evidence(pair) if track != "planner" else []
        findings: list[Finding] = []
        scores: list[ToolScore] = []
        for round_ in range(MAX_REPLANS + 1):
            if track == "executor-distortion":
                findings = await self._examine(widened(plan), pair, evidence)
            elif track != "planner":
                findings, scores = await self._measure(plan, pair, evidence)
            inputs = InterpretInput(
                **self._looking(has_ref, evidence),
                plan=plan,
                findings=findings,
                tool_scores=scores,
                options=options,
                track=track,
                candidates=[c.name for c in self.candidates(has_ref)],
            )
            reply = await self.ask.interpret(inputs, pair)
            if reply.sufficient or round_ == MAX_REPLANS or track == "planner":
                break
            plan = await self._replan(plan, pair, reply.quality_reasoning, round_ + 1)
        result = pair.result()
        result.choice = reply.final_answer
        result.answer = f"{reply.final_answer}: {reply.quality_reasoning}"[:300]
        result.distortions = [f for f in findings if f.severity != "none"]
        result.tools = scores
        result.usage = usage
        _trace_final(pair, result, {"final_answer": reply.final_answer, "track": track})
        return result

    async def _probe(
        self, pair: Pair, plan: Plan, evidence: list[ToolScore]
    ) -> ProbeOutcome | None:
        """Context-aware probing (Q-Probe) when ``zoom`` asks for it: close-ups of the
        original find local artefacts the global view misses. With the rules backend (or
        when the VLM fails and ``--vlm-fallback rules`` is set) the rules version runs."""
        width, height = pair.image.size
        rules_only = self.ask.vlm.name == "rules"
        if plan.query_type != "IQA" or not should_zoom(
            self.opt.zoom, width, height, self.opt.pixel_budget, full_resolution=rules_only
        ):
            return None

        def emit(step: str, payload: dict[str, Any]) -> None:
            pair.trace.emit("crop" if step == "crop" else "probe", parsed=_json(payload))

        def rules() -> ProbeOutcome:
            readings = {s.tool: s.raw for s in evidence if s.raw is not None}
            return probe_rules(pair.image, self.cards, emit, turns=self.opt.zoom_turns,
                               pixel_budget=self.opt.pixel_budget, readings=readings)  # fmt: skip

        if rules_only:
            return await asyncio.to_thread(rules)
        prober = Prober(self.ask, pair.usage, pair.trace, self.opt.query, evidence)
        try:
            return await probe_vlm(prober, pair.image, pixel_budget=self.opt.pixel_budget,
                                   turns=self.opt.zoom_turns, emit=emit, cards=self.cards)  # fmt: skip
        except VLMError as e:
            if self.ask.fallback is None:
                raise
            pair.trace.emit("probe", note=f"probing by the rules version after: {e}")
            return await asyncio.to_thread(rules)

    async def _measure(
        self, plan: Plan, pair: Pair, evidence: list[ToolScore]
    ) -> tuple[list[Finding], list[ToolScore]]:
        """The executor: distortions found and analysed, then the tools run for them."""
        findings = await self._examine(plan, pair, evidence)
        scores = await self._tools(plan, pair, findings, evidence)
        return findings, scores

    async def _replan(self, plan: Plan, pair: Pair, feedback: str, round_: int) -> Plan:
        """Ask the planner again with the summarizer's reason; whatever it answers, the new
        plan runs at least detection, analysis and tools, so the next round has evidence."""
        inputs = PlannerInput(
            query=self.opt.query,
            has_reference=pair.reference is not None,
            tool_names=self.cards.names(),
            feedback=f"round {round_}: {feedback}",
        )
        fresh = await self.ask.plan(inputs, pair.usage, pair.trace)
        return widened(fresh if fresh.query_type == "IQA" else plan)

    async def _examine(self, plan: Plan, pair: Pair, evidence: list[ToolScore]) -> list[Finding]:
        return self._directed(await self._judged(plan, pair, evidence), evidence)

    def _directed(self, found: list[Finding], evidence: list[ToolScore]) -> list[Finding]:
        """``found`` with what the readings measured each finding is within its category
        (``Finding.says``: which way an exposure went, a resolution loss): a reply names the
        category, the detectors say which way."""
        readings = {s.tool: s.raw for s in evidence if s.ok and s.raw is not None}
        says = {f.category: f.says for f in measured_findings(readings, self.cards) if f.says}
        return [
            f.model_copy(update={"says": says[f.category]})
            if not f.says and f.category in says
            else f
            for f in found
        ]

    async def _judged(self, plan: Plan, pair: Pair, evidence: list[ToolScore]) -> list[Finding]:
        sw = plan.plan
        if plan.query_type != "IQA":
            return []
        looking = self._looking(pair.reference is not None, evidence)
        if sw.distortion_detection and sw.distortion_analysis:
            examine = ExamineInput.model_validate(looking | {"scopes": plan.scopes})
            return _findings_of(await self.ask.examine(examine, pair))
        if sw.distortion_detection:
            detect = DetectInput.model_validate(looking | {"scopes": plan.scopes})
            det = await self.ask.detect(detect, pair)
            return _unanalysed(det.distortion_set, "detected; severity not analysed")
        if plan.distortions and sw.distortion_analysis:
            analyze = AnalyzeInput.model_validate(looking | {"distortions": plan.distortions})
            return _findings_of(await self.ask.analyze(analyze, pair))
        if plan.distortions:
            return _unanalysed(plan.distortions, "named in the query; not analysed")
        return []

    def _measuring(self, category: str, tool: str, evidence: list[ToolScore]) -> str:
        """A category's built-in detectors act as one instrument: when the selected tool is
        one of them, the reading used is the one that measured the problem in this image
        (the worst of them), e.g. ``underexposure`` rather than ``overexposure`` for a dark
        photo. The selection stays per distortion set (cached); the reading is per image."""
        card = self.cards.get(tool)
        if not card.detector:
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
    ) -> list[ToolScore]:
        sw = plan.plan
        if plan.query_type != "IQA" or not sw.tool_execute:
            return []
        full_ref = pair.reference is not None
        by_category: dict[str, str] = {}
        learnt = False  # the experience pool named the tool of every distortion found
        if plan.required_tools:
            chosen = [n for n in plan.required_tools if n in self.cards]
        else:
            cats = list(dict.fromkeys(f.category for f in findings if f.severity != "none"))
            if sw.tool_selection and cats and self.candidates(full_ref):
                selected, learnt = await self.choose(cats, full_ref, evidence, pair)
                # in the findings' order (categories the reply added, after them)
                order = sorted(selected, key=lambda c: cats.index(c) if c in cats else len(cats))
                by_category = {c: self._measuring(c, selected[c], evidence) for c in order}
            # the tools chosen for the distortions, then the set `score` runs: the agent's
            # q̄ always rests on at least the evidence `score` reports, never on one
            # detector that fired weakly — unless the experience pool named the tool of
            # every distortion found: then its tools alone (EvoIR-Agent §3.3, experience
            # replaces exploration; docs/experience.md measures what it costs)
            default = self.opt.default_fr if full_ref else self.opt.default_nr
            if learnt:
                default = []
                pair.trace.emit("tool", note="experience pool named every tool: no default set")
            chosen = list(dict.fromkeys([*by_category.values(), *default]))
        cards = [self.cards.get(n) for n in chosen]
        if not full_ref:
            cards = [c for c in cards if c.mode == "NR"]
        # evidence already holds the detectors' scores: reuse them instead of recomputing
        done = {s.tool: s for s in evidence}
        todo = [c for c in cards if c.name not in done]
        # a worker thread only for tools left to run (most often none: the default set is
        # the detectors): each hand-off makes the image wait for a thread and the GIL
        ran = (
            await asyncio.to_thread(self.runner.run_many, todo, pair.image, pair.reference)
            if todo
            else []
        )
        trace_tool_scores(pair, ran)
        fresh = {s.tool: s for s in ran}
        for_cat = _tool_categories(by_category)
        whole = [
            (done.get(c.name) or fresh[c.name]).model_copy(
                update={"distortion": for_cat.get(c.name)}
            )
            for c in cards
        ]
        return whole + await self._on_objects(plan, pair, findings, by_category)

    async def _on_objects(
        self,
        plan: Plan,
        pair: Pair,
        findings: list[Finding],
        by_category: dict[str, str],
    ) -> list[ToolScore]:
        """AgenticIQA's per-object execution: a distortion found on an object the plan names
        (not ``Global``) is measured again, with the tool chosen for it, on the object's
        region, when the ``locate`` role finds the object (one call per object and image).
        An object that is not found keeps the whole-image reading only (traced)."""
        wanted: dict[str, list[str]] = {}
        for f in findings:
            if f.scope != "Global" and f.scope in plan.scopes and f.severity != "none":
                tool = by_category.get(f.category)
                if tool is not None and tool not in wanted.setdefault(f.scope, []):
                    wanted[f.scope].append(tool)
        for_cat = _tool_categories(by_category)
        out: list[ToolScore] = []
        for scope, tools in wanted.items():
            region = await self._locate(scope, pair)
            if region is None:
                continue
            image, reference = region
            cards = [self.cards.get(t) for t in tools]
            ran = await asyncio.to_thread(self.runner.run_many, cards, image, reference)
            ran = [
                s.model_copy(update={"scope": scope, "distortion": for_cat.get(s.tool)})
                for s in ran
            ]
            trace_tool_scores(pair, ran, note=f"on the region of {scope}")
            out += ran
        return out

    async def _locate(
        self, scope: str, pair: Pair
    ) -> tuple[LoadedImage, LoadedImage | None] | None:
        """The object's region of the image (and of the reference), or None."""
        w, h = pair.image.size
        inputs = LocateInput(query=self.opt.query, target=scope, width=w, height=h)
        try:
            reply, _ = await self.ask.ask(
                inputs, LocateReply, pair.usage, pair.trace, images_of(pair)
            )
        except VLMError as e:
            pair.trace.emit("tool", note=f"{scope}: not located ({e}); whole image only")
            return None
        if not reply.found or reply.box is None:
            pair.trace.emit("tool", note=f"{scope}: not found; whole image only")
            return None
        px = reply.box.pixels(w, h)
        if min(px[2] - px[0], px[3] - px[1]) < REGION_MIN_SIDE:
            note = f"{scope}: region {px} under {REGION_MIN_SIDE} px; whole image only"
            pair.trace.emit("tool", note=note)
            return None
        return _region(pair.image, px), (
            _region(pair.reference, px) if pair.reference is not None else None
        )


REGION_MIN_SIDE = 32  # an object's region smaller than this is not measured on its own


def _tool_categories(by_category: dict[str, str]) -> dict[str, str]:
    """Each chosen tool's distortion: the first category (in the findings' order) it was
    chosen for. One rule for the whole-image and the per-object readings."""
    out: dict[str, str] = {}
    for cat, tool in by_category.items():
        out.setdefault(tool, cat)
    return out


def _region(image: LoadedImage, px: tuple[int, int, int, int]) -> LoadedImage:
    pixels = cut(image.pixels, px)
    return LoadedImage(path=image.path, pixels=pixels, sha256=crop_sha256(pixels),
                       original_mode=image.original_mode)  # fmt: skip


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


def _trace_final(pair: Pair, result: Result, extra: dict[str, JsonValue]) -> None:
    pair.trace.emit(
        "final",
        parsed={
            "score": result.score,
            "level": result.level,
            "answer": result.answer,
            "distortions": result.distortions_cell(),
            "tools": result.tools_cell(),
            **extra,
        },
        tokens=result.usage,
    )


_QUOTED = re.compile(r"[\"'‘“]([^\"'’”]{3,})[\"'’”]")


def quoted_query(question: str) -> str:
    """The user query a planner question quotes ("The user asks: 'Is it dark?' Which ..."),
    or the question itself when it quotes none."""
    m = _QUOTED.search(question)
    return m.group(1).strip() if m else question


def _json(payload: dict[str, Any]) -> JsonValue:
    """A probe's trace payload as plain JSON (tuples, models and numbers alike)."""
    value: JsonValue = json.loads(json.dumps(payload, default=str))
    return value


def _unanalysed(distortions: dict[str, list[Category]], reason: str) -> list[Finding]:
    """Findings whose severity nobody judged: counted as visible ("moderate")."""
    return [
        Finding(scope=s, category=c, severity="moderate", reason=reason)
        for s, cats in distortions.items()
        for c in cats
    ]


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
