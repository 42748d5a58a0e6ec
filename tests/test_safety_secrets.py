"""Credentials never reach anything written: a server that echoes the request (its
Authorization header, Basic or Bearer, the URL's user:password and query) into an error or
into its reply leaves no secret in the message, the CSV, the trace or stderr."""

from __future__ import annotations

import base64
import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from agentiqa_cli.errors import VLMError
from tests.conftest import natural_like, save_rgb
from tests.test_safety_inputs import run
from tests.test_vlm_http_faults import backend, completion, request
from tests.test_vlm_http_faults import run as call

USER, PASSWORD, KEY, TOKEN = "alice", "s3cr3t-pa55", "sk-live-KEY-0987654321", "q-TOKEN-4242"
BASIC = base64.b64encode(f"{USER}:{PASSWORD}".encode()).decode()
SECRETS = [PASSWORD, KEY, TOKEN, BASIC]


class Echo:
    """Answers with the request's headers and path quoted: as an HTTP 400 error, or (mode
    "reply") inside a well-formed completion's text."""

    def __init__(self, mode: str) -> None:
        outer = self
        self.mode = mode

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:
                pass

            def _serve(self) -> None:
                n = int(self.headers.get("Content-Length") or 0)
                self.rfile.read(n)
                echoed = f"Authorization: {self.headers.get('Authorization')} {self.path}"
                if self.path.split("?")[0].endswith("/models"):
                    status, body = 200, {"object": "list", "data": [{"id": "m"}]}
                elif outer.mode == "reply":
                    status, body = 200, completion(json.dumps({"echo": echoed}))
                else:
                    status, body = 400, {"error": {"message": f"bad request: {echoed}"}}
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            do_GET = _serve
            do_POST = _serve

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        port = self.httpd.server_address[1]
        self.url = f"http://{USER}:{PASSWORD}@127.0.0.1:{port}/v1?token={TOKEN}"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def echo_error() -> Iterator[Echo]:
    s = Echo("error")
    yield s
    s.close()


def _clean(text: str) -> None:
    leaked = [s for s in SECRETS if s in text]
    assert not leaked, f"{leaked} in {text[:300]!r}"


def test_an_echoed_basic_authorization_never_reaches_the_message(echo_error: Echo) -> None:
    with pytest.raises(VLMError) as exc:
        call(backend(echo_error.url, api_key=None), lambda v: v.complete(request()))
    assert "bad request" in str(exc.value)
    _clean(str(exc.value))


def test_an_echoed_bearer_key_never_reaches_the_message(echo_error: Echo) -> None:
    with pytest.raises(VLMError) as exc:
        call(backend(echo_error.url, api_key=KEY), lambda v: v.complete(request()))
    _clean(str(exc.value))


def test_a_reply_quoting_the_request_carries_no_secret() -> None:
    s = Echo("reply")
    try:
        reply = call(backend(s.url, api_key=KEY), lambda v: v.complete(request()))
    finally:
        s.close()
    assert "echo" in reply.text
    _clean(reply.text)


def test_assess_against_an_echoing_server_writes_no_secret(tmp_path: Path) -> None:
    s = Echo("error")
    try:
        save_rgb(tmp_path / "a.png", natural_like(64, 80))
        r = run("assess", "a.png", "--vlm", s.url, "--model", "m", "-t", "piqe", "--json",
                "-o", "out.csv", "-j", "1", cwd=tmp_path, AGENTIQA_API_KEY=KEY)  # fmt: skip
    finally:
        s.close()
    assert r.returncode == 3, r.stderr
    for text in (r.stdout, r.stderr, *(p.read_text() for p in tmp_path.glob("*.*sv")),
                 *(p.read_text() for p in tmp_path.glob("*.jsonl"))):  # fmt: skip
        _clean(text)


@pytest.mark.parametrize(
    ("text", "gone"),
    [
        ("Authorization: Basic YWxpY2U6czNjcjN0", "YWxpY2U6czNjcjN0"),
        ("header Authorization: Bearer sk-abcdef123456", "sk-abcdef123456"),
        ('{"api_key": "abc123456789"}', "abc123456789"),
        ("x-api-key=abcd1234efgh", "abcd1234efgh"),
        ("see https://bob:hunter22@example.com/v1", "hunter22"),
        ("GET /v1/models?api-version=2024&key=zzzz9999", "zzzz9999"),
    ],
)
def test_credential_shapes_are_redacted(text: str, gone: str) -> None:
    from agentiqa_cli.config import redact_text

    out = redact_text(text)
    assert gone not in out and "***" in out
