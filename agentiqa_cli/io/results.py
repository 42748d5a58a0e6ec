"""The results CSV: header always written, one row per image, each row flushed as it finishes.

Crash safety: a row is written with one ``write`` of a complete record, so a killed run
leaves at most one partial last record. ``--resume`` parses the file as CSV (any quoting,
LF or CRLF, a UTF-8 BOM: a spreadsheet's or editor's save), keeps every complete record,
drops only a final partial one, and refuses (exit 2, file untouched) a file it cannot
read. The batch skips an input when a row with its path and key is present — except rows
marked ``transient`` (VLM down, tool failure), which are tried again; the newer row for a
key is the one that counts. A CSV of an older version, which lacks some of the command's
own columns (``optional``: assess's fix columns) but is otherwise this run's, in the same
order, is upgraded first: rewritten beside itself with this run's header, its rows' new
cells empty, then renamed over the old file in one step.

A lock (``.<name>.lock`` beside the file the name stands for, portable) is held from
opening to closing, so a second run on the same CSV is refused whether or not the file
exists yet, under any spelling: a symbolic link locks the file it names. The file itself is
also locked (``flock``: by its identity, so every hard link to it, in any folder, is the
same CSV) from the moment it exists: at the start when it does, else when this run creates
it, before its first byte, and the file an upgrade renames into place before the rename.
The lock file holds its run's process id and is removed when the run ends; a killed run's
is taken over by the next run once that process is gone (the file lock ends with its
process). Where ``flock`` is missing (Windows) or refused (some network file systems),
the file is locked by a second lock file named by its identity, beside it. The file is
only created (or truncated) when the first row arrives or the run ends cleanly, so a run
that fails on a configuration error leaves an earlier CSV untouched.
"""

from __future__ import annotations

import codecs
import contextlib
import csv
import io
import os
import re
import stat
import sys
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from filelock import SoftFileLock, Timeout, lock_descriptor

from agentiqa_cli.errors import ConfigError, OutputWriteError
from agentiqa_cli.io.read import read_bytes
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


@dataclass(frozen=True)
class DoneRows:
    """The (image cell, key) pairs of complete rows in a CSV, asked as ``is_done`` asks;
    a plain value, so it travels to other processes (Ray workers)."""

    rows: frozenset[tuple[str, str]]
    columns: tuple[str, ...]

    def __call__(self, image: str, key: str) -> bool:
        return bool(self.rows) and (image_cell(image, self.columns), key) in self.rows


def image_cell(image: str, columns: Sequence[str]) -> str:
    """An input path as the CSV's image cell holds it (sanitized as every cell is)."""
    cols = list(columns)
    return row_of(Result(image=image), cols)[cols.index("image")]


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
        if t.scope is not None:  # a region's reading: in the tools cell, not the image's columns
            continue
        cells[f"{t.tool}_raw"] = _fmt(t.raw, 5)
        cells[f"{t.tool}_norm"] = _fmt(t.norm, 4)
    cells.update(extra or {})
    return [safe_cell(cells.get(c, "")) for c in columns]


# A spreadsheet evaluates a cell that starts with one of these as a formula (CSV injection).
_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")
_NUMBER = re.compile(r"[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?")


def _formula_like(value: str) -> bool:
    # after any apostrophes of its own, so that original_cell undoes safe_cell exactly
    rest = value.lstrip("'")
    return rest.startswith(_FORMULA_START) and not _NUMBER.fullmatch(rest)


def safe_cell(value: str) -> str:
    """A text cell a spreadsheet would run as a formula gets a leading ``'`` (shown, not
    evaluated); plain numbers such as ``-0.5`` stay numbers."""
    return "'" + value if _formula_like(value) else value


def safe_row(cells: Sequence[object]) -> list[str]:
    """``safe_cell`` over a row of any values (other CSVs: benchmark reports)."""
    return [safe_cell(str(c)) for c in cells]


def original_cell(value: str) -> str:
    """The text ``safe_cell`` was given (for reading our own CSV back)."""
    return value[1:] if value.startswith("'") and _formula_like(value) else value


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


def lock_path(path: Path) -> Path:
    """The lock file guarding a results CSV (hidden, so globs and folders never pick it up),
    beside the file the name stands for (through symbolic links)."""
    real = Path(os.path.realpath(path))
    return real.with_name(f".{real.name}.lock")


