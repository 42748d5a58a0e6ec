"""Run a per-image coroutine over many jobs with bounded concurrency, resume and outputs.

The batch owns what every command shares: decoding each image (and its reference) once,
content-hash keys for resume, error rows for bad inputs, and writing rows as they finish.
"""

from __future__ import annotations

import asyncio
import ctypes
import hashlib
import threading
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field

from PIL import Image
from threadpoolctl import threadpool_limits

from agentiqa_cli.errors import AgentIQAError, ImageError, OutputWriteError
from agentiqa_cli.imaging.discover import Job
from agentiqa_cli.imaging.load import (
    LoadedImage,
    display_path,
    file_sha256,
    load_image,
    max_file_bytes,
    open_regular,
)
from agentiqa_cli.io.stream import RowWriter
from agentiqa_cli.io.trace import NO_TRACE, ImageTrace, TraceWriter
from agentiqa_cli.records import Result, ToolRequest, ToolScore, Usage


@dataclass
class Pair:
    """A decoded image and its decoded reference (if any), shared by every tool, with the
    image's trace handle."""

    job: Job
    image: LoadedImage
    reference: LoadedImage | None
    key: str
    trace: ImageTrace = NO_TRACE
    usage: Usage = field(default_factory=Usage)  # model calls made for this image so far

    def result(self) -> Result:
        """An empty ``ok`` row for this image, for a process to fill in."""
        return Result(
            image=self.job.name, reference=self.job.ref_name, key=self.key, usage=self.usage
        )


class Decoder:
    """Decodes images; references are cached because many images often share one."""

    def __init__(self, max_pixels: int, ref_cache: int = 8):
        self.max_pixels = max_pixels
        self._refs: OrderedDict[str, LoadedImage] = OrderedDict()
        self._ref_cache = ref_cache
        self._lock = threading.Lock()
        self._loading: dict[str, threading.Lock] = {}  # one per reference path

    def reference(self, job: Job) -> LoadedImage | None:
        if job.reference is None:
            return None
        k = str(job.reference)
        with self._lock:
            loading = self._loading.setdefault(k, threading.Lock())
        with loading:  # images decoded at once that share a reference wait for one decode
            with self._lock:
                if k in self._refs:
                    self._refs.move_to_end(k)
                    return self._refs[k]
            try:
                ref = load_image(job.reference, self.max_pixels)
            except ImageError as e:
                raise ImageError(f"reference {e}") from None
            with self._lock:
                self._refs[k] = ref
                while len(self._refs) > self._ref_cache:
                    self._refs.popitem(last=False)
        return ref

    def decode(self, job: Job) -> tuple[LoadedImage, LoadedImage | None]:
        if job.error:
            raise ImageError(job.error)
        image = load_image(job.image, self.max_pixels)
        ref = self.reference(job)
        if ref is not None and ref.size != image.size:
            # FR metrics compare pixel by pixel; resampling either side would change the score
            raise ImageError(
                f"reference {ref.size[0]}×{ref.size[1]} differs from image "
                f"{image.size[0]}×{image.size[1]}; full-reference tools need equal sizes"
            )
        return image, ref


def trace_tool_scores(pair: Pair, scores: list[ToolScore], note: str | None = None) -> None:
    """One ``tool`` event per score: which image and reference (by hash), raw and normalized."""
    for s in scores:
        pair.trace.emit(
            "tool",
            request=ToolRequest(
                tool=s.tool,
                image=pair.image.sha256,
                reference=pair.reference.sha256 if pair.reference else None,
            ),
            parsed=s.model_dump(mode="json", exclude_none=True),
            latency=s.seconds,
            note=s.error if s.error else note,
        )


def content_hashes(job: Job, max_bytes: int | None = None) -> list[str]:
    """SHA-256 of the image (and reference) file; files that cannot be read as images
    (missing, not regular, larger than ``max_bytes``) are named by path."""
    out = []
    for p in (job.image, job.reference):
        if p is None:
            continue
        try:
            out.append(file_sha256(p, max_bytes))
        except (OSError, ImageError):
            out.append("path:" + display_path(p))
    return out


def job_key(job: Job, fingerprint: str, hashes: list[str] | None = None) -> str:
    """Content hash of image (+ reference) + query/config fingerprint.

    Unreadable files are keyed by path instead, so a resumed run does not retry them forever
    nor write their error row twice; fixing the file changes its key.
    """
    h = hashlib.sha256(fingerprint.encode())
    for part in content_hashes(job) if hashes is None else hashes:
        h.update(part.encode())
    if job.error:
        h.update(job.error.encode())
    if job.tag:
        h.update(b"\0" + job.tag.encode())
    return h.hexdigest()[:24]


def error_result(job: Job, key: str, error: str, seconds: float = 0.0) -> Result:
    return Result(
        image=job.name,
        reference=job.ref_name,
        key=key,
        status="error",
        error=error,
        seconds=seconds,
    )


