"""Which files does each pyiqa metric fetch when it is built? Prints the cards' ``weight_files``.

The cards list, for every tool that needs weights, the files pyiqa's metric loads from the
caches (``agentiqa_cli.tools.weights.weights_cached`` checks them without importing torch).
This script finds them by building each metric with every download intercepted: nothing
is fetched, each request is recorded (torch hub URL downloads, the CLIP loader, timm's and
huggingface_hub's ``hf_hub_download``) and answered with an empty stand-in, torch.load of
a stand-in returns an empty state dict and ``load_state_dict`` is a no-op, so the
construction runs on and reveals the next file. A metric whose construction still breaks
on a stand-in is reported with the files seen up to that point.

Run it after upgrading pyiqa/timm/torchvision and compare with the cards:

    python scripts/trace_weight_files.py              # every weights card
    python scripts/trace_weight_files.py brisque dbcnn

Needs pyiqa (and torch); no network; caches are redirected to a temporary folder.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import traceback
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

TMP = Path(tempfile.mkdtemp(prefix="weight-trace-"))
os.environ["TORCH_HOME"] = str(TMP / "torch")
os.environ["HF_HOME"] = str(TMP / "hf")
os.environ["HF_HUB_OFFLINE"] = "1"
HUB = TMP / "torch" / "hub"

# CLIP architectures pyiqa's loader builds from a checkpoint's shapes (openai/CLIP's
# published configurations): (embed_dim, image_resolution, vision_layers, vision_width,
# vision_patch_size, context_length, vocab_size, width, heads, layers)
CLIP_SHAPES: dict[str, tuple[Any, ...]] = {
    "RN50": (1024, 224, (3, 4, 6, 3), 64, None, 77, 49408, 512, 8, 12),
    "ViT-B/32": (512, 224, 12, 768, 32, 77, 49408, 512, 8, 12),
}


class FakeStateDict(dict[str, Any]):
    """Answers any key with another empty state dict, so ``sd['params']`` works."""

    def __missing__(self, key: str) -> FakeStateDict:
        return FakeStateDict()


@contextmanager
def intercepted(seen: list[str]) -> Iterator[None]:
    import huggingface_hub
    import pyiqa.archs.clip_model as clip_model
    import pyiqa.utils.download_util as pyiqa_dl
    import safetensors.torch
    import timm.models._hub as timm_hub
    import torch
    import torch.hub
    from torch import nn

    fakes: set[str] = set()

    def download(url: str, dst: str, *args: Any, **kwargs: Any) -> None:
        seen.append(Path(dst).resolve().relative_to(HUB.resolve()).as_posix())
        Path(dst).parent.mkdir(parents=True, exist_ok=True)
        Path(dst).write_bytes(b"stand-in")
        fakes.add(str(Path(dst).resolve()))

    def is_fake(f: Any) -> bool:
        name = getattr(f, "name", f)
        return isinstance(name, str | os.PathLike) and str(Path(name).resolve()) in fakes

    real_load, real_jit_load = torch.load, torch.jit.load

    def load(f: Any, *args: Any, **kwargs: Any) -> Any:
        return FakeStateDict() if is_fake(f) else real_load(f, *args, **kwargs)

    def jit_load(f: Any, *args: Any, **kwargs: Any) -> Any:
        return nn.Identity() if is_fake(f) else real_jit_load(f, *args, **kwargs)

    def hf_download(repo_id: str, filename: str, *args: Any, **kwargs: Any) -> str:
        seen.append(f"hf:{repo_id}/{filename}")
        path = TMP / "hf-stand-in" / repo_id / filename
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(b"stand-in")
        fakes.add(str(path.resolve()))
        return str(path)

    def clip_load(name: str, *args: Any, **kwargs: Any) -> Any:
        seen.append("clip/" + os.path.basename(clip_model._MODELS[name]))
        return clip_model.CLIP(*CLIP_SHAPES[name]).float()

    def st_load(f: Any, *args: Any, **kwargs: Any) -> Any:
        return FakeStateDict() if is_fake(f) else real_st_load(f, *args, **kwargs)

    def no_load_state_dict(self: nn.Module, *args: Any, **kwargs: Any) -> Any:
        return nn.modules.module._IncompatibleKeys([], [])

    real_st_load = safetensors.torch.load_file
    patches: list[tuple[Any, str, Any]] = [
        (torch.hub, "download_url_to_file", download),
        (pyiqa_dl, "download_url_to_file", download),
        (torch, "load", load),
        (torch.jit, "load", jit_load),
        (timm_hub, "hf_hub_download", hf_download),
        (huggingface_hub, "hf_hub_download", hf_download),
        (safetensors.torch, "load_file", st_load),
        (nn.Module, "load_state_dict", no_load_state_dict),
    ]
    # the CLIP loader is imported by name into the metrics that use it
    for mod in list(sys.modules.values()):
        if getattr(mod, "__name__", "").startswith("pyiqa.archs") and getattr(
            mod, "load", None
        ) is getattr(clip_model, "load", None):
            patches.append((mod, "load", clip_load))
    patches.append((clip_model, "load", clip_load))
    saved = [(obj, attr, getattr(obj, attr)) for obj, attr, _ in patches]
    for obj, attr, new in patches:
        setattr(obj, attr, new)
    try:
        yield
    finally:
        for obj, attr, old in saved:
            setattr(obj, attr, old)


def trace(metric: str) -> tuple[list[str], str]:
    """The files building ``metric`` requests, in order, and the error that stopped it."""
    import pyiqa

    seen: list[str] = []
    error = ""
    shutil.rmtree(TMP, ignore_errors=True)  # each metric starts from empty caches
    with intercepted(seen):
        try:
            pyiqa.create_metric(metric, device="cpu")
        except Exception as e:  # reported with the files seen so far
            last = traceback.extract_tb(e.__traceback__)[-1]
            error = f"{type(e).__name__}: {e} ({Path(last.filename).name}:{last.lineno})"
    return list(dict.fromkeys(seen)), error


def main() -> int:
    from agentiqa_cli.resources import default_cards_dir
    from agentiqa_cli.tools.cards import load_cards

    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("tools", nargs="*", help="tool cards to trace (default: every weights card)")
    args = ap.parse_args()
    import pyiqa  # noqa: F401 - import once, before the patches look for its modules

    cards = load_cards(default_cards_dir())
    chosen = cards.resolve(args.tools) if args.tools else [c for c in cards if c.weights]
    differ = 0
    for card in chosen:
        if card.backend != "pyiqa":
            continue
        files, error = trace(card.metric)
        listed = list(card.weight_files)
        mark = "" if files == listed else "   <- card differs: " + ", ".join(listed)
        differ += bool(mark)
        print(f"{card.name}: [{', '.join(files)}]{mark}")
        if error:
            print(f"    stopped: {error[:300]}")
    return 1 if differ else 0


if __name__ == "__main__":
    raise SystemExit(main())
