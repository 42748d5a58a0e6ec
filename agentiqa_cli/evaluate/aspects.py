"""Sub-aspects of a query, what one result row reads of each, and the detector that ranks
images on each (for drawing the hardest samples).

A row's *readings* are on the 1–5 scale: the overall quality is the row's score (the
agent's answer to the query, or the card's score with ``score``); a distortion category is
the lowest normalized score among the row's signal detectors whose card lists that category
(the built-in cards: the card is the one source of what a tool measures). Only tools
that run on every image count (the agent's default set, or the card a round used): a tool
the agent added because it saw a problem reads only problem images, which would bias the
category's mean.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from agentiqa_cli.agent.planner_rules import plan_query
from agentiqa_cli.evaluate.records import OVERALL, SubAspect, aspect_key
from agentiqa_cli.records import CATEGORIES, Category, Result
from agentiqa_cli.tools.cards import CardSet

_OVERALL_WORDS = re.compile(
    r"\b(?:overall|general|global|whole|technical quality|image quality|perceptual)\b|^quality$"
)


def overall() -> SubAspect:
    return SubAspect(name=OVERALL, kind="overall")


def category_aspect(category: Category) -> SubAspect:
    return SubAspect(name=category, kind="category", category=category)


def query_categories(query: str) -> list[Category]:
    """The distortion categories a query names, first mention first (the rules planner's)."""
    plan = plan_query(query, False, [])
    found: list[Category] = []
    for cats in (plan.distortions or {}).values():
        found.extend(cats)
    return list(dict.fromkeys(found))


def resolve(name: str) -> SubAspect:
    """A sub-aspect from its name: one that names a distortion category becomes that
    category (two names for one category measure the same thing, so count as a repeat)."""
    text = " ".join(name.split())[:60]
    cats = query_categories(text)
    if cats:
        return category_aspect(cats[0])
    if aspect_key(text) == aspect_key(OVERALL) or _OVERALL_WORDS.search(aspect_key(text)):
        return overall()
    return SubAspect(name=text or OVERALL, kind="other" if text else "overall")


def detector_categories(cards: CardSet) -> dict[str, list[Category]]:
    """Built-in signal detector → the categories its card says it measures."""
    return {c.name: list(c.distortions) for c in cards if c.detector}


def detectors_for(category: Category, cards: CardSet) -> list[str]:
    """The built-in signal detectors whose cards list ``category``."""
    return sorted(n for n, cats in detector_categories(cards).items() if category in cats)


def measured_categories(measured: Iterable[str], cards: CardSet) -> list[Category]:
    """Categories that rows read from tools in ``measured`` (tools run on every image)."""
    by_tool = detector_categories(cards)
    have = {cat for t in measured for cat in by_tool.get(t, [])}
    return [c for c in CATEGORIES if c in have]


def readings(result: Result, measured: frozenset[str], cards: CardSet) -> dict[str, float]:
    """``aspect key → reading`` for one row: its score, and each category measured by one
    of its tools in ``measured``. Error rows and rows without a score read nothing."""
    if result.status != "ok":
        return {}
    by_tool = detector_categories(cards)
    out: dict[str, float] = {}
    if result.score is not None:
        out[aspect_key(OVERALL)] = float(result.score)
    for s in result.tools:
        if s.tool not in measured or not s.ok or s.norm is None:
            continue
        for cat in by_tool.get(s.tool, []):
            key = aspect_key(cat)
            out[key] = min(out.get(key, 5.0), float(s.norm))
    return out
