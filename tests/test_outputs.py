"""Results CSV and JSONL trace: header, flushing, resume after a kill, no lost or duplicated rows."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from agentiqa_cli.errors import ConfigError
from agentiqa_cli.io.results import BASE_COLUMNS, ResultsWriter, columns_for
from agentiqa_cli.io.trace import TraceWriter
from agentiqa_cli.records import Finding, Result, ToolScore, TraceEvent


def _result(i: int) -> Result:
    return Result(
        image=f"img, with comma {i}.png",
        key=f"k{i}",
        score=3.5,
        level="good",
        answer='said "fine"\nsecond line',
        distortions=[Finding(category="Noise", severity="slight")],
        tools=[ToolScore(tool="psnr", raw=30.0, norm=3.2)],
    )


def test_header_written_even_with_no_rows(tmp_path: Path) -> None:
    out = tmp_path / "r.csv"
    ResultsWriter(out, columns_for(None)).close()
    assert pd.read_csv(out).columns.tolist() == BASE_COLUMNS


def test_rows_flushed_and_parse(tmp_path: Path) -> None:
    out = tmp_path / "r.csv"
    w = ResultsWriter(out, columns_for(["psnr"]))
    w.write(_result(1))
    # visible before close: a killed run keeps what it wrote
    df = pd.read_csv(out)
    assert len(df) == 1
    assert df.loc[0, "psnr_raw"] == 30.0
    assert df.loc[0, "distortions"] == "noise:slight"
    assert df.loc[0, "answer"] == 'said "fine"\nsecond line'
    w.close()


def test_resume_drops_partial_line_and_skips_done(tmp_path: Path) -> None:
    out = tmp_path / "r.csv"
    with ResultsWriter(out, columns_for(None)) as w:
        w.write(_result(1))
        w.write(_result(2))
    # simulate a kill in the middle of writing row 3
    with open(out, "ab") as f:
        f.write(b"img3.png,,ok,,2.0,po")
    w2 = ResultsWriter(out, columns_for(None), resume=True)
    assert {k for _, k in w2.done} == {"k1", "k2"}
    w2.write(_result(3))
    w2.close()
    df = pd.read_csv(out)
    assert df["key"].tolist() == ["k1", "k2", "k3"]


def test_resume_with_other_columns_refused(tmp_path: Path) -> None:
    out = tmp_path / "r.csv"
    ResultsWriter(out, columns_for(["psnr"])).close()
    with pytest.raises(ConfigError, match="columns differ"):
        ResultsWriter(out, columns_for(["ssim"]), resume=True)


FIX = ["imperfections", "operations", "refused", "score_before"]  # assess's newer columns


def test_resume_upgrades_an_older_csv_that_lacks_the_commands_new_columns(
    tmp_path: Path,
) -> None:
    """An assess CSV written before the fix columns existed: --resume rewrites it with this
    version's header (old rows' new cells empty), keeps its rows done, and goes on."""
    out = tmp_path / "r.csv"
    with ResultsWriter(out, BASE_COLUMNS) as w:  # what the older version wrote
        w.write(_result(1))
        w.write(_result(2))
    with open(out, "ab") as f:
        f.write(b"img3.png,,ok,,2.0,po")  # a cut last record: dropped, as always
    old = pd.read_csv(out, keep_default_na=False, dtype=str)
    w2 = ResultsWriter(out, BASE_COLUMNS + FIX, resume=True, extra=lambda r: {"refused": "x"},
                       optional=FIX)  # fmt: skip
    assert {k for _, k in w2.done} == {"k1", "k2"}
    w2.write(_result(3))
    w2.close()
    df = pd.read_csv(out, keep_default_na=False, dtype=str)
    assert list(df.columns) == BASE_COLUMNS + FIX and df["key"].tolist() == ["k1", "k2", "k3"]
    assert df["refused"].tolist() == ["", "", "x"]
    assert df.loc[:1, BASE_COLUMNS].equals(old.loc[:1, BASE_COLUMNS])
    assert not list(tmp_path.glob(".*upgrade"))  # the temporary file is gone
    # only the command's own columns may be missing (not another tool's), nothing added
    for header in (columns_for(["psnr"]), [*columns_for(["psnr", "ssim", "niqe"]), *FIX]):
        ResultsWriter(out, header).close()
        with pytest.raises(ConfigError, match="columns differ"):
            ResultsWriter(out, [*columns_for(["psnr", "ssim"]), *FIX], resume=True, optional=FIX)


def test_resume_upgrade_maps_an_older_csvs_cells_by_column_name(tmp_path: Path) -> None:
    """An older CSV whose columns are in another order: each cell lands under its name."""
    out = tmp_path / "r.csv"
    shuffled = [*BASE_COLUMNS[1:], "image"]
    with ResultsWriter(out, shuffled) as w:
        w.write(_result(1))
    old = pd.read_csv(out, keep_default_na=False, dtype=str)
    w2 = ResultsWriter(out, BASE_COLUMNS + FIX, resume=True, optional=FIX)
    assert {k for _, k in w2.done} == {"k1"}
    w2.close()
    df = pd.read_csv(out, keep_default_na=False, dtype=str)
    assert list(df.columns) == BASE_COLUMNS + FIX
    assert df[BASE_COLUMNS].equals(old[BASE_COLUMNS]) and df.loc[0, "image"] != ""


def test_trace_lines_are_json(tmp_path: Path) -> None:
    p = tmp_path / "t.jsonl"
    t = TraceWriter(p)
    t.emit(TraceEvent(step="run", parsed={"a": 1}))
    t.emit(TraceEvent(step="tool", image="x.png", parsed={"raw": 1.0}, latency=0.1))
    t.close()
    # append after a partial line: the next event starts on its own line
    with open(p, "ab") as f:
        f.write(b'{"step": "tool", "ima')
    t2 = TraceWriter(p, append=True)
    t2.emit(TraceEvent(step="final", image="x.png"))
    t2.close()
    lines = p.read_text().splitlines()
    parsed = []
    for line in lines:
        try:
            parsed.append(json.loads(line))
        except json.JSONDecodeError:
            continue
    assert [e["step"] for e in parsed] == ["run", "tool", "final"]
    assert json.loads(lines[-1])["step"] == "final"


def test_transient_errors_are_retried_on_resume(tmp_path: Path) -> None:
    out = tmp_path / "r.csv"
    with ResultsWriter(out, columns_for(None)) as w:
        w.write(Result(image="a.png", key="ka", status="error", error="VLM down", transient=True))
        w.write(Result(image="b.png", key="kb", status="error", error="empty file"))
        w.write(_result(3))
    w2 = ResultsWriter(out, columns_for(None), resume=True)
    assert {k for _, k in w2.done} == {"kb", "k3"}
    w2.close()


def test_resume_drops_a_record_cut_inside_a_quoted_cell(tmp_path: Path) -> None:
    out = tmp_path / "r.csv"
    with ResultsWriter(out, columns_for(None)) as w:
        w.write(_result(1))
    with open(out, "ab") as f:
        f.write(b'img2.png,,ok,,3.0,fair,"line one\n')  # killed after an embedded newline
    w2 = ResultsWriter(out, columns_for(None), resume=True)
    assert {k for _, k in w2.done} == {"k1"}
    w2.write(_result(2))
    w2.close()
    assert pd.read_csv(out)["key"].tolist() == ["k1", "k2"]


def test_overlapping_resumed_runs_are_refused(tmp_path: Path) -> None:
    out = tmp_path / "r.csv"
    with ResultsWriter(out, columns_for(None)) as w:
        w.write(_result(1))
    first = ResultsWriter(out, columns_for(None), resume=True)
    with pytest.raises(ConfigError, match="another agentiqa run"):
        ResultsWriter(out, columns_for(None), resume=True)
    first.close()


def test_url_credentials_redacted() -> None:
    from agentiqa_cli.config import redact_url

    assert redact_url("http://user:pw@host:8000/v1?key=abc") == "http://***@host:8000/v1?***"
    assert redact_url("rules") == "rules"


def test_resume_upgrade_keeps_a_link_and_the_mode_and_waits_for_a_row(tmp_path: Path) -> None:
    """Through a symbolic link the linked file is upgraded (the link stays), with its mode;
    a run that ends before any row (completed=False) leaves the older CSV as it was."""
    real = tmp_path / "store" / "r.csv"
    real.parent.mkdir()
    with ResultsWriter(real, BASE_COLUMNS) as w:  # what the older version wrote
        w.write(_result(1))
    real.chmod(0o640)
    link = tmp_path / "r.csv"
    link.symlink_to(real)
    before = real.read_bytes()
    w = ResultsWriter(link, BASE_COLUMNS + FIX, resume=True, optional=FIX)
    w.close(completed=False)  # the run failed before its first row
    assert real.read_bytes() == before
    w = ResultsWriter(link, BASE_COLUMNS + FIX, resume=True, optional=FIX)
    w.write(_result(2))
    w.close()
    assert link.is_symlink() and link.resolve() == real.resolve()
    assert real.stat().st_mode & 0o777 == 0o640
    df = pd.read_csv(link, keep_default_na=False, dtype=str)
    assert list(df.columns) == BASE_COLUMNS + FIX and df["key"].tolist() == ["k1", "k2"]
    assert not list(real.parent.glob(".*upgrade")) and not list(tmp_path.glob(".*upgrade"))
