"""Never lose a row, never overwrite an input, never hang on an output: the results CSV,
its trace and ``--resume`` against hostile files, edited CSVs, bad locations and kills."""

from __future__ import annotations

import ast
import csv
import errno
import io
import os
import shutil
from pathlib import Path

import pandas as pd
import pytest

from agentiqa_cli.errors import ConfigError
from agentiqa_cli.io.results import ResultsWriter, columns_for
from agentiqa_cli.records import Result
from tests.conftest import natural_like, save_rgb

COLS = columns_for(None)


def _row(i: int, image: str | None = None) -> Result:
    return Result(
        image=image or f"img, {i}.png",
        key=f"k{i}",
        score=3.0,
        answer='said "fine"\nsecond line',
    )


def _written(path: Path, n: int) -> None:
    with ResultsWriter(path, COLS) as w:
        for i in range(n):
            w.write(_row(i))


def _rewrite(path: Path, **fmt: object) -> None:
    """Save the CSV as a spreadsheet or editor would: same cells, other quoting/line ends."""
    rows = list(csv.reader(io.StringIO(path.read_text(encoding="utf-8"), newline="")))
    buf = io.StringIO(newline="")
    csv.writer(buf, **fmt).writerows(rows)  # type: ignore[arg-type]
    path.write_bytes(buf.getvalue().encode("utf-8"))


# -- 2. resume parses the CSV as CSV ---------------------------------------------------------
@pytest.mark.parametrize(
    "fmt",
    [
        {"lineterminator": "\r\n"},
        {"lineterminator": "\n", "quoting": csv.QUOTE_ALL},
        {"lineterminator": "\r\n", "quoting": csv.QUOTE_NONNUMERIC},
    ],
    ids=["crlf", "quote-all", "crlf-quote-nonnumeric"],
)
def test_resume_keeps_every_row_of_a_resaved_csv(tmp_path: Path, fmt: dict[str, object]) -> None:
    out = tmp_path / "r.csv"
    _written(out, 5)
    _rewrite(out, **fmt)
    before = out.read_bytes()
    with ResultsWriter(out, COLS, resume=True) as w:
        assert {k for _, k in w.done} == {f"k{i}" for i in range(5)}
        w.write(_row(5))
    assert out.read_bytes().startswith(before)  # nothing of the old file changed
    assert pd.read_csv(out)["key"].tolist() == [f"k{i}" for i in range(6)]


def test_resume_accepts_a_bom_and_one_requoted_cell(tmp_path: Path) -> None:
    out = tmp_path / "r.csv"
    _written(out, 3)
    text = out.read_text(encoding="utf-8").replace(",k1\n", ',"k1"\n')
    out.write_bytes(b"\xef\xbb\xbf" + text.encode())
    with ResultsWriter(out, COLS, resume=True) as w:
        assert {k for _, k in w.done} == {"k0", "k1", "k2"}


def test_resume_drops_only_a_final_partial_record(tmp_path: Path) -> None:
    out = tmp_path / "r.csv"
    _written(out, 3)
    _rewrite(out, lineterminator="\r\n")
    whole = out.read_bytes()
    with open(out, "ab") as f:
        f.write(b'"img, 3.png",,ok,,3.000,,"said ""fi')  # killed mid-cell
    with ResultsWriter(out, COLS, resume=True) as w:
        assert len(w.done) == 3
        assert out.read_bytes() == whole


def test_resume_drops_a_final_record_cut_before_its_newline(tmp_path: Path) -> None:
    out = tmp_path / "r.csv"
    _written(out, 3)
    data = out.read_bytes()
    out.write_bytes(data[:-2])  # the last key lost its final character: not complete
    with ResultsWriter(out, COLS, resume=True) as w:
        assert {k for _, k in w.done} == {"k0", "k1"}


