"""What a benchmark evaluates: items (an image, its reference, for MCQs the question).

A *method* is not code of its own: it is ``score`` with one tool, ``score``'s default set,
or ``assess``, run through the same ``Runtime.run`` as the commands (``bench/runs.py``).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from agentiqa_cli.imaging.discover import Job


@dataclass(frozen=True, eq=False)
class Item:
    """One thing to score: an image, its reference if any, and for MCQs the question."""

    image: Path
    reference: Path | None = None
    question: str | None = None
    options: dict[str, str] | None = None  # letter → text, in display order
    key: str = ""  # a stable id (MCQ id, manifest row) for traces and resume keys

    def job(self, with_reference: bool = True) -> Job:
        return Job(
            image=self.image,
            root=self.image.parent,
            reference=self.reference if with_reference else None,
            tag=self.key,
        )
