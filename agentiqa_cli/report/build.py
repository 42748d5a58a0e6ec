"""The dataset issue report: per-issue counts, duplicate sets and the worst images per issue.

Image issues follow CleanVision's dataset-level set and its default thresholds where they
are sound (dark: 99th brightness percentile < 0.22; light: 5th > 0.95; odd aspect ratio:
short/long side < 0.5; low information: entropy/10 < 0.3; odd size: linear size 5× off
the median; grayscale: R = G = B). Blurry uses the built-in sharpness detector (< 0.3, its
card's "heavy blur") because CleanVision's 64-px edge variance misses most blur. Results
issues come from the CSV: failed rows, low scores, each distortion and imperfection named.
Every issue has a per-image score in [0, 1] where lower is worse; its worst images are the
lowest-scored flagged ones.
"""

from __future__ import annotations

import math
import os
import re
import statistics
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, Field

from agentiqa_cli.report.duplicates import (
    DEFAULT_MAX_DISTANCE,
    DEFAULT_MIN_SIMILARITY,
    exact_sets,
    near_sets,
)
from agentiqa_cli.report.facts import ImageFacts, measure
from agentiqa_cli.report.rows import Mark, Row, read_rows
from agentiqa_cli.report.table import ImageRow, Summary, row_level, summarize

Source = Literal["image", "results"]

DARK, LIGHT, ASPECT, LOW_INFO, BLUR, ODD_SIZE = 0.22, 0.05, 0.5, 0.3, 0.3, 0.2
LOW_SCORE = 2.5  # below "fair": the poor and bad levels
_SEVERITY = {"slight": 0.75, "minor": 0.75, "low": 0.75, "moderate": 0.5, "medium": 0.5,
             "severe": 0.25, "high": 0.25, "extreme": 0.0}  # fmt: skip

IMAGE_ISSUES: dict[str, str] = {
    "dark": "mostly dark (99th brightness percentile below 0.22)",
    "light": "washed out (5th brightness percentile above 0.95)",
    "blurry": "blurry (sharpness detector below 0.3)",
    "low_information": "little content (entropy below 3 bits)",
    "odd_aspect_ratio": "extreme aspect ratio (short side under half the long)",
    "odd_size": "size 5× off the collection's median",
    "grayscale": "no colour (R = G = B)",
    "exact_duplicates": "byte-identical to another file",
    "near_duplicates": "a resized, recompressed or cropped copy of another image",
}


class Shown(BaseModel):
    """One image as a table cell or a thumbnail."""

    image: str
    score: float  # the issue's score: lower is worse
    detail: str = ""
    thumbnail: str = ""


class Issue(BaseModel):
    name: str
    source: Source
    description: str
    count: int
    worst: list[Shown] = Field(default_factory=list)


class Report(BaseModel):
    csv: str
    images: int  # rows in the CSV
    readable: int  # image files that could be read for the image checks
    issues: list[Issue]
    exact_sets: list[list[Shown]] = Field(default_factory=list)
    near_sets: list[list[Shown]] = Field(default_factory=list)
    unreadable: list[Shown] = Field(default_factory=list)
    rows: list[ImageRow] = Field(default_factory=list)  # every image, in the CSV's order
    summary: Summary = Field(default_factory=Summary)

    def issue(self, name: str) -> Issue | None:
        return next((i for i in self.issues if i.name == name), None)


_ESCAPED_BYTE = re.compile(r"\\x([0-9a-fA-F]{2})")


def _undo_display(name: str) -> str:
    """``display_path`` writes an undecodable byte as ``\\xNN``; give the real name back."""
    parts = _ESCAPED_BYTE.split(name)
    raw = b"".join(
        bytes([int(part, 16)]) if i % 2 else part.encode("utf-8", "surrogateescape")
        for i, part in enumerate(parts)
    )
    return os.fsdecode(raw)


