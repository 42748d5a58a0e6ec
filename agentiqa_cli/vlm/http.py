"""OpenAI-compatible chat-completions backend, aimed at a vLLM server.

Structured output: a JSON schema goes in the standard ``response_format`` (``json_schema``),
which vLLM turns into its own ``structured_outputs.json``; a closed set of answers goes in
vLLM's ``structured_outputs.choice``. The removed ``guided_*`` fields are never sent: current
vLLM ignores them silently, which would leave generation unconstrained.
"""

from __future__ import annotations

import asyncio
import base64
import json
import math
import random
import sys
import time
from collections.abc import Awaitable
from typing import Any, Literal, TypeVar
from urllib.parse import unquote, urlsplit, urlunsplit

import httpx

from agentiqa_cli.config import redact_text, redact_url
from agentiqa_cli.errors import VLMError, VLMUnreachableError
from agentiqa_cli.records import Usage
from agentiqa_cli.vlm.base import Message, VLMReply, VLMRequest
from agentiqa_cli.vlm.images import ImageFormat, data_url

SchemaField = Literal["response_format", "structured_outputs"]
T = TypeVar("T")

# Failures worth another attempt: the server may be starting, overloaded or restarting.
_RETRY_STATUS = frozenset({408, 409, 425, 429, 500, 502, 503, 504})
_CONNECT_ERRORS = (httpx.ConnectError, httpx.ConnectTimeout)
_TRANSPORT_ERRORS = (httpx.ReadError, httpx.WriteError, httpx.RemoteProtocolError)
_TIMEOUTS = (httpx.ReadTimeout, httpx.WriteTimeout, httpx.PoolTimeout)
_MASKED = -9999.0  # vLLM's logprob for a token that structured output forbids
# A chat completion with per-token log-probabilities is kilobytes; a bigger body is refused
# as it arrives, before it costs memory.
MAX_REPLY_BYTES = 16 * 1024 * 1024


def normalize_base_url(url: str) -> str:
    """``http://h:8000`` → ``http://h:8000/v1``; a pasted ``…/chat/completions`` is trimmed.
    A query string (``?api-version=…``) is kept; each request sends it after its path."""
    parts = urlsplit(url.strip())
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise VLMError(f"VLM URL must look like http://HOST:PORT/v1, got {redact_url(url)!r}")
    path = parts.path.rstrip("/")
    for suffix in ("/chat/completions", "/completions", "/models"):
        if path.endswith(suffix):
            path = path[: -len(suffix)]
    return urlunsplit((parts.scheme, parts.netloc, path or "/v1", parts.query, ""))


def url_secrets(url: str) -> list[str]:
    """The parts of a URL that are credentials: user, password (also as the Basic
    authorization httpx sends for them) and query values."""
    parts = urlsplit(url)
    found = [parts.username or "", parts.password or ""]
    if parts.username or parts.password:
        pair = f"{unquote(parts.username or '')}:{unquote(parts.password or '')}"
        found.append(base64.b64encode(pair.encode()).decode())
    for pair in parts.query.split("&"):
        raw = pair.partition("=")[2]
        found += [raw, unquote(raw)]
    # short values would mask ordinary words in messages; the whole URL is replaced anyway
    return sorted({x for x in found if len(x) >= 4}, key=len, reverse=True)


class _Retryable(Exception):
    """One failed attempt that may succeed if repeated."""

    def __init__(self, kind: Literal["connect", "timeout", "transport", "status"], detail: str):
        super().__init__(detail)
        self.kind = kind
        self.detail = detail
        self.retry_after: float | None = None


