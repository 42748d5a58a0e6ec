"""`agentiqa report` on the CSVs that score, assess (probing boxes included) and evaluate
really write: every finding it shows is one the command found, none made of a box's numbers;
the page's summary and table of every image; `--format md`."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from agentiqa_cli.records import CATEGORIES, Finding, Result
from agentiqa_cli.report import build_report, render_html
from agentiqa_cli.report.rows import Mark, parse_marks, read_rows
from agentiqa_cli.report.table import cutoffs, histogram
from tests.conftest import save_rgb, scene
from tests.test_cli_score import invoke
from tests.test_probe import _mosaic, _photo_canvas

DISTORTIONS = {f"distortion:{c.lower().replace(' ', '_')}" for c in CATEGORIES}


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[Path, list[dict[str, Any]]]]:
    """Each command's CSV and the results it printed with --json, on small generated images."""
    d = tmp_path_factory.mktemp("runs")
    imgs = d / "imgs"
    for i in range(5):
        save_rgb(imgs / f"s{i}.png", __import__("numpy").asarray(scene(i, 96, 72)) / 255.0)
    (imgs / "cut.jpg").write_bytes((imgs / "s0.png").read_bytes()[:200])  # a truncated file
    probe = d / "probe"
    save_rgb(probe / "mosaic.png", _mosaic(_photo_canvas()))  # a local artefact to zoom into
    out: dict[str, tuple[Path, list[dict[str, Any]]]] = {}
    code, text = invoke("score", imgs, "-o", d / "score.csv", "--json", "-q")
    assert code == 3, text  # cut.jpg
    out["score"] = (d / "score.csv", json.loads(text)["results"])
    code, text = invoke("assess", probe, "--zoom", "on", "-o", d / "assess.csv", "--json", "-q")
    assert code == 0, text
    out["assess"] = (d / "assess.csv", json.loads(text)["results"])
    code, text = invoke("evaluate", imgs, "-o", d / "eval.csv", "--max-samples", "4",
                        "--max-rounds", "1", "-q")  # fmt: skip
    assert code in (0, 3), text
    out["evaluate"] = (d / "eval.csv", [])
    return out


def _findings(result: dict[str, Any]) -> set[str]:
    return {
        f"distortion:{d['category'].lower().replace(' ', '_')}"
        for d in result["distortions"]
        if d["severity"] != "none"
    }


@pytest.mark.parametrize("command", ["score", "assess", "evaluate"])
def test_report_on_each_commands_csv_shows_only_real_findings(
    runs: dict[str, tuple[Path, list[dict[str, Any]]]], command: str, tmp_path: Path
) -> None:
    csv_path, results = runs[command]
    code, text = invoke("report", csv_path, "--json", "-q", "--html", tmp_path / "r.html")
    assert code in (0, 3), text
    rep = json.loads(text)
    shown = {i["name"] for i in rep["issues"] if i["source"] == "results" and i["count"]}
    assert shown <= DISTORTIONS | {"failed", "low_score"}, shown
    rows = {r["image"]: r for r in rep["rows"]}
    assert len(rows) == rep["images"] > 0
    for r in results:  # each row's findings are the ones the command printed
        got = {f for f in rows[r["image"]]["findings"] if f.startswith("distortion:")}
        assert got == _findings(r), (r["image"], got)
    if command == "assess":  # the probe's box is in the cell, and read as one scope
        cell = csv_path.read_text()
        assert "@crop" in cell and "[0." in cell
        assert any(d["scope"].startswith("crop") for r in results for d in r["distortions"])
    if command == "score":
        assert rows[str(csv_path.parent / "imgs" / "cut.jpg")]["level"] == "error"
        assert "failed" in shown


def test_the_writers_cells_read_back_with_boxes_and_scopes(tmp_path: Path) -> None:
    from agentiqa_cli.io.results import ResultsWriter, columns_for

    scoped = [
        Finding(scope="crop2 [0.0, 0.123, 0.5, 0.6]", category="Noise", severity="severe"),
        Finding(scope="Face, left", category="Blurs", severity="slight"),
        Finding(category="Color distortions", severity="moderate"),
    ]
    with ResultsWriter(tmp_path / "r.csv", columns_for(None)) as w:
        w.write(Result(image="a.png", score=2.0, level="poor", distortions=scoped))
    (row,) = read_rows(tmp_path / "r.csv")
    assert row.distortions == [Mark("noise", "severe"), Mark("blurs", "slight"),
                               Mark("color_distortions", "moderate")]  # fmt: skip


