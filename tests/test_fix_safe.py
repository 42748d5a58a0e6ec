"""`agentiqa fix` never makes an image worse, keeps its format, and `--check` only looks."""

from __future__ import annotations

import asyncio
import io
import json
import os
from pathlib import Path
from typing import Any, cast

import numpy as np
import pytest
from PIL import Image

from agentiqa_cli.config import Settings
from agentiqa_cli.imaging.load import load_image
from agentiqa_cli.imperfect.apply import Fixer
from agentiqa_cli.imperfect.checks import NEEDS_VLM
from agentiqa_cli.imperfect.output import ORIENTATION, _webp_lossless, encoding_of
from agentiqa_cli.io.trace import TraceWriter
from agentiqa_cli.records import Result, ToolScore
from agentiqa_cli.scoring import ToolScorer
from agentiqa_cli.vlm.fake import ScriptedVLM
from agentiqa_cli.wiring import build_runtime
from tests.conftest import TOLERANT, natural_like, save_rgb
from tests.test_cli_score import invoke


def _fix(paths: list[Path], out: Path | None, vlm: ScriptedVLM) -> list[Result]:
    """`agentiqa fix`'s process over ``paths`` with a scripted fix role, as the CLI runs it."""

    async def go() -> list[Result]:
        async with build_runtime(Settings(), vlm=vlm) as rt:
            jobs = rt.jobs([str(p) for p in paths], None)
            scorer = rt.scorer(rt.score_cards(has_reference=False))
            fixer = Fixer(await rt.asker(), "How is it?", out, [j.image for j in jobs], scorer)
            summary = await rt.run(jobs, fixer, command="fix", trace=TraceWriter(None))
            return summary.results

    return asyncio.run(go())


def _score(path: Path) -> float:
    code, out = invoke("score", path, "-o", path.with_suffix(".score.csv"), "--json", "-q")
    assert code == 0
    score = json.loads(out)["results"][0]["score"]
    assert isinstance(score, float)
    return score


def _photo() -> np.ndarray:
    """A real photo (scikit-image's astronaut, 256 px): the default tools score it 4.8+."""
    from skimage import data

    small = Image.fromarray(data.astronaut()).resize((256, 256), Image.Resampling.LANCZOS)
    return np.asarray(small, dtype=np.float32) / 255.0


def _lum(factor: float) -> ScriptedVLM:
    return ScriptedVLM({"fix": {"imperfections": ["brightness"],
                                "operations": [{"tool": "lum", "factor": factor}]}})  # fmt: skip


def test_a_fix_that_would_lower_the_score_is_refused(tmp_path: Path) -> None:
    """A model's lum:0.3 on a well-exposed photo darkens it: measured, refused, not written."""
    good = save_rgb(tmp_path / "in" / "good.png", _photo())
    (r,) = _fix([good], tmp_path / "out", _lum(0.3))
    assert r.status == "ok" and r.fix is not None
    assert r.fix.operations == ["lum:0.3"]
    assert r.fix.score_before is not None and r.fix.score_after is not None
    assert r.fix.score_after < r.fix.score_before - 0.5
    assert r.fix.kept is False and r.fix.verdict.startswith("refused: score")
    assert r.fix.output == ""
    assert not (tmp_path / "out").exists() or not any((tmp_path / "out").iterdir())


def test_a_fix_that_raises_the_score_is_kept_and_measured_as_written(tmp_path: Path) -> None:
    dark = save_rgb(tmp_path / "in" / "dark.png", _photo() * 0.3)
    (r,) = _fix([dark], tmp_path / "out", _lum(3.0))
    assert r.fix is not None and r.fix.kept is True, r.fix
    assert r.fix.score_before is not None and r.fix.score_after is not None
    assert r.fix.score_after > r.fix.score_before
    out = Path(r.fix.output)
    assert out.parent == tmp_path / "out" and out.suffix == ".png"
    assert _score(out) == pytest.approx(r.fix.score_after, abs=1e-9)  # what `score` reads
    assert _score(dark) == pytest.approx(r.fix.score_before, abs=1e-9)


def _boxed() -> np.ndarray:
    """A photo letterboxed in black: the rules checks crop the bands (a kept fix)."""
    boxed = np.zeros((136, 128, 3), np.float32)
    boxed[20:116] = natural_like(96, 128, seed=1)
    return boxed


