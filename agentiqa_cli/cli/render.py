"""Everything the terminal shows: progress on stderr, tables and JSON on stdout (rich)."""

from __future__ import annotations

import json
import logging
import math
import os
import re
import sys
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from rich.console import Console, ConsoleDimensions
from rich.markup import escape
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
from rich.table import Table

from agentiqa_cli.records import Result
from agentiqa_cli.tools.runner import quiet_builds

# Piped or redirected, a table is as wide as its content: at 80 columns rich would fold
# file names and tool names mid-word, which neither a reader nor grep can use.
PIPED_WIDTH = 10_000


class _Stdout(Console):
    """stdout: a terminal's width at a terminal (or $COLUMNS), unbounded when piped."""

    @property
    def size(self) -> ConsoleDimensions:
        size = super().size
        if self.is_terminal or os.environ.get("COLUMNS", "").isdigit():
            return size
        return ConsoleDimensions(PIPED_WIDTH, size.height)

    @size.setter
    def size(self, new_size: tuple[int, int]) -> None:
        Console.size.fset(self, new_size)  # type: ignore[attr-defined]


out = _Stdout(soft_wrap=True)
err = Console(stderr=True, soft_wrap=True)

# C0 and C1 control characters and DEL: a file name or a model's answer holding ESC could
# clear the screen or set the window title if printed as is
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")
_NAMED = {"\r": "\\r", "\n": "\\n", "\t": "\\t"}


def visible(text: str, keep_newlines: bool = False) -> str:
    """``text`` with every control character shown as an escape (``\\x1b``, ``\\r``)."""

    def show(m: re.Match[str]) -> str:
        c = m.group()
        if keep_newlines and c == "\n":
            return c
        return _NAMED.get(c, f"\\x{ord(c):02x}")

    return _CONTROL.sub(show, text)


def cell(text: str) -> str:
    """Data (a file name, an answer) for a rich table cell: controls visible, no markup."""
    return escape(visible(text))


class _ClosedPipeSafe:
    """stdout that outlives its reader: once the pipe is closed (``| head -1``) further
    output goes to /dev/null, so the run finishes with its own exit code."""

    def __init__(self, stream: Any):
        self._stream = stream
        self.reader_gone = False  # read by io.stream: `-o -` stops when nobody reads

    def _closed(self) -> None:
        self.reader_gone = True
        devnull = os.open(os.devnull, os.O_WRONLY)
        try:
            os.dup2(devnull, self._stream.fileno())  # Python's final flush goes there too
        finally:
            os.close(devnull)

    def write(self, text: str) -> int:
        try:
            return int(self._stream.write(text))
        except BrokenPipeError:
            self._closed()
            return len(text)

    def flush(self) -> None:
        try:
            self._stream.flush()
        except BrokenPipeError:
            self._closed()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


def survive_closed_stdout() -> None:
    """Install the closed-pipe-safe stdout (the console entry calls it once)."""
    if not isinstance(sys.stdout, _ClosedPipeSafe):
        try:
            sys.stdout.fileno()
        except (AttributeError, OSError, ValueError):
            return  # captured (tests) or detached: nothing to guard
        sys.stdout = _ClosedPipeSafe(sys.stdout)


_mode = {"quiet": False}


def set_quiet(on: bool) -> None:
    """``-q``: stdout carries only the ``--json`` or ``--format`` rows asked for (no table,
    no summary line), stderr only errors (each error row, a failed gate with its summary
    line; no progress, notes or warnings). Set once per command; ``note``,
    ``warn`` and ``Reporter`` read it (one flag, not one per call)."""
    _mode["quiet"] = on
    out.quiet = on  # rich prints nothing; print_json writes past it on purpose
    _quiet_third_parties(on)


_SAVED_FILTERS: list[warnings.catch_warnings] = []  # the filters before -q, to put back


def _quiet_third_parties(on: bool) -> None:
    """Under ``-q`` the libraries stay quiet too: Python warnings (numpy's RuntimeWarning,
    torch's UserWarning), log records below ERROR (Ray, pyiqa, httpx) and what pyiqa prints
    while it builds a metric; turned back on as they were when ``-q`` is off."""
    if on == bool(_SAVED_FILTERS):
        return  # already so
    if on:
        saved = warnings.catch_warnings()
        saved.__enter__()  # remembers the filters; __exit__ puts them back
        _SAVED_FILTERS.append(saved)
        warnings.simplefilter("ignore")
        logging.disable(logging.WARNING)
    else:
        _SAVED_FILTERS.pop().__exit__(None, None, None)
        logging.disable(logging.NOTSET)
    quiet_builds(on)


def quiet() -> bool:
    return _mode["quiet"]


def rows_to_terminal(streaming: bool) -> bool:
    """Whether result rows stream to a terminal (no live progress bar then)."""
    return streaming and out.is_terminal


def note(message: str) -> None:
    if not _mode["quiet"]:
        err.print(visible(message, True), style="dim", highlight=False, markup=False)


def warn(message: str) -> None:
    if _mode["quiet"]:
        return
    err.print(f"warning: {visible(message, True)}", style="yellow", highlight=False, markup=False)


def fail(message: str) -> None:
    err.print(f"error: {visible(message, True)}", style="bold red", highlight=False, markup=False)


