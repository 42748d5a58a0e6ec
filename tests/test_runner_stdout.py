"""pyiqa's prints while metrics are built go to stderr without taking stdout from the
main thread (its table and --json), even when two worker threads build at once."""

from __future__ import annotations

import sys
import threading
import types
from typing import Any

import pytest

from agentiqa_cli.resources import default_cards_dir
from agentiqa_cli.tools.cards import load_cards
from agentiqa_cli.tools.runner import ToolRunner


class _Metric:
    lower_better = False

    def eval(self) -> None:
        pass


def _fake_pyiqa(gates: dict[str, threading.Event], inside: threading.Barrier) -> Any:
    def create_metric(name: str, device: str, as_loss: bool) -> _Metric:
        print(f"pyiqa: loading {name}")
        inside.wait(timeout=10)  # both builds are under way at once
        assert gates[name].wait(timeout=10)
        print(f"pyiqa: loaded {name}")
        return _Metric()

    return types.SimpleNamespace(create_metric=create_metric)


def test_concurrent_builds_leave_the_main_threads_stdout_alone(
    capfd: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    gates = {"fsim": threading.Event(), "vif": threading.Event()}  # built by pyiqa
    inside = threading.Barrier(3)
    monkeypatch.setitem(sys.modules, "pyiqa", _fake_pyiqa(gates, inside))
    cards = load_cards(default_cards_dir())
    runner = ToolRunner(cards, device="cpu")
    stdout_before = sys.stdout
    threads = {
        name: threading.Thread(target=runner.metric, args=(cards.get(name),)) for name in gates
    }
    for t in threads.values():
        t.start()
    inside.wait(timeout=10)
    print("main 1: while both metrics are being built")
    # the first build started ends first: with a process-wide swap of sys.stdout, the second
    # build would then put back the stream it found, which was stderr
    gates["fsim"].set()
    threads["fsim"].join(timeout=10)
    print("main 2: after the first build")
    gates["vif"].set()
    threads["vif"].join(timeout=10)
    print("main 3: after both builds")
    out, err = capfd.readouterr()
    assert sys.stdout is stdout_before
    assert out.splitlines() == [
        "main 1: while both metrics are being built",
        "main 2: after the first build",
        "main 3: after both builds",
    ]
    # the two builders' lines may interleave on stderr, as any two threads' prints do
    for name in gates:
        assert f"pyiqa: loading {name}" in err and f"pyiqa: loaded {name}" in err
    assert runner.availability(cards.get("vif")) == (True, "ready")
