"""The results CSV: header always written, one row per image, each row flushed as it finishes.

Crash safety: a row is written with one ``write`` of a complete record, so a killed run
leaves at most one partial last record. ``--resume`` drops it, reads the keys already
present and the batch skips them — except rows marked ``transient`` (VLM down, tool
failure), which are tried again; the newer row for a key is the one that counts.

The file is only created (or truncated) when the first row arrives or the run ends
cleanly, so a run that fails on a configuration error leaves an earlier CSV untouched.
"""

from __future__ import annotations

import contextlib
import csv
import fcntl
import io
import os
import re
from collections.abc import Callable, Mapping
from pathlib import Path

from agentiqa_cli.errors import ConfigError
from agentiqa_cli.records import Result

BASE_COLUMNS = [
    "image",
    "reference",
    "status",
    "error",
    "score",
    "level",
    "answer",
    "distortions",
    "tools",
    "vlm_calls",
    "tokens",
    "seconds",
    "transient",
    "key",
]


def columns_for(tool_names: list[str] | None) -> list[str]:
    """``score`` adds ``<tool>_raw`` and ``<tool>_norm`` per tool."""
    extra = [f"{t}_{kind}" for t in tool_names or [] for kind in ("raw", "norm")]
    return BASE_COLUMNS + extra


def _fmt(v: float | None, digits: int = 4) -> str:
    return "" if v is None else f"{v:.{digits}f}"


def row_of(result: Result, columns: list[str], extra: Mapping[str, str] | None = None) -> list[str]:
    """The CSV cells of ``result``; ``extra`` fills columns a command adds (evaluate's)."""
    cells: dict[str, str] = {
        "image": result.image,
        "reference": result.reference,
        "status": result.status,
        "error": result.error,
        "score": _fmt(result.score, 3),
        "level": result.level,
        "answer": result.answer,
        "distortions": result.distortions_cell(),
        "tools": result.tools_cell(),
        "vlm_calls": str(result.usage.calls),
        "tokens": str(result.usage.prompt_tokens + result.usage.completion_tokens),
        "seconds": f"{result.seconds:.3f}",
        "transient": "1" if result.transient else "0",
        "key": result.key,
    }
    for t in result.tools:
        cells[f"{t.tool}_raw"] = _fmt(t.raw, 5)
        cells[f"{t.tool}_norm"] = _fmt(t.norm, 4)
    cells.update(extra or {})
    return [safe_cell(cells.get(c, "")) for c in columns]


# A spreadsheet evaluates a cell that starts with one of these as a formula (CSV injection).
_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")
_NUMBER = re.compile(r"[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?")


def safe_cell(value: str) -> str:
    """A text cell a spreadsheet would run as a formula gets a leading ``'`` (shown, not
    evaluated); plain numbers such as ``-0.5`` stay numbers."""
    if value.startswith(_FORMULA_START) and not _NUMBER.fullmatch(value):
        return "'" + value
    return value


def _record(cells: list[str]) -> bytes:
    buf = io.StringIO()
    # the csv module quotes a cell holding "\n" but not a lone "\r", which readers take as a
    # line break: a row with one is written with every cell quoted, so it stays one record
    if any("\r" in c for c in cells):
        csv.writer(buf, lineterminator="\n", quoting=csv.QUOTE_ALL).writerow(cells)
    else:
        csv.writer(buf, lineterminator="\n").writerow(cells)
    return buf.getvalue().encode("utf-8")


def write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        n = os.write(fd, view)
        view = view[n:]


class ResultsWriter:
    """Append-only CSV writer; ``done_keys`` are the keys of complete rows already present."""

    def __init__(
        self,
        path: Path,
        columns: list[str],
        resume: bool = False,
        extra: Callable[[Result], Mapping[str, str]] | None = None,
    ):
        self.path = path
        self.columns = columns
        self.extra = extra  # cells of added columns, per result
        self.done_keys: set[str] = set()
        self._fd = -1
        path.parent.mkdir(parents=True, exist_ok=True)
        if resume and path.exists() and path.stat().st_size > 0:
            self._fd = os.open(path, os.O_RDWR | os.O_APPEND)
            try:
                # two resumed runs on one CSV would both append the same images
                fcntl.flock(self._fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                os.close(self._fd)
                self._fd = -1
                raise ConfigError(f"{path}: another agentiqa run is writing it") from None
            self._prepare_resume()

    def _prepare_resume(self) -> None:
        data = self.path.read_bytes()
        text = data.decode("utf-8", errors="replace")
        reader = csv.reader(io.StringIO(text, newline=""), strict=True)
        rows: list[list[str]] = []
        with contextlib.suppress(csv.Error):  # the last record was cut inside a quoted cell
            rows.extend(reader)
        if not rows or rows[0] != self.columns:
            raise ConfigError(
                f"{self.path}: its columns differ from this run's (other tools?); "
                "use another --out or drop --resume"
            )
        # keep only complete records: whole rows, re-serialized exactly as they were written
        keep = _record(rows[0])
        complete = []
        for row in rows[1:]:
            rec = _record(row)
            if len(row) != len(self.columns) or not data.startswith(rec, len(keep)):
                break
            keep += rec
            complete.append(row)
        if len(keep) != len(data):
            os.ftruncate(self._fd, len(keep))
        key_at = self.columns.index("key")
        status_at = self.columns.index("status")
        transient_at = self.columns.index("transient")
        for row in complete:
            if row[key_at] and not (row[status_at] == "error" and row[transient_at] == "1"):
                self.done_keys.add(row[key_at])

    def _ensure_open(self) -> None:
        if self._fd < 0:
            self._fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
            write_all(self._fd, _record(self.columns))

    def write(self, result: Result) -> None:
        self._ensure_open()
        extra = self.extra(result) if self.extra is not None else None
        write_all(self._fd, _record(row_of(result, self.columns, extra)))

    def close(self, completed: bool = True) -> None:
        """``completed=False`` (the run failed before any row): leave the file as it was."""
        if completed:
            self._ensure_open()
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1

    def __enter__(self) -> ResultsWriter:
        return self

    def __exit__(self, exc_type: object, *exc: object) -> None:
        self.close(completed=exc_type is None)
