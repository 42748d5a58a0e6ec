"""`report`: the dataset issue report over a results CSV (and `--report` for score/assess);
the flags here, the report made and shown by ``cli/work/report.py`` (jinja2 loads with it)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from agentiqa_cli.cli import render as ui
from agentiqa_cli.cli import work
from agentiqa_cli.cli.app import app
from agentiqa_cli.cli.options import (
    EXIT_CODES_HELP,
    JsonOut,
    Quiet,
    deprecated,
    deprecated_option,
)
from agentiqa_cli.errors import ConfigError
from agentiqa_cli.gate import EXIT_INPUT, EXIT_OK
from agentiqa_cli.imaging.load import missing
from agentiqa_cli.io.guard import check_report_page

REPORT_FORMATS = ("table", "json", "md")

ReportOpt = Annotated[
    Path | None,
    typer.Option(
        "--report",
        help="Also write the dataset issue report (HTML, as `agentiqa report`) to this file.",
    ),
]


def default_html(csv: Path) -> Path:
    return csv.with_name(csv.stem + ".report.html")


@app.command(epilog=EXIT_CODES_HELP)
def report(
    csv: Annotated[
        Path,
        typer.Argument(help="A results CSV written by `score` or `assess`.", show_default=False),
    ],
    out: Annotated[
        Path | None,
        typer.Option(
            "--out", "-o", help="Where to write the HTML page. Default: RESULTS.report.html."
        ),
    ] = None,
    html: Annotated[Path | None, deprecated_option("--out", "--html")] = None,
    top: Annotated[
        int, typer.Option("--top", min=1, max=100, help="Worst images shown per issue.")
    ] = 6,
    json_out: JsonOut = False,
    fmt: Annotated[
        str,
        typer.Option(
            "--format",
            help="What stdout gets: table | json (as --json) | md (a Markdown summary, e.g. "
            "for a CI job summary: >> $GITHUB_STEP_SUMMARY).",
        ),
    ] = "table",
    quiet: Quiet = False,
) -> None:
    """A dataset issue report: per-issue counts (dark, light, blurry, low information, odd
    aspect ratio, odd size, grayscale, exact and near duplicates, plus the CSV's failures,
    low scores, distortions and imperfections), duplicate sets and the worst images per
    issue, as a self-contained HTML page with thumbnails; the table on stdout.

    Image paths in the CSV are read as written, or relative to the CSV's folder. Exits 3
    when some images could not be read (they are listed in the page)."""
    ui.set_quiet(quiet)
    if fmt not in REPORT_FORMATS:
        raise ConfigError(f"--format must be one of {', '.join(REPORT_FORMATS)}, got {fmt!r}")
    if not csv.is_file():
        why = "a folder, not a results CSV" if csv.is_dir() else missing(csv)
        raise ConfigError(f"{csv}: {why}")
    if html is not None:
        if out is not None:
            raise ConfigError("--html and --out both name the page: give --out")
        deprecated("--html", "--out")
    target = out or html or default_html(csv)
    check_report_page(
        target, csv, "--html" if html is not None else "--out"
    )  # never the CSV, an image or another file: exit 2
    unreadable = work.report.show(csv, target, top, "json" if json_out else fmt)
    raise typer.Exit(EXIT_INPUT if unreadable else EXIT_OK)


def report_after_run(csv: Path, html: Path | None) -> None:
    """`--report` on score/assess: write the page after the batch; a note on stderr."""
    if html is None:
        return
    if not csv.is_file():
        ui.warn(f"--report: {csv} was not written (no images?); no report")
        return
    result = work.report.make_report(csv, html, 6)
    flagged = sum(1 for i in result.issues if i.count)
    ui.note(f"report: {flagged} issue(s) found over {result.images} image(s) → {html}")
