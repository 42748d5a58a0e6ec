"""In-process vLLM backend (``--vlm vllm:MODEL_PATH``), for batch jobs on a GPU box.

``vllm`` is an optional extra and is imported only when the engine is first needed.
Requests that arrive together (the pipeline works on several images at once) are gathered
for a few milliseconds and sent as one ``LLM.chat`` call, which vLLM schedules as a batch;
the call runs in a worker thread so the event loop keeps serving the tool stage.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import time
from dataclasses import dataclass, field
from typing import Any

from agentiqa_cli.errors import MissingExtraError, VLMError
from agentiqa_cli.records import Usage
from agentiqa_cli.vlm.base import Message, VLMReply, VLMRequest
from agentiqa_cli.vlm.images import fit_pixels, part_to_pil

_MASKED = -9999.0  # logprob vLLM reports for a token the output grammar forbids


@dataclass
class _Pending:
    request: VLMRequest
    future: asyncio.Future[VLMReply]
    queued_at: float = field(default_factory=time.perf_counter)


class InProcessVLM:
    """``VLM`` over ``vllm.LLM.chat`` with a small async batcher."""

    name = "vllm-inprocess"
    supports_schema = True
    supports_logprobs = True

    def __init__(
        self,
        model: str,
        *,
        image_pixels: int = 448 * 448,
        max_batch: int = 16,
        batch_window: float = 0.01,
        engine_args: dict[str, Any] | None = None,
        llm: Any = None,
    ) -> None:
        """``engine_args`` go to ``vllm.LLM`` (e.g. ``max_model_len``, ``dtype``,
        ``structured_outputs_config``); ``llm`` injects a ready engine (tests)."""
        self.model: str | None = model
        self.path = model
        self.image_pixels = image_pixels
        self.max_batch = max(1, max_batch)
        self.batch_window = batch_window
        self.engine_args = dict(engine_args or {})
        self._llm = llm
        self._pending: list[_Pending] = []
        self._worker: asyncio.Task[None] | None = None
        self._load_lock = asyncio.Lock()

    def __repr__(self) -> str:
        return f"InProcessVLM({self.model!r})"

    # -- public calls ----------------------------------------------------------------------

    async def check(self) -> None:
        """Load the engine now (slow: seconds to minutes) so a bad model fails up front."""
        async with self._load_lock:
            if self._llm is None:
                self._llm = await asyncio.to_thread(self._load)

    async def complete(self, request: VLMRequest) -> VLMReply:
        if request.json_schema is not None and request.choices:
            raise ValueError("a request constrains by json_schema or by choices, not both")
        await self.check()
        fut: asyncio.Future[VLMReply] = asyncio.get_running_loop().create_future()
        self._pending.append(_Pending(request, fut))
        if self._worker is None or self._worker.done():
            self._worker = asyncio.create_task(self._drain())
        return await fut

    async def aclose(self) -> None:
        if self._worker is not None:
            self._worker.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._worker
        for p in self._pending:
            if not p.future.done():
                p.future.set_exception(VLMError("in-process VLM closed before answering"))
        self._pending.clear()
        self._llm = None  # vLLM frees the engine when the last reference goes

    # -- batching --------------------------------------------------------------------------

    async def _drain(self) -> None:
        """One batch at a time (the engine is not re-entrant); later arrivals wait."""
        while self._pending:
            await asyncio.sleep(self.batch_window)  # let concurrent callers join this batch
            batch, self._pending = (
                self._pending[: self.max_batch],
                self._pending[self.max_batch :],
            )
            t0 = time.perf_counter()
            try:
                results = await asyncio.to_thread(self._run_isolating, [p.request for p in batch])
            except Exception as e:  # engine-level failure: every caller in the batch learns it
                results = [_as_vlm_error(e)] * len(batch)
            latency = time.perf_counter() - t0
            for p, res in zip(batch, results, strict=True):
                if p.future.done():
                    continue
                if isinstance(res, BaseException):
                    p.future.set_exception(res)
                else:
                    p.future.set_result(res.model_copy(update={"latency": latency}))

    def _run_isolating(self, requests: list[VLMRequest]) -> list[VLMReply | VLMError]:
        """Run a batch; if vLLM rejects it, rerun one by one so one bad request fails alone."""
        try:
            return self._run(requests)
        except Exception as e:
            if len(requests) == 1:
                return [_as_vlm_error(e)]
        out: list[VLMReply | VLMError] = []
        for r in requests:
            try:
                out.extend(self._run([r]))
            except Exception as e:
                out.append(_as_vlm_error(e))
        return out

    # -- engine ----------------------------------------------------------------------------

    def _load(self) -> Any:
        vllm = _vllm()
        args: dict[str, Any] = {
            "limit_mm_per_prompt": {"image": 1, "video": 0},
            # Compact JSON always terminates (free whitespace lets a weak model ramble
            # forever), and guidance kept control characters out of JSON strings where
            # xgrammar did not (vLLM 0.32).
            "structured_outputs_config": {"backend": "guidance", "disable_any_whitespace": True},
        }
        args.update(self.engine_args)
        try:
            return vllm.LLM(model=self.path, **args)
        except Exception as e:
            raise VLMError(f"cannot load {self.path} with vLLM: {_one_line(e)}") from None

    def _run(self, requests: list[VLMRequest]) -> list[VLMReply | VLMError]:
        vllm = _vllm()
        params = []
        for r in requests:
            structured = None
            if r.choices:
                structured = vllm.sampling_params.StructuredOutputsParams(choice=list(r.choices))
            elif r.json_schema is not None:
                structured = vllm.sampling_params.StructuredOutputsParams(json=r.json_schema)
            params.append(
                vllm.SamplingParams(
                    temperature=r.temperature,
                    max_tokens=r.max_tokens,
                    logprobs=r.top_logprobs or None,
                    structured_outputs=structured,
                )
            )
        conversations = [[self._message(m) for m in r.messages] for r in requests]
        outputs = self._llm.chat(conversations, sampling_params=params, use_tqdm=False)
        return [self._reply(r, o) for r, o in zip(requests, outputs, strict=True)]

    def _message(self, m: Message) -> dict[str, Any]:
        if not m.images:
            return {"role": m.role, "content": m.text}
        parts: list[dict[str, Any]] = [
            {"type": "image_pil", "image_pil": fit_pixels(part_to_pil(img), self.image_pixels)}
            for img in m.images
        ]
        parts.append({"type": "text", "text": m.text})
        return {"role": m.role, "content": parts}

    def _reply(self, request: VLMRequest, output: Any) -> VLMReply | VLMError:
        out = output.outputs[0]
        tokens, top = (
            _logprobs(out.token_ids, out.logprobs) if request.top_logprobs else (None, None)
        )
        return VLMReply(
            text=out.text,
            tokens=tokens,
            top_logprobs=top,
            usage=Usage(
                calls=1,
                prompt_tokens=len(output.prompt_token_ids or []),
                completion_tokens=len(out.token_ids or []),
            ),
            finish_reason=out.finish_reason,
            model=self.path,
        )


def _vllm() -> Any:
    """The ``vllm`` package, or exit 2 naming how to get it."""
    # optional extra: vllm (the in-process backend); the other backends never import it
    try:
        import vllm
    except ImportError:
        raise MissingExtraError(
            "--vlm vllm:MODEL (vLLM in this environment)",
            "vllm",
            " (or serve the model with vLLM and pass its URL to --vlm)",
        ) from None
    return vllm


def _logprobs(
    token_ids: Any, positions: Any
) -> tuple[list[str] | None, list[dict[str, float]] | None]:
    """vLLM's per-position {token_id: Logprob} → (generated tokens, {token: logprob} each).

    Each position holds the top-N and the sampled token; -9999 entries (masked by the
    output grammar) are dropped, except the sampled token itself is always kept.
    """
    if not positions:
        return None, None
    tokens: list[str] = []
    tops: list[dict[str, float]] = []
    for tid, pos in zip(token_ids, positions, strict=False):
        entries = pos or {}
        d: dict[str, float] = {}
        for other, lp in sorted(entries.items(), key=lambda kv: -kv[1].logprob):
            if other == tid or (math.isfinite(lp.logprob) and lp.logprob > _MASKED):
                d.setdefault(_decoded(other, lp), lp.logprob)
        sampled = entries.get(tid)
        tokens.append(_decoded(tid, sampled) if sampled is not None else str(tid))
        tops.append(d)
    return (tokens, tops) if tokens else (None, None)


def _decoded(tid: int, lp: Any) -> str:
    return lp.decoded_token if lp.decoded_token is not None else str(tid)


def _one_line(e: BaseException) -> str:
    text = str(e).strip().splitlines()
    return text[-1] if text else type(e).__name__


def _as_vlm_error(e: BaseException) -> VLMError:
    if isinstance(e, VLMError):
        return e
    return VLMError(f"in-process vLLM failed: {_one_line(e)}")