class OpenAIHTTPVLM:
    """``VLM`` over HTTP: async, bounded concurrency, timeouts, retries with backoff."""

    name = "openai-http"
    supports_schema = True
    supports_logprobs = True

    def __init__(
        self,
        base_url: str,
        model: str | None = None,
        *,
        api_key: str | None = None,
        concurrency: int = 4,
        timeout: float = 120.0,
        connect_timeout: float = 5.0,
        retries: int = 3,
        backoff: float = 0.5,
        backoff_max: float = 8.0,
        image_pixels: int = 448 * 448,
        image_format: ImageFormat = "PNG",
        schema_field: SchemaField = "response_format",
        transport: httpx.AsyncBaseTransport | None = None,
        max_reply_bytes: int = MAX_REPLY_BYTES,
    ) -> None:
        if concurrency < 1:
            raise ValueError("concurrency must be ≥ 1")
        self.base_url = normalize_base_url(base_url)  # with credentials: requests only
        self.shown_url = redact_url(self.base_url)  # for every message
        self._secrets = url_secrets(self.base_url)
        self.model = model
        self.retries = max(0, retries)
        self.backoff = backoff
        self.backoff_max = backoff_max
        self.image_pixels = image_pixels
        self.image_format: ImageFormat = image_format
        self.schema_field: SchemaField = schema_field
        self.timeout = timeout  # the whole of one attempt: connect, send, receive
        self.max_reply_bytes = max_reply_bytes
        self._api_key = api_key or None
        self._sem = asyncio.Semaphore(concurrency)
        self._model_lock = asyncio.Lock()
        self._rng = random.Random()
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._client = httpx.AsyncClient(
            timeout=httpx.Timeout(timeout, connect=connect_timeout),
            headers=headers,
            limits=httpx.Limits(max_connections=concurrency, max_keepalive_connections=concurrency),
            transport=transport,
        )

    def __repr__(self) -> str:  # never shows the key
        return f"OpenAIHTTPVLM({self.shown_url!r}, model={self.model!r})"

    async def aclose(self) -> None:
        await self._client.aclose()

    # -- public calls ----------------------------------------------------------------------

    async def check(self) -> None:
        """Fail clearly if our model is not served; with no model configured and exactly
        one served, that one is used."""
        await self.served_models()

    async def served_models(self) -> list[str]:
        """The models the server serves (checked against ours, see ``check``)."""
        data = await self._send("GET", "/models", None)
        served = [str(m.get("id")) for m in data.get("data", []) if isinstance(m, dict)]
        if self.model is None:
            if len(served) != 1:
                raise VLMError(
                    f"VLM server at {self.shown_url} serves {len(served)} models "
                    f"({', '.join(served) or 'none'}); choose one with --model"
                )
            self.model = served[0]
        elif self.model not in served:
            raise VLMError(
                f"model {self.model!r} is not served at {self.shown_url}; "
                f"available: {', '.join(served) or 'none'}"
            )
        return served

    async def complete(self, request: VLMRequest) -> VLMReply:
        if self.model is None:
            async with self._model_lock:
                if self.model is None:
                    await self.served_models()
        async with self._sem:
            # Encoding images is CPU work: keep it off the event loop (the tool stage runs
            # there too) and inside the semaphore so at most `concurrency` bodies exist at once.
            if any(m.images for m in request.messages):
                body = await asyncio.to_thread(self.build_body, request)
            else:
                body = self.build_body(request)
            t0 = time.perf_counter()
            data = await self._send("POST", "/chat/completions", body)
            latency = time.perf_counter() - t0
        return self._reply(request, data, latency)

    # -- request and reply -----------------------------------------------------------------

    def build_body(self, request: VLMRequest) -> dict[str, Any]:
        """The JSON body for one request (public so tests and traces can inspect it)."""
        if request.json_schema is not None and request.choices:
            raise ValueError("a request constrains by json_schema or by choices, not both")
        body: dict[str, Any] = {
            "model": self.model,
            "messages": [self._message(m) for m in request.messages],
            # vLLM deprecates max_tokens for chat in favour of the OpenAI name.
            "max_completion_tokens": request.max_tokens,
            "temperature": request.temperature,
        }
        if request.choices:
            body["structured_outputs"] = {"choice": list(request.choices)}
        elif request.json_schema is not None:
            if self.schema_field == "structured_outputs":
                body["structured_outputs"] = {"json": request.json_schema}
            else:
                body["response_format"] = {
                    "type": "json_schema",
                    "json_schema": {
                        "name": _schema_name(request.role),
                        "schema": request.json_schema,
                        "strict": True,
                    },
                }
        if request.top_logprobs > 0:
            body["logprobs"] = True
            body["top_logprobs"] = request.top_logprobs
        return body

    def _message(self, m: Message) -> dict[str, Any]:
        if not m.images:
            return {"role": m.role, "content": m.text}
        # Images before the text: the order Qwen-VL-style chat templates were trained on.
        content: list[dict[str, Any]] = [
            {
                "type": "image_url",
                "image_url": {"url": data_url(img, self.image_pixels, self.image_format)},
            }
            for img in m.images
        ]
        content.append({"type": "text", "text": m.text})
        return {"role": m.role, "content": content}

    def _reply(self, request: VLMRequest, data: dict[str, Any], latency: float) -> VLMReply:
        """The reply, validated as data: a malformed one is a VLMError (which
        ``--vlm-fallback rules`` takes over), never an internal error."""
        try:
            choice = data["choices"][0]
            text = choice["message"].get("content") or ""
            finish = choice.get("finish_reason")  # "length": cut short (VLMReply.truncated)
            if not isinstance(text, str) or not isinstance(finish, str | None):
                raise TypeError
        except (KeyError, IndexError, TypeError, AttributeError):
            raise VLMError(
                self._redact(f"VLM server at {self.shown_url} sent a malformed reply")
            ) from None
        usage = data.get("usage")
        usage = usage if isinstance(usage, dict) else {}
        tokens, top = _logprobs(choice.get("logprobs")) if request.top_logprobs else (None, None)

        def count(name: str) -> int:
            # a count that is not a non-negative integer is ignored, not worth failing for
            v = usage.get(name)
            return v if isinstance(v, int) and not isinstance(v, bool) and v >= 0 else 0

        return VLMReply(
            text=self._without_secrets(text),
            tokens=tokens,
            top_logprobs=top,
            usage=Usage(
                calls=1,
                prompt_tokens=count("prompt_tokens"),
                completion_tokens=count("completion_tokens"),
            ),
            latency=latency,
            finish_reason=finish,
            model=str(data.get("model") or self.model or "")[:200],
        )

    # -- transport with retries ------------------------------------------------------------

    async def _send(self, method: str, path: str, body: dict[str, Any] | None) -> dict[str, Any]:
        url = self._url(path)
        attempts = self.retries + 1
        last: _Retryable | None = None
        for attempt in range(attempts):
            if attempt:
                await asyncio.sleep(self._delay(attempt, last))
            try:
                return await self._attempt(method, url, body)
            except _Retryable as e:
                last = e
        assert last is not None
        raise self._final_error(last, attempts) from None

    async def _attempt(self, method: str, url: str, body: dict[str, Any] | None) -> dict[str, Any]:
        try:
            # httpx's timeout is per read: a server that trickles a byte a second would
            # never end. The deadline covers the whole attempt.
            resp, content = await _within(self.timeout, self._exchange(method, url, body))
        except _CONNECT_ERRORS as e:
            raise _Retryable("connect", _describe(e)) from None
        except (*_TIMEOUTS, asyncio.TimeoutError):
            raise _Retryable("timeout", f"no reply within {self.timeout:g} s") from None
        except _TRANSPORT_ERRORS as e:
            raise _Retryable("transport", _describe(e)) from None
        except httpx.HTTPError as e:  # bad URL scheme, proxy, protocol: not worth retrying
            raise VLMError(self._redact(f"VLM request to {url} failed: {_describe(e)}")) from None
        if resp.status_code in _RETRY_STATUS or resp.status_code >= 500:
            err = _Retryable("status", f"HTTP {resp.status_code}: {_error_text(resp, content)}")
            err.retry_after = _retry_after(resp)
            raise err
        if resp.status_code >= 400:
            raise VLMError(
                self._redact(
                    "VLM server rejected the request: "
                    f"HTTP {resp.status_code}: {_error_text(resp, content)}"
                )
            )
        try:
            data = json.loads(content)
        except (ValueError, RecursionError):  # (nested 100 000 deep: still not a reply)
            raise VLMError(f"VLM server at {self.shown_url} sent a non-JSON reply") from None
        if not isinstance(data, dict):
            raise VLMError(f"VLM server at {self.shown_url} sent a malformed reply")
        return data

    async def _exchange(
        self, method: str, url: str, body: dict[str, Any] | None
    ) -> tuple[httpx.Response, bytes]:
        """The response and its body, read up to ``max_reply_bytes`` (VLMError beyond)."""
        async with self._client.stream(method, url, json=body) as resp:
            declared = resp.headers.get("content-length", "")
            if declared.isdigit() and int(declared) > self.max_reply_bytes:
                raise self._too_big()
            chunks, size = [], 0
            async for chunk in resp.aiter_bytes():
                size += len(chunk)
                if size > self.max_reply_bytes:
                    raise self._too_big()
                chunks.append(chunk)
        return resp, b"".join(chunks)

    def _too_big(self) -> VLMError:
        return VLMError(
            f"VLM server at {self.shown_url} sent a reply over "
            f"{self.max_reply_bytes // (1024 * 1024)} MiB; refused"
        )

    def _delay(self, attempt: int, last: _Retryable | None) -> float:
        """Exponential backoff with jitter, so concurrent clients don't retry in lockstep."""
        base = min(self.backoff_max, self.backoff * 2 ** (attempt - 1))
        delay: float = base * self._rng.uniform(0.5, 1.0)
        if last is not None and last.retry_after is not None:
            delay = max(delay, min(self.backoff_max, last.retry_after))
        return delay

    def _final_error(self, last: _Retryable, attempts: int) -> VLMError:
        tries = f"{attempts} attempt{'s' if attempts > 1 else ''}"
        if last.kind == "connect":
            return VLMUnreachableError(
                self._redact(
                    f"cannot reach VLM server at {self.shown_url}: {last.detail} ({tries})"
                )
            )
        if last.kind == "timeout":
            return VLMError(
                self._redact(f"VLM server at {self.shown_url}: {last.detail} ({tries})")
            )
        return VLMError(self._redact(f"VLM server at {self.shown_url}: {last.detail} ({tries})"))

    def _url(self, path: str) -> str:
        """The endpoint ``path`` under the base URL, its query string kept at the end."""
        parts = urlsplit(self.base_url)
        return urlunsplit(parts._replace(path=parts.path + path))

    def _redact(self, text: str) -> str:
        """No key, password, user or query value in any message (servers echo them), nor
        anything shaped like a credential (an Authorization header, an api-key field)."""
        text = text.replace(self.base_url, self.shown_url)
        return redact_text(text, [self._api_key or "", *self._secrets])

    def _without_secrets(self, text: str) -> str:
        """A reply's own text with our credentials (exact strings only) taken out: a
        server may echo the request into it, and it reaches the CSV and the trace."""
        for secret in [self._api_key or "", *self._secrets]:
            if secret and secret in text:
                text = text.replace(secret, "***")
        return text


