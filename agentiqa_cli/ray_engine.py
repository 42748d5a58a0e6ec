"""`--engine ray`: the images of `score`/`assess` flow through Ray Data, rows come back here.

The driver keeps everything a run owns: the results CSV, the trace, resume, the gate and
the exit code. Workers are a pool of ``RayWorker`` actors (``map_batches`` over a stateful
class): each builds its ``Runtime`` once — cards, tool runner, prompts, the VLM connection —
and runs the same ``run_batch`` as the local engine on the jobs it is given, returning each
image's ``Result`` and trace events as JSON. The driver streams them into the CSV and the
trace as they arrive, so both have the same rows and keys as a local run.

Images travel in batches of up to ``BATCH``, at least 4 per worker (Ray's per-task overhead
is tens of ms: a task per image gave half the local engine's throughput on 2 CPUs, 8 images
a task 0.6-0.8×, 25 a task 0.85×). A worker that dies is restarted
by Ray and its batch retried, without limit (Ray Data's defaults for actor pools). So that an
image that kills every worker it is given (a crash in a decoder or a tool, memory it cannot
have) cannot stall the run, the driver keeps count (``Attempts``, a small actor the workers
ask): a retried batch runs its images one at a time, each marked as started and finished,
so a death is blamed on the one image that was running; an image that
``MAX_DEATHS`` workers died on alone gets an error row instead of another worker. If the
dataset still fails (the cluster went away), every image that has no row yet gets an error
row marked transient, which ``--resume`` retries. No row is lost either way.

Ray is an optional extra (``pip install agentiqa[ray]``); the local engine never imports it.
Every node needs agentiqa installed (or ``ray_address`` pointing at a cluster whose runtime
environment provides it) and must see the image files at the same paths.
"""

from __future__ import annotations

import asyncio
import logging
import pickle
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any

from agentiqa_cli.batch import (
    BatchSummary,
    Process,
    RunSink,
    content_hashes,
    error_result,
    job_key,
    run_batch,
)
from agentiqa_cli.config import Settings
from agentiqa_cli.errors import ConfigError, MissingExtraError
from agentiqa_cli.imaging.discover import Job
from agentiqa_cli.imaging.load import max_file_bytes
from agentiqa_cli.io.results import DoneRows
from agentiqa_cli.io.trace import TraceWriter
from agentiqa_cli.records import Result, TraceEvent
from agentiqa_cli.runtime import Remote, Runtime

BATCH = 32  # images per Ray task at most (fewer, so that each worker gets 4 batches or more)
MAX_DEATHS = 2  # workers an image may kill while it runs alone before it gets an error row


class Attempts:
    """The driver's count of what workers were given (a Ray actor they ask): batch attempts
    per image (a second one means its worker died), and for images run alone, how often
    one started without finishing (its worker died on it)."""

    def __init__(self) -> None:
        self.batches: dict[int, int] = {}
        self.started: dict[int, int] = {}
        self.finished: dict[int, int] = {}

    def begin(self, idx: list[int]) -> bool:
        """A batch of these images starts: whether it is a retry (one of them was given
        to a worker before)."""
        retry = False
        for i in idx:
            self.batches[i] = self.batches.get(i, 0) + 1
            retry = retry or self.batches[i] > 1
        return retry

    def start(self, i: int) -> int:
        """Image ``i`` starts alone: the workers that died on it alone before. An image
        ``MAX_DEATHS`` workers died on is not started again (it gets an error row), so
        later retries of its batch still count its deaths right."""
        deaths = self.started.get(i, 0) - self.finished.get(i, 0)
        if deaths < MAX_DEATHS:
            self.started[i] = self.started.get(i, 0) + 1
        return deaths

    def finish(self, i: int) -> None:
        self.finished[i] = self.finished.get(i, 0) + 1