def resolve(image: str, csv_path: Path) -> Path:
    """An image cell as a file: as written (absolute or from here), else next to the CSV."""
    for name in dict.fromkeys([image, _undo_display(image)]):
        p = Path(name)
        if p.exists():
            return p
        if not p.is_absolute() and (csv_path.parent / p).exists():
            return csv_path.parent / p
    return Path(image)


def _image_scores(facts: list[ImageFacts]) -> dict[str, list[float | None]]:
    """Per image issue scores (lower is worse; None where the image was unreadable)."""
    ok = [f for f in facts if f.ok]
    median_side = statistics.median(math.sqrt(f.width * f.height) for f in ok) if ok else 1.0
    out: dict[str, list[float | None]] = {k: [] for k in IMAGE_ISSUES if "duplicates" not in k}
    for f in facts:
        if not f.ok:
            for v in out.values():
                v.append(None)
            continue
        r = math.sqrt(f.width * f.height) / median_side
        out["dark"].append(f.bright_p99)
        out["light"].append(1.0 - f.bright_p5)
        out["blurry"].append(f.sharpness)
        out["low_information"].append(min(1.0, 0.1 * f.entropy))
        out["odd_aspect_ratio"].append(min(f.width, f.height) / max(f.width, f.height))
        out["odd_size"].append(min(r, 1.0 / r))
        out["grayscale"].append(0.0 if f.grayscale else 1.0)
    return out


_THRESHOLD: dict[str, float] = {
    "dark": DARK, "light": LIGHT, "blurry": BLUR, "low_information": LOW_INFO,
    "odd_aspect_ratio": ASPECT, "odd_size": ODD_SIZE, "grayscale": 0.5,
}  # fmt: skip


def _worst(cands: Iterable[Shown], top: int) -> list[Shown]:
    return sorted(cands, key=lambda s: (s.score, s.image))[:top]


def _mark_score(m: Mark) -> float:
    level = m.level.strip().lower()
    if level in _SEVERITY:
        return _SEVERITY[level]
    try:
        v = float(level)
    except ValueError:
        return 0.5
    return max(0.0, min(1.0, 1.0 - v)) if 0.0 <= v <= 1.0 else 0.5


def _results_issues(
    rows: list[Row], thumbs: dict[str, str], top: int, tags: dict[str, list[str]]
) -> list[Issue]:
    """The CSV's own issues; each image's names are added to its ``tags``."""
    failed = [Shown(image=r.image, score=0.0, detail=r.error) for r in rows if r.status == "error"]
    low = [
        Shown(image=r.image, score=(r.score - 1) / 4, detail=f"{r.score:.2f} {r.level}".strip())
        for r in rows
        if r.status != "error" and r.score is not None and r.score < LOW_SCORE
    ]
    for name, shown in (("failed", failed), ("low_score", low)):
        for s in shown:
            tags[s.image].append(name)
    issues = [
        Issue(name="failed", source="results", description="could not be assessed (status error)",
              count=len(failed), worst=_worst(failed, top)),
        Issue(name="low_score", source="results",
              description=f"quality score below {LOW_SCORE} (poor or bad)",
              count=len(low), worst=_worst(low, top)),
    ]  # fmt: skip
    for column, label in (("distortions", "distortion"), ("imperfections", "imperfection")):
        found: dict[str, list[Shown]] = {}
        for r in rows:
            seen: dict[str, Mark] = {}
            for m in getattr(r, column):
                if m.level.lower() != "none" and (
                    m.name not in seen or _mark_score(m) < _mark_score(seen[m.name])
                ):
                    seen[m.name] = m
            for name, m in seen.items():
                found.setdefault(name, []).append(
                    Shown(image=r.image, score=_mark_score(m), detail=m.level)
                )
                tags[r.image].append(f"{label}:{name}")
        for name in sorted(found):
            issues.append(
                Issue(name=f"{label}:{name}", source="results",
                      description=f"{label} named in the {column} column",
                      count=len(found[name]), worst=_worst(found[name], top))
            )  # fmt: skip
    for issue in issues:
        for s in issue.worst:
            s.thumbnail = thumbs.get(s.image, "")
    return issues


