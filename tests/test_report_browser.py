"""The report page in a real headless browser (Debian's Chromium driven by Playwright).

Skipped only when Chromium is absent and AGENTIQA_REQUIRE_BROWSER is unset; `make test`
installs Chromium (`make browser`) and sets it, so there the test always runs.
"""

from __future__ import annotations

import csv
import os
import shutil
from pathlib import Path

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


def test_report_page_renders_with_every_thumbnail_and_no_errors(tmp_path: Path) -> None:
    chromium = _browser_or_skip()
    from playwright.sync_api import sync_playwright

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
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium, args=["--no-sandbox"])
        try:
            tab = browser.new_page(viewport={"width": 1200, "height": 900})
            tab.on("console", lambda m: problems.append(m.text) if m.type == "error" else None)
            tab.on("pageerror", lambda e: problems.append(str(e)))
            tab.on("dialog", lambda d: (problems.append(f"dialog: {d.message}"), d.dismiss()))
            tab.on("requestfailed", lambda r: problems.append(f"request failed: {r.url[:80]}"))
            tab.goto(page.as_uri(), wait_until="load")
            widths = tab.evaluate(
                "Array.from(document.images).map(i => i.complete ? i.naturalWidth : -1)"
            )
            title = tab.title()
            headings = tab.locator("h2").all_inner_texts()
            shot = tmp_path / "report.png"
            tab.screenshot(path=str(shot), full_page=True)
        finally:
            browser.close()
    assert problems == []
    assert len(widths) == expected and all(w > 0 for w in widths), widths
    assert "r.csv" in title
    assert any(h.startswith("near_duplicates") for h in headings)
    assert any(h.startswith("exact_duplicates") for h in headings)
    with Image.open(shot) as im:
        assert im.width == 1200 and im.height > 900
        assert len(np.unique(np.asarray(im.convert("L")))) > 20  # not a blank page
