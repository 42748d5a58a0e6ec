"""Synthetic distortion generator: determinism, monotone levels, manifest, bundled photos."""

from __future__ import annotations

import itertools
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from PIL import Image

from agentiqa_cli.bench.synth import generate, generate_from_dir, read_manifest, sample_photos
from agentiqa_cli.bench.synth_eval import load_manifest
from agentiqa_cli.errors import ConfigError, MissingExtraError
from agentiqa_cli.imaging.distort import KINDS, LEVELS, distort

LUMA = np.array([0.299, 0.587, 0.114], np.float32)


@pytest.fixture(scope="module")
def clean_dir(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    return sample_photos(tmp_path_factory.mktemp("clean"), 128, names=["astronaut", "coffee"])


def _files(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir()) if p.is_file()}


def test_same_seed_same_bytes(tmp_path, clean_dir):
    kinds = ["noise", "motion_blur", "jpeg", "color_cast"]
    a = generate(clean_dir, tmp_path / "a", kinds, [1, 3, 5], seed=7)
    b = generate(clean_dir, tmp_path / "b", kinds, [1, 3, 5], seed=7)
    assert len(a) == len(b) == 2 * (1 + 4 * 3)
    fa, fb = _files(tmp_path / "a"), _files(tmp_path / "b")
    assert fa == fb and "manifest.csv" in fa


def test_other_seed_other_noise(tmp_path, clean_dir):
    generate(clean_dir, tmp_path / "a", ["noise"], [2], seed=0)
    generate(clean_dir, tmp_path / "b", ["noise"], [2], seed=1)
    name = "astronaut__noise_2.png"
    assert (tmp_path / "a" / name).read_bytes() != (tmp_path / "b" / name).read_bytes()


def _grad(x: np.ndarray) -> float:
    g = x @ LUMA
    return float(np.abs(np.diff(g, axis=0)).mean() + np.abs(np.diff(g, axis=1)).mean())


def _chroma(x: np.ndarray) -> float:
    return float(np.abs(x - (x @ LUMA)[..., None]).mean())


# a simple property of (clean, distorted) that must rise strictly with the level
PROPERTY = {
    "blur": lambda c, d: -_grad(d),
    "motion_blur": lambda c, d: -_grad(d),
    "noise": lambda c, d: float(np.std(d - c)),
    "jpeg": lambda c, d: float(np.mean((d - c) ** 2)),
    "jpeg2000": lambda c, d: float(np.mean((d - c) ** 2)),
    "brighten": lambda c, d: float(d.mean()),
    "darken": lambda c, d: -float(d.mean()),
    "contrast": lambda c, d: -float((d @ LUMA).std()),
    "desaturate": lambda c, d: -_chroma(d),
    "oversaturate": lambda c, d: _chroma(d),
    "pixelate": lambda c, d: float(np.mean((d - c) ** 2)),
    "color_cast": lambda c, d: float(np.abs((d - c).mean(axis=(0, 1)) - (d - c).mean()).sum()),
    "posterize": lambda c, d: -float(np.unique(d).size),
}


@pytest.fixture(scope="module")
def photo(tmp_path_factory: pytest.TempPathFactory) -> np.ndarray:
    # 200 px: below ~190 px JPEG 2000's two strongest levels hit the codec's size floor
    (p,) = sample_photos(tmp_path_factory.mktemp("photo"), 200, names=["astronaut"])
    with Image.open(p) as im:
        return np.asarray(im.convert("RGB"), np.float32) / 255.0


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_levels_are_monotone(photo, kind):
    clean = photo
    values = [PROPERTY[kind](clean, clean)]
    for level in range(1, 6):
        rng = np.random.default_rng(3)
        out = distort(clean, kind, level, rng)
        assert out.shape == clean.shape and out.dtype == np.float32
        assert out.min() >= 0.0 and out.max() <= 1.0
        values.append(PROPERTY[kind](clean, out))
    assert all(a < b for a, b in itertools.pairwise(values)), (kind, values)


def test_every_kind_has_five_levels_and_a_check_property():
    assert set(PROPERTY) >= set(KINDS)
    assert all(len(LEVELS[k]) == 5 for k in KINDS)


def test_manifest_parses_and_resolves(tmp_path, clean_dir):
    out = tmp_path / "synth"
    items = generate(clean_dir, out, ["blur", "darken"], [1, 2], seed=0)
    df = pd.read_csv(out / "manifest.csv")
    assert list(df.columns) == ["image", "reference", "kind", "level"]
    assert len(df) == len(items) == 2 * (1 + 2 * 2)
    assert set(df["level"]) == {0, 1, 2} and set(df["kind"]) == {"clean", "blur", "darken"}
    assert (df.loc[df.level == 0, "image"] == df.loc[df.level == 0, "reference"]).all()
    for r in read_manifest(out / "manifest.csv"):
        assert r.path.is_file() and r.clean.is_file()
    rows = load_manifest(out / "manifest.csv")  # what eval-bench synth reads
    assert [r.level for r in rows] == list(df["level"])
    assert all(r.image.is_file() for r in rows)


def test_unknown_kind_is_refused(tmp_path, clean_dir):
    with pytest.raises(ConfigError, match="unknown distortion kind 'fog'"):
        generate(clean_dir, tmp_path, ["fog"], [1])


def test_sample_photos_sizes(tmp_path):
    (p,) = sample_photos(tmp_path / "a", 100, names=["coffee"])
    with Image.open(p) as im:
        assert max(im.size) == 100 and im.mode == "RGB"
    (q,) = sample_photos(tmp_path / "b", (64, 48), names=["camera"])
    with Image.open(q) as im:
        assert im.size == (64, 48) and im.mode == "RGB"


def test_generate_from_dir_resizes_and_writes_manifest(tmp_path):
    src = tmp_path / "src"
    src.mkdir()
    rng = np.random.default_rng(0)
    Image.fromarray((rng.random((90, 120)) * 255).astype(np.uint8), "L").save(src / "g.png")
    Image.fromarray((rng.random((60, 50, 3)) * 255).astype(np.uint8)).save(src / "c.jpg")
    (src / "notes.txt").write_text("not an image")
    manifest = generate_from_dir(src, tmp_path / "out", kinds=["noise"], levels=2, size=64)
    df = pd.read_csv(manifest)
    assert len(df) == 2 * (1 + 2)
    with Image.open(tmp_path / "out" / "clean" / "g.png") as im:
        assert max(im.size) == 64 and im.mode == "RGB"


def test_the_sample_photos_without_scikit_image_name_the_samples_extra(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The bundled photos come from scikit-image, the samples extra: without it, exit 2."""
    monkeypatch.setitem(sys.modules, "skimage", None)  # import skimage now fails
    with pytest.raises(MissingExtraError, match=r"pip install 'agentiqa\[samples\]'") as e:
        sample_photos(tmp_path, 64, names=("astronaut",))
    assert e.value.exit_code == 2 and not any(tmp_path.iterdir())
