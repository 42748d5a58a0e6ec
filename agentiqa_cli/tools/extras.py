"""Which tools need an optional part of the install, and whether it is here.

The core install (``pip install agentiqa``) runs the built-in detectors and the numpy
full-reference measures (tools/native.py). Every other pyiqa card builds a pyiqa metric,
which needs the ``pyiqa`` extra (torch, torchvision and pyiqa itself, whose licence is
PolyForm-Noncommercial-1.0.0). Presence is checked with ``importlib.util.find_spec``: no
import, so asking costs nothing and a core run never loads torch.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Iterable
from functools import cache

from agentiqa_cli.errors import MissingExtraError
from agentiqa_cli.tools.cards import ToolCard
from agentiqa_cli.tools.native import NATIVE

PYIQA_EXTRA = "pyiqa"
PYIQA_MODULES = ("torch", "torchvision", "pyiqa")


@cache
def installed(*modules: str) -> bool:
    """Every one of ``modules`` can be imported here (found, not imported)."""
    try:
        return all(importlib.util.find_spec(m) is not None for m in modules)
    except (ImportError, ValueError):  # a finder refused it, or a broken half-import
        return False


def pyiqa_installed() -> bool:
    return installed(*PYIQA_MODULES)


def card_extra(card: ToolCard) -> str | None:
    """The extra ``card`` needs, or None when the core runs it."""
    if card.backend == "pyiqa" and card.metric not in NATIVE:
        return PYIQA_EXTRA
    return None


def missing_extra(card: ToolCard) -> str | None:
    """The extra ``card`` needs and this install lacks, or None."""
    extra = card_extra(card)
    return extra if extra is not None and not pyiqa_installed() else None


def require_extras(cards: Iterable[ToolCard]) -> None:
    """Raise MissingExtraError (exit 2) naming every tool of ``cards`` this install cannot run."""
    lacking = [c.name for c in cards if missing_extra(c)]
    if lacking:
        raise MissingExtraError(
            f"tool{'s' if len(lacking) > 1 else ''} {', '.join(lacking)}",
            PYIQA_EXTRA,
            f" (the built-in detectors and {', '.join(sorted(NATIVE))} run without it)",
        )


def require_torch(what: str) -> None:
    """Raise MissingExtraError when torch is not installed (``--device cuda``)."""
    if not installed("torch"):
        raise MissingExtraError(what, PYIQA_EXTRA)


def require_matplotlib(what: str) -> None:
    """Raise MissingExtraError when matplotlib (the ``plot`` extra) is not installed."""
    if not installed("matplotlib"):
        raise MissingExtraError(what, "plot")
