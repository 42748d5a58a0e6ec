"""One reader for the files a run is configured by: regular files only (a FIFO never
blocks, /dev/zero is never read to the end), bounded by size, UTF-8, and every YAML or
JSON failure (recursion, a 5,000-digit integer) an exit-2 usage error naming the file."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest

from agentiqa_cli.errors import ConfigError
from agentiqa_cli.io.read import MAX_TEXT_BYTES, load_yaml, read_bytes
from tests.conftest import natural_like, save_rgb
from tests.test_safety_inputs import run

BAD_TEXT = {
    "latin1": "vlm: r\xe9gles\n".encode("latin-1"),
    "binary": b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\xff\xfe",
    "deep": b"a: " + b"[" * 60_000,
    "bigint": b"concurrency: " + b"9" * 5_000 + b"\n",
}


def _cli_exit(args: list[str], cwd: Path) -> tuple[int, str]:
    """Run in a thread: a hang fails the test instead of stalling the suite."""
    got: dict[str, object] = {}

    def go() -> None:
        r = run(*args, cwd=cwd)
        got["code"], got["err"] = r.returncode, r.stderr

    t = threading.Thread(target=go, daemon=True)
    t.start()
    t.join(timeout=60)
    assert not t.is_alive(), f"{args} hung"
    return int(got["code"]), str(got["err"])  # type: ignore[call-overload]


@pytest.fixture
def img(tmp_path: Path) -> Path:
    return save_rgb(tmp_path / "a.png", natural_like(48, 64))


@pytest.mark.parametrize("flag", ["--config", "--calibration"])
@pytest.mark.parametrize("kind", [*BAD_TEXT, "fifo", "dev-zero", "folder", "too-big"])
def test_bad_config_and_calibration_files_are_exit_2(
    tmp_path: Path, img: Path, flag: str, kind: str
) -> None:
    bad = tmp_path / "bad.yaml"
    if kind == "fifo":
        if not hasattr(os, "mkfifo"):
            pytest.skip("needs FIFOs")
        os.mkfifo(bad)
    elif kind == "dev-zero":
        bad.symlink_to("/dev/zero")
    elif kind == "folder":
        bad.mkdir()
    elif kind == "too-big":
        with open(bad, "wb") as f:
            f.truncate(MAX_TEXT_BYTES + 1)
    else:
        bad.write_bytes(BAD_TEXT[kind])
    code, err = _cli_exit(["score", img, "-t", "sharpness", flag, bad, "-o", "r.csv"], tmp_path)
    assert code == 2, err
    assert "bad.yaml" in err and "internal error" not in err.lower()
    assert not (tmp_path / "r.csv").exists()


@pytest.mark.parametrize("kind", list(BAD_TEXT))
def test_a_bad_tool_card_or_prompt_is_a_config_error(tmp_path: Path, kind: str) -> None:
    from agentiqa_cli.asking.prompts import load_prompt
    from agentiqa_cli.tools.cards import load_card

    for loader, name in ((load_card, "sharpness.yaml"), (load_prompt, "planner.yaml")):
        p = tmp_path / name
        p.write_bytes(BAD_TEXT[kind])
        with pytest.raises(ConfigError, match=name.replace(".", r"\.")):
            loader(p)


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
def test_tiers_from_a_fifo_or_dev_zero_is_a_config_error(tmp_path: Path) -> None:
    from agentiqa_cli.evaluate.tiers import tiers_from_reference

    os.mkfifo(tmp_path / "fifo.csv")
    (tmp_path / "zero.csv").symlink_to("/dev/zero")
    for name in ("fifo.csv", "zero.csv"):
        with pytest.raises(ConfigError, match="not a regular file"):
            tiers_from_reference(tmp_path / name)


def test_the_reader_is_bounded_and_regular_only(tmp_path: Path) -> None:
    p = tmp_path / "x.yaml"
    p.write_bytes(b"a: 1\n")
    assert load_yaml(p, "x") == {"a": 1}
    with pytest.raises(ConfigError, match="over the 3-byte limit"):
        read_bytes(p, "x", limit=3)
    with pytest.raises(ConfigError, match="not a regular file"):
        read_bytes(Path("/dev/null"), "x")


def test_a_deeply_nested_cell_in_a_results_csv_is_a_name_not_a_crash() -> None:
    from agentiqa_cli.report.rows import parse_marks

    marks = parse_marks("[" * 60_000)
    assert isinstance(marks, list)


def test_report_measures_a_huge_non_image_without_reading_it_into_memory(tmp_path: Path) -> None:
    import hashlib
    import tracemalloc

    from agentiqa_cli.report.facts import measure

    big = tmp_path / "big.bin"
    with open(big, "wb") as f:
        f.write(b"not an image at all\n")
        f.truncate(300 * 1024 * 1024)  # sparse: costs no disk
    tracemalloc.start()
    try:
        facts = measure(big)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert facts.error and "not a readable image" in facts.error
    assert peak < 32 * 1024 * 1024, peak  # it read 300 MB whole before
    photo = save_rgb(tmp_path / "p.png", natural_like(48, 64))
    ok = measure(photo)
    assert not ok.error and ok.sha256 == hashlib.sha256(photo.read_bytes()).hexdigest()


@pytest.mark.parametrize("arg", ["locked/a.png", "locked/*.png"])
def test_an_input_in_a_folder_that_cannot_be_searched_is_a_row_not_a_dead_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, arg: str
) -> None:
    """Without search permission on its folder, stat fails with EACCES, which Path.is_dir
    and Path.exists raise (the whole run died, exit 4, before any work). Root ignores
    permissions, so the refusal is simulated at the stat calls."""
    import pandas as pd

    from tests.test_cli_score import invoke

    save_rgb(tmp_path / "locked" / "a.png", natural_like(48, 48))
    save_rgb(tmp_path / "b.png", natural_like(48, 48, seed=1))
    real_stat, real_lstat = os.stat, os.lstat

    def deny(real):  # type: ignore[no-untyped-def]
        def stat(path, *a, **k):  # type: ignore[no-untyped-def]
            if "locked" in str(path) and str(path).rstrip("/") != "locked":
                raise PermissionError(13, "Permission denied", str(path))
            return real(path, *a, **k)

        return stat

    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(os, "stat", deny(real_stat))
    monkeypatch.setattr(os, "lstat", deny(real_lstat))
    code, _ = invoke("score", arg, "b.png", "-t", "sharpness", "-o", "r.csv", "-q")
    assert code in (0, 3), code
    assert "b.png" in pd.read_csv(tmp_path / "r.csv")["image"].tolist()


@pytest.mark.parametrize("column", ["wins", "ties"])
def test_a_pool_holding_a_deeply_nested_cell_is_refused_not_a_crash(
    tmp_path: Path, column: str
) -> None:
    import sqlite3

    from agentiqa_cli.experience.pool import read_pool, write_pool
    from tests.test_experience_pool import meta, records

    path = tmp_path / "p.db"
    write_pool(path, meta(), records(3))
    con = sqlite3.connect(path)
    with con:
        con.execute(f"UPDATE records SET {column} = ?", ("[" * 60_000,))
    con.close()
    with pytest.raises(ConfigError, match="experience pool"):
        read_pool(path)
