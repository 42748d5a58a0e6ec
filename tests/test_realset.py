"""The realset spec and builder (no network: package downloads are faked)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from agentiqa_cli.bench.realset import STYLES, RealsetSpec, Runner, build, load_spec
from agentiqa_cli.bench.synth import read_manifest
from agentiqa_cli.errors import ConfigError

HELD_OUT = Path(__file__).resolve().parent.parent / "scripts" / "realset.yaml"
FITSET = HELD_OUT.with_name("fitset.yaml")
FRESH = HELD_OUT.with_name("freshset.yaml")


def test_shipped_spec_covers_the_styles_and_sources() -> None:
    spec = load_spec(HELD_OUT)
    styles = {s for i in spec.images for s in i.styles}
    assert set(STYLES) - {"plain"} <= styles
    assert {i.package for i in spec.images if i.package} == {
        "plasma-workspace-wallpapers",
        "gnome-backgrounds",
        "sway-backgrounds",
        "lomiri-wallpapers-16.04",
        "lxqt-themes",
        "mate-backgrounds",
    }
    assert len(spec.distorted()) >= 25  # unfitted real photographs
    assert all(i.license and i.author for i in spec.images)


def test_fit_set_and_held_out_set_share_no_image() -> None:
    held, fit = load_spec(HELD_OUT), load_spec(FITSET)
    where = lambda spec: {(i.package, i.path) for i in spec.images if i.package}  # noqa: E731
    assert not where(held) & where(fit)
    assert not {i.name for i in held.images} & {i.name for i in fit.images}
    assert all(i.fitted for i in fit.images)
    assert sum(i.kind == "photo" for i in fit.images) >= 15
    # the second batch is split by the rule stated in realset.yaml: its 36 photos sorted by
    # (package, file name lower-cased), even positions held out, odd ones fitted on
    batch = {
        "lomiri-wallpapers-16.04",
        "lomiri-wallpapers-20.04",
        "lxqt-themes",
        "mate-backgrounds",
    }
    both = [i for s in (held, fit) for i in s.images if i.package in batch]
    ranked = sorted(both, key=lambda i: (i.package, Path(i.path or "").name.lower()))
    assert len(ranked) == 36
    assert [i.fitted for i in ranked] == [k % 2 == 1 for k in range(len(ranked))]


def test_the_fresh_set_uses_packages_no_other_set_uses() -> None:
    """`make quality-fresh`'s photographs come from packages neither the realset nor the fit
    set draws on, are never fitted on, and are photographs with their author and licence."""
    fresh, held, fit = load_spec(FRESH), load_spec(HELD_OUT), load_spec(FITSET)
    used = {i.package for s in (held, fit) for i in s.images}
    assert not {i.package for i in fresh.images} & used
    assert not set(fresh.packages) & (set(held.packages) | set(fit.packages))
    assert all(i.kind == "photo" and not i.fitted for i in fresh.images)
    assert len(fresh.camera()) == len(fresh.images) >= 25 and not fresh.kinds
    assert all(i.license and i.author for i in fresh.images)


def _fake_runner(calls: list[list[str]]) -> Runner:
    def run(cmd: Sequence[str], cwd: Path) -> None:
        calls.append(list(cmd))
        if cmd[0] == "apt-get":
            (cwd / f"{cmd[2]}_1.0-1_all.deb").write_bytes(b"deb")
        else:  # dpkg-deb -x DEB ROOT
            root = Path(cmd[3])
            img = root / "usr/share/w/a.png"
            img.parent.mkdir(parents=True)
            rng = np.random.default_rng(0)
            Image.fromarray(rng.integers(0, 255, (300, 200, 3), dtype=np.uint8)).save(img)
            (root / "copyright").write_text("GPL", encoding="utf-8")

    return run


def _spec() -> RealsetSpec:
    return RealsetSpec.model_validate(
        {
            "size": 128,
            "synth_size": 64,
            "levels": [1, 5],
            "kinds": ["blur", "noise"],
            "packages": {"pkg-a": {"copyright": "copyright"}},
            "images": [
                {"name": "a", "package": "pkg-a", "path": "usr/share/w/a.png", "kind": "photo",
                 "styles": ["vivid"], "author": "x", "license": "CC0-1.0"},
                {"name": "coins", "skimage": "coins", "kind": "photo", "fitted": True,
                 "styles": ["bw"], "author": "y", "license": "CC0-1.0"},
            ],
        }
    )  # fmt: skip


def test_build_writes_clean_manifest_and_series_once(tmp_path: Path) -> None:
    calls: list[list[str]] = []
    recs = build(_spec(), tmp_path, _fake_runner(calls))
    assert [r.name for r in recs] == ["a", "coins"]
    assert recs[0].source == "debian:pkg-a=1.0-1:usr/share/w/a.png"
    assert recs[0].original_size == (200, 300)
    with Image.open(tmp_path / recs[0].file) as im:
        assert max(im.size) == 128
    man = json.loads((tmp_path / "manifest.json").read_text(encoding="utf-8"))
    assert man["images"][1]["license"] == "CC0-1.0"
    items = read_manifest(tmp_path / "synth" / "manifest.csv")
    # only the unfitted photo is distorted: clean + 2 kinds x 2 levels
    assert sorted((it.kind, it.level) for it in items) == [
        ("blur", 1), ("blur", 5), ("clean", 0), ("noise", 1), ("noise", 5)
    ]  # fmt: skip
    with Image.open(items[1].path) as im:
        assert max(im.size) == 64
    assert [c[0] for c in calls] == ["apt-get", "dpkg-deb"]
    build(_spec(), tmp_path, _fake_runner(calls))  # cached: no new downloads
    assert len(calls) == 2


def test_the_held_out_recipe_series_is_built_for_held_out_photos_only(tmp_path: Path) -> None:
    build(_spec(), tmp_path / "held", _fake_runner([]))
    camera = read_manifest(tmp_path / "held" / "camera" / "manifest.csv")
    other = read_manifest(tmp_path / "held" / "camera_other" / "manifest.csv")
    assert {it.clean.name for it in camera} == {"a.png"}  # the unfitted photo
    assert [(o.kind, o.level) for o in other] == [(c.kind, c.level) for c in camera]
    assert other[0].path.name == "a__clean_q92.jpg"  # HELD_OUT_RECIPE's save
    fit = _spec().model_copy(update={"camera_photos": "fitted"})
    build(fit, tmp_path / "fit", _fake_runner([]))
    assert (tmp_path / "fit" / "camera" / "manifest.csv").exists()
    assert not (tmp_path / "fit" / "camera_other").exists()  # never trained on


def test_unreachable_archive_is_a_clear_error(tmp_path: Path) -> None:
    def run(cmd: Sequence[str], cwd: Path) -> None:
        raise ConfigError("apt-get download pkg-a failed (100): Could not resolve host")

    with pytest.raises(ConfigError, match="Could not resolve"):
        build(_spec(), tmp_path, run)


def test_spec_rejects_two_sources_and_unknown_styles() -> None:
    base = _spec().model_dump()
    bad = dict(base, images=[dict(base["images"][0], skimage="coins")])
    with pytest.raises(ValueError, match="either"):
        RealsetSpec.model_validate(bad)
    bad = dict(base, images=[dict(base["images"][0], styles=["sepia"])])
    with pytest.raises(ValueError):
        RealsetSpec.model_validate(bad)
