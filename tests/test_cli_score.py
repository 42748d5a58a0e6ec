"""`agentiqa score` end to end: outputs, gates and exit codes, bad inputs, resume after a kill."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from PIL import Image, ImageFilter

from agentiqa_cli.cli import main
from tests.conftest import natural_like, save_rgb

FR = ["--tools", "psnr,ssim"]


@pytest.fixture
def fr_set(tmp_path: Path) -> tuple[Path, Path]:
    """Three references and blurred versions of increasing strength."""
    ref, dist = tmp_path / "ref", tmp_path / "dist"
    for i, radius in enumerate((0.6, 1.5, 3.0)):
        img = Image.fromarray((natural_like(96, 128, seed=i) * 255).astype(np.uint8))
        save_rgb(ref / f"im{i}.png", np.asarray(img) / 255.0)
        img.filter(ImageFilter.GaussianBlur(radius)).save(
            dist / f"im{i}.png"
        ) if dist.exists() else (
            dist.mkdir(parents=True),
            img.filter(ImageFilter.GaussianBlur(radius)).save(dist / f"im{i}.png"),
        )
    return ref, dist


def invoke(*args: str | Path) -> tuple[int, str]:
    """Run the console entry point (with its error boundary) in-process."""
    import contextlib
    import io

    buf = io.StringIO()
    argv = sys.argv
    sys.argv = ["agentiqa", *map(str, args)]
    try:
        with contextlib.redirect_stdout(buf):
            main()
        code = 0
    except SystemExit as e:
        code = int(e.code or 0)
    finally:
        sys.argv = argv
    return code, buf.getvalue()


def exit_code(*args: str | Path) -> int:
    """``invoke``'s exit code, for the tests that read only that."""
    return invoke(*args)[0]


def test_fr_scores_fall_with_blur_and_outputs_parse(
    tmp_path: Path, fr_set: tuple[Path, Path]
) -> None:
    ref, dist = fr_set
    out = tmp_path / "r.csv"
    code, stdout = invoke("score", dist, "--ref", ref, *FR, "-o", out, "-q", "--json")
    assert code == 0, stdout
    payload = json.loads(stdout)
    assert payload["summary"]["processed"] == 3
    df = pd.read_csv(out).sort_values("image")
    assert list(df["status"]) == ["ok"] * 3
    assert df["score"].is_monotonic_decreasing  # stronger blur, lower score
    assert {"psnr_raw", "psnr_norm", "ssim_raw", "ssim_norm"} <= set(df.columns)
    assert df["score"].between(1, 5).all()
    trace = [json.loads(x) for x in (tmp_path / "r.trace.jsonl").read_text().splitlines()]
    assert trace[0]["step"] == "run" and trace[0]["parsed"]["tool_cards"]["psnr"]
    assert sum(e["step"] == "tool" for e in trace) == 6


def test_gate_exit_codes(tmp_path: Path, fr_set: tuple[Path, Path]) -> None:
    ref, dist = fr_set
    out = tmp_path / "r.csv"
    assert invoke("score", dist, "--ref", ref, *FR, "-o", out, "-q", "--fail-under", "1.0")[0] == 0
    assert invoke("score", dist, "--ref", ref, *FR, "-o", out, "-q", "--fail-under", "4.9")[0] == 1
    assert (
        invoke("score", dist, "--ref", ref, *FR, "-o", out, "-q", "--fail-mean-under", "4.99")[0]
        == 1
    )
    assert invoke("score", dist, "--ref", ref, "--tools", "psnr,ssmi", "-o", out, "-q")[0] == 2
    assert invoke("score", tmp_path / "nothing-here", "-o", out, "-q")[0] == 2
    assert invoke("score", dist, "--tools", "psnr", "-o", out, "-q")[0] == 2  # FR without --ref


def test_bad_inputs_get_rows_and_exit_3(tmp_path: Path, fr_set: tuple[Path, Path]) -> None:
    ref, dist = fr_set
    (dist / "empty.png").write_bytes(b"")
    (ref / "empty.png").write_bytes(b"")
    (dist / "text.jpg").write_text("not an image")
    save_rgb(dist / "other_size.png", natural_like(50, 60))
    save_rgb(ref / "other_size.png", natural_like(96, 128))
    save_rgb(dist / "orphan.png", natural_like())  # no reference with this name
    out = tmp_path / "r.csv"
    code, _ = invoke("score", dist, "--ref", ref, *FR, "-o", out, "-q")
    assert code == 3
    df = pd.read_csv(out).set_index(pd.read_csv(out)["image"].map(lambda p: Path(p).name))
    assert (df.loc[["im0.png", "im1.png", "im2.png"], "status"] == "ok").all()
    errors = df[df["status"] == "error"]["error"].to_dict()
    assert "empty file" in errors["empty.png"]
    assert "no reference" in errors["text.jpg"] or "not a recognised" in errors["text.jpg"]
    assert "differs from image" in errors["other_size.png"]
    assert "no reference for orphan.png" in errors["orphan.png"]


