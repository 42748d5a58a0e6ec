"""What an evaluation knows: its rounds (as drawn), the rows they produced, and the
estimates both give; and how a cut run's state is read back for ``--resume``.

The trace's ``eval_round`` steps with ``phase: sampled`` hold each round as drawn (before
any image is assessed); the CSV holds the rows. Together they rebuild the state exactly,
so a resumed run assesses only what is missing and then plans on.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final

from pydantic import ValidationError

from agentiqa_cli.errors import ConfigError
from agentiqa_cli.evaluate.aspects import readings
from agentiqa_cli.evaluate.records import (
    OVERALL,
    AspectKind,
    Estimate,
    RoundDraw,
    RoundEvent,
    RunIdentity,
    TierShare,
    aspect_key,
)
from agentiqa_cli.evaluate.stats import Interval, Known, RoundData, combine
from agentiqa_cli.evaluate.tiers import TIER_NAMES, Tiers
from agentiqa_cli.io.results import read_table
from agentiqa_cli.records import CATEGORIES, Result, ToolScore, Usage
from agentiqa_cli.tools.cards import CardSet

SAMPLED: Final = "sampled"  # the eval_round phase that records a round as drawn


@dataclass
class EvalState:
    rounds: list[RoundDraw] = field(default_factory=list)
    rows: dict[str, Result] = field(default_factory=dict)  # image → its latest row
    declared: list[str] = field(default_factory=list)  # the query's sub-aspects (planner)
    screened: int = 0
    planner: Usage = field(default_factory=Usage)

    @property
    def sampled(self) -> set[str]:
        return {s.image for r in self.rounds for s in r.samples}

    @property
    def drawn(self) -> int:
        return sum(len(r.samples) for r in self.rounds)

    @property
    def errors(self) -> int:
        return sum(r.status == "error" for r in self.rows.values())

    def probed(self) -> dict[str, int]:
        """Sub-aspect key → the round that probed it."""
        return {r.sub_aspect.key: r.round for r in self.rounds}

    def pending(self) -> list[tuple[RoundDraw, list[int]]]:
        """Per round, the samples (by index) without a row, or with a row that failed for
        a reason that may not recur (``--resume`` assesses them again)."""
        out = []
        for r in self.rounds:
            todo = [
                i
                for i, s in enumerate(r.samples)
                if s.image not in self.rows
                or (self.rows[s.image].status == "error" and self.rows[s.image].transient)
            ]
            if todo:
                out.append((r, todo))
        return out


@dataclass(frozen=True)
class Measure:
    """How rows are read: which tools run on every image for each round's tool."""

    cards: CardSet
    assess_set: frozenset[str]  # the agent's default tools (run on every image)

    def of(self, tool: str) -> frozenset[str]:
        return self.assess_set if tool == "assess" else frozenset({tool})


def estimates(
    state: EvalState, population: int | None, tiers: Tiers, measure: Measure
) -> list[Estimate]:
    """Every sub-aspect the rows measure: overall first, then the categories in their
    canonical order, then free-text sub-aspects (each from its own round's scores)."""
    probed = state.probed()
    reads = _readings(state, measure)
    keys = [aspect_key(OVERALL)] + [aspect_key(c) for c in CATEGORIES]
    names = {aspect_key(OVERALL): OVERALL} | {aspect_key(c): str(c) for c in CATEGORIES}
    out = []
    for key in keys:
        interval = _pooled(state.rounds, reads, key, population)
        if interval is None and key not in probed:
            continue
        kind: AspectKind = "overall" if key == aspect_key(OVERALL) else "category"
        out.append(_estimate(names[key], kind, interval, tiers, probed.get(key)))
    for r in state.rounds:
        if r.sub_aspect.kind == "other":
            own = _own_round(r, state.rows)
            out.append(_estimate(r.sub_aspect.name, "other", own, tiers, r.round))
    return out


def tier_mix(
    state: EvalState, population: int | None, tiers: Tiers, measure: Measure
) -> list[TierShare]:
    """How the overall scores spread over the tiers: per tier, the share of images in it,
    estimated like a mean (of the indicator "this image's score is in the tier") under
    the same stratified design, so hard sampling does not inflate the worst tiers."""
    key = aspect_key(OVERALL)
    reads = _readings(state, measure)
    out = []
    for name in TIER_NAMES:
        inside = {
            image: {key: float(tiers.tier(r[key]) == name)}
            for image, r in reads.items()
            if key in r
        }
        share = _pooled(state.rounds, inside, key, population, scale=(0.0, 1.0))
        if share is None:
            return []
        out.append(TierShare(tier=name, share=round(share.mean, 4), lo=round(share.lo, 4),
                             hi=round(share.hi, 4)))  # fmt: skip
    return out


def _readings(state: EvalState, measure: Measure) -> dict[str, dict[str, float]]:
    """Each assessed image's readings, by sub-aspect key."""
    # the overall quality is what the agent answers; a card's score (one detector) stands
    # in for it only when no round ran the agent
    agent_ran = any(r.tool == "assess" for r in state.rounds)
    reads: dict[str, dict[str, float]] = {}
    for r in state.rounds:
        for s in r.samples:
            row = state.rows.get(s.image)
            if row is not None:
                reads[s.image] = readings(row, measure.of(r.tool), measure.cards)
                if agent_ran and r.tool != "assess":
                    reads[s.image].pop(aspect_key(OVERALL), None)
    return reads


