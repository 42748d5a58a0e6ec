"""Typed records of an evaluation: sub-aspects, draws, estimates and the verdict.

``RoundDraw`` is what the trace's ``eval_round`` step records before a round is assessed
(``--resume`` rebuilds the rounds from it); ``Verdict`` is the command's output.
"""

from __future__ import annotations

import re
from typing import Literal

from pydantic import Field

from agentiqa_cli.evaluate.stats import Stratum
from agentiqa_cli.evaluate.tiers import TierName
from agentiqa_cli.records import Category, Record, Usage

AspectKind = Literal["overall", "category", "other"]
OVERALL = "Overall quality"


def aspect_key(name: str) -> str:
    """Sub-aspects are the same when their names are (case and spacing aside)."""
    return re.sub(r"[\s_-]+", " ", name).strip().casefold()


class SubAspect(Record):
    """A facet of the user's query: the overall quality, one distortion category, or a
    free-text facet a model named (measured by the score of its own round's images)."""

    name: str
    kind: AspectKind
    category: Category | None = None

    @property
    def key(self) -> str:
        return aspect_key(self.name)


class Sample(Record):
    image: str  # the job's display name (the CSV's image column)
    stratum: Stratum
    hardness: float | None = None  # the detector reading it was ranked by (1–5)
    prompt: str = ""  # generator mode: what it was generated from


class RoundDraw(Record):
    """One round as planned and drawn, before its images are assessed."""

    round: int
    sub_aspect: SubAspect
    tool: str  # "assess" or a tool card's name
    n: int  # as planned (3–9); fewer samples when fewer images were left
    thought: str = ""
    question: str = ""  # what `assess` was asked of each sample ("" = the user's query)
    samples: list[Sample]
    pool: int = 0  # images screened with the detector (phase 1); 0: no screening
    hard_pool: int = 0
    remaining: int | None = None  # images not yet assessed before the round; None: generator
    detector: list[str] = Field(default_factory=list)  # tools the pool was ranked with


class Estimate(Record):
    sub_aspect: str
    kind: AspectKind
    mean: float | None = None
    lo: float | None = None
    hi: float | None = None
    tier: TierName | None = None
    fits: bool = False  # the interval lies inside one tier
    samples: int = 0  # readings the estimate rests on
    exact: bool = False  # every image was read
    round: int | None = None  # the round that probed this sub-aspect (None: not probed)
    question: str = ""  # the question its round asked of each sample ("" = the query)

    @property
    def probed(self) -> bool:
        return self.round is not None


class TierShare(Record):
    """The estimated share of the collection's images whose overall score is in ``tier``
    (unbiased under the rounds' design, as every estimate here), with its 95% interval."""

    tier: TierName
    share: float
    lo: float
    hi: float


class Verdict(Record):
    query: str
    overall: Estimate
    mix: list[TierShare] = Field(default_factory=list)  # worst tier first; empty: no scores
    sub_aspects: list[Estimate]
    worst: str | None = None  # the lowest probed sub-aspect (besides overall quality)
    summary: str
    stop_reason: str
    rounds: int
    assessed: int  # images assessed (rows written), errors included
    errors: int
    population: int | None  # images in the folder; None for a generator
    screened: int  # detector readings taken to rank pools
    tiers: list[float]
    tiers_source: str
    planner: Usage
    seconds: float


RunIdentity = dict[str, str | int | list[float]]


class RoundEvent(Record):
    """The trace's ``eval_round`` step: a round as drawn (``sampled``, what ``--resume``
    reads), a refused plan, a round's estimates once assessed, or the final verdict."""

    phase: Literal["sampled", "refused", "assessed", "verdict"]
    round: int | None = None
    run: RunIdentity | None = None
    declared: list[str] | None = None
    draw: RoundDraw | None = None
    reason: str | None = None
    reply: dict[str, object] | None = None
    estimates: list[Estimate] | None = None
    verdict: Verdict | None = None