@dataclass(frozen=True)
class WorkSpec:
    """What a worker needs to rebuild the driver's process: its settings, how the driver
    builds a Runtime (``wiring.build_runtime``) and the command's builder (``cli/run.py``:
    the scorer of the chosen tools, the agent)."""

    settings: Settings
    runtime: Callable[[Settings], Runtime]
    build: Callable[[Runtime], Awaitable[Process]]
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
        self.spec = spec
        self.attempts = attempts  # the driver's ``Attempts`` actor (None: not counted)
        self.loop = asyncio.new_event_loop()
        self.rt = spec.runtime(spec.settings.model_copy(update={"engine": "local"}))
        self.loop.run_until_complete(self.rt.__aenter__())
        self.process = self.loop.run_until_complete(spec.build(self.rt))

    def __call__(self, batch: dict[str, Any]) -> dict[str, list[Any]]:
        idx = [int(i) for i in batch["idx"]]
        jobs = [pickle.loads(b) for b in batch["job"]]
        index = {id(j): i for j, i in zip(jobs, idx, strict=True)}
        trace = _Collect()
        skipped: list[int] = []
        summary = BatchSummary()
        ledger = self.attempts
        if ledger is None or not _ray().get(ledger.begin.remote(idx)):
            self._run(jobs, summary, trace, skipped, index)
        else:  # its worker died: one image at a time, so the next death has one culprit
            for job, i in zip(jobs, idx, strict=True):
                deaths = _ray().get(ledger.start.remote(i))
                if deaths >= MAX_DEATHS:
                    self._given_up(job, i, deaths, summary, trace, skipped)
                    continue
                self._run([job], summary, trace, skipped, index)
                _ray().get(ledger.finish.remote(i))  # before the next image can be blamed
        by_key: dict[tuple[str | None, str | None], list[str]] = {}
        for e in trace.events:
            by_key.setdefault((e.image, e.key), []).append(e.model_dump_json(exclude_none=True))
        out_idx = [index[id(j)] for j in summary.jobs] + skipped
        results = [r.model_dump_json() for r in summary.results] + [""] * len(skipped)
        events = [by_key.get((r.image, r.key), []) for r in summary.results]
        return {"idx": out_idx, "result": results, "events": events + [[] for _ in skipped]}

    def _run(
        self,
        jobs: list[Job],
        summary: BatchSummary,
        trace: TraceWriter,
        skipped: list[int],
        index: dict[int, int],
    ) -> None:
        ran = self.loop.run_until_complete(
            run_batch(
                jobs,
                self.process,
                fingerprint=self.spec.fingerprint,
                decoder=self.rt.decoder,
                sink=RunSink(trace, on_skip=lambda j: skipped.append(index[id(j)])),
                concurrency=self.spec.settings.concurrency,
                done=self.spec.done,
            )
        )
        summary.results += ran.results
        summary.jobs += ran.jobs

    def _given_up(
        self,
        job: Job,
        i: int,
        deaths: int,
        summary: BatchSummary,
        trace: TraceWriter,
        skipped: list[int],
    ) -> None:
        """The error row of an image that ``deaths`` workers died on."""
        result = _error_row(
            job,
            self.spec,
            self.spec.settings,
            trace,
            f"the worker died {deaths} times while processing this image alone (a crash in "
            "a decoder or tool, or out of memory); not tried again",
        )
        if result is None:
            skipped.append(i)
            return
        summary.results.append(result)
        summary.jobs.append(job)


def _error_row(
    job: Job, spec: WorkSpec, settings: Settings, trace: TraceWriter, message: str
) -> Result | None:
    """The error row of an image no worker returned a row for, with its trace note; None
    when the results CSV already has a row for it (--resume)."""
    key = job_key(job, spec.fingerprint, content_hashes(job, max_file_bytes(settings.max_pixels)))
    if spec.done(job.name, key):
        return None
    result = error_result(job, key, message)
    trace.bind(job.name, key).emit("error", note=result.error)
    return result


