"""The ``rules`` backend: a deterministic agent behind the same VLM protocol.

A model reads a request's rendered messages; this backend reads the typed role input
they were rendered from, and answers with the rules answer its role declares
(``asking/registry.py``): the agent's roles from the query, the signal detectors' readings
and the tool cards (``agent/rules.py``), evaluate's planner and the imperfection roles
beside their inputs. It has no level log-probabilities, so fusion uses a uniform ``p``.
"""

from __future__ import annotations

import time

from pydantic import BaseModel

from agentiqa_cli.asking.registry import roles
from agentiqa_cli.errors import VLMError
from agentiqa_cli.tools.cards import CardSet
from agentiqa_cli.vlm.base import RoleInput, VLMReply, VLMRequest


class RulesVLM:
    """Implements the ``VLM`` protocol without a model: answers from the typed role input."""

    name = "rules"
    model: str | None = "rules"
    supports_schema = True
    supports_logprobs = False

    def __init__(self, cards: CardSet):
        self.cards = cards

    async def check(self) -> None:
        return None

    async def aclose(self) -> None:
        return None

    async def complete(self, request: VLMRequest) -> VLMReply:
        t0 = time.perf_counter()
        reply = self.answer(request.inputs)
        return VLMReply(
            text=reply.model_dump_json(),
            latency=time.perf_counter() - t0,
            model="rules",
            finish_reason="stop",
        )

    def answer(self, inputs: RoleInput | None) -> BaseModel:
        """The reply for one role input (the deterministic counterpart of a model's)."""
        declared = roles().get(inputs.role) if inputs is not None else None
        if declared is None or not isinstance(inputs, declared.inputs):
            what = type(inputs).__name__ if inputs is not None else "a request without role input"
            raise ValueError(f"rules backend cannot answer {what}")
        if declared.answer is None:
            raise VLMError(
                f"the rules backend does not answer the {inputs.role} role through a model"
            )
        return declared.answer(inputs, self.cards)
