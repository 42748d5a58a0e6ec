"""The ``eval_plan`` role (Evaluation Agent's Plan Agent, App. A.1): its typed input, its bounded
reply, and the deterministic version the ``rules`` backend answers with.

Each round the planner sees the query, the rounds so far and every sub-aspect's estimate
(mean, 95% interval, tier), and either proposes the next round — a sub-aspect of the query,
a tool (``assess`` or a card) and a sample count n ∈ [3, 9], with prompts for a generator —
or stops with a justified verdict. The evaluation loop refuses repeated sub-aspects and
stops that come before every sub-aspect had a round (``loop.py``).

Rules version (ours, docs/guides.md): sub-aspects are the categories the query names (none named:
the overall quality first, then the worst category of round 1, and so on worst first); it
stops after ≥ 2 rounds once every probed sub-aspect's interval, and the overall one, lies
inside one tier; n is what the widest interval needs to clear its nearest cut point.
"""

from __future__ import annotations

import math
from typing import Annotated, ClassVar

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from agentiqa_cli.agent.planner_rules import plan_query
from agentiqa_cli.asking.registry import Role, register
from agentiqa_cli.categories import hint as category_hint
from agentiqa_cli.evaluate.aspects import category_aspect, overall, query_categories, resolve
from agentiqa_cli.evaluate.records import OVERALL, Estimate, SubAspect, aspect_key
from agentiqa_cli.records import EVAL_MAX_ASPECTS, EVAL_N_MAX, EVAL_N_MIN, Category, Decode
from agentiqa_cli.vlm.base import RoleInput

N_MIN, N_MAX, MAX_DECLARED = EVAL_N_MIN, EVAL_N_MAX, EVAL_MAX_ASPECTS


class EvalPlanReply(BaseModel):
    model_config = ConfigDict(extra="forbid")

    """The evaluation planner's decision; ``thought`` first, as in the paper (explain, then
    act)."""

    thought: str = Field(max_length=300)
    sub_aspects: list[Annotated[str, Field(min_length=1, max_length=60)]] = Field(
        min_length=1, max_length=EVAL_MAX_ASPECTS
    )
    done: bool
    summary: str = Field(max_length=400)  # why the evidence suffices (when done)
    sub_aspect: str = Field(min_length=1, max_length=60)  # the next round's (if not done)
    tool: Annotated[str, Decode(enum_from="tool_names")]
    n: int = Field(ge=EVAL_N_MIN, le=EVAL_N_MAX)
    prompts: list[Annotated[str, Field(min_length=1, max_length=160)]] = Field(
        default_factory=list, max_length=EVAL_N_MAX
    )


