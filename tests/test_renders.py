"""Clean renders (bench.renders): charts, pages and dashboards on white and dark backgrounds."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from PIL import Image

from agentiqa_cli.bench.renders import BACKGROUNDS, KINDS, generate_renders


def test_every_kind_on_both_backgrounds_as_png_and_jpeg(tmp_path: Path) -> None:
    items = generate_renders(tmp_path)
    assert {(it.kind, it.background, it.saved) for it in items} == {
        (k, b, s) for k in KINDS for b in BACKGROUNDS for s in ("png", "jpeg")
    }
    for it in items:
        with Image.open(it.path) as im:
            assert im.format == {"png": "PNG", "jpeg": "JPEG"}[it.saved]
            px = np.asarray(im.convert("L"), dtype=np.float32)
        # the background is what the name says: most of a white render is near white, most
        # of a dark one near black, and something is drawn on it
        light = float((px > 240).mean())
        dark = float((px < 60).mean())
        assert (light if it.background == "white" else dark) > 0.5, it.path.name
        assert px.std() > 10, it.path.name


def test_the_same_seed_draws_the_same_images_and_another_seed_others(tmp_path: Path) -> None:
    a = generate_renders(tmp_path / "a")
    b = generate_renders(tmp_path / "b")
    c = generate_renders(tmp_path / "c", seed=1)
    pngs = [i for i, it in enumerate(a) if it.saved == "png"]
    same = [
        np.array_equal(np.asarray(Image.open(a[i].path)), np.asarray(Image.open(b[i].path)))
        for i in pngs
    ]
    other = [
        np.array_equal(np.asarray(Image.open(a[i].path)), np.asarray(Image.open(c[i].path)))
        for i in pngs
    ]
    assert all(same)
    assert not any(other)
