"""`--engine ray`: the images of `score`/`assess` flow through Ray Data, rows come back here.

The driver keeps everything a run owns: the results CSV, the trace, resume, the gate and
the exit code. Workers are a pool of ``RayWorker`` actors (``map_batches`` over a stateful
class): each builds its ``Runtime`` once — cards, tool runner, prompts, the VLM connection —
and runs the same ``run_batch`` as the local engine on the jobs it is given, returning each
image's ``Result`` and trace events as JSON. The driver streams them into the CSV and the
trace as they arrive, so both have the same rows and keys as a local run.

A worker that dies is restarted by Ray and its batch retried (Ray Data's defaults for actor
pools retry without limit). So that an image that kills every worker it is given (a crash in
a decoder or a tool, memory it cannot have) cannot stall the run, the driver counts the
attempts per image (``Attempts``, a small actor every worker asks before it starts an
image): once ``MAX_DEATHS`` workers died on an image, it is answered with an error row. If the
dataset still fails (the cluster went away), every image that has no row yet gets an error
row marked transient, which ``--resume`` retries. No row is lost either way.

Ray is an optional extra (``pip install agentiqa[ray]``); the local engine never imports it.
Every node needs agentiqa installed (or ``ray_address`` pointing at a cluster whose runtime
environment provides it) and must see the image files at the same paths.
"""

from __future__ import annotations

import asyncio
import pickle
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from agentiqa_cli.batch import BatchSummary, content_hashes, error_result, job_key, run_batch
from agentiqa_cli.config import Settings
from agentiqa_cli.errors import ConfigError
from agentiqa_cli.imaging.discover import Job
from agentiqa_cli.imaging.load import max_file_bytes
from agentiqa_cli.io.results import DoneRows
from agentiqa_cli.io.trace import TraceWriter
from agentiqa_cli.records import Result, TraceEvent

if TYPE_CHECKING:
    from agentiqa_cli.io.results import ResultsWriter
    from agentiqa_cli.runtime import Runtime


MAX_DEATHS = 2  # an image whose workers died this many times gets an error row instead


class Attempts:
    """How often each image (by its index in the run) was handed to a worker: a Ray actor
    of the driver's, asked by a worker before it starts the images of a batch."""

    def __init__(self) -> None:
        self.counts: dict[int, int] = {}

    def begin(self, idx: list[int]) -> list[int]:
        """Count one more attempt of each image; each image's attempts so far, this one
        included."""
        for i in idx:
            self.counts[i] = self.counts.get(i, 0) + 1
        return [self.counts[i] for i in idx]


@dataclass(frozen=True)
class WorkSpec:
    """What a worker needs to rebuild the driver's process: its settings and the command's
    builder (``cli/run.py``: the scorer of the chosen tools, the agent)."""

    settings: Settings
    build: Callable[[Runtime], Awaitable[Any]]
    fingerprint: str
    done: DoneRows  # rows already in the CSV (--resume)


class _Collect(TraceWriter):
    """A trace that keeps its events, to be sent back with the rows."""

    def __init__(self) -> None:
        super().__init__(None)
        self.events: list[TraceEvent] = []

    def emit(self, event: TraceEvent) -> None:
        with self._lock:
            self.events.append(event)


class RayWorker:
    """One Ray actor: a Runtime built once, then batches of jobs through ``run_batch``."""

    def __init__(self, spec: WorkSpec, attempts: Any = None):
        from agentiqa_cli.runtime import Runtime

        self.spec = spec
        self.attempts = attempts  # the driver's ``Attempts`` actor (None: not counted)
        self.loop = asyncio.new_event_loop()
        self.rt = Runtime(spec.settings.model_copy(update={"engine": "local"}))
        self.loop.run_until_complete(self.rt.__aenter__())
        self.process = self.loop.run_until_complete(spec.build(self.rt))

    def __call__(self, batch: dict[str, Any]) -> dict[str, list[Any]]:
        idx = [int(i) for i in batch["idx"]]
        jobs = [pickle.loads(b) for b in batch["job"]]
        tries = self._attempts(idx)
        trace = _Collect()
        skipped: list[int] = []
        summary = BatchSummary()
        # an image that killed a worker on each of its earlier attempts is not run again
        for job, i, n in zip(jobs, idx, tries, strict=True):
            if n > MAX_DEATHS:
                self._given_up(job, i, n - 1, summary, trace, skipped)
        index = {id(j): i for j, i in zip(jobs, idx, strict=True)}
        todo = [j for j, n in zip(jobs, tries, strict=True) if n <= MAX_DEATHS]
        if todo:
            ran = self.loop.run_until_complete(
                run_batch(
                    todo,
                    self.process,
                    fingerprint=self.spec.fingerprint,
                    decoder=self.rt.decoder,
                    writer=None,
                    trace=trace,
                    concurrency=self.spec.settings.concurrency,
                    done=self.spec.done,
                    on_skip=lambda j: skipped.append(index[id(j)]),
                )
            )
            summary.results += ran.results
            summary.jobs += ran.jobs
        by_key: dict[tuple[str | None, str | None], list[str]] = {}
        for e in trace.events:
            by_key.setdefault((e.image, e.key), []).append(e.model_dump_json(exclude_none=True))
        out_idx = [index[id(j)] for j in summary.jobs] + skipped
        results = [r.model_dump_json() for r in summary.results] + [""] * len(skipped)
        events = [by_key.get((r.image, r.key), []) for r in summary.results]
        return {"idx": out_idx, "result": results, "events": events + [[] for _ in skipped]}

    def _attempts(self, idx: list[int]) -> list[int]:
        if self.attempts is None:
            return [1] * len(idx)
        counted: list[int] = _ray().get(self.attempts.begin.remote(idx))
        return counted

    def _given_up(
        self,
        job: Job,
        i: int,
        deaths: int,
        summary: BatchSummary,
        trace: TraceWriter,
        skipped: list[int],
    ) -> None:
        """The error row of an image whose workers died ``deaths`` times while on it."""
        settings = self.spec.settings
        key = job_key(job, self.spec.fingerprint,
                      content_hashes(job, max_file_bytes(settings.max_pixels)))  # fmt: skip
        if self.spec.done(job.name, key):
            skipped.append(i)
            return
        result = error_result(
            job,
            key,
            f"the worker died {deaths} times while processing this image (a crash in a "
            "decoder or tool, or out of memory); not tried again",
        )
        trace.bind(job.name, key).emit("error", note=result.error)
        summary.results.append(result)
        summary.jobs.append(job)


