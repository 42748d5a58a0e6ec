"""`-q` is quiet, not silent: each error row is one line on stderr (path and reason), and a
failed gate says its summary line, so a cron job's mail says what went wrong."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from rich.console import Console

from agentiqa_cli.cli import render as ui
from tests.conftest import scene
from tests.test_cli_score import invoke


@pytest.fixture
def upload(tmp_path: Path) -> Path:
    d = tmp_path / "upload"
    d.mkdir()
    for i in range(3):
        scene(i, 160, 120).save(d / f"ok{i}.png")
    (d / "cut.jpg").write_bytes((d / "ok0.png").read_bytes()[:300])  # a truncated upload
    return d


def test_each_error_row_is_one_line_on_stderr(
    upload: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out = invoke("score", upload, "-o", tmp_path / "s.csv", "-q", "--tools", "sharpness")
    err = capsys.readouterr().err
    assert code == 3 and out == ""
    lines = err.splitlines()
    assert len(lines) == 1, err  # the one failed file, nothing else
    assert lines[0].startswith(f"error: {upload / 'cut.jpg'}: ") and "truncated" in lines[0]


def test_a_failed_gate_says_its_summary_line(
    upload: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (upload / "cut.jpg").unlink()
    code, out = invoke("score", upload, "-o", tmp_path / "s.csv", "-q", "--tools", "sharpness",
                       "--fail-mean-under", "5")  # fmt: skip
    err = capsys.readouterr().err
    assert code == 1 and out == ""
    assert "quality gate failed: 3 processed, 0 skipped (resume), 0 errors, mean score" in err
    assert str(tmp_path / "s.csv") in err and "quality gate: mean" in err
    code, _ = invoke("score", upload, "-o", tmp_path / "s.csv", "-q", "--tools", "sharpness")
    assert code == 0 and capsys.readouterr().err == ""  # a passing run stays silent


def test_evaluate_says_its_verdict_when_its_gate_fails(
    upload: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (upload / "cut.jpg").unlink()
    code, out = invoke("evaluate", upload, "-o", tmp_path / "e.csv", "-q", "--max-samples", "3",
                       "--max-rounds", "1", "--fail-under-tier", "Very High")  # fmt: skip
    err = capsys.readouterr().err
    assert code == 1 and out == ""
    assert "quality gate failed: " in err and "overall" in err


def test_an_error_is_said_above_the_progress_bar(monkeypatch: pytest.MonkeyPatch) -> None:
    buf = io.StringIO()
    monkeypatch.setattr(ui, "err", Console(file=buf, force_terminal=True, width=200))
    ui.set_quiet(False)
    reporter = ui.Reporter(2, "score")
    with reporter.running():
        reporter.advance("a.png", "ok", "3.10")
        reporter.advance("b\x1b.png", "error", "b\x1b.png: not a readable image")
    text = buf.getvalue()
    assert "error: b\\x1b.png: not a readable image" in text and "a.png" not in text


def test_no_live_bar_when_rows_stream_to_the_terminal(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """`--format csv` at a prompt: a live bar on stderr would be redrawn through the rows
    printed on stdout, so progress comes as plain lines."""
    monkeypatch.setattr(ui, "err", Console(file=io.StringIO(), force_terminal=True))
    monkeypatch.setattr(ui, "out", Console(file=io.StringIO(), force_terminal=True))
    ui.set_quiet(False)
    assert ui.rows_to_terminal(True) and not ui.rows_to_terminal(False)
    reporter = ui.Reporter(1, "score", live=not ui.rows_to_terminal(True))
    with reporter.running():
        assert reporter._progress is None
        reporter.advance("a.png", "ok", "3.10")
    assert "[1/1] ok a.png 3.10" in capsys.readouterr().err


def test_quiet_silences_the_libraries_and_loud_brings_them_back(
    capsys: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture
) -> None:
    import logging
    import warnings

    from agentiqa_cli.tools.runner import _STDOUT

    def chatter() -> None:
        warnings.warn("overflow in exp", RuntimeWarning, stacklevel=1)
        logging.getLogger("ray.data").warning("Ray says hello")
        with _STDOUT.prints_to_stderr():
            print('Downloading: "https://example.org/w.pth"')

    ui.set_quiet(True)
    with warnings.catch_warnings(record=True) as seen:
        chatter()
    captured = capsys.readouterr()
    assert not seen and "Ray says hello" not in caplog.text
    assert captured.out == "" and "Downloading" not in captured.err
    ui.set_quiet(False)
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        chatter()
    captured = capsys.readouterr()
    assert seen and "Ray says hello" in caplog.text
    assert captured.out == "" and "Downloading" in captured.err
