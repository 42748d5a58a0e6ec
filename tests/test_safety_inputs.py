"""Safety of inputs, VLM replies, secrets and escaping: never lose a row, never hang, never leak.

Each test names the failure it guards against; all run in seconds without a VLM or weights.
"""

from __future__ import annotations

import csv
import os
import subprocess
import sys
from pathlib import Path

import pytest

from agentiqa_cli.errors import ImageError
from agentiqa_cli.imaging.load import load_image
from tests.conftest import natural_like, save_rgb

ROOT = Path(__file__).resolve().parents[1]


def cli(*args: str | Path, cwd: Path, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    """The real console entry in a subprocess (a hang fails the test instead of the suite)."""
    env = dict(os.environ, PYTHONPATH=str(ROOT), NO_COLOR="1")
    return subprocess.run(
        [sys.executable, "-m", "agentiqa_cli", *map(str, args)],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def rows(path: Path) -> list[dict[str, str]]:
    with open(path, newline="", encoding="utf-8") as f:
        return list(csv.DictReader(f))


# -- 5: only regular files are read, reads bounded by size ---------------------------------
@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
def test_fifo_and_dev_zero_get_error_rows_not_a_hang(tmp_path: Path) -> None:
    d = tmp_path / "d"
    save_rgb(d / "a.png", natural_like(48, 48))
    os.mkfifo(d / "fifo.png")
    (d / "zero.png").symlink_to("/dev/zero")
    for inputs in (["d"], ["d/fifo.png", "d/zero.png", "d/a.png"]):
        r = cli("score", *inputs, "-t", "sharpness", "-o", "out.csv", "-q", cwd=tmp_path)
        assert r.returncode == 3, r.stderr
        by = {row["image"]: row for row in rows(tmp_path / "out.csv")}
        assert by["d/a.png"]["status"] == "ok"
        for bad in ("d/fifo.png", "d/zero.png"):
            assert by[bad]["status"] == "error"
            assert "not a regular file" in by[bad]["error"]


def test_huge_file_is_refused_by_size_before_reading(tmp_path: Path) -> None:
    big = tmp_path / "big.png"
    with open(big, "wb") as f:
        f.truncate(1 << 30)  # sparse: 1 GiB that costs no disk
    with pytest.raises(ImageError, match="larger than"):
        load_image(big, max_pixels=1_000_000)


def test_non_image_is_not_read_whole(tmp_path: Path) -> None:
    """A non-image below the size limit is rejected from its header, not read into memory."""
    import tracemalloc

    junk = tmp_path / "junk.png"
    with open(junk, "wb") as f:
        f.truncate(64 << 20)
    tracemalloc.start()
    try:
        with pytest.raises(ImageError, match="not a recognised image"):
            load_image(junk)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 8 << 20, peak


# -- 6: an unreadable sub-folder is reported --------------------------------------------------
def test_unreadable_subfolder_gets_an_error_row(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from agentiqa_cli.imaging import discover as disc

    d = tmp_path / "d"
    save_rgb(d / "a.png", natural_like(48, 48))
    save_rgb(d / "locked" / "b.png", natural_like(48, 48))
    real = os.scandir

    def scandir(path: object = ".") -> object:  # what chmod 0 does for a non-root user
        if Path(str(path)).name == "locked":
            raise PermissionError(13, "Permission denied", str(path))
        return real(path)  # type: ignore[arg-type]

    monkeypatch.setattr(os, "scandir", scandir)
    jobs = disc.pair(disc.discover([str(d)], recursive=True), None)
    by = {j.image.name: j for j in jobs}
    assert by["a.png"].error == ""
    assert "cannot list folder" in by["locked"].error
    assert "ermission denied" in by["locked"].error
