"""Asking one role: render its prompt from a typed input, call the VLM, validate, trace.

``Asker`` is the only place that turns a role input into a VLM request, so constrained
decoding, re-asking after an invalid reply, ``--vlm-fallback rules`` and the trace are
handled once for every role. What a role is (reply model, trace step, rules answer) comes
from its declaration (``asking/registry.py``).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import TYPE_CHECKING, TypeVar

from pydantic import BaseModel, ValidationError

from agentiqa_cli.asking.registry import role
from agentiqa_cli.batch import Pair
from agentiqa_cli.errors import VLMError
from agentiqa_cli.io.trace import ImageTrace
from agentiqa_cli.records import PromptRequest, ReplyRecord, Usage
from agentiqa_cli.vlm.base import VLM, ImagePart, RoleInput, VLMReply, VLMRequest

if TYPE_CHECKING:  # the prompts are loaded by the Runtime, which hands them over
    from agentiqa_cli.asking.prompts import PromptSpec

R = TypeVar("R", bound=BaseModel)

# enough positions to re-derive the level distribution from the trace
TRACED_POSITIONS = 32


class Asker:
    def __init__(
        self,
        vlm: VLM,
        prompts: dict[str, PromptSpec],
        fallback: VLM | None = None,
        reasks: int = 1,
    ):
        self.vlm = vlm
        self.prompts = prompts
        self.fallback = fallback
        self.reasks = reasks

    async def ask(
        self,
        inputs: RoleInput,
        model: type[R],
        usage: Usage,
        trace: ImageTrace,
        images: Sequence[ImagePart] = (),
    ) -> tuple[R, VLMReply]:
        """The validated reply of ``inputs.role``; the raw reply for its log-probabilities.

        An invalid reply is asked again (``reasks``); a backend failure goes to the fallback
        backend when there is one; every attempt is traced."""
        spec = self.prompts[inputs.role]
        request = VLMRequest(
            role=inputs.role,
            messages=spec.render(images=images, **inputs.variables()),
            inputs=inputs,
            json_schema=spec.schema_for(**inputs.dynamic()),
            top_logprobs=spec.top_logprobs,
            max_tokens=spec.max_tokens,
        )
        last_error = ""
        for backend in (self.vlm, self.fallback):
            if backend is None:
                continue
            if not backend.supports_logprobs:
                request.top_logprobs = 0
            for _attempt in range(self.reasks + 1):
                try:
                    reply = await backend.complete(request)
                except VLMError as e:
                    last_error = str(e)
                    self._event(trace, spec, request, None, None, f"{backend.name}: {e}")
                    break  # transport retries happen inside the backend
                usage.add(reply.usage)  # vlm_calls counts model calls only (rules reports none)
                try:
                    parsed = parse_reply(reply, model)
                except VLMError as e:
                    last_error = str(e)
                    self._event(trace, spec, request, reply, None, f"{backend.name}: {e}")
                    continue
                note = None if backend is self.vlm else f"fallback to rules after: {last_error}"
                self._event(trace, spec, request, reply, parsed, note)
                return parsed, reply
        raise VLMError(f"{inputs.role}: {last_error}")

    def _event(
        self,
        trace: ImageTrace,
        spec: PromptSpec,
        request: VLMRequest,
        reply: VLMReply | None,
        parsed: BaseModel | None,
        note: str | None,
    ) -> None:
        trace.emit(
            role(request.role).step,
            request=PromptRequest(
                prompt=spec.fingerprint,
                messages=[m.model_dump(mode="json") for m in request.messages],
                constrained=request.json_schema is not None,
                top_logprobs=request.top_logprobs,
            ),
            reply=None
            if reply is None
            else ReplyRecord.bounded(
                reply.text,
                finish_reason=reply.finish_reason,
                model=reply.model,
                tokens=reply.tokens[:TRACED_POSITIONS] if reply.tokens else None,
                top_logprobs=reply.top_logprobs[:TRACED_POSITIONS] if reply.top_logprobs else None,
            ),
            parsed=None if parsed is None else parsed.model_dump(mode="json"),
            latency=None if reply is None else reply.latency,
            tokens=None if reply is None else reply.usage,
            note=note,
        )


def images_of(pair: Pair) -> list[ImagePart]:
    """The image to assess, then its reference when there is one."""
    parts = [ImagePart(sha256=pair.image.sha256, path=pair.job.name, pixels=pair.image.pixels)]
    if pair.reference is not None:
        parts.append(
            ImagePart(
                sha256=pair.reference.sha256, path=pair.job.ref_name, pixels=pair.reference.pixels
            )
        )
    return parts


def parse_reply(reply: VLMReply, model: type[R]) -> R:
    """Validate a constrained reply; a truncated or off-schema reply is a VLMError."""
    if reply.truncated:
        raise VLMError(
            "reply truncated (finish_reason=length): raise max_tokens or shorten the schema"
        )
    try:
        data = json.loads(reply.text)
    except json.JSONDecodeError as e:
        raise VLMError(
            f"reply is not valid JSON ({e.msg} at {e.pos}): {reply.text[:120]!r}"
        ) from None
    try:
        return model.model_validate(data)
    except ValidationError as e:
        err = e.errors()[0]
        where = ".".join(str(p) for p in err["loc"]) or "(root)"
        raise VLMError(
            f"reply does not match the {model.__name__} schema at {where}: {err['msg']}"
        ) from None
