"""`agentiqa fix` and `assess --fix` end to end with the rules backend."""

from __future__ import annotations

import csv
import hashlib
import shutil
from pathlib import Path

import numpy as np
from PIL import Image

from tests.conftest import TOLERANT, natural_like, save_rgb
from tests.test_cli_score import invoke


def _rows(path: Path) -> dict[str, dict[str, str]]:
    with open(path, newline="") as f:
        return {Path(r["image"]).name: r for r in csv.DictReader(f)}


def _inputs(folder: Path) -> tuple[Path, Path]:
    """A letterboxed photo (borders to crop) and a clean one."""
    x = natural_like(96, 128, seed=1)
    boxed = np.zeros((136, 128, 3), np.float32)
    boxed[20:116] = x
    return save_rgb(folder / "boxed.png", boxed), save_rgb(folder / "clean.png", x)


def test_fix_writes_fixed_images_and_the_operations(tmp_path: Path) -> None:
    boxed, clean = _inputs(tmp_path / "in")
    before = {p: p.read_bytes() for p in (boxed, clean)}
    code, _ = invoke("fix", tmp_path / "in", "--out", tmp_path / "out", *TOLERANT, "-q")
    assert code == 0
    rows = _rows(tmp_path / "out" / "fixes.csv")
    assert rows["boxed.png"]["imperfections"] == "borders"
    assert rows["boxed.png"]["operations"].startswith("crop:")
    out = Path(rows["boxed.png"]["output"])
    assert out.parent == tmp_path / "out"
    fixed = np.asarray(Image.open(out))
    assert fixed.shape == (96, 128, 3)  # the black bands are gone
    assert rows["clean.png"]["operations"] == "" and rows["clean.png"]["output"] == ""
    assert all(p.read_bytes() == b for p, b in before.items())  # inputs untouched
    trace = (tmp_path / "out" / "fixes.trace.jsonl").read_text()
    assert '"step":"imperfect"' in trace and "applied" in trace


def test_fix_never_overwrites_an_input(tmp_path: Path) -> None:
    boxed, _ = _inputs(tmp_path / "in")
    digest = hashlib.sha256(boxed.read_bytes()).hexdigest()[:8]
    victim = tmp_path / "in" / f"boxed-{digest}.png"  # exactly where the fix would go
    shutil.copy(boxed, victim)
    original = victim.read_bytes()
    code, _ = invoke("fix", tmp_path / "in", "--out", tmp_path / "in", *TOLERANT, "-q")
    assert code == 3  # that row failed; the others were processed
    assert victim.read_bytes() == original
    rows = _rows(tmp_path / "in" / "fixes.csv")
    assert "refusing to overwrite" in rows["boxed.png"]["error"]
    assert rows["clean.png"]["status"] == "ok"


def test_assess_fix_geometry_assesses_the_cropped_image(tmp_path: Path) -> None:
    _inputs(tmp_path / "in")
    code, _ = invoke("assess", tmp_path / "in", "--fix", "geometry", "-o", tmp_path / "a.csv", "-q")
    assert code == 0
    rows = _rows(tmp_path / "a.csv")
    assert rows["boxed.png"]["imperfections"] == "borders"
    assert rows["boxed.png"]["operations"].startswith("crop:")
    assert rows["boxed.png"]["score"] and rows["clean.png"]["score"]
    code, _ = invoke("assess", tmp_path / "in", "--fix", "sideways", "-o", tmp_path / "b.csv")
    assert code == 2


def test_fix_is_reproducible(tmp_path: Path) -> None:
    _inputs(tmp_path / "in")
    for out in ("a", "b"):
        assert invoke("fix", tmp_path / "in", "--out", tmp_path / out, *TOLERANT, "-q")[0] == 0
    (a,) = (tmp_path / "a").glob("boxed-*.png")
    assert (tmp_path / "b" / a.name).read_bytes() == a.read_bytes()


def test_assess_checks_only_when_asked(tmp_path: Path) -> None:
    """--fix off (the default) runs no checks; --fix check fills the column, changes nothing."""
    _inputs(tmp_path / "in")
    for mode, want in (("off", ""), ("check", "borders")):
        out = tmp_path / f"{mode}.csv"
        code, _ = invoke("assess", tmp_path / "in", "--fix", mode, "-o", out, "-q")
        assert code == 0
        rows = _rows(out)
        assert rows["boxed.png"]["imperfections"] == want
        assert rows["boxed.png"]["operations"] == ""
