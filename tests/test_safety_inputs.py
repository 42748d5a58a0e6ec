"""Safety of inputs, VLM replies, secrets and escaping: never lose a row, never hang, never leak.

Each test names the failure it guards against; all run in seconds without a VLM or weights.
"""

from __future__ import annotations

import asyncio
import csv
import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest

from agentiqa_cli.errors import ImageError
from agentiqa_cli.imaging.load import load_image
from tests.conftest import natural_like, save_rgb

ROOT = Path(__file__).resolve().parents[1]


def cli(
    *args: str | Path, cwd: Path, timeout: float = 60, **env_vars: str
) -> subprocess.CompletedProcess[str]:
    """The real console entry in a subprocess (a hang fails the test instead of the suite)."""
    env = dict(os.environ, PYTHONPATH=str(ROOT), NO_COLOR="1", **env_vars)
    return subprocess.run(
        [sys.executable, "-m", "agentiqa_cli", *map(str, args)],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def run(*args: str | Path, cwd: Path, **env_vars: str) -> subprocess.CompletedProcess[str]:
    """The console entry in this process (seconds, not a fresh torch import per call);
    the same result shape as ``cli``."""
    import contextlib
    import io

    from agentiqa_cli.cli import main

    out, err = io.StringIO(), io.StringIO()
    argv, here, saved = sys.argv, Path.cwd(), dict(os.environ)
    sys.argv = ["agentiqa", *map(str, args)]
    os.environ.update(env_vars, NO_COLOR="1")
    os.chdir(cwd)
    code = 0
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            main()
    except SystemExit as e:
        code = int(e.code or 0)
    finally:
        sys.argv = argv
        os.chdir(here)
        os.environ.clear()
        os.environ.update(saved)
    return subprocess.CompletedProcess(list(args), code, out.getvalue(), err.getvalue())


def rows(path: Path) -> list[dict[str, str]]:
    with open(path, newline="", encoding="utf-8") as f:
        return list(csv.DictReader(f))


# -- 5: only regular files are read, reads bounded by size ---------------------------------
@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
def test_fifo_and_dev_zero_get_error_rows_not_a_hang(tmp_path: Path) -> None:
    d = tmp_path / "d"
    save_rgb(d / "a.png", natural_like(48, 48))
    os.mkfifo(d / "fifo.png")
    (d / "zero.png").symlink_to("/dev/zero")
    for inputs in (["d"], ["d/fifo.png", "d/zero.png", "d/a.png"]):
        r = cli("score", *inputs, "-t", "sharpness", "-o", "out.csv", "-q", cwd=tmp_path)
        assert r.returncode == 3, r.stderr
        by = {row["image"]: row for row in rows(tmp_path / "out.csv")}
        assert by["d/a.png"]["status"] == "ok"
        for bad in ("d/fifo.png", "d/zero.png"):
            assert by[bad]["status"] == "error"
            assert "not a regular file" in by[bad]["error"]


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
def test_a_ref_or_report_csv_that_is_not_a_file_says_what_it_is(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from agentiqa_cli.errors import ConfigError
    from agentiqa_cli.imaging import discover as disc
    from tests.test_cli_score import invoke

    save_rgb(tmp_path / "a.png", natural_like(48, 48))
    os.mkfifo(tmp_path / "fifo.png")
    (tmp_path / "zero.png").symlink_to("/dev/zero")
    (tmp_path / "gone.png").symlink_to(tmp_path / "nothing.png")
    found = disc.discover([str(tmp_path / "a.png")])
    for ref, why in (("fifo.png", "not a regular file (FIFO, device or socket)"),
                     ("zero.png", "not a regular file (FIFO, device or socket)"),
                     ("gone.png", "a symbolic link to nothing"),
                     ("nothing.png", "no such file or folder")):  # fmt: skip
        with pytest.raises(ConfigError) as e:
            disc.pair(found, str(tmp_path / ref))
        assert str(e.value).endswith(f"{ref}: {why}")
    code, _ = invoke("report", tmp_path / "fifo.png", "--html", tmp_path / "r.html")
    assert code == 2 and "fifo.png: not a regular file" in capsys.readouterr().err


def test_huge_file_is_refused_by_size_before_reading(tmp_path: Path) -> None:
    big = tmp_path / "big.png"
    with open(big, "wb") as f:
        f.truncate(1 << 30)  # sparse: 1 GiB that costs no disk
    with pytest.raises(ImageError, match="larger than"):
        load_image(big, max_pixels=1_000_000)


def test_non_image_is_not_read_whole(tmp_path: Path) -> None:
    """A non-image below the size limit is rejected from its header, not read into memory."""
    import tracemalloc

    junk = tmp_path / "junk.png"
    with open(junk, "wb") as f:
        f.truncate(64 << 20)
    tracemalloc.start()
    try:
        with pytest.raises(ImageError, match="not a recognised image"):
            load_image(junk)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 8 << 20, peak


# -- 6: an unreadable sub-folder is reported --------------------------------------------------
def test_unreadable_subfolder_gets_an_error_row(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from agentiqa_cli.imaging import discover as disc

    d = tmp_path / "d"
    save_rgb(d / "a.png", natural_like(48, 48))
    save_rgb(d / "locked" / "b.png", natural_like(48, 48))
    real = os.scandir

    def scandir(path: object = ".") -> object:  # what chmod 0 does for a non-root user
        if Path(str(path)).name == "locked":
            raise PermissionError(13, "Permission denied", str(path))
        return real(path)  # type: ignore[arg-type]

    monkeypatch.setattr(os, "scandir", scandir)
    jobs = disc.pair(disc.discover([str(d)], recursive=True), None)
    by = {j.image.name: j for j in jobs}
    assert by["a.png"].error == ""
    assert "cannot list folder" in by["locked"].error
    assert "ermission denied" in by["locked"].error


def _deny_listing(monkeypatch: pytest.MonkeyPatch, *names: str) -> None:
    """Listing a folder of one of these names fails as an unreadable folder's does."""
    real = os.scandir

    def scandir(path: object = ".") -> object:
        if Path(str(path)).name in names:
            raise PermissionError(13, "Permission denied", str(path))
        return real(path)  # type: ignore[arg-type]

    monkeypatch.setattr(os, "scandir", scandir)


@pytest.mark.parametrize(
    ("pattern", "recursive"),
    [("d/**/*.png", True), ("d/**", True), ("d/*", False)],
)
def test_a_folder_a_pattern_cannot_search_gets_an_error_row(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, pattern: str, recursive: bool
) -> None:
    """glob skips a folder it cannot list without a word: when the pattern matched it or
    its recursive part (``**`` with -R) had to search it, it is one input with an error
    row, as below a folder given with -R, not images silently missing."""
    from agentiqa_cli.imaging import discover as disc

    d = tmp_path / "d"
    save_rgb(d / "a.png", natural_like(48, 48))
    save_rgb(d / "locked" / "b.png", natural_like(48, 48))
    save_rgb(d / "ok" / "c.png", natural_like(48, 48))
    save_rgb(d / ".hidden" / "e.png", natural_like(48, 48))  # glob's `*` never looks there
    _deny_listing(monkeypatch, "locked", ".hidden")
    monkeypatch.chdir(tmp_path)
    warnings: list[str] = []
    jobs = disc.pair(disc.discover([pattern], recursive=recursive, warnings=warnings), None)
    by = {j.image.as_posix(): j.error for j in jobs}
    assert "d/ok/c.png" in by and by["d/ok/c.png"] == ""
    assert by["d/locked"].startswith("d/locked: cannot list folder: Permission denied")
    assert warnings == []
    if pattern.endswith(".png"):  # (`d/**` matches d/ itself: walked whole, as with -R)
        assert not any("hidden" in name for name in by)
    # a pattern whose only folder cannot be searched is that folder's error, not "no match"
    jobs = disc.pair(disc.discover(["d/locked/*.png"], recursive=recursive), None)
    assert [(j.image.as_posix(), "cannot list folder" in j.error) for j in jobs] == [
        ("d/locked", True)
    ]


# -- 3: non-finite log-probabilities are missing, not confident ------------------------------
@pytest.mark.parametrize("bad", [math.nan, -math.inf, math.inf])
def test_nonfinite_level_logprob_is_treated_as_missing(tmp_path: Path, bad: float) -> None:
    from agentiqa_cli.agent.fusion import fuse
    from agentiqa_cli.records import level_of
    from agentiqa_cli.vlm.fake import ScriptedVLM
    from tests.test_agent import (
        EXAMINE_NOISE,
        PLAN_GLOBAL,
        SELECT_NOISE,
        make_session,
        pairs,
        run_agent,
        summary_reply,
    )

    session = make_session(tmp_path)
    lps = {"excellent": bad, "good": -1.5}  # the sampled level's value is broken
    vlm = ScriptedVLM({"planner": PLAN_GLOBAL, "examine": EXAMINE_NOISE, "select": SELECT_NOISE,
                       "summarize": lambda r: summary_reply("excellent", lps=lps)})  # fmt: skip
    trace = tmp_path / "t.jsonl"
    (result,) = run_agent(session, vlm, pairs(tmp_path, 1, session), trace=trace)
    assert result.status == "ok"
    # exactly what a reply without log-probabilities gives: the tools, uniform p
    assert result.score == pytest.approx(fuse(result.tools[0].norm, None))
    assert 1.0 <= result.score <= 5.0 and result.level == level_of(result.score)
    final = [json.loads(line) for line in trace.read_text().splitlines()][-1]
    assert final["step"] == "final" and final["parsed"]["p"] is None
    assert "non-finite" in final["parsed"]["logprobs_note"]


def test_fusion_never_leaves_the_scale_on_nonfinite_input() -> None:
    from agentiqa_cli.agent.fusion import fuse, softmax_levels

    assert softmax_levels({"good": math.nan, "fair": -1.0}) == pytest.approx(
        softmax_levels({"fair": -1.0})
    )
    for p in ([math.nan] * 5, [0.0, math.inf, 0.0, 0.0, 0.0]):
        for qbar in (None, 3.2):
            assert 1.0 <= fuse(qbar, p) <= 5.0
    assert fuse(None, [math.nan] * 5) == pytest.approx(3.0)  # uniform
    with pytest.raises(ValueError):
        fuse(math.nan, None)


def test_http_backend_keeps_nonfinite_sampled_logprob_visible() -> None:
    """The wire format's NaN/-Infinity (Python's json accepts both) reaches the fusion as
    non-finite, where it is treated as missing, never as a number."""
    from agentiqa_cli.agent.fusion import level_logprobs
    from agentiqa_cli.vlm.base import VLMReply
    from agentiqa_cli.vlm.http import _logprobs

    wire = json.loads(
        '{"content":[{"token":"good","logprob":NaN,"top_logprobs":'
        '[{"token":"good","logprob":NaN},{"token":"fair","logprob":-Infinity}]}]}'
    )
    tokens, top = _logprobs(wire)
    assert tokens == ["good"] and top is not None
    reply = VLMReply(text="good", tokens=tokens, top_logprobs=top)
    assert level_logprobs(reply) is None


# -- 7: credentials in --vlm URLs never reach a file or the terminal ------------------------
def test_url_credentials_never_leak(tmp_path: Path) -> None:
    import socket

    save_rgb(tmp_path / "a.png", natural_like(48, 48))
    with socket.socket() as s:  # a port nobody listens on: connection refused at once
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    url = f"http://alice:pw-SECRET1@127.0.0.1:{port}/v1?token=SECRET2&x=1"
    r = run("assess", "a.png", "--vlm", url, "--model", "m", "-o", "out.csv",
            "--trace", "t.jsonl", cwd=tmp_path, AGENTIQA_RETRIES="0")  # fmt: skip
    assert r.returncode == 3, r.stderr
    (row,) = rows(tmp_path / "out.csv")
    assert row["status"] == "error" and "cannot reach" in row["error"]
    assert "127.0.0.1" in row["error"] and "***" in row["error"]
    texts = [r.stdout, r.stderr, (tmp_path / "out.csv").read_text()]
    texts.append((tmp_path / "t.jsonl").read_text())
    for text in texts:
        for secret in ("SECRET1", "SECRET2", "alice"):
            assert secret not in text, (secret, text)


def test_http_backend_redacts_what_the_server_echoes() -> None:
    from agentiqa_cli.vlm.http import OpenAIHTTPVLM

    vlm = OpenAIHTTPVLM("http://bob:hunter2@127.0.0.1:9/v1?api_key=tok-XYZ", model="m")
    try:
        echoed = vlm._redact("bad key tok-XYZ for bob:hunter2 at http://bob:hunter2@127.0.0.1:9/v1")
        assert "tok-XYZ" not in echoed and "hunter2" not in echoed
        assert "hunter2" not in repr(vlm) and "tok-XYZ" not in repr(vlm)
        # the query string still goes to the server, after the endpoint's path
        assert vlm._url("/models") == "http://bob:hunter2@127.0.0.1:9/v1/models?api_key=tok-XYZ"
    finally:
        asyncio.run(vlm.aclose())


# -- 8: CSV injection, split rows, terminal escapes -----------------------------------------
NASTY = ["=HYPERLINK(x).png", "+sum.png", "-minus.png", "@at.png", "cr\rsplit.png",
         "\x1b[2J\x1b]0;owned\x07title.png", "plain.png"]  # fmt: skip


def test_csv_cells_are_neutralised_and_rows_never_split(tmp_path: Path) -> None:
    for name in NASTY:
        save_rgb(tmp_path / name, natural_like(48, 48))
    r = run("score", ".", "-t", "sharpness", "-o", "out.csv", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    got = rows(tmp_path / "out.csv")
    assert len(got) == len(NASTY)
    assert {row["image"] for row in got} == {f"'{n}" if n[0] in "=+-@" else n for n in NASTY}
    for row in got:  # no cell a spreadsheet would evaluate
        assert not any(v.startswith(("=", "+", "-", "@")) for v in row.values()), row
    # the terminal never receives a raw control character from a file name
    for text in (r.stdout, r.stderr):
        assert "\x1b" not in text and "\x07" not in text and "\r" not in text
    assert "\\x1b[2J" in r.stdout and "cr\\rsplit.png" in r.stdout
    # resume finds every row: nothing is processed again
    r = run("score", ".", "-t", "sharpness", "-o", "out.csv", "--resume", cwd=tmp_path)
    assert r.returncode == 0 and f"0 processed, {len(NASTY)} skipped" in r.stdout, r.stdout


def test_numbers_stay_numbers_in_csv() -> None:
    from agentiqa_cli.io.results import columns_for, row_of
    from agentiqa_cli.records import Result, ToolScore

    res = Result(image="-x.png", key="k", score=1.5, answer="=1+1", error="")
    res.tools = [ToolScore(tool="t", raw=-0.5, norm=1.25)]
    row = dict(zip(columns_for(["t"]), row_of(res, columns_for(["t"])), strict=True))
    assert row["t_raw"] == "-0.50000" and row["t_norm"] == "1.2500"
    assert row["image"] == "'-x.png" and row["answer"] == "'=1+1"


def test_visible_renders_control_characters() -> None:
    from agentiqa_cli.cli.render import visible

    assert visible("a\x1b[2Jb\r\n\x07\x9b\x7fé") == "a\\x1b[2Jb\\r\\n\\x07\\x9b\\x7fé"
    assert visible("plain name.png") == "plain name.png"


# -- 14: gates and counts that tell the truth ------------------------------------------------
def test_no_input_is_a_usage_error_with_a_hint(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    save_rgb(tmp_path / "nested" / "sub" / "a.png", natural_like(48, 48))
    for folder in ("empty", "nested"):
        r = run("score", folder, "-t", "sharpness", "--fail-under", "3", "-o", "o.csv",
                cwd=tmp_path)  # fmt: skip
        assert r.returncode == 2, (folder, r.stdout, r.stderr)
        assert "no images" in r.stderr and "-R" in r.stderr
    r = run("score", "nested", "-R", "-t", "sharpness", "-o", "o.csv", "-q", cwd=tmp_path)
    assert r.returncode == 0, r.stderr


def test_json_gate_fails_when_a_row_could_not_be_scored(tmp_path: Path) -> None:
    save_rgb(tmp_path / "a.png", natural_like(48, 48))
    (tmp_path / "bad.png").write_bytes(b"not an image")
    r = run("score", "a.png", "bad.png", "-t", "sharpness", "--fail-under", "1", "--json",
            "-o", "o.csv", cwd=tmp_path)  # fmt: skip
    summary = json.loads(r.stdout)["summary"]
    assert r.returncode == 3 and summary["exit_code"] == 3
    assert summary["gate_failed"] is True and summary["errors"] == 1


def test_a_requested_tool_that_cannot_run_makes_an_error_row(photo: Path) -> None:
    from agentiqa_cli.batch import Decoder, Pair
    from agentiqa_cli.imaging.discover import Job
    from agentiqa_cli.records import ToolScore
    from agentiqa_cli.scoring import ToolScorer

    class Runner:
        def run_many(self, cards: object, image: object, ref: object) -> list[ToolScore]:
            return [
                ToolScore(tool="sharpness", raw=0.5, norm=4.0),
                ToolScore(tool="brisque", error="brisque: weights not cached (offline)"),
            ]

    job = Job(image=photo, root=photo.parent)
    image, _ = Decoder(10**8).decode(job)
    scorer = ToolScorer(Runner(), [], "mean")  # type: ignore[arg-type]
    result = asyncio.run(scorer(Pair(job, image, None, "k")))
    assert result.status == "error" and result.transient  # --resume tries it again
    assert "brisque" in result.error and result.score is None
    assert [t.norm for t in result.tools] == [4.0, None]  # what ran is still reported


def test_error_rows_count_the_calls_made(photo: Path) -> None:
    from agentiqa_cli.batch import Decoder, Pair, RunSink, run_batch
    from agentiqa_cli.errors import VLMError
    from agentiqa_cli.imaging.discover import Job
    from agentiqa_cli.io.trace import NO_TRACE
    from agentiqa_cli.records import Result, Usage

    async def process(pair: Pair) -> Result:
        pair.usage.add(Usage(calls=2, prompt_tokens=100, completion_tokens=20))
        raise VLMError("summarize: reply broke the schema")

    summary = asyncio.run(
        run_batch(
            [Job(image=photo, root=photo.parent)],
            process,
            fingerprint="f",
            decoder=Decoder(10**8),
            sink=RunSink(NO_TRACE.writer),
        )
    )
    (row,) = summary.results
    assert row.status == "error" and row.usage.calls == 2
    assert row.usage.prompt_tokens + row.usage.completion_tokens == 120


# -- 13: configuration that cannot work is refused at load -----------------------------------
@pytest.mark.parametrize("bad", [".nan", ".inf", "-.inf"])
def test_calibration_with_non_finite_parameters_is_exit_2(tmp_path: Path, bad: str) -> None:
    save_rgb(tmp_path / "a.png", natural_like(48, 48))
    (tmp_path / "cal.yaml").write_text(
        f"tools:\n  sharpness:\n    params: [4.0, {bad}, 0.1, 0.0, 3.0]\n    source: test\n"
    )
    r = run("score", "a.png", "-t", "sharpness", "--calibration", "cal.yaml", "-o", "o.csv",
            cwd=tmp_path)  # fmt: skip
    assert r.returncode == 2, (r.stdout, r.stderr)
    assert "cal.yaml" in r.stderr and "finite" in r.stderr
    assert not (tmp_path / "o.csv").exists()


@pytest.mark.parametrize("flag", ["--fail-under", "--fail-mean-under"])
def test_a_nan_gate_is_refused(tmp_path: Path, flag: str) -> None:
    save_rgb(tmp_path / "a.png", natural_like(48, 48))
    r = run("score", "a.png", "-t", "sharpness", flag, "nan", "-o", "o.csv", cwd=tmp_path)
    assert r.returncode == 2 and "finite" in r.stderr, (r.stdout, r.stderr)


# -- 15: process behaviour -----------------------------------------------------------------
def _popen(*args: str | Path, cwd: Path, **kw: object) -> subprocess.Popen[str]:
    env = dict(os.environ, PYTHONPATH=str(ROOT), NO_COLOR="1")
    return subprocess.Popen(
        [sys.executable, "-m", "agentiqa_cli", *map(str, args)],
        cwd=cwd, env=env, text=True, **kw,  # type: ignore[call-overload]
    )  # fmt: skip


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="sets a pipe's size")
def test_ctrl_c_exits_130_with_the_resume_hint(tmp_path: Path) -> None:
    """Two things made this flaky. A child inherits an ignored SIGINT (a runner started in
    the background by a non-interactive shell ignores it, and so does everything under it,
    Python included): the run never saw the signal and scored all 200 images, exit 0. And
    the batch could finish before the signal arrived. Here the child starts with SIGINT at
    its default, as a foreground job in a terminal does, and its stderr is a 4 KiB pipe
    that nobody reads until the signal is sent: the progress lines fill it long before the
    last image, so the run is blocked mid-batch when SIGINT arrives, however slow the
    machine is."""
    import fcntl
    import signal

    for i in range(200):
        save_rgb(tmp_path / "d" / f"{i:03d}.png", natural_like(64, 64, seed=i))
    read_end, write_end = os.pipe()
    fcntl.fcntl(write_end, getattr(fcntl, "F_SETPIPE_SZ", 1031), 4096)
    p = _popen("score", "d", "-t", "sharpness", "-j", "1", "-o", "o.csv", cwd=tmp_path,
               stdout=subprocess.DEVNULL, stderr=write_end,
               preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))  # fmt: skip
    os.close(write_end)
    with os.fdopen(read_end, encoding="utf-8") as stderr:
        first = stderr.readline()  # the first progress line: the batch is running
        assert first.startswith("[1/200]"), first
        p.send_signal(signal.SIGINT)
        err = stderr.read()
    p.wait(timeout=60)
    assert p.returncode == 130, err[-500:]
    assert "interrupted" in err and "--resume" in err
    assert len(rows(tmp_path / "o.csv")) < 200


def test_broken_pipe_keeps_the_runs_own_exit_code(tmp_path: Path) -> None:
    save_rgb(tmp_path / "a.png", natural_like(48, 48))
    (tmp_path / "bad.png").write_bytes(b"nope")
    # a reader that stops at once (`| head -0`): writing the table raises EPIPE
    p = _popen("score", "a.png", "bad.png", "-t", "sharpness", "-o", "o.csv", cwd=tmp_path,
               stdout=subprocess.PIPE, stderr=subprocess.PIPE)  # fmt: skip
    assert p.stdout is not None and p.stderr is not None
    p.stdout.close()
    err = p.stderr.read()
    p.wait(timeout=60)
    assert p.returncode == 3, err  # a row failed: 3, not the gate's 1
    assert "Traceback" not in err and "BrokenPipe" not in err
    assert len(rows(tmp_path / "o.csv")) == 2


def test_unknown_synth_kind_is_a_usage_error_with_a_suggestion(tmp_path: Path) -> None:
    save_rgb(tmp_path / "clean" / "a.png", natural_like(64, 64))
    r = run("eval-bench", "synth", "clean", "--kinds", "blurr", "-t", "sharpness",
            "--no-assess", "--out-dir", "o", cwd=tmp_path)  # fmt: skip
    assert r.returncode == 2, r.stderr
    assert "blurr" in r.stderr and "did you mean" in r.stderr


def test_assess_fix_counts_each_call_once(photo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The image's usage record is shared by the fix step and both agent runs of
    ``assess --fix quality``: each call is counted once, on ok and error rows alike."""
    from types import SimpleNamespace

    from agentiqa_cli.batch import Decoder, Pair
    from agentiqa_cli.imaging.discover import Job
    from agentiqa_cli.imperfect import apply as fixing
    from agentiqa_cli.imperfect.roles import Decision
    from agentiqa_cli.records import Result, Usage

    async def decide(asker: object, pair: Pair, query: str) -> Decision:
        pair.usage.add(Usage(calls=1, prompt_tokens=10))
        return Decision([], [SimpleNamespace(tool="lum")], [])  # type: ignore[list-item]

    async def apply(x: object, ops: object, pair: Pair) -> tuple[object, list[object], list[str]]:
        return x, [], []

    class Agent:
        ask, query = None, "q"

        async def __call__(self, pair: Pair) -> Result:
            pair.usage.add(Usage(calls=1, prompt_tokens=100))
            result = pair.result()
            result.usage = pair.usage
            return result

    monkeypatch.setattr(fixing, "_decide", decide)
    monkeypatch.setattr(fixing, "_apply", apply)
    job = Job(image=photo, root=photo.parent)
    image, _ = Decoder(10**8).decode(job)
    pair = Pair(job, image, None, "k")
    result = asyncio.run(fixing.FixingAgent(Agent(), "quality")(pair))  # type: ignore[arg-type]
    assert (result.usage.calls, result.usage.prompt_tokens) == (3, 210)


@pytest.mark.parametrize(
    "text", ["=x.png", "'=x.png", "''@a", "-0.5", "-x", "'plain", "plain", "", "+1e3", "\tt"]
)
def test_neutralised_cells_read_back_exactly(text: str) -> None:
    from agentiqa_cli.io.results import original_cell, safe_cell

    assert original_cell(safe_cell(text)) == text
    assert not safe_cell(text).startswith(("=", "+", "@", "\t")) or text == "+1e3"


def test_evaluate_resume_finds_rows_of_formula_like_names(tmp_path: Path) -> None:
    from agentiqa_cli.evaluate.state import read_rows
    from agentiqa_cli.io.results import ResultsWriter, columns_for
    from agentiqa_cli.records import Result

    out = tmp_path / "r.csv"
    with ResultsWriter(out, columns_for(None)) as w:
        w.write(Result(image="=cmd.png", key="k1", score=3.5, answer="-bad"))
    (row,) = read_rows(out).values()
    assert row.image == "=cmd.png" and row.answer == "-bad" and row.score == 3.5


def test_benchmark_csvs_neutralise_user_text_too(tmp_path: Path) -> None:
    from agentiqa_cli.bench.mcq import MCQAnswer, MCQReport, write_mcq_csv

    report = MCQReport(
        tracks=[],
        answers=[MCQAnswer(id="@q1", track="t", answer="A", error="=HYPERLINK(x)")],
    )
    write_mcq_csv(report, tmp_path / "a.csv")
    (row,) = rows(tmp_path / "a.csv")
    assert row["id"] == "'@q1" and row["error"] == "'=HYPERLINK(x)" and row["correct"] == "0"


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
def test_report_facts_never_read_a_fifo_or_a_device(tmp_path: Path) -> None:
    import threading

    from agentiqa_cli.report.facts import measure

    os.mkfifo(tmp_path / "fifo.png")
    (tmp_path / "zero.png").symlink_to("/dev/zero")
    got: dict[str, str] = {}

    def go() -> None:
        for name in ("fifo.png", "zero.png"):
            got[name] = measure(tmp_path / name).error or ""

    t = threading.Thread(target=go, daemon=True)  # a hang fails here, not the whole suite
    t.start()
    t.join(timeout=20)
    assert not t.is_alive(), "measure() hung"
    assert all("not a regular file" in e for e in got.values()), got


def test_report_reads_formula_like_names_back(tmp_path: Path) -> None:
    from agentiqa_cli.io.results import ResultsWriter, columns_for
    from agentiqa_cli.records import Result
    from agentiqa_cli.report.rows import read_rows

    out = tmp_path / "r.csv"
    with ResultsWriter(out, columns_for(None)) as w:
        w.write(Result(image="-dark.png", key="k1", score=2.5))
    (row,) = read_rows(out)
    assert row.image == "-dark.png" and row.score == 2.5


@pytest.mark.parametrize("bad", ["NaN", "-Infinity"])
def test_http_vlm_with_broken_logprobs_end_to_end(tmp_path: Path, bad: str) -> None:
    """`assess` against an OpenAI-compatible server whose level token carries NaN or
    -Infinity: an ok row whose score is the tools' own, never 1.000 "bad" or an error."""
    from tests.test_agent import EXAMINE_NOISE, PLAN_GLOBAL, SELECT_NOISE
    from tests.test_vlm_http_faults import Reply, ScriptedServer, completion

    summary = '{"level":"excellent","answer":"fine","reasoning":"r","sufficient":true}'
    tokens = ['{"', "level", '":"', "excellent", '","', "answer", '":"', "fine", '"}']
    content = [{"token": t, "logprob": -0.01, "top_logprobs": []} for t in tokens]
    content[3] = {"token": "excellent", "logprob": "BAD",
                  "top_logprobs": [{"token": "excellent", "logprob": "BAD"},
                                   {"token": "good", "logprob": -2.0}]}  # fmt: skip
    body = json.dumps(completion(summary, logprobs={"content": content}))
    raw = body.replace('"BAD"', bad).encode()  # what a broken server sends
    server = ScriptedServer()
    server.queue(
        Reply(body={"object": "list", "data": [{"id": "m", "object": "model"}]}),
        Reply(body=completion(json.dumps(PLAN_GLOBAL))),
        Reply(body=completion(json.dumps(EXAMINE_NOISE))),
        Reply(body=completion(json.dumps(SELECT_NOISE))),
        Reply(raw=raw),
    )
    save_rgb(tmp_path / "a.png", natural_like(64, 80))
    with server:
        r = run("assess", "a.png", "--vlm", server.url, "--model", "m", "-t", "piqe",
                "--vlm-fallback", "rules", "-o", "out.csv", "-j", "1", cwd=tmp_path)  # fmt: skip
    (row,) = rows(tmp_path / "out.csv")
    assert r.returncode == 0, (row, r.stderr)
    assert row["status"] == "ok" and row["error"] == ""
    score = float(row["score"])
    assert 1.0 <= score <= 5.0 and row["level"] != "" and score != 1.0


def test_a_folder_an_intermediate_wildcard_crosses_is_a_warning(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """'home/*/photos/*.png' crosses other users' homes: one it cannot list is said on
    stderr (a warning), not an error row that makes a normal run exit 3; -q hides it."""
    import pandas as pd

    from agentiqa_cli.errors import ConfigError
    from agentiqa_cli.imaging import discover as disc
    from tests.test_cli_score import invoke

    save_rgb(tmp_path / "home" / "me" / "photos" / "a.png", natural_like(48, 48))
    save_rgb(tmp_path / "home" / "me" / "photos" / "locked" / "b.png", natural_like(48, 48))
    (tmp_path / "home" / "bob").mkdir()
    _deny_listing(monkeypatch, "bob", "locked")
    monkeypatch.chdir(tmp_path)
    assert invoke("score", "home/*/photos/*.png", "-t", "sharpness", "-o", "r.csv")[0] == 0
    err = " ".join(capsys.readouterr().err.split())
    assert "warning: home/*/photos/*.png: cannot list home/bob" in err
    assert pd.read_csv("r.csv")["image"].tolist() == ["home/me/photos/a.png"]
    # a folder the recursive part (`**` with -R) had to search is an input: an error row
    warnings: list[str] = []
    found = disc.discover(["home/*/photos/**/*.png"], recursive=True, warnings=warnings)
    jobs = {j.image.as_posix(): j.error for j in disc.pair(found, None)}
    assert jobs["home/me/photos/a.png"] == "" and "cannot list" in jobs["home/me/photos/locked"]
    assert "home/bob" not in jobs and len(warnings) == 1 and "home/bob" in warnings[0]
    # nothing else found: the reason, not "no match"
    with pytest.raises(ConfigError, match="cannot list home/bob"):
        disc.discover(["home/*/music/*.png"])
