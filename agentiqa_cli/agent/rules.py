"""The rules backend's answers to the agent's roles (``asking/rules.py`` asks them).

A model reads a request's rendered messages; the rules backend reads the typed role input
they were rendered from: the query for planning, the signal detectors' readings for
detection and severity, the tool cards for selection, and the evidence for a templated
explanation. Each answer is declared with its role in ``agent/roles.py``.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping

from agentiqa_cli.agent.fusion import capped
from agentiqa_cli.agent.inputs import (
    AnalyzeInput,
    DetectInput,
    ExamineInput,
    InterpretInput,
    PlannerInput,
    SelectInput,
    SummarizeInput,
)
from agentiqa_cli.agent.planner_rules import plan_query
from agentiqa_cli.agent.replies import (
    AnalysisItem,
    AnalyzeReply,
    DetectReply,
    InterpretReply,
    ScoreReply,
    SelectReply,
)
from agentiqa_cli.categories import category_of_detector, option_words
from agentiqa_cli.errors import VLMError
from agentiqa_cli.records import CATEGORIES, Category, Finding, Plan, ToolScore, level_of
from agentiqa_cli.scoring import fusable, fuse_tools
from agentiqa_cli.tools.cards import CardSet, ToolCard
from agentiqa_cli.tools.severity import findings, under_exposed

_SEVERITY_RANK = {"none": 0, "slight": 1, "moderate": 2, "severe": 3, "extreme": 4}


def rank_tools(cards: list[ToolCard], category: str, full_reference: bool) -> list[ToolCard]:
    """Candidates for one distortion, best first: the mode that fits the reference mode, a
    detector built for exactly this category, then tools the paper found strong for it,
    then weight-free tools. Ties break by name, so the order is deterministic."""

    def key(c: ToolCard) -> tuple[int, int, int, int, str]:
        mode_fit = 0 if (c.mode == "FR") == full_reference else 1
        exact_builtin = 0 if (c.backend == "builtin" and category in c.distortions) else 1
        strong = 0 if category in c.distortions else 1
        return (mode_fit, strong, exact_builtin, int(c.weights), c.name)

    usable = [c for c in cards if full_reference or c.mode == "NR"]
    return sorted(usable, key=key)


# -- the agent roles' rules answers (declared in agent/roles.py) ----------------------------
def plan(inputs: PlannerInput, cards: CardSet) -> Plan:
    return plan_query(inputs.query, inputs.has_reference, inputs.tool_names)


def _findings(cards: CardSet, evidence: list[ToolScore]) -> list[Finding]:
    readings = {s.tool: s.raw for s in evidence if s.raw is not None}
    return findings(readings, cards)


def _visible(cards: CardSet, evidence: list[ToolScore]) -> list[Finding]:
    # "slight" readings are within what clean photos show (the paper: report a
    # distortion only when it is visible); asked about explicitly, they are reported
    return [f for f in _findings(cards, evidence) if f.severity not in ("none", "slight")]


def examine(inputs: ExamineInput, cards: CardSet) -> AnalyzeReply:
    return _analysis(_visible(cards, inputs.evidence), inputs.scopes)


def detect(inputs: DetectInput, cards: CardSet) -> DetectReply:
    cats = list(dict.fromkeys(f.category for f in _visible(cards, inputs.evidence)))
    return DetectReply(distortion_set={scope: cats for scope in inputs.scopes})


def analyze(inputs: AnalyzeInput, cards: CardSet) -> AnalyzeReply:
    # explicit distortions: report each asked-for category, "none" when not measured
    found = {f.category: f for f in _findings(cards, inputs.evidence)}
    out: dict[str, list[AnalysisItem]] = {}
    for scope, cats in inputs.distortions.items():
        items = []
        for cat in cats:
            f = found.get(cat)
            if f is None:
                items.append(
                    AnalysisItem(
                        type=cat,
                        severity="none",
                        explanation="not detected by the signal detectors",
                    )
                )
            else:
                items.append(
                    AnalysisItem(type=f.category, severity=f.severity, explanation=f.reason[:200])
                )
        out[scope] = items
    return AnalyzeReply(distortion_analysis=out)


def select(inputs: SelectInput, cards: CardSet) -> SelectReply:
    chosen: dict[str, dict[Category, str]] = {}
    for scope, cats in inputs.distortions.items():
        chosen[scope] = {}
        for cat in cats:
            ranked = rank_tools(inputs.candidates, cat, inputs.full_reference)
            # an experience pool's insight: its leading tool, when that tool's card
            # says it measures the category (else the cards decide, as without a pool)
            fits = {c.name for c in ranked if cat in c.distortions}
            learnt = [i.best for i in inputs.insights if cat in i.categories]
            if learnt and learnt[0] in fits:
                chosen[scope][cat] = learnt[0]
            elif ranked:
                chosen[scope][cat] = ranked[0].name
    return SelectReply(selected_tools=chosen)


def interpret(inputs: InterpretInput, cards: CardSet) -> InterpretReply:
    picked = answer_options(inputs, cards)
    if picked is None:
        # no guessing: an unsupported question is an unanswered question
        raise VLMError("the rules backend has no evidence that decides this question")
    letter, why = picked
    return InterpretReply.model_validate({"final_answer": letter, "quality_reasoning": why[:500]})


def summarize(inputs: SummarizeInput, cards: CardSet) -> ScoreReply:
    scores = [s for s in inputs.tool_scores if s.ok]
    if inputs.plan.query_type != "IQA":
        return ScoreReply(
            level="fair",
            answer="The rules backend measures technical quality only; it cannot judge this.",
            reasoning="Aesthetic or semantic questions need a vision-language model (--vlm).",
            sufficient=True,
        )
    if not scores:
        # nothing measured yet: ask the planner for a plan that runs tools
        return ScoreReply(level="fair", answer="", reasoning="no tool scores yet", sufficient=False)
    norms = fusable(scores) or [s.norm for s in scores if s.norm is not None]
    qbar = fuse_tools(norms, inputs.fusion)
    # the level the final score will say: q̄ (no level probabilities here), capped by
    # the visible findings as the agent caps it
    final = capped(qbar, inputs.findings, inputs.evidence)
    level = level_of(final)
    visible = sorted(
        (f for f in inputs.findings if f.severity != "none"),
        key=lambda f: -_SEVERITY_RANK[f.severity],
    )
    if visible:
        worst = visible[0]
        listed = ", ".join(f"{f.severity} {f.named}" for f in visible[:3])
        answer = (
            f"{level.capitalize()} quality; the main problem is {worst.severity} {worst.named}."
        )
        if low_light(visible):
            answer = answer[:-1] + "; low light: dark and noisy."
        why = f"Detected {listed}. {worst.reason}"
    else:
        answer = f"{level.capitalize()} quality; no distortion stands out."
        why = "The signal detectors found no blur, noise, compression, exposure, contrast or colour problem."
    readings = {s.tool: s.raw for s in inputs.evidence if s.raw is not None}
    asked = cast_answer(inputs.query, readings) or yes_no_answer(
        inputs.query, inputs.plan, inputs.findings
    )
    answer = asked or answer
    tools = ", ".join(f"{s.tool} {s.norm:.2f}" for s in scores[:4] if s.norm is not None)
    cap = f", capped at {final:.2f} by the findings" if final < qbar else ""
    reasoning = f"{why} Tool scores (1-5): {tools}; {inputs.fusion} {qbar:.2f}{cap}."
    return ScoreReply(level=level, answer=answer[:300], reasoning=reasoning[:500], sufficient=True)


def low_light(findings: list[Finding]) -> bool:
    """Too little light: an under-exposed image whose noise is visible too (a camera gained
    the dark frame back up), named as both."""
    seen = [f for f in findings if f.severity != "none"]
    noise = category_of_detector("noise")
    return any(under_exposed(f) for f in seen) and any(f.category == noise for f in seen)


_YES_NO = re.compile(
    r"^\s*(?:is|are|was|were|does|do|did|has|have|had|can|could|will|would|should)\b", re.I
)
# a question about a good property ("Is it in focus?") is answered yes when the defect
# is absent; any other ("Is the sky noisy?") yes when it is present
_GOOD_PROPERTY = re.compile(
    r"\b(?:in focus|focused|sharp|crisp|clear|clean|well[- ]exposed|properly exposed"
    r"|detailed|noise[- ]free|free of \w+|good|fine|ok|okay|acceptable)\b",
    re.I,
)


def yes_no_answer(query: str, plan: Plan, findings: list[Finding]) -> str | None:
    """ "Yes"/"No" with the measurement, for a yes/no question about named distortions;
    None for any other query. A distortion counts as present from "moderate" (visible)."""
    if not _YES_NO.match(query) or not plan.distortions:
        return None
    asked = {c for cats in plan.distortions.values() for c in cats}
    relevant = [f for f in findings if f.category in asked]
    present = any(_SEVERITY_RANK[f.severity] >= _SEVERITY_RANK["moderate"] for f in relevant)
    yes = not present if _GOOD_PROPERTY.search(query) else present
    measured = "; ".join(f"{f.category.lower()} {f.severity}: {f.reason}" for f in relevant)
    where = "" if plan.query_scope == "Global" else " (measured over the whole image)"
    return f"{'Yes' if yes else 'No'}. {measured or 'nothing measured'}{where}"[:300]


# A question about the light's colour. No finding answers it (tools/severity.py: without a
# reference a cast cannot be told from a scene filled with one colour), so it is answered
# from the ``colorcast`` reading itself, saying what that reading can and cannot tell.
_CAST_QUERY = re.compile(
    r"\b(?:colou?r(?:ed)? casts?|casts?(?! (?:a |any |long )?shadows?)|tint(?:s|ed)?"
    r"|white[- ]balanced?|colou?r (?:balance|temperature))\b",
    re.I,
)
_NEUTRAL = re.compile(r"\b(?:neutral|balanced|correct|accurate|right|natural)\b", re.I)
# below this ``colorcast`` reading (log-chroma) grey edges, grey pixels and highlights do not
# agree on a light off grey: the level-2 synthetic cast (log gain 0.15, about ±11% per
# channel) reads 0.10 in the median on the realset's photos (scripts/cast_check.py)
CAST_SEEN = 0.1


def cast_answer(query: str, readings: Mapping[str, float]) -> str | None:
    """The answer to a yes/no question about a colour cast, tint or white balance, from the
    ``colorcast`` reading (None for other queries or without the reading): "No" (or "Yes",
    asked whether the balance is good) when the neutral estimates do not agree on a light
    off grey, else that it cannot be told without a reference, with the measurement."""
    v = readings.get("colorcast")
    if v is None or not _YES_NO.match(query) or not _CAST_QUERY.search(query):
        return None
    good = bool(_GOOD_PROPERTY.search(query) or _NEUTRAL.search(query))
    if v < CAST_SEEN:
        return (
            f"{'Yes' if good else 'No'}. colour cast reading {v:.2f}: grey edges, grey pixels "
            "and highlights do not agree on a light off grey"
        )
    # the reading is the log gain along the cast's direction; a channel moves by ~0.75 of it
    gain = round(100 * math.expm1(0.75 * v))
    return (
        f"Cannot tell without a reference. colour cast reading {v:.2f}: grey edges, grey "
        f"pixels and highlights agree on a light off grey (as a ±{gain}% channel gain would), "
        "which a colour cast and a scene filled with one colour both give"
    )[:300]


_CLEAN_WORDS = ("no visible distortion", "pristine", "none", "no distortion", "clean")


def answer_options(inputs: InterpretInput, cards: CardSet) -> tuple[str, str] | None:
    """Pick the option the measured evidence supports, or None when nothing does.

    Each option scores the severity of every detected category it names; "no distortion"
    options score when nothing was detected; tool names score when they are the tool this
    backend would run for the detected distortion. Ties or no support give no answer.
    """
    if inputs.track == "planner":
        return _pick({k: _plan_points(inputs, t.lower()) for k, t in inputs.options.items()},
                     f"The plan: {_plan_summary(inputs.plan)}.")  # fmt: skip
    if inputs.track == "executor-tool":
        return _pick({k: _tool_points(inputs, t, cards) for k, t in inputs.options.items()},
                     "The tool cards: mode (full- or no-reference) and strengths.")  # fmt: skip
    findings = [f for f in inputs.findings if f.severity != "none"]
    options = inputs.options
    tools = {s.tool for s in inputs.tool_scores if s.ok and s.distortion}  # the chosen ones
    points: dict[str, float] = {}
    for letter, text in options.items():
        t = text.lower()
        pts = 0.0
        for f in findings:
            if any(w in t for w in option_words(f.category)):
                pts = max(pts, 1.0 + _SEVERITY_RANK[f.severity])
        if not findings and any(w in t for w in _CLEAN_WORDS):
            pts = max(pts, 1.0)
        if any(name.lower() == t.strip().lower().replace("-", "_") for name in tools):
            pts = max(pts, 0.5)
        points[letter] = pts
    why = (
        "; ".join(f"{f.severity} {f.category.lower()}" for f in findings)
        or "no distortion detected"
    )
    return _pick(points, f"Measured evidence: {why}.")


def _pick(points: dict[str, float], why: str) -> tuple[str, str] | None:
    """The one best-supported option; ties or no support give no answer."""
    best = max(points.values(), default=0.0)
    winners = [k for k, v in points.items() if v == best]
    if best <= 0.0 or len(winners) != 1:
        return None
    return winners[0], why


_YES, _NO = re.compile(r"^\s*yes\b"), re.compile(r"^\s*no\b")


def _plan_points(inputs: InterpretInput, text: str) -> float:
    """How well an option states what the plan decided (the planner track)."""
    plan, question = inputs.plan, inputs.query.lower()
    fr = plan.reference_mode == "Full-Reference"
    if "full-reference" in text or "full reference" in text:
        return float(fr)
    if "no-reference" in text or "no reference" in text:
        return float(not fr)
    if "reference" in question and (_YES.match(text) or _NO.match(text)):
        return float(bool(_YES.match(text)) == fr)
    if any(w in text for w in ("explicit", "named")):
        return float((plan.distortion_source == "explicit") != ("not named" in text))
    if "inferred" in text:
        return float(plan.distortion_source == "inferred")
    if plan.query_scope == "Global":
        if "global" in text or "whole image" in text:
            return 1.0
    elif any(_object_words(o) <= _object_words(text) for o in plan.query_scope):
        return 1.0
    planned = {c for cats in (plan.distortions or {}).values() for c in cats}
    if any(any(w in text for w in option_words(c)) for c in planned):
        return 1.0
    return 0.0


_NO_REF = re.compile(r"\bno reference\b|\bwithout (?:a |the )?reference\b|\bnot available\b|"
                     r"\bno (?:pristine|original)\b|\bnot given\b")  # fmt: skip


def _card_named(text: str, cards: CardSet) -> ToolCard | None:
    key = re.sub(r"[\s\-]+", "_", text.strip().lower())
    return cards.get(key) if key in cards else None


def _tool_points(inputs: InterpretInput, text: str, cards: CardSet) -> float:
    """How well an option fits what the tool cards say (the executor-tool track): a tool
    that runs in the question's reference mode, better if it is strong for the distortion
    the question names; "Can X be used?" is yes when X runs in that mode."""
    question = inputs.query.lower()
    full_ref = inputs.has_reference and not _NO_REF.search(question)
    yes, no = _YES.match(text.lower()), _NO.match(text.lower())
    if yes or no:
        named = [
            c for c in cards if re.search(rf"\b{re.escape(c.name)}\b", question.replace("-", "_"))
        ]
        if len(named) != 1:
            return 0.0
        fits = full_ref or named[0].mode == "NR"
        return float(bool(yes) == fits)
    card = _card_named(text, cards)
    if card is None:
        return 0.0
    if full_ref and "reference" in question:
        pts = float(card.mode == "FR")  # "compares the image with its reference"
    else:
        pts = float(card.mode == "NR" if not full_ref else True)
    wanted = [c for c in CATEGORIES if any(w in question for w in option_words(c))]
    if pts and any(c in card.distortions for c in wanted):
        pts += 0.5
    return pts


def _object_words(text: str) -> set[str]:
    return set(re.findall(r"[a-z]+", text.lower())) - {"the", "a", "an", "this", "that"}


def _plan_summary(plan: Plan) -> str:
    scope = "the whole image" if plan.query_scope == "Global" else ", ".join(plan.query_scope)
    named = ", ".join(c for cats in (plan.distortions or {}).values() for c in cats)
    return (
        f"{plan.reference_mode}, about {scope}, distortions "
        f"{plan.distortion_source}{': ' + named if named else ''}"
    )


def _analysis(found: list[Finding], scopes: list[str]) -> AnalyzeReply:
    # the detectors measure the whole frame; object scopes get the global findings
    items = [
        AnalysisItem(type=f.category, severity=f.severity, explanation=f.reason[:200])
        for f in found
    ]
    return AnalyzeReply(distortion_analysis={scope: list(items) for scope in scopes})
