"""Clean renders as a CI gate sees them: charts, text pages and dashboard mock-ups.

Every clean image of the realset is a photograph or a wallpaper. A CI job mostly checks
drawn images instead: plots, documents, screenshots, most of them on a white background.
``generate_renders`` draws such images (matplotlib, the [plot] extra that ``make setup``
installs, for the charts; Pillow for the pages and dashboards), each saved as a PNG and as
a JPEG at q90, on a white and on a dark background; only the quality check and the tests
import this module. They are clean by construction, so ``scripts/quality_check.py
--series renders`` reports how many of them ``assess`` judges clean and the gate passes.
They are measured, never fitted on: a fit set of renders would be drawn with another
``seed``.
"""

from __future__ import annotations

import io
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from pathlib import Path

import numpy as np
from matplotlib import style
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from PIL import Image, ImageDraw, ImageFont

from agentiqa_cli.io.guard import write_whole

BACKGROUNDS = ("white", "dark")
JPEG_QUALITY = 90
JPEG_OPTIONS = {"format": "JPEG", "quality": JPEG_QUALITY}
WORDS = (
    "the", "of", "quality", "image", "batch", "score", "level", "assess", "tool", "card",
    "report", "frame", "pixel", "light", "colour", "noise", "blur", "detail", "camera",
    "build", "test", "run", "result", "median", "share",
)  # fmt: skip


@dataclass(frozen=True)
class Render:
    path: Path
    kind: str  # line, bars, scatter, pie, page, dashboard
    background: str  # white or dark
    saved: str  # png or jpeg


def _chart(kind: str, dark: bool, rng: np.random.Generator) -> Image.Image:
    # on an Agg canvas of its own, as bench/plot.py draws: no global backend, no window
    with style.context("dark_background" if dark else "default"):
        fig = Figure(figsize=(9, 6), dpi=110)
        FigureCanvasAgg(fig)
        ax = fig.add_subplot()
        if kind == "line":
            x = np.linspace(0, 12, 400)
            for k in range(3):
                ax.plot(x, np.cumsum(rng.normal(size=400)) + 5 * k, lw=1.5, label=f"p{50 + 20 * k}")
            ax.legend()
            ax.grid(alpha=0.3)
        elif kind == "bars":
            ax.bar(range(15), rng.random(15) * 100)
        elif kind == "scatter":
            ax.scatter(rng.normal(size=300), rng.normal(size=300), c=rng.random(300), s=20)
        else:
            ax.pie(rng.random(6) + 0.2, labels=list("ABCDEF"), autopct="%1.0f%%")
        ax.set_title(" ".join(rng.choice(WORDS, 3)).capitalize())
        png = io.BytesIO()
        fig.savefig(png, format="png")
    with Image.open(png) as image:
        return image.convert("RGB")


def _page(dark: bool, rng: np.random.Generator) -> Image.Image:
    paper, ink = ((30, 32, 36), (225, 225, 225)) if dark else ((255, 255, 255), (30, 30, 30))
    im = Image.new("RGB", (1240, 877), paper)
    d = ImageDraw.Draw(im)
    d.text((80, 50), "Section 1: Results", fill=ink, font=ImageFont.load_default(size=34))
    body = ImageFont.load_default(size=20)
    for i in range(22):
        d.text((80, 120 + 32 * i), " ".join(rng.choice(WORDS, 12)), fill=ink, font=body)
    return im


def _dashboard(dark: bool, rng: np.random.Generator) -> Image.Image:
    back, card, ink = (
        ((30, 32, 36), (50, 52, 58), (220, 220, 220))
        if dark
        else ((255, 255, 255), (248, 248, 248), (40, 40, 40))
    )
    im = Image.new("RGB", (1280, 800), back)
    d = ImageDraw.Draw(im)
    font = ImageFont.load_default(size=20)
    d.rectangle((0, 0, 1280, 60), fill=(33, 99, 178))
    d.text((20, 16), "Console   Runs   Settings", fill="white", font=font)
    for k in range(6):
        y = 90 + 110 * k
        d.rounded_rectangle((40, y, 640, y + 90), 10, outline=(200, 200, 200), width=2, fill=card)
        d.text((60, y + 30), f"Job {k}: " + " ".join(rng.choice(WORDS, 5)), fill=ink, font=font)
        button = ((46, 160, 67), (207, 34, 46), (230, 140, 0))[k % 3]
        d.rounded_rectangle((680, y + 20, 820, y + 70), 8, fill=button)
    return im


KINDS: dict[str, Callable[[bool, np.random.Generator], Image.Image]] = {
    **{k: partial(_chart, k) for k in ("line", "bars", "scatter", "pie")},
    "page": _page,
    "dashboard": _dashboard,
}


def generate_renders(out_dir: Path, seed: int = 0) -> list[Render]:
    """Every kind on both backgrounds, as PNG and JPEG q90 (made once: existing files are
    kept). The same ``seed`` draws the same images."""
    out_dir.mkdir(parents=True, exist_ok=True)
    items: list[Render] = []
    for i, (kind, draw) in enumerate(KINDS.items()):
        for background in BACKGROUNDS:
            stem = out_dir / f"{kind}_{background}"
            png, jpeg = stem.with_suffix(".png"), stem.with_suffix(".jpg")
            if not (png.exists() and jpeg.exists()):
                rng = np.random.default_rng([seed, i, BACKGROUNDS.index(background)])
                image = draw(background == "dark", rng)
                for path, options in ((png, {"format": "PNG"}), (jpeg, JPEG_OPTIONS)):
                    data = io.BytesIO()
                    image.save(data, **options)
                    write_whole(path, data.getvalue())  # renamed into place once complete
            items += [Render(png, kind, background, "png"), Render(jpeg, kind, background, "jpeg")]
    return items