@pytest.mark.parametrize(
    "damage",
    [
        lambda t: t.replace("\n", "\n,,broken\n", 2),  # a short record in the middle
        lambda t: t.replace(',"said', ',x"said', 1),  # a stray quote mid-file
        lambda t: t + "\x00\x00\x00garbage,\n" + t.split("\n", 1)[1],  # junk then rows
    ],
    ids=["short-row", "stray-quote", "nul-bytes"],
)
def test_resume_refuses_a_file_it_cannot_read_and_touches_nothing(
    tmp_path: Path, damage: object
) -> None:
    out = tmp_path / "r.csv"
    _written(out, 3)
    out.write_text(damage(out.read_text()))  # type: ignore[operator]
    before = out.read_bytes()
    with pytest.raises(ConfigError, match="cannot resume"):
        ResultsWriter(out, COLS, resume=True)
    assert out.read_bytes() == before


# -- 4. the lock is taken before the first row ---------------------------------------------
def test_second_writer_on_a_new_csv_is_refused(tmp_path: Path) -> None:
    out = tmp_path / "new.csv"
    first = ResultsWriter(out, COLS, resume=True)
    with pytest.raises(ConfigError, match="another agentiqa run"):
        ResultsWriter(out, COLS, resume=True)
    with pytest.raises(ConfigError, match="another agentiqa run"):
        ResultsWriter(out, COLS)
    first.write(_row(0))
    first.close()
    ResultsWriter(out, COLS, resume=True).close()  # released


# -- 16. portable lock -----------------------------------------------------------------------
def test_no_posix_only_module_is_imported() -> None:
    root = Path(__file__).resolve().parents[1] / "agentiqa_cli"
    posix_only = {"fcntl", "termios", "pwd", "grp", "resource"}
    bad = []
    for py in root.rglob("*.py"):
        for node in ast.walk(ast.parse(py.read_text())):
            names = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module]
            bad += [f"{py.name}: {n}" for n in names if n.split(".")[0] in posix_only]
    assert not bad


# -- end to end (in-process, with the CLI's error boundary) ----------------------------------
def invoke(*args: str | Path) -> int:
    from tests.test_cli_score import invoke as run

    return run(*args)[0]


@pytest.fixture
def pics(tmp_path: Path) -> Path:
    d = tmp_path / "d"
    for i in range(2):
        save_rgb(d / f"p{i}.png", natural_like(64, 80, seed=i))
    return d


@pytest.mark.parametrize(("full", "fits"), [("r.csv", 2), ("r.trace.jsonl", 10)])
def test_disk_full_mid_run_is_exit_3_and_rows_so_far_stay(
    tmp_path: Path, pics: Path, full: str, fits: int
) -> None:
    out, victim = tmp_path / "r.csv", tmp_path / full
    real = os.write
    calls = {"n": 0}

    def full_after_two(fd: int, data: bytes) -> int:
        if fd >= 0 and os.path.realpath(f"/proc/self/fd/{fd}") == str(victim):
            calls["n"] += 1
            if calls["n"] > fits:  # a few writes fit, then the disk is full
                raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return real(fd, data)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(os, "write", full_after_two)
        assert invoke("score", pics, "-o", out, "-q", "-j", "1") == 3
    df = pd.read_csv(out)
    assert len(df) <= 1 and (df["status"] == "ok").all()  # no row blames the image
    assert invoke("score", pics, "-o", out, "-q", "--resume") == 0
    assert sorted(pd.read_csv(out)["image"]) == sorted(str(p) for p in pics.iterdir())


def test_identical_files_each_get_a_row_after_a_resume(tmp_path: Path, pics: Path) -> None:
    shutil.copy(pics / "p0.png", pics / "p0_copy.png")
    out = tmp_path / "r.csv"
    assert invoke("score", pics, "-o", out, "-q", "-j", "1") == 0
    lines = out.read_bytes().splitlines(keepends=True)
    keep = [ln for ln in lines if b"p0_copy.png" not in ln and b"p1.png" not in ln]
    out.write_bytes(b"".join(keep))  # as if killed after p0's row
    assert invoke("score", pics, "-o", out, "-q", "--resume") == 0
    df = pd.read_csv(out)
    assert sorted(df["image"]) == sorted(str(p) for p in pics.iterdir())
    assert df["key"].nunique() == 2  # the copy's key is the original's: same content


