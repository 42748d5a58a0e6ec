"""Which learned tools can run here, without building them; and no download waits offline.

Building a learned metric to find out whether its weights are present takes 1-8 s (or a
failed download), too slow for every ``assess``. Each card that needs weights lists the
files its backend loads (``weight_files``, as pyiqa 0.1.16 fetches them; see
scripts/trace_weight_files.py), so ``weights_cached`` answers from the file system in
microseconds, without torch or a network, and ``offered`` turns that into the agent's
candidate tools: every tool that can run here, unless ``--learned-tools`` forces the
learned ones (they may download) or ``--no-learned-tools`` forbids them.

pyiqa fetches missing weights from huggingface.co, partly through huggingface_hub, which
retries each file with back-off (about 25 s per file); without a network, checking every
tool took minutes. ``hub_offline`` answers in at most ``timeout`` seconds, and
``no_downloads`` makes a missing file an immediate error while it is active.
"""

from __future__ import annotations

import json
import os
import socket
import sys
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

from agentiqa_cli.records import LearnedTools
from agentiqa_cli.tools.cards import ToolCard
from agentiqa_cli.tools.extras import missing_extra

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


# -- where the weights are cached ----------------------------------------------------------


def torch_hub_dir(environ: Mapping[str, str] | None = None) -> Path:
    """``torch.hub.get_dir()`` as torch computes it: $TORCH_HOME/hub, where TORCH_HOME
    defaults to $XDG_CACHE_HOME/torch and that to ~/.cache/torch."""
    env = os.environ if environ is None else environ
    xdg = env.get("XDG_CACHE_HOME") or os.path.join("~", ".cache")
    home = env.get("TORCH_HOME") or os.path.join(xdg, "torch")
    return Path(os.path.expanduser(home)) / "hub"


def hf_hub_cache(environ: Mapping[str, str] | None = None) -> Path:
    """huggingface_hub's cache folder: $HF_HUB_CACHE, else the legacy
    $HUGGINGFACE_HUB_CACHE, else $HF_HOME/hub (HF_HOME: $XDG_CACHE_HOME/huggingface)."""
    env = os.environ if environ is None else environ
    xdg = env.get("XDG_CACHE_HOME") or os.path.join("~", ".cache")
    hf_home = env.get("HF_HOME") or os.path.join(xdg, "huggingface")
    cache = env.get("HF_HUB_CACHE") or env.get("HUGGINGFACE_HUB_CACHE")
    return Path(os.path.expanduser(cache or os.path.join(hf_home, "hub")))


def _hf_present(cache: Path, entry: str) -> bool:
    """``hf:ORG/REPO/FILE``: FILE (a glob) in the snapshot ``refs/main`` names (any snapshot
    if there is no ref, as a copied cache may have none). A ``*.index.json`` also needs
    every shard its weight map names."""
    org, repo, pattern = entry.removeprefix("hf:").split("/", 2)
    repo_dir = cache / f"models--{org}--{repo}"
    try:
        snapshots = [repo_dir / "snapshots" / (repo_dir / "refs" / "main").read_text().strip()]
    except OSError:
        snapshots = sorted((repo_dir / "snapshots").glob("*"))
    for snap in snapshots:
        for path in sorted(snap.glob(pattern)):
            # blobs are symlinks: a dangling one (a download cut short) is not a file
            if path.is_file() and (not path.name.endswith(".index.json") or _shards_present(path)):
                return True
    return False


def _shards_present(index: Path) -> bool:
    try:
        shards = set(json.loads(index.read_text(encoding="utf-8"))["weight_map"].values())
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return False
    return bool(shards) and all((index.parent / str(s)).is_file() for s in shards)


def missing_weights(card: ToolCard, environ: Mapping[str, str] | None = None) -> list[str]:
    """The card's ``weight_files`` not found in the caches (checked in that order)."""
    hub, hf = torch_hub_dir(environ), hf_hub_cache(environ)
    return [
        f
        for f in card.weight_files
        if not (_hf_present(hf, f) if f.startswith("hf:") else (hub / f).is_file())
    ]


def weights_cached(card: ToolCard, environ: Mapping[str, str] | None = None) -> bool:
    """True when the tool needs no weights, or every file it loads is in the caches (as
    TORCH_HOME, XDG_CACHE_HOME, HF_HOME and HF_HUB_CACHE place them). A weights card that
    lists no files cannot be vouched for: False. No network, no torch import."""
    if not card.weights:
        return True
    return bool(card.weight_files) and not missing_weights(card, environ)


# -- what the agent is offered -------------------------------------------------------------


def offered(card: ToolCard, learned_tools: LearnedTools) -> bool:
    """May the agent select ``card``? Weight-free tools always; learned ones always with
    ``on`` (they may download), never with ``off``, and with ``auto`` exactly when their
    weights are cached. Never a tool whose extra is not installed (tools/extras.py)."""
    if missing_extra(card):
        return False
    if not card.weights or learned_tools == "on":
        return True
    return learned_tools == "auto" and weights_cached(card)


def candidates(
    cards: Iterable[ToolCard], full_reference: bool, learned_tools: LearnedTools
) -> list[ToolCard]:
    """The tools the agent's selector chooses from: those ``offered``, NR ones only
    without a reference."""
    return [c for c in cards if (full_reference or c.mode == "NR") and offered(c, learned_tools)]


def offered_learned(cards: Iterable[ToolCard], learned_tools: LearnedTools) -> list[str]:
    """The learned tools (weights cards) the agent is offered, by name: for the run's
    trace header."""
    return [c.name for c in cards if c.weights and offered(c, learned_tools)]
