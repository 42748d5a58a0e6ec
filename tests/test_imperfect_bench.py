"""`eval-bench vqpp`: the build is reproducible, and a model that answers with the oracle
operations scores 1 everywhere while "pass" scores only on originals and crops."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from PIL import Image

from agentiqa_cli.bench.synth import bundled_photos
from agentiqa_cli.bench.vqpp import (
    KINDS_AND_ORIGINAL,
    VqppItem,
    VqppRow,
    build,
    decide_all,
    report,
)
from agentiqa_cli.config import Settings
from agentiqa_cli.errors import ConfigError
from agentiqa_cli.imperfect.records import _OPERATIONS
from agentiqa_cli.io.trace import TraceWriter
from agentiqa_cli.vlm.base import VLMRequest
from agentiqa_cli.vlm.fake import ScriptedVLM
from agentiqa_cli.wiring import build_runtime


@pytest.fixture(scope="module")
def bench(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[VqppItem]]:
    root = tmp_path_factory.mktemp("vqpp")
    clean = root / "clean"
    clean.mkdir()
    names = ("astronaut", "chelsea", "coffee")
    for name, x in zip(names, bundled_photos(names), strict=True):
        Image.fromarray((x * 255).astype(np.uint8)).save(clean / f"{name}.png")
    return root, build(clean, root / "images", seed=7, size=160)


def test_build_writes_every_kind_reproducibly(
    bench: tuple[Path, list[VqppItem]], tmp_path: Path
) -> None:
    root, items = bench
    assert len(items) == 3 * len(KINDS_AND_ORIGINAL)  # ten of V-QPP-Bench, borders, original
    assert (root / "images" / "manifest.jsonl").exists()
    again = build(root / "clean", tmp_path, seed=7, size=160)
    assert again == items
    for it in items[:11]:
        assert (root / "images" / it.image).read_bytes() == (tmp_path / it.image).read_bytes()
    kinds = {it.kind: it for it in items}
    assert kinds["crop"].oracle == [] and kinds["original"].oracle == []
    assert kinds["expand"].oracle[0].tool == "crop"


def test_a_build_of_some_kinds_holds_the_same_items(
    bench: tuple[Path, list[VqppItem]], tmp_path: Path
) -> None:
    """Each item comes from its own (seed, image, kind) generator: building two kinds
    gives exactly the full build's items of those kinds, images and all."""
    root, items = bench
    some = build(root / "clean", tmp_path, seed=7, size=160, kinds=("brightness", "overlay"))
    assert some == [it for it in items if it.kind in ("brightness", "overlay")]
    for it in some:
        assert (root / "images" / it.image).read_bytes() == (tmp_path / it.image).read_bytes()
    assert not (tmp_path / "original").exists()
    with pytest.raises(ConfigError, match="unknown kinds: glare"):
        build(root / "clean", tmp_path / "x", seed=7, size=160, kinds=("glare",))


def _run(items: list[VqppItem], root: Path, vlm: ScriptedVLM) -> list[VqppRow]:
    async def go() -> list[VqppRow]:
        async with build_runtime(Settings(), vlm=vlm) as rt:
            asker = await rt.asker()
            chosen, found = await decide_all(rt, asker, items, root / "images", TraceWriter(None))
        return report(items, chosen, found)

    return asyncio.run(go())


def test_an_oracle_model_scores_one_and_pass_scores_only_no_ops(
    bench: tuple[Path, list[VqppItem]],
) -> None:
    root, items = bench
    by_path = {str(root / "images" / it.image): it for it in items}

    def oracle(request: VLMRequest) -> dict[str, Any]:
        item = by_path[request.messages[-1].images[0].path]
        return {
            "imperfections": [],
            "operations": _OPERATIONS.dump_python(item.oracle, mode="json"),
        }

    rows = {r.kind: r for r in _run(items, root, ScriptedVLM(default=oracle))}
    for kind, row in rows.items():
        assert row.tsa == 1.0, kind
        assert row.ps in (None, 1.0), kind
    assert rows["original"].false_fix == 0.0

    passing = {r.kind: r for r in _run(items, root, ScriptedVLM({"fix": {"operations": []}}))}
    assert passing["original"].tsa == 1.0 and passing["crop"].tsa == 1.0
    assert passing["rotation"].tsa == 0.0 and passing["rotation"].ps == 0.0


def test_refused_replies_count_as_failed(bench: tuple[Path, list[VqppItem]]) -> None:
    root, items = bench
    some = [it for it in items if it.kind in ("original", "flip")]
    bad = {"operations": [{"tool": "flip", "direction": "diagonal"}]}
    rows = {r.kind: r for r in _run(some, root, ScriptedVLM({"fix": bad}))}
    assert rows["flip"].failed == 3 and rows["flip"].tsa == 0.0
    assert rows["original"].tsa == 0.0  # a failed decision is never a correct "pass"


def test_the_random_generator_draws_boxes_and_resaves_and_queries_name_the_place(
    bench: tuple[Path, list[VqppItem]], tmp_path: Path
) -> None:
    root, _ = bench
    items = build(root / "clean", tmp_path, seed=7, size=160, generator="random",
                  query="How sharp is it?")  # fmt: skip
    assert items == build(root / "clean", tmp_path / "again", seed=7, size=160,
                          generator="random", query="How sharp is it?")  # fmt: skip
    assert any(it.jpeg for it in items) and any(it.jpeg is None for it in items)
    assert all(it.image.endswith(".jpg") == bool(it.jpeg) for it in items)
    for it in items:
        if it.kind == "expand":
            words = {"TL": "top-left", "TR": "top-right", "BL": "bottom-left", "BR": "bottom-right"}
            assert (
                it.query
                == f"According to the {words[it.param]} part of the image, how sharp is it?"
            )
        elif it.kind == "recapture":
            assert it.query.startswith("According to the image on the ")
        else:
            assert it.query == "How sharp is it?"
    overlays = [it for it in items if it.kind == "overlay"]
    boxes = [it.oracle[0].bbox for it in overlays]  # type: ignore[union-attr]
    anchors = {(0.0, 0.0), (0.5, 0.5)}
    assert any(b is not None and (b.x1, b.y1) not in anchors for b in boxes)
