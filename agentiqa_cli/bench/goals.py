"""The quality goals of ``make quality``, reduced from rows that real runs produced.

Inputs are ``Result`` rows of ``assess`` (rules backend) and ``score`` on the realset
(``bench.realset``): its clean images, and the distorted series of its unfitted photos
(manifest rows of ``bench.synth``). A "judgement" is what a user reads from a row:

- judged clean: ``assess`` reported no finding of severity moderate or worse and scored
  at least ``CLEAN_SCORE`` (3.5, between "fair" and "good");
- passes the gate: ``score --fusion min --fail-under 3`` leaves it above 3.

Goals (``GOALS``): clean images judged clean per style >= 90%; the gate passes >= 90% of
clean images and fails >= 90% of level-5 distortions; ``assess``'s mean per-kind SRCC of
score against level (per photo, averaged: ``synth_eval``'s ``srcc_within``) >= 0.95 and
at least the default ``score``'s; clean images above level 4-5 images of other photos
>= 0.95 of pairs; level 4-5 distortions judged not clean >= 95%. Scores use the whole
scale: the default ``score`` puts level-5 distortions below ``LOW`` (2.5), with and without
``--ref``, and an image scored against itself at ``TOP`` (4.5) or more.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from agentiqa_cli.bench.synth_eval import MODERATE_OR_WORSE, SynthRow, evaluate_synth
from agentiqa_cli.records import Result

CLEAN_SCORE = 3.5
GATE = 3.0
LOW = 2.5
TOP = 4.5


@dataclass(frozen=True)
class Goal:
    name: str
    value: float | None
    target: float
    n: int
    note: str = ""

    @property
    def met(self) -> bool | None:
        return None if self.value is None else self.value >= self.target


def judged_clean(r: Result) -> bool | None:
    """None when the row failed (no judgement to count)."""
    if r.status != "ok" or r.score is None:
        return None
    bad = any(f.severity in MODERATE_OR_WORSE for f in r.distortions)
    return not bad and r.score >= CLEAN_SCORE


def passes_gate(r: Result) -> bool | None:
    if r.status != "ok" or r.score is None:
        return None
    return r.score >= GATE


def _rate(flags: Sequence[bool | None]) -> tuple[float | None, int]:
    ok = [f for f in flags if f is not None]
    return (sum(ok) / len(ok) if ok else None), len(ok)


def clean_by_style(
    styles: Sequence[Sequence[str]], assess: Sequence[Result]
) -> dict[str, tuple[float | None, int]]:
    """Fraction of clean images judged clean, per style label and over all ("all")."""
    out: dict[str, tuple[float | None, int]] = {}
    for style in sorted({s for ss in styles for s in ss}):
        out[style] = _rate(
            [judged_clean(r) for ss, r in zip(styles, assess, strict=True) if style in ss]
        )
    out["all"] = _rate([judged_clean(r) for r in assess])
    return out


def named_in(r: Result, category: str) -> bool:
    """``assess`` named a distortion of ``category`` (moderate or worse) in the row."""
    return any(f.category == category and f.severity in MODERATE_OR_WORSE for f in r.distortions)


def found_in(r: Result, category: str) -> bool | None:
    """A distortion of ``category`` reached the user: ``assess`` named it (moderate or worse)
    or scored the image below ``CLEAN_SCORE``. None when the row failed."""
    if r.status != "ok" or r.score is None:
        return None
    return named_in(r, category) or r.score < CLEAN_SCORE


def recall_goals(
    synth: Sequence[SynthRow], synth_assess: Sequence[Result], categories: dict[str, str]
) -> list[Goal]:
    """Per kind of ``categories`` (kind -> its distortion category): the share of its level
    4-5 images where ``assess`` named a distortion of that category (moderate or worse) or
    scored below ``CLEAN_SCORE``; the recall goal's target (95%)."""
    out = []
    for kind, category in categories.items():
        heavy = [
            r for r, s in zip(synth_assess, synth, strict=True) if s.kind == kind and s.level >= 4
        ]
        v, n = _rate([found_in(r, category) for r in heavy])
        out.append(Goal(f"assess recall of level 4-5 {kind}", v, 0.95, n, category))
    return out


def _scores(rows: Sequence[Result]) -> list[float | None]:
    return [r.score if r.status == "ok" else None for r in rows]


def goals(
    clean_styles: Sequence[Sequence[str]],
    clean_assess: Sequence[Result],
    clean_gate: Sequence[Result],
    synth: Sequence[SynthRow],
    synth_assess: Sequence[Result],
    synth_score: Sequence[Result],
    synth_gate: Sequence[Result],
    synth_ref: Sequence[tuple[SynthRow, Result]] = (),
) -> list[Goal]:
    """The goals table; every ``*_assess``/``*_score``/``*_gate`` list is aligned with its
    images (``clean_styles`` / ``synth``); ``synth_ref`` pairs rows (clean and level 5 are
    enough) with ``score --ref``'s result, each image's clean photo as the reference (a clean
    row against itself)."""
    out = []
    by_style = clean_by_style(clean_styles, clean_assess)
    for style, (v, n) in by_style.items():
        out.append(Goal(f"clean judged clean: {style}", v, 0.90, n))
    v, n = _rate([passes_gate(r) for r in clean_gate])
    out.append(Goal("gate (min, 3) passes clean", v, 0.90, n))
    l5 = [r for r, s in zip(synth_gate, synth, strict=True) if s.level == 5]
    v, n = _rate([None if (p := passes_gate(r)) is None else not p for r in l5])
    out.append(Goal("gate (min, 3) fails level 5", v, 0.90, n))
    rep = evaluate_synth(
        synth, {"assess": _scores(synth_assess), "score": _scores(synth_score)}
    ).methods
    a, s = rep
    out.append(Goal("assess SRCC vs level (mean per kind)", a.mean_srcc_within, 0.95, a.n))
    sv = s.mean_srcc_within
    out.append(
        Goal(
            "assess SRCC minus score's",
            None if a.mean_srcc_within is None or sv is None else a.mean_srcc_within - sv,
            0.0,
            a.n,
            f"score: {sv:.3f}" if sv is not None else "",
        )
    )
    out.append(Goal("assess clean above heavy (other photos)", a.rank_rate, 0.95, a.rank_pairs))
    heavy = [r for r, s in zip(synth_assess, synth, strict=True) if s.level >= 4]
    v, n = _rate([None if (c := judged_clean(r)) is None else not c for r in heavy])
    out.append(Goal("assess recall of level 4-5", v, 0.95, n))
    runs = [("score", list(zip(synth, synth_score, strict=True)))]
    runs += [("score --ref", list(synth_ref))] if synth_ref else []
    for name, pairs in runs:
        l5 = [r for s, r in pairs if s.level == 5]
        v, n = _rate([None if r.score is None else r.score < LOW for r in l5])
        out.append(Goal(f"{name}: level 5 below {LOW}", v, 1.0, n))
    if synth_ref:
        same = [r for s, r in synth_ref if s.level == 0]
        v, n = _rate([None if r.score is None else r.score >= TOP for r in same])
        out.append(Goal(f"score --ref: identical pair >= {TOP}", v, 1.0, n))
    return out
