"""The one protocol every VLM backend implements.

A request carries the rendered chat messages (for a model) *and* the role and structured
context they were rendered from (for the deterministic ``rules`` backend and for the
trace). Optional ``json_schema`` or ``choices`` constrain the reply; ``top_logprobs``
asks for per-token log-probabilities.
"""

from __future__ import annotations

from typing import Any, Literal, Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field

from agentiqa_cli.records import Usage


class ImagePart(BaseModel):
    """An image in a message: its hash for the trace, its path/pixels for the backend."""

    model_config = ConfigDict(extra="forbid", arbitrary_types_allowed=True, frozen=True)

    sha256: str
    path: str
    pixels: Any = Field(default=None, exclude=True, repr=False)  # H×W×3 float32 in [0, 1]


class Message(BaseModel):
    model_config = ConfigDict(extra="forbid")

    role: Literal["system", "user", "assistant"]
    text: str
    images: list[ImagePart] = Field(default_factory=list)


class VLMRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    role: str  # prompt name: planner, detect, analyze, select, summarize, score
    messages: list[Message]
    context: dict[str, Any] = Field(default_factory=dict, exclude=True)
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


@runtime_checkable
class VLM(Protocol):
    """Messages (+ optional schema/choices) → text, log-probabilities, usage, latency."""

    name: str

    async def complete(self, request: VLMRequest) -> VLMReply: ...

    async def aclose(self) -> None: ...
