"""Synthetic-distortion report on a hand-made manifest, checked against hand computation."""

from __future__ import annotations

import csv
import math
from pathlib import Path

import pytest

from agentiqa_cli.bench.synth_eval import (
    evaluate_synth,
    load_manifest,
    synth_items,
    write_synth_csv,
)
from agentiqa_cli.errors import ConfigError
from agentiqa_cli.records import Finding

MANIFEST = """image,reference,kind,level
A.png,,,0
B.png,,clean,0
A_blur1.png,A.png,blur,1
A_blur4.png,A.png,blur,4
B_blur1.png,B.png,blur,1
B_blur4.png,B.png,blur,4
A_noise5.png,A.png,noise,5
B_noise5.png,B.png,noise,5
"""
#        A    B    A_b1 A_b4 B_b1 B_b4 A_n5 B_n5
SCORES = [5.0, 4.0, 4.5, 4.0, 4.2, 2.0, 4.5, None]


@pytest.fixture
def rows(tmp_path: Path):  # type: ignore[no-untyped-def]
    (tmp_path / "manifest.csv").write_text(MANIFEST)
    return load_manifest(tmp_path / "manifest.csv")


def test_manifest_and_items(rows, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    assert [r.level for r in rows] == [0, 0, 1, 4, 1, 4, 5, 5]
    assert rows[2].reference == tmp_path / "A.png" and rows[2].content == rows[0].content
    items = synth_items(rows)
    assert items[0].reference == tmp_path / "A.png"  # a clean image is its own reference
    assert items[3].reference == tmp_path / "A.png"
    assert all(i.reference is None for i in synth_items(rows, with_reference=False))


def test_numbers_match_hand_computation(rows) -> None:  # type: ignore[no-untyped-def]
    findings = [
        [Finding(category="Noise", severity="slight")],  # clean A: a slight false alarm
        [],  # clean B: nothing reported
        *([[Finding(category="Blurs", severity="severe")]] * 6),
    ]
    report = evaluate_synth(rows, {"m": SCORES}, {"m": findings})
    (m,) = report.methods
    assert (m.n, m.failed) == (8, 1)
    blur, noise = m.kinds
    # blur, pooled over A, B and their blur images: levels [0,0,1,4,1,4], scores
    # [5,4,4.5,4,4.2,2]; level ranks [1.5,1.5,3.5,5.5,3.5,5.5], score ranks
    # [6,2.5,5,2.5,4,1]; centred products sum to -10, squares 16 and 17
    assert blur.srcc_level == pytest.approx(10 / math.sqrt(16 * 17))
    # per content: A [5,4.5,4] falls strictly (1.0); B [4,4.2,2] gives SRCC -0.5 -> 0.5
    assert blur.srcc_within == pytest.approx(0.75)
    # heavy blur of the other content: A(5) > B_blur4(2) wins, B(4) = A_blur4(4) ties
    assert (blur.rank_rate, blur.rank_pairs) == (pytest.approx(0.75), 2)
    assert (blur.n, blur.failed, blur.contents) == (4, 0, 2)
    # noise: B_noise5 failed; levels [0,0,5] scores [5,4,4.5] -> SRCC 0
    assert noise.srcc_level == pytest.approx(0.0)
    assert noise.srcc_within == pytest.approx(1.0)  # only A has 2+ points: 5 > 4.5
    assert (noise.rank_rate, noise.rank_pairs) == (0.0, 1)  # B(4) < A_noise5(4.5)
    assert m.mean_srcc_level == pytest.approx(10 / math.sqrt(272) / 2)
    assert m.mean_srcc_within == pytest.approx(0.875)
    # all heavy: A(5)>B_b4 (1), B(4)=A_b4 (0.5), B(4)<A_n5 (0) over 3 pairs
    assert (m.rank_rate, m.rank_pairs) == (pytest.approx(0.5), 3)
    assert (m.clean_checked, m.false_alarm_any, m.false_alarm_moderate) == (2, 0.5, 0.0)


def test_flat_scores_and_missing_findings(rows, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    flat = [3.0] * 8
    findings: list[list[Finding] | None] = [
        [Finding(category="Noise", severity="moderate")], None, *([[]] * 6),
    ]  # fmt: skip
    report = evaluate_synth(rows, {"flat": flat, "m": SCORES}, {"flat": findings})
    f, m = report.methods
    assert all(k.srcc_level == 0.0 and k.srcc_within == 0.0 for k in f.kinds)
    assert f.rank_rate == 0.5  # every pair a tie
    assert (f.clean_checked, f.false_alarm_moderate, f.false_alarm_any) == (1, 1.0, 1.0)
    assert m.false_alarm_any is None and m.clean_checked == 0  # no findings given
    out = tmp_path / "synth.csv"
    write_synth_csv(report, out)
    with open(out) as fh:
        table = list(csv.DictReader(fh))
    assert [(r["method"], r["kind"]) for r in table] == [
        ("flat", "blur"), ("flat", "noise"), ("flat", "(all)"),
        ("m", "blur"), ("m", "noise"), ("m", "(all)"),
    ]  # fmt: skip
    assert table[2]["false_alarm_moderate"] == "1.0000"


def test_bad_input(rows, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(ValueError, match="7 scores for 8"):
        evaluate_synth(rows, {"m": SCORES[:7]})
    (tmp_path / "bad.csv").write_text("image,reference,kind,level\na.png,,blur,1.5\n")
    with pytest.raises(ConfigError, match=r"bad\.csv:2: level must be a whole number"):
        load_manifest(tmp_path / "bad.csv")
