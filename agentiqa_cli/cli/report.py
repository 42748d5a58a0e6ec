"""`report`: the dataset issue report over a results CSV (and `--report` for score/assess)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.table import Table

from agentiqa_cli.cli import render as ui
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
from agentiqa_cli.io.guard import check_report_page, write_whole

if TYPE_CHECKING:  # the report package (jinja2, its page) is imported when a report is made
    from agentiqa_cli.report import Report

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


def make_report(csv: Path, html: Path, top: int) -> Report:
    """Measure, build and write the page; the CLI's one path for `report` and `--report`."""
    # start-up time: the report's templates load jinja2
    from agentiqa_cli.report import build_report, render_html, rows

    found = rows.read_rows(csv)
    reporter = ui.Reporter(len(found), "report")
    with reporter.running():
        report = build_report(
            csv, rows=found, top=top, on_image=lambda n: reporter.advance(n, "read")
        )
    try:
        html.parent.mkdir(parents=True, exist_ok=True)
        write_whole(html, render_html(report, page=html))  # renamed into place once complete
    except OSError as e:
        raise ConfigError(f"{html}: cannot write the report: {e.strerror or e}") from None
    return report


def issues_table(report: Report) -> Table:
    table = Table(title=f"agentiqa report: {ui.cell(report.csv)}", title_justify="left")
    table.add_column("issue")
    table.add_column("from")
    table.add_column("images", justify="right")
    table.add_column("worst", overflow="fold")
    for issue in report.issues:
        worst = ", ".join(s.image for s in issue.worst[:3])
        style = "dim" if issue.count == 0 else ""
        table.add_row(
            ui.cell(issue.name), issue.source, str(issue.count), ui.cell(worst), style=style
        )
    table.caption = (
        f"{report.images} images, {report.readable} readable; "
        f"{len(report.exact_sets)} exact and {len(report.near_sets)} near duplicate sets"
    )
    return table


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
    result = make_report(csv, target, top)
    if json_out or fmt == "json":
        ui.print_json({**result.model_dump(mode="json", exclude=_THUMBS), "html": str(target)})
    elif fmt == "md":
        # start-up time: as above
        from agentiqa_cli.report.markdown import render_markdown

        ui.print_text(render_markdown(result))
    else:
        ui.out.print(issues_table(result))
        ui.out.print(f"report → {ui.visible(str(target))}", highlight=False, markup=False)
    if result.unreadable:
        ui.warn(f"{len(result.unreadable)} image(s) could not be read; listed in {target}")
    raise typer.Exit(EXIT_INPUT if result.unreadable else EXIT_OK)


# thumbnails are for the page; JSON on stdout names the images only
_THUMBS: dict[str, Any] = {
    "issues": {"__all__": {"worst": {"__all__": {"thumbnail"}}}},
    "exact_sets": {"__all__": {"__all__": {"thumbnail"}}},
    "near_sets": {"__all__": {"__all__": {"thumbnail"}}},
    "unreadable": {"__all__": {"thumbnail"}},
    "rows": {"__all__": {"thumbnail"}},
}


def report_after_run(csv: Path, html: Path | None) -> None:
    """`--report` on score/assess: write the page after the batch; a note on stderr."""
    if html is None:
        return
    if not csv.is_file():
        ui.warn(f"--report: {csv} was not written (no images?); no report")
        return
    result = make_report(csv, html, 6)
    flagged = sum(1 for i in result.issues if i.count)
    ui.note(f"report: {flagged} issue(s) found over {result.images} image(s) → {html}")
