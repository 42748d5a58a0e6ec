"""What the terminal shows: piped tables that keep names whole, the answer column, shell
completion, and a `tools check` that does not wait on the network."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pandas as pd
import pytest
from typer.testing import CliRunner

from agentiqa_cli.cli import app
from agentiqa_cli.resources import default_cards_dir
from agentiqa_cli.tools.cards import load_cards
from agentiqa_cli.tools.weights import hub_offline, no_downloads
from tests.conftest import natural_like, save_rgb

LONG = "holiday_photos_2024_summer_trip_to_the_mountains_with_the_whole_family_IMG_0042.png"
DEFAULT_NR = [c.name for c in load_cards(default_cards_dir()).default_set(has_reference=False)]


@pytest.fixture
def runner(monkeypatch: pytest.MonkeyPatch) -> CliRunner:
    monkeypatch.delenv("COLUMNS", raising=False)
    return CliRunner()  # its stdout is not a TTY, as in `agentiqa ... > out.txt`


@pytest.fixture
def long_named(tmp_path: Path) -> Path:
    save_rgb(tmp_path / "in" / LONG, natural_like(seed=3))
    return tmp_path / "in"


def _line_with(text: str, needle: str) -> str:
    lines = [line for line in text.splitlines() if needle in line]
    assert lines, f"{needle!r} is not on any one line of:\n{text}"
    return lines[0]


def test_piped_tables_keep_file_and_tool_names_on_one_line(
    runner: CliRunner, long_named: Path, tmp_path: Path
) -> None:
    r = runner.invoke(app, ["score", str(long_named), "-o", str(tmp_path / "s.csv")])
    assert r.exit_code == 0, r.output
    row = _line_with(r.stdout, LONG)
    for name in DEFAULT_NR:
        assert f" {name} " in row  # "sharpness 2.6 noise 5.0 ..." all on the image's line
    r = runner.invoke(app, ["tools", "list"])
    assert "Blurs, Color distortions, Compression, Noise, Brightness change, Sharpness" in (
        _line_with(r.output, "topiq_fr")
    )


def test_columns_still_bounds_the_table_when_set(
    runner: CliRunner, long_named: Path, tmp_path: Path
) -> None:
    r = runner.invoke(
        app, ["score", str(long_named), "-o", str(tmp_path / "s.csv")], env={"COLUMNS": "70"}
    )
    assert r.exit_code == 0, r.output
    table = [line for line in r.stdout.splitlines() if line[:1] in "┏┃┡│└"]
    assert table and max(len(line) for line in table) <= 70


def test_assess_with_a_query_shows_the_answer(
    runner: CliRunner, long_named: Path, tmp_path: Path
) -> None:
    out = tmp_path / "a.csv"
    query = "Is the image noisy?"
    r = runner.invoke(app, ["assess", str(long_named), "--query", query, "-o", str(out)])
    assert r.exit_code in (0, 3), r.output
    answer = str(pd.read_csv(out)["answer"][0])
    assert answer and answer != "nan"
    header = _line_with(r.stdout, "answer")
    assert header.index("level") < header.index("answer")
    assert answer in _line_with(r.stdout, LONG)


def test_completion_can_be_shown_and_installed(
    runner: CliRunner, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # no process-tree shell detection in tests: the shell is named on the command line
    monkeypatch.setenv("_TYPER_COMPLETE_TEST_DISABLE_SHELL_DETECTION", "1")
    r = runner.invoke(app, ["--show-completion", "bash"], prog_name="agentiqa")
    assert r.exit_code == 0, r.output
    assert "_AGENTIQA_COMPLETE=complete_bash" in r.output
    assert "complete -o default -F _agentiqa_completion agentiqa" in r.output
    r = runner.invoke(
        app, ["--install-completion", "bash"], prog_name="agentiqa", env={"HOME": str(tmp_path)}
    )
    assert r.exit_code == 0, r.output
    script = tmp_path / ".bash_completions" / "agentiqa.sh"
    assert "_AGENTIQA_COMPLETE" in script.read_text()
    assert str(script) in (tmp_path / ".bashrc").read_text()


def test_tools_check_offline_reports_missing_weights_quickly(
    runner: CliRunner, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    t0 = time.monotonic()
    r = runner.invoke(app, ["tools", "check", "sharpness", "psnr", "musiq", "--json"])
    assert time.monotonic() - t0 < 120
    rows = {row["tool"]: row for row in json.loads(r.stdout)}
    assert r.exit_code == (0 if rows["musiq"]["ready"] else 1), r.output
    assert rows["sharpness"]["ready"] and rows["sharpness"]["needs"] == ""
    assert rows["psnr"]["ready"] and rows["psnr"]["needs"] == "reference"
    assert rows["musiq"]["needs"] == "weights"
    if not rows["musiq"]["ready"]:  # unless musiq's weights happen to be cached here
        assert "not downloaded offline" in rows["musiq"]["detail"]
    assert "offline" in r.stderr
    assert "[3/3]" in r.stderr  # progress, one line per tool when stderr is not a TTY


def test_offline_detection(monkeypatch: pytest.MonkeyPatch) -> None:
    import socket

    for name in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE"):
        monkeypatch.delenv(name, raising=False)

    def unreachable(address: object, timeout: float) -> socket.socket:
        raise OSError("no route to host")

    monkeypatch.setattr(socket, "create_connection", unreachable)
    assert hub_offline()
    monkeypatch.setattr(socket, "create_connection", lambda a, timeout: socket.socket())
    assert not hub_offline()
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    assert hub_offline()


def test_no_downloads_turns_hub_fetches_into_immediate_errors(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    hub = pytest.importorskip("huggingface_hub")
    from huggingface_hub import constants

    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
    with no_downloads():
        t0 = time.monotonic()
        with pytest.raises(Exception, match=r"(?i)offline|cannot find|local"):
            hub.hf_hub_download("nobody/nothing", "weights.bin", cache_dir=tmp_path)
        assert time.monotonic() - t0 < 5  # no retries with back-off
    assert constants.HF_HUB_OFFLINE is False


def test_quiet_prints_only_errors_and_the_json_asked_for(
    runner: CliRunner, long_named: Path, tmp_path: Path
) -> None:
    """-q: no table, summary line, progress, note or warning; a failed gate is an error and
    is still said; --json is asked for and still printed."""
    out = str(tmp_path / "s.csv")
    for cmd in (["score", str(long_named)], ["assess", str(long_named)]):
        r = runner.invoke(app, [*cmd, "-o", out, "-q", "--force"])
        assert r.exit_code == 0 and r.stdout == "" and r.stderr == "", (cmd, r.output)
    r = runner.invoke(app, ["score", str(long_named), "-o", out, "-q", "--fail-under", "4.99"])
    assert r.exit_code == 1 and r.stdout == ""
    assert r.stderr.startswith("error: quality gate") and "warning" not in r.stderr
    r = runner.invoke(app, ["score", str(long_named), "-o", out, "-q", "--json"])
    assert r.exit_code == 0 and json.loads(r.stdout)["results"][0]["status"] == "ok"
    assert r.stderr == ""
    r = runner.invoke(app, ["tools", "check", "sharpness", "-q"])
    assert r.exit_code == 0 and r.output == "", r.output
    # and without -q, the table and the rules backend's note are there
    r = runner.invoke(app, ["assess", str(long_named), "-o", out, "--force"])
    assert LONG in r.stdout and "rules backend" in r.stderr


def test_tools_check_exits_1_when_a_named_tool_is_not_ready(
    runner: CliRunner, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A named tool that cannot run here is an error: said under -q too, exit 1; all tools
    (none named) is a report, exit 0."""
    from agentiqa_cli.tools.runner import ToolRunner

    real = ToolRunner.availability

    def psnr_broken(self: ToolRunner, card: object) -> tuple[bool, str]:
        if getattr(card, "name", "") == "psnr":
            return False, "weights missing"
        return real(self, card)  # type: ignore[arg-type]

    monkeypatch.setattr(ToolRunner, "availability", psnr_broken)
    r = runner.invoke(app, ["tools", "check", "sharpness", "psnr", "-q"])
    assert r.exit_code == 1 and r.stdout == "", r.output
    assert r.stderr.startswith("error: psnr cannot run here: weights missing")
    assert "sharpness" not in r.stderr
    r = runner.invoke(app, ["tools", "check", "psnr", "--json", "-q"])
    assert r.exit_code == 1 and json.loads(r.stdout)[0]["ready"] is False
    r = runner.invoke(app, ["tools", "check", "sharpness", "-q"])
    assert r.exit_code == 0 and r.output == "", r.output


def test_quiet_is_one_mode_that_notes_and_progress_read(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """-q is set once (set_quiet); note, warn and the progress lines read it: no second
    flag per call that could disagree with it."""
    from agentiqa_cli.cli import render as ui

    try:
        for quiet in (True, False):
            ui.set_quiet(quiet)
            ui.note("a note")
            reporter = ui.Reporter(1, "x")
            with reporter.running():
                reporter.advance("img.png", "ok")
            err = capsys.readouterr().err
            assert (err == "") if quiet else ("a note" in err and "[1/1] ok img.png" in err)
    finally:
        ui.set_quiet(False)
