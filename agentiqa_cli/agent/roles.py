"""Asking one role: render its prompt, call the VLM, validate the reply, trace every step.

``Asker`` is the only place that turns a role + inputs into a VLM request, so constrained
decoding, re-asking after an invalid reply, ``--vlm-fallback rules`` and the trace are
handled once for every role.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from agentiqa_cli.agent.evidence import evidence_view
from agentiqa_cli.agent.prompts import PromptSpec, option_letters
from agentiqa_cli.agent.replies import (
    AnalyzeReply,
    DetectReply,
    InterpretReply,
    ScoreReply,
    SelectReply,
)
from agentiqa_cli.batch import Pair, trace_tool_scores
from agentiqa_cli.errors import VLMError
from agentiqa_cli.io.trace import TraceWriter
from agentiqa_cli.records import Finding, Plan, Result, ToolScore, TraceEvent, Usage
from agentiqa_cli.tools.cards import ToolCard
from agentiqa_cli.vlm.base import VLM, ImagePart, VLMReply, VLMRequest

R = TypeVar("R", bound=BaseModel)

# trace step of each role (SPEC §3): the combined call is traced as an analysis
STEP = {
    "planner": "plan",
    "detect": "detect",
    "analyze": "analyze",
    "examine": "analyze",
    "select": "select",
    "summarize": "summarize",
    "interpret": "summarize",
}


class Asker:
    def __init__(
        self,
        vlm: VLM,
        prompts: dict[str, PromptSpec],
        trace: TraceWriter,
        query: str,
        fallback: VLM | None = None,
        reasks: int = 1,
    ):
        self.query = query
        self.vlm = vlm
        self.prompts = prompts
        self.trace = trace
        self.fallback = fallback
        self.reasks = reasks

    # -- the one call ---------------------------------------------------------------------
    async def _ask(
        self,
        role: str,
        model: type[R],
        variables: dict[str, Any],
        context: dict[str, Any],
        usage: Usage,
        images: list[ImagePart] | None = None,
        dynamic: dict[str, Any] | None = None,
        top_logprobs: int = 0,
        image: str | None = None,
        key: str | None = None,
    ) -> tuple[R, VLMReply]:
        spec = self.prompts[role]
        request = VLMRequest(
            role=role,
            messages=spec.render(images=images or [], **variables),
            context=context,
            json_schema=spec.schema_for(**(dynamic or {})),
            top_logprobs=top_logprobs,
            max_tokens=spec.max_tokens,
        )
        last_error = ""
        for backend in (self.vlm, self.fallback):
            if backend is None:
                continue
            for _attempt in range(self.reasks + 1):
                try:
                    reply = await backend.complete(request)
                except VLMError as e:
                    last_error = str(e)
                    self._event(role, request, None, None, image, key, f"{backend.name}: {e}")
                    break  # transport retries happen inside the backend
                if backend.name != "rules":  # vlm_calls counts model calls only
                    usage.add(
                        Usage(
                            calls=1,
                            prompt_tokens=reply.usage.prompt_tokens,
                            completion_tokens=reply.usage.completion_tokens,
                        )
                    )
                try:
                    parsed = parse_reply(reply, model)
                except VLMError as e:
                    last_error = str(e)
                    self._event(role, request, reply, None, image, key, f"{backend.name}: {e}")
                    continue
                note = None if backend is self.vlm else f"fallback to rules after: {last_error}"
                self._event(role, request, reply, parsed.model_dump(mode="json"), image, key, note)
                return parsed, reply
        raise VLMError(f"{role}: {last_error}")

    def _event(
        self,
        role: str,
        request: VLMRequest,
        reply: VLMReply | None,
        parsed: Any,
        image: str | None,
        key: str | None,
        note: str | None,
    ) -> None:
        spec = self.prompts[role]
        self.trace.emit(
            TraceEvent(
                step=STEP.get(role, role),
                image=image,
                key=key,
                request={
                    "prompt": spec.fingerprint,
                    "messages": [m.model_dump(mode="json") for m in request.messages],
                    "constrained": request.json_schema is not None,
                    "top_logprobs": request.top_logprobs,
                },
                reply=None
                if reply is None
                else {
                    "text": reply.text,
                    "finish_reason": reply.finish_reason,
                    "model": reply.model,
                    # enough positions to re-derive the level distribution from the trace
                    "tokens": reply.tokens[:32] if reply.tokens else None,
                    "top_logprobs": reply.top_logprobs[:32] if reply.top_logprobs else None,
                },
                parsed=parsed,
                latency=None if reply is None else reply.latency,
                tokens=None if reply is None else reply.usage,
                note=note,
            )
        )

    # -- roles ----------------------------------------------------------------------------
    async def plan(
        self,
        query: str,
        has_reference: bool,
        tool_names: list[str],
        usage: Usage,
        image: str | None = None,
        feedback: str = "",
        key: str | None = None,
    ) -> Plan:
        ctx = {"query": query, "has_reference": has_reference, "tool_names": tool_names}
        plan, _ = await self._ask(
            "planner",
            Plan,
            {**ctx, "feedback": feedback},
            ctx,
            usage,
            dynamic={"tool_names": tool_names},
            image=image,
            key=key,
        )
        return plan

    def _images(self, pair: Pair) -> list[ImagePart]:
        """The image to assess, then its reference when there is one."""
        parts = [ImagePart(sha256=pair.image.sha256, path=pair.job.name, pixels=pair.image.pixels)]
        if pair.reference is not None:
            parts.append(
                ImagePart(
                    sha256=pair.reference.sha256,
                    path=pair.job.ref_name,
                    pixels=pair.reference.pixels,
                )
            )
        return parts

    def _common(
        self, plan: Plan, pair: Pair, evidence: list[ToolScore]
    ) -> tuple[dict[str, Any], dict[str, Any]]:
        variables = {
            "query": self.query,
            "has_reference": pair.reference is not None,
            "scopes": plan.scopes,
            "evidence": evidence_view(evidence),
            "distortions": plan.distortions or {},
        }
        context = {
            "scopes": plan.scopes,
            "evidence_scores": evidence,
            "distortions": plan.distortions or {},
        }
        return variables, context

    async def _look(
        self,
        role: str,
        model: type[R],
        plan: Plan,
        pair: Pair,
        evidence: list[ToolScore],
        usage: Usage,
        dynamic: dict[str, Any],
    ) -> R:
        """A role that looks at the image with the plan's scopes and the detector evidence."""
        v, c = self._common(plan, pair, evidence)
        r, _ = await self._ask(role, model, v, c, usage, self._images(pair), dynamic,
                               image=pair.job.name, key=pair.key)  # fmt: skip
        return r

    async def examine(
        self, plan: Plan, pair: Pair, evidence: list[ToolScore], usage: Usage
    ) -> AnalyzeReply:
        """Detection and analysis in one constrained call."""
        return await self._look(
            "examine", AnalyzeReply, plan, pair, evidence, usage, {"scopes": plan.scopes}
        )

    async def detect(
        self, plan: Plan, pair: Pair, evidence: list[ToolScore], usage: Usage
    ) -> DetectReply:
        return await self._look(
            "detect", DetectReply, plan, pair, evidence, usage, {"scopes": plan.scopes}
        )

    async def analyze(
        self, plan: Plan, pair: Pair, evidence: list[ToolScore], usage: Usage
    ) -> AnalyzeReply:
        """Severity of the distortions the query named."""
        dyn = {"distortions": plan.distortions or {}}
        return await self._look("analyze", AnalyzeReply, plan, pair, evidence, usage, dyn)

    async def select(
        self,
        categories: Sequence[str],
        full_reference: bool,
        candidates: list[ToolCard],
        usage: Usage,
        pair: Pair,
    ) -> SelectReply:
        """Tool selection sees no image: it depends on the distortion set and the cards only."""
        mode = "Full-Reference" if full_reference else "No-Reference"
        names = [c.name for c in candidates]
        tools = [
            {
                "name": c.name,
                "mode": c.mode,
                "description": c.description,
                "distortions": list(c.distortions),
            }
            for c in candidates
        ]
        distortions = {"Global": list(categories)}
        r, _ = await self._ask(
            "select",
            SelectReply,
            {
                "query": self.query,
                "has_reference": full_reference,
                "distortions": distortions,
                "tools": tools,
            },
            {"distortions": distortions, "reference_mode": mode, "candidates": names},
            usage,
            dynamic={"tool_names": names, "distortions": distortions},
            image=pair.job.name,
            key=pair.key,
        )
        return r

    async def summarize(
        self,
        plan: Plan,
        pair: Pair,
        findings: list[Finding],
        scores: list[ToolScore],
        evidence: list[ToolScore],
        usage: Usage,
    ) -> tuple[ScoreReply, VLMReply]:
        analysis = _analysis_view(findings)
        variables = {
            "query": self.query,
            "has_reference": pair.reference is not None,
            "scopes": plan.scopes,
            "analysis": analysis,
            "tool_scores": [
                {"tool": s.tool, "distortion": s.distortion, "norm": s.norm} for s in scores
            ],
            "evidence": evidence_view(evidence),
        }
        context = {
            "plan": plan,
            "findings": findings,
            "tool_scores": scores,
            "evidence_scores": evidence,
        }
        return await self._ask(
            "summarize",
            ScoreReply,
            variables,
            context,
            usage,
            self._images(pair),
            top_logprobs=self.prompts["summarize"].top_logprobs or 5,
            image=pair.job.name,
            key=pair.key,
        )

    async def interpret(
        self,
        plan: Plan,
        pair: Pair,
        options: dict[str, str],
        findings: list[Finding],
        scores: list[ToolScore],
        evidence: list[ToolScore],
        candidates: list[ToolCard],
        usage: Usage,
    ) -> InterpretReply:
        analysis = _analysis_view(findings)
        variables = {
            "query": self.query,
            "options": list(options.values()),
            "has_reference": pair.reference is not None,
            "analysis": analysis,
            "tool_scores": [
                {"tool": s.tool, "distortion": s.distortion, "norm": s.norm} for s in scores
            ],
            "evidence": evidence_view(evidence),
        }
        context = {
            "query": self.query,
            "options": options,
            "plan": plan,
            "findings": findings,
            "tool_scores": scores,
            "has_reference": pair.reference is not None,
            "candidates": [c.name for c in candidates],
        }
        r, _ = await self._ask(
            "interpret",
            InterpretReply,
            variables,
            context,
            usage,
            self._images(pair),
            {"letters": option_letters(len(options))},
            image=pair.job.name,
            key=pair.key,
        )
        return r

    # -- trace helpers for steps that make no request ---------------------------------------

    def trace_tools(self, pair: Pair, scores: list[ToolScore], note: str | None = None) -> None:
        trace_tool_scores(self.trace, pair, scores, note)

    def trace_cached(self, step: str, pair: Pair, request: Any, parsed: Any) -> None:
        self.trace.emit(
            TraceEvent(
                step=step,
                image=pair.job.name,
                key=pair.key,
                request=request,
                parsed=parsed,
                note="cached",
            )
        )

    def trace_final(self, pair: Pair, result: Result, extra: dict[str, Any]) -> None:
        self.trace.emit(
            TraceEvent(
                step="final",
                image=pair.job.name,
                key=pair.key,
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
        )


def _analysis_view(findings: list[Finding]) -> dict[str, list[dict[str, str]]]:
    analysis: dict[str, list[dict[str, str]]] = {}
    for f in findings:
        analysis.setdefault(f.scope, []).append(
            {"type": f.category, "severity": f.severity, "explanation": f.reason}
        )
    return analysis


def parse_reply(reply: VLMReply, model: type[R]) -> R:
    """Validate a constrained reply; a truncated or off-schema reply is a VLMError."""
    if reply.finish_reason == "length":
        raise VLMError(
            "reply truncated (finish_reason=length): raise max_tokens or shorten the schema"
        )
    try:
        data = json.loads(reply.text)
    except json.JSONDecodeError as e:
        raise VLMError(
            f"reply is not valid JSON ({e.msg} at {e.pos}): {reply.text[:120]!r}"
        ) from None
    try:
        return model.model_validate(data)
    except ValidationError as e:
        err = e.errors()[0]
        where = ".".join(str(p) for p in err["loc"])
        raise VLMError(
            f"reply does not match the {model.__name__} schema at {where}: {err['msg']}"
        ) from None