def _identity_lock_path(path: Path, st: os.stat_result) -> Path:
    """Where ``flock`` cannot lock the file itself: a lock file named by its identity."""
    return lock_path(path).with_name(f".agentiqa-{st.st_dev:x}-{st.st_ino:x}.lock")


class RunLock:
    """The locks of one output file, all or none: ConfigError when another live run holds
    one. The name's lock file (``lock_path``) records its holder's process id and is removed
    on release; one left by a killed run is taken over (filelock's stale-holder recovery).
    The file itself, when it exists, is locked by ``hold``/``hold_file``."""

    def __init__(self, path: Path):
        self.path = path
        self._held: list[SoftFileLock] = []
        self._fds: list[int] = []  # open descriptors whose ``flock`` this run holds
        self._ids: set[tuple[int, int]] = set()  # (device, inode) of every file held
        try:
            self._take(SoftFileLock(lock_path(path), timeout=0, thread_local=False))
            if path.is_file():
                self.hold_file(path)
        except BaseException:
            self.release()
            raise

    def _take(self, lock: SoftFileLock) -> None:
        try:
            lock.acquire()
        except Timeout:
            raise self._busy() from None
        except OSError as e:
            raise ConfigError(f"{self.path}: cannot take its lock: {e.strerror or e}") from None
        self._held.append(lock)

    def _busy(self) -> ConfigError:
        return ConfigError(f"{self.path}: another agentiqa run is writing it")

    def hold_file(self, path: Path) -> None:
        """``hold`` the file at ``path``."""
        try:
            fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
        except OSError as e:
            raise ConfigError(f"{self.path}: cannot take its lock: {e.strerror or e}") from None
        self.hold(fd)

    def hold(self, fd: int) -> None:
        """Lock the file open on ``fd`` (the lock owns ``fd`` from now on) by its identity, so
        a run on any other name of it (a hard link, in any folder) is refused; a file already
        held is left as it is. ConfigError when another run holds it."""
        try:
            st = os.fstat(fd)
            if (st.st_dev, st.st_ino) in self._ids:
                os.close(fd)
                return
            # flock (filelock's descriptor lock). Not on Windows: there it locks a byte of
            # the file, which would refuse this run's own writes through its other handle
            if sys.platform != "win32":
                try:
                    locked = lock_descriptor(fd, blocking=False)
                except OSError:  # no flock here (a network file system): a lock file
                    pass
                else:
                    if not locked:
                        raise self._busy()
                    self._fds.append(fd)
                    self._ids.add((st.st_dev, st.st_ino))
                    return
            os.close(fd)
        except BaseException:
            with contextlib.suppress(OSError):
                os.close(fd)
            raise
        self._take(SoftFileLock(_identity_lock_path(self.path, st), timeout=0, thread_local=False))
        self._ids.add((st.st_dev, st.st_ino))

    def release(self) -> None:
        while self._fds:
            with contextlib.suppress(OSError):
                os.close(self._fds.pop())
        while self._held:
            self._held.pop().release()
        self._ids.clear()


def read_records(data: bytes, where: str, resuming: bool = True) -> tuple[list[list[str]], int]:
    """The complete records of a CSV and the number of bytes they span.

    Any valid quoting and line ending is accepted. Only a final partial record (no line
    ending after it, or cut inside a quoted cell) is left out; anything else that does not
    parse is a ConfigError, so the caller can stop before touching the file. The one parser
    of results CSVs: ``--resume`` (``resuming``) and every reader (``read_table``) use it.
    """
    start = len(codecs.BOM_UTF8) if data.startswith(codecs.BOM_UTF8) else 0
    consumed = start

    def lines() -> Iterator[str]:
        nonlocal consumed
        for raw in data[start:].splitlines(keepends=True):
            consumed += len(raw)
            try:
                yield raw.decode("utf-8")
            except UnicodeDecodeError:
                if consumed < len(data):
                    raise
                return  # the final record was cut inside a multi-byte character

    def refuse(why: str) -> ConfigError:
        if not resuming:
            return ConfigError(f"{where}: not a readable CSV: {why}")
        return ConfigError(
            f"{where}: cannot resume: {why}; nothing was changed "
            "(repair the file, or use another --out)"
        )

    records: list[tuple[list[str], int]] = []
    reader = csv.reader(lines(), strict=True)
    try:
        for row in reader:
            if "\0" in "".join(row):
                raise refuse(f"record {reader.line_num} holds NUL bytes")
            records.append((row, consumed))
    except csv.Error as e:
        # a cut write is a prefix of a valid record: it can only run out inside a quoted
        # cell; any other error, on the last line too, is damage (a stray quote)
        if consumed < len(data) or "unexpected end of data" not in str(e):
            raise refuse(f"line {reader.line_num}: {e}") from None
    except UnicodeDecodeError:
        raise refuse(f"line {reader.line_num + 1} is not UTF-8") from None
    if records and data[records[-1][1] - 1 : records[-1][1]] not in (b"\n", b"\r"):
        records.pop()  # no line ending after it: the write was cut
    end = records[-1][1] if records else start
    if records and _whole_record_inside(data[end:], len(records[0][0])):
        # a cut write is part of one record; this tail holds whole ones (a stray quote
        # opened a cell that runs to the end of the file): dropping it would lose rows
        line = data[:end].count(b"\n") + 1
        raise refuse(f"a quote opened on line {line} is never closed (a stray quote?)")
    rows = [row for row, _ in records]
    return rows, end


