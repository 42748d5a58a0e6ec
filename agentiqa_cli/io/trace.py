"""The JSONL trace: a ``run`` header, then every step of every image, one object per line.

Like the CSV, the file is only created when the first event after the header arrives (or
the run ends cleanly), so a run that stops on a configuration error leaves it untouched.
"""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass
from pathlib import Path

from pydantic import JsonValue

from agentiqa_cli.errors import OutputWriteError
from agentiqa_cli.io.results import write_all
from agentiqa_cli.records import PromptRequest, ReplyRecord, Step, ToolRequest, TraceEvent, Usage


class TraceWriter:
    def __init__(self, path: Path | None, append: bool = False, header: TraceEvent | None = None):
        self.path = path
        self.append = append
        self._header = header
        self._lock = threading.Lock()
        self._fd = -1

    def _open(self) -> None:
        assert self.path is not None
        self.path.parent.mkdir(parents=True, exist_ok=True)
        flags = os.O_WRONLY | os.O_CREAT | (os.O_APPEND if self.append else os.O_TRUNC)
        self._fd = os.open(self.path, flags, 0o644)
        if self.append:
            self._terminate_partial_line()
        if self._header is not None:
            self._write(self._header)

    def _terminate_partial_line(self) -> None:
        assert self.path is not None
        size = self.path.stat().st_size
        if size:
            with open(self.path, "rb") as f:
                f.seek(size - 1)
                if f.read(1) != b"\n":
                    os.write(self._fd, b"\n")

    def _write(self, event: TraceEvent) -> None:
        line = event.model_dump_json(exclude_none=True) + "\n"
        write_all(self._fd, line.encode("utf-8"))

    def emit(self, event: TraceEvent) -> None:
        if self.path is None:
            return
        with self._lock:
            try:
                if self._fd < 0:
                    self._open()
                self._write(event)
            except OSError as e:  # disk full: stop the run (exit 3), the rows so far stand
                raise OutputWriteError(f"{self.path}: cannot write: {e.strerror or e}") from None

    def bind(self, image: str | None, key: str | None = None) -> ImageTrace:
        """A handle that stamps every event with one image and its resume key."""
        return ImageTrace(self, image, key)

    def close(self, completed: bool = True) -> None:
        with self._lock:
            if completed and self._fd < 0 and self.path is not None:
                self._open()
            if self._fd >= 0:
                os.close(self._fd)
                self._fd = -1


@dataclass(frozen=True)
class ImageTrace:
    """The trace of one image: steps emitted here carry its name and key."""

    writer: TraceWriter
    image: str | None
    key: str | None

    def emit(
        self,
        step: Step,
        *,
        request: PromptRequest | ToolRequest | dict[str, JsonValue] | None = None,
        reply: ReplyRecord | None = None,
        parsed: JsonValue = None,
        latency: float | None = None,
        tokens: Usage | None = None,
        note: str | None = None,
    ) -> None:
        self.writer.emit(
            TraceEvent(
                step=step,
                image=self.image,
                key=self.key,
                request=request,
                reply=reply,
                parsed=parsed,
                latency=latency,
                tokens=tokens,
                note=note,
            )
        )


NO_TRACE = TraceWriter(None).bind(None)
