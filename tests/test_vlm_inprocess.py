"""InProcessVLM's batching and reply handling, with a stand-in for the ``vllm`` package.

The real engine is exercised in test_vllm_server.py; here a fake ``vllm.LLM`` records each
``chat`` call so the tests can check how requests were grouped and what was asked.
"""

from __future__ import annotations

import asyncio
import sys
import types
from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest

from agentiqa_cli.errors import ConfigError, VLMError
from agentiqa_cli.vlm.base import VLM, ImagePart, Message, VLMReply, VLMRequest
from agentiqa_cli.vlm.inprocess import InProcessVLM

LEVELS = ["excellent", "good", "fair", "poor", "bad"]
SCHEMA = {"type": "object", "properties": {"a": {"type": "string", "maxLength": 5}}}


@dataclass
class SamplingParams:
    temperature: float = 1.0
    max_tokens: int | None = 16
    logprobs: int | None = None
    structured_outputs: Any = None


@dataclass
class StructuredOutputsParams:
    json: Any = None
    choice: list[str] | None = None


class FakeLLM:
    """Answers from the last user text: 'poison' breaks the whole batch, 'long' truncates."""

    def __init__(self, model: str = "fake", **kw: Any) -> None:
        self.model, self.kw = model, kw
        self.calls: list[tuple[list[Any], list[SamplingParams]]] = []

    def chat(self, convs: list[Any], sampling_params: Any, use_tqdm: bool = True) -> list[Any]:
        self.calls.append((convs, sampling_params))
        outs = []
        for conv, sp in zip(convs, sampling_params, strict=True):
            content = conv[-1]["content"]
            text = content if isinstance(content, str) else content[-1]["text"]
            if text == "poison":
                raise RuntimeError("engine rejected a prompt\nValueError: prompt too long")
            so = sp.structured_outputs
            answer = so.choice[1] if so and so.choice else '{"a":"x"}'
            logprobs = None
            if sp.logprobs:
                logprobs = [
                    {
                        7: SimpleNamespace(logprob=-0.2, decoded_token="go"),
                        3: SimpleNamespace(logprob=-1.9, decoded_token="ex"),
                        9: SimpleNamespace(logprob=-9999.0, decoded_token="<|im_start|>"),
                    }
                ]
            finish = "length" if text == "long" else "stop"
            outs.append(
                SimpleNamespace(
                    prompt_token_ids=list(range(40)),
                    outputs=[
                        SimpleNamespace(
                            text=answer,
                            token_ids=[7] if logprobs else [1, 2, 3],
                            finish_reason=finish,
                            logprobs=logprobs,
                        )
                    ],
                )
            )
        return outs


@pytest.fixture
def fake_vllm(monkeypatch: pytest.MonkeyPatch) -> types.ModuleType:
    mod = types.ModuleType("vllm")
    sub = types.ModuleType("vllm.sampling_params")
    mod.SamplingParams = SamplingParams  # type: ignore[attr-defined]
    mod.LLM = FakeLLM  # type: ignore[attr-defined]
    sub.StructuredOutputsParams = StructuredOutputsParams  # type: ignore[attr-defined]
    mod.sampling_params = sub  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "vllm", mod)
    monkeypatch.setitem(sys.modules, "vllm.sampling_params", sub)
    return mod


def req(text: str = "rate", **kw: Any) -> VLMRequest:
    kw.setdefault("messages", [Message(role="user", text=text)])
    return VLMRequest(role="score", **kw)


def gather(vlm: InProcessVLM, requests: list[VLMRequest]) -> list[Any]:
    async def go() -> list[Any]:
        try:
            return await asyncio.gather(
                *(vlm.complete(r) for r in requests), return_exceptions=True
            )
        finally:
            await vlm.aclose()

    return asyncio.run(go())


def test_satisfies_the_protocol() -> None:
    assert isinstance(InProcessVLM("m"), VLM)


