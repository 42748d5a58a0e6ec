"""Shared fixtures and helpers: generated images, the real vLLM server of the vllm_server
tests, and a guard that keeps tests off the network."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from tests import vllm_server

_real_connect = socket.socket.connect


def _guarded_connect(self: socket.socket, address: object) -> None:  # type: ignore[override]
    host = address[0] if isinstance(address, tuple) else address
    if isinstance(host, str) and not (host.startswith("127.") or host in ("localhost", "::1")):
        raise RuntimeError(f"tests must not reach the network (tried {address!r})")
    return _real_connect(self, address)  # type: ignore[arg-type]


@pytest.fixture(autouse=True)
def _no_network(monkeypatch: pytest.MonkeyPatch) -> None:
    """Kill-switch: only loopback connections are allowed in tests."""
    monkeypatch.setattr(socket.socket, "connect", _guarded_connect)


@pytest.fixture(scope="session")
def _empty_config_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("xdg-config")


@pytest.fixture(autouse=True)
def _no_user_config(monkeypatch: pytest.MonkeyPatch, _empty_config_home: Path) -> None:
    """Tests never read the real home's ~/.config/agentiqa/config.yaml: the user config
    layer looks in an empty folder unless a test points XDG_CONFIG_HOME elsewhere."""
    monkeypatch.setenv("XDG_CONFIG_HOME", str(_empty_config_home))


@pytest.fixture(autouse=True)
def _loud_after_each_test() -> Iterator[None]:
    """A command run with -q in-process leaves the libraries quiet until the next command
    starts; the next test starts loud."""
    yield
    from agentiqa_cli.cli import render

    render.set_quiet(False)


@pytest.fixture(scope="module")
def vllm() -> Iterator[vllm_server.VLLMServer]:
    """A real vLLM server serving the tiny model (tests/vllm_server.py) for one module's
    tests, with ``vllm_server.KEY`` as its API key; the tests are skipped where it cannot run."""
    yield from vllm_server.serve()


def natural_like(h: int = 96, w: int = 128, seed: int = 0) -> np.ndarray:
    """A smooth-plus-edges RGB test image in [0, 1] with photo-like structure."""
    rng = np.random.default_rng(seed)
    yy, xx = np.mgrid[0:h, 0:w].astype(np.float32)
    base = 0.5 + 0.25 * np.sin(xx / 7.0) * np.cos(yy / 9.0)
    squares = ((xx // 16 + yy // 16) % 2) * 0.2
    img = np.stack([base + squares, base * 0.9 + 0.05, 1.0 - base * 0.8], axis=2)
    img += rng.normal(0, 0.005, img.shape)
    return np.clip(img, 0, 1).astype(np.float32)


def scene(seed: int, w: int = 320, h: int = 240) -> Image.Image:
    """A distinct picture per seed: random colour blobs at two scales (natural_like's layout
    is the same for every seed, so its images are near duplicates of each other)."""
    rng = np.random.default_rng(seed)
    coarse = Image.fromarray((rng.random((6, 8, 3)) * 255).astype(np.uint8))
    fine = Image.fromarray((rng.random((max(1, h // 8), max(1, w // 8), 3)) * 255).astype(np.uint8))
    big = np.asarray(coarse.resize((w, h), Image.Resampling.BICUBIC), dtype=np.float32)
    det = np.asarray(fine.resize((w, h), Image.Resampling.NEAREST), dtype=np.float32)
    return Image.fromarray((0.7 * big + 0.3 * det).astype(np.uint8))


def wave_images(folder: Path, n: int) -> Path:
    """``n`` PNGs of 128×96 waves, each its own frequency and a little noise (none, 0.02,
    0.04, in turn): distinct images for the end-to-end runs against a real model."""
    folder.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(0)
    for i in range(n):
        yy, xx = np.mgrid[0:96, 0:128]
        base = (0.5 + 0.4 * np.sin(xx / (5 + i)) * np.cos(yy / 7))[..., None].repeat(3, 2)
        arr = np.clip(base + rng.normal(0, 0.02 * (i % 3), base.shape), 0, 1)
        Image.fromarray((arr * 255).astype(np.uint8)).save(folder / f"{i}.png")
    return folder


LEVELS = ["excellent", "good", "fair", "poor", "bad"]


def level_schema(max_answer: int) -> dict[str, object]:
    """The summarizer's reply shape: a JSON object whose first value is the level, then a
    short answer."""
    return {
        "type": "object",
        "properties": {
            "level": {"enum": LEVELS},
            "answer": {"type": "string", "maxLength": max_answer},
        },
        "required": ["level", "answer"],
        "additionalProperties": False,
    }


# `fix` writing tests: the fixed image may score below its input on the small synthetic
# images: cropping the black bands of a 128 px render (far from the 1024 px photos the camera
# model learned) takes their crisp edges away, and the camera heads read what is left
# 0.03-0.45 lower depending on the training run (both sides read "poor" or "bad": such a
# render is no photo); those tests are about what fix writes, not the verdict
TOLERANT = ("--tolerance", "1.0")


def save_rgb(path: Path, arr: np.ndarray, **kw: object) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    Image.fromarray((np.clip(arr, 0, 1) * 255).round().astype(np.uint8)).save(path, **kw)
    return path


@pytest.fixture
def pics(tmp_path: Path) -> Path:
    """A folder of two small photo-like PNGs, p0.png and p1.png."""
    d = tmp_path / "d"
    for i in range(2):
        save_rgb(d / f"p{i}.png", natural_like(64, 80, seed=i))
    return d


@pytest.fixture
def photo(tmp_path: Path) -> Path:
    return save_rgb(tmp_path / "photo.png", natural_like())
