"""Disk size of the core install and of what each extra adds, read from an installed venv.

    VENV/bin/python scripts/extra_sizes.py

Reads this checkout's pyproject.toml, follows each requirement (and theirs, with the extras
they name) through the distributions installed in the running interpreter's environment,
and adds up the files each distribution's RECORD lists (bytecode pip compiled included).
An extra's figure is what it adds to the core. Needs every requirement installed (the
project venv of `make setup` has all but vllm, which `make vllm-env` keeps in its own venv);
a missing one is listed, not guessed. The licence of each extra's own packages is printed
from their metadata.
"""

from __future__ import annotations

import importlib.metadata as md
import re
from pathlib import Path

import tomllib

try:
    from packaging.requirements import Requirement
except ImportError:  # pragma: no cover - pip vendors it
    from pip._vendor.packaging.requirements import Requirement

ROOT = Path(__file__).resolve().parent.parent


def norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def closure(reqs: list[str], missing: set[str]) -> set[str]:
    """Every distribution ``reqs`` pull in here (normalized names)."""
    seen: set[str] = set()
    todo = [(Requirement(r), frozenset[str]()) for r in reqs]
    while todo:
        req, _ = todo.pop()
        name = norm(req.name)
        if req.marker is not None and not req.marker.evaluate({"extra": ""}):
            continue
        try:
            dist = md.distribution(req.name)
        except md.PackageNotFoundError:
            missing.add(name)
            continue
        wanted = {norm(e) for e in req.extras}
        if name in seen and not wanted:
            continue
        seen.add(name)
        for sub in dist.requires or []:
            r = Requirement(sub)
            if r.marker is None:
                todo.append((r, frozenset()))
            elif r.marker.evaluate({"extra": ""}) or any(
                r.marker.evaluate({"extra": e}) for e in wanted
            ):
                todo.append((Requirement(str(r).split(";")[0]), frozenset()))
    return seen


def size_mb(names: set[str]) -> float:
    total = 0
    for name in names:
        for f in md.distribution(name).files or []:
            p = Path(f.locate())
            if p.is_file() and not p.is_symlink():
                total += p.stat().st_size
    return total / 1e6


def licence(name: str) -> str:
    m = md.distribution(name).metadata
    text = m.get("License-Expression") or m.get("License") or ""
    if not text or len(text) > 60:
        classifiers = [c.split("::")[-1].strip() for c in m.get_all("Classifier") or []
                       if c.startswith("License")]  # fmt: skip
        text = ", ".join(classifiers) or (text[:60] + "..." if text else "?")
    return text


def main() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    missing: set[str] = set()
    core = closure(project["dependencies"], missing)
    print(f"core: {size_mb(core):.0f} MB, {len(core)} distributions")
    extras: dict[str, list[str]] = project["optional-dependencies"]
    for extra, reqs in extras.items():
        own = [r for r in reqs if norm(Requirement(r).name) != "agentiqa"]
        if not own:
            continue
        gone: set[str] = set()
        added = closure(own, gone) - core
        top = {norm(Requirement(r).name) for r in own} & added
        lic = "; ".join(f"{n} {licence(n)}" for n in sorted(top))
        note = f" (not installed here: {', '.join(sorted(gone))})" if gone else ""
        print(f"[{extra}]: +{size_mb(added):.0f} MB, {len(added)} distributions{note}; {lic}")
        biggest = sorted(added, key=lambda n: -size_mb({n}))[:5]
        print("    largest: " + ", ".join(f"{n} {size_mb({n}):.0f}" for n in biggest))
    if missing:
        print(f"core requirements not installed here: {', '.join(sorted(missing))}")


if __name__ == "__main__":
    main()
