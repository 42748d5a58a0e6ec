"""The real-image set: clean images nobody on the project made, from freely licensed packages.

A declarative spec (``scripts/realset.yaml``) lists each image: where it comes from (a file
inside a Debian package, fetched with ``apt-get download`` and unpacked with ``dpkg-deb -x``,
or a scikit-image bundled photo), its licence and author, whether it is a photograph or a
graphic, and its style labels. ``build`` writes, under one cache folder:

  debs/              the downloaded .deb files (kept, so rebuilds need no network)
  pkg/NAME/          each package unpacked
  clean/NAME.png     every image at the working size (long side ``size``)
  manifest.json      one record per clean image: source, package version, licence, styles
  synth/             the unfitted photographs at ``synth_size`` and their distorted series
                     (``bench.synth.generate``: every kind x level, fixed seed), manifest.csv
  camera/            the same photographs at ``camera_size``, their camera series
                     (``bench.camera.generate_camera``: damage, then a camera JPEG save;
                     clean ones saved the same way and at q75), manifest.csv

Nothing is rebuilt that is already there (delete the folder to start over).
"""

from __future__ import annotations

import json
import shutil
import subprocess
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Literal

import numpy as np
import yaml
from PIL import Image
from pydantic import BaseModel, ConfigDict, Field, model_validator

from agentiqa_cli.bench.camera import (
    CAMERA_KINDS,
    DEFAULT_RECIPE,
    HELD_OUT_RECIPE,
    generate_camera,
)
from agentiqa_cli.bench.synth import bundled_photos, generate, read_manifest
from agentiqa_cli.errors import ConfigError
from agentiqa_cli.imaging.distort import KINDS

STYLES = ("shallow_dof", "macro", "vivid", "high_key", "low_key", "bw", "flat", "plain")
Style = Literal["shallow_dof", "macro", "vivid", "high_key", "low_key", "bw", "flat", "plain"]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class PackageSpec(_Strict):
    copyright: str  # path of the package's copyright file, inside the package


class ImageSpec(_Strict):
    name: str
    kind: Literal["photo", "graphic"]
    styles: list[Style] = Field(min_length=1)
    author: str
    license: str
    package: str | None = None
    path: str | None = None  # inside the package
    skimage: str | None = None  # a bench.synth bundled photo name
    fitted: bool = False  # the built-in detectors were fitted on this image

    @model_validator(mode="after")
    def _one_source(self) -> ImageSpec:
        if (self.package is None) == (self.skimage is None):
            raise ValueError(f"{self.name}: give either package+path or skimage")
        if self.package is not None and self.path is None:
            raise ValueError(f"{self.name}: a package image needs its path")
        return self


class RealsetSpec(_Strict):
    size: int = Field(1024, ge=64)
    synth_size: int = Field(512, ge=64)
    seed: int = 0
    levels: list[int] = [1, 2, 3, 4, 5]
    kinds: list[str]
    camera_size: int = Field(1024, ge=64)
    camera_kinds: list[str] = list(CAMERA_KINDS)
    # whose camera series: the held-out photos (the realset) or the fitted ones (the fit set)
    camera_photos: Literal["unfitted", "fitted"] = "unfitted"
    packages: dict[str, PackageSpec]
    images: list[ImageSpec]

    @model_validator(mode="after")
    def _check(self) -> RealsetSpec:
        names = [i.name for i in self.images]
        if len(set(names)) != len(names):
            raise ValueError("image names must be unique")
        for i in self.images:
            if i.package is not None and i.package not in self.packages:
                raise ValueError(f"{i.name}: package {i.package} is not under packages")
        return self

    def distorted(self) -> list[ImageSpec]:
        """The photographs that get distorted series: real photos the detectors never saw."""
        return [i for i in self.images if i.kind == "photo" and not i.fitted]

    def camera(self) -> list[ImageSpec]:
        """The photographs that get a camera series."""
        fitted = self.camera_photos == "fitted"
        return [i for i in self.images if i.kind == "photo" and i.fitted == fitted]


class CleanRecord(BaseModel):
    """One line of manifest.json."""

    name: str
    file: str  # relative to the cache folder
    kind: str
    styles: list[str]
    fitted: bool
    author: str
    license: str
    source: str  # "debian:PKG=VERSION:PATH" or "scikit-image:NAME"
    original_size: tuple[int, int]


def load_spec(path: Path) -> RealsetSpec:
    try:
        data = yaml.safe_load(Path(path).read_text(encoding="utf-8"))
        spec = RealsetSpec.model_validate(data)
    except (OSError, yaml.YAMLError, ValueError) as e:
        raise ConfigError(f"realset spec {path}: {e}") from e
    unknown = [k for k in spec.kinds if k not in KINDS]
    if unknown:
        raise ConfigError(f"realset spec {path}: unknown kinds {unknown}; known: {list(KINDS)}")
    unknown = [k for k in spec.camera_kinds if k not in CAMERA_KINDS]
    if unknown:
        raise ConfigError(
            f"realset spec {path}: unknown camera kinds {unknown}; known: {list(CAMERA_KINDS)}"
        )
    return spec


Runner = Callable[[Sequence[str], Path], None]


def _run(cmd: Sequence[str], cwd: Path) -> None:
    if shutil.which(cmd[0]) is None:
        raise ConfigError(f"{cmd[0]} not found: building the realset needs a Debian/Ubuntu system")
    p = subprocess.run(list(cmd), cwd=cwd, capture_output=True, text=True)
    if p.returncode != 0:
        msg = (p.stderr or p.stdout).strip().splitlines()
        raise ConfigError(
            f"{' '.join(cmd)} failed ({p.returncode}): {msg[-1] if msg else 'no output'}"
            + (
                "\n  is the Debian archive reachable? (try `apt-get update`)"
                if cmd[0] == "apt-get"
                else ""
            )
        )


