"""Never lose a row, never overwrite an input, never hang on an output: the results CSV,
its trace and ``--resume`` against hostile files, edited CSVs, bad locations and kills."""

from __future__ import annotations

import ast
import csv
import errno
import io
import json
import os
import shutil
import sys
from pathlib import Path

import pandas as pd
import pytest

from agentiqa_cli.errors import ConfigError
from agentiqa_cli.io.results import ResultsWriter, columns_for, row_of
from agentiqa_cli.records import Result
from tests.conftest import natural_like, save_rgb
from tests.test_cli_score import exit_code

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


@pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="finds the fd's file in /proc")
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
        assert exit_code("score", pics, "-o", out, "-q", "-j", "1") == 3
    if full == "r.csv":
        assert len(pd.read_csv(out)) == 1  # the header and one row fitted
    if out.exists():  # complete rows only, none blaming an image for the disk
        assert (pd.read_csv(out)["status"] == "ok").all()
    assert exit_code("score", pics, "-o", out, "-q", "--resume") == 0
    assert sorted(pd.read_csv(out)["image"]) == sorted(str(p) for p in pics.iterdir())


def test_identical_files_each_get_a_row_after_a_resume(tmp_path: Path, pics: Path) -> None:
    shutil.copy(pics / "p0.png", pics / "p0_copy.png")
    out = tmp_path / "r.csv"
    assert exit_code("score", pics, "-o", out, "-q", "-j", "1") == 0
    lines = out.read_bytes().splitlines(keepends=True)
    keep = [ln for ln in lines if b"p0_copy.png" not in ln and b"p1.png" not in ln]
    out.write_bytes(b"".join(keep))  # as if killed after p0's row
    assert exit_code("score", pics, "-o", out, "-q", "--resume") == 0
    df = pd.read_csv(out)
    assert sorted(df["image"]) == sorted(str(p) for p in pics.iterdir())
    assert df["key"].nunique() == 2  # the copy's key is the original's: same content


# -- 1, 9, 11, 12: which paths may be written ------------------------------------------------
def test_out_that_is_an_input_is_refused_even_with_force(tmp_path: Path, pics: Path) -> None:
    victim = pics / "p0.png"
    before = victim.read_bytes()
    assert exit_code("score", victim, pics / "p1.png", "-o", victim, "-q") == 2
    assert exit_code("score", victim, pics / "p1.png", "-o", victim, "-q", "--force") == 2
    assert exit_code("score", pics, "--trace", pics / "p1.png", "-o", tmp_path / "r.csv") == 2
    os.link(victim, tmp_path / "hard.png")  # another name for the same file
    (tmp_path / "soft.png").symlink_to(victim)
    for alias in ("hard.png", "soft.png"):
        assert exit_code("score", pics, "-o", tmp_path / alias, "-q", "--force") == 2
    assert victim.read_bytes() == before
    assert not (tmp_path / "r.csv").exists()


def test_existing_file_that_is_not_ours_needs_force(tmp_path: Path, pics: Path) -> None:
    notes = tmp_path / "notes.txt"
    notes.write_text("my notes\n")
    assert exit_code("score", pics, "-o", notes, "-q") == 2
    assert notes.read_text() == "my notes\n"
    trace = tmp_path / "t.jsonl"
    trace.write_text("not a trace\n")
    assert exit_code("score", pics, "-o", tmp_path / "r.csv", "--trace", trace, "-q") == 2
    assert trace.read_text() == "not a trace\n"
    assert exit_code("score", pics, "-o", notes, "-q", "--force") == 0
    assert len(pd.read_csv(notes)) == 2
    assert exit_code("score", pics, "-o", notes, "-q") == 0  # ours now: overwritten freely


def test_out_equal_to_trace_is_refused(tmp_path: Path, pics: Path) -> None:
    out = tmp_path / "r.csv"
    assert exit_code("score", pics, "-o", out, "--trace", out, "-q") == 2
    assert exit_code("score", pics, "-o", out, "--trace", out, "-q", "--force") == 2
    assert not out.exists()


def test_glob_never_takes_our_own_outputs(tmp_path: Path, pics: Path) -> None:
    out = pics / "results.csv"
    pattern = str(pics / "*")
    assert exit_code("score", pattern, "-o", out, "-q") == 0
    assert (pics / "trace.jsonl").exists()
    for _ in range(2):
        assert exit_code("score", pattern, "-o", out, "-q", "--resume") == 0
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
        assert exit_code("score", pics, *args, "-q", *force) == 2
    assert seen == []


