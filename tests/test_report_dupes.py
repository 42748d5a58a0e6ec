"""Exact and near duplicates: copies found, different pictures kept apart."""

from __future__ import annotations

from pathlib import Path

from PIL import Image

from agentiqa_cli.report.duplicates import (
    connected_sets,
    exact_sets,
    hamming,
    near_sets,
)
from agentiqa_cli.report.facts import measure
from tests.conftest import scene


def test_hamming_counts_bits() -> None:
    d = hamming([0b1011, 0], [0b0001, 2**64 - 1])
    assert d.tolist() == [[2, 61], [1, 64]]


def test_connected_sets_join_chains() -> None:
    assert connected_sets(6, [(0, 2), (2, 5), (3, 4)]) == [[0, 2, 5], [3, 4]]


def test_exact_sets_by_content() -> None:
    assert exact_sets(["a", "b", "a", "", "", "b", "c"]) == [[0, 2], [1, 5]]


def test_copies_are_near_duplicates_and_other_pictures_are_not(tmp_path: Path) -> None:
    files = []
    for seed in range(4):
        im = scene(seed)
        f = tmp_path / f"p{seed}.png"
        im.save(f)
        files.append(f)
    a = scene(0)
    a.resize((160, 120), Image.LANCZOS).save(tmp_path / "p0-small.jpg", quality=85)
    a.crop((8, 6, 312, 234)).save(tmp_path / "p0-crop.jpg", quality=60)
    files += [tmp_path / "p0-small.jpg", tmp_path / "p0-crop.jpg"]
    (tmp_path / "p1-copy.png").write_bytes(files[1].read_bytes())
    files.append(tmp_path / "p1-copy.png")
    facts = [measure(f) for f in files]
    assert all(f.ok for f in facts)
    digests = [f.sha256 for f in facts]
    assert exact_sets(digests) == [[1, 6]]
    sets = near_sets(
        [f.phash for f in facts], [f.dhash for f in facts], [f.gray for f in facts], digests
    )
    assert sets == [[0, 4, 5]]