def _pooled(
    rounds: list[RoundDraw],
    reads: dict[str, dict[str, float]],
    key: str,
    population: int | None,
    scale: tuple[float, float] = (1.0, 5.0),
) -> Interval | None:
    data: list[tuple[RoundData, Known]] = []
    known = Known()
    for r in rounds:
        hard: list[float] = []
        rand: list[float] = []
        for s in r.samples:
            v = reads.get(s.image, {}).get(key)
            if v is not None:
                (hard if s.stratum == "hard" else rand).append(v)
        data.append((RoundData(hard, rand, r.pool, r.hard_pool, r.remaining), known))
        known = Known(known.total + sum(hard) + sum(rand), known.count + len(hard) + len(rand))
    return combine(data, population, scale=scale)


def _own_round(r: RoundDraw, rows: dict[str, Result]) -> Interval | None:
    """A free-text sub-aspect: the scores of the images drawn for it, in its round."""
    vals: dict[str, list[float]] = {"hard": [], "random": []}
    for s in r.samples:
        row = rows.get(s.image)
        if row is not None and row.status == "ok" and row.score is not None:
            vals[s.stratum].append(float(row.score))
    data = RoundData(vals["hard"], vals["random"], r.pool, r.hard_pool, r.remaining)
    return combine([(data, Known())], r.remaining)


def _estimate(
    name: str, kind: AspectKind, interval: Interval | None, tiers: Tiers, round_: int | None
) -> Estimate:
    if interval is None:
        return Estimate(sub_aspect=name, kind=kind, round=round_)
    return Estimate(
        sub_aspect=name,
        kind=kind,
        mean=round(interval.mean, 4),
        lo=round(interval.lo, 4),
        hi=round(interval.hi, 4),
        tier=tiers.tier(interval.mean),
        fits=interval.exact or tiers.fits(interval.lo, interval.hi),
        samples=interval.n,
        exact=interval.exact,
        round=round_,
    )


def worst(found: Iterable[Estimate]) -> Estimate | None:
    """The lowest sub-aspect besides the overall quality (probed ones first)."""
    cands = [e for e in found if e.kind != "overall" and e.mean is not None]
    if not cands:
        return None
    return min(cands, key=lambda e: (not e.probed, e.mean))


# -- resume ------------------------------------------------------------------------------------
def read_draws(trace: Path, identity: RunIdentity) -> tuple[list[RoundDraw], list[str]]:
    """The rounds a cut run drew, and the query's sub-aspects as it last recorded them,
    from its trace; refused when the trace was written for another evaluation."""
    draws: dict[int, RoundDraw] = {}
    declared: list[str] = []
    try:
        lines = trace.read_text(encoding="utf-8", errors="replace").splitlines()
    except FileNotFoundError:
        return [], []
    except OSError as e:
        raise ConfigError(f"--resume: cannot read {trace}: {e.strerror or e}") from None
    for line in lines:
        try:
            event = json.loads(line)
        except json.JSONDecodeError:
            continue  # a line cut by the kill
        if not isinstance(event, dict) or event.get("step") != "eval_round":
            continue
        parsed = event.get("parsed")
        if not isinstance(parsed, dict) or parsed.get("phase") != SAMPLED:
            continue
        try:
            sampled = RoundEvent.model_validate(parsed)
        except ValidationError as e:
            raise ConfigError(f"--resume: {trace}: unreadable round: {e}") from None
        if sampled.run != identity:
            raise ConfigError(
                f"--resume: {trace} was written by another evaluation (query, seed, source "
                "or tiers differ); use another --out or drop --resume"
            )
        if sampled.draw is not None:
            draws.setdefault(sampled.draw.round, sampled.draw)  # later copies repeat it
        declared = list(sampled.declared or [])
    ordered = [draws[k] for k in sorted(draws)]
    if [d.round for d in ordered] != list(range(1, len(ordered) + 1)):
        raise ConfigError(f"--resume: {trace}: rounds are missing from the trace")
    return ordered, declared


def read_rows(csv_path: Path) -> dict[str, Result]:
    """The rows already written, by image (the newer row for an image wins)."""
    if not csv_path.exists():
        return {}
    rows: dict[str, Result] = {}
    for row in read_table(csv_path)[1]:  # the records parser of --resume
        with contextlib.suppress(KeyError, ValueError, ValidationError):
            rows[row["image"]] = result_of(row)
    return rows


def result_of(row: dict[str, str]) -> Result:
    """The parts of a Result that estimates need, from its CSV row."""
    tools = []
    for cell in (row.get("tools") or "").split(";"):
        name, _, value = cell.partition("=")
        if name and value:
            tools.append(ToolScore(tool=name, norm=float(value)))
    return Result(
        image=row["image"],
        reference=row.get("reference", ""),
        key=row.get("key", ""),
        status="error" if row.get("status") == "error" else "ok",
        error=row.get("error", ""),
        score=float(row["score"]) if row.get("score") else None,
        level=row.get("level", ""),
        answer=row.get("answer", ""),
        tools=tools,
        transient=row.get("transient") == "1",
    )
