"""`agentiqa report`: issues found on made-to-order images, hostile names escaped, CSV cells
parsed tolerantly, `score --report` writes the page."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import numpy as np
import pytest
from PIL import Image, ImageFilter

from agentiqa_cli.report import build_report, render_html
from agentiqa_cli.report.rows import Mark, parse_marks, read_rows
from tests.conftest import natural_like, scene
from tests.test_cli_score import invoke

HOSTILE = '"><svg onload=alert(1)><b>&amp;x {{ 7*7 }}.png'  # no '/' on POSIX


def _photo(seed: int, w: int = 240, h: int = 180) -> Image.Image:
    return scene(seed, w, h)


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A small collection with one image per issue, and a results CSV over it."""
    d = tmp_path_factory.mktemp("collection")
    for i in range(6):
        _photo(10 + i).save(d / f"clean{i}.png")
    Image.fromarray((natural_like(180, 240, seed=1) * 40).astype(np.uint8)).save(d / "dark.png")
    light = 246 + natural_like(180, 240, seed=2) * 9
    Image.fromarray(light.astype(np.uint8)).save(d / "light.png")
    _photo(3).convert("L").save(d / "gray.png")
    Image.new("RGB", (240, 180), (90, 120, 150)).save(d / "flat.png")
    _photo(4, 480, 90).save(d / "wide.png")
    _photo(5, 1600, 1200).save(d / "huge.png")
    _photo(6).filter(ImageFilter.GaussianBlur(6)).save(d / "blurred.png")
    (d / "copy-of-clean0.png").write_bytes((d / "clean0.png").read_bytes())
    _photo(11).resize((120, 90), Image.Resampling.LANCZOS).save(d / "small-clean1.jpg", quality=80)
    _photo(7).save(d / HOSTILE)
    (d / "broken.jpg").write_bytes(b"\xff\xd8\xff\xe0 not really a jpeg")
    rows = [
        {"image": str(p), "status": "ok", "score": "4.2", "level": "good"}
        for p in sorted(d.iterdir())
        if p.suffix in (".png", ".jpg") and p.name != "broken.jpg"
    ]
    by_name = {Path(r["image"]).name: r for r in rows}
    by_name["blurred.png"].update(
        score="1.4", level="bad", distortions="blurs:severe;noise:slight@Sky"
    )
    by_name[HOSTILE].update(distortions="Noise:<i>slight</i>")
    by_name["wide.png"].update(imperfections='[{"type": "rotation", "level": "90"}, "watermark"]')
    rows.append({"image": str(d / "broken.jpg"), "status": "error", "error": "<b>corrupt</b>"})
    rows.append({"image": "gone.png", "status": "ok", "score": "3", "level": "fair"})
    with open(d / "results.csv", "w", newline="") as f:
        w = csv.DictWriter(f, ["image", "status", "error", "score", "level", "distortions",
                               "imperfections"])  # fmt: skip
        w.writeheader()
        w.writerows(rows)
    return d


def _flagged(report_json: dict[str, object], issue: str) -> set[str]:
    for i in report_json["issues"]:  # type: ignore[attr-defined]
        if i["name"] == issue:
            return {Path(s["image"]).name for s in i["worst"]}
    raise AssertionError(f"no issue {issue}")


