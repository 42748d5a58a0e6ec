"""Which files a run may write, decided before any image is processed (exit 2 otherwise).

- an input (image or reference) is never an output, ``--force`` or not;
- ``--out`` and ``--trace`` are two different files;
- an existing file is only replaced when it is one of ours (a results CSV by its header, a
  trace by its ``run`` header line) or is empty, unless ``--force``;
- each output can be written: not a folder, not a device or pipe, not read-only, its folder
  exists or can be made and files can be created in it;
- our own outputs found by a folder or a glob (``'d/*' -o d/results.csv``) are not inputs.
"""

from __future__ import annotations

import csv
import json
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from agentiqa_cli.errors import ConfigError
from agentiqa_cli.imaging.discover import Job
from agentiqa_cli.imaging.load import display_path
from agentiqa_cli.io.results import BASE_COLUMNS, lock_path

_SNIFF = 64 * 1024  # our headers are far shorter


def trace_path_for(out: Path, trace: Path | None) -> Path:
    """``--trace``, or beside the CSV: results.csv → trace.jsonl (SPEC §1), other names
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
    line = head.split(b"\n", 1)[0].rstrip(b"\r").removeprefix(b"\xef\xbb\xbf")
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
    header = next(csv.reader([line]), [])
    return header[: len(BASE_COLUMNS)] == BASE_COLUMNS


def is_trace_file(path: Path) -> bool:
    """An empty file, or JSON lines starting with our ``run`` header."""
    line = _first_line(path)
    if line is None:
        return False
    if line == "":
        return path.stat().st_size == 0
    try:
        first = json.loads(line)
    except ValueError:
        return False
    return isinstance(first, dict) and first.get("step") == "run"


def _same(a: Path, b: Path) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:  # one does not exist (yet)
        return os.path.realpath(a) == os.path.realpath(b)


def _check_writable(path: Path, what: str) -> None:
    name = f"{what} {display_path(path)}"
    if path.is_dir():
        raise ConfigError(f"{name}: is a folder; give a file name")
    if path.exists():
        st = path.stat()
        if not path.is_file():
            raise ConfigError(f"{name}: not a regular file (a device or a pipe)")
        if not st.st_mode & 0o222:
            raise ConfigError(f"{name}: the file is read-only")
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
        else:  # can a file be created there? (removed at once: nothing is left behind)
            os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644))
            path.unlink()
    except OSError as e:
        raise ConfigError(f"{name}: cannot write there: {e.strerror or e}") from None


@dataclass(frozen=True)
class Outputs:
    """The files one run writes: the results CSV, its trace, and the CSV's lock."""

    csv: Path
    trace: Path
    force: bool = False

    @classmethod
    def of(cls, out: Path, trace: Path | None, force: bool = False) -> Outputs:
        return cls(out, trace_path_for(out, trace), force)

    def check(self) -> None:
        """Raise ConfigError (exit 2) unless both outputs may be written."""
        if _same(self.csv, self.trace):
            raise ConfigError(
                f"--out and --trace are the same file ({display_path(self.csv)}); "
                "give the trace its own name"
            )
        for path, what, ours, kind in (
            (self.csv, "--out", is_results_file, "an agentiqa results CSV"),
            (self.trace, "--trace", is_trace_file, "an agentiqa trace"),
        ):
            _check_writable(path, what)
            if path.exists() and not self.force and not ours(path):
                raise ConfigError(
                    f"{what} {display_path(path)} exists and is not {kind}; "
                    "refusing to overwrite it (--force to replace it)"
                )

    def screen(self, jobs: Sequence[Job]) -> list[Job]:
        """The jobs without our own outputs; an input that would be overwritten is an error."""
        own = [
            (self.csv, is_results_file),
            (self.trace, is_trace_file),
            (lock_path(self.csv), lambda _: True),
        ]
        kept = []
        for job in jobs:
            hit = next(((p, ours) for p, ours in own if _same(job.image, p)), None)
            if hit is not None and hit[1](hit[0]):
                continue  # one of ours, found by a folder or a glob
            for p in (job.image, job.reference):
                if p is not None and any(_same(p, o) for o, _ in own):
                    raise ConfigError(
                        f"{display_path(p)} is an input and an output of this run; "
                        "refusing to overwrite an input (choose another --out/--trace)"
                    )
            kept.append(job)
        return kept

    def screened(self, jobs: Sequence[Job]) -> list[Job]:
        """``screen`` then ``check``: the jobs to run, once the outputs are known to be safe."""
        kept = self.screen(jobs)
        self.check()
        return kept
