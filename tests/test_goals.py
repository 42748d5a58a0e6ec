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
        g.name: g for g in goals([["bw"]], [row(4.5)], [row(4.0)], synth, falling, flat, falling)
    }
    assert table["clean judged clean: bw"].met is True
    assert table["gate (min, 3) passes clean"].value == 1.0
    assert table["gate (min, 3) fails level 5"].value == 1.0
    assert table["assess SRCC vs level (mean per kind)"].value == pytest.approx(1.0)
    assert table["assess SRCC minus score's"].value == pytest.approx(1.0)  # flat score: 0
    assert table["assess clean above heavy (other photos)"].value == 1.0
    assert table["assess recall of level 4-5"].value == 1.0
    high = [row(4.0) for _ in synth]  # sees nothing: clean everywhere, never fails the gate
    worse = goals([["bw"]], [row(3.0)], [row(2.0)], synth, high, falling, high)
    assert len(worse) == 8 and not any(g.met for g in worse)