def test_report_finds_each_issue_and_escapes_names(folder: Path, tmp_path: Path) -> None:
    html = tmp_path / "page.html"
    code, out = invoke(
        "report", folder / "results.csv", "--html", html, "--json", "-q", "--top", "20"
    )
    assert code == 3  # broken.jpg and gone.png cannot be read
    rep = json.loads(out)
    assert rep["images"] == 18 and rep["readable"] == 16
    assert _flagged(rep, "dark") == {"dark.png"}
    assert _flagged(rep, "light") == {"light.png"}
    assert _flagged(rep, "grayscale") == {"gray.png"}
    assert _flagged(rep, "low_information") == {"flat.png"}
    assert _flagged(rep, "odd_aspect_ratio") == {"wide.png"}
    assert _flagged(rep, "odd_size") == {"huge.png"}
    assert "blurred.png" in _flagged(rep, "blurry") and "clean2.png" not in _flagged(rep, "blurry")
    assert _flagged(rep, "exact_duplicates") == {"clean0.png", "copy-of-clean0.png"}
    assert _flagged(rep, "near_duplicates") == {"clean1.png", "small-clean1.jpg"}
    assert _flagged(rep, "failed") == {"broken.jpg"}
    assert _flagged(rep, "low_score") == {"blurred.png"}
    assert _flagged(rep, "distortion:blurs") == {"blurred.png"}
    assert _flagged(rep, "distortion:noise") == {"blurred.png", HOSTILE}
    assert _flagged(rep, "imperfection:rotation") == {"wide.png"}
    assert _flagged(rep, "imperfection:watermark") == {"wide.png"}
    assert "thumbnail" not in out  # thumbnails belong to the page
    page = html.read_text()
    assert page.count("<svg") == 1  # the histogram's, none from a name
    assert "<svg onload" not in page and "<b>" not in page
    assert "&amp;x" not in page.replace("&amp;amp;", "")
    assert "&lt;svg onload=alert(1)&gt;&lt;b&gt;&amp;amp;x {{ 7*7 }}.png" in page
    assert "&lt;b&gt;corrupt" in page and "&lt;i&gt;slight&lt;/i&gt;" in page
    assert page.count("data:image/jpeg;base64,") >= 16


def test_report_table_on_stdout(folder: Path, tmp_path: Path) -> None:
    code, out = invoke("report", folder / "results.csv", "--html", tmp_path / "r.html")
    assert code == 3
    for name in ("dark", "near_duplicates", "exact_duplicates", "distortion:noise", "failed"):
        assert name in out
    # -q: nothing on stdout; the unreadable images are in the page and the exit code
    code, out = invoke("report", folder / "results.csv", "--html", tmp_path / "q.html", "-q")
    assert code == 3 and out == ""
    assert (tmp_path / "r.html").stat().st_size > 10_000


def test_report_on_a_missing_or_wrong_csv_is_a_usage_error(tmp_path: Path) -> None:
    assert invoke("report", tmp_path / "nope.csv")[0] == 2
    (tmp_path / "x.csv").write_text("a,b\n1,2\n")
    assert invoke("report", tmp_path / "x.csv")[0] == 2


@pytest.mark.parametrize(
    ("cell", "marks"),
    [
        ("", []),
        ("none", []),
        ("blurs:moderate;noise:slight@Face", [Mark("blurs", "moderate"), Mark("noise", "slight")]),
        ("rotation; watermark", [Mark("rotation"), Mark("watermark")]),
        ("brightness=0.5", [Mark("brightness", "0.5")]),
        ('["Rotation", "Flip"]', [Mark("rotation"), Mark("flip")]),
        ('[{"type": "overlay", "severity": "severe"}]', [Mark("overlay", "severe")]),
        ('{"rotation": 90, "flip": null}', [Mark("rotation", "90"), Mark("flip")]),
        ("[broken json", [Mark("broken_json")]),
        ("Color distortions:slight", [Mark("color_distortions", "slight")]),
    ],
)
def test_list_cells_parse_tolerantly(cell: str, marks: list[Mark]) -> None:
    assert parse_marks(cell) == marks


def test_newest_row_wins_and_paths_resolve_beside_the_csv(tmp_path: Path) -> None:
    _photo(1).save(tmp_path / "a.png")
    (tmp_path / "r.csv").write_text("image,status,score\na.png,error,\na.png,ok,4.5\n")
    rows = read_rows(tmp_path / "r.csv")
    assert len(rows) == 1 and rows[0].status == "ok" and rows[0].score == 4.5
    rep = build_report(tmp_path / "r.csv")  # a.png is found next to the CSV, not in cwd
    assert rep.readable == 1 and not rep.unreadable
    assert "r.csv" in render_html(rep)


def test_score_writes_the_report(folder: Path, tmp_path: Path) -> None:
    out, html = tmp_path / "s.csv", tmp_path / "s.html"
    imgs = [folder / "clean0.png", folder / "copy-of-clean0.png", folder / "dark.png"]
    code, _ = invoke("score", *imgs, "--tools", "sharpness", "--out", out, "--report", html, "-q")
    assert code == 0
    page = html.read_text()
    assert "exact_duplicates" in page and "copy-of-clean0.png" in page


