"""Options shared by the commands, and how flags become Settings."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from agentiqa_cli.config import Settings, load_settings

EXIT_CODES_HELP = (
    "Exit codes: 0 all processed and gate passed; 1 quality gate failed; "
    "2 usage or configuration error; 3 some inputs could not be processed (rows say why)."
)

# -- shared options ------------------------------------------------------------------------
Paths = Annotated[
    list[str], typer.Argument(help="Image files, folders or glob patterns.", show_default=False)
]
Ref = Annotated[
    str | None,
    typer.Option(
        "--ref", "-r", help="Reference image, or a folder matched by relative path / file name."
    ),
]
Out = Annotated[
    Path,
    typer.Option("--out", "-o", help="Results CSV (one row per image, flushed as they finish)."),
]
TraceOpt = Annotated[
    Path | None, typer.Option("--trace", help="JSONL trace of every step. Default: next to --out.")
]
Resume = Annotated[
    bool,
    typer.Option("--resume", help="Skip images whose key is already in --out; append the rest."),
]
Recursive = Annotated[bool, typer.Option("--recursive", "-R", help="Descend into sub-folders.")]
Device = Annotated[
    str | None, typer.Option("--device", help="auto | cpu | cuda[:N] for the tools.")
]
Concurrency = Annotated[
    int | None, typer.Option("--concurrency", "-j", min=1, help="Images in flight at once.")
]
ConfigOpt = Annotated[
    Path | None,
    typer.Option("--config", help="YAML config file (default: ./agentiqa.yaml if present)."),
]
FailUnder = Annotated[
    float | None, typer.Option("--fail-under", help="Gate: exit 1 if any image scores below this.")
]
FailMeanUnder = Annotated[
    float | None,
    typer.Option("--fail-mean-under", help="Gate: exit 1 if the mean score is below this."),
]
JsonOut = Annotated[
    bool, typer.Option("--json", help="Machine-readable JSON on stdout instead of the table.")
]
Quiet = Annotated[bool, typer.Option("--quiet", "-q", help="No progress or notes on stderr.")]
Calibration = Annotated[
    Path | None,
    typer.Option("--calibration", help="Calibration overlay YAML written by `agentiqa calibrate`."),
]
CardsDir = Annotated[
    Path | None,
    typer.Option(
        "--tool-cards", help="Folder of tool card YAML files (default: the shipped cards)."
    ),
]
MaxPixels = Annotated[
    int | None,
    typer.Option("--max-pixels", help="Refuse images with more pixels (decompression bombs)."),
]


VlmOpt = Annotated[
    str | None,
    typer.Option(
        "--vlm",
        help="rules (default, no model) | http://HOST:PORT/v1 (OpenAI-compatible, e.g. vLLM) | vllm:MODEL_PATH (in-process). Env: AGENTIQA_VLM_URL.",
    ),
]
ModelOpt = Annotated[
    str | None, typer.Option("--model", "-m", help="Model name served at --vlm URL.")
]
FallbackOpt = Annotated[
    str | None,
    typer.Option(
        "--vlm-fallback", help="none | rules: answer a failed VLM step with the rules backend."
    ),
]
PromptsDir = Annotated[
    Path | None,
    typer.Option("--prompts", help="Folder of prompt YAML files (default: the shipped prompts)."),
]


def make_settings(config: Path | None, **flags: Any) -> Settings:
    """Flags the user gave (None = not given) over environment, config file and defaults."""
    return load_settings(flags, config)
