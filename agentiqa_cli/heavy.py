"""Heavy libraries, imported when first read: ``heavy.stats.rankdata(...)``.

scipy.stats (~1 s), scipy.optimize, scipy.special and scipy.ndimage (~0.3 s each) and torch
(~2 s, the ``[pyiqa]`` extra) would cost every command's start-up if the modules that use
them now and then imported them at their top: a plain `score` or `assess` needs none of them
(a probe, a fix or an evaluate's interval reads them). Read them as attributes of this
module, never ``from agentiqa_cli.heavy import stats`` (that imports at once);
tests/test_layers.py checks it. A missing extra raises the library's own ImportError, as an
``import`` would.
"""

from __future__ import annotations

import importlib
from types import ModuleType
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import torch as torch
    from scipy import ndimage as ndimage
    from scipy import optimize as optimize
    from scipy import special as special
    from scipy import stats as stats

_LIBRARIES = {
    "ndimage": "scipy.ndimage",
    "optimize": "scipy.optimize",
    "special": "scipy.special",
    "stats": "scipy.stats",
    "torch": "torch",
}


def __getattr__(name: str) -> ModuleType:
    """Import the library ``name`` on its first read and keep it as this module's attribute."""
    if name not in _LIBRARIES:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    # start-up time: the one place the numeric libraries are imported, when first read
    module = importlib.import_module(_LIBRARIES[name])
    globals()[name] = module
    return module