def build_report(
    csv_path: Path,
    rows: list[Row] | None = None,
    top: int = 6,
    max_distance: int = DEFAULT_MAX_DISTANCE,
    min_similarity: float = DEFAULT_MIN_SIMILARITY,
    workers: int = 2,
    on_image: Callable[[str], None] | None = None,
) -> Report:
    """Measure every image the CSV names (``rows``: already read) and build the report."""
    rows = read_rows(csv_path) if rows is None else rows

    def one(row: Row) -> ImageFacts:
        f = measure(resolve(row.image, csv_path))
        if on_image is not None:
            on_image(row.image)
        return f

    with ThreadPoolExecutor(max_workers=max(1, workers)) as pool:
        facts = list(pool.map(one, rows))
    names = [r.image for r in rows]
    thumbs = {n: f.thumbnail for n, f in zip(names, facts, strict=True) if f.ok}

    def shown(i: int, score: float, detail: str = "") -> Shown:
        return Shown(image=names[i], score=score, detail=detail, thumbnail=facts[i].thumbnail)

    tags: dict[str, list[str]] = {n: [] for n in names}  # each image's findings
    issues: list[Issue] = []
    image_tags: list[list[str]] = [[] for _ in names]  # the image checks': after the CSV's
    for name, scores in _image_scores(facts).items():
        hits = [
            (i, s) for i, s in enumerate(scores)
            if s is not None and s < _THRESHOLD[name]
            and not (name == "blurry" and _lowinfo(facts[i]))
        ]  # fmt: skip
        flagged = [shown(i, s, f"{s:.3f}") for i, s in hits]
        for i, _ in hits:
            image_tags[i].append(name)
        issues.append(
            Issue(name=name, source="image", description=IMAGE_ISSUES[name],
                  count=len(flagged), worst=_worst(flagged, top))
        )  # fmt: skip
    digests = [f.sha256 for f in facts]
    exact = exact_sets(digests)
    ok = [i for i, f in enumerate(facts) if f.ok]
    near_local = near_sets(
        [facts[i].phash for i in ok],
        [facts[i].dhash for i in ok],
        [facts[i].gray for i in ok],
        [digests[i] for i in ok],
        max_distance,
        min_similarity,
    )
    near = [[ok[i] for i in s] for s in near_local]
    for name, sets in (("exact_duplicates", exact), ("near_duplicates", near)):
        members = [shown(i, 0.0) for s in sets for i in s]
        for i in sorted({i for s in sets for i in s}):
            image_tags[i].append(name)
        issues.append(
            Issue(name=name, source="image", description=IMAGE_ISSUES[name],
                  count=len(members), worst=members[:top])
        )  # fmt: skip
    issues += _results_issues(rows, thumbs, top, tags)
    table = [
        ImageRow(image=r.image, status=r.status, error=r.error, score=r.score,
                 level=row_level(r.status, r.score, r.level), answer=r.answer,
                 findings=list(dict.fromkeys(tags[r.image] + image_tags[i])),
                 thumbnail=facts[i].icon)
        for i, r in enumerate(rows)
    ]  # fmt: skip
    return Report(
        rows=table,
        summary=summarize(table),
        csv=str(csv_path),
        images=len(rows),
        readable=len(ok),
        issues=issues,
        exact_sets=[[shown(i, 0.0, facts[i].sha256[:12]) for i in s] for s in exact],
        near_sets=[[shown(i, 0.0, f"{facts[i].width}×{facts[i].height}") for i in s] for s in near],
        unreadable=[Shown(image=names[i], score=0.0, detail=f.error)
                    for i, f in enumerate(facts) if not f.ok],
    )  # fmt: skip


def _lowinfo(f: ImageFacts) -> bool:
    """No detail to judge sharpness by: such an image is low information, not blurry."""
    return min(1.0, 0.1 * f.entropy) < LOW_INFO
