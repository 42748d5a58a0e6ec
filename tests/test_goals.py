"""The goals table's reductions (bench.goals) on hand-made rows."""

from __future__ import annotations

from pathlib import Path

import pytest

from agentiqa_cli.bench.goals import clean_by_style, goals, judged_clean, passes_gate
from agentiqa_cli.bench.synth_eval import SynthRow
from agentiqa_cli.records import Finding, Result


def row(score: float | None, *severities: str, status: str = "ok") -> Result:
    fs = [Finding(category="Noise", severity=s) for s in severities]  # type: ignore[arg-type]
    return Result(image="x.png", score=score, distortions=fs, status=status)  # type: ignore[arg-type]


def test_judgements() -> None:
    assert judged_clean(row(4.0)) is True
    assert judged_clean(row(4.0, "slight")) is True
    assert judged_clean(row(4.9, "moderate")) is False
    assert judged_clean(row(3.4)) is False
    assert judged_clean(row(None, status="error")) is None
    assert passes_gate(row(3.0)) is True and passes_gate(row(2.99)) is False
    by = clean_by_style([["bw"], ["bw", "macro"], ["macro"]], [row(4), row(4, "severe"), row(1)])
    assert by == {"bw": (0.5, 2), "macro": (0.0, 2), "all": (pytest.approx(1 / 3), 3)}


def test_goals_table_from_rows() -> None:
    synth = []
    for photo in ("a", "b"):
        clean = Path(f"{photo}.png")
        synth.append(SynthRow(image=clean, reference=clean, kind="clean", level=0))
        synth += [
            SynthRow(image=Path(f"{photo}_{k}.png"), reference=clean, kind="blur", level=k)
            for k in range(1, 6)
        ]
    falling = [row(5.0 - 0.8 * s.level, *(["severe"] if s.level >= 4 else [])) for s in synth]
    flat = [row(3.0) for _ in synth]
    table = {
        g.name: g
        for g in goals(
            [["bw"]],
            [row(4.5)],
            [row(4.0)],
            synth,
            falling,
            flat,
            falling,
            list(zip(synth, falling, strict=True)),
        )
    }
    assert table["clean judged clean: bw"].met is True
    assert table["gate (min, 3) passes clean"].value == 1.0
    assert table["gate (min, 3) fails level 5"].value == 1.0
    assert table["assess SRCC vs level (mean per kind)"].value == pytest.approx(1.0)
    assert table["assess SRCC minus score's"].value == pytest.approx(1.0)  # flat score: 0
    assert table["assess clean above heavy (other photos)"].value == 1.0
    assert table["assess recall of level 4-5"].value == 1.0
    assert table["score: level 5 below 2.5"].value == 0.0  # flat at 3
    assert table["score --ref: level 5 below 2.5"].met is True
    assert table["score --ref: identical pair >= 4.5"].met is True
    high = [row(4.0) for _ in synth]  # sees nothing: clean everywhere, never fails the gate
    worse = goals(
        [["bw"]],
        [row(3.0)],
        [row(2.0)],
        synth,
        high,
        falling,
        high,
        list(zip(synth, high, strict=True)),
    )
    assert len(worse) == 11
    assert [g.name for g in worse if g.met] == ["score: level 5 below 2.5"]


def test_recall_counts_a_finding_in_the_kinds_category_or_a_low_score() -> None:
    from agentiqa_cli.bench.goals import found_in, recall_goals

    colour = Finding(category="Color distortions", severity="moderate")
    named = Result(image="x.png", score=4.5, distortions=[colour], status="ok")
    assert found_in(named, "Color distortions") is True
    assert found_in(row(4.5, "severe"), "Color distortions") is False  # another category
    assert found_in(row(3.4), "Color distortions") is True  # the score dropped
    assert found_in(row(None, status="error"), "Color distortions") is None
    synth = [
        SynthRow(image=Path(f"{k}_{lv}.png"), kind=k, level=lv)
        for k in ("posterize", "color_cast")
        for lv in (3, 4, 5)
    ]
    rows = [named, named, row(4.0), row(4.0), row(4.0), row(2.0)]
    got = recall_goals(
        synth, rows, {"posterize": "Color distortions", "color_cast": "Color distortions"}
    )
    assert [(g.name, g.value, g.n) for g in got] == [
        ("assess recall of level 4-5 posterize", 0.5, 2),
        ("assess recall of level 4-5 color_cast", 0.5, 2),
    ]
