"""Drawings from Debian's documentation packages: the plots, diagrams and dialogs a CI job checks.

``bench.renders`` draws six kinds of chart and page itself; documentation holds hundreds more,
drawn by matplotlib, Octave or a GUI toolkit, by people who never heard of this project.
``drawings`` fetches a package (``apt-get download``, as the realset does, into the same kind
of cache) and samples its PNGs. ``detectors.drawn_white`` was designed on the ``DESIGN``
packages (``scripts/drawn_check.py`` prints its readings there against the fit set's
photos); the ``HELD_OUT`` ones are only measured (``scripts/quality_check.py --series
drawings``). Every drawing is clean as published: a plot of noisy data or a blurred example
image is content, so the quality check lists each one judged damaged with its findings.
"""

from __future__ import annotations

import zlib
from collections.abc import Mapping
from pathlib import Path

import numpy as np
from PIL import Image

from agentiqa_cli.bench.realset import Runner, _run, fetch_package
from agentiqa_cli.imaging.load import over_white

# package -> the folder of its PNGs
DESIGN: dict[str, str] = {
    "python-sklearn-doc": "usr/share/doc/python-sklearn-doc/html/_images",
    "python-pandas-doc": "usr/share/doc/python-pandas-doc/html/_images",
    "octave-doc": "usr/share/doc/octave/octave.html",
    "gimp-help-en": "usr/share/gimp/2.0/help/en/images/dialogs",
}
HELD_OUT: dict[str, str] = {
    "python-scipy-doc": "usr/share/doc/python-scipy-doc/html/_images",
    "python-statsmodels-doc": "usr/share/doc/python-statsmodels-doc/html/_images",
}
PER_PACKAGE = 150
MIN_SIDE = 64  # icons and bullets are not drawings to judge


def _usable(path: Path) -> bool:
    if "thumb" in path.name:  # a gallery's thumbnail repeats its figure, smaller
        return False
    try:
        with Image.open(path) as im:
            return min(im.size) >= MIN_SIDE
    except OSError:
        return False


def drawings(
    packages: Mapping[str, str],
    cache: Path,
    per_package: int = PER_PACKAGE,
    seed: int = 0,
    run: Runner = _run,
) -> list[Path]:
    """Up to ``per_package`` PNGs of each package's folder (at least ``MIN_SIDE`` px on each
    side, no thumbnails), drawn with ``seed``, in file-name order; packages are fetched and
    unpacked into ``cache`` once."""
    out: list[Path] = []
    for pkg, folder in packages.items():
        root, _ = fetch_package(pkg, cache, run)
        paths = sorted(p for p in (root / folder).glob("*.png") if _usable(p))
        rng = np.random.default_rng([seed, zlib.crc32(pkg.encode())])
        out += [paths[i] for i in sorted(rng.permutation(len(paths))[:per_package])]
    return out


def jpeg_copies(paths: list[Path], out_dir: Path, quality: int) -> list[Path]:
    """Each drawing saved as a JPEG at ``quality`` in ``out_dir`` (once), its transparent
    areas over white as the loader shows them: a drawing's own coarse save, which a gate on
    screenshots and plots should fail."""
    out_dir.mkdir(parents=True, exist_ok=True)
    out = []
    for i, path in enumerate(paths):
        copy = out_dir / f"{i:03d}__{path.stem}_q{quality}.jpg"
        if not copy.exists():
            with Image.open(path) as im:
                over_white(im).save(copy, quality=quality)
        out.append(copy)
    return out
