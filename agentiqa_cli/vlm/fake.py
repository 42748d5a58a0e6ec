"""Fake VLMs for tests and benchmarks: scripted replies, every request recorded.

``ScriptedVLM`` answers each role from a queue (or a function) and keeps every request,
so a test can assert what was asked, with which schema, and how often.
"""

from __future__ import annotations

import json
from collections import defaultdict, deque
from collections.abc import Callable, Iterable
from typing import Any

from agentiqa_cli.errors import VLMError
from agentiqa_cli.records import Usage
from agentiqa_cli.vlm.base import VLMReply, VLMRequest

Script = str | dict[str, Any] | VLMReply | Exception | Callable[[VLMRequest], Any]


def reply_of(item: Any, request: VLMRequest) -> VLMReply:
    if callable(item) and not isinstance(item, VLMReply):
        item = item(request)
    if isinstance(item, Exception):
        raise item
    if isinstance(item, VLMReply):  # a scripted model's reply is one model call
        return item.model_copy(update={"usage": item.usage.model_copy(update={"calls": 1})})
    text = item if isinstance(item, str) else json.dumps(item)
    return VLMReply(
        text=text,
        usage=Usage(
            calls=1,
            prompt_tokens=sum(len(m.text) // 4 for m in request.messages),
            completion_tokens=len(text) // 4,
        ),
        finish_reason="stop",
        model="scripted",
    )


class ScriptedVLM:
    """Replies per role, in order; a role's last reply repeats once its queue runs dry."""

    name = "scripted"
    model: str | None = "scripted"
    supports_schema = True
    supports_logprobs = True

    def __init__(
        self,
        script: dict[str, Script | Iterable[Script]] | None = None,
        default: Callable[[VLMRequest], Any] | None = None,
    ):
        self.requests: list[VLMRequest] = []
        self._queues: dict[str, deque[Any]] = defaultdict(deque)
        self._last: dict[str, Any] = {}
        self.default = default
        for role, items in (script or {}).items():
            seq = items if isinstance(items, list | tuple) else [items]
            self._queues[role].extend(seq)

    def calls(self, role: str | None = None) -> list[VLMRequest]:
        return [r for r in self.requests if role is None or r.role == role]

    async def complete(self, request: VLMRequest) -> VLMReply:
        self.requests.append(request)
        q = self._queues.get(request.role)
        if q:
            item = q.popleft()
            self._last[request.role] = item
        elif request.role in self._last:
            item = self._last[request.role]
        elif self.default is not None:
            item = self.default
        else:
            raise VLMError(f"scripted VLM has no reply for role {request.role!r}")
        return reply_of(item, request)

    async def check(self) -> None:
        return None

    async def aclose(self) -> None:
        return None