async def _within(seconds: float, aw: Awaitable[T]) -> T:
    """``aw`` under a deadline (TimeoutError past it). ``asyncio.timeout`` where there is
    one: before Python 3.12, ``wait_for`` can swallow a cancellation (Ctrl-C) that arrives
    as the awaited call completes."""
    if sys.version_info >= (3, 11):
        async with asyncio.timeout(seconds):
            return await aw
    return await asyncio.wait_for(aw, seconds)


def _schema_name(role: str) -> str:
    # OpenAI restricts the name to [a-zA-Z0-9_-]{1,64}.
    cleaned = "".join(c if c.isalnum() or c in "_-" else "_" for c in role)[:64]
    return cleaned or "reply"


def _logprobs(logprobs: Any) -> tuple[list[str] | None, list[dict[str, float]] | None]:
    """OpenAI ``logprobs.content`` → (generated tokens, one {token: logprob} per position).

    The sampled token is always in its position's dict. Alternatives vLLM reports as -9999
    (tokens the output grammar masked out there) are dropped: they are not probabilities.
    """
    if not isinstance(logprobs, dict) or not isinstance(logprobs.get("content"), list):
        return None, None
    tokens: list[str] = []
    tops: list[dict[str, float]] = []
    for pos in logprobs["content"]:
        if not isinstance(pos, dict) or "token" not in pos:
            return None, None
        d: dict[str, float] = {}
        alts = pos.get("top_logprobs")
        for alt in alts if isinstance(alts, list) else []:
            if isinstance(alt, dict) and "token" in alt and alt.get("logprob") is not None:
                lp = _logprob(alt["logprob"])
                if not lp <= _MASKED:  # (NaN, an invalid value, is kept: see _logprob)
                    d.setdefault(str(alt["token"]), lp)
        if pos.get("logprob") is not None:
            d.setdefault(str(pos["token"]), _logprob(pos["logprob"]))
        tokens.append(str(pos["token"]))
        tops.append(d)
    return (tokens, tops) if tokens else (None, None)


def _logprob(value: object) -> float:
    """A log-probability as data: a finite number ≤ 0, else NaN, which fusion treats as
    missing. A value above 709 would overflow ``exp``; a string, a boolean or a positive
    number is no log-probability at all."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return math.nan
    lp = float(value)
    return lp if math.isfinite(lp) and lp <= 0.0 else math.nan


def _describe(e: Exception) -> str:
    text = str(e).strip()
    return text if text else type(e).__name__


def _error_text(resp: httpx.Response, content: bytes, limit: int = 300) -> str:
    """The server's own error message (OpenAI or vLLM shape), else the start of the body."""
    try:
        data = json.loads(content)
    except (ValueError, RecursionError):
        data = None
    if isinstance(data, dict):
        err = data.get("error")
        msg = err.get("message") if isinstance(err, dict) else data.get("message") or err
        if msg:
            return str(msg)[:limit]
    text = content[: limit * 4].decode("utf-8", errors="replace")
    return (text or resp.reason_phrase or "").strip()[:limit]


def _retry_after(resp: httpx.Response) -> float | None:
    value = resp.headers.get("retry-after")
    try:
        return float(value) if value is not None else None
    except ValueError:
        return None  # an HTTP date: rare from model servers; plain backoff is fine
