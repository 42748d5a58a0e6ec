"""Result rows on stdout as they finish: ``--format csv|tsv|jsonl`` and ``-o -``.

The rows are the results CSV's (same columns, same cells); a stream writes each row with
one write and a flush, so ``| head`` sees the first rows while the run goes on. Cells are
never wrapped or cut: CSV quotes as the results file does, TSV escapes ``\\``, tab, CR and
LF as ``\\\\``, ``\\t``, ``\\r``, ``\\n`` (one record per line, as the linear TSV convention
has it), JSONL writes one object per line with the numeric columns as numbers.

``RowWriter`` is what the batch writes rows to: the results file (``ResultsWriter``), the
stream alone (``StreamWriter``: ``-o -``, which stops the run once its reader has closed
the pipe, as ``| head`` does) or both (``Tee``: the file is the record, the run goes on).
"""

from __future__ import annotations

import contextlib
import csv
import io
import json
import sys
from collections.abc import Callable, Mapping
from typing import Literal, Protocol, TextIO, get_args

from agentiqa_cli.errors import ReaderGone
from agentiqa_cli.io.results import original_cell, row_of
from agentiqa_cli.records import Result

RowFormat = Literal["csv", "tsv", "jsonl"]
ROW_FORMATS: tuple[RowFormat, ...] = get_args(RowFormat)
STDOUT_NAME = "-"  # `-o -`: the results go to stdout, no file

_INTEGERS = frozenset({"vlm_calls", "tokens", "transient", "round"})
_FLOATS = frozenset({"score", "seconds", "score_before"})
_TSV_ESCAPES = str.maketrans({"\\": "\\\\", "\t": "\\t", "\n": "\\n", "\r": "\\r"})


class RowWriter(Protocol):
    """Where finished rows go; ``done`` holds (image cell, key) pairs already written."""

    columns: list[str]
    done: set[tuple[str, str]]

    def is_done(self, image: str, key: str) -> bool: ...

    def write(self, result: Result) -> None: ...

    def close(self, completed: bool = True) -> None: ...


def _json_value(column: str, cell: str) -> object:
    if column in _INTEGERS or column in _FLOATS or column.endswith(("_raw", "_norm")):
        if cell == "":
            return None
        try:
            return int(cell) if column in _INTEGERS else float(cell)
        except ValueError:
            return cell
    return cell


class RowStream:
    """Rows in one format on a text stream (stdout), the header first (CSV, TSV)."""

    def __init__(
        self,
        fmt: RowFormat,
        columns: list[str],
        extra: Callable[[Result], Mapping[str, str]] | None = None,
        out: TextIO | None = None,
    ):
        self.fmt = fmt
        self.columns = columns
        self.extra = extra
        # taken now: a progress display may stand in for sys.stdout while the run goes on
        self.out = out if out is not None else sys.stdout
        self._gone = False
        if fmt != "jsonl":
            self._emit(self._line(columns))

    def _line(self, cells: list[str]) -> str:
        if self.fmt == "tsv":
            return "\t".join(c.translate(_TSV_ESCAPES) for c in cells) + "\n"
        buf = io.StringIO()
        csv.writer(buf, lineterminator="\n").writerow(cells)
        return buf.getvalue()

    def _emit(self, text: str) -> None:
        try:
            self.out.write(text)
            self.out.flush()
        except BrokenPipeError:
            self._gone = True

    @property
    def reader_gone(self) -> bool:
        """Whether the reader closed the stream (``| head``): directly, or as the CLI's
        closed-pipe guard on stdout records it."""
        return self._gone or bool(getattr(self.out, "reader_gone", False))

    def write(self, result: Result) -> None:
        extra = self.extra(result) if self.extra is not None else None
        cells = row_of(result, self.columns, extra)  # as the results file has them
        if self.fmt == "jsonl":
            record = {
                c: _json_value(c, original_cell(v))
                for c, v in zip(self.columns, cells, strict=True)
            }
            self._emit(json.dumps(record, ensure_ascii=False) + "\n")
        else:
            self._emit(self._line(cells))


class StreamWriter:
    """``-o -``: the rows on stdout and nowhere else (nothing to resume from)."""

    def __init__(self, stream: RowStream):
        self.stream = stream
        self.columns = stream.columns
        self.done: set[tuple[str, str]] = set()

    def is_done(self, image: str, key: str) -> bool:
        return False

    def write(self, result: Result) -> None:
        self.stream.write(result)
        if self.stream.reader_gone:  # nobody reads the only output: stop the run
            raise ReaderGone("stdout was closed by its reader")

    def close(self, completed: bool = True) -> None:
        if not self.stream.reader_gone:
            with contextlib.suppress(BrokenPipeError):
                self.stream.out.flush()


class Tee:
    """The results file as usual, and each row on a stream as well."""

    def __init__(self, writer: RowWriter, stream: RowStream):
        self.writer = writer
        self.stream = stream
        self.columns = writer.columns
        self.done = writer.done

    def is_done(self, image: str, key: str) -> bool:
        return self.writer.is_done(image, key)

    def write(self, result: Result) -> None:
        self.writer.write(result)  # the file first: it is the record
        self.stream.write(result)

    def close(self, completed: bool = True) -> None:
        self.writer.close(completed)
