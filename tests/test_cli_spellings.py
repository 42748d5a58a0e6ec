"""One meaning per flag across commands: ``-o/--out`` the results file, ``--out-dir`` a
folder, ``--force`` wherever a foreign file could be replaced; the old spellings work for
one release with a one-line note on stderr (docs/commands.md lists them)."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pandas as pd
import pytest

from agentiqa_cli.bench.synth import sample_photos
from tests.conftest import natural_like, save_rgb
from tests.test_cli_score import invoke

Capsys = pytest.CaptureFixture[str]


@pytest.fixture
def dim(tmp_path: Path) -> Path:
    """One dark photo: the rules backend finds the exposure and `fix` brightens it."""
    return save_rgb(tmp_path / "in" / "dim.png", natural_like(96, 128, seed=3) * 0.25)


def _warned(capsys: Capsys) -> list[str]:
    return [ln for ln in capsys.readouterr().err.splitlines() if "deprecated" in ln]


def test_fix_new_spelling_out_dir_and_out(tmp_path: Path, dim: Path, capsys: Capsys) -> None:
    out = tmp_path / "rows.csv"
    code, text = invoke("fix", dim, "--out-dir", tmp_path / "fixed", "-o", out, "--json")
    assert code == 0, capsys.readouterr().err
    assert _warned(capsys) == []
    assert json.loads(text)["summary"]["csv"] == str(out)
    assert pd.read_csv(out)["image"].tolist() == [str(dim)]
    assert (tmp_path / "rows.trace.jsonl").is_file()
    assert not (tmp_path / "fixed" / "fixes.csv").exists()  # --out named it elsewhere
    # without --out the results CSV is OUT_DIR/fixes.csv
    assert invoke("fix", dim, "--out-dir", tmp_path / "b", "-q")[0] == 0
    assert (tmp_path / "b" / "fixes.csv").is_file()


def test_fix_old_spellings_work_and_warn(tmp_path: Path, dim: Path, capsys: Capsys) -> None:
    code, _ = invoke("fix", dim, "-o", tmp_path / "old")  # -o was the images' folder
    assert code == 0
    (note,) = _warned(capsys)
    assert "--out-dir" in note
    assert (tmp_path / "old" / "fixes.csv").is_file()
    code, _ = invoke("fix", dim, "--out", tmp_path / "old2", "--csv", tmp_path / "c.csv")
    assert code == 0
    notes = _warned(capsys)
    assert len(notes) == 2 and any("--csv is deprecated, use --out" in n for n in notes)
    assert (tmp_path / "c.csv").is_file() and not (tmp_path / "old2" / "fixes.csv").exists()
    # --csv and the new --out both name the results CSV
    both = ("fix", dim, "--out-dir", tmp_path / "d", "-o", tmp_path / "x.csv", "--csv", "y.csv")
    assert invoke(*both)[0] == 2


def test_fix_refuses_to_overwrite_without_force(tmp_path: Path, dim: Path, capsys: Capsys) -> None:
    foreign = tmp_path / "notes.csv"
    foreign.write_text("my own notes\n")
    run = ("fix", dim, "--out-dir", tmp_path / "fixed", "-o", foreign, "-q")
    assert invoke(*run)[0] == 2
    assert "--force to replace it" in capsys.readouterr().err
    assert foreign.read_text() == "my own notes\n"
    assert not (tmp_path / "fixed").exists()  # refused before any image was written
    assert invoke(*run, "--force")[0] == 0
    assert pd.read_csv(foreign)["image"].tolist() == [str(dim)]


def test_fix_rows_to_stdout(tmp_path: Path, dim: Path) -> None:
    code, text = invoke("fix", dim, "--out-dir", tmp_path / "fixed", "-o", "-", "-q")
    assert code == 0
    lines = text.splitlines()
    assert lines[0].startswith("image,") and "operations" in lines[0]
    assert len(lines) == 2 and lines[1].startswith(str(dim))
    assert not (tmp_path / "fixed" / "fixes.csv").exists()


def test_report_out_and_old_html(tmp_path: Path, capsys: Capsys) -> None:
    pics = tmp_path / "pics"
    save_rgb(pics / "a.png", natural_like(48, 64))
    assert invoke("score", pics, "-o", tmp_path / "r.csv", "-q")[0] == 0
    assert invoke("report", tmp_path / "r.csv", "-o", tmp_path / "new.html")[0] == 0
    assert (tmp_path / "new.html").is_file() and _warned(capsys) == []
    assert invoke("report", tmp_path / "r.csv", "--html", tmp_path / "old.html")[0] == 0
    assert (tmp_path / "old.html").is_file()
    assert _warned(capsys) == ["warning: --html is deprecated, use --out"]


def _mos_table(tmp_path: Path) -> Path:
    (photo,) = sample_photos(tmp_path / "p", 128, names=("astronaut",))
    from PIL import Image, ImageFilter

    im = Image.open(photo)
    rows = []
    for i, radius in enumerate((0.0, 0.5, 1.0, 1.5, 2.0, 2.5, 3.0, 4.0)):
        im.filter(ImageFilter.GaussianBlur(radius)).save(tmp_path / f"b{i}.png")
        rows.append({"image": f"b{i}.png", "mos": 5 - radius})
    pd.DataFrame(rows).to_csv(tmp_path / "data.csv", index=False)
    return tmp_path / "data.csv"


def test_calibrate_overlay_old_out_and_force(tmp_path: Path, capsys: Capsys) -> None:
    data = _mos_table(tmp_path)
    cal = ("calibrate", data, "--tools", "sharpness")
    assert invoke(*cal, "--overlay", tmp_path / "new.yaml")[0] == 0
    assert "sharpness" in (tmp_path / "new.yaml").read_text() and _warned(capsys) == []
    for old in ("-o", "--out"):
        assert invoke(*cal, old, tmp_path / f"old{old}.yaml")[0] == 0
        assert "sharpness" in (tmp_path / f"old{old}.yaml").read_text()
        assert _warned(capsys) == ["warning: calibrate -o/--out is deprecated, use --overlay"]
    foreign = tmp_path / "mine.yaml"
    foreign.write_text("vlm: rules\n")
    assert invoke(*cal, "--overlay", foreign, "-q")[0] == 2
    assert foreign.read_text() == "vlm: rules\n"
    assert "--force to replace it" in capsys.readouterr().err
    assert invoke(*cal, "--overlay", foreign, "-q", "--force")[0] == 0
    assert "sharpness" in foreign.read_text()


def test_eval_bench_out_dir_old_o_and_force(tmp_path: Path, capsys: Capsys) -> None:
    data = _mos_table(tmp_path)
    mos = ("eval-bench", "mos", data, "-t", "sharpness", "--no-assess")
    assert invoke(*mos, "--out-dir", tmp_path / "new")[0] == 0
    assert (tmp_path / "new" / "summary.csv").is_file() and _warned(capsys) == []
    assert invoke(*mos, "-o", tmp_path / "old")[0] == 0
    assert (tmp_path / "old" / "summary.csv").is_file()
    assert _warned(capsys) == ["warning: eval-bench -o DIR is deprecated, use --out-dir DIR"]
    (tmp_path / "f").mkdir()
    (tmp_path / "f" / "trace.jsonl").write_text("not a trace\n")
    assert invoke(*mos, "--out-dir", tmp_path / "f", "-q")[0] == 2
    assert "--force to replace it" in capsys.readouterr().err
    assert invoke(*mos, "--out-dir", tmp_path / "f", "-q", "--force")[0] == 0


def test_experience_build_force(tmp_path: Path, capsys: Capsys) -> None:
    data = tmp_path / "clean"
    save_rgb(data / "sub" / "c.png", natural_like(96, 128, seed=1))
    pool = tmp_path / "pool.db"
    pool.write_text("not a pool\n")
    build = ("experience", "build", data, "--out", pool, "--tools", "noise,sharpness",
             "--categories", "Noise", "--size", "96", "-R", "-q")  # fmt: skip
    assert invoke(*build)[0] == 2
    assert "--force to replace it" in capsys.readouterr().err
    assert pool.read_text() == "not a pool\n"
    assert invoke(*build, "--force")[0] == 0
    with sqlite3.connect(pool) as con:
        assert con.execute("SELECT COUNT(*) FROM records").fetchone()[0] > 0


@pytest.mark.parametrize("option", ["--fusion", "--learned-tools", "--recursive", "--json"])
def test_shared_options_read_the_same_everywhere(option: str) -> None:
    """An option the shared groups declare has one help text in every command."""
    from typer.main import get_command

    from agentiqa_cli.cli import app

    helps: dict[str, str | None] = {}

    def walk(cmd: object, name: str) -> None:
        for sub_name, sub in getattr(cmd, "commands", {}).items():
            walk(sub, f"{name} {sub_name}".strip())
        for p in getattr(cmd, "params", []):
            if option in getattr(p, "opts", []):
                helps[name] = p.help

    walk(get_command(app), "")
    assert len(helps) >= 2, helps
    assert len(set(helps.values())) == 1, helps