def _rows(path: Path) -> dict[str, dict[str, str]]:
    import csv

    with open(path, newline="") as f:
        return {Path(r["image"]).name: r for r in csv.DictReader(f)}


def _q95_tables() -> dict[int, list[int]]:
    buf = io.BytesIO()
    Image.new("RGB", (64, 64)).save(buf, format="JPEG", quality=95)
    return dict(Image.open(buf).quantization)  # type: ignore[attr-defined]


def test_jpeg_in_gives_jpeg_q95_out_with_the_columns(tmp_path: Path) -> None:
    src = save_rgb(tmp_path / "in" / "boxed.jpg", _boxed(), quality=90)
    code, out = invoke("fix", src, "--out", tmp_path / "out", "--json", "-q")
    assert code == 0
    doc = json.loads(out)
    (res,) = doc["results"]
    fix = res["fix"]
    assert fix["kept"] is True and fix["score_after"] >= fix["score_before"]
    assert doc["summary"]["kept"] == 1 and doc["summary"]["refused"] == 0
    written = Path(fix["output"])
    assert written.suffix == ".jpg"
    with Image.open(written) as im:
        assert im.format == "JPEG"
        assert dict(im.quantization) == _q95_tables()  # type: ignore[attr-defined]
        assert im.width == 128 and abs(im.height - 96) <= 4  # the bands are gone
    row = _rows(tmp_path / "out" / "fixes.csv")["boxed.jpg"]
    assert row["kept"] == "yes" and row["verdict"].startswith("kept: score")
    assert float(row["score_after"]) == pytest.approx(fix["score_after"], abs=5e-4)
    assert float(row["score_before"]) == pytest.approx(fix["score_before"], abs=5e-4)


def test_png_stays_png_and_format_chooses(tmp_path: Path) -> None:
    src = save_rgb(tmp_path / "in" / "boxed.png", _boxed())
    assert invoke("fix", src, "--out", tmp_path / "a", *TOLERANT, "-q")[0] == 0
    (a,) = (tmp_path / "a").glob("boxed-*")
    assert a.suffix == ".png" and Image.open(a).format == "PNG"
    # a lossy WebP encode of this small synthetic image costs about 0.1 of score more
    lossy = ("--tolerance", f"{float(TOLERANT[1]) + 0.2:g}")
    assert invoke("fix", src, "--out", tmp_path / "b", "--format", "webp", *lossy, "-q")[0] == 0
    (b,) = (tmp_path / "b").glob("boxed-*")
    assert b.suffix == ".webp" and Image.open(b).format == "WEBP"
    assert invoke("fix", src, "--out", tmp_path / "c", "--format", "gif", "-q")[0] == 2


def test_exif_orientation_is_applied_once(tmp_path: Path) -> None:
    """A JPEG stored sideways with orientation 6: the fix is made on the upright pixels and
    written upright, without the orientation tag (a viewer must not turn it again); the
    camera's other tags go along."""
    exif = Image.Exif()
    exif[ORIENTATION] = 6  # display = stored turned 90° clockwise
    exif[0x010F] = "TestCam"  # Make
    stored = np.ascontiguousarray(np.rot90(_boxed(), k=1))  # the upright one turned back
    src = save_rgb(tmp_path / "in" / "side.jpg", stored, quality=95, exif=exif.tobytes())
    assert load_image(src).shape == (136, 128)
    assert invoke("fix", src, "--out", tmp_path / "out", *TOLERANT, "-q")[0] == 0
    (out,) = (tmp_path / "out").glob("side-*.jpg")
    with Image.open(out) as im:
        assert im.width == 128 and abs(im.height - 96) <= 4  # upright, cropped
        tags = im.getexif()
        assert ORIENTATION not in tags and tags.get(0x010F) == "TestCam"
    assert load_image(out).shape == (im.height, 128)


def test_webp_keeps_its_lossless_class(tmp_path: Path) -> None:
    pixels = (_boxed() * 255).astype(np.uint8)
    Image.fromarray(pixels).save(tmp_path / "l.webp", lossless=True)
    Image.fromarray(pixels).save(tmp_path / "q.webp", quality=80)
    assert encoding_of(tmp_path / "l.webp").lossless
    assert not encoding_of(tmp_path / "q.webp").lossless
    assert invoke("fix", tmp_path / "l.webp", "--out", tmp_path / "out", *TOLERANT, "-q")[0] == 0
    (out,) = (tmp_path / "out").glob("l-*.webp")
    with open(out, "rb") as f:
        assert _webp_lossless(f)


