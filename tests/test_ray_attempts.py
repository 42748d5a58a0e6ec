"""The driver's count of worker deaths per image (``ray_engine.Attempts``), without Ray: a
batch with two images that each kill every worker they run on, retried as Ray Data does."""

from __future__ import annotations

from agentiqa_cli.ray_engine import MAX_DEATHS, Attempts


def _attempt(ledger: Attempts, batch: list[int], poison: set[int]) -> list[int]:
    """One attempt of ``batch`` on a fresh worker: the images given up on, in order; stops
    where a poison image kills the worker (no ``finish`` for it)."""
    given_up: list[int] = []
    if not ledger.begin(batch):  # a first attempt runs the batch at once: a poison image kills it
        return given_up
    for i in batch:
        if ledger.start(i) >= MAX_DEATHS:
            given_up.append(i)
            continue
        if i in poison:
            return given_up  # the worker died on i
        ledger.finish(i)
    return given_up


def test_each_poison_image_is_blamed_only_for_the_workers_it_killed() -> None:
    ledger = Attempts()
    batch, poison = [0, 1, 2], {0, 1}
    given: list[int] = []
    for _ in range(10):  # Ray retries the batch without limit
        given = _attempt(ledger, batch, poison)
        if set(given) == poison:
            break
    assert given == [0, 1]
    # each killed exactly MAX_DEATHS workers while it ran alone; later retries do not add to it
    assert ledger.start(0) == MAX_DEATHS
    assert ledger.start(1) == MAX_DEATHS
    assert ledger.started[0] - ledger.finished.get(0, 0) == MAX_DEATHS
    # the healthy image ran (and finished) on every retry that reached it
    assert ledger.started[2] == ledger.finished[2] >= 1
