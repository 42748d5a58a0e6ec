"""Check the light install: `pip install agentiqa` without extras, in a fresh venv.

    python scripts/light_install.py [--keep DIR]

Creates a virtualenv in a temporary folder (or DIR, kept afterwards), installs this checkout
into it without extras (dependencies come from the package index), then checks that:

- torch, torchvision, pyiqa and scikit-image are not installed, and no installed distribution
  carries a non-commercial licence in its metadata;
- `agentiqa score` and `agentiqa assess` (rules backend) run on a generated image, exit 0, and
  `agentiqa fix` denoises a noisy copy of it (exit 0, the fixed image written);
- `agentiqa score --tools niqe` exits 2 naming `agentiqa[pyiqa]`, with no traceback;
- the install added less than ``LIMIT_MB`` to the empty venv's site-packages (file sizes,
  the bytecode pip compiled included; 1 MB = 10^6 bytes).

Prints the install time and the venv's size (site-packages, what the install added to an
empty venv's, and the whole venv) in MB; exits 1 on the first failed check.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FORBIDDEN = ("torch", "torchvision", "pyiqa", "scikit-image")  # the last: the samples extra
LIMIT_MB = 300

# run inside the venv: every installed distribution with its licence fields
LICENCES = r"""
import importlib.metadata as md, json
out = {}
for d in md.distributions():
    m = d.metadata
    text = m.get("License") or ""  # some ship a whole licence text here: names only
    fields = [m.get("License-Expression") or "", text if len(text) < 200 else ""]
    fields += [c for c in m.get_all("Classifier") or [] if c.startswith("License")]
    out[m["Name"]] = " | ".join(f for f in fields if f)
print(json.dumps(out))
"""

IMAGE = r"""
import sys
import numpy as np
from PIL import Image
rng = np.random.default_rng(0)
y, x = np.mgrid[0:256, 0:320]
img = np.stack([x / 320 * 255, y / 256 * 255, (x + y) / 576 * 255], -1)
img = img + rng.normal(0, 4, img.shape)
Image.fromarray(np.clip(img, 0, 255).astype(np.uint8)).save(sys.argv[1])
noisy = img + rng.normal(0, 20, img.shape)
Image.fromarray(np.clip(noisy, 0, 255).astype(np.uint8)).save(sys.argv[2])
"""


def du_mb(path: Path, only: str = "") -> float:
    """Bytes of the files under ``path`` (those under a folder named ``only``, if given)."""
    total = 0
    for dirpath, _, files in os.walk(path):
        if only and only not in Path(dirpath).parts:
            continue
        for f in files:
            p = Path(dirpath, f)
            if not p.is_symlink():
                total += p.stat().st_size
    return total / 1e6


def run(cmd: list[str], cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=1800)


def check(ok: bool, what: str, proc: subprocess.CompletedProcess[str] | None = None) -> None:
    if ok:
        print(f"ok    {what}", flush=True)
        return
    print(f"FAIL  {what}", flush=True)
    if proc is not None:
        print(f"      exit {proc.returncode}\n--- stdout\n{proc.stdout[-3000:]}\n--- stderr\n"
              f"{proc.stderr[-3000:]}")  # fmt: skip
    sys.exit(1)


def main(keep: Path | None) -> None:
    work = keep or Path(tempfile.mkdtemp(prefix="agentiqa-light-"))
    work.mkdir(parents=True, exist_ok=True)
    venv = work / "venv"
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env["PATH"] = f"{venv / 'bin'}{os.pathsep}{env.get('PATH', '')}"
    try:
        t0 = time.perf_counter()
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        site = next((venv / "lib").glob("python*/site-packages"))
        empty = du_mb(site)  # pip (and setuptools, before Python 3.12) of the bare venv
        py = str(venv / "bin" / "python")
        pip = [py, "-m", "pip", "--disable-pip-version-check", "-q"]
        proc = run([*pip, "install", str(ROOT)], work, env)
        seconds = time.perf_counter() - t0
        check(proc.returncode == 0, f"pip install {ROOT} (no extras): {seconds:.0f} s", proc)

        proc = run([py, "-c", LICENCES], work, env)
        check(proc.returncode == 0, "read the installed distributions' metadata", proc)
        licences: dict[str, str] = json.loads(proc.stdout)
        names = {n.lower() for n in licences}
        present = [m for m in FORBIDDEN if m in names]
        check(not present, f"none of {', '.join(FORBIDDEN)} installed (found: {present or '-'})")
        noncommercial = {
            n: v for n, v in licences.items() if re.search(r"non-?commercial|\bCC-BY-NC", v, re.I)
        }
        check(not noncommercial, f"no non-commercial licence installed ({noncommercial or '-'})")

        image, noisy = work / "gradient.png", work / "noisy.png"
        made = run([py, "-c", IMAGE, str(image), str(noisy)], work, env)
        check(made.returncode == 0, "generate the images", made)
        agentiqa = str(venv / "bin" / "agentiqa")
        for command in ("score", "assess"):
            out = work / f"{command}.csv"
            proc = run([agentiqa, command, str(image), "-o", str(out), "-q"], work, env)
            check(proc.returncode == 0 and out.is_file(), f"agentiqa {command}: exit 0", proc)
        fixed = work / "fixed"
        proc = run([agentiqa, "fix", str(noisy), "--out-dir", str(fixed), "-q"], work, env)
        table = (fixed / "fixes.csv").read_text() if (fixed / "fixes.csv").is_file() else ""
        check(
            proc.returncode == 0 and ",denoise," in table and any(fixed.glob("noisy-*")),
            "agentiqa fix: denoised, exit 0",
            proc,
        )
        niqe = [agentiqa, "score", str(image), "--tools", "niqe", "-o", str(work / "niqe.csv")]
        proc = run(niqe, work, env)
        named = "agentiqa[pyiqa]" in proc.stderr and "Traceback" not in proc.stderr
        check(
            proc.returncode == 2 and named,
            "score --tools niqe: exit 2 naming agentiqa[pyiqa]",
            proc,
        )
        print(f"      {proc.stderr.strip()}")

        total = du_mb(site)
        check(total - empty < LIMIT_MB, f"the install added {total - empty:.0f} MB (< {LIMIT_MB})")
        print(
            f"light install: {seconds:.0f} s; site-packages {total:.0f} MB ({total - empty:.0f} MB "
            f"more than the empty venv's; {du_mb(site, '__pycache__'):.0f} MB of it bytecode pip "
            f"compiled), venv {du_mb(venv):.0f} MB, {len(licences)} distributions"
        )
    finally:
        if keep is None:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--keep", type=Path, help="build the venv here and keep it")
    main(ap.parse_args().keep)