@pytest.mark.parametrize(
    ("cell", "marks"),
    [
        ("compression:extreme@crop1 [0.312, 0.5, 0.5, 0.688]", [Mark("compression", "extreme")]),
        ("noise:slight@crop3 0.1,0.2,0.5,0.6;blurs:severe", [Mark("noise", "slight"),
                                                             Mark("blurs", "severe")]),
        ("crop:0.000,0.100,0.500,0.600", [Mark("crop", "0.000,0.100,0.500,0.600")]),
        ("rotation:90, watermark", [Mark("rotation", "90"), Mark("watermark")]),
        ("a|b", [Mark("a"), Mark("b")]),
    ],
)  # fmt: skip
def test_numbers_after_a_comma_are_one_value_not_findings(cell: str, marks: list[Mark]) -> None:
    assert parse_marks(cell) == marks


def test_summary_counts_levels_findings_and_bins_scores(tmp_path: Path) -> None:
    rows = [("a.png", "ok", "4.8", "blurs:slight"), ("b.png", "ok", "1.2", "noise:severe"),
            ("c.png", "ok", "1.1", "noise:moderate"), ("d.png", "error", "", ""),
            ("e.png", "ok", "", "")]  # fmt: skip
    for i, (name, *_) in enumerate(rows):
        scene(i, 64, 48).save(tmp_path / name)
    lines = ["image,status,score,distortions"] + [",".join(r) for r in rows]
    (tmp_path / "r.csv").write_text("\n".join(lines) + "\n")
    rep = build_report(tmp_path / "r.csv")
    s = rep.summary
    assert s.levels == {"excellent": 1, "good": 0, "fair": 0, "poor": 0, "bad": 2,
                        "no score": 1, "error": 1}  # fmt: skip
    assert s.findings["distortion:noise"] == 2 and s.findings["failed"] == 1
    assert s.by_level["distortion:noise"]["bad"] == 2
    assert s.by_level["distortion:blurs"]["excellent"] == 1
    assert sum(b.count for b in s.histogram) == 3 and s.histogram[0].count == 2
    assert s.mean == pytest.approx((4.8 + 1.2 + 1.1) / 3)
    page = render_html(rep, page=tmp_path / "sub" / "page.html")
    assert page.count('<div class="row body" role="row" data-score=') == 5
    assert 'href="../a.png"' in page  # thumbnails link to the image, relative to the page
    assert "script-src 'sha256-" in page and "script-src 'unsafe-inline'" not in page


def test_histogram_keeps_the_ends_of_the_scale() -> None:
    bins = histogram([1.0, 5.0, 5.0, 0.2, 3.1])
    assert len(bins) == 16 and bins[0].count == 2 and bins[-1].count == 2
    assert bins[0].level == "bad" and bins[-1].level == "excellent"


def test_cutoffs_follow_level_of() -> None:
    from agentiqa_cli.records import level_of

    assert cutoffs()["fair"] == "2.5 to below 3.5"
    assert level_of(2.5) == "fair" and level_of(2.4999) == "poor" and level_of(4.5) == "excellent"


def test_markdown_summary_for_a_ci_job(
    runs: dict[str, tuple[Path, list[dict[str, Any]]]], tmp_path: Path
) -> None:
    csv_path, _ = runs["score"]
    code, md = invoke("report", csv_path, "--format", "md", "--html", tmp_path / "r.html")
    assert code == 3  # cut.jpg could not be read
    assert md.startswith("## ") and "| level |" in md and "| failed |" in md.replace("`", "")
    assert "cut.jpg" in md and "\x1b" not in md
    assert (tmp_path / "r.html").is_file()


def test_markdown_cells_keep_hostile_names_literal() -> None:
    from agentiqa_cli.report.markdown import md_text

    assert md_text("a|b`c*d_e<script>\x1b[31m.png") == (
        "a\\|b\\`c\\*d\\_e\\<script\\>\\\\x1b\\[31m.png"
    )