def test_read_only_file_is_exit_2_even_for_root(tmp_path: Path, pics: Path) -> None:
    out = tmp_path / "r.csv"
    assert exit_code("score", pics, "-o", out, "-q") == 0
    out.chmod(0o444)
    before = out.read_bytes()
    assert exit_code("score", pics, "-o", out, "-q") == 2
    assert exit_code("score", pics, "-o", out, "-q", "--force") == 2
    assert out.read_bytes() == before


# -- soak: a hostile batch killed at random points, resumed ----------------------------------
def _hostile_mix(root: Path) -> list[Path]:
    """Good images (some under odd names, some byte-identical), truncated, non-image and empty
    files; returns every input path the batch must give a row."""
    d = root / "mix"
    good = [save_rgb(d / f"good{i}.png", natural_like(120, 160, seed=i)) for i in range(48)]
    save_rgb(d / "photo.jpg", natural_like(120, 160, seed=59), quality=80)
    odd = ["comma, name.png", 'quote "q".png', "new\nline.png", "ünï ☃.png", "-dash.png",
           " lead space.png", "=1+1.png", os.fsdecode(b"bad\xff.png")]  # fmt: skip
    for i, name in enumerate(odd):
        save_rgb(d / name, natural_like(120, 160, seed=60 + i))
    for name in ("a-dup.png", "m-dup.png", "z-dup.png"):  # same bytes, spread over the run
        shutil.copy(good[0], d / name)
    data = good[1].read_bytes()
    (d / "truncated.png").write_bytes(data[: len(data) // 2])
    (d / "text.png").write_text("not an image\n")
    (d / "noise.jpg").write_bytes(os.urandom(3000))
    (d / "empty.png").write_bytes(b"")
    (root / "readme.txt").write_text("named on the command line\n")
    return sorted([*d.iterdir(), root / "readme.txt"])


def _cli_child(argv: list[str]) -> None:
    """The CLI in a forked process (modules already imported: no interpreter start-up)."""
    from agentiqa_cli.cli import main

    sys.stdout = sys.stderr = open(os.devnull, "w")  # noqa: SIM115
    sys.argv = ["agentiqa", *argv]
    try:
        main()
    except SystemExit as e:
        os._exit(int(e.code or 0))
    os._exit(0)


def _complete_rows(path: Path) -> list[tuple[str, str]]:
    """(image, key) of the complete records, read with the csv module (independently of
    the code under test): the longest prefix ending at a line end that parses."""
    data = path.read_bytes() if path.exists() else b""
    cut = len(data)
    while True:
        cut = data.rfind(b"\n", 0, cut) + 1
        text = data[:cut].decode("utf-8", errors="replace")
        try:
            rows = list(csv.reader(io.StringIO(text, newline=""), strict=True))
            break
        except csv.Error:
            cut -= 1  # cut inside a quoted cell: try the line end before
    at_i, at_k = COLS.index("image"), COLS.index("key")
    return [(r[at_i], r[at_k]) for r in rows[1:] if r]


def _as_crlf(path: Path) -> None:
    """Re-save the complete records with CRLF line ends (a spreadsheet's save); a partial
    last record, if any, is kept as the kill left it."""
    data = path.read_bytes()
    cut = data.rfind(b"\n") + 1
    try:
        rows = list(csv.reader(io.StringIO(data[:cut].decode("utf-8"), newline=""), strict=True))
    except csv.Error:
        return  # cut inside a quoted cell: leave it to resume
    buf = io.StringIO(newline="")
    csv.writer(buf, lineterminator="\r\n").writerows(rows)
    path.write_bytes(buf.getvalue().encode("utf-8") + data[cut:])


@pytest.mark.soak
@pytest.mark.timeout(90)
@pytest.mark.skipif(sys.platform == "win32", reason="forks the CLI")
@pytest.mark.parametrize("crlf", [False, True], ids=["as-written", "crlf-between-runs"])
def test_soak_kill_and_resume_hostile_batch(tmp_path: Path, crlf: bool) -> None:
    import multiprocessing
    import random
    import time

    from agentiqa_cli.imaging.load import display_path

    inputs = _hostile_mix(tmp_path)
    expected = sorted(row_of(Result(image=display_path(p), key="k"), COLS)[0] for p in inputs)
    out = tmp_path / "out" / "results.csv"
    argv = [str(tmp_path / "mix"), str(tmp_path / "readme.txt"), "-o", str(out), "-q"]
    rng = random.Random(1234 + crlf)
    t0 = time.perf_counter()
    assert exit_code("score", inputs[0], "-o", tmp_path / "warm.csv", "-q") == 0  # imports, once
    warm = time.perf_counter() - t0
    fork = multiprocessing.get_context("fork")
    kills = 0
    before: list[tuple[str, str]] = []
    for cycle in range(10):
        rows = out.read_bytes().count(b"\n") if out.exists() else 0
        child = fork.Process(target=_cli_child, args=(["score", *argv, "--resume", "-j", "2"],))
        child.start()
        # a random point: during start-up, or a few rows in (+ jitter, maybe mid-write)
        wait_rows = rng.choice([0, 0, 1, 2, 3, 5])
        stop_at = time.monotonic() + (rng.uniform(0.0, 0.25) if wait_rows == 0 else 30)
        while child.is_alive() and time.monotonic() < stop_at:
            lines = out.read_bytes().count(b"\n") if out.exists() else 0
            # history only grows (less a final partial record: one embedded line end at most)
            assert lines >= rows - 1, f"cycle {cycle}: the resumed run cut the CSV"
            if wait_rows and lines >= rows + wait_rows:
                time.sleep(rng.uniform(0.0, 0.03))
                break
            time.sleep(0.002)
        if child.is_alive():
            kills += 1
        child.kill()  # SIGKILL: no cleanup, no flush; the kernel drops the lock
        child.join(10)
        assert child.exitcode is not None, f"cycle {cycle}: the child did not die"
        now = _complete_rows(out)
        assert len(set(now)) == len(now), f"cycle {cycle}: a path got two rows"
        assert set(before) <= set(now), f"cycle {cycle}: resume dropped complete rows"
        before = now
        if crlf and out.exists():
            _as_crlf(out)
    t1 = time.perf_counter()
    last = fork.Process(target=_cli_child, args=(["score", *argv, "--resume"],))
    last.start()
    last.join(180)  # a loaded machine (a whole suite beside it) can take a minute
    assert last.exitcode in (0, 3), last.exitcode  # 3 when a bad file was still left
    print(f"warm-up {warm:.1f}s, 10 cycles {t1 - t0 - warm:.1f}s, final run "
          f"{time.perf_counter() - t1:.1f}s, {kills} kills mid-run")  # fmt: skip
    df = pd.read_csv(out, dtype=str, keep_default_na=False)
    assert sorted(df["image"]) == expected  # exactly one row per input path
    bad = {"truncated.png", "text.png", "noise.jpg", "empty.png", "readme.txt"}
    errors = {Path(os.fsencode(c).decode()).name for c in df[df["status"] == "error"]["image"]}
    assert errors == bad
    assert (df[df["status"] == "ok"]["score"] != "").all()
    # most kills land mid-run (a fast machine may finish the last few rows before the kill)
    assert kills >= 5, "the kills should land mid-run"


def test_a_run_on_a_csv_another_run_holds_is_exit_2(tmp_path: Path, pics: Path) -> None:
    out = tmp_path / "new.csv"  # does not exist yet: the first run has not written a row
    holder = ResultsWriter(out, columns_for(["sharpness"]), resume=True)
    try:
        assert exit_code("score", pics, "-o", out, "-q", "--resume") == 2
        assert not out.exists()
    finally:
        holder.close(completed=False)
    assert exit_code("score", pics, "-o", out, "-q", "--resume") == 0


def test_evaluate_resume_reads_rows_of_a_csv_saved_with_a_bom(tmp_path: Path) -> None:
    from agentiqa_cli.evaluate.state import read_rows

    out = tmp_path / "r.csv"
    _written(out, 2)
    _rewrite(out, lineterminator="\r\n")
    out.write_bytes(b"\xef\xbb\xbf" + out.read_bytes())
    assert sorted(read_rows(out)) == ["img, 0.png", "img, 1.png"]


def test_fix_csv_that_is_an_input_is_refused(tmp_path: Path, pics: Path) -> None:
    victim = pics / "p0.png"
    before = victim.read_bytes()
    code = exit_code("fix", pics, "--out", tmp_path / "fixed", "--csv", victim, "-q")
    assert code == 2 and victim.read_bytes() == before


def test_report_never_replaces_an_input_our_csv_or_a_foreign_file(
    tmp_path: Path, pics: Path
) -> None:
    out, victim, page = tmp_path / "r.csv", pics / "p0.png", tmp_path / "page.html"
    before = victim.read_bytes()
    assert exit_code("score", pics, "-o", out, "--report", victim, "-q", "--force") == 2
    assert victim.read_bytes() == before
    assert exit_code("score", pics, "-o", out, "--report", out, "-q") == 2
    page.write_text("<html>mine</html>")
    assert exit_code("score", pics, "-o", out, "--report", page, "-q") == 2
    assert page.read_text() == "<html>mine</html>" and not out.exists()
    assert exit_code("score", pics, "-o", out, "--report", page, "-q", "--force") == 0
    assert exit_code("score", pics, "-o", out, "--report", page, "-q") == 0  # ours now
    assert "agentiqa report" in page.read_text()


def test_report_command_never_writes_over_its_csv_or_an_image(tmp_path: Path, pics: Path) -> None:
    out = tmp_path / "r.csv"
    assert exit_code("score", pics, "-o", out, "-q") == 0
    keep = {p: p.read_bytes() for p in (out, pics / "p0.png")}
    for target in keep:
        assert exit_code("report", out, "--html", target, "-q") == 2
    assert all(p.read_bytes() == b for p, b in keep.items())
    for _ in range(2):  # its own page is replaced freely
        assert exit_code("report", out, "-q") == 0


# -- the other commands' outputs: eval-bench --out-dir, calibrate --out, evaluate --gen-dir ----
def _mos_set(folder: Path, csv_name: str = "data.csv") -> Path:
    for i in range(3):
        save_rgb(folder / f"m{i}.png", natural_like(48, 64, seed=i))
    data = folder / csv_name
    data.write_text("image,mos\n" + "".join(f"m{i}.png,{i + 2}\n" for i in range(3)))
    return data


def test_eval_bench_and_calibrate_never_overwrite_an_input_or_a_foreign_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = _mos_set(tmp_path / "set", "predictions.csv")  # the name of a report file
    before = data.read_text()
    mos = ["eval-bench", "mos", data, "--tools", "sharpness", "--no-assess", "-q"]
    assert exit_code(*mos, "-o", tmp_path / "set") == 2  # would write predictions.csv over it
    assert "is an input and an output" in capsys.readouterr().err and data.read_text() == before
    (tmp_path / "file").write_text("x")
    assert exit_code(*mos, "-o", tmp_path / "file") == 2
    assert "not a folder" in capsys.readouterr().err
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "trace.jsonl").write_text("my notes\n")
    assert exit_code(*mos, "-o", tmp_path / "out") == 2
    assert "not an agentiqa trace" in capsys.readouterr().err
    assert (tmp_path / "out" / "trace.jsonl").read_text() == "my notes\n"
    ok = _mos_set(tmp_path / "ok")
    for _ in range(2):  # its own report folder, again: replaced (the trace is one of ours)
        assert exit_code("eval-bench", "mos", ok, "-t", "sharpness", "--no-assess", "-q",
                      "-o", tmp_path / "ok" / "eval") == 0  # fmt: skip
    head = (tmp_path / "ok" / "eval" / "trace.jsonl").read_text().splitlines()[0]
    assert '"command":"eval-bench mos"' in head
    clean = tmp_path / "res" / "images"
    save_rgb(clean / "c.png", natural_like(48, 64))
    synth = ["eval-bench", "synth", clean, "--tools", "sharpness", "--no-assess", "-q"]
    assert exit_code(*synth, "-o", tmp_path / "res") == 2  # distorted images among the clean
    assert "images/ folder" in capsys.readouterr().err
    calibrate = ["calibrate", data, "--tools", "sharpness", "-q"]
    assert exit_code(*calibrate, "-o", data) == 2 and data.read_text() == before
    config = tmp_path / "agentiqa.yaml"
    config.write_text("vlm: rules\n")
    assert exit_code(*calibrate, "-o", config) == 2
    assert "not a calibration overlay" in capsys.readouterr().err
    assert config.read_text() == "vlm: rules\n"
    if hasattr(os, "mkfifo"):
        os.mkfifo(tmp_path / "fifo.yaml")
        assert exit_code(*calibrate, "-o", tmp_path / "fifo.yaml") == 2
        assert "not a regular file" in capsys.readouterr().err


def test_evaluate_gen_dir_replaces_only_its_own_images(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from agentiqa_cli.io.guard import check_gen_dir
    from agentiqa_cli.io.results import BASE_COLUMNS

    gen = ["evaluate", "--generator", "true {out}", "--max-rounds", "1", "-q"]
    (tmp_path / "file").write_text("x")
    assert exit_code(*gen, "-o", tmp_path / "e.csv", "--gen-dir", tmp_path / "file") == 2
    assert "--gen-dir" in capsys.readouterr().err and (tmp_path / "file").read_text() == "x"
    mine = tmp_path / "photos"
    save_rgb(mine / "r01-01.png", natural_like(48, 64))  # someone's photo, by chance so named
    assert exit_code(*gen, "-o", tmp_path / "e.csv", "--gen-dir", mine) == 2
    assert "refusing to overwrite images of another run" in capsys.readouterr().err
    assert (mine / "r01-01.png").stat().st_size > 0
    check_gen_dir(mine, tmp_path / "e.csv", resume=False, force=True)  # --force: replace
    # an earlier run's images, named by the results CSV this run replaces, are ours
    csv_path = tmp_path / "e.csv"
    with open(csv_path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(BASE_COLUMNS)
        w.writerow([str(mine / "r01-01.png"), *[""] * (len(BASE_COLUMNS) - 1)])
    check_gen_dir(mine, csv_path, resume=False, force=False)
    save_rgb(mine / "r01-02.png", natural_like(48, 64))
    with pytest.raises(ConfigError, match=r"r01-02\.png"):
        check_gen_dir(mine, csv_path, resume=False, force=False)


def test_assess_resumes_a_csv_from_before_the_fix_columns(tmp_path: Path, pics: Path) -> None:
    from tests.test_cli_score import invoke as run

    out = tmp_path / "a.csv"
    assert exit_code("assess", pics, "-o", out, "-q") == 0
    df = pd.read_csv(out, keep_default_na=False, dtype=str)
    fix = ["imperfections", "operations", "refused", "score_before"]
    assert list(df.columns[-4:]) == fix
    df.drop(columns=fix).iloc[:1].to_csv(out, index=False)  # the older version's file, cut
    code, stdout = run("assess", pics, "-o", out, "-q", "--resume", "--json")
    assert code == 0 and json.loads(stdout)["summary"]["skipped"] == 1
    again = pd.read_csv(out, keep_default_na=False, dtype=str)
    assert list(again.columns) == list(df.columns) and len(again) == 2
    assert again.loc[0, "key"] == df.loc[0, "key"] and again.loc[0, "refused"] == ""


def test_a_training_log_is_not_taken_for_a_trace(tmp_path: Path, pics: Path) -> None:
    """JSON lines whose first line has a "step" of ours but is no trace record of ours (a
    training log) are someone else's file: refused, not truncated."""
    from agentiqa_cli.io.guard import is_trace_file
    from agentiqa_cli.records import TraceEvent

    log = tmp_path / "train.jsonl"
    text = '{"step": "final", "epoch": 3, "loss": 0.31}\n'
    log.write_text(text)
    assert not is_trace_file(log)
    assert exit_code("score", pics, "-o", tmp_path / "r.csv", "--trace", log, "-q") == 2
    assert log.read_text() == text
    ours = tmp_path / "old.jsonl"  # an older eval-bench trace: no run header, a step of ours
    ours.write_text(TraceEvent(step="final", image="x.png").model_dump_json() + "\n")
    assert is_trace_file(ours)


def test_a_bench_trace_header_names_the_command_not_the_progress_label(tmp_path: Path) -> None:
    """The run header's command is said, not parsed out of the progress bar's label."""
    from agentiqa_cli.bench.runs import Bench
    from agentiqa_cli.cli.work.bench_run import run_bench
    from agentiqa_cli.config import load_settings

    async def main(bench: Bench) -> int:
        return 7

    trace = tmp_path / "trace.jsonl"
    got = run_bench(load_settings({}), trace, 0, "scoring my (v2) set", main,
                    command="eval-bench mos")  # fmt: skip
    assert got == 7
    assert json.loads(trace.read_text().splitlines()[0])["parsed"]["command"] == "eval-bench mos"
