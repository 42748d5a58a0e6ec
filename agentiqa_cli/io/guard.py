"""Which files a run may write, decided before any image is processed (exit 2 otherwise).

- an input (image or reference) is never an output, ``--force`` or not;
- ``--out`` and ``--trace`` are two different files;
- an existing file is only replaced when it is one of ours (a results CSV by its header, a
  trace by its ``run`` header line) or is empty, unless ``--force``;
- each output can be written: not a folder, not a device or pipe, not read-only, its folder
  exists or can be made and files can be created in it;
- our own outputs found by a folder or a glob (``'d/*' -o d/results.csv``) are not inputs
  (an empty file named as an input is an input: it is never taken for one of ours);
- a whole-file output (a page, an overlay, a pool, a report table, a fixed image) is written
  to a temporary file in its folder and renamed over the old one only once it is complete
  (``write_whole``, ``whole_file``): a failed run leaves the previous file as it was.

The same rules hold for the other commands' outputs: ``eval-bench``'s ``--out-dir`` (its
trace and report files), ``calibrate``'s overlay and ``evaluate``'s ``--gen-dir``.
"""

from __future__ import annotations

import contextlib
import csv
import errno
import os
import re
import secrets
import sqlite3
import stat
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO

import yaml
from pydantic import ValidationError

from agentiqa_cli.errors import ConfigError
from agentiqa_cli.imaging.discover import Job
from agentiqa_cli.imaging.load import display_path
from agentiqa_cli.io.results import BASE_COLUMNS, lock_path
from agentiqa_cli.records import TraceEvent

_SNIFF = 64 * 1024  # our headers are far shorter


def trace_path_for(out: Path, trace: Path | None) -> Path:
    """``--trace``, or beside the CSV: results.csv → trace.jsonl (docs/commands.md), other names
    <stem>.trace.jsonl."""
    default = "trace.jsonl" if out.name == "results.csv" else out.stem + ".trace.jsonl"
    return trace or out.with_name(default)


def _first_line(path: Path) -> str | None:
    """The file's first line (BOM stripped), "" when empty, None when it is not text."""
    try:
        with open(path, "rb") as f:
            head = f.read(_SNIFF)
    except OSError:
        return None
    # any line ending: LF, CRLF, or a lone CR (an old Mac editor's save)
    line = re.split(rb"\r\n|\r|\n", head, maxsplit=1)[0].removeprefix(b"\xef\xbb\xbf")
    try:
        return line.decode("utf-8")
    except UnicodeDecodeError:
        return None


def is_results_file(path: Path) -> bool:
    """An empty file, or a CSV whose header starts with our columns."""
    line = _first_line(path)
    if line is None:
        return False
    if line == "":
        return path.stat().st_size == 0
    try:
        header = next(csv.reader([line]), [])
    except csv.Error:  # not a CSV header at all
        return False
    return header[: len(BASE_COLUMNS)] == BASE_COLUMNS


def is_trace_file(path: Path) -> bool:
    """An empty file, or JSON lines starting with our ``run`` header (or, as eval-bench
    wrote them before it had one, with another trace record of ours: records forbid
    unknown fields, so someone's ``{"step": "final", "loss": 0.3}`` log is not ours)."""
    line = _first_line(path)
    if line is None:
        return False
    if line == "":
        return path.stat().st_size == 0
    if line.startswith('{"step":"run"'):  # as we write it (a long header may be cut here)
        return True
    try:  # a record of ours, not any JSON with a "step" (a training log's "final", say)
        TraceEvent.model_validate_json(line)
    except ValidationError:
        return False
    return True


def is_report_file(path: Path) -> bool:
    """An empty file, or an HTML page of ``agentiqa report``."""
    try:
        with open(path, "rb") as f:
            head = f.read(_SNIFF)
    except OSError:
        return False
    return head == b"" or (
        head.startswith(b"<!DOCTYPE html>") and b"<title>agentiqa report" in head
    )


def is_overlay_file(path: Path) -> bool:
    """An empty file, or a calibration overlay: YAML whose only key is ``tools``."""
    try:
        if path.stat().st_size > 16 * _SNIFF:  # far more tools than there are cards
            return False
        with open(path, encoding="utf-8") as f:
            doc = yaml.safe_load(f)
    except (OSError, UnicodeError, yaml.YAMLError, RecursionError, ValueError):
        return False
    return doc is None or (isinstance(doc, dict) and set(doc) == {"tools"})