def test_concurrent_requests_become_one_chat_call(fake_vllm: types.ModuleType) -> None:
    llm = FakeLLM()
    vlm = InProcessVLM("m", llm=llm)
    replies = gather(
        vlm,
        [req(json_schema=SCHEMA), req(choices=LEVELS, top_logprobs=5), req(max_tokens=9)],
    )
    assert len(llm.calls) == 1
    convs, params = llm.calls[0]
    assert len(convs) == 3
    assert params[0].structured_outputs == StructuredOutputsParams(json=SCHEMA)
    assert params[1].structured_outputs == StructuredOutputsParams(choice=LEVELS)
    assert params[1].logprobs == 5 and params[0].logprobs is None
    assert params[2].structured_outputs is None and params[2].max_tokens == 9
    assert [r.text for r in replies] == ['{"a":"x"}', "good", '{"a":"x"}']
    assert replies[1].top_logprobs == [{"go": -0.2, "ex": -1.9}]  # masked entry dropped
    assert replies[1].tokens == ["go"] and replies[0].tokens is None
    assert replies[0].top_logprobs is None
    assert replies[0].usage.prompt_tokens == 40 and replies[0].usage.completion_tokens == 3
    assert all(r.latency > 0 and r.model == "m" for r in replies)


def test_batches_are_capped(fake_vllm: types.ModuleType) -> None:
    llm = FakeLLM()
    gather(InProcessVLM("m", llm=llm, max_batch=2), [req() for _ in range(5)])
    assert [len(c[0]) for c in llm.calls] == [2, 2, 1]


def test_one_bad_prompt_fails_alone(fake_vllm: types.ModuleType) -> None:
    llm = FakeLLM()
    out = gather(InProcessVLM("m", llm=llm), [req("a"), req("poison"), req("b")])
    assert isinstance(out[1], VLMError) and "prompt too long" in str(out[1])
    assert "\n" not in str(out[1])
    assert out[0].text == out[2].text == '{"a":"x"}'
    assert [len(c[0]) for c in llm.calls] == [3, 1, 1, 1]  # the batch, then one by one


def test_truncated_constrained_reply_is_an_error(fake_vllm: types.ModuleType) -> None:
    out = gather(InProcessVLM("m", llm=FakeLLM()), [req("long", json_schema=SCHEMA), req("ok")])
    assert isinstance(out[0], VLMReply) and out[0].truncated  # parse_reply refuses it
    assert out[1].finish_reason == "stop"


def test_images_go_as_downscaled_pil(fake_vllm: types.ModuleType) -> None:
    llm = FakeLLM()
    part = ImagePart(sha256="0" * 64, path="x", pixels=np.zeros((300, 400, 3), np.float32))
    msgs = [Message(role="system", text="s"), Message(role="user", text="t", images=[part])]
    gather(InProcessVLM("m", llm=llm, image_pixels=100 * 100), [req(messages=msgs)])
    (conv,), _ = llm.calls[0]
    assert conv[0] == {"role": "system", "content": "s"}
    image, text = conv[1]["content"]
    assert image["type"] == "image_pil" and text == {"type": "text", "text": "t"}
    w, h = image["image_pil"].size
    assert w * h <= 100 * 100 and abs(w / h - 4 / 3) < 0.05


def test_engine_is_built_lazily_with_engine_args(fake_vllm: types.ModuleType) -> None:
    vlm = InProcessVLM("/models/x", engine_args={"max_model_len": 2048})
    assert vlm._llm is None
    asyncio.run(vlm.check())
    assert vlm._llm.model == "/models/x"
    assert vlm._llm.kw["max_model_len"] == 2048
    assert vlm._llm.kw["limit_mm_per_prompt"] == {"image": 1, "video": 0}
    assert vlm._llm.kw["structured_outputs_config"]["backend"] == "guidance"


def test_missing_vllm_is_a_config_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "vllm", None)  # makes `import vllm` raise ImportError
    with pytest.raises(ConfigError, match=r"agentiqa\[vllm\]"):
        asyncio.run(InProcessVLM("m").check())
