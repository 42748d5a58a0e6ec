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

import io
import sys
from pathlib import Path

import numpy as np
import scipy.io
from pyiqa_prefill import fetch_member, parse_target, replace_file

BASICSR = "basicsr==1.4.2"
SDIST = "basicsr-1.4.2.tar.gz"
# sha256 of the PyPI sdist, so a tampered or different file is refused
SDIST_SHA256 = "b89b595a87ef964cda9913b4d99380ddb6554c965577c0c10cb7b78e31301e87"
MEMBER = "basicsr-1.4.2/basicsr/metrics/niqe_pris_params.npz"
TARGET_NAME = "niqe_modelparameters.mat"


def read_params(npz_bytes: bytes) -> tuple[np.ndarray, np.ndarray]:
    npz = np.load(io.BytesIO(npz_bytes))
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
    target, local = parse_target(argv, __doc__.splitlines()[0], SDIST, TARGET_NAME)
    mu, cov = read_params(fetch_member(local, BASICSR, SDIST, SDIST_SHA256, MEMBER))
    if already_there(target, mu, cov):
        print(f"{target}: already present")
        return 0
    replace_file(target, lambda p: scipy.io.savemat(p, {"mu_prisparam": mu, "cov_prisparam": cov}))
    print(f"{target}: written from {BASICSR} niqe_pris_params.npz")
    return 0


if __name__ == "__main__":
    sys.exit(main())
