"""Is the model hub reachable? Offline, building a metric must not wait on download retries.

pyiqa fetches missing weights from huggingface.co, partly through huggingface_hub, which
retries each file with back-off (about 25 s per file); without a network, checking every
tool took minutes. ``hub_offline`` answers in at most ``timeout`` seconds, and
``no_downloads`` makes a missing file an immediate error while it is active.
"""

from __future__ import annotations

import os
import socket
import sys
from collections.abc import Iterator
from contextlib import contextmanager

HUB = ("huggingface.co", 443)
_OFFLINE_VARS = ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE")


def _true(value: str | None) -> bool:
    return (value or "").strip().lower() in ("1", "true", "yes", "on")


def hub_offline(timeout: float = 1.5) -> bool:
    """True when HF_HUB_OFFLINE/TRANSFORMERS_OFFLINE is set or huggingface.co cannot be
    reached within ``timeout`` seconds."""
    if any(_true(os.environ.get(v)) for v in _OFFLINE_VARS):
        return True
    try:
        with socket.create_connection(HUB, timeout=timeout):
            return False
    except OSError:
        return True


@contextmanager
def no_downloads(timeout: float = 5.0) -> Iterator[None]:
    """Weights that are not in the local caches fail at once instead of being fetched.

    huggingface_hub is put in offline mode (its flag if already imported, the environment
    variable for a later import), and plain URL downloads get a short socket timeout.
    Everything is restored on exit.
    """
    saved_env = os.environ.get("HF_HUB_OFFLINE")
    saved_timeout = socket.getdefaulttimeout()
    os.environ["HF_HUB_OFFLINE"] = "1"
    _set_hub_flag(True)
    socket.setdefaulttimeout(timeout)
    try:
        yield
    finally:
        socket.setdefaulttimeout(saved_timeout)
        if saved_env is None:
            os.environ.pop("HF_HUB_OFFLINE", None)
        else:
            os.environ["HF_HUB_OFFLINE"] = saved_env
        # what huggingface_hub itself would read from the environment now
        _set_hub_flag(any(_true(os.environ.get(v)) for v in _OFFLINE_VARS))


def _set_hub_flag(offline: bool) -> None:
    hub = sys.modules.get("huggingface_hub.constants")
    if hub is not None:
        setattr(hub, "HF_HUB_OFFLINE", offline)  # noqa: B010 - a module found at run time
