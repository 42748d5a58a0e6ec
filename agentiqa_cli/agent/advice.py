"""The seam where learnt experience replaces the ``select`` role (EvoIR-Agent).

Before the agent asks the VLM which tool measures each distortion category, a
``ToolAdvisor`` may answer some categories itself; only the rest go to the model. After an
image is done the advisor may learn from it. ``experience/advisor.py`` implements it over an
experience pool; without one the agent asks the model for every category, as before.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol

from pydantic import JsonValue

from agentiqa_cli.imaging.load import LoadedImage
from agentiqa_cli.records import ToolScore


@dataclass(frozen=True)
class Advice:
    tool: str
    level: str  # "coarse" (a significant ranking) or "fine" (similar records)
    detail: dict[str, JsonValue] = field(default_factory=dict)  # d, SE, records, neighbours


class ToolAdvisor(Protocol):
    def advise(
        self, category: str, full_reference: bool, evidence: Sequence[ToolScore]
    ) -> Advice | None:
        """The tool to use for ``category`` without asking the model, or None."""
        ...

    def learn(
        self, image: LoadedImage, categories: Sequence[str], full_reference: bool
    ) -> dict[str, JsonValue] | None:
        """Learn from an assessed image (blocking; run in a worker thread); what was learnt,
        for the trace, or None when nothing was."""
        ...
