"""The table of every image in pages: the script shows ``page_rows`` rows at a time and
sorts, filters and searches all of them; without the script every row shows. In headless
Chromium, like tests/test_report_browser.py (skipped only where that one is)."""

from __future__ import annotations

import csv
import os
from pathlib import Path
from typing import Any

from agentiqa_cli.report import build_report, render_html
from tests.conftest import scene
from tests.test_report_browser import _browser_or_skip, chromium_tab

# names past the first page that the script must read back out of the markup as written
NAMES = ["p0.png", "p1.png", "p2.png", "p3.png", "a & b <x>.png", "p5.png",
         "\"><svg onload=alert(1)>'.png", "ü ñ #7.png", "p8.png"]  # fmt: skip
SCORES = [4.7, 1.2, 3.1, "", 2.2, 3.9, 1.8, 4.1, 2.9]
FINDINGS = ["", "noise:severe", "", "", "noise:moderate@crop1 [0.1, 0.2, 0.5, 0.6]", "",
            "noise:slight;blurs:slight", "blurs:moderate", ""]  # fmt: skip


def _page(tmp_path: Path) -> Path:
    images = tmp_path / "imgs"
    images.mkdir()
    with open(tmp_path / "r.csv", "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["image", "status", "error", "score", "answer", "distortions"])
        for i, (name, s, d) in enumerate(zip(NAMES, SCORES, FINDINGS, strict=True)):
            scene(40 + i, 120, 80).save(images / name)
            w.writerow([f"imgs/{name}", "ok", "", s, f"answer {i}\nline two & more", d])
    page = tmp_path / "report.html"
    html = render_html(build_report(tmp_path / "r.csv"), page=page, page_rows=3)
    assert html.count('id="more-rows"') == 1  # rows 4-9 are written past the first page
    page.write_text(html, encoding="utf-8")
    return page


def _rows(tab: Any, what: str = "r => r.querySelector('.name').textContent") -> list[Any]:
    return list(tab.eval_on_selector_all("#images .row.body", f"rs => rs.map({what})"))


def test_pages_of_rows_sort_filter_and_search_every_row(tmp_path: Path) -> None:
    """Screenshots go to AGENTIQA_SHOTS when it is set."""
    chromium = _browser_or_skip()

    page = _page(tmp_path)
    shots = Path(os.environ.get("AGENTIQA_SHOTS") or tmp_path)
    problems: list[str] = []
    with chromium_tab(chromium, problems, 1280) as (browser, tab):
        tab.goto(page.as_uri(), wait_until="load")
        assert _rows(tab) == [f"imgs/{n}" for n in NAMES[:3]]
        assert tab.inner_text("#controls .page") == "rows 1-3 (page 1 of 3)"
        assert tab.inner_text("#shown") == "9 of 9 shown"
        tab.click("#pager-bottom .next")
        assert _rows(tab) == [f"imgs/{n}" for n in NAMES[3:6]]  # made from the markup
        tab.screenshot(path=str(shots / "table-page-2.png"), full_page=True)
        assert tab.is_disabled("#controls .next") is False
        tab.click("#controls .next")
        assert _rows(tab) == [f"imgs/{n}" for n in NAMES[6:]]
        assert tab.is_disabled("#controls .next")
        # sorting orders every row, then shows the first page
        tab.click("#images [data-sort=score] button")
        assert _rows(tab, "r => r.dataset.score") == ["1.2", "1.8", "2.2"]
        tab.click("#images [data-sort=image] button")
        assert _rows(tab) == sorted(f"imgs/{n}" for n in NAMES)[:3]
        # filtering reads every row's findings, escaped ones included
        tab.select_option("#finding", "distortion:noise")
        assert tab.inner_text("#shown") == "3 of 9 shown"
        assert not tab.is_visible("#controls .pager")  # one page
        assert sorted(_rows(tab)) == sorted(f"imgs/{NAMES[i]}" for i in (1, 4, 6))
        tab.select_option("#finding", "")
        tab.fill("#search", "answer 7")  # a row past the first page, by its text
        assert _rows(tab) == ["imgs/ü ñ #7.png"]
        tab.fill("#search", "line two & more")  # the answer's & read back as written
        assert tab.inner_text("#shown") == "9 of 9 shown"
        tab.fill("#search", "a & b <x>")
        assert _rows(tab) == ["imgs/a & b <x>.png"]
        thumb = tab.locator("#images .row.body .thumb img").first
        thumb.wait_for()
        assert (
            tab.evaluate(
                "() => new Promise(ok => { const i = document.querySelector('.thumb img');"
                " i.complete ? ok(i.naturalWidth) : i.onload = () => ok(i.naturalWidth); })"
            )
            > 0
        )
        tab.locator("#images .row.body .thumb a").first.click()  # opens the image
        tab.wait_for_load_state()
        assert tab.url == (tmp_path / "imgs" / "a & b <x>.png").as_uri()

        plain = browser.new_page(java_script_enabled=False, viewport={"width": 1280, "height": 900})
        plain.goto(page.as_uri(), wait_until="load")
        assert not plain.is_visible("#controls") and not plain.is_visible("#pager-bottom")
        plain.screenshot(path=str(shots / "no-script-pages.png"), full_page=True)
        names = plain.locator("#images .row.body:visible .name").all_inner_texts()
        assert names == [f"imgs/{n}" for n in NAMES]  # every row, in the CSV's order
        last = plain.locator("#images .row.body .thumb img").last
        last.scroll_into_view_if_needed()
        plain.wait_for_function(
            "() => Array.from(document.querySelectorAll('.thumb img'))"
            ".every(i => i.complete && i.naturalWidth > 0)"
        )
    assert problems == []