def _ray() -> Any:
    try:
        import ray
    except ImportError:
        raise ConfigError(
            "--engine ray needs Ray Data: pip install 'agentiqa[ray]' (or use --engine local)"
        ) from None
    return ray


async def run_on_ray(
    rt: Runtime,
    jobs: Sequence[Job],
    spec: WorkSpec,
    *,
    trace: TraceWriter,
    writer: ResultsWriter | None,
    on_result: Callable[[Result], None] | None,
    on_skip: Callable[[Job], None] | None,
) -> BatchSummary:
    """Run ``jobs`` on a Ray cluster (``ray_address``, or a local instance); rows and trace
    events are written here as they stream back."""
    ray = _ray()
    return await asyncio.to_thread(
        _drive, ray, rt.settings, list(jobs), spec, trace, writer, on_result, on_skip
    )


def _drive(
    ray: Any,
    settings: Settings,
    jobs: list[Job],
    spec: WorkSpec,
    trace: TraceWriter,
    writer: ResultsWriter | None,
    on_result: Callable[[Result], None] | None,
    on_skip: Callable[[Job], None] | None,
) -> BatchSummary:
    import time

    t0 = time.perf_counter()
    summary = BatchSummary()
    if not jobs:
        return summary
    if not ray.is_initialized():
        ray.init(
            address=settings.ray_address,
            ignore_reinit_error=True,
            include_dashboard=False,
            log_to_driver=False,
            logging_level="ERROR",
        )
    import logging

    logging.getLogger("ray.data").setLevel(logging.WARNING)  # its INFO lines are not ours
    ctx = ray.data.DataContext.get_current()
    ctx.enable_progress_bars = False
    ctx.execution_options.preserve_order = False
    items = [{"idx": i, "job": pickle.dumps(j)} for i, j in enumerate(jobs)]
    workers = max(1, int(ray.cluster_resources().get("CPU", 1)))
    attempts = ray.remote(num_cpus=0)(Attempts).remote()
    ds = ray.data.from_items(items, override_num_blocks=len(items)).map_batches(
        RayWorker,
        fn_constructor_kwargs={"spec": spec, "attempts": attempts},
        batch_size=1,
        batch_format="numpy",
        compute=ray.data.ActorPoolStrategy(min_size=1, max_size=workers),
        num_cpus=1,  # Ray Data restarts a dead actor and retries its batch (Attempts bounds it)
    )
    seen: set[int] = set()
    failure = ""
    try:
        for row in ds.iter_rows():
            i = int(row["idx"])
            if i in seen:  # a retried batch whose first attempt had already reported
                continue
            seen.add(i)
            if not row["result"]:
                summary.skipped += 1
                if on_skip:
                    on_skip(jobs[i])
                continue
            _deliver(summary, jobs[i], Result.model_validate_json(row["result"]),
                     row["events"], trace, writer, on_result)  # fmt: skip
    except Exception as e:  # the cluster gave up on a batch: its images get error rows
        failure = f"{type(e).__name__}: {str(e).splitlines()[0][:200] if str(e) else ''}"
    for i, job in enumerate(jobs):
        if i in seen:
            continue
        key = job_key(
            job, spec.fingerprint, content_hashes(job, max_file_bytes(settings.max_pixels))
        )
        if spec.done(job.name, key):
            summary.skipped += 1
            if on_skip:
                on_skip(job)
            continue
        result = error_result(job, key, f"ray worker failed: {failure or 'no result returned'}")
        result.transient = True
        trace.bind(job.name, key).emit("error", note=result.error)
        _deliver(summary, job, result, [], trace, writer, on_result)
    summary.seconds = time.perf_counter() - t0
    return summary


def _deliver(
    summary: BatchSummary,
    job: Job,
    result: Result,
    events: Sequence[str],
    trace: TraceWriter,
    writer: ResultsWriter | None,
    on_result: Callable[[Result], None] | None,
) -> None:
    for e in events:
        trace.emit(TraceEvent.model_validate_json(e))
    summary.deliver(job, result, writer, on_result)