class RoundView(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    round: int
    sub_aspect: str
    tool: str
    n: int
    assessed: int
    errors: int = 0


class EvalPlanInput(RoleInput):
    role: ClassVar[str] = "eval_plan"

    query: str
    round: int  # the round being planned, from 1
    max_rounds: int
    samples_left: int
    population: int | None  # images in the folder; None: a generator
    tool_names: list[str]  # "assess" first, then the cards a round may use
    cuts: list[float]  # the four tier cut points, ascending
    history: list[RoundView] = Field(default_factory=list)
    estimates: list[Estimate] = Field(default_factory=list)  # overall first
    declared: list[str] = Field(default_factory=list)  # the query's sub-aspects so far
    assess_measures: list[Category] = Field(default_factory=list)  # read from assess rows
    card_for: dict[str, str] = Field(default_factory=dict)  # category → its card otherwise
    min_rounds: int = 2
    seed: int = 0
    feedback: str = ""

    @property
    def generator(self) -> bool:
        return self.population is None

    @property
    def probed(self) -> list[str]:
        return [h.sub_aspect for h in self.history]

    def variables(self) -> dict[str, object]:
        return {
            "query": self.query,
            "round": self.round,
            "max_rounds": self.max_rounds,
            "samples_left": self.samples_left,
            "source": "a generator (write the prompts)"
            if self.population is None
            else f"a folder of {self.population} images",
            "generator": self.generator,
            "tool_names": self.tool_names,
            "tiers": _tier_lines(self.cuts),
            "history": [h.model_dump() for h in self.history],
            "estimates": [_estimate_view(e) for e in self.estimates],
            "probed": self.probed,
            "feedback": self.feedback,
        }

    def dynamic(self) -> dict[str, object]:
        return {"tool_names": self.tool_names}


# the role: one call per round, not per image
register(
    Role(EvalPlanInput, EvalPlanReply, step="eval_plan", answer=lambda i, _: rules_eval_plan(i))
)


def _tier_lines(cuts: list[float]) -> list[str]:
    names = ["Low", "Moderate", "High", "Very High"]
    return [f"Very Low < {cuts[0]:g}"] + [f"{n} ≥ {c:g}" for n, c in zip(names, cuts, strict=True)]


def _estimate_view(e: Estimate) -> dict[str, object]:
    if e.mean is None or e.lo is None or e.hi is None:
        return {"sub_aspect": e.sub_aspect, "samples": e.samples, "tier": "unknown"}
    return {
        "sub_aspect": e.sub_aspect,
        "tier": e.tier,
        "mean": round(e.mean, 2),
        "interval": f"{e.lo:.2f}-{e.hi:.2f}",
        "inside_one_tier": e.fits,
        "samples": e.samples,
        "probed": e.probed,
    }


# -- the rules version -----------------------------------------------------------------------
def rules_eval_plan(i: EvalPlanInput) -> EvalPlanReply:
    named = query_categories(i.query)
    declared = [category_aspect(c) for c in named] or [overall()]
    probed = {aspect_key(p) for p in i.probed}
    by_key = {aspect_key(e.sub_aspect): e for e in i.estimates}
    watched = [e for e in i.estimates if e.probed or e.kind == "overall"]
    settled = watched and all(e.fits for e in watched)
    if len(i.history) >= i.min_rounds and settled and all(d.key in probed for d in declared):
        shown = "; ".join(f"{e.sub_aspect} {e.tier} [{e.lo:.2f}, {e.hi:.2f}]" for e in watched)
        summary = (
            f"After {len(i.history)} rounds every probed sub-aspect's 95% interval lies "
            f"inside one tier: {shown}."
        )
        return _reply(i, declared, done=True, summary=summary[:400])
    nxt = _next_aspect(named, by_key, probed)
    if nxt is None:
        return _reply(i, declared, done=True, summary="Every sub-aspect had a round.")
    tool = "assess"
    if nxt.category is not None and nxt.category not in i.assess_measures:
        tool = i.card_for.get(nxt.category, "assess")
    n = _sample_count(watched, i.cuts) if i.history else N_MAX
    n = max(N_MIN, min(N_MAX, n))
    if not i.history:
        why = "a first look at the query"
    elif nxt.category is not None and nxt.category not in named:
        why = "the lowest sub-aspect not probed yet"
    else:
        why = "the next sub-aspect of the query"
    thought = f"Round {i.round}: {nxt.name} with {tool}, n={n} ({why})."
    prompts = generator_prompts(i.query, nxt, n, i.seed, i.round) if i.generator else []
    return _reply(i, declared, sub_aspect=nxt, tool=tool, n=n, thought=thought, prompts=prompts)


def _reply(
    i: EvalPlanInput,
    declared: list[SubAspect],
    *,
    done: bool = False,
    summary: str = "",
    sub_aspect: SubAspect | None = None,
    tool: str = "assess",
    n: int = N_MIN,
    thought: str = "",
    prompts: list[str] | None = None,
) -> EvalPlanReply:
    return EvalPlanReply(
        thought=(thought or summary)[:300],
        sub_aspects=[d.name for d in declared][:MAX_DECLARED],
        done=done,
        summary=summary,
        sub_aspect=(sub_aspect or declared[0]).name,
        tool=tool,
        n=n,
        prompts=prompts or [],
    )


def _next_aspect(
    named: list[Category], by_key: dict[str, Estimate], probed: set[str]
) -> SubAspect | None:
    """Named categories in order, then the overall quality, then the measured categories
    worst first (by their estimates so far: after round 1, round 1's)."""
    measured = sorted(
        (e for e in by_key.values() if e.kind == "category" and e.mean is not None),
        key=lambda e: (e.mean, e.sub_aspect),
    )
    order = [category_aspect(c) for c in named] + [overall()]
    order += [resolve(e.sub_aspect) for e in measured]
    return next((a for a in order if a.key not in probed), None)


def _sample_count(watched: list[Estimate], cuts: list[float]) -> int:
    """Samples the worst-placed estimate needs for its interval to clear its nearest cut
    (half-width shrinks as 1/√n); the new round's n is what is missing, within [3, 9]."""
    need = N_MIN
    for e in watched:
        if e.fits or e.mean is None or e.lo is None or e.hi is None or e.samples < 2:
            continue
        half = (e.hi - e.lo) / 2
        dist = min(abs(e.mean - c) for c in cuts)
        if dist <= 1e-9 or not math.isfinite(half):
            return N_MAX
        total = e.samples * (half / dist) ** 2
        need = max(need, math.ceil(total - e.samples))
    return need


# -- prompts for a generator (rules version) -----------------------------------------------------
SCENES = (
    "a photo of {subject} in soft daylight",
    "a close-up photo of {subject} showing fine texture",
    "a photo of {subject} at night under street lights",
    "a photo of {subject} in a dim room",
    "a wide photo of {subject} in a landscape",
    "a photo of {subject} in fast motion",
    "a photo of {subject} by a window, backlit",
    "a colourful photo of {subject} on a sunny day",
    "a photo of {subject} against a bright, hazy sky",
)


def subject_of(query: str) -> str:
    """What the query is about (its first named object), or an everyday scene."""
    scopes = [s for s in plan_query(query, False, []).scopes if s != "Global"]
    if not scopes:
        return "an everyday scene"
    words = scopes[0].split()
    if words and words[0] in ("the", "this", "that", "these", "those", "its", "their"):
        words = words[1:]
    return " ".join(words) or "an everyday scene"


def generator_prompts(query: str, aspect: SubAspect, n: int, seed: int, round_: int) -> list[str]:
    """``n`` prompts from the scene templates around the query's subject, with a hint
    that stresses the sub-aspect (low light for noise, fine detail for blur, ...)."""
    subject = subject_of(query)
    order = np.random.default_rng([seed, round_, 7]).permutation(len(SCENES))
    hint = category_hint(aspect.category)
    out = []
    for k in range(n):
        text = SCENES[int(order[k % len(SCENES)])].format(subject=subject)
        out.append(f"{text}, {hint}" if hint else text)
    return out


__all__ = [
    "OVERALL",
    "EvalPlanInput",
    "EvalPlanReply",
    "RoundView",
    "rules_eval_plan",
]
