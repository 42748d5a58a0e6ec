"""The report's view of a whole run: one row per image and the summary over them.

``image_rows`` gives each image its score, level, answer, error and findings (the CSV's
failures, low scores, distortions and imperfections and the image checks' issues, one tag
each); ``summarize`` counts them per level and per finding, bins the scores into a
histogram and crosses levels with findings.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from pydantic import BaseModel, Field

from agentiqa_cli.records import LEVELS, level_of

ERROR, UNSCORED = "error", "no score"
# the level columns best first, then the rows that have no level
LEVEL_ORDER: tuple[str, ...] = (*reversed(LEVELS), UNSCORED, ERROR)
BIN_WIDTH = 0.25
LOW, HIGH = 1.0, 5.0  # the score scale


def cutoffs() -> dict[str, str]:
    """What each level means in score numbers: ``level_of`` rounds to the nearest level."""
    out: dict[str, str] = {}
    for i, level in enumerate(LEVELS):
        lo, hi = i + 0.5, i + 1.5  # level i+1's half-way points
        if i == 0:
            out[level] = f"below {hi}"
        elif i == len(LEVELS) - 1:
            out[level] = f"{lo} and above"
        else:
            out[level] = f"{lo} to below {hi}"
    return out


COLOURS = {"excellent": "#1a9850", "good": "#91cf60", "fair": "#fee08b", "poor": "#fc8d59",
           "bad": "#d73027", UNSCORED: "#dddddd", ERROR: "#555555"}  # fmt: skip


class ImageRow(BaseModel):
    """One image of the CSV as the table of every image shows it."""

    image: str
    status: str = "ok"
    error: str = ""
    score: float | None = None
    level: str = UNSCORED  # one of LEVEL_ORDER
    answer: str = ""
    findings: list[str] = Field(default_factory=list)
    thumbnail: str = ""


class Bin(BaseModel):
    lo: float
    hi: float
    count: int
    level: str  # the level of the bin's middle


class Summary(BaseModel):
    images: int = 0
    mean: float | None = None
    levels: dict[str, int] = Field(default_factory=dict)  # LEVEL_ORDER, zeros included
    findings: dict[str, int] = Field(default_factory=dict)  # most frequent first
    histogram: list[Bin] = Field(default_factory=list)
    by_level: dict[str, dict[str, int]] = Field(default_factory=dict)  # finding → level → n


def row_level(status: str, score: float | None, level: str) -> str:
    """The CSV's level when it is one of ours, else the score's; errors and rows without a
    score have their own columns."""
    if status == "error":
        return ERROR
    written = level.strip().lower()
    if written in LEVELS:
        return written
    return level_of(score) if score is not None else UNSCORED


def histogram(scores: Sequence[float], width: float = BIN_WIDTH) -> list[Bin]:
    """Counts of scores in bins of ``width`` over [1, 5]; the last bin holds 5 itself and
    scores outside the scale count in the end bins."""
    n = round((HIGH - LOW) / width)
    counts = [0] * n
    for s in scores:
        counts[min(n - 1, max(0, int((s - LOW) // width)))] += 1
    return [
        Bin(lo=LOW + i * width, hi=LOW + (i + 1) * width, count=c,
            level=level_of(LOW + (i + 0.5) * width))
        for i, c in enumerate(counts)
    ]  # fmt: skip


def summarize(rows: Sequence[ImageRow]) -> Summary:
    scores = [r.score for r in rows if r.status != "error" and r.score is not None]
    levels = Counter(r.level for r in rows)
    findings = Counter(f for r in rows for f in dict.fromkeys(r.findings))
    ordered = dict(sorted(findings.items(), key=lambda kv: (-kv[1], kv[0])))
    by_level = {name: dict.fromkeys(LEVEL_ORDER, 0) for name in ordered}
    for r in rows:
        for f in dict.fromkeys(r.findings):
            by_level[f][r.level] += 1
    return Summary(
        images=len(rows),
        mean=sum(scores) / len(scores) if scores else None,
        levels={k: levels.get(k, 0) for k in LEVEL_ORDER},
        findings=ordered,
        histogram=histogram(scores),
        by_level=by_level,
    )