class Reporter:
    """Progress for a batch: a rich bar on a TTY, plain lines otherwise, nothing when quiet."""

    def __init__(self, total: int, label: str, live: bool = True):
        self.total = total
        self.label = label
        # False: rows stream to the same terminal (--format csv at a prompt), where a live
        # bar would be redrawn through them: plain lines instead
        self.live = live
        self.count = 0
        self._progress: Progress | None = None
        self._task: Any = None

    @contextmanager
    def running(self) -> Iterator[Reporter]:
        if not _mode["quiet"] and err.is_terminal and self.live:
            self._progress = Progress(
                TextColumn("[bold]{task.description}"),
                BarColumn(),
                MofNCompleteColumn(),
                TextColumn("{task.fields[rate]}"),
                TimeElapsedColumn(),
                TextColumn("eta"),
                TimeRemainingColumn(),
                console=err,
                transient=True,
            )
            self._task = self._progress.add_task(self.label, total=self.total, rate="")
            with self._progress:
                yield self
        else:
            yield self

    def advance(self, image: str, status: str, detail: str = "") -> None:
        """One image done; an error row is always said, on its own line (``-q`` too), so a
        cron mail names each file that failed and why."""
        self.count += 1
        if _mode["quiet"]:
            if status == "error":
                fail(detail if detail.startswith(image) else f"{image}: {detail}")
            return
        if self._progress is not None:
            if status == "error":
                why = detail if detail.startswith(image) else f"{image}: {detail}"
                self._progress.console.print(
                    f"error: {visible(why)}", style="red", highlight=False, markup=False
                )
            elapsed = self._progress.tasks[0].elapsed or 0.0
            rate = f"{self.count / elapsed:.1f} img/s" if elapsed > 0 else ""
            self._progress.update(self._task, advance=1, rate=rate)
        else:
            print(
                visible(f"[{self.count}/{self.total}] {status} {image} {detail}".rstrip()),
                file=sys.stderr,
                flush=True,
            )


def results_table(results: list[Result], title: str, max_rows: int = 50) -> Table:
    """Worst first (errors, then lowest scores); columns only when some row fills them (the
    answer to the query: ``assess``, not ``score``)."""
    table = Table(title=title, title_justify="left", show_lines=False)
    show_notes = any(r.status == "error" or r.distortions for r in results)
    show_answer = any(r.answer for r in results)
    table.add_column("image", overflow="fold")
    table.add_column("score", justify="right")
    table.add_column("level")
    if show_answer:
        table.add_column("answer")
    if show_notes:
        table.add_column("distortions / error", overflow="fold")
    table.add_column("tools (1-5)", overflow="fold")
    ordered = sorted(
        results, key=lambda r: (r.status != "error", r.score if r.score is not None else 9)
    )
    for r in ordered[:max_rows]:
        # file names and messages are data, not markup: "[/x]" in a name must print as is
        if r.status == "error":
            note = [f"[red]{cell(r.error)}[/]"] if show_notes else []
            answer = [""] if show_answer else []
            table.add_row(cell(r.image), "-", "[red]error[/]", *answer, *note, "")
            continue
        score = f"{r.score:.2f}" if r.score is not None else "-"
        tools = " ".join(f"{t.tool} {t.norm:.1f}" for t in r.tools if t.ok and t.norm is not None)
        note = [cell(r.distortions_cell() or "none")] if show_notes else []
        answer = [cell(r.answer)] if show_answer else []
        table.add_row(cell(r.image), score, r.level or "-", *answer, *note, cell(tools))
    if len(results) > max_rows:
        table.caption = (
            f"{len(results) - max_rows} more rows in the CSV (lowest scores shown first)"
        )
    return table


def _finite(obj: Any) -> Any:
    """``obj`` with every NaN or infinite float as None: JSON has no such numbers, and
    ``json.dumps`` would write ``NaN``/``-Infinity``, which strict parsers (jq, JavaScript's
    JSON.parse) refuse."""
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if isinstance(obj, dict):
        return {k: _finite(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [_finite(v) for v in obj]
    return obj


def print_json(obj: Any) -> None:
    """Every ``--json`` output: strict JSON (non-finite numbers become null)."""
    print_text(json.dumps(_finite(obj), indent=2, default=str, allow_nan=False) + "\n")


def print_text(text: str) -> None:
    """Text asked for on stdout (JSON, Markdown, CSV rows): written as is, even with -q."""
    sys.stdout.write(text)
    sys.stdout.flush()


def _score_change(before: float | None, after: float | None) -> str:
    if before is None and after is None:
        return ""
    shown = ["-" if v is None else f"{v:.2f}" for v in (before, after)]
    return " → ".join(shown)


def fix_table(results: list[Result], title: str, max_rows: int = 50, check: bool = False) -> Table:
    """`agentiqa fix`: what was found, what ran, the score before → after, whether the fix
    was kept and where the fixed image went. ``check`` (``fix --check``): what would be
    fixed, without the output column (nothing is written)."""
    table = Table(title=title, title_justify="left", show_lines=False)
    last = "verdict / error" if check else "output / error"
    for name in ("image", "imperfections", "operations", "score", "kept", last):
        table.add_column(name, overflow="fold")
    for r in sorted(results, key=lambda r: r.status != "error")[:max_rows]:
        if r.status == "error":
            table.add_row(cell(r.image), "", "", "", "", f"[red]{cell(r.error)}[/]")
            continue
        f = r.fix
        if f is None:
            table.add_row(cell(r.image), "", "", "", "", "")
            continue
        kept = {None: "", True: "[green]yes[/]", False: "[yellow]no[/]"}[f.kept]
        if f.kept is not None and check:
            kept = {True: "[green]would keep[/]", False: "[yellow]would refuse[/]"}[f.kept]
        table.add_row(
            cell(r.image),
            cell(";".join(f.imperfections)),
            cell(";".join(f.operations) or "pass"),
            _score_change(f.score_before, f.score_after),
            kept,
            cell(f.verdict if check else f.output or f.verdict),
        )
    if len(results) > max_rows:
        where = "--json lists them all" if check else "all are in the CSV"
        table.caption = f"{max_rows} of {len(results)} rows; {where}"
    return table
