"""One output guard for every command that writes: files compared by identity (links, empty
inputs), whole files renamed into place only once complete, the run lock keyed by the file
and removed when the run ends, ``--resume`` refusing a file a stray quote broke."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from agentiqa_cli.errors import ConfigError
from agentiqa_cli.io.guard import identities, image_out_refusal, whole_file, write_whole
from agentiqa_cli.io.results import ResultsWriter, columns_for, lock_path
from agentiqa_cli.records import Result
from tests.conftest import natural_like, save_rgb
from tests.test_cli_score import exit_code

COLS = columns_for(None)


def _plain_rows(path: Path, n: int) -> None:
    """Rows without a quote anywhere (names without commas, one-line answers)."""
    with ResultsWriter(path, COLS) as w:
        for i in range(n):
            w.write(Result(image=f"p{i}.png", key=f"k{i}", score=3.0, answer="fine"))


# -- resume ------------------------------------------------------------------------------------
def test_resume_refuses_a_stray_quote_that_runs_to_the_end_of_the_file(tmp_path: Path) -> None:
    out = tmp_path / "r.csv"
    _plain_rows(out, 6)
    lines = out.read_bytes().splitlines(keepends=True)
    lines[2] = b'"' + lines[2]  # sed -i '3s/^/"/' r.csv
    out.write_bytes(b"".join(lines))
    before = out.read_bytes()
    with pytest.raises(ConfigError, match="cannot resume"):
        ResultsWriter(out, COLS, resume=True)
    assert out.read_bytes() == before


def test_resume_cli_after_a_stray_quote_is_exit_2_file_untouched(
    tmp_path: Path, pics: Path
) -> None:
    out = tmp_path / "r.csv"
    for i in range(2, 6):
        save_rgb(pics / f"p{i}.png", natural_like(64, 80, seed=i))
    assert exit_code("score", pics, "-o", out, "-q", "-t", "sharpness") == 0
    lines = out.read_bytes().splitlines(keepends=True)
    lines[2] = b'"' + lines[2]
    out.write_bytes(b"".join(lines))
    before = out.read_bytes()
    assert exit_code("score", pics, "-o", out, "-q", "-t", "sharpness", "--resume") == 2
    assert out.read_bytes() == before


# -- the run lock ----------------------------------------------------------------------------
def test_lock_is_keyed_by_the_file_not_its_name(tmp_path: Path) -> None:
    out = tmp_path / "r.csv"
    _plain_rows(out, 1)
    (tmp_path / "link.csv").symlink_to(out)
    os.link(out, tmp_path / "hard.csv")
    first = ResultsWriter(out, COLS, resume=True)
    try:
        for alias in ("link.csv", "hard.csv"):
            with pytest.raises(ConfigError, match="another agentiqa run"):
                ResultsWriter(tmp_path / alias, COLS, resume=True)
    finally:
        first.close(completed=False)
    ResultsWriter(tmp_path / "link.csv", COLS, resume=True).close(completed=False)


def test_a_hard_link_made_to_a_new_csv_during_the_run_is_the_same_csv(tmp_path: Path) -> None:
    out = tmp_path / "r.csv"  # does not exist when the run starts
    with ResultsWriter(out, COLS) as first:
        first.write(Result(image="p0.png", key="k0", score=3.0))  # the file is created now
        os.link(out, tmp_path / "hard.csv")
        with pytest.raises(ConfigError, match="another agentiqa run"):
            ResultsWriter(tmp_path / "hard.csv", COLS, resume=True)
        sub = tmp_path / "sub"
        sub.mkdir()
        os.link(out, sub / "elsewhere.csv")  # another folder: still the same file
        with pytest.raises(ConfigError, match="another agentiqa run"):
            ResultsWriter(sub / "elsewhere.csv", COLS, resume=True)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["hard.csv", "r.csv", "sub"]
    assert [p.name for p in sub.iterdir()] == ["elsewhere.csv"]


def test_a_second_run_on_a_hard_link_to_a_running_runs_new_csv_is_refused(
    tmp_path: Path, pics: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Run A creates r.csv; after its first row, hard.csv is linked to it and run B (another
    process) is started on the link with --resume while A waits: B must stop with exit 2."""
    from agentiqa_cli.io import results

    out, hard = tmp_path / "r.csv", tmp_path / "hard.csv"
    second: list[subprocess.CompletedProcess[str]] = []
    original = results.ResultsWriter.write

    def write_then_start_another_run(self: ResultsWriter, result: Result) -> None:
        original(self, result)
        if second or self.path != out:
            return
        os.link(out, hard)
        env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
        args = ["score", str(pics), "-o", str(hard), "--resume", "-q", "-t", "sharpness"]
        second.append(subprocess.run([sys.executable, "-m", "agentiqa_cli", *args], env=env,
                                     capture_output=True, text=True, timeout=300))  # fmt: skip

    monkeypatch.setattr(results.ResultsWriter, "write", write_then_start_another_run)
    assert exit_code("score", pics, "-o", out, "-q", "-t", "sharpness") == 0
    assert second and second[0].returncode == 2, second[0].stderr if second else None
    assert "another agentiqa run" in second[0].stderr
    _, rows = results.read_table(out)
    assert sorted(Path(r["image"]).name for r in rows) == ["p0.png", "p1.png"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["d", "hard.csv", "r.csv", "r.trace.jsonl"]


def test_the_file_an_upgrade_renames_into_place_is_locked_too(tmp_path: Path) -> None:
    out = tmp_path / "r.csv"
    with ResultsWriter(out, [*COLS[:-1], "key"]) as w:  # an older version's columns
        w.write(Result(image="p0.png", key="k0", score=3.0))
    with ResultsWriter(out, [*COLS[:-1], "extra", "key"], resume=True, optional=["extra"]) as w:
        w.write(Result(image="p1.png", key="k1", score=3.0))  # rewritten: a new file
        os.link(out, tmp_path / "hard.csv")
        with pytest.raises(ConfigError, match="another agentiqa run"):
            ResultsWriter(tmp_path / "hard.csv", COLS, resume=True)


def test_without_flock_the_file_is_locked_by_a_lock_file_named_by_its_identity(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import errno

    from agentiqa_cli.io import results

    def no_flock(fd: int, blocking: bool = True) -> bool:
        raise OSError(errno.ENOLCK, "No locks available")  # as on some network file systems

    monkeypatch.setattr(results, "lock_descriptor", no_flock)
    out = tmp_path / "r.csv"
    with ResultsWriter(out, COLS) as first:
        first.write(Result(image="p0.png", key="k0", score=3.0))
        os.link(out, tmp_path / "hard.csv")
        assert len(list(tmp_path.glob(".agentiqa-*.lock"))) == 1
        with pytest.raises(ConfigError, match="another agentiqa run"):
            ResultsWriter(tmp_path / "hard.csv", COLS, resume=True)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["hard.csv", "r.csv"]


def test_lock_files_are_removed_when_the_run_ends(tmp_path: Path) -> None:
    out = tmp_path / "r.csv"
    _plain_rows(out, 1)
    w = ResultsWriter(out, COLS, resume=True)
    held = [lock_path(out)]
    assert all(p.exists() for p in held)
    w.close()
    assert not any(p.exists() for p in held)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r.csv"]


def test_a_killed_runs_lock_is_taken_over(tmp_path: Path) -> None:
    out = tmp_path / "r.csv"
    _plain_rows(out, 1)
    code = (
        "import os, sys\n"
        "from pathlib import Path\n"
        "from agentiqa_cli.io.results import ResultsWriter, columns_for\n"
        "w = ResultsWriter(Path(sys.argv[1]), columns_for(None), resume=True)\n"
        "os._exit(0)  # killed: nothing released\n"
    )
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
    subprocess.run([sys.executable, "-c", code, str(out)], check=True, env=env, timeout=120)
    assert lock_path(out).exists()  # left behind by the dead run
    with ResultsWriter(out, COLS, resume=True) as w:  # its holder is gone: taken over
        assert len(w.done) == 1


# -- inputs are never outputs, by identity -----------------------------------------------------
def test_an_empty_input_is_still_an_input(tmp_path: Path, pics: Path) -> None:
    empty = pics / "empty.png"
    empty.touch()
    assert exit_code("score", empty, pics / "p0.png", "-o", empty, "-q") == 2
    assert empty.stat().st_size == 0


def test_fixed_image_never_goes_through_a_link_or_over_a_foreign_file(tmp_path: Path) -> None:
    src = save_rgb(tmp_path / "in.png", natural_like(32, 32))
    ins = identities([src])
    os.link(src, tmp_path / "hard.png")
    (tmp_path / "soft.png").symlink_to(tmp_path / "elsewhere.png")
    (tmp_path / "notes-abc.png").write_text("my notes")
    assert "is an input" in (image_out_refusal(tmp_path / "hard.png", ins) or "")
    assert "symbolic link" in (image_out_refusal(tmp_path / "soft.png", ins) or "")
    assert "not a PNG" in (image_out_refusal(tmp_path / "notes-abc.png", ins) or "")
    save_rgb(tmp_path / "old-1234.png", natural_like(32, 32, seed=3))  # an earlier output
    assert image_out_refusal(tmp_path / "old-1234.png", ins) is None
    assert image_out_refusal(tmp_path / "new.png", ins) is None


# -- whole files -------------------------------------------------------------------------------
def test_a_whole_file_is_replaced_only_once_complete(tmp_path: Path) -> None:
    page = tmp_path / "page.html"
    page.write_text("old page")
    page.chmod(0o640)
    with pytest.raises(RuntimeError), whole_file(page) as f:
        f.write("half a new pa")
        raise RuntimeError("the run failed")
    assert page.read_text() == "old page"
    (tmp_path / "link.html").symlink_to(page)
    write_whole(tmp_path / "link.html", "new page")
    assert (tmp_path / "link.html").is_symlink()  # the link stays; the file it names changed
    assert page.read_text() == "new page" and stat.S_IMODE(page.stat().st_mode) == 0o640
    assert sorted(p.name for p in tmp_path.iterdir()) == ["link.html", "page.html"]


def test_a_failed_calibrate_leaves_the_previous_overlay(tmp_path: Path) -> None:
    from agentiqa_cli.bench.calibrate import CalibrationFit, write_overlay

    good = tmp_path / "good.yaml"
    good.write_text("tools:\n  sharpness:\n    params: [1, 2, 3, 4, 5]\n    source: x\n")
    before = good.read_text()
    fit = CalibrationFit(tool="sharpness", n=3, failed=3, mos_range=(1, 5))
    assert write_overlay([fit], good, "set") == 0
    assert good.read_text() == before


def test_experience_build_out_is_guarded_before_any_work(
    tmp_path: Path, pics: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    build = ["experience", "build", pics, "--tools", "noise,sharpness", "--categories",
             "Noise", "--size", "64", "-q"]  # fmt: skip
    victim = pics / "p0.png"
    before = victim.read_bytes()
    assert exit_code(*build, "--out", victim) == 2
    assert victim.read_bytes() == before
    notes = tmp_path / "notes.txt"
    notes.write_text("mine\n")
    assert exit_code(*build, "--out", notes) == 2 and notes.read_text() == "mine\n"
    assert "not an experience pool" in capsys.readouterr().err
    (tmp_path / "folder").mkdir()
    assert exit_code(*build, "--out", tmp_path / "folder") == 2
    assert "is a folder" in capsys.readouterr().err
    if Path("/dev/full").exists():
        assert exit_code(*build, "--out", "/dev/full") == 2
        assert stat.S_ISCHR(os.stat("/dev/full").st_mode)
    os.link(victim, tmp_path / "hard.db")
    assert exit_code(*build, "--out", tmp_path / "hard.db") == 2 and victim.read_bytes() == before


def test_an_existing_out_with_cr_only_line_endings_is_understood(
    tmp_path: Path, pics: Path
) -> None:
    """A lone CR ends a line (an old Mac editor's save): a foreign file so saved is exit 2
    (it was an internal error, exit 4), a results CSV so saved is ours and resumes."""
    notes = tmp_path / "notes.csv"
    notes.write_bytes(b"name,comment\rfoo,bar\r")
    assert exit_code("score", pics, "-t", "sharpness", "-o", notes, "-q") == 2
    assert notes.read_bytes() == b"name,comment\rfoo,bar\r"
    out = tmp_path / "r.csv"
    assert exit_code("score", pics / "p0.png", "-t", "sharpness", "-o", out, "-q") == 0
    out.write_bytes(out.read_bytes().replace(b"\n", b"\r"))
    assert exit_code("score", pics, "-t", "sharpness", "-o", out, "-q", "--resume") == 0
    import pandas as pd

    assert sorted(pd.read_csv(out)["image"]) == sorted(str(p) for p in pics.iterdir())


def test_resume_refuses_a_stray_quote_in_the_last_record(tmp_path: Path) -> None:
    """A cut write is a prefix of a record: it can only end inside a quoted cell. A quote
    error on the last line is damage, not a cut: dropping that record loses a row."""
    out = tmp_path / "r.csv"
    with ResultsWriter(out, COLS) as w:
        for i in range(2):
            w.write(Result(image=f"p{i}.png", key=f"k{i}", answer='a "b"\nc'))
    lines = out.read_bytes().splitlines(keepends=True)
    lines[-1] = b'"' + lines[-1]  # the last record's continuation line
    out.write_bytes(b"".join(lines))
    before = out.read_bytes()
    with pytest.raises(ConfigError, match="cannot resume"):
        ResultsWriter(out, COLS, resume=True)
    assert out.read_bytes() == before


def test_output_names_near_the_file_systems_limit(
    tmp_path: Path, pics: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # the writability probe is a hidden file with a longer name beside each output; where
    # that name is too long, the output's own name is probed: the run is not refused
    limit = os.pathconf(tmp_path, "PC_NAME_MAX")
    out = tmp_path / ("r" * (limit - 16) + ".csv")  # it, its trace and lock fit; probes do not
    assert exit_code("score", pics, "-o", out, "-q") == 0
    assert out.read_text().count("\n") == 1 + len(list(pics.glob("*.png")))
    # a name whose trace (or lock) cannot have its own is a clear error, not an internal one
    out = tmp_path / ("t" * (limit - 4) + ".csv")
    capsys.readouterr()
    assert exit_code("score", pics, "-o", out, "-q") == 2
    assert "File name too long" in capsys.readouterr().err
    assert not out.exists()