def is_pool_file(path: Path) -> bool:
    """An empty file, or an SQLite database with an experience pool's tables."""
    try:
        with open(path, "rb") as f:
            head = f.read(16)
    except OSError:
        return False
    if head == b"":
        return True
    if head != b"SQLite format 3\x00":
        return False

    try:
        con = sqlite3.connect(f"{_real(path).as_uri()}?mode=ro", uri=True)
        try:
            names = {r[0] for r in con.execute("SELECT name FROM sqlite_master")}
        finally:
            con.close()
    except sqlite3.Error:
        return False
    return {"meta", "entries", "records"} <= names


def _identity(path: Path) -> tuple[int, int] | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_dev, st.st_ino)


def _same(a: Path, b: Path) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:  # one does not exist (yet)
        return os.path.realpath(a) == os.path.realpath(b)


def _real(path: Path) -> Path:
    """The file a name stands for: through a symbolic link the file it names is replaced
    (the link stays), so a link is never swapped for a regular file."""
    return Path(os.path.realpath(path))


@contextlib.contextmanager
def whole_file(path: Path, mode: str = "w", **kw: object) -> Iterator[IO[str]]:
    """Write ``path`` as a whole: into a temporary file in its folder, flushed to disk,
    renamed over the old file only when the block ends without an error (keeping the old
    file's mode). An error anywhere leaves the old file, if any, exactly as it was."""
    target = _real(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    if target.exists() and not target.is_file():  # a device or a pipe: never replaced
        raise ConfigError(f"{display_path(path)}: not a regular file; refusing to replace it")
    fd, tmp = _new_beside(target)  # created 0o666 less the umask, as open() would
    try:
        with contextlib.suppress(OSError):
            if target.exists():  # a replaced file keeps its mode
                os.fchmod(fd, stat.S_IMODE(target.stat().st_mode))
        with open(fd, mode, **kw) as f:  # type: ignore[call-overload]
            yield f
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_whole(path: Path, data: str | bytes) -> None:
    """``whole_file`` for data already in memory (text is written as UTF-8)."""
    if isinstance(data, str):
        with whole_file(path, "w", encoding="utf-8", newline="") as f:
            f.write(data)
    else:
        with whole_file(path, "wb") as fb:
            fb.write(data)  # type: ignore[arg-type]


def _new_beside(target: Path) -> tuple[int, str]:
    """A new, hidden temporary file in ``target``'s folder: (descriptor, name)."""
    while True:
        tmp = str(target.with_name(f".{target.name}.{secrets.token_hex(6)}.tmp"))
        try:
            return os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666), tmp
        except FileExistsError:
            continue


def _probe_beside(path: Path) -> None:
    """Create and remove a hidden file beside ``path``; where the probe's longer name is
    too long for the file system, ``path`` itself (created and removed at once)."""
    try:
        fd, probe = _new_beside(path)
    except OSError as e:
        if e.errno != errno.ENAMETOOLONG:
            raise
        fd, probe = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644), str(path)
    os.close(fd)
    os.unlink(probe)


def _check_writable(path: Path, what: str) -> None:
    name = f"{what} {display_path(path)}"
    try:
        if path.is_dir():
            raise ConfigError(f"{name}: is a folder; give a file name")
        if path.exists():
            st = path.stat()
            if not path.is_file():
                raise ConfigError(f"{name}: not a regular file (a device or a pipe)")
            if not st.st_mode & 0o222:
                raise ConfigError(f"{name}: the file is read-only")
    except OSError as e:  # a name too long for the file system, a loop of links
        raise ConfigError(f"{name}: cannot write there: {e.strerror or e}") from None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except (FileExistsError, NotADirectoryError):
        raise ConfigError(f"{name}: {display_path(path.parent)} is not a folder") from None
    except OSError as e:
        raise ConfigError(
            f"{name}: cannot create its folder {display_path(path.parent)}: {e.strerror or e}"
        ) from None
    try:
        if path.exists():
            os.close(os.open(path, os.O_WRONLY | os.O_APPEND))
        else:  # can a file be created there? A hidden probe, removed at once: the name
            _probe_beside(path)  # itself never appears before its run writes it
    except OSError as e:
        raise ConfigError(f"{name}: cannot write there: {e.strerror or e}") from None


