"""Put NIQE's pristine-model parameters where pyiqa looks for them, without Hugging Face.

pyiqa's ``niqe`` metric loads ``<torch hub dir>/pyiqa/niqe_modelparameters.mat`` (MATLAB
variables ``mu_prisparam`` 1×36 and ``cov_prisparam`` 36×36, the official NIQE release's
``modelparameters.mat``) and downloads it from Hugging Face when it is missing. The same
numbers ship in the Apache-2.0 ``basicsr`` source package on PyPI as
``basicsr/metrics/niqe_pris_params.npz`` (keys ``mu_pris_param``, ``cov_pris_param``);
this script fetches that sdist with pip, converts the arrays, and writes the .mat file.

Idempotent: an existing file that already holds these parameters is left alone.
Standard library + numpy + scipy only (pip must be importable by this interpreter).

    python scripts/prefill_niqe.py            # into $TORCH_HOME/hub/pyiqa (as pyiqa resolves it)
    python scripts/prefill_niqe.py --dest DIR # somewhere else (then point TORCH_HOME there)
"""

from __future__ import annotations

import argparse
import hashlib
import io
import os
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

import numpy as np
import scipy.io

BASICSR = "basicsr==1.4.2"
SDIST = "basicsr-1.4.2.tar.gz"
# sha256 of the PyPI sdist, so a tampered or different file is refused
SDIST_SHA256 = "b89b595a87ef964cda9913b4d99380ddb6554c965577c0c10cb7b78e31301e87"
MEMBER = "basicsr-1.4.2/basicsr/metrics/niqe_pris_params.npz"
TARGET_NAME = "niqe_modelparameters.mat"


def pyiqa_cache_dir() -> Path:
    """``torch.hub.get_dir()/pyiqa`` computed the way torch does, without importing torch."""
    xdg = os.getenv("XDG_CACHE_HOME", os.path.join("~", ".cache"))
    torch_home = os.path.expanduser(os.getenv("TORCH_HOME", os.path.join(xdg, "torch")))
    return Path(torch_home) / "hub" / "pyiqa"


def download_sdist(dest: Path) -> Path:
    """``pip download`` the basicsr sdist into ``dest``.

    Without build isolation pip prepares the metadata with this environment's setuptools;
    with isolation it would install basicsr's setup_requires (torch, numpy from source)
    just to read metadata, which is slow or fails. Isolation is the fallback.
    """
    base = [sys.executable, "-m", "pip", "download", BASICSR, "--no-deps"]
    base += ["--no-binary", "basicsr", "-d", str(dest), "--quiet"]
    for extra in (["--no-build-isolation"], []):
        done = subprocess.run(base + extra, capture_output=True, text=True)
        if done.returncode == 0 and (dest / SDIST).exists():
            return dest / SDIST
    raise SystemExit(f"pip download {BASICSR} failed:\n{done.stderr.strip()[-2000:]}")


def read_params(sdist: Path) -> tuple[np.ndarray, np.ndarray]:
    digest = hashlib.sha256(sdist.read_bytes()).hexdigest()
    if digest != SDIST_SHA256:
        raise SystemExit(f"{sdist.name}: sha256 {digest} is not the expected {SDIST_SHA256}")
    with tarfile.open(sdist, "r:gz") as tar:
        member = tar.extractfile(MEMBER)
        if member is None:
            raise SystemExit(f"{sdist.name} has no {MEMBER}")
        npz = np.load(io.BytesIO(member.read()))
        mu = np.asarray(npz["mu_pris_param"], dtype=np.float64).reshape(1, 36)
        cov = np.asarray(npz["cov_pris_param"], dtype=np.float64).reshape(36, 36)
    return mu, cov


def already_there(target: Path, mu: np.ndarray, cov: np.ndarray) -> bool:
    if not target.exists():
        return False
    try:
        mat = scipy.io.loadmat(target)
        return bool(
            np.allclose(np.ravel(mat["mu_prisparam"]), mu.ravel())
            and np.allclose(mat["cov_prisparam"], cov)
        )
    except (OSError, KeyError, ValueError):
        return False


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dest", type=Path, help="folder to write into (default: pyiqa's cache)")
    ap.add_argument("--sdist", type=Path, help=f"use this local {SDIST} instead of pip download")
    args = ap.parse_args(argv)

    dest = args.dest or pyiqa_cache_dir()
    target = dest / TARGET_NAME
    with tempfile.TemporaryDirectory() as tmp:
        sdist = args.sdist or download_sdist(Path(tmp))
        mu, cov = read_params(sdist)
    if already_there(target, mu, cov):
        print(f"{target}: already present")
        return 0
    dest.mkdir(parents=True, exist_ok=True)
    # write next to the target and rename, so pyiqa never sees a half-written file
    partial = target.with_suffix(".mat.partial")
    scipy.io.savemat(partial, {"mu_prisparam": mu, "cov_prisparam": cov})
    os.replace(partial, target)
    print(f"{target}: written from {BASICSR} niqe_pris_params.npz")
    return 0


if __name__ == "__main__":
    sys.exit(main())
