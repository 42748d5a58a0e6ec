"""The report page in a real headless browser (Debian's Chromium driven by Playwright).

Skipped only when Chromium is absent and AGENTIQA_REQUIRE_BROWSER is unset; `make test`
installs Chromium (`make browser`) and sets it, so there the test always runs.
"""

from __future__ import annotations

import csv
import os
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from PIL import Image

from agentiqa_cli.report import build_report, render_html
from tests.conftest import scene

CHROMIUM = os.environ.get("AGENTIQA_CHROMIUM") or shutil.which("chromium") or ""


def _browser_or_skip() -> str:
    missing = []
    if not CHROMIUM:
        missing.append("chromium is not installed (make browser)")
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        missing.append("playwright is not installed (pip install -e '.[dev]')")
    if missing:
        if os.environ.get("AGENTIQA_REQUIRE_BROWSER"):
            pytest.fail("AGENTIQA_REQUIRE_BROWSER is set but " + "; ".join(missing))
        pytest.skip("; ".join(missing))
    return CHROMIUM


@contextmanager
def chromium_tab(
    chromium: str, problems: list[str], width: int = 1280
) -> Iterator[tuple[Any, Any]]:
    """(browser, tab): a headless Chromium page whose script errors, console errors and
    dialogs are appended to ``problems``; the browser is closed on the way out."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium, args=["--no-sandbox"])
        try:
            tab = browser.new_page(viewport={"width": width, "height": 900})
            tab.on("pageerror", lambda e: problems.append(str(e)))
            tab.on("console", lambda m: problems.append(m.text) if m.type == "error" else None)
            tab.on("dialog", lambda d: (problems.append(f"dialog: {d.message}"), d.dismiss()))
            yield browser, tab
        finally:
            browser.close()


def test_report_page_renders_with_every_thumbnail_and_no_errors(tmp_path: Path) -> None:
    chromium = _browser_or_skip()

    names = ["a.png", "b.jpg", "\"><svg onload=alert(1)>'.png", "ü ñ #1.png", "dup.png"]
    for i, name in enumerate(names[:4]):
        scene(i).save(tmp_path / name)
    (tmp_path / "dup.png").write_bytes((tmp_path / "a.png").read_bytes())
    scene(0).resize((160, 120), Image.Resampling.LANCZOS).save(tmp_path / "a-small.jpg")
    Image.new("RGB", (200, 150), (8, 8, 10)).save(tmp_path / "black.png")
    rows = [*names, "a-small.jpg", "black.png", "missing.png"]
    with open(tmp_path / "r.csv", "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["image", "status", "score", "level", "distortions"])
        for i, n in enumerate(rows):
            w.writerow([n, "ok", f"{1 + i % 5}", "fair", "noise:slight"])
    report = build_report(tmp_path / "r.csv", top=10)
    page = tmp_path / "report.html"
    page.write_text(render_html(report), encoding="utf-8")
    expected = page.read_text().count('<img src="data:image/jpeg;base64,')
    assert expected >= 7  # every readable image appears at least once (distortion:noise)

    problems: list[str] = []
    with chromium_tab(chromium, problems, 1200) as (_browser, tab):
        tab.on("requestfailed", lambda r: problems.append(f"request failed: {r.url[:80]}"))
        tab.goto(page.as_uri(), wait_until="load")
        widths = tab.evaluate(  # the issue sections' thumbnails
            "Array.from(document.querySelectorAll('figure img'))"
            ".map(i => i.complete ? i.naturalWidth : -1)"
        )
        tab.locator("#images").scroll_into_view_if_needed()  # the table's, once near
        tab.wait_for_function("() => !document.querySelector('.thumb noscript')")
        tab.wait_for_function("() => Array.from(document.querySelectorAll('.thumb img'))"
                              ".every(i => i.complete && i.naturalWidth > 0)")  # fmt: skip
        icons = tab.locator(".thumb img").count()
        title = tab.title()
        headings = tab.locator("h2").all_inner_texts()
        shot = tmp_path / "report.png"
        tab.screenshot(path=str(shot), full_page=True)
    assert problems == []
    assert len(widths) == expected and all(w > 0 for w in widths), widths
    assert icons == 7  # every readable image's row (missing.png has none)
    assert "r.csv" in title
    assert any(h.startswith("near_duplicates") for h in headings)
    assert any(h.startswith("exact_duplicates") for h in headings)
    with Image.open(shot) as im:
        assert im.width == 1200 and im.height > 900
        assert len(np.unique(np.asarray(im.convert("L")))) > 20  # not a blank page


def test_the_table_of_every_image_sorts_filters_and_opens_images(tmp_path: Path) -> None:
    """Sort by score, filter by a finding, click a thumbnail; without JavaScript the table
    still lists every image. Screenshots go to AGENTIQA_SHOTS when it is set."""
    chromium = _browser_or_skip()

    shots = Path(os.environ.get("AGENTIQA_SHOTS") or tmp_path)
    images = tmp_path / "imgs"
    images.mkdir()
    scores = [4.7, 1.2, 3.1, "", 2.2, 3.9, 1.8, 4.1]
    findings = ["", "noise:severe", "blurs:moderate", "", "noise:moderate@crop1 [0.1, 0.2, 0.5, 0.6]",
                "", "noise:slight;blurs:slight", "color_distortions:slight"]  # fmt: skip
    with open(tmp_path / "r.csv", "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["image", "status", "error", "score", "answer", "distortions"])
        for i, (s, d) in enumerate(zip(scores, findings, strict=True)):
            scene(20 + i, 240, 160).save(images / f"photo {i}.png")
            w.writerow([f"imgs/photo {i}.png", "ok", "", s, f"answer {i}", d])
        w.writerow(["imgs/gone.png", "error", "imgs/gone.png: file not found", "", "", ""])
    page = tmp_path / "out" / "report.html"
    page.parent.mkdir()
    page.write_text(render_html(build_report(tmp_path / "r.csv"), page=page), encoding="utf-8")

    def visible_scores(tab: Any) -> list[str]:
        return list(tab.eval_on_selector_all(
            "#images .row.body:not([hidden])", "rs => rs.map(r => r.dataset.score)"
        ))  # fmt: skip

    problems: list[str] = []
    with chromium_tab(chromium, problems, 1280) as (browser, tab):
        tab.goto(page.as_uri(), wait_until="load")
        assert tab.is_visible("#controls")
        tab.click("#images [data-sort=score] button")
        asc = visible_scores(tab)
        assert [float(s) for s in asc if s] == sorted(float(s) for s in scores if s)
        assert asc[-2:] == ["", ""]  # no score (and the error row): last
        tab.click("#images [data-sort=score] button")
        desc = [float(s) for s in visible_scores(tab) if s]
        assert desc == sorted(desc, reverse=True)
        tab.screenshot(path=str(shots / "table-sorted.png"), full_page=True)
        tab.select_option("#finding", "distortion:noise")
        kept = tab.eval_on_selector_all(
            "#images .row.body:not([hidden])", "rs => rs.map(r => r.dataset.findings)"
        )
        assert len(kept) == 3 and all("distortion:noise" in k.split() for k in kept)
        assert tab.inner_text("#shown") == "3 of 9 shown"
        tab.locator("#all-images").scroll_into_view_if_needed()
        tab.screenshot(path=str(shots / "table-filtered.png"))
        first = tab.locator("#images .row.body:not([hidden]) .thumb a").first
        target = first.get_attribute("href")
        assert target is not None and target.startswith("../imgs/photo%20")
        first.click()
        tab.wait_for_load_state()
        assert tab.url == (page.parent / target.replace("%20", " ")).resolve().as_uri()
        assert tab.evaluate("document.images[0].naturalWidth") == 240  # the image itself

        plain = browser.new_page(java_script_enabled=False, viewport={"width": 1280, "height": 900})
        plain.goto(page.as_uri(), wait_until="load")
        assert not plain.is_visible("#controls")
        assert plain.locator("#images .row.body:visible").count() == 9
        assert plain.locator("#images [data-sort] button").count() == 0
        plain.screenshot(path=str(shots / "no-script.png"), full_page=True)
    assert problems == []
