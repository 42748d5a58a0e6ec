"""Options shared by the commands: declared once, grouped, and turned into Settings once.

A command asks for the groups it takes with ``@shared("setup", "vlm", ...)`` and receives
them as one ``Common`` (its ``opts`` parameter); ``opts.settings(**own_flags)`` merges them
over environment, config file and defaults.
"""

from __future__ import annotations

import functools
import inspect
import math
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, TypeVar

import typer

from agentiqa_cli.cli import render as ui
from agentiqa_cli.config import Settings, load_settings
from agentiqa_cli.errors import ConfigError
from agentiqa_cli.io.guard import Outputs, check_file, is_trace_file
from agentiqa_cli.io.stream import ROW_FORMATS, STDOUT_NAME, RowFormat

FORMATS = ("table", *ROW_FORMATS)

EXIT_CODES_HELP = (
    "Exit codes: 0 all processed and gate passed; 1 quality gate failed; "
    "2 usage or configuration error (also: no images found); 3 some inputs could not be "
    "processed (rows say why); 4 internal error; 130 interrupted (--resume continues)."
)

# -- options that commands declare themselves (their help differs per command) -------------
Paths = Annotated[
    list[str], typer.Argument(help="Image files, folders or glob patterns.", show_default=False)
]
Ref = Annotated[
    str | None,
    typer.Option(
        "--ref", "-r", help="Reference image, or a folder matched by relative path / file name."
    ),
]
JsonOut = Annotated[
    bool, typer.Option("--json", help="Machine-readable JSON on stdout instead of the table.")
]
Quiet = Annotated[
    bool,
    typer.Option(
        "--quiet",
        "-q",
        help="Print only errors on stderr (each failed image's path and reason, a failed "
        "gate's summary line) and the --json or --format output; no table, progress, notes.",
    ),
]
ConfigOpt = Annotated[
    Path | None,
    typer.Option(
        "--config",
        help="YAML config file (default: ./agentiqa.yaml if present); the user's "
        "~/.config/agentiqa/config.yaml lies under it.",
    ),
]
CardsDir = Annotated[
    Path | None,
    typer.Option(
        "--tool-cards", help="Folder of tool card YAML files (default: the shipped cards)."
    ),
]
FusionOpt = Annotated[
    str | None,
    typer.Option(
        "--fusion",
        help="How the tools' 1-5 scores combine (score's score, the agent's q̄): min (the "
        "default: the worst tool; an image is as bad as its worst attribute, and one bad "
        "attribute barely moves a mean of seven detectors) or mean (the paper's).",
    ),
]
ExperienceOpt = Annotated[
    Path | None,
    typer.Option(
        "--experience",
        help="Experience pool (`agentiqa experience build`): where it ranks a distortion's "
        "tools significantly, that tool is used without asking the VLM.",
    ),
]
EvolveOpt = Annotated[
    bool,
    typer.Option(
        "--evolve",
        help="Add each image's records to the --experience pool (its detected distortions "
        "measured on synthetic levels of it); every 25 new records per key refit it.",
    ),
]
EngineOpt = Annotated[
    str | None,
    typer.Option(
        "--engine",
        help="local (default: this process) | ray: images flow through Ray Data workers "
        "(ray_address in the config names a cluster; default a local instance; "
        "pip install 'agentiqa[ray]').",
    ),
]
Device = Annotated[
    str | None, typer.Option("--device", help="auto | cpu | cuda[:N] for the tools.")
]
LearnedToolsOpt = Annotated[
    bool | None,
    typer.Option(
        "--learned-tools/--no-learned-tools",
        help="Offer the agent every tool that needs downloaded weights (missing ones are "
        "downloaded), or none. Default: those whose weights are cached (tools list).",
    ),
]
Recursive = Annotated[bool, typer.Option("--recursive", "-R", help="Descend into sub-folders.")]
Force = Annotated[
    bool,
    typer.Option(
        "--force",
        help="Replace an existing output file that is not one of ours (results CSV, trace, "
        "overlay, pool). Inputs are never overwritten.",
    ),
]


def out_dir_option(help: str) -> Any:
    """``--out-dir``: always a folder (``-o``/``--out`` is always the results file)."""
    return typer.Option("--out-dir", help=help)


def deprecated_option(new: str, *old: str) -> Any:
    """Old spellings (``old``) of ``new`` kept for one release: hidden from --help, warned
    about when used (``deprecated``); docs/commands.md lists them."""
    return typer.Option(*old, hidden=True, help=f"Deprecated: use {new}.")


def deprecated(old: str, new: str) -> None:
    """The one-line note an old spelling gets on stderr."""
    ui.warn(f"{old} is deprecated, use {new}")


def tool_list(text: str | None) -> list[str] | None:
    """``a, b,c`` → ``["a", "b", "c"]``; None when nothing was given."""
    names = [t.strip() for t in (text or "").split(",") if t.strip()]
    return names or None