def _whole_record_inside(tail: bytes, width: int) -> bool:
    """Whether a later line of ``tail`` is on its own a complete record of ``width`` cells."""
    for raw in tail.splitlines(keepends=True)[1:]:
        if not raw.endswith((b"\n", b"\r")):
            break
        try:
            cells = next(csv.reader([raw.decode("utf-8").rstrip("\r\n")], strict=True), [])
        except (csv.Error, UnicodeDecodeError):
            continue
        if len(cells) == width:
            return True
    return False


MAX_TABLE_BYTES = 1 << 32  # a results CSV is read whole; far above millions of rows


def read_table(path: Path) -> tuple[list[str], list[dict[str, str]]]:
    """A results CSV's header and its complete rows, each cell as it was given to the
    writer (``original_cell``), parsed by ``read_records`` as ``--resume`` parses it.

    Blank records are skipped; a row shorter than the header gets empty cells, cells past
    the header are dropped (a CSV another program wrote). ConfigError (exit 2) when the
    file is missing or is not a CSV."""
    # the shared reader: a folder, FIFO or device is refused at once, never waited on
    data = read_bytes(path, "results CSV", limit=MAX_TABLE_BYTES)
    records, _ = read_records(data, str(path), resuming=False)
    header = records[0] if records else []
    rows = []
    for record in records[1:]:
        if any(record):
            cells = [original_cell(c) for c in record[: len(header)]]
            rows.append(dict(zip(header, cells + [""] * (len(header) - len(cells)), strict=True)))
    return header, rows