def test_resume_after_kill_no_lost_or_duplicated_rows(tmp_path: Path) -> None:
    ref, dist = tmp_path / "ref", tmp_path / "dist"
    n = 24
    for i in range(n):
        a = natural_like(192, 256, seed=i)
        save_rgb(ref / f"{i:02d}.png", a)
        save_rgb(
            dist / f"{i:02d}.png",
            np.clip(a + 0.03 * np.random.default_rng(i).normal(size=a.shape), 0, 1),
        )
    out = tmp_path / "r.csv"
    cmd = [sys.executable, "-m", "agentiqa_cli", "score", str(dist), "--ref", str(ref),
           "--tools", "ssim,psnr,gmsd", "-o", str(out), "-j", "1", "-q"]  # fmt: skip
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.time() + 120
    while time.time() < deadline:
        if out.exists() and out.read_bytes().count(b"\n") >= 4:  # header + 3 rows
            break
        if proc.poll() is not None:
            break
        time.sleep(0.05)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    partial = pd.read_csv(out)
    assert 3 <= len(partial) < n, "the kill should land mid-run"
    r = subprocess.run([*cmd, "--resume"], env=env, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    df = pd.read_csv(out)
    assert len(df) == n and df["key"].is_unique and df["image"].is_unique
    assert (df["status"] == "ok").all()
    # a third run has nothing left to do
    r = subprocess.run([*cmd, "--resume"], env=env, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0 and len(pd.read_csv(out)) == n


def test_identical_files_each_get_a_row(tmp_path: Path, fr_set: tuple[Path, Path]) -> None:
    ref, dist = fr_set
    import shutil

    shutil.copy(dist / "im0.png", dist / "im0_copy.png")
    shutil.copy(ref / "im0.png", ref / "im0_copy.png")
    out = tmp_path / "r.csv"
    assert invoke("score", dist, "--ref", ref, *FR, "-o", out, "-q")[0] == 0
    assert len(pd.read_csv(out)) == 4


def test_config_error_leaves_earlier_results_untouched(
    tmp_path: Path, fr_set: tuple[Path, Path]
) -> None:
    ref, dist = fr_set
    out = tmp_path / "keep.csv"
    assert invoke("score", dist, "--ref", ref, *FR, "-o", out, "-q")[0] == 0
    before = out.read_bytes()
    assert invoke("score", dist, "--ref", ref, *FR, "-o", out, "-q", "--device", "gpu")[0] == 2
    assert invoke("score", dist, "--ref", ref, "--tools", "nope", "-o", out, "-q")[0] == 2
    assert out.read_bytes() == before


def test_markup_in_file_names_prints_as_is(tmp_path: Path, fr_set: tuple[Path, Path]) -> None:
    ref, dist = fr_set
    # the displayed path "dist/a[/x].png" contains rich's closing-tag syntax
    (dist / "a[").mkdir()
    (ref / "a[").mkdir()
    (dist / "im0.png").rename(dist / "a[" / "x].png")
    (ref / "im0.png").rename(ref / "a[" / "x].png")
    code, _ = invoke("score", dist, "-R", "--ref", ref, *FR, "-o", tmp_path / "r.csv")
    assert code == 0
    assert "a[/x].png" in pd.read_csv(tmp_path / "r.csv")["image"].iloc[0] or any(
        "a[/x].png" in p for p in pd.read_csv(tmp_path / "r.csv")["image"]
    )


def test_glob_pairs_by_path_below_the_pattern(tmp_path: Path) -> None:
    from agentiqa_cli.imaging.discover import discover, pair

    for top in ("r", "g"):
        for sub, seed in (("a", 1), ("b", 2)):
            save_rgb(tmp_path / top / sub / "001.png", natural_like(seed=seed))
    found = discover([str(tmp_path / "r" / "*" / "*.png")])
    jobs = pair(found, str(tmp_path / "g"))
    assert {(j.image.parent.name, j.reference.parent.name) for j in jobs if j.reference} == {
        ("a", "a"),
        ("b", "b"),
    }
    # a name that exists twice under --ref and not at the same relative path is ambiguous
    jobs = pair([(tmp_path / "r" / "a" / "001.png", tmp_path / "r")], str(tmp_path / "g" / ".."))
    assert "ambiguous" in jobs[0].error or jobs[0].reference is not None


def test_gate_fails_when_nothing_could_be_scored(tmp_path: Path, fr_set: tuple[Path, Path]) -> None:
    from agentiqa_cli.gate import evaluate_gate
    from agentiqa_cli.records import Result

    results = [Result(image="a.png", score=4.5, level="excellent"), Result(image="b.png")]
    assert evaluate_gate(results, None, None).exit_code == 0
    assert evaluate_gate(results, 3.0, None).exit_code == 1
