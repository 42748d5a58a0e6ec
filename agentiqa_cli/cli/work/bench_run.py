"""What every `eval-bench` section and `calibrate` share: a run on a Runtime with a progress
bar, the inputs no output may overwrite, and the tables' number format."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterable
from pathlib import Path
from typing import TypeVar

from agentiqa_cli.bench.layouts import MosItem
from agentiqa_cli.bench.mcq import MCQuestion
from agentiqa_cli.bench.runs import Bench
from agentiqa_cli.cli import render as ui
from agentiqa_cli.cli.session import say_notes, with_runtime
from agentiqa_cli.config import Settings
from agentiqa_cli.io.trace import TraceWriter
from agentiqa_cli.runtime import Runtime

T = TypeVar("T")


def run_bench(
    settings: Settings,
    trace: Path | None,
    total: int,
    label: str,
    main: Callable[[Bench], Awaitable[T]],
    *,
    command: str,
) -> T:
    """Run ``main`` on a Runtime with a progress bar (``label``) ticking once per result row;
    the trace starts with the run header naming ``command``."""
    reporter = ui.Reporter(total, label)

    async def go(rt: Runtime) -> T:
        tracer = TraceWriter(trace, header=rt.header(command))
        try:
            with reporter.running():
                value = await main(Bench(rt, tracer, lambda r: reporter.advance(r.image, r.status)))
            say_notes(rt)
            return value
        finally:
            tracer.close()

    return asyncio.run(with_runtime(settings, go))


def inputs(source: Path, items: Iterable[MosItem | MCQuestion]) -> list[Path]:
    """What a run reads, that none of its outputs may be: the list and its images."""
    refs = [i.reference for i in items if i.reference is not None]
    return [source, *(i.image for i in items), *refs]


def fmt(v: float | None) -> str:
    return "-" if v is None else f"{v:.3f}"