@dataclass(frozen=True)
class RunSink:
    """Where a run's rows go, handed down once (``Runtime.run`` → engine → ``run_batch``):
    the trace, the results writer (None: rows are kept in the summary only) and the
    caller's callbacks for a finished row and for an input whose row was already done."""

    trace: TraceWriter
    writer: RowWriter | None = None
    on_result: Callable[[Result], None] | None = None
    on_skip: Callable[[Job], None] | None = None


@dataclass
class BatchSummary:
    results: list[Result] = field(default_factory=list)
    jobs: list[Job] = field(default_factory=list)  # the job of each result, same order
    skipped: int = 0
    seconds: float = 0.0

    @property
    def errors(self) -> int:
        return sum(r.status == "error" for r in self.results)

    def deliver(self, job: Job, result: Result, sink: RunSink) -> None:
        """A finished row: written, kept, reported (every engine ends an image here)."""
        if sink.writer is not None:
            sink.writer.write(result)
        self.results.append(result)
        self.jobs.append(job)
        if sink.on_result:
            sink.on_result(result)

    def skip(self, job: Job, sink: RunSink) -> None:
        """An input whose row is already in the results (``--resume``)."""
        self.skipped += 1
        if sink.on_skip:
            sink.on_skip(job)


Process = Callable[[Pair], Awaitable[Result]]

# An image in flight costs its decoded float32 RGB (12 bytes a pixel) several times over:
# the tools' working copies, crops, a resized view for the VLM. Measured with /usr/bin/time
# on a folder of 100 MP images (8-bit PNG and JPEG, 16-bit grey, transparent), taking turns:
# `score` with its default no-reference tools peaks at 2.1 GB, `assess` (rules) at 2.3 GB,
# about 20 bytes a pixel above the process's own.
BYTES_PER_PIXEL_IN_FLIGHT = 48
# An image with a reference: the default full-reference tools work on float64 planes of
# both (SSIM's five local moments, the detail pyramid): measured on a 10 MP pair, `score
# --ref` peaks at ~155 bytes per pixel of the image (ssim alone), ~78 per pixel of each.
BYTES_PER_PIXEL_WITH_REFERENCE = 80
MEMORY_BUDGET = 2 * 1024**3  # bytes of images in flight; an image over it runs alone


def job_bytes(job: Job, max_pixels: int) -> int:
    """What decoding and processing ``job`` costs in memory, from the image headers (0 when
    a header cannot be read: decoding will give the error row). A pair (image and
    reference) costs more a pixel: full-reference tools hold float64 planes of both."""
    total = 0
    per_pixel = (
        BYTES_PER_PIXEL_IN_FLIGHT if job.reference is None else BYTES_PER_PIXEL_WITH_REFERENCE
    )
    for path in (job.image, job.reference):
        if path is None:
            continue
        try:
            with open_regular(path, max_file_bytes(max_pixels)) as f, Image.open(f) as im:
                w, h = im.size
        except Exception:
            continue
        total += min(w * h, max_pixels) * per_pixel
    return total


class MemoryBudget:
    """Bytes held by the images in flight. ``try_take`` (from any thread) reserves a cost
    if it fits in what is left; ``take`` waits until it does. A cost over the whole budget
    fits only an empty one: such an image runs alone."""

    def __init__(self, total: int):
        self.total = max(1, total)
        self.used = 0
        self._lock = threading.Lock()
        self._released = asyncio.Condition()

    def try_take(self, cost: int) -> bool:
        cost = self._clip(cost)
        with self._lock:
            if self.used + cost > self.total:
                return False
            self.used += cost
            return True

    async def take(self, cost: int) -> None:
        async with self._released:
            await self._released.wait_for(lambda: self.try_take(cost))

    async def release(self, cost: int) -> None:
        with self._lock:
            self.used -= self._clip(cost)
        async with self._released:
            self._released.notify_all()

    def _clip(self, cost: int) -> int:
        return min(max(0, cost), self.total)


# numpy's and scipy's own OpenBLAS run one thread per call during a batch: its parallelism
# is its workers, each image's matrix products are small, and OpenBLAS's threads in every
# worker oversubscribe the cores (40 camera JPEGs, `score -j 2` on 2 cores: 0.79x the wall
# time, 0.71x the CPU). torch's own OpenMP pool (pyiqa's metrics) is not touched.
NUMPY_BLAS = {"libscipy_openblas": 1}

# glibc hands a freed block of more than a few MiB back to the kernel at once, so the next
# image's arrays of the same size fault every page in again, zeroed: a 1024 px image's
# detectors make dozens of such temporaries (40 camera JPEGs, `assess -j 1` on one core:
# 0.85x the wall time, a sixth of the system time, +30 MiB peak). Blocks below 32 MiB (the
# most glibc allows) stay in the heap, which is trimmed beyond 64 MiB free (as fast as 256
# on that batch, with the same peak); larger arrays (a big photo's planes) are still mapped
# and returned whole.
_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3  # mallopt's parameter numbers (malloc.h)
HEAP_KEEP = {_M_MMAP_THRESHOLD: 32 << 20, _M_TRIM_THRESHOLD: 64 << 20}