def fetch_package(pkg: str, cache: Path, run: Runner = _run) -> tuple[Path, str]:
    """Download (once) and unpack (once) one package; returns (its root, its version)."""
    debs = cache / "debs"
    debs.mkdir(parents=True, exist_ok=True)
    found = sorted(debs.glob(f"{pkg}_*.deb"))
    if not found:
        run(["apt-get", "download", pkg], debs)
        found = sorted(debs.glob(f"{pkg}_*.deb"))
        if not found:
            raise ConfigError(f"apt-get download {pkg} left no .deb in {debs}")
    deb = found[-1]
    version = deb.name.split("_")[1].replace("%3a", ":")
    root = cache / "pkg" / pkg
    if not (root / ".done").exists():
        shutil.rmtree(root, ignore_errors=True)
        root.mkdir(parents=True)
        run(["dpkg-deb", "-x", str(deb.resolve()), str(root.resolve())], cache)
        (root / ".done").write_text(version, encoding="utf-8")
    return root, version


def _downscale(src: Path, dst: Path, size: int) -> tuple[int, int]:
    with Image.open(src) as im:
        orig = im.size
        rgb = im.convert("RGB")
    w, h = orig
    s = min(1.0, size / max(w, h))
    if s < 1.0:
        rgb = rgb.resize((max(16, round(w * s)), max(16, round(h * s))), Image.Resampling.LANCZOS)
    dst.parent.mkdir(parents=True, exist_ok=True)
    rgb.save(dst, format="PNG", compress_level=1)
    return orig


def _working_copy(
    spec: RealsetSpec, img: ImageSpec, cache: Path, size: int, folder: str, run: Runner
) -> tuple[Path, str, tuple[int, int]]:
    dst = cache / folder / f"{img.name}.png"
    if img.skimage is not None:
        tmp = cache / "skimage"
        src = tmp / f"{img.skimage}.png"
        if not src.exists():
            tmp.mkdir(parents=True, exist_ok=True)
            (x,) = bundled_photos([img.skimage])
            Image.fromarray((x * 255.0 + 0.5).astype(np.uint8)).save(src, format="PNG")
        source = f"scikit-image:{img.skimage}"
    else:
        assert img.package is not None and img.path is not None
        root, version = fetch_package(img.package, cache, run)
        src = root / img.path
        if not src.exists():
            raise ConfigError(f"{img.name}: {img.path} is not in {img.package}={version}")
        source = f"debian:{img.package}={version}:{img.path}"
    with Image.open(src) as im:
        orig = im.size
    if not dst.exists():
        _downscale(src, dst, size)
    return dst, source, orig


def build(spec: RealsetSpec, cache: Path, run: Runner = _run) -> list[CleanRecord]:
    """Fetch, downscale, record and distort (each step only if not done already)."""
    cache.mkdir(parents=True, exist_ok=True)
    records: list[CleanRecord] = []
    for img in spec.images:
        path, source, orig = _working_copy(spec, img, cache, spec.size, "clean", run)
        records.append(
            CleanRecord(
                name=img.name,
                file=path.relative_to(cache).as_posix(),
                kind=img.kind,
                styles=list(img.styles),
                fitted=img.fitted,
                author=img.author,
                license=img.license,
                source=source,
                original_size=orig,
            )
        )
    copyrights = {}
    for pkg, p in spec.packages.items():
        if any(i.package == pkg for i in spec.images):
            root, version = fetch_package(pkg, cache, run)
            copyrights[pkg] = {"version": version, "copyright": (root / p.copyright).as_posix()}
    manifest = {
        "images": [r.model_dump() for r in records],
        "packages": copyrights,
        "size": spec.size,
        "synth_size": spec.synth_size,
    }
    (cache / "manifest.json").write_text(
        json.dumps(manifest, indent=1, ensure_ascii=False) + "\n", encoding="utf-8"
    )
    synth = cache / "synth"
    want = [
        _working_copy(spec, i, cache, spec.synth_size, "synth/clean", run)[0]
        for i in spec.distorted()
    ]
    if want and not _series_done(synth, spec.kinds, spec.levels, want):
        generate(want, synth, spec.kinds, spec.levels, spec.seed)
    originals = [
        _working_copy(spec, i, cache, spec.camera_size, "camera/clean", run)[0]
        for i in spec.camera()
    ]
    series = {"camera": DEFAULT_RECIPE}
    if spec.camera_photos == "unfitted":
        # the same damage made as no training series makes it (held-out photos only: the
        # camera model never sees this recipe), to measure how it reads another pipeline
        series["camera_other"] = HELD_OUT_RECIPE
    for folder, recipe in series.items():
        out = cache / folder
        if (
            originals
            and spec.camera_kinds
            and not _series_done(out, spec.camera_kinds, spec.levels, originals)
        ):
            generate_camera(originals, out, spec.camera_kinds, spec.levels, spec.seed, recipe)
    return records


def _series_done(
    folder: Path, kinds: Sequence[str], levels: Sequence[int], clean: list[Path]
) -> bool:
    m = folder / "manifest.csv"
    if not m.exists():
        return False
    items = read_manifest(m)
    have = {(it.clean.name, it.kind, it.level) for it in items if it.path.exists()}
    need = {(c.name, k, lv) for c in clean for k in kinds for lv in levels}
    return need <= have


def load_records(cache: Path) -> list[CleanRecord]:
    """The clean images of a built realset (``make realset``)."""
    m = cache / "manifest.json"
    if not m.exists():
        raise ConfigError(f"no realset in {cache}: run `make realset` first")
    data = json.loads(m.read_text(encoding="utf-8"))
    return [CleanRecord.model_validate(r) for r in data["images"]]
