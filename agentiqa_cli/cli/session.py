"""A command's Runtime: built from its settings and closed after, the batch over images
(`score`, `assess`, `fix`), and what it says about its backend. Every command that runs
images uses these (``cli/work/`` too, which is why they live apart from `score`/`assess`)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import TypeVar

from agentiqa_cli.batch import BatchSummary, Process
from agentiqa_cli.cli import render as ui
from agentiqa_cli.cli.options import Common
from agentiqa_cli.config import Settings
from agentiqa_cli.imaging.discover import Job
from agentiqa_cli.io.trace import TraceWriter
from agentiqa_cli.records import Result
from agentiqa_cli.runtime import Runtime
from agentiqa_cli.wiring import build_runtime

T = TypeVar("T")


async def with_runtime(settings: Settings, main: Callable[[Runtime], Awaitable[T]]) -> T:
    """Every command's Runtime: built from its settings, closed when ``main`` returns."""
    async with build_runtime(settings) as rt:
        return await main(rt)


def note_backend(rt: Runtime) -> None:
    if rt.settings.vlm == "rules":
        ui.note(
            "note: no VLM configured; using the deterministic rules backend "
            "(set --vlm URL --model NAME or AGENTIQA_VLM_URL for a vision-language model)",
        )


def say_notes(rt: Runtime) -> None:
    """What connecting to the VLM found (an unreachable server, a fallback): said once."""
    for n in rt.notes:
        ui.warn(n)


async def run_images(
    rt: Runtime,
    opts: Common,
    command: str,
    jobs: list[Job],
    process: Process,
    label: str,
    tool_columns: list[str] | None = None,
    extra_columns: list[str] | None = None,
    extra: Callable[[Result], Mapping[str, str]] | None = None,
    remote: Callable[[Runtime], Awaitable[Process]] | None = None,
    detail: Callable[[Result], str] | None = None,
    write: bool = True,
) -> BatchSummary:
    """The batch behind `score`, `assess` and `fix`: outputs opened, progress shown, rows
    written. ``remote`` rebuilds ``process`` in another process (``--engine ray``'s
    workers); ``detail`` is the progress line's text per row; ``write`` False: no results
    file or trace (`fix --check`)."""
    shown = detail or _detail
    reporter = ui.Reporter(len(jobs), label, live=not ui.rows_to_terminal(opts.stream is not None))
    if not write:
        with reporter.running():
            return await rt.run(
                jobs, process, command=command, trace=TraceWriter(None),
                on_result=lambda r: reporter.advance(r.image, r.status, shown(r)),
                on_skip=lambda j: reporter.advance(j.name, "skipped"),
            )  # fmt: skip
    with (
        rt.outputs(
            opts.out,
            opts.trace,
            opts.resume,
            command,
            tool_columns,
            extra_columns,
            extra,
            force=opts.force,
            stream=opts.stream,
        ) as (writer, tracer),
        reporter.running(),
    ):
        return await rt.run(
            jobs,
            process,
            command=command,
            trace=tracer,
            remote=remote,
            writer=writer,
            on_result=lambda r: reporter.advance(r.image, r.status, shown(r)),
            on_skip=lambda j: reporter.advance(j.name, "skipped"),
        )


def _detail(r: Result) -> str:
    if r.status == "error":
        return str(r.error)
    return f"{r.score:.2f}" if r.score is not None else ""
