"""The one protocol every VLM backend implements.

A request carries the rendered chat messages (for a model) *and* the typed role input they
were rendered from (for the deterministic ``rules`` backend). Optional ``json_schema`` or
``choices`` constrain the reply; ``top_logprobs`` asks for per-token log-probabilities.
"""

from __future__ import annotations

import math
from typing import Any, ClassVar, Literal, Protocol, runtime_checkable

import numpy as np
from numpy.typing import NDArray
from pydantic import BaseModel, ConfigDict, Field, field_validator

from agentiqa_cli.records import Usage


class ImagePart(BaseModel):
    """An image in a message: its hash for the trace, its path/pixels for the backend."""

    model_config = ConfigDict(extra="forbid", arbitrary_types_allowed=True, frozen=True)

    sha256: str
    path: str
    pixels: NDArray[np.float32] | None = Field(
        default=None, exclude=True, repr=False
    )  # H×W×3 in [0, 1]


class Message(BaseModel):
    model_config = ConfigDict(extra="forbid")

    role: Literal["system", "user", "assistant"]
    text: str
    images: list[ImagePart] = Field(default_factory=list)


class RoleInput(BaseModel):
    """What one role is asked, typed. Subclasses (``agent/inputs.py``) name their prompt in
    ``role`` and turn themselves into the prompt's template variables and the schema's
    run-time values; a model reads the rendered text, the rules backend reads the fields."""

    model_config = ConfigDict(extra="forbid", frozen=True, arbitrary_types_allowed=True)

    role: ClassVar[str]

    def variables(self) -> dict[str, object]:
        """The prompt template's variables."""
        raise NotImplementedError

    def dynamic(self) -> dict[str, object]:
        """The output schema's run-time values (``enum_from`` etc.)."""
        return {}


class VLMRequest(BaseModel):
    model_config = ConfigDict(extra="forbid", arbitrary_types_allowed=True)

    role: str  # prompt name: planner, examine, select, summarize, ...
    messages: list[Message]
    inputs: RoleInput | None = Field(default=None, exclude=True)
    json_schema: dict[str, Any] | None = None
    choices: list[str] | None = None
    top_logprobs: int = 0
    max_tokens: int = 512
    temperature: float = 0.0


class VLMReply(BaseModel):
    model_config = ConfigDict(extra="forbid")

    text: str
    # the generated tokens, and one {token: logprob} per generated position, when requested
    tokens: list[str] | None = None
    top_logprobs: list[dict[str, float]] | None = None
    usage: Usage = Field(default_factory=Usage)
    latency: float = 0.0
    finish_reason: str | None = None
    model: str = ""

    @field_validator("top_logprobs")
    @classmethod
    def _probabilities(cls, v: list[dict[str, float]] | None) -> list[dict[str, float]] | None:
        """Every backend's log-probabilities as data: a value that is not a finite number
        ≤ 0 (above 709 ``exp`` overflows) becomes NaN, which fusion treats as missing (its
        position carries no level probabilities; the trace notes why)."""
        if v is None:
            return None
        return [{t: lp if _valid(lp) else math.nan for t, lp in d.items()} for d in v]

    @property
    def truncated(self) -> bool:
        """The reply hit ``max_tokens``: its JSON is cut short."""
        return self.finish_reason == "length"


def _valid(lp: float) -> bool:
    return math.isfinite(lp) and lp <= 0.0


@runtime_checkable
class VLM(Protocol):
    """Messages (+ optional schema/choices) → text, log-probabilities, usage, latency.

    ``check`` runs once before a batch (a dead server or a wrong model fails once, not per
    image; it may resolve ``model``); ``aclose`` once after it. ``supports_logprobs`` says
    whether replies can carry level log-probabilities for fusion (rules: never)."""

    name: str
    model: str | None
    supports_schema: bool
    supports_logprobs: bool

    async def check(self) -> None: ...

    async def complete(self, request: VLMRequest) -> VLMReply: ...

    async def aclose(self) -> None: ...