def test_report_reads_the_imperfections_that_fix_writes(tmp_path: Path) -> None:
    from PIL import ImageEnhance
    from skimage import data

    photo = Image.fromarray(data.astronaut()).resize((384, 384), Image.Resampling.LANCZOS)
    photo.save(tmp_path / "astronaut.png")
    ImageEnhance.Brightness(photo).enhance(0.3).save(tmp_path / "dim.png")
    code, _ = invoke("fix", tmp_path / "astronaut.png", tmp_path / "dim.png",
                     "--out", tmp_path / "fixed", "-q")  # fmt: skip
    assert code == 0
    code, out = invoke("report", tmp_path / "fixed" / "fixes.csv", "--json", "-q")
    assert code == 0
    rep = json.loads(out)
    assert _flagged(rep, "imperfection:brightness") == {"dim.png"}
    assert _flagged(rep, "near_duplicates") == {"astronaut.png", "dim.png"}  # a dimmed copy


def test_a_name_that_is_not_utf8_is_found_and_shown(tmp_path: Path) -> None:
    import os

    raw = os.fsencode(tmp_path) + b"/caf\xe9 \xff.png"  # Latin-1 bytes: not UTF-8
    scene(3).save(os.fsdecode(raw))
    scene(4).save(tmp_path / "ok.png")
    out = tmp_path / "s.csv"
    code, _ = invoke("score", tmp_path, "--tools", "sharpness", "--out", out, "-q")
    assert code == 0
    assert "caf\\xe9 \\xff.png" in out.read_text()  # how the CSV names it
    code, text = invoke("report", out, "--json", "-q", "--html", tmp_path / "r.html")
    assert code == 0, text
    assert json.loads(text)["readable"] == 2


def test_formula_and_control_character_names(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The results CSV guards '=x' cells with an apostrophe; the table shows ESC visibly."""
    scene(1).save(tmp_path / "=cmd.png")
    scene(2).save(tmp_path / "esc\x1b[31m.png")
    (tmp_path / "esc\x1b[31m-copy.png").write_bytes((tmp_path / "esc\x1b[31m.png").read_bytes())
    monkeypatch.chdir(tmp_path)
    names = ["=cmd.png", "esc\x1b[31m.png", "esc\x1b[31m-copy.png"]
    assert invoke("score", *names, "--tools", "sharpness", "--out", "s.csv", "-q")[0] == 0
    assert "\n'=cmd.png," in Path("s.csv").read_text()  # the writer's formula guard
    code, text = invoke("report", "s.csv", "--html", "r.html")
    assert code == 0, text
    assert "\x1b" not in text and "\\x1b[31m" in text
    rep = build_report(Path("s.csv"))
    assert rep.readable == 3 and not rep.unreadable


def test_non_finite_scores_are_no_score_and_json_stays_strict(tmp_path: Path) -> None:
    scene(1, 64, 64).save(tmp_path / "a.png")
    scene(2, 64, 64).save(tmp_path / "b.png")
    (tmp_path / "r.csv").write_text("image,status,score,level\na.png,ok,-inf,bad\nb.png,ok,nan,\n")
    rows = read_rows(tmp_path / "r.csv")
    assert [r.score for r in rows] == [None, None]
    code, out = invoke("report", tmp_path / "r.csv", "--json", "-q")
    assert code == 0, out

    def refuse(name: str) -> None:
        raise ValueError(f"not JSON: {name}")

    assert json.loads(out, parse_constant=refuse)["images"] == 2


def test_print_json_writes_non_finite_numbers_as_null(capsys: pytest.CaptureFixture[str]) -> None:
    from agentiqa_cli.cli.render import print_json

    print_json({"a": float("-inf"), "b": [float("nan"), 1.5], "c": (2.0,)})
    assert json.loads(capsys.readouterr().out) == {"a": None, "b": [None, 1.5], "c": [2.0]}


def test_read_table_refuses_what_is_not_a_regular_file_at_once(tmp_path: Path) -> None:
    import os

    from agentiqa_cli.errors import ConfigError
    from agentiqa_cli.io.results import read_table

    os.mkfifo(tmp_path / "fifo.csv")  # reading it would wait for a writer forever
    with pytest.raises(ConfigError, match="not a regular file"):
        read_table(tmp_path / "fifo.csv")
    with pytest.raises(ConfigError, match="results CSV"):
        read_table(tmp_path / "missing.csv")