def keep_freed_memory() -> bool:
    """Set glibc's allocator to reuse freed image-sized blocks (``HEAP_KEEP``) for the rest
    of the process; False where the C library is not glibc (nothing changes)."""
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):
        return False
    return all(mallopt(param, value) == 1 for param, value in HEAP_KEEP.items())


async def run_batch(
    jobs: Iterable[Job],
    process: Process,
    *,
    fingerprint: str,
    decoder: Decoder,
    sink: RunSink,
    concurrency: int = 4,
    done: Callable[[str, str], bool] | None = None,
    memory_budget: int = MEMORY_BUDGET,
) -> BatchSummary:
    """Process every job with at most ``concurrency`` in flight; rows are written as they finish.

    Images in flight also share ``memory_budget`` bytes (``job_bytes`` each): a folder of
    100 MP images is processed one at a time whatever the concurrency, small ones as many
    at once as it allows.

    Only inputs whose row is already in the output (``--resume``: same path, same key)
    are skipped: two files with the same bytes each get their row, in one run or resumed.
    ``done`` answers that instead of the sink's writer where there is none (a Ray worker).
    """
    summary = BatchSummary()
    writer, trace = sink.writer, sink.trace
    budget = MemoryBudget(memory_budget)
    if done is None and writer is not None:
        done = writer.is_done
    queue: asyncio.Queue[Job] = asyncio.Queue()
    for j in jobs:
        queue.put_nowait(j)
    t_start = time.perf_counter()

    def open_job(
        job: Job, keyed: list[str], held: list[int]
    ) -> tuple[LoadedImage, LoadedImage | None] | tuple[int, list[str]] | None:
        """In a worker thread, one hand-off per image: the job's key (into ``keyed``, for
        its error row), then its decoded image and reference, or None when its row is done.
        An image whose memory (``job_bytes``) does not fit in what the budget has left is
        not decoded: its cost (and content hashes) are returned, for ``one`` to wait for
        room; small images never wait, so they keep to one hand-off."""
        hashes = content_hashes(job, max_file_bytes(decoder.max_pixels))
        keyed.append(job_key(job, fingerprint, hashes))
        if done is not None and done(job.name, keyed[0]):
            return None
        cost = job_bytes(job, decoder.max_pixels)
        if not budget.try_take(cost):
            return cost, hashes
        held.append(cost)
        return decode(job, keyed, hashes)

    def decode(
        job: Job, keyed: list[str], hashes: list[str]
    ) -> tuple[LoadedImage, LoadedImage | None]:
        image, ref = decoder.decode(job)
        decoded = [image.sha256] + ([ref.sha256] if ref is not None else [])
        if decoded != hashes:  # the file changed between hashing and decoding
            keyed[0] = job_key(job, fingerprint, decoded)
        return image, ref

    async def one(job: Job) -> None:
        t0 = time.perf_counter()
        keyed: list[str] = []
        held: list[int] = []  # memory this image holds in the budget
        usage = Usage()  # calls made before a failure still count on the error row
        try:
            opened = await asyncio.to_thread(open_job, job, keyed, held)
            if opened is not None and isinstance(opened[0], int):  # no room yet: wait
                cost, hashes = opened
                await budget.take(cost)
                held.append(cost)
                opened = await asyncio.to_thread(decode, job, keyed, hashes)
            if opened is None:
                summary.skip(job, sink)
                return
            image, ref = opened
            pair = Pair(job, image, ref, keyed[0], trace.bind(job.name, keyed[0]), usage)
            result = await process(pair)
            del pair, image, ref, opened  # the pixels go before the next image comes
        except OutputWriteError:
            raise  # the disk is full: stop, the rows so far are complete
        except AgentIQAError as e:
            result = error_result(job, _key(keyed), str(e), time.perf_counter() - t0)
            result.transient = not isinstance(e, ImageError)
            result.usage = usage
        except Exception as e:
            result = error_result(
                job,
                _key(keyed),
                f"internal error: {type(e).__name__}: {e}",
                time.perf_counter() - t0,
            )
            result.transient = True
            result.usage = usage
        finally:
            for cost in held:
                await budget.release(cost)
        if result.status == "error":
            trace.bind(job.name, result.key).emit("error", note=result.error)
        result.seconds = time.perf_counter() - t0
        summary.deliver(job, result, sink)

    async def worker() -> None:
        while True:
            try:
                job = queue.get_nowait()
            except asyncio.QueueEmpty:
                return
            await one(job)

    keep_freed_memory()
    with threadpool_limits(limits=NUMPY_BLAS):
        await asyncio.gather(*(worker() for _ in range(max(1, concurrency))))
    summary.seconds = time.perf_counter() - t_start
    return summary


def _key(keyed: list[str]) -> str:
    """The key ``open_job`` made, or none if it failed before (the row says why)."""
    return keyed[0] if keyed else ""
