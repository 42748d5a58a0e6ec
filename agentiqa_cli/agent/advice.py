"""The seam where learnt experience replaces the ``select`` role (EvoIR-Agent).

Before the agent asks the VLM which tool measures each distortion category, a
``ToolAdvisor`` may answer some categories of the image's distortion set itself; only the
rest go to the model, shown what the advisor learnt about them (its insights). After an
image is done the advisor may learn from it. ``experience/advisor.py`` implements it over an
experience pool; without one the agent asks the model for every category, as before.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol

from pydantic import BaseModel, ConfigDict, JsonValue

from agentiqa_cli.imaging.load import LoadedImage
from agentiqa_cli.records import ToolScore


@dataclass(frozen=True)
class Advice:
    tool: str
    level: str  # "coarse" (a significant ranking) or "fine" (a learnt pattern profile)
    detail: dict[str, JsonValue] = field(default_factory=dict)  # d, SE, records, profile


class Insight(BaseModel):
    """What the advisor learnt about a degradation set, for the model's ``select``: the tool
    its records favour and a text saying by how much and on how many records."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    categories: list[str]
    best: str
    text: str


class ToolAdvisor(Protocol):
    def advise(
        self, categories: Sequence[str], full_reference: bool, evidence: Sequence[ToolScore]
    ) -> dict[str, Advice]:
        """The tool to use for each category of the image's distortion set that the advisor
        can answer without asking the model (the others are left out)."""
        ...

    def insights(self, categories: Sequence[str], full_reference: bool) -> list[Insight]:
        """What the advisor knows about the categories the model will decide."""
        ...

    def learn(
        self, image: LoadedImage, categories: Sequence[str], full_reference: bool
    ) -> dict[str, JsonValue] | None:
        """Learn from an assessed image (blocking; run in a worker thread); what was learnt,
        for the trace, or None when nothing was."""
        ...
