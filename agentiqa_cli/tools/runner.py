"""Run tools on decoded images: each metric is created once per run and reused.

pyiqa metrics are built lazily on first use; a metric that cannot be built (weights
missing and not downloadable, say) is remembered as unavailable, so every later image
gets a one-line error for that tool instead of a retry or a crash.

pyiqa prints download and loading messages on stdout, which belongs to the results table
and ``--json``. Metrics are built in worker threads, so swapping ``sys.stdout`` for the
duration (``contextlib.redirect_stdout``) would also divert what the main thread prints
meanwhile, and two overlapping builds can leave stdout pointing at stderr for good. Instead
``sys.stdout`` is routed per thread while any build runs (``_StdoutRouter``).
"""

from __future__ import annotations

import io
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from functools import cached_property
from typing import Any, TextIO

from agentiqa_cli import heavy
from agentiqa_cli.errors import ConfigError, ToolUnavailableError
from agentiqa_cli.imaging.load import LoadedImage
from agentiqa_cli.records import ToolScore
from agentiqa_cli.tools.builtin import DETECTORS
from agentiqa_cli.tools.cards import CardSet, ToolCard
from agentiqa_cli.tools.extras import installed, missing_extra, require_torch
from agentiqa_cli.tools.native import BUILTIN_FR, NATIVE


def resolve_device(device: str) -> str:
    if device == "auto":
        if not installed("torch"):  # the core install: no torch, nothing but the CPU
            return "cpu"
        try:  # torch is the [pyiqa] extra's
            return "cuda" if heavy.torch.cuda.is_available() else "cpu"
        except ImportError:
            return "cpu"
    if device not in ("cpu", "cuda") and not device.startswith("cuda:"):
        raise ConfigError(f"--device must be auto, cpu or cuda[:N], got {device!r}")
    if device != "cpu":
        require_torch(f"--device {device}")
    return device


class ToolRunner:
    def __init__(self, cards: CardSet, device: str = "auto"):
        self.cards = cards
        self._device = device
        if device != "auto":
            resolve_device(device)  # a bad --device is a usage error up front
        self._metrics: dict[str, Any] = {}
        self._unavailable: dict[str, str] = {}
        self._locks: dict[str, threading.Lock] = {}
        self._guard = threading.Lock()

    @cached_property
    def device(self) -> str:
        """Resolved on first use: "auto" imports torch, which a run of built-in and native
        tools never needs."""
        return resolve_device(self._device)

    # -- metric objects ---------------------------------------------------------------
    def _lock(self, name: str) -> threading.Lock:
        with self._guard:
            return self._locks.setdefault(name, threading.Lock())

    def metric(self, card: ToolCard) -> Any:
        """The callable for ``card``, built on first use and cached for the run."""
        if card.name in self._unavailable:
            raise ToolUnavailableError(self._unavailable[card.name])
        if card.name in self._metrics:
            return self._metrics[card.name]
        with self._lock(card.name):
            if card.name not in self._metrics and card.name not in self._unavailable:
                try:
                    self._metrics[card.name] = self._build(card)
                except ToolUnavailableError as e:
                    self._unavailable[card.name] = str(e)
                    raise
        return self.metric(card)

    def _build(self, card: ToolCard) -> Callable[..., float]:
        if card.backend == "builtin" and not card.detector:  # agentiqa's own FR measures
            own = BUILTIN_FR.get(card.metric)
            if own is None:
                raise ConfigError(
                    f"tool card {card.name}: no builtin full-reference measure {card.metric!r}"
                    f" (known: {', '.join(BUILTIN_FR)})"
                )
            if own.lower_better != card.lower_better:
                raise ConfigError(
                    f"tool card {card.name}: lower_better={card.lower_better} but the measure "
                    f"says {own.lower_better}"
                )
            return own.fn
        if card.backend == "builtin":
            try:
                return DETECTORS[card.metric]
            except KeyError:
                raise ConfigError(
                    f"tool card {card.name}: no builtin detector {card.metric!r}"
                ) from None
        native = NATIVE.get(card.metric)
        if native is not None:  # pyiqa's values without torch (tools/native.py)
            if native.lower_better != card.lower_better:
                raise ConfigError(
                    f"tool card {card.name}: lower_better={card.lower_better} but pyiqa says "
                    f"{native.lower_better}"
                )
            return native.fn
        extra = missing_extra(card)
        if extra is not None:
            raise ToolUnavailableError(
                f"{card.name} needs the {extra} extra, which is not installed: "
                f"pip install 'agentiqa[{extra}]'"
            )
        metric: Callable[..., float] = build_pyiqa_metric(card, self.device)
        return metric

    # -- running ----------------------------------------------------------------------
    def run(self, card: ToolCard, image: LoadedImage, ref: LoadedImage | None = None) -> ToolScore:
        """Raw and normalized score; a failure becomes the score's ``error``, never raises."""
        t0 = time.perf_counter()
        try:
            if card.mode == "FR" and ref is None:
                raise ToolUnavailableError(f"{card.name} is full-reference and needs --ref")
            fn = self.metric(card)
            if card.detector:
                raw = float(fn(image))
            elif card.backend == "builtin" or card.metric in NATIVE:
                assert ref is not None
                raw = float(fn(image, ref))
            else:
                raw = self._run_pyiqa(card, fn, image, ref)
            if raw != raw:  # NaN
                raise ValueError("metric returned NaN")
            return ToolScore(
                tool=card.name,
                raw=raw,
                norm=card.normalize(raw),
                seconds=time.perf_counter() - t0,
                calibrated=card.calibrated,
                fit=self.cards.fitted_elsewhere(card),
            )
        except ToolUnavailableError as e:
            return ToolScore(tool=card.name, error=str(e), seconds=time.perf_counter() - t0)
        except Exception as e:  # one tool failing on one image never ends the image
            msg = (
                f"{card.name}: {type(e).__name__}: {str(e).splitlines()[0][:200] if str(e) else ''}"
            )
            return ToolScore(tool=card.name, error=msg, seconds=time.perf_counter() - t0)

    def _run_pyiqa(
        self, card: ToolCard, metric: Any, image: LoadedImage, ref: LoadedImage | None
    ) -> float:
        x = image.tensor(self.device)
        # pyiqa metrics are not re-entrant (some keep state on the module): one call at a time
        with self._lock(card.name), heavy.torch.inference_mode():
            if card.mode == "FR":
                assert ref is not None
                out = metric(x, ref.tensor(self.device))
            else:
                out = metric(x)
        return float(out.detach().reshape(-1)[0].cpu())

    def run_many(
        self, cards: list[ToolCard], image: LoadedImage, ref: LoadedImage | None = None
    ) -> list[ToolScore]:
        return [self.run(c, image, ref) for c in cards]

    def availability(self, card: ToolCard) -> tuple[bool, str]:
        """Can ``card`` run here now? Builds the metric (which may try a download)."""
        try:
            self.metric(card)
            return True, "ready"
        except ToolUnavailableError as e:
            return False, str(e)