class ResultsWriter:
    """Append-only CSV writer; ``done`` holds the (image, key) cells of complete rows present."""

    def __init__(
        self,
        path: Path,
        columns: list[str],
        resume: bool = False,
        extra: Callable[[Result], Mapping[str, str]] | None = None,
        optional: Sequence[str] = (),
    ):
        self.path = path
        self.columns = columns
        self.extra = extra  # cells of added columns, per result
        self.optional = frozenset(optional)  # columns an older version's CSV may lack
        self.done: set[tuple[str, str]] = set()
        self._fd = -1
        self._pending: list[list[str]] | None = None  # an older CSV's rows, to upgrade
        self._lock: RunLock | None = None
        path.parent.mkdir(parents=True, exist_ok=True)
        if not path.exists() or path.is_file():  # (the guard refuses devices and pipes)
            self._lock = RunLock(path)  # two runs on one CSV would both write the same images
        try:
            if resume and path.is_file() and path.stat().st_size > 0:
                self._prepare_resume()
        except BaseException:
            self._release()
            raise

    def is_done(self, image: str, key: str) -> bool:
        """Whether a complete row for this input path with this key is already present."""
        return (image_cell(image, self.columns), key) in self.done

    def _prepare_resume(self) -> None:
        data = self.path.read_bytes()
        rows, end = read_records(data, str(self.path))
        header = rows[0] if rows else []
        if header != self.columns and not self._older(header):
            raise ConfigError(
                f"{self.path}: its columns differ from this run's (other tools?); "
                "use another --out or drop --resume"
            )
        width = len(header)
        complete = [r for r in rows[1:] if r]  # blank lines are harmless
        for row in complete:
            if len(row) != width:
                raise ConfigError(
                    f"{self.path}: cannot resume: a record has {len(row)} cells, the header "
                    f"{width}; nothing was changed (repair the file, or use another --out)"
                )
        if header != self.columns:  # rewritten on the first write: a run that fails
            at = {c: i for i, c in enumerate(header)}  # before any row leaves it as it was
            complete = [[r[at[c]] if c in at else "" for c in self.columns] for r in complete]
            self._pending = complete
        else:
            self._fd = os.open(self.path, os.O_RDWR | os.O_APPEND)
            self._hold(self._fd)
            if end != len(data):
                os.ftruncate(self._fd, end)
        image_at = self.columns.index("image")
        key_at = self.columns.index("key")
        status_at = self.columns.index("status")
        transient_at = self.columns.index("transient")
        for row in complete:
            if row[key_at] and not (row[status_at] == "error" and row[transient_at] == "1"):
                self.done.add((row[image_at], row[key_at]))

    def _older(self, header: list[str]) -> bool:
        """Whether ``header`` is this run's columns without some optional ones (a CSV an
        older version wrote), in any order: ``_prepare_resume`` maps the cells by name."""
        have = set(header)
        return (
            len(have) == len(header)
            and have <= set(self.columns)
            and set(self.columns) - have <= self.optional
        )

    def _upgrade(self, rows: list[list[str]]) -> None:
        """Replace the CSV with this run's header and ``rows`` (complete ones, already in
        this run's columns): written beside it, flushed to disk, then renamed over it, so a
        crash leaves the old file or the new one, never a mix. Through a symbolic link the
        file it names is replaced (the link stays), with the old file's mode (and owner,
        where allowed)."""
        target = Path(os.path.realpath(self.path))
        tmp = target.with_name(f".{target.name}.upgrade")
        st = target.stat()
        try:
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            try:
                os.fchmod(fd, stat.S_IMODE(st.st_mode))
                with contextlib.suppress(OSError):  # only root may give a file away
                    os.fchown(fd, st.st_uid, st.st_gid)
                write_all(fd, _record(self.columns) + b"".join(_record(r) for r in rows))
                os.fsync(fd)
                self._hold(fd)  # the new file is locked before its name leads to it
            finally:
                os.close(fd)
            os.replace(tmp, target)
        except BaseException as e:
            tmp.unlink(missing_ok=True)
            if not isinstance(e, OSError):
                raise
            raise OutputWriteError(
                f"{self.path}: cannot add this version's columns for --resume: "
                f"{e.strerror or e}; the file was not changed"
            ) from None

    def _ensure_open(self) -> None:
        if self._fd >= 0:
            return
        if self._pending is not None:
            self._upgrade(self._pending)
            self._pending = None
            flags = os.O_WRONLY | os.O_APPEND
        else:
            flags = os.O_WRONLY | os.O_CREAT  # truncated once locked
        try:
            self._fd = os.open(self.path, flags, 0o644)
            if not flags & os.O_APPEND:
                # a file this run creates is locked before its first byte: a hard link made
                # to it later is the same CSV for another run; one that another run holds
                # (a link made in between) is refused with its bytes untouched
                self._hold(self._fd)
                os.ftruncate(self._fd, 0)
                write_all(self._fd, _record(self.columns))
        except OSError as e:
            raise self._failed(e) from None

    def _hold(self, fd: int) -> None:
        """Lock the file open on ``fd`` (our descriptor stays ours) as this run's CSV."""
        if self._lock is not None:
            self._lock.hold(os.dup(fd))

    def write(self, result: Result) -> None:
        extra = self.extra(result) if self.extra is not None else None
        record = _record(row_of(result, self.columns, extra))
        self._ensure_open()
        try:
            write_all(self._fd, record)
        except OSError as e:  # disk full, quota, a device: the rows before stay valid
            raise self._failed(e) from None

    def _failed(self, e: OSError) -> OutputWriteError:
        return OutputWriteError(
            f"{self.path}: cannot write: {e.strerror or e}; the rows written before are "
            "complete (--resume continues once there is room)"
        )

    def close(self, completed: bool = True) -> None:
        """``completed=False`` (the run failed before any row): leave the file as it was."""
        try:
            if completed:
                self._ensure_open()
        finally:
            if self._fd >= 0:
                os.close(self._fd)
                self._fd = -1
            self._release()

    def _release(self) -> None:
        if self._lock is not None:
            self._lock.release()
            self._lock = None

    def __enter__(self) -> ResultsWriter:
        return self

    def __exit__(self, exc_type: object, *exc: object) -> None:
        self.close(completed=exc_type is None)
