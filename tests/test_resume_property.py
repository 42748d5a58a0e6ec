"""The resume property: any history of runs killed mid-row, re-saves of the CSV by other
programs (CRLF, CR, every cell quoted, a BOM) and damage (a stray quote) ends, after a
final resume, with exactly one row per input path, the rows of an earlier run's other
images kept; a run on a damaged file is refused (ConfigError, exit 2) with the file byte
for byte as it was.

Histories are drawn by hypothesis when it is installed (``HYPOTHESIS_EXAMPLES``, 500 by
default), and always from a fixed seed, so the property is checked with or without it.
"""

from __future__ import annotations

import csv
import io
import os
import random
import tempfile
from dataclasses import dataclass
from pathlib import Path

import pytest

from agentiqa_cli.errors import ConfigError
from agentiqa_cli.io.results import ResultsWriter, columns_for, original_cell
from agentiqa_cli.records import Result

COLS = columns_for(None)
# names a CSV must quote: commas, quotes, line breaks, a formula-like start
PATHS = ["a.png", "b, c.png", 'say "hi".png', "new\nline.png", "=1+1.png", "ünï.png", "g.png"]
OTHERS = ["old.png", "old, 2.png"]  # rows of an earlier run's images, not in these runs
RESAVES = ("crlf", "cr", "quote-all", "bom")


@dataclass(frozen=True)
class Run:
    rows: int  # rows written before the kill
    cut: int  # then this many bytes of the next row (0: killed between rows)


@dataclass(frozen=True)
class Resave:
    how: str


@dataclass(frozen=True)
class StrayQuote:
    line: int  # inserted at the start of this line (counted from 1, wrapped)


Op = Run | Resave | StrayQuote


def _result(path: str) -> Result:
    return Result(image=path, key=f"k-{path}", score=3.0, answer='a "b"\nc')


def _run(out: Path, op: Run) -> None:
    """One run killed after ``op.rows`` rows and ``op.cut`` bytes of the next one."""
    w = ResultsWriter(out, COLS, resume=True)
    todo = [p for p in PATHS if not w.is_done(p, _result(p).key)]
    for p in todo[: op.rows]:
        w.write(_result(p))
    if op.cut and len(todo) > op.rows:
        from agentiqa_cli.io.results import _record, row_of

        record = _record(row_of(_result(todo[op.rows]), COLS))
        w._ensure_open()
        os.write(w._fd, record[: min(op.cut, len(record) - 1)])  # killed mid-write
    w.close(completed=False)  # the process died: nothing more is written


def _resave(out: Path, how: str) -> None:
    data = out.read_bytes()
    text = data.decode("utf-8-sig", errors="ignore")  # (a cut last character)
    rows = list(csv.reader(io.StringIO(text, newline="")))
    if rows and len(rows[-1]) != len(COLS):
        rows.pop()  # a spreadsheet would not keep a cut row either
    buf = io.StringIO(newline="")
    if how == "crlf":
        csv.writer(buf, lineterminator="\r\n").writerows(rows)
    elif how == "cr":  # (a CR-only save keeps CR inside cells: every cell quoted)
        csv.writer(buf, lineterminator="\r", quoting=csv.QUOTE_ALL).writerows(rows)
    elif how == "quote-all":
        csv.writer(buf, lineterminator="\n", quoting=csv.QUOTE_ALL).writerows(rows)
    else:
        buf.write(text)
    prefix = b"\xef\xbb\xbf" if how == "bom" else b""
    out.write_bytes(prefix + buf.getvalue().encode("utf-8"))


def _stray_quote(out: Path, line: int) -> None:
    lines = out.read_bytes().splitlines(keepends=True)
    if len(lines) > 1:
        i = 1 + (line - 1) % (len(lines) - 1)  # never the header
        lines[i] = b'"' + lines[i]
        out.write_bytes(b"".join(lines))


def check_history(ops: list[Op]) -> None:
    with tempfile.TemporaryDirectory() as d:
        out = Path(d) / "r.csv"
        with ResultsWriter(out, COLS) as w:  # an earlier run on other images
            for p in OTHERS:
                w.write(_result(p))
        for op in ops:
            if isinstance(op, Resave):
                _resave(out, op.how)
                continue
            if isinstance(op, StrayQuote):
                before = out.read_bytes()
                _stray_quote(out, op.line)
                if out.read_bytes() == before:
                    continue
                damaged = out.read_bytes()
                try:  # a run on a damaged file: refused, untouched; or (if the quote
                    _run(out, Run(0, 0))  # happens to close harmlessly) it goes on
                except ConfigError:
                    assert out.read_bytes() == damaged, "a refused resume changed the file"
                    out.write_bytes(before)  # the user repairs it
                continue
            _run(out, op)
        _run(out, Run(len(PATHS), 0))  # the final resume: every remaining row
        with open(out, newline="", encoding="utf-8-sig") as f:
            rows = list(csv.DictReader(f))
        images = sorted(original_cell(r["image"]) for r in rows)
        assert images == sorted(PATHS + OTHERS), images  # none lost, none twice


def _random_ops(rng: random.Random) -> list[Op]:
    ops: list[Op] = []
    for _ in range(rng.randint(1, 8)):
        kind = rng.random()
        if kind < 0.5:
            ops.append(Run(rng.randint(0, 3), rng.choice([0, 0, 1, 5, 17, 40, 200])))
        elif kind < 0.85:
            ops.append(Resave(rng.choice(RESAVES)))
        else:
            ops.append(StrayQuote(rng.randint(1, 20)))
    return ops


@pytest.mark.parametrize("seed", range(200))
def test_resume_property_on_seeded_histories(seed: int) -> None:
    check_history(_random_ops(random.Random(seed)))


def test_resume_property_with_hypothesis() -> None:
    hypothesis = pytest.importorskip("hypothesis", reason="hypothesis is not installed")
    st = pytest.importorskip("hypothesis.strategies")
    op = st.one_of(
        st.builds(Run, st.integers(0, 3), st.sampled_from([0, 1, 5, 17, 40, 200])),
        st.builds(Resave, st.sampled_from(RESAVES)),
        st.builds(StrayQuote, st.integers(1, 20)),
    )
    examples = int(os.environ.get("HYPOTHESIS_EXAMPLES", "500"))

    @hypothesis.settings(max_examples=examples, deadline=None, derandomize=True)
    @hypothesis.given(st.lists(op, min_size=1, max_size=10))
    def prop(ops: list[Op]) -> None:
        check_history(ops)

    prop()