class _Discard(io.StringIO):
    """Where a metric's build prints go under ``-q`` (download progress is not an error)."""

    def write(self, text: str) -> int:
        return len(text)


_DISCARD = _Discard()
_CHATTER = {"on": True}


def quiet_builds(on: bool) -> None:
    """``-q``: what pyiqa prints while a metric is built (download progress) is dropped
    instead of going to stderr."""
    _CHATTER["on"] = not on


class _Routed:
    """What ``sys.stdout`` is while metrics are built: threads that are building one write
    to stderr, every other thread to the stream it replaced."""

    def __init__(self, target: TextIO, builders: dict[int, int]):
        self.target = target
        self._builders = builders

    def _stream(self) -> TextIO:
        if threading.get_ident() not in self._builders:
            return self.target
        return sys.stderr if _CHATTER["on"] else _DISCARD

    def write(self, text: str) -> int:
        return self._stream().write(text)

    def writelines(self, lines: Any) -> None:
        self._stream().writelines(lines)

    def flush(self) -> None:
        self._stream().flush()

    def __getattr__(self, name: str) -> Any:  # isatty, fileno, encoding, buffer ...
        return getattr(self.target, name)


class _StdoutRouter:
    """Installs ``_Routed`` as ``sys.stdout`` while at least one thread builds a metric and
    puts the original back after the last one, unless someone else replaced it meanwhile."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._builders: dict[int, int] = {}  # thread id → nesting depth
        self._routed: _Routed | None = None

    @contextmanager
    def prints_to_stderr(self) -> Iterator[None]:
        me = threading.get_ident()
        with self._lock:
            if self._routed is None:
                self._routed = _Routed(sys.stdout, self._builders)
                sys.stdout = self._routed
            self._builders[me] = self._builders.get(me, 0) + 1
        try:
            yield
        finally:
            with self._lock:
                self._builders[me] -= 1
                if not self._builders[me]:
                    del self._builders[me]
                if not self._builders and self._routed is not None:
                    if sys.stdout is self._routed:
                        sys.stdout = self._routed.target
                    self._routed = None


_STDOUT = _StdoutRouter()


def build_pyiqa_metric(card: ToolCard, device: str) -> Any:
    """Create the pyiqa metric and check the card agrees with pyiqa on direction."""
    # optional extra: pyiqa ([pyiqa])
    try:
        import pyiqa
    except ImportError as e:  # pragma: no cover - _build checks the extra first
        raise ToolUnavailableError(f"{card.name}: pyiqa is not importable ({e})") from None
    try:
        # pyiqa prints download progress on stdout, which belongs to our table/--json
        with _STDOUT.prints_to_stderr():
            metric = pyiqa.create_metric(card.metric, device=device, as_loss=False)
    except Exception as e:
        # pyiqa raises whatever urllib/huggingface_hub raise when weights cannot be fetched
        reason = str(e).splitlines()[0][:200] if str(e) else type(e).__name__
        raise ToolUnavailableError(
            f"{card.name}: cannot create pyiqa metric {card.metric!r}: {reason}"
        ) from None
    metric.eval()
    if bool(metric.lower_better) != card.lower_better:
        raise ConfigError(
            f"tool card {card.name}: lower_better={card.lower_better} but pyiqa says "
            f"{bool(metric.lower_better)}"
        )
    return metric
