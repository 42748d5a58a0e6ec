"""The results CSV: header always written, one row per image, each row flushed as it finishes.

Crash safety: a row is written with a single ``write`` of a complete line, so a killed run
leaves at most one partial last line. ``--resume`` drops such a partial line before
appending, reads the keys already present, and the batch skips them.
"""

from __future__ import annotations

import csv
import io
import os
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
    "key",
]


def columns_for(tool_names: list[str] | None) -> list[str]:
    """``score`` adds ``<tool>_raw`` and ``<tool>_norm`` per tool."""
    extra = [f"{t}_{kind}" for t in tool_names or [] for kind in ("raw", "norm")]
    return BASE_COLUMNS + extra


def _fmt(v: float | None, digits: int = 4) -> str:
    return "" if v is None else f"{v:.{digits}f}"


def row_of(result: Result, columns: list[str]) -> list[str]:
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
        "key": result.key,
    }
    for t in result.tools:
        cells[f"{t.tool}_raw"] = _fmt(t.raw, 5)
        cells[f"{t.tool}_norm"] = _fmt(t.norm, 4)
    return [cells.get(c, "") for c in columns]


class ResultsWriter:
    """Append-only CSV writer; ``done_keys`` are the keys of complete rows already present."""

    def __init__(self, path: Path, columns: list[str], resume: bool = False):
        self.path = path
        self.columns = columns
        self.done_keys: set[str] = set()
        path.parent.mkdir(parents=True, exist_ok=True)
        if resume and path.exists() and path.stat().st_size > 0:
            self._prepare_resume()
            self._fd = os.open(path, os.O_WRONLY | os.O_APPEND)
        else:
            self._fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
            self._write_line(columns)

    def _prepare_resume(self) -> None:
        data = self.path.read_bytes()
        if not data.endswith(b"\n"):
            # the run was killed mid-row: drop the partial line
            cut = data.rfind(b"\n") + 1
            with open(self.path, "r+b") as f:
                f.truncate(cut)
            data = data[:cut]
        reader = csv.reader(io.StringIO(data.decode("utf-8", errors="replace"), newline=""))
        header = next(reader, None)
        if header != self.columns:
            raise ConfigError(
                f"{self.path}: its columns differ from this run's (other tools?); "
                "use another --out or drop --resume"
            )
        key_at = header.index("key")
        for row in reader:
            if len(row) == len(header) and row[key_at]:
                self.done_keys.add(row[key_at])

    def _write_line(self, cells: list[str]) -> None:
        buf = io.StringIO()
        csv.writer(buf, lineterminator="\n").writerow(cells)
        os.write(self._fd, buf.getvalue().encode("utf-8"))

    def write(self, result: Result) -> None:
        self._write_line(row_of(result, self.columns))

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1

    def __enter__(self) -> ResultsWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
