"""The report as one self-contained HTML page: thumbnails as data URIs, everything escaped.

The page's one script (sorting, filtering and paging the table of every image) is inline and
allowed by its hash in the page's Content-Security-Policy; nothing else may run. Each
thumbnail links to its image file, relative to the page when the page's path is known.
"""

from __future__ import annotations

import base64
import hashlib
import os
import urllib.parse
from pathlib import Path

from jinja2 import Environment, FileSystemLoader, StrictUndefined, select_autoescape
from markupsafe import Markup

from agentiqa_cli.records import LEVELS
from agentiqa_cli.report.build import Report, resolve
from agentiqa_cli.report.table import COLOURS, ERROR, UNSCORED, cutoffs

_TEMPLATES = Path(__file__).resolve().parent
MAX_SETS = 100  # duplicate sets drawn per kind: keeps a huge collection's page loadable
# rows of the table of every image that the page's script shows at once (the rest a page
# away); without the script every row shows
PAGE_ROWS = 200


# the level column sorts as the score does: errors, bad … excellent, then no score
_RANKS: dict[str, int] = {
    ERROR: 0,
    **{level: i + 1 for i, level in enumerate(LEVELS)},
    UNSCORED: len(LEVELS) + 1,
}


def _env() -> Environment:
    # autoescape on: file names, error texts and CSV cells are hostile input
    return Environment(
        loader=FileSystemLoader(_TEMPLATES),
        autoescape=select_autoescape(default=True, default_for_string=True),
        undefined=StrictUndefined,
    )


def image_href(image: str, csv_path: Path, page: Path | None) -> str:
    """A link to the image file: relative to the page's folder when ``page`` is given (the
    page and the images can move together), else a file: URI; "" when the file is gone."""
    path = resolve(image, csv_path)
    if not path.is_file():
        return ""
    if page is None:
        return path.absolute().as_uri()
    rel = os.path.relpath(path.absolute(), page.absolute().parent)
    return urllib.parse.quote(os.fsencode(rel))  # any byte of a name, '/' kept


def render_html(
    report: Report, page: Path | None = None, max_sets: int = MAX_SETS, page_rows: int = PAGE_ROWS
) -> str:
    """The page; ``page`` is where it will be written (for links relative to it)."""
    env = _env()
    script = env.get_template("table.js.j2").render()
    digest = base64.b64encode(hashlib.sha256(script.encode("utf-8")).digest()).decode("ascii")
    csv_path = Path(report.csv)
    hrefs = {r.image: image_href(r.image, csv_path, page) for r in report.rows}
    return env.get_template("report.html.j2").render(
        report=report,
        max_sets=max_sets,
        page_rows=max(1, page_rows),
        hrefs=hrefs,
        ranks=_RANKS,
        cutoffs=cutoffs(),
        colours=COLOURS,
        script=Markup(script),  # our own file, not data
        script_hash=f"sha256-{digest}",
    )
