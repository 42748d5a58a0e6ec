"""Drawings from documentation packages (bench.drawings): which PNGs are sampled, and once."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
from PIL import Image

from agentiqa_cli.bench.drawings import MIN_SIDE, drawings, jpeg_copies
from agentiqa_cli.bench.realset import Runner

FOLDER = "usr/share/doc/pkg/html/_images"


def _fake_runner(calls: list[list[str]]) -> Runner:
    """apt-get download leaves a .deb; dpkg-deb -x unpacks ten plots, a thumbnail and an
    icon into the package's image folder."""

    def run(cmd: Sequence[str], cwd: Path) -> None:
        calls.append(list(cmd))
        if cmd[0] == "apt-get":
            (cwd / f"{cmd[2]}_2.0-1_all.deb").write_bytes(b"deb")
            return
        images = Path(cmd[3]) / FOLDER
        images.mkdir(parents=True)
        white = np.full((120, 160, 3), 255, np.uint8)
        for k in range(10):
            Image.fromarray(white).save(images / f"plot_{k:02d}.png")
        Image.fromarray(white).save(images / "sphx_glr_plot_00_thumb.png")
        Image.fromarray(white[: MIN_SIDE - 1]).save(images / "icon.png")
        (images / "broken.png").write_bytes(b"not a png")

    return run


def test_samples_usable_pngs_per_package_in_name_order(tmp_path: Path) -> None:
    calls: list[list[str]] = []
    got = drawings(
        {"pkg-a": FOLDER, "pkg-b": FOLDER}, tmp_path, per_package=4, run=_fake_runner(calls)
    )
    assert len(got) == 8
    for pkg in ("pkg-a", "pkg-b"):
        mine = [p for p in got if f"/{pkg}/" in str(p)]
        assert len(mine) == 4 and mine == sorted(mine)
        assert all(p.name.startswith("plot_") for p in mine)  # no thumbnail, icon or broken file
    # the same seed draws the same files; the packages are fetched and unpacked once
    again = drawings(
        {"pkg-a": FOLDER, "pkg-b": FOLDER}, tmp_path, per_package=4, run=_fake_runner(calls)
    )
    assert again == got
    assert [c[0] for c in calls] == ["apt-get", "dpkg-deb", "apt-get", "dpkg-deb"]
    other = drawings({"pkg-a": FOLDER}, tmp_path, per_package=4, seed=1, run=_fake_runner(calls))
    assert other != got[:4]
    assert len(drawings({"pkg-a": FOLDER}, tmp_path, per_package=50, run=_fake_runner(calls))) == 10


def test_jpeg_copies_show_transparency_over_white_and_are_made_once(tmp_path: Path) -> None:
    """A transparent plot's copy is what the loader shows (white where it is transparent),
    saved as a JPEG at the quality asked; a second call keeps the files."""
    rgba = np.zeros((64, 96, 4), np.uint8)  # transparent black ...
    rgba[20:24, :, 3] = 255  # ... but for an opaque black line
    Image.fromarray(rgba, "RGBA").save(tmp_path / "plot.png")
    (copy,) = jpeg_copies([tmp_path / "plot.png"], tmp_path / "q20", 20)
    assert copy.name == "000__plot_q20.jpg"
    with Image.open(copy) as im:
        assert im.format == "JPEG" and im.mode == "RGB"
        px = np.asarray(im, dtype=np.float64)
    assert px[:8].mean() > 240 and px[21].mean() < 60
    stamp = copy.stat().st_mtime_ns
    assert jpeg_copies([tmp_path / "plot.png"], tmp_path / "q20", 20) == [copy]
    assert copy.stat().st_mtime_ns == stamp