# -- the shared groups ----------------------------------------------------------------------
@dataclass
class Common:
    """The shared flags as given (None: not given, so lower layers decide)."""

    config: Path | None = None
    tool_cards: Path | None = None
    calibration: Path | None = None
    device: str | None = None
    concurrency: int | None = None
    max_pixels: int | None = None
    quiet: bool = False
    vlm: str | None = None
    model: str | None = None
    vlm_fallback: str | None = None
    prompts: Path | None = None
    evidence: bool | None = None
    zoom: str | None = None
    zoom_turns: int | None = None
    recursive: bool = False
    out: Path = Path("results.csv")
    trace: Path | None = None
    resume: bool = False
    force: bool = False
    fail_under: float | None = None
    fail_mean_under: float | None = None
    json_out: bool = False
    fmt: str = "table"
    given: frozenset[str] = frozenset()  # the shared options given on the command line

    def explicit(self, name: str) -> bool:
        """Whether option ``name`` was given (on the command line or by its env variable),
        not left at its default."""
        return name in self.given

    @property
    def to_stdout(self) -> bool:
        """``-o -``: the results go to stdout (no file)."""
        return str(self.out) == STDOUT_NAME

    @property
    def stream(self) -> RowFormat | None:
        """The format rows stream to stdout in as they finish (None: the table at the end)."""
        if self.fmt in ROW_FORMATS:
            return self.fmt
        return "csv" if self.to_stdout else None

    @property
    def out_name(self) -> str:
        return "stdout" if self.to_stdout else str(self.out)

    def check_format(self, report: Path | None = None) -> None:
        """``--format`` and ``-o -`` against the flags they exclude (exit 2 before any work)."""
        if self.fmt not in FORMATS:
            raise ConfigError(f"--format must be one of {', '.join(FORMATS)}, got {self.fmt!r}")
        if self.json_out and self.fmt != "table":
            raise ConfigError("--json and --format are two answers for stdout: give one")
        if not self.to_stdout:
            return
        for given, flag in ((self.resume, "--resume"), (self.json_out, "--json"),
                            (report is not None, "--report")):  # fmt: skip
            if given:
                raise ConfigError(f"-o - writes the results to stdout only: {flag} needs a file")

    def settings(self, **flags: Any) -> Settings:
        """Shared and command flags over environment, config file and defaults."""
        shared = {
            "cards_dir": self.tool_cards,
            "calibration": self.calibration,
            "device": self.device,
            "concurrency": self.concurrency,
            "max_pixels": self.max_pixels,
            "vlm": self.vlm,
            "model": self.model,
            "vlm_fallback": self.vlm_fallback,
            "prompts_dir": self.prompts,
            "evidence": self.evidence,
            "zoom": self.zoom,
            "zoom_turns": self.zoom_turns,
            "recursive": self.recursive or None,
        }
        return load_settings({**shared, **flags}, self.config)

    def outputs(self, report: Path | None = None) -> Outputs | None:
        """The files this run writes (``--out``, ``--trace``, ``--report``), to check before
        any work; with ``-o -`` only a ``--trace`` that names a file (checked here)."""
        self.check_format(report)
        if self.to_stdout:
            if self.trace is not None:
                check_file(self.trace, "--trace", is_trace_file, "an agentiqa trace", self.force)
            return None
        return Outputs.of(self.out, self.trace, self.force, report)


