"""The agent as a benchmark method: ``assess`` over items, and answers to MCQs.

Both run the same ``run_batch`` machinery as the CLI (bounded concurrency, one decode per
image, error rows), just without a results CSV.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from typing import Any

from agentiqa_cli.batch import Pair, error_result, job_key, run_batch
from agentiqa_cli.bench.mcq import MCQuestion
from agentiqa_cli.bench.methods import Item, Predict
from agentiqa_cli.errors import AgentIQAError
from agentiqa_cli.imaging.discover import Job
from agentiqa_cli.io.trace import TraceWriter
from agentiqa_cli.records import Result

OnItem = Callable[[], None]


def _job(item: Item) -> Job:
    return Job(image=item.image, root=item.image.parent, reference=item.reference)


async def assess_items(
    session: Any, trace: TraceWriter, items: Sequence[Item], on_item: OnItem | None = None
) -> list[Result]:
    """One ``Result`` per item, in item order (error results for failures)."""
    jobs = [_job(i) for i in items]
    agent = session.agent(trace)
    try:
        summary = await run_batch(
            jobs,
            agent,
            fingerprint=session.fingerprint("assess"),
            decoder=session.decoder,
            writer=None,
            trace=trace,
            concurrency=session.settings.concurrency,
            on_result=(lambda _r: on_item()) if on_item else None,
        )
    finally:
        await session.vlm.aclose()
    by_job = {id(j): r for j, r in zip(summary.jobs, summary.results, strict=True)}
    return [by_job[id(j)] for j in jobs]


def agent_method(
    session: Any, trace: TraceWriter, store: dict[str, list[Result]], on_item: OnItem | None = None
) -> Predict:
    """``assess`` as a method; full results (findings too) are kept in ``store['assess']``."""

    def predict(items: list[Item]) -> list[float | None]:
        results = asyncio.run(assess_items(session, trace, items, on_item))
        store["assess"] = results
        return [r.score if r.status == "ok" else None for r in results]

    return predict


async def answer_questions(
    session: Any, trace: TraceWriter, questions: Sequence[MCQuestion], on_item: OnItem | None = None
) -> dict[str, tuple[str | None, dict[str, Any]]]:
    """Each question's letter (None when unanswered) and what it rests on, keyed by id."""
    agents: dict[str, Any] = {}
    sem = asyncio.Semaphore(session.settings.concurrency)
    out: dict[str, tuple[str | None, dict[str, Any]]] = {}

    fingerprint = session.fingerprint("assess")

    async def one(q: MCQuestion) -> None:
        job = _job(q.item())
        key = await asyncio.to_thread(job_key, job, fingerprint + q.id)
        async with sem:
            try:
                image, ref = await asyncio.to_thread(session.decoder.decode, job)
                agent = agents.get(q.question)
                if agent is None:
                    agent = agents[q.question] = session.agent(trace, query=q.question)
                letter, result = await agent.answer(Pair(job, image, ref, key), q.options)
                out[q.id] = (
                    letter,
                    {
                        "answer": result.answer,
                        "distortions": result.distortions_cell(),
                        "vlm_calls": result.usage.calls,
                    },
                )
            except AgentIQAError as e:
                r = error_result(job, key, str(e))
                out[q.id] = (None, {"error": r.error})
        if on_item:
            on_item()

    try:
        await asyncio.gather(*(one(q) for q in questions))
    finally:
        await session.vlm.aclose()
    return out
