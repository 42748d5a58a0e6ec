"""A command's Runtime: built from its settings and closed after, and what it says about its
backend. Every command that runs images uses these (``cli/work/`` too, which is why they
live apart from `score`/`assess`)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TypeVar

from agentiqa_cli.cli import render as ui
from agentiqa_cli.config import Settings
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