_SETUP = {
    "config": (ConfigOpt, None),
    "tool_cards": (CardsDir, None),
    "calibration": (
        Annotated[
            Path | None,
            typer.Option(
                "--calibration", help="Calibration overlay YAML written by `agentiqa calibrate`."
            ),
        ],
        None,
    ),
    "device": (Device, None),
    "quiet": (Quiet, False),
}
_RUN = {
    "concurrency": (
        Annotated[
            int | None,
            typer.Option("--concurrency", "-j", min=1, help="Images in flight at once."),
        ],
        None,
    ),
    "max_pixels": (
        Annotated[
            int | None,
            typer.Option(
                "--max-pixels", help="Refuse images with more pixels (decompression bombs)."
            ),
        ],
        None,
    ),
}
_VLM = {
    "vlm": (
        Annotated[
            str | None,
            typer.Option(
                "--vlm",
                help="rules (default, no model) | http://HOST:PORT/v1 (OpenAI-compatible, "
                "e.g. vLLM) | vllm:MODEL_PATH (in-process). Env: AGENTIQA_VLM_URL.",
            ),
        ],
        None,
    ),
    "model": (
        Annotated[
            str | None, typer.Option("--model", "-m", help="Model name served at --vlm URL.")
        ],
        None,
    ),
    "vlm_fallback": (
        Annotated[
            str | None,
            typer.Option(
                "--vlm-fallback",
                help="none | rules: answer a failed VLM step with the rules backend.",
            ),
        ],
        None,
    ),
    "prompts": (
        Annotated[
            Path | None,
            typer.Option(
                "--prompts", help="Folder of prompt YAML files (default: the shipped prompts)."
            ),
        ],
        None,
    ),
    "evidence": (
        Annotated[
            bool | None,
            typer.Option(
                "--evidence/--no-evidence",
                help="Show the signal detectors' readings to the VLM (default) or keep them "
                "out of its prompts, as in the paper.",
            ),
        ],
        None,
    ),
    "zoom": (
        Annotated[
            str | None,
            typer.Option(
                "--zoom",
                help="Context-aware probing, close-ups of the original for local artefacts: "
                "off | on | auto (default: images above 4x the VLM pixel budget).",
            ),
        ],
        None,
    ),
    "zoom_turns": (
        Annotated[
            int | None,
            typer.Option(
                "--zoom-turns", min=1, max=6, help="VLM calls per probe, the final one included."
            ),
        ],
        None,
    ),
}
_OUTPUT = {
    "out": (
        Annotated[
            Path,
            typer.Option(
                "--out",
                "-o",
                help="Results CSV (one row per image, flushed as they finish); - for stdout.",
            ),
        ],
        Path("results.csv"),
    ),
    "trace": (
        Annotated[
            Path | None,
            typer.Option("--trace", help="JSONL trace of every step. Default: next to --out."),
        ],
        None,
    ),
    "resume": (
        Annotated[
            bool,
            typer.Option(
                "--resume", help="Skip images whose key is already in --out; append the rest."
            ),
        ],
        False,
    ),
    "force": (Force, False),
    "recursive": (Recursive, False),
}


def _finite(value: float | None) -> float | None:
    """A gate of NaN compares false with every score: it would pass everything."""
    if value is not None and not math.isfinite(value):
        raise typer.BadParameter(f"must be a finite number, got {value}")
    return value


_GATE = {
    "fail_under": (
        Annotated[
            float | None,
            typer.Option(
                "--fail-under",
                help="Gate: exit 1 if any image scores below this.",
                callback=_finite,
            ),
        ],
        None,
    ),
    "fail_mean_under": (
        Annotated[
            float | None,
            typer.Option(
                "--fail-mean-under",
                help="Gate: exit 1 if the mean score is below this.",
                callback=_finite,
            ),
        ],
        None,
    ),
    "json_out": (JsonOut, False),
    "fmt": (
        Annotated[
            str,
            typer.Option(
                "--format",
                help="stdout: table (at the end) | csv | tsv | jsonl: the results rows, each as "
                "it finishes, never wrapped or cut (-o - alone: csv, and no file).",
            ),
        ],
        "table",
    ),
}
GROUPS: dict[str, dict[str, tuple[Any, Any]]] = {
    "setup": _SETUP,  # config file, tool cards, calibration, device, quiet
    "run": _RUN,  # images in flight, pixel limit
    "vlm": _VLM,  # the model and its prompts
    "output": _OUTPUT,  # results CSV, trace, resume, recursive input
    "gate": _GATE,  # quality gate and --json
}

F = TypeVar("F", bound=Callable[..., None])
_CTX = "shared_ctx"


def _given(ctx: typer.Context, name: str) -> bool:
    source = ctx.get_parameter_source(name)
    return source is not None and source.name not in ("DEFAULT", "DEFAULT_MAP")


def shared(*groups: str) -> Callable[[F], F]:
    """Add the options of ``groups`` to a command; it receives them as ``opts: Common``."""
    declared = {name: spec for g in groups for name, spec in GROUPS[g].items()}

    def decorate(fn: F) -> F:
        sig = inspect.signature(fn, eval_str=True)
        own = [p for p in sig.parameters.values() if p.name != "opts"]
        extra = [
            inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=default, annotation=ann)
            for name, (ann, default) in declared.items()
        ]
        # the click context: which options were given (a default and the same value typed
        # out differ where a command reads an old spelling)
        extra.append(
            inspect.Parameter(_CTX, inspect.Parameter.KEYWORD_ONLY, annotation=typer.Context)
        )

        @functools.wraps(fn)
        def command(**kwargs: Any) -> None:
            ctx: typer.Context = kwargs.pop(_CTX)
            given = frozenset(n for n in declared if _given(ctx, n))
            opts = Common(**{name: kwargs.pop(name) for name in declared}, given=given)
            ui.set_quiet(opts.quiet)
            fn(opts=opts, **kwargs)

        command.__signature__ = sig.replace(parameters=own + extra)  # type: ignore[attr-defined]
        command.__annotations__ = {p.name: p.annotation for p in own + extra}
        return command  # type: ignore[return-value]

    return decorate