def check_file(
    path: Path, what: str, ours: Callable[[Path], bool], kind: str, force: bool | None = False
) -> None:
    """One output: writable, and when it exists one of ours (``kind``) unless ``force``
    (None: the command has no --force)."""
    _check_writable(path, what)
    if path.exists() and not force and not ours(path):
        hint = "--force to replace it" if force is not None else "remove it or choose another"
        raise ConfigError(
            f"{what} {display_path(path)} exists and is not {kind}; refusing to overwrite it "
            f"({hint})"
        )


def _not_inputs(outputs: Iterable[Path], inputs: Iterable[Path], what: str) -> None:
    """No output may be an input (compared by identity: links and other spellings count)."""
    own = {i for p in outputs if (i := _identity(p)) is not None}
    if not own:
        return  # nothing exists yet: nothing to overwrite
    for p in inputs:
        if _identity(p) in own:
            raise ConfigError(
                f"{display_path(p)} is an input and an output of this run; refusing to "
                f"overwrite an input (choose another {what})"
            )


def check_out_dir(
    out_dir: Path,
    files: Sequence[str],
    inputs: Iterable[Path],
    input_dir: Path | None = None,
    force: bool = False,
) -> None:
    """``eval-bench``'s ``--out-dir``, before any work: a folder (or one that can be made);
    its ``trace.jsonl`` one of ours or empty; each file it gets a regular, writable file
    that is not an input; its ``images/`` (where synthesized images go) not ``input_dir``."""
    shown = f"--out-dir {display_path(out_dir)}"
    if out_dir.exists() and not out_dir.is_dir():
        raise ConfigError(f"{shown}: not a folder")
    for name in files:
        if name == "trace.jsonl":
            check_file(out_dir / name, "--out-dir", is_trace_file, "an agentiqa trace", force)
        else:
            _check_writable(out_dir / name, "--out-dir")
    images = Path(os.path.realpath(out_dir / "images"))
    if input_dir is not None and Path(os.path.realpath(input_dir)).is_relative_to(images):
        raise ConfigError(
            f"{shown}: the input folder {display_path(input_dir)} is in its images/ folder, "
            "where synthesized images are written (choose another --out-dir)"
        )
    _not_inputs((out_dir / n for n in files), inputs, "--out-dir")


def check_overlay_out(
    out: Path, inputs: Iterable[Path], force: bool = False, what: str = "--overlay"
) -> None:
    """``calibrate --overlay``: writable, one of ours (an overlay) or empty unless
    ``force``, not an input."""
    check_file(out, what, is_overlay_file, "a calibration overlay", force)
    _not_inputs([out], inputs, what)


def check_pool_out(out: Path, inputs: Iterable[Path], force: bool = False) -> None:
    """``experience build --out``: writable, a pool of ours or empty unless ``force``, not
    an input."""
    check_file(out, "--out", is_pool_file, "an experience pool", force)
    _not_inputs([out], inputs, "--out")


def identities(paths: Iterable[Path]) -> set[tuple[int, int]]:
    """The (device, inode) of each path that exists."""
    return {i for p in paths if (i := _identity(p)) is not None}


def image_out_refusal(path: Path, inputs: set[tuple[int, int]]) -> str | None:
    """Why an image this run makes may not be written at ``path`` (None: it may). Only a
    new name or a PNG there (an earlier run's output of the same name) is replaced; never
    an input under any name, a link, a device, or a file of another kind."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return None
    except OSError as e:
        return f"{display_path(path)}: cannot check it: {e.strerror or e}"
    if stat.S_ISLNK(st.st_mode):
        return f"{display_path(path)}: is a symbolic link; refusing to write through it"
    if not stat.S_ISREG(st.st_mode):
        return f"{display_path(path)}: not a regular file; refusing to replace it"
    if (st.st_dev, st.st_ino) in inputs:
        return f"{display_path(path)}: is an input; refusing to overwrite it"
    try:
        with open(path, "rb") as f:
            png = f.read(8) == b"\x89PNG\r\n\x1a\n"
    except OSError as e:
        return f"{display_path(path)}: cannot read it: {e.strerror or e}"
    if not png:
        return f"{display_path(path)}: exists and is not a PNG; refusing to overwrite it"
    return None


# evaluate's generated images (``evaluate.draws.GeneratorSource.path``): r01-01.png
GENERATED = re.compile(r"r\d{2,}-\d{2,}\.png")


def check_gen_dir(gen_dir: Path, csv_path: Path, resume: bool, force: bool) -> None:
    """``evaluate --gen-dir``: a folder (or one that can be made) where images can be
    written. A generated image already there is replaced only when it is one of ours,
    named by the results CSV this run replaces, unless ``--force`` (``--resume`` continues
    the run that made them): nobody's r01-01.png is deleted because it sits there."""
    shown = f"--gen-dir {display_path(gen_dir)}"
    if gen_dir.exists() and not gen_dir.is_dir():
        raise ConfigError(f"{shown}: not a folder")
    _check_writable(gen_dir / "r01-01.png", "--gen-dir")
    if force or resume or not gen_dir.is_dir():
        return
    there = sorted(p for p in gen_dir.iterdir() if GENERATED.fullmatch(p.name))
    if not there:
        return
    named: set[tuple[int, int] | None] = set()
    if csv_path.is_file() and is_results_file(csv_path):
        with open(csv_path, newline="", encoding="utf-8", errors="replace") as f:
            named = {_identity(Path(r.get("image") or "")) for r in csv.DictReader(f)}
    foreign = [p for p in there if _identity(p) not in named]
    if foreign:
        more = f" and {len(foreign) - 1} more" if len(foreign) > 1 else ""
        raise ConfigError(
            f"{shown} holds {display_path(foreign[0].name)}{more}, not named by "
            f"{display_path(csv_path)}; refusing to overwrite images of another run "
            "(--resume to continue it, --force to replace them, or another --gen-dir)"
        )


