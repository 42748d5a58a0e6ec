"""The commands' work that needs a heavy feature: each module here runs one command (or one
`eval-bench` section) and imports what it needs (scipy, the distortion library, jinja2, the
benchmarks) at its top, where lint-imports sees the layering. The flags and help stay in
``cli/``, which reads ``work.NAME`` when a command runs: that first read imports the module,
so `--help` and `score` load none of them."""

from __future__ import annotations

import importlib
from types import ModuleType
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from agentiqa_cli.cli.work import (
        bench_calibrate,
        bench_mcq,
        bench_mos,
        bench_synth,
        bench_vqpp,
        evaluate,
        experience,
        fix,
        pool_show,
        report,
    )

__all__ = [
    "bench_calibrate",
    "bench_mcq",
    "bench_mos",
    "bench_synth",
    "bench_vqpp",
    "evaluate",
    "experience",
    "fix",
    "pool_show",
    "report",
]


def __getattr__(name: str) -> ModuleType:
    """The module ``name`` of this package, imported on its first read."""
    if name not in __all__:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    # start-up time: the one place the CLI imports a command's work, when the command runs
    return importlib.import_module(f"{__name__}.{name}")