# -- 1, 9, 11, 12: which paths may be written ------------------------------------------------
def test_out_that_is_an_input_is_refused_even_with_force(tmp_path: Path, pics: Path) -> None:
    victim = pics / "p0.png"
    before = victim.read_bytes()
    assert invoke("score", victim, pics / "p1.png", "-o", victim, "-q") == 2
    assert invoke("score", victim, pics / "p1.png", "-o", victim, "-q", "--force") == 2
    assert invoke("score", pics, "--trace", pics / "p1.png", "-o", tmp_path / "r.csv") == 2
    assert victim.read_bytes() == before
    assert not (tmp_path / "r.csv").exists()


def test_existing_file_that_is_not_ours_needs_force(tmp_path: Path, pics: Path) -> None:
    notes = tmp_path / "notes.txt"
    notes.write_text("my notes\n")
    assert invoke("score", pics, "-o", notes, "-q") == 2
    assert notes.read_text() == "my notes\n"
    trace = tmp_path / "t.jsonl"
    trace.write_text("not a trace\n")
    assert invoke("score", pics, "-o", tmp_path / "r.csv", "--trace", trace, "-q") == 2
    assert trace.read_text() == "not a trace\n"
    assert invoke("score", pics, "-o", notes, "-q", "--force") == 0
    assert len(pd.read_csv(notes)) == 2
    assert invoke("score", pics, "-o", notes, "-q") == 0  # ours now: overwritten freely


def test_out_equal_to_trace_is_refused(tmp_path: Path, pics: Path) -> None:
    out = tmp_path / "r.csv"
    assert invoke("score", pics, "-o", out, "--trace", out, "-q") == 2
    assert invoke("score", pics, "-o", out, "--trace", out, "-q", "--force") == 2
    assert not out.exists()


def test_glob_never_takes_our_own_outputs(tmp_path: Path, pics: Path) -> None:
    out = pics / "results.csv"
    pattern = str(pics / "*")
    assert invoke("score", pattern, "-o", out, "-q") == 0
    assert (pics / "trace.jsonl").exists()
    for _ in range(2):
        assert invoke("score", pattern, "-o", out, "-q", "--resume") == 0
        df = pd.read_csv(out)
        assert len(df) == 2 and (df["status"] == "ok").all()


@pytest.mark.parametrize(
    "where",
    [
        "/proc/agentiqa-x.csv",
        "{tmp}",  # a folder
        "/proc/version",  # exists, cannot be written even by root
        "/dev/full",
        "{tmp}/afile/r.csv",  # the parent is a file
        "trace:/proc/agentiqa-x/t.jsonl",
    ],
)
def test_bad_output_locations_are_exit_2_before_any_image(
    tmp_path: Path, pics: Path, where: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "afile").write_text("x")
    seen: list[str] = []
    import agentiqa_cli.batch as batch

    real = batch.Decoder.decode
    monkeypatch.setattr(batch.Decoder, "decode", lambda s, j: seen.append(j.name) or real(s, j))
    if where.startswith("trace:"):
        args = ["-o", str(tmp_path / "r.csv"), "--trace", where[len("trace:") :]]
    else:
        args = ["-o", where.format(tmp=tmp_path)]
    for force in ([], ["--force"]):
        assert invoke("score", pics, *args, "-q", *force) == 2
    assert seen == []


def test_read_only_file_is_exit_2_even_for_root(tmp_path: Path, pics: Path) -> None:
    out = tmp_path / "r.csv"
    assert invoke("score", pics, "-o", out, "-q") == 0
    out.chmod(0o444)
    before = out.read_bytes()
    assert invoke("score", pics, "-o", out, "-q") == 2
    assert invoke("score", pics, "-o", out, "-q", "--force") == 2
    assert out.read_bytes() == before
