"""A VLM reply is data to validate: log-probabilities finite and ≤ 0 or missing, usage
counts non-negative integers or ignored, a malformed reply a VLM error the rules fallback
takes over, an ok row always scored in [1, 5], no crop below the smallest readable image."""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agentiqa_cli.errors import VLMError
from agentiqa_cli.vlm.base import VLMReply
from tests.conftest import natural_like, save_rgb
from tests.test_safety_inputs import rows, run
from tests.test_vlm_http_faults import LEVELS, Reply, ScriptedServer, backend, completion, request
from tests.test_vlm_http_faults import run as call

MODELS = Reply(body={"object": "list", "data": [{"id": "m", "object": "model"}]})


@pytest.fixture
def server() -> Iterator[ScriptedServer]:
    with ScriptedServer() as s:
        yield s


def _level_reply(lp: str) -> bytes:
    logprobs = {"content": [{"token": "good", "logprob": "LP",
                             "top_logprobs": [{"token": "good", "logprob": "LP"},
                                              {"token": "fair", "logprob": -1.5}]}]}  # fmt: skip
    return json.dumps(completion("good", logprobs=logprobs)).replace('"LP"', lp).encode()


@pytest.mark.parametrize("lp", ["800", "710.5", "0.5", '"abc"', "NaN", "Infinity", "true"])
def test_a_logprob_that_is_not_finite_and_at_most_0_is_missing(
    server: ScriptedServer, lp: str
) -> None:
    from agentiqa_cli.agent.fusion import level_logprobs, nonfinite_note

    server.queue(Reply(raw=_level_reply(lp)))
    reply = call(backend(server.url), lambda v: v.complete(request(choices=LEVELS, top_logprobs=5)))
    (top,) = reply.top_logprobs
    assert math.isnan(top["good"]) and top["fair"] == -1.5
    assert level_logprobs(reply) is None  # the level position is missing: no OverflowError
    assert "treated as missing" in (nonfinite_note(reply) or "")


def test_every_backends_reply_drops_bogus_logprobs() -> None:
    reply = VLMReply(text="good", top_logprobs=[{"good": 800.0, "fair": 0.5, "bad": -2.0}])
    (top,) = reply.top_logprobs or [{}]
    assert math.isnan(top["good"]) and math.isnan(top["fair"]) and top["bad"] == -2.0


@pytest.mark.parametrize(
    "usage",
    ["[1, 2]", "Infinity", '{"prompt_tokens": -5, "completion_tokens": 2.5}',
     '{"prompt_tokens": "12", "completion_tokens": 1e400}', '{"prompt_tokens": true}'],
)  # fmt: skip
def test_usage_that_is_not_non_negative_integers_is_ignored(
    server: ScriptedServer, usage: str
) -> None:
    body = completion()
    body["usage"] = "USAGE"
    server.queue(Reply(raw=json.dumps(body).replace('"USAGE"', usage).encode()))
    reply = call(backend(server.url), lambda v: v.complete(request()))
    assert reply.usage.calls == 1
    assert reply.usage.prompt_tokens == 0 and reply.usage.completion_tokens == 0


@pytest.mark.parametrize(
    "body",
    [
        {"choices": ["x"]},
        {"choices": [{"message": {"content": 5}}]},
        {"choices": [{"message": {"content": ["a"]}, "finish_reason": "stop"}]},
        {"choices": [{"message": {"content": "ok"}, "finish_reason": 3}]},
        {"choices": {"0": 1}},
    ],
)
def test_a_malformed_reply_is_a_vlm_error(server: ScriptedServer, body: dict[str, Any]) -> None:
    server.queue(Reply(body=body))
    with pytest.raises(VLMError, match="malformed"):
        call(backend(server.url), lambda v: v.complete(request()))


def _assess(tmp_path: Path, server: ScriptedServer, *extra: str) -> dict[str, str]:
    save_rgb(tmp_path / "a.png", natural_like(64, 80))
    with server:
        r = run("assess", "a.png", "--vlm", server.url, "--model", "m", "-t", "piqe",
                "-o", "out.csv", "-j", "1", *extra, cwd=tmp_path)  # fmt: skip
    (row,) = rows(tmp_path / "out.csv")
    row["_code"] = str(r.returncode)
    return row


def test_a_huge_logprob_end_to_end_gives_an_ok_row_not_an_overflow(tmp_path: Path) -> None:
    from tests.test_agent import EXAMINE_NOISE, PLAN_GLOBAL, SELECT_NOISE

    summary = '{"level":"excellent","answer":"fine","reasoning":"r","sufficient":true}'
    tokens = ['{"', "level", '":"', "excellent", '","', "answer", '":"', "fine", '"}']
    content: list[dict[str, Any]] = [{"token": t, "logprob": -0.01, "top_logprobs": []}
                                     for t in tokens]  # fmt: skip
    content[3] = {"token": "excellent", "logprob": 800.0,
                  "top_logprobs": [{"token": "excellent", "logprob": 800.0},
                                   {"token": "good", "logprob": 750.0}]}  # fmt: skip
    server = ScriptedServer()
    server.queue(MODELS, Reply(body=completion(json.dumps(PLAN_GLOBAL))),
                 Reply(body=completion(json.dumps(EXAMINE_NOISE))),
                 Reply(body=completion(json.dumps(SELECT_NOISE))),
                 Reply(body=completion(summary, logprobs={"content": content})))  # fmt: skip
    row = _assess(tmp_path, server)
    assert row["_code"] == "0" and row["status"] == "ok", row
    assert 1.0 <= float(row["score"]) <= 5.0


