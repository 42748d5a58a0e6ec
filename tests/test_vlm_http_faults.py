"""OpenAIHTTPVLM against a scripted OpenAI-compatible server on 127.0.0.1.

Each test queues the replies the server gives, then checks what the backend sent and how
it handled what came back: retries, timeouts, unreachable servers, contract violations.
"""

from __future__ import annotations

import asyncio
import base64
import io
import json
import threading
import time
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Literal

import numpy as np
import pytest
from PIL import Image
from pydantic import BaseModel, ConfigDict, Field

from agentiqa_cli.agent.replies import ScoreReply
from agentiqa_cli.asking.asker import parse_reply
from agentiqa_cli.errors import VLMError, VLMUnreachableError
from agentiqa_cli.vlm.base import VLM, ImagePart, Message, VLMRequest
from agentiqa_cli.vlm.http import OpenAIHTTPVLM, normalize_base_url
from tests.conftest import LEVELS, level_schema

KEY = "sk-test-SECRET-1234567890"
SCHEMA = level_schema(max_answer=40)


def completion(
    content: str = '{"level":"good","answer":"sharp"}',
    finish: str = "stop",
    logprobs: Any = None,
    model: str = "m",
) -> dict[str, Any]:
    return {
        "id": "x",
        "object": "chat.completion",
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": content},
                "logprobs": logprobs,
                "finish_reason": finish,
            }
        ],
        "usage": {"prompt_tokens": 11, "completion_tokens": 7, "total_tokens": 18},
    }


@dataclass
class Reply:
    status: int = 200
    body: Any = field(default_factory=completion)
    delay: float = 0.0
    headers: dict[str, str] = field(default_factory=dict)
    raw: bytes | None = None  # sent as is instead of JSON


