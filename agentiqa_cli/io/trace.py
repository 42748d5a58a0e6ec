"""The JSONL trace: a ``run`` header, then every step of every image, one object per line."""

from __future__ import annotations

import os
import threading
from pathlib import Path

from agentiqa_cli.records import TraceEvent


class TraceWriter:
    def __init__(self, path: Path | None, append: bool = False):
        self.path = path
        self._lock = threading.Lock()
        self._fd = -1
        if path is not None:
            path.parent.mkdir(parents=True, exist_ok=True)
            flags = os.O_WRONLY | os.O_CREAT | (os.O_APPEND if append else os.O_TRUNC)
            self._fd = os.open(path, flags, 0o644)
            if append:
                self._terminate_partial_line()

    def _terminate_partial_line(self) -> None:
        assert self.path is not None
        size = self.path.stat().st_size
        if size:
            with open(self.path, "rb") as f:
                f.seek(size - 1)
                if f.read(1) != b"\n":
                    os.write(self._fd, b"\n")

    def emit(self, event: TraceEvent) -> None:
        if self._fd < 0:
            return
        line = event.model_dump_json(exclude_none=True) + "\n"
        with self._lock:
            os.write(self._fd, line.encode("utf-8"))

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1