def pool_size(resources: dict[str, float], gpus_per_worker: float) -> int:
    """Workers the cluster holds: one per CPU, or as many as its GPUs seat when each
    worker holds ``gpus_per_worker`` of one (the CPUs still bound it)."""
    workers = max(1, int(resources.get("CPU", 1)))
    if gpus_per_worker > 0:
        workers = min(workers, int(resources.get("GPU", 0) / gpus_per_worker + 1e-9))
        if workers < 1:
            raise ConfigError(
                f"ray_gpus: {gpus_per_worker} GPU per worker, but the Ray cluster has "
                f"{resources.get('GPU', 0):g} GPUs"
            )
    return workers


def _ray() -> Any:
    # optional extra: ray ([ray]); the local engine never imports it
    try:
        import ray
    except ImportError:
        raise MissingExtraError(
            "--engine ray (Ray Data)", "ray", " (or use --engine local)"
        ) from None
    return ray


class RayEngine:
    """The ``Engine`` of ``engine: ray`` (``wiring.build_runtime`` chooses it): runs
    ``jobs`` on a Ray cluster (``ray_address``, or a local instance); rows and trace events
    are written here as they stream back. ``runtime`` builds each worker's Runtime."""

    def __init__(self, runtime: Callable[[Settings], Runtime]):
        self.runtime = runtime

    async def __call__(
        self,
        rt: Runtime,
        jobs: Sequence[Job],
        remote: Remote,
        *,
        command: str,
        sink: RunSink,
    ) -> BatchSummary:
        writer = sink.writer
        spec = WorkSpec(
            settings=rt.settings,
            runtime=self.runtime,
            build=remote,
            fingerprint=rt.fingerprint(command),
            done=DoneRows(frozenset(writer.done), tuple(writer.columns))
            if writer is not None
            else DoneRows(frozenset(), ()),
        )
        ray = _ray()
        return await asyncio.to_thread(_drive, ray, rt.settings, list(jobs), spec, sink)


def _drive(
    ray: Any,
    settings: Settings,
    jobs: list[Job],
    spec: WorkSpec,
    sink: RunSink,
) -> BatchSummary:
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

    logging.getLogger("ray.data").setLevel(logging.WARNING)  # its INFO lines are not ours
    ctx = ray.data.DataContext.get_current()
    ctx.enable_progress_bars = False
    ctx.execution_options.preserve_order = False
    items = [{"idx": i, "job": pickle.dumps(j)} for i, j in enumerate(jobs)]
    workers = pool_size(ray.cluster_resources(), settings.ray_gpus)
    attempts = ray.remote(num_cpus=0)(Attempts).remote()
    # a few images still use every worker; several batches each, so none waits long at the end
    size = max(1, min(BATCH, -(-len(items) // (4 * workers))))
    ds = ray.data.from_items(items, override_num_blocks=-(-len(items) // size)).map_batches(
        RayWorker,
        fn_constructor_kwargs={"spec": spec, "attempts": attempts},
        batch_size=size,
        batch_format="numpy",
        compute=ray.data.ActorPoolStrategy(min_size=1, max_size=workers),
        num_cpus=1,  # Ray Data restarts a dead actor and retries its batch (Attempts bounds it)
        num_gpus=settings.ray_gpus or None,
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
                summary.skip(jobs[i], sink)
                continue
            _deliver(summary, jobs[i], Result.model_validate_json(row["result"]),
                     row["events"], sink)  # fmt: skip
    except Exception as e:  # the cluster gave up on a batch: its images get error rows
        failure = f"{type(e).__name__}: {str(e).splitlines()[0][:200] if str(e) else ''}"
    for i, job in enumerate(jobs):
        if i in seen:
            continue
        message = f"ray worker failed: {failure or 'no result returned'}"
        result = _error_row(job, spec, settings, sink.trace, message)
        if result is None:
            summary.skip(job, sink)
            continue
        result.transient = True
        _deliver(summary, job, result, [], sink)
    summary.seconds = time.perf_counter() - t0
    return summary


def _deliver(
    summary: BatchSummary,
    job: Job,
    result: Result,
    events: Sequence[str],
    sink: RunSink,
) -> None:
    for e in events:
        sink.trace.emit(TraceEvent.model_validate_json(e))
    summary.deliver(job, result, sink)