class ScriptedServer:
    """Answers each request with the next queued ``Reply`` (the last one repeats)."""

    def __init__(self) -> None:
        self.replies: deque[Reply] = deque()
        self.requests: list[dict[str, Any]] = []
        self.in_flight = 0
        self.max_in_flight = 0
        self._lock = threading.Lock()
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:
                pass

            def _serve(self) -> None:
                n = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(n) if n else b""
                with outer._lock:
                    outer.requests.append(
                        {
                            "method": self.command,
                            "path": self.path,
                            "headers": dict(self.headers),
                            "body": json.loads(raw) if raw else None,
                        }
                    )
                    reply = outer.replies.popleft() if len(outer.replies) > 1 else outer.replies[0]
                    outer.in_flight += 1
                    outer.max_in_flight = max(outer.max_in_flight, outer.in_flight)
                try:
                    time.sleep(reply.delay)
                    data = reply.raw if reply.raw is not None else json.dumps(reply.body).encode()
                    self.send_response(reply.status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    for k, v in reply.headers.items():
                        self.send_header(k, v)
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (timeout test)
                finally:
                    with outer._lock:
                        outer.in_flight -= 1

            do_GET = _serve
            do_POST = _serve

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        self.thread = threading.Thread(
            target=self.httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )

    def queue(self, *replies: Reply) -> ScriptedServer:
        self.replies.extend(replies)
        return self

    def __enter__(self) -> ScriptedServer:
        """Serving until the block ends."""
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def server() -> Iterator[ScriptedServer]:
    with ScriptedServer() as s:
        yield s


def backend(url: str, **kw: Any) -> OpenAIHTTPVLM:
    opts: dict[str, Any] = {
        "model": "m",
        "api_key": KEY,
        "retries": 2,
        "backoff": 0.01,
        "backoff_max": 0.05,
        "timeout": 5.0,
    }
    opts.update(kw)
    return OpenAIHTTPVLM(url, **opts)


def run(vlm: OpenAIHTTPVLM, coro_fn: Any) -> Any:
    async def go() -> Any:
        try:
            return await coro_fn(vlm)
        finally:
            await vlm.aclose()

    return asyncio.run(go())


def request(**kw: Any) -> VLMRequest:
    opts: dict[str, Any] = {
        "role": "summarize",
        "messages": [
            Message(role="system", text="Be brief."),
            Message(role="user", text="Rate it."),
        ],
    }
    opts.update(kw)
    return VLMRequest(**opts)


def all_keys(obj: Any) -> set[str]:
    if isinstance(obj, dict):
        return set(obj) | {k for v in obj.values() for k in all_keys(v)}
    if isinstance(obj, list):
        return {k for v in obj for k in all_keys(v)}
    return set()


def test_backend_satisfies_the_protocol() -> None:
    vlm = OpenAIHTTPVLM("http://127.0.0.1:9/v1", model="m")
    assert isinstance(vlm, VLM)
    asyncio.run(vlm.aclose())


def test_json_schema_request_body_and_reply(server: ScriptedServer) -> None:
    server.queue(Reply())
    reply = run(backend(server.url), lambda v: v.complete(request(json_schema=SCHEMA)))
    (req,) = server.requests
    assert req["path"] == "/v1/chat/completions"
    assert req["headers"]["Authorization"] == f"Bearer {KEY}"
    body = req["body"]
    assert body["model"] == "m"
    assert body["response_format"] == {
        "type": "json_schema",
        "json_schema": {"name": "summarize", "schema": SCHEMA, "strict": True},
    }
    assert body["max_completion_tokens"] == 512 and body["temperature"] == 0.0
    assert "logprobs" not in body and "structured_outputs" not in body
    assert not any(k.startswith("guided_") for k in all_keys(body))
    assert body["messages"][0] == {"role": "system", "content": "Be brief."}
    assert json.loads(reply.text) == {"level": "good", "answer": "sharp"}
    assert reply.usage.calls == 1
    assert (reply.usage.prompt_tokens, reply.usage.completion_tokens) == (11, 7)
    assert reply.finish_reason == "stop" and reply.model == "m" and reply.latency > 0


def test_schema_can_go_in_vllm_structured_outputs(server: ScriptedServer) -> None:
    server.queue(Reply())
    run(
        backend(server.url, schema_field="structured_outputs"),
        lambda v: v.complete(request(json_schema=SCHEMA)),
    )
    body = server.requests[0]["body"]
    assert body["structured_outputs"] == {"json": SCHEMA} and "response_format" not in body


def test_choices_with_top_logprobs(server: ScriptedServer) -> None:
    logprobs = {
        "content": [
            {
                "token": "good",
                "logprob": -0.5,
                "top_logprobs": [
                    {"token": "good", "logprob": -0.5},
                    {"token": "fair", "logprob": -1.5},
                    {"token": "<|im_start|>", "logprob": -9999.0},  # masked by the grammar
                ],
            },
            {"token": "<|im_end|>", "logprob": 0.0, "top_logprobs": []},
        ]
    }
    server.queue(Reply(body=completion("good", logprobs=logprobs)))
    req = request(choices=LEVELS, top_logprobs=5, max_tokens=8)
    reply = run(backend(server.url), lambda v: v.complete(req))
    body = server.requests[0]["body"]
    assert body["structured_outputs"] == {"choice": LEVELS}
    assert body["logprobs"] is True and body["top_logprobs"] == 5
    assert "response_format" not in body
    assert not any(k.startswith("guided_") for k in all_keys(body))
    assert reply.text == "good"
    assert reply.top_logprobs == [{"good": -0.5, "fair": -1.5}, {"<|im_end|>": 0.0}]
    assert reply.tokens == ["good", "<|im_end|>"]


def test_missing_logprobs_gives_none_not_an_error(server: ScriptedServer) -> None:
    server.queue(Reply(body=completion("fair", logprobs=None)))
    reply = run(backend(server.url), lambda v: v.complete(request(choices=LEVELS, top_logprobs=5)))
    assert reply.text == "fair" and reply.top_logprobs is None and reply.tokens is None


class _LevelAnswer(BaseModel):
    """A reply model for SCHEMA, as the roles validate replies into."""

    model_config = ConfigDict(extra="forbid")
    level: Literal["excellent", "good", "fair", "poor", "bad"]
    answer: str = Field(max_length=40)


def test_invalid_json_reply_is_rejected(server: ScriptedServer) -> None:
    server.queue(Reply(body=completion('{"level": "good", "answer": ')))
    reply = run(backend(server.url), lambda v: v.complete(request(json_schema=SCHEMA)))
    with pytest.raises(VLMError, match="not valid JSON"):
        parse_reply(reply, _LevelAnswer)


def test_json_breaking_the_schema_is_rejected() -> None:
    from agentiqa_cli.vlm.base import VLMReply

    with pytest.raises(VLMError, match="level"):
        parse_reply(VLMReply(text='{"level":"superb","answer":"x"}'), _LevelAnswer)


def test_truncated_constrained_reply_is_an_error(server: ScriptedServer) -> None:
    server.queue(Reply(body=completion('{"level":"go', finish="length")))
    reply = run(
        backend(server.url), lambda v: v.complete(request(json_schema=SCHEMA, max_tokens=5))
    )
    assert reply.truncated
    with pytest.raises(VLMError, match="finish_reason=length"):
        parse_reply(reply, ScoreReply)


def test_truncated_free_text_is_returned(server: ScriptedServer) -> None:
    server.queue(Reply(body=completion("The image is", finish="length")))
    reply = run(backend(server.url), lambda v: v.complete(request()))
    assert reply.finish_reason == "length" and reply.text == "The image is"


def test_500_then_ok_is_retried(server: ScriptedServer) -> None:
    server.queue(Reply(status=500, body={"error": {"message": "boom"}}), Reply())
    reply = run(backend(server.url), lambda v: v.complete(request(json_schema=SCHEMA)))
    assert len(server.requests) == 2 and reply.text.startswith("{")
    assert server.requests[0]["body"] == server.requests[1]["body"]


def test_429_honours_retry_after(server: ScriptedServer) -> None:
    server.queue(Reply(status=429, body={"error": "slow down"}, headers={"Retry-After": "0.2"}))
    server.queue(Reply())
    t0 = time.perf_counter()
    run(backend(server.url, backoff_max=1.0), lambda v: v.complete(request()))
    assert len(server.requests) == 2
    assert time.perf_counter() - t0 >= 0.2


def test_persistent_503_fails_after_bounded_attempts(server: ScriptedServer) -> None:
    server.queue(Reply(status=503, body={"message": "overloaded"}))
    with pytest.raises(VLMError, match=r"HTTP 503: overloaded \(3 attempts\)"):
        run(backend(server.url, retries=2), lambda v: v.complete(request()))
    assert len(server.requests) == 3


def test_4xx_is_not_retried_and_never_leaks_the_key(server: ScriptedServer) -> None:
    # A server that echoes the key back must not get it into our error message.
    server.queue(Reply(status=400, body={"error": {"message": f"bad request from {KEY}"}}))
    with pytest.raises(VLMError) as exc:
        run(backend(server.url), lambda v: v.complete(request()))
    assert len(server.requests) == 1
    assert "HTTP 400" in str(exc.value) and KEY not in str(exc.value) and "***" in str(exc.value)


def test_non_json_body_is_an_error(server: ScriptedServer) -> None:
    server.queue(Reply(raw=b"<html>proxy error</html>"))
    with pytest.raises(VLMError, match="non-JSON"):
        run(backend(server.url), lambda v: v.complete(request()))


def test_timeout_is_retried_then_reported(server: ScriptedServer) -> None:
    server.queue(Reply(delay=1.0))
    t0 = time.perf_counter()
    with pytest.raises(VLMError, match=r"no reply within 0.2 s \(2 attempts\)") as exc:
        run(backend(server.url, timeout=0.2, retries=1), lambda v: v.complete(request()))
    assert not isinstance(exc.value, VLMUnreachableError)
    assert len(server.requests) == 2
    assert time.perf_counter() - t0 < 3.0


def test_unreachable_server_fails_fast_with_one_clear_line() -> None:
    probe = ScriptedServer()  # bind, then close: a loopback port nobody listens on
    url = probe.url
    probe.httpd.server_close()
    t0 = time.perf_counter()
    with pytest.raises(VLMUnreachableError) as exc:
        run(backend(url, retries=2), lambda v: v.complete(request()))
    assert time.perf_counter() - t0 < 2.0
    msg = str(exc.value)
    assert msg.startswith(f"cannot reach VLM server at {url}: ") and "(3 attempts)" in msg
    assert "\n" not in msg and KEY not in msg


def test_check_lists_models_and_rejects_a_wrong_name(server: ScriptedServer) -> None:
    models = {"object": "list", "data": [{"id": "qwen-a"}, {"id": "qwen-b"}]}
    server.queue(Reply(body=models))
    with pytest.raises(VLMError, match=r"'nope' is not served .*available: qwen-a, qwen-b"):
        run(backend(server.url, model="nope"), lambda v: v.check())
    assert server.requests[0]["method"] == "GET" and server.requests[0]["path"] == "/v1/models"


def test_no_model_given_uses_the_only_served_one(server: ScriptedServer) -> None:
    server.queue(Reply(body={"data": [{"id": "only"}]}), Reply(body=completion(model="only")))
    vlm = backend(server.url, model=None)
    reply = run(vlm, lambda v: v.complete(request()))
    assert vlm.model == "only" and reply.model == "only"
    assert server.requests[1]["body"]["model"] == "only"


def test_image_is_sent_as_a_downscaled_data_url(server: ScriptedServer, tmp_path: Path) -> None:
    h, w = 600, 900
    pixels = np.zeros((h, w, 3), np.float32)
    pixels[:, : w // 2, 0] = 1.0  # left half red: survives downscaling
    from_pixels = ImagePart(sha256="a" * 64, path="mem.png", pixels=pixels)
    path = tmp_path / "disk.png"
    Image.fromarray((pixels * 255).astype(np.uint8)).save(path)
    from_path = ImagePart(sha256="b" * 64, path=str(path))
    server.queue(Reply())
    budget = 200 * 200
    for part in (from_pixels, from_path):
        msgs = [Message(role="user", text="How sharp?", images=[part])]
        run(
            backend(server.url, image_pixels=budget),
            lambda v, m=msgs: v.complete(request(messages=m)),
        )
    for req in server.requests:
        content = req["body"]["messages"][0]["content"]
        assert [c["type"] for c in content] == ["image_url", "text"]
        url = content[0]["image_url"]["url"]
        assert url.startswith("data:image/png;base64,")
        im = Image.open(io.BytesIO(base64.b64decode(url.split(",", 1)[1])))
        assert im.width * im.height <= budget and im.width < w
        assert abs(im.width / im.height - w / h) < 0.02
        arr = np.asarray(im.convert("RGB"))
        assert arr[:, : im.width // 4, 0].mean() > 250 and arr[:, -im.width // 4 :, 0].mean() < 5


def test_small_images_are_not_upscaled(server: ScriptedServer) -> None:
    server.queue(Reply())
    part = ImagePart(sha256="c" * 64, path="x", pixels=np.full((20, 30, 3), 0.5, np.float32))
    msgs = [Message(role="user", text="?", images=[part])]
    run(backend(server.url), lambda v: v.complete(request(messages=msgs)))
    url = server.requests[0]["body"]["messages"][0]["content"][0]["image_url"]["url"]
    assert Image.open(io.BytesIO(base64.b64decode(url.split(",", 1)[1]))).size == (30, 20)


def test_concurrency_limit_is_respected(server: ScriptedServer) -> None:
    server.queue(Reply(delay=0.15))

    async def many(v: OpenAIHTTPVLM) -> list[Any]:
        return await asyncio.gather(*(v.complete(request()) for _ in range(6)))

    replies = run(backend(server.url, concurrency=2), many)
    assert len(replies) == 6 and len(server.requests) == 6
    assert server.max_in_flight == 2


def test_the_key_never_reaches_returned_objects(server: ScriptedServer) -> None:
    server.queue(Reply())
    vlm = backend(server.url)
    assert KEY not in repr(vlm)
    reply = run(vlm, lambda v: v.complete(request(json_schema=SCHEMA)))
    assert KEY not in reply.model_dump_json()
    assert KEY not in json.dumps(vlm.build_body(request(json_schema=SCHEMA)))


def test_schema_and_choices_together_is_a_programming_error() -> None:
    vlm = OpenAIHTTPVLM("http://127.0.0.1:9", model="m")
    with pytest.raises(ValueError):
        vlm.build_body(request(json_schema=SCHEMA, choices=LEVELS))
    asyncio.run(vlm.aclose())


@pytest.mark.parametrize(
    ("given", "expected"),
    [
        ("http://h:8000", "http://h:8000/v1"),
        ("http://h:8000/", "http://h:8000/v1"),
        ("http://h:8000/v1/", "http://h:8000/v1"),
        ("https://h/v1/chat/completions", "https://h/v1"),
        ("http://h/openai/v1", "http://h/openai/v1"),
    ],
)
def test_base_url_is_normalized(given: str, expected: str) -> None:
    assert normalize_base_url(given) == expected


def test_a_url_without_scheme_is_a_clear_error() -> None:
    with pytest.raises(VLMError, match="http://HOST:PORT/v1"):
        normalize_base_url("localhost:8000")