def test_a_malformed_reply_is_taken_over_by_the_rules_fallback(tmp_path: Path) -> None:
    server = ScriptedServer()
    server.queue(MODELS, Reply(body={"choices": [{"message": {"content": 5}}]}))
    row = _assess(tmp_path, server, "--vlm-fallback", "rules")
    assert row["_code"] == "0" and row["status"] == "ok", row
    assert 1.0 <= float(row["score"]) <= 5.0


def test_an_ok_row_always_has_a_score(tmp_path: Path) -> None:
    """The VLM plans full-reference without a reference: nothing is measured; the summary
    carries no log-probabilities. An error row, not `ok` with an empty score."""
    from tests.test_agent import PLAN_GLOBAL

    off = dict.fromkeys(PLAN_GLOBAL["plan"], False)  # type: ignore[arg-type]
    plan = {**PLAN_GLOBAL, "reference_mode": "Full-Reference", "plan": off}
    summary = '{"level":"good","answer":"fine","reasoning":"r","sufficient":true}'
    server = ScriptedServer()
    server.queue(MODELS, Reply(body=completion(json.dumps(plan))),
                 Reply(body=completion(summary)))  # fmt: skip
    row = _assess(tmp_path, server, "--no-evidence")
    assert row["status"] == "error" and row["score"] == "" and row["_code"] == "3", row
    assert "no score" in row["error"]


def test_a_crop_below_16_px_is_refused() -> None:
    import numpy as np

    from agentiqa_cli.imperfect.fixes import crop

    x = np.zeros((160, 160, 3), np.float32)
    with pytest.raises(ValueError, match="below 16 px"):
        crop(x, 0, 0, 8, 8)
    assert crop(x, 0, 0, 16, 16).shape == (16, 16, 3)


# -- deadlines and bounds ----------------------------------------------------------------------
class _Trickle:
    """A server on 127.0.0.1 that answers with headers, then one body byte a second."""

    def __init__(self, chunked_size: int = 0) -> None:
        import socket
        import threading

        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(8)
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}/v1"
        self.chunked_size = chunked_size  # > 0: send that many bytes at once instead
        self.stop = threading.Event()
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        import threading

        while not self.stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            threading.Thread(target=self._answer, args=(conn,), daemon=True).start()

    def _answer(self, conn: Any) -> None:
        import time

        try:
            conn.recv(65536)
            if self.chunked_size:
                body = b'{"x":"' + b"a" * self.chunked_size + b'"}'
                conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                             b"Connection: close\r\n\r\n" + body)  # fmt: skip
                return
            conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                         b"Content-Length: 100000\r\n\r\n")  # fmt: skip
            while not self.stop.is_set():
                conn.sendall(b" ")
                time.sleep(1.0)
        except OSError:
            pass
        finally:
            conn.close()

    def close(self) -> None:
        self.stop.set()
        self.sock.close()


@pytest.mark.parametrize("retries", [0, 1])
def test_a_trickling_server_gives_an_error_within_the_deadline(retries: int) -> None:
    import time

    server = _Trickle()
    timeout = 2.0
    try:
        vlm = backend(server.url, timeout=timeout, retries=retries)
        t0 = time.monotonic()
        with pytest.raises(VLMError, match="no reply within 2 s"):
            call(vlm, lambda v: v.complete(request()))
        took = time.monotonic() - t0
    finally:
        server.close()
    assert took <= timeout * (retries + 1) + 2.0, took


def test_a_reply_over_the_size_cap_is_refused_as_it_arrives() -> None:
    server = _Trickle(chunked_size=200_000)
    try:
        vlm = backend(server.url, max_reply_bytes=50_000, retries=0)
        with pytest.raises(VLMError, match="sent a reply over"):
            call(vlm, lambda v: v.complete(request()))
    finally:
        server.close()


def test_the_trace_keeps_a_bounded_prefix_of_a_huge_reply_with_its_hash_and_length() -> None:
    import hashlib

    from agentiqa_cli.records import TRACED_TEXT, ReplyRecord

    text = "x" * (TRACED_TEXT * 3) + "end"
    rec = ReplyRecord.bounded(text, model="m")
    assert rec.text == text[:TRACED_TEXT] and rec.text_length == len(text)
    assert rec.text_sha256 == hashlib.sha256(text.encode()).hexdigest()
    assert len(rec.model_dump_json()) < TRACED_TEXT + 1000
    small = ReplyRecord.bounded("short", model="m")
    assert small.text == "short" and small.text_length is None


@pytest.mark.parametrize(
    "box",
    [(0.0001, 0.2, 0.0004, 0.7), (0.12345, 0.5, 0.12349, 0.50001), (0.25, 0.0, 0.5, 0.125)],
)
def test_a_box_cell_reads_back_as_the_same_box(box: tuple[float, float, float, float]) -> None:
    """fixes.csv's crop/fill boxes reproduce the image: an off-grid box was written with 3
    decimals, as a zero-area box or one covering other pixels."""
    from agentiqa_cli.records import Box

    b = Box(x1=box[0], y1=box[1], x2=box[2], y2=box[3])
    x1, y1, x2, y2 = (float(v) for v in b.cell().split(","))
    back = Box(x1=x1, y1=y1, x2=x2, y2=y2)
    assert back == b and back.pixels(4000, 3000) == b.pixels(4000, 3000)
    if box == (0.25, 0.0, 0.5, 0.125):
        assert b.cell() == "0.250,0.000,0.500,0.125"  # on the grid: as before