def check_report_page(html: Path, csv: Path, what: str = "--out") -> None:
    """``agentiqa report``'s page: never the CSV it reads, never a file that is not a page
    of ours (an image listed in the CSV, say: so no ``--force``)."""
    if _same(html, csv):
        raise ConfigError(f"{what} {display_path(html)} is the results CSV it reports on")
    check_file(html, what, is_report_file, "an agentiqa report", force=None)


@dataclass(frozen=True)
class Outputs:
    """The files one run writes: the results CSV, its trace, and the CSV's lock."""

    csv: Path
    trace: Path
    force: bool = False
    report: Path | None = None  # --report's HTML page

    @classmethod
    def of(
        cls, out: Path, trace: Path | None, force: bool = False, report: Path | None = None
    ) -> Outputs:
        return cls(out, trace_path_for(out, trace), force, report)

    def _files(self) -> list[tuple[Path, str, Callable[[Path], bool], str]]:
        files: list[tuple[Path, str, Callable[[Path], bool], str]] = [
            (self.csv, "--out", is_results_file, "an agentiqa results CSV"),
            (self.trace, "--trace", is_trace_file, "an agentiqa trace"),
        ]
        if self.report is not None:
            files.append((self.report, "--report", is_report_file, "an agentiqa report"))
        return files

    def check(self) -> None:
        """Raise ConfigError (exit 2) unless both outputs may be written."""
        files = self._files()
        for i, (a, what_a, _, _) in enumerate(files):
            for b, what_b, _, _ in files[i + 1 :]:
                if _same(a, b):
                    raise ConfigError(
                        f"{what_a} and {what_b} are the same file ({display_path(a)}); "
                        "give each its own name"
                    )
        for path, what, ours, kind in files:
            check_file(path, what, ours, kind, self.force)

    def screen(self, jobs: Sequence[Job]) -> list[Job]:
        """The jobs without our own outputs; an input that would be overwritten is an error.
        Files are compared by identity (device, inode): links and other spellings count."""
        own: dict[tuple[int, int], bool] = {}  # the outputs that exist → is it one of ours
        for path, _, ours, _ in self._files():
            if (ident := _identity(path)) is not None:  # (ours but empty: also an input)
                own[ident] = ours(path) and path.stat().st_size > 0
        if (ident := _identity(lock_path(self.csv))) is not None:
            own[ident] = True
        if not own:
            return list(jobs)
        kept = []
        for job in jobs:
            if own.get(_identity(job.image) or (-1, -1)):
                continue  # one of ours, found by a folder or a glob
            for p in (job.image, job.reference):
                if p is not None and _identity(p) in own:
                    raise ConfigError(
                        f"{display_path(p)} is an input and an output of this run; "
                        "refusing to overwrite an input (choose another output name)"
                    )
            kept.append(job)
        return kept

    def screened(self, jobs: Sequence[Job]) -> list[Job]:
        """``screen`` then ``check``: the jobs to run, once the outputs are known to be safe."""
        kept = self.screen(jobs)
        self.check()
        return kept
