"""stdout that pipes: `--format csv|tsv|jsonl` and `-o -` stream the results rows as they
finish, cells whole; `| head` gets its rows before the run ends and the run still exits 0."""

from __future__ import annotations

import csv
import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from agentiqa_cli.io.results import columns_for
from agentiqa_cli.io.stream import RowStream
from agentiqa_cli.records import Finding, Result
from tests.conftest import scene
from tests.test_cli_score import invoke

ROOT = Path(__file__).resolve().parent.parent
LONG = 'a, "quoted" name;with\ttab ' * 8 + ".png"  # 209 characters, every separator


def _cli(*args: str | Path) -> list[str]:
    return [sys.executable, "-m", "agentiqa_cli", *map(str, args)]


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(ROOT)}


@pytest.fixture(scope="module")
def many(tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = tmp_path_factory.mktemp("many")
    for i in range(60):
        scene(i, 320, 240).save(d / f"p{i:02d}.png")
    return d


def test_o_dash_streams_rows_before_the_run_ends_and_a_closed_pipe_is_fine(
    many: Path, tmp_path: Path
) -> None:
    proc = subprocess.Popen(
        _cli("score", many, "-o", "-", "-j", "1", "--tools", "sharpness,noise"),
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=tmp_path, env=_env(), text=True,
    )  # fmt: skip
    assert proc.stdout is not None
    first = [proc.stdout.readline() for _ in range(3)]
    running = proc.poll() is None  # 57 images still to go, one at a time
    proc.stdout.close()  # as `head -3` does
    _, err = proc.communicate(timeout=300)
    assert running, "the rows came only at the end"
    assert first[0].startswith("image,reference,status,")
    assert all(line.count(str(many)) == 1 for line in first[1:])
    assert proc.returncode == 0, err
    assert "Traceback" not in err and "BrokenPipe" not in err and "error" not in err
    assert "[60/60]" not in err  # nobody reads the only output any more: the run stopped
    assert sorted(p.name for p in tmp_path.iterdir()) == []  # no '-', no trace, no lock


def test_head_3_in_a_shell_prints_the_header_and_two_rows(many: Path, tmp_path: Path) -> None:
    cmd = " ".join(_cli("score", many, "-o", "-", "--tools", "sharpness"))
    r = subprocess.run(["bash", "-c", f"{cmd} | head -3; exit ${{PIPESTATUS[0]}}"],
                       capture_output=True, text=True, cwd=tmp_path, env=_env())  # fmt: skip
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert len(lines) == 3 and lines[0].startswith("image,")
    assert list(tmp_path.iterdir()) == []


def test_jsonl_parses_with_json_tool(many: Path, tmp_path: Path) -> None:
    cmd = " ".join(_cli("score", many / "p0*.png", "-o", tmp_path / "s.csv", "--format", "jsonl",
                        "--tools", "sharpness", "-q"))  # fmt: skip
    r = subprocess.run(
        ["bash", "-o", "pipefail", "-c", f"{cmd} | {sys.executable} -m json.tool --json-lines"],
        capture_output=True, text=True, env=_env(),
    )  # fmt: skip
    assert r.returncode == 0, r.stderr
    rows = [json.loads(line) for line in
            subprocess.run(["bash", "-c", cmd], capture_output=True, text=True,
                           env=_env()).stdout.splitlines()]  # fmt: skip
    assert len(rows) == 10 and all(isinstance(r["score"], float) for r in rows)
    assert all(isinstance(r["vlm_calls"], int) and r["status"] == "ok" for r in rows)


def _result() -> Result:
    answer = 'Line one,\nline two\twith a tab, "quotes" and a backslash \\ ' + "x" * 3000
    return Result(image=LONG, score=2.5, level="fair", answer=answer, key="k",
                  distortions=[Finding(scope="crop1 [0.1, 0.2, 0.5, 0.6]", category="Noise",
                                       severity="severe")])  # fmt: skip


@pytest.mark.parametrize("fmt", ["csv", "tsv", "jsonl"])
def test_every_format_keeps_text_cells_whole(fmt: str) -> None:
    buf = io.StringIO()
    stream = RowStream(fmt, columns_for(None), out=buf)  # type: ignore[arg-type]
    r = _result()
    stream.write(r)
    text = buf.getvalue()
    if fmt == "csv":
        header, row = list(csv.reader(io.StringIO(text)))
        cells = dict(zip(header, row, strict=True))
    elif fmt == "tsv":
        header_line, row_line = text.splitlines()  # one record per line
        unescape = {"\\\\": "\\", "\\t": "\t", "\\n": "\n", "\\r": "\r"}

        def back(c: str) -> str:
            out, i = [], 0
            while i < len(c):
                if c[i] == "\\" and c[i : i + 2] in unescape:
                    out.append(unescape[c[i : i + 2]])
                    i += 2
                else:
                    out.append(c[i])
                    i += 1
            return "".join(out)

        cells = dict(zip(header_line.split("\t"), map(back, row_line.split("\t")), strict=True))
    else:
        (line,) = text.splitlines()
        cells = json.loads(line)
        assert cells["score"] == 2.5 and cells["vlm_calls"] == 0
    assert cells["image"] == LONG and cells["answer"] == r.answer
    assert cells["distortions"] == "noise:severe@crop1 [0.1, 0.2, 0.5, 0.6]"


def test_format_csv_prints_the_rows_the_file_gets(many: Path, tmp_path: Path) -> None:
    (tmp_path / LONG).write_bytes((many / "p00.png").read_bytes())
    code, out = invoke("assess", tmp_path / LONG, many / "p01.png", "-o", tmp_path / "a.csv",
                       "--format", "csv")  # fmt: skip
    assert code == 0
    assert out == (tmp_path / "a.csv").read_text()  # header and rows; no table, no summary
    assert str(tmp_path / LONG) in {r["image"] for r in csv.DictReader(io.StringIO(out))}


def test_evaluate_streams_its_rows_and_says_the_verdict_on_stderr(
    many: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out = invoke("evaluate", many, "-o", "-", "--format", "jsonl", "--max-samples", "4",
                       "--max-rounds", "1", "--trace", tmp_path / "t.jsonl")  # fmt: skip
    assert code == 0
    rows = [json.loads(line) for line in out.splitlines()]
    assert len(rows) >= 3 and all("tier" in r and "sub_aspect" in r for r in rows)
    assert "stopped:" in capsys.readouterr().err
    assert (tmp_path / "t.jsonl").is_file()  # a trace only because --trace named one


@pytest.mark.parametrize(
    ("flags", "why"),
    [
        (["--resume"], "--resume needs a file"),
        (["--json"], "--json needs a file"),
        (["--report", "r.html"], "--report needs a file"),
        (["--format", "xml"], "--format must be one of"),
    ],
)
def test_o_dash_refuses_what_needs_a_file(
    many: Path, tmp_path: Path, flags: list[str], why: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out = invoke("score", many / "p00.png", "-o", "-", *flags)
    assert code == 2 and out == ""
    assert why in capsys.readouterr().err