def _tree(root: Path) -> dict[str, tuple[int, int]]:
    return {
        str(p): (p.stat().st_size, p.stat().st_mtime_ns) for p in root.rglob("*") if p.is_file()
    }


def test_check_writes_nothing_and_prints_the_findings(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "250")
    save_rgb(tmp_path / "in" / "boxed.jpg", _boxed(), quality=90)
    save_rgb(tmp_path / "in" / "clean.png", natural_like(96, 128, seed=1))
    monkeypatch.chdir(tmp_path)
    before = _tree(tmp_path)
    code, out = invoke("fix", tmp_path / "in", "--check")
    assert code == 0
    assert _tree(tmp_path) == before  # no image, CSV or trace
    assert "imperfections" in out and "would keep" in out
    line = next(ln for ln in out.splitlines() if "boxed.jpg" in ln)
    assert "borders" in line and "crop:" in line
    assert "nothing written" in out
    code, out = invoke("fix", tmp_path / "in", "--check", "--json", "-q")
    assert code == 0 and _tree(tmp_path) == before
    doc: dict[str, Any] = json.loads(out)
    fixes = {Path(r["image"]).name: r["fix"] for r in doc["results"]}
    assert fixes["boxed.jpg"]["kept"] is True and fixes["boxed.jpg"]["output"] == ""
    assert fixes["clean.png"]["kept"] is None
    assert doc["summary"]["check"] is True and doc["summary"]["csv"] is None


def test_check_refuses_the_flags_that_write_and_a_run_needs_out(tmp_path: Path) -> None:
    src = save_rgb(tmp_path / "boxed.png", _boxed())
    assert invoke("fix", src, "--check", "--csv", tmp_path / "f.csv")[0] == 2
    assert not (tmp_path / "f.csv").exists()
    assert invoke("fix", src)[0] == 2


def test_help_says_which_checks_need_a_vlm() -> None:
    code, out = invoke("fix", "--help")
    assert code == 0
    text = " ".join(out.split()).lower()
    assert "need a vlm" in text
    for kind in NEEDS_VLM:  # the checks without a rules signal
        assert kind in text
    for seen in ("borders", "collages", "overlays", "screen", "exposure", "blur", "noise"):
        assert seen in text
    assert "jpeg q95" in text and "--check" in text


def test_no_output_format_class_for_an_unreadable_header(tmp_path: Path) -> None:
    """An input whose header cannot be read again gives a plain PNG, not an error."""
    missing = tmp_path / "gone.jpg"
    enc = encoding_of(missing)
    assert enc.format == "png" and enc.lossless and enc.exif is None
    assert encoding_of(missing, "jpeg").format == "jpeg"
    assert not os.path.exists(missing)


class _Scores:
    """A scorer whose scores are given per image path (``None``: a tool failed)."""

    def __init__(self, by_path: dict[str, float | None]):
        self.by_path = by_path

    def measure(self, image: Any) -> tuple[float | None, list[ToolScore]]:
        value = self.by_path[str(image.path)]
        return value, [ToolScore(tool="t", norm=value, error="" if value else "t broke")]


@pytest.mark.parametrize(
    ("after", "tolerance", "kept"),
    [(4.0, 0.0, True), (4.2, 0.0, True), (3.999, 0.0, False), (3.995, 0.01, True),
     (3.98, 0.01, False), (None, 1.0, False)],
)  # fmt: skip
def test_judge_keeps_only_what_does_not_score_lower(
    after: float | None, tolerance: float, kept: bool
) -> None:
    from agentiqa_cli.imaging.load import LoadedImage
    from agentiqa_cli.imperfect.apply import judge

    px = np.zeros((16, 16, 3), np.float32)
    a, b = LoadedImage(Path("in"), px), LoadedImage(Path("out"), px)
    v = judge(cast(ToolScorer, _Scores({"in": 4.0, "out": after})), a, b, tolerance)
    assert v.kept is kept and v.before == 4.0 and v.after == after
    assert v.reason.startswith("kept" if kept else "refused")
    if after is None:
        assert "cannot be measured" in v.reason and "t broke" in v.reason
