"""Learned tools offered by what the caches hold: the cards' weight files, checked against
pyiqa's own source, found in fake caches, and turned into the agent's candidates."""

from __future__ import annotations

import ast
import importlib.util
import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from agentiqa_cli.config import load_settings
from agentiqa_cli.errors import ConfigError
from agentiqa_cli.resources import default_cards_dir
from agentiqa_cli.tools.cards import ToolCard, load_card, load_cards
from agentiqa_cli.tools.weights import (
    candidates,
    hf_hub_cache,
    missing_weights,
    torch_hub_dir,
    weights_cached,
)
from agentiqa_cli.vlm.fake import ScriptedVLM
from tests.test_agent import (
    EXAMINE_NOISE,
    PLAN_GLOBAL,
    SELECT_NOISE,
    make_session,
    pairs,
    run_agent,
    summary_reply,
)
from tests.test_cli_score import invoke

ROOT = Path(__file__).resolve().parent.parent
CARDS = load_cards(default_cards_dir())


# -- the cards' lists against the installed packages' source ---------------------------------


def package_dir(name: str) -> Path:
    """Where a package's source is, without importing it (pyiqa imports torch: seconds)."""
    spec = importlib.util.find_spec(name)
    if spec is None or spec.origin is None:
        pytest.skip(f"{name} is not installed")
    return Path(spec.origin).parent


def pyiqa_urls(arch: str) -> dict[str, str]:
    """``default_model_urls`` of ``pyiqa/archs/<arch>.py``: key -> file name, as written in
    its ``get_url_from_name('...')`` calls."""
    tree = ast.parse((package_dir("pyiqa") / "archs" / f"{arch}.py").read_text())
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Assign)
            and any(isinstance(t, ast.Name) and t.id == "default_model_urls" for t in node.targets)
            and isinstance(node.value, ast.Dict)
        ):
            out = {}
            for k, v in zip(node.value.keys, node.value.values, strict=True):
                assert isinstance(k, ast.Constant) and isinstance(v, ast.Call)
                arg = v.args[0] if v.args else v.keywords[0].value
                assert isinstance(arg, ast.Constant)
                out[str(k.value)] = str(arg.value)
            return out
    raise AssertionError(f"no default_model_urls in {arch}")


def torchvision_file(module: str, weights_class: str) -> str:
    """The file torchvision saves ``<weights_class>.IMAGENET1K_V1`` as (the URL's name)."""
    text = (package_dir("torchvision") / "models" / f"{module}.py").read_text()
    block = text.split(f"class {weights_class}(", 1)[1]
    m = re.search(r'IMAGENET1K_V1 = Weights\(\s*url="([^"]+)"', block)
    assert m, weights_class
    return m.group(1).rsplit("/", 1)[1]


def clip_file(name: str) -> str:
    text = (package_dir("pyiqa") / "archs" / "clip_model.py").read_text()
    m = re.search(rf"'{re.escape(name)}': '([^']+)'", text)
    assert m, name
    return m.group(1).rsplit("/", 1)[1]


def timm_default(arch: str) -> str:
    """timm's default pretrained tag of ``arch``: the first ``'arch.tag':`` it registers."""
    for path in sorted((package_dir("timm") / "models").glob("*.py")):
        m = re.search(rf"['\"]{re.escape(arch)}\.(\w+)['\"]\s*:", path.read_text())
        if m:
            return f"timm/{arch}.{m.group(1)}"
    raise AssertionError(f"timm registers no {arch}")


def test_every_weights_card_lists_its_files_and_no_other_does() -> None:
    weights = [c for c in CARDS if c.weights]
    assert len(weights) == 21
    assert [c.name for c in weights if not c.weight_files] == []
    assert [c.name for c in CARDS if c.weight_files and not c.weights] == []


def test_weight_files_is_the_last_entry_of_each_card() -> None:
    # other branches edit the cards' other lines: the list stays at the end of the file
    for c in CARDS:
        if c.weight_files:
            text = (default_cards_dir() / f"{c.name}.yaml").read_text()
            tail = text[text.index("\nweight_files:") + 1 :].splitlines()[1:]
            assert all(line.startswith("  - ") for line in tail), c.name


@pytest.mark.parametrize(
    "entry", ["brisque_svm_weights.pth", "/abs/x.pth", "other/x.pth", "hf:timm/only-repo"]
)
def test_a_weight_file_names_its_cache(tmp_path: Path, entry: str) -> None:
    text = (default_cards_dir() / "musiq.yaml").read_text()
    bad = text[: text.index("weight_files:")] + f"weight_files: [{entry!r}]\n"
    (tmp_path / "musiq.yaml").write_text(bad)
    with pytest.raises(ConfigError, match="weight_files"):
        load_card(tmp_path / "musiq.yaml")


@pytest.mark.parametrize(
    ("tool", "expected"),
    [
        ("brisque", [("pyiqa", "brisque_arch", "url")]),
        ("niqe", [("pyiqa", "niqe_arch", "url")]),
        ("musiq", [("pyiqa", "musiq_arch", "koniq10k")]),
        ("dbcnn", [("pyiqa", "dbcnn_arch", "scnn"), ("pyiqa", "dbcnn_arch", "koniq")]),
        ("wadiqam_nr", [("pyiqa", "wadiqam_arch", "wadiqam_nr_koniq")]),
        ("lpips", [("pyiqa", "lpips_arch", "0.1_alex")]),
        ("topiq_fr", [("pyiqa", "topiq_arch", "cfanet_fr_kadid_res50")]),
        # ARNIQA's encoder comes through torch.hub.load_state_dict_from_url: checkpoints/
        ("arniqa", [("checkpoints", "arniqa_arch", "ARNIQA"), ("pyiqa", "arniqa_arch", "koniq")]),
    ],
)
def test_pyiqa_files_match_pyiqas_source(tool: str, expected: list[tuple[str, str, str]]) -> None:
    files = CARDS.get(tool).weight_files
    for folder, arch, key in expected:
        assert f"{folder}/{pyiqa_urls(arch)[key]}" in files, (tool, arch, key)


@pytest.mark.parametrize(
    ("tool", "module", "weights_class"),
    [
        ("tres", "resnet", "ResNet50_Weights"),
        ("arniqa", "resnet", "ResNet50_Weights"),
        ("unique", "resnet", "ResNet34_Weights"),
        ("dbcnn", "vgg", "VGG16_Weights"),
        ("dists", "vgg", "VGG16_Weights"),
        ("lpips", "alexnet", "AlexNet_Weights"),
    ],
)
def test_torchvision_backbones_match_torchvisions_source(
    tool: str, module: str, weights_class: str
) -> None:
    assert f"checkpoints/{torchvision_file(module, weights_class)}" in CARDS.get(tool).weight_files


def test_clip_and_timm_backbones_match_their_source() -> None:
    assert f"clip/{clip_file('RN50')}" in CARDS.get("clipiqa").weight_files
    assert f"clip/{clip_file('ViT-B/32')}" in CARDS.get("liqe").weight_files
    for tool, arch in [
        ("ahiq", "resnet50"),
        ("ahiq", "vit_base_patch8_224"),
        ("hyperiqa", "resnet50"),
        ("maniqa", "vit_base_patch8_224"),
        ("nima", "inception_resnet_v2"),
        ("topiq_fr", "resnet50"),
    ]:
        assert f"hf:{timm_default(arch)}/model.safetensors" in CARDS.get(tool).weight_files


def test_every_listed_file_is_named_in_the_source_it_comes_from() -> None:
    """No typo anywhere: each pyiqa/ and checkpoints/ name is a URL's file name in pyiqa's
    or torchvision's source, each clip/ one a CLIP model's, each timm repo registered."""
    names: set[str] = set()
    for pkg, sub in (("pyiqa", "archs"), ("torchvision", "models")):
        for path in (package_dir(pkg) / sub).glob("*.py"):
            text = path.read_text()
            names |= set(re.findall(r"get_url_from_name\(\s*(?:name=)?'([^']+)'", text))
            names |= set(re.findall(r"https?://[^'\"\s]+/([^/'\"\s]+\.(?:pth|pt|mat))", text))
    for c in CARDS:
        for f in c.weight_files:
            rest = f.partition("/")[2]
            if f.startswith("hf:timm/"):
                arch = rest.split("/")[0].split(".")[0]
                assert f.split("/")[1] == timm_default(arch).split("/")[1], f
            elif not f.startswith("hf:"):
                assert rest in names, (c.name, f)


# -- finding them in the caches ---------------------------------------------------------------


@pytest.fixture
def caches(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Empty torch and Hugging Face caches under tmp_path (the real ones are not looked at)."""
    for var in ("HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE", "HF_HOME"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("TORCH_HOME", str(tmp_path / "torch"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    return tmp_path


def fill(card: ToolCard, skip: str = "") -> None:
    """Put stand-ins for the card's torch-hub files where torch would cache them."""
    for f in card.weight_files:
        assert not f.startswith("hf:")
        if f != skip:
            path = torch_hub_dir() / f
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(b"weights")


def hf_snapshot(cache: Path, repo: str, files: dict[str, str], ref: bool = True) -> Path:
    org, name = repo.split("/")
    snap = cache / f"models--{org}--{name}" / "snapshots" / "abc123"
    snap.mkdir(parents=True)
    for rel, text in files.items():
        (snap / rel).write_text(text)
    if ref:
        (cache / f"models--{org}--{name}" / "refs").mkdir()
        (cache / f"models--{org}--{name}" / "refs" / "main").write_text("abc123")
    return snap


def test_cache_folders_follow_torch_and_huggingface_env(caches: Path) -> None:
    assert torch_hub_dir() == caches / "torch" / "hub"
    assert hf_hub_cache() == caches / "xdg" / "huggingface" / "hub"
    assert torch_hub_dir({"XDG_CACHE_HOME": "/x"}) == Path("/x/torch/hub")
    assert hf_hub_cache({"HF_HOME": "/h", "XDG_CACHE_HOME": "/x"}) == Path("/h/hub")
    assert hf_hub_cache({"HF_HOME": "/h", "HF_HUB_CACHE": "/c"}) == Path("/c")


def test_torch_hub_files(caches: Path) -> None:
    dbcnn = CARDS.get("dbcnn")
    assert not weights_cached(dbcnn)
    fill(dbcnn, skip="pyiqa/DBCNN_scnn-7ea73d75.pth")
    assert missing_weights(dbcnn) == ["pyiqa/DBCNN_scnn-7ea73d75.pth"]
    assert not weights_cached(dbcnn)
    fill(dbcnn)
    assert weights_cached(dbcnn) and not weights_cached(CARDS.get("dists"))
    assert weights_cached(CARDS.get("psnr"))  # needs no weights
    # a weights card that lists no files cannot be vouched for
    assert not weights_cached(dbcnn.model_copy(update={"weight_files": ()}))


def test_hf_hub_files_need_the_snapshot_main_points_to(caches: Path) -> None:
    cache = hf_hub_cache()
    nima = CARDS.get("nima")
    fill(nima.model_copy(update={"weight_files": ["pyiqa/NIMA_InceptionV2_ava-b0c77c00.pth"]}))
    assert missing_weights(nima) == ["hf:timm/inception_resnet_v2.tf_in1k/model.safetensors"]
    snap = hf_snapshot(cache, "timm/inception_resnet_v2.tf_in1k", {"config.json": "{}"})
    assert not weights_cached(nima)
    (snap / "model.safetensors").write_bytes(b"w")
    assert weights_cached(nima)
    # refs/main names another snapshot: the file in this one is not what would load
    (snap.parent.parent / "refs" / "main").write_text("other")
    assert not weights_cached(nima)


def test_hf_blob_symlink_and_sharded_index(caches: Path) -> None:
    cache = hf_hub_cache()
    card = CARDS.get("qalign")
    index = {"weight_map": {"a": "model-00001-of-00002.bin", "b": "model-00002-of-00002.bin"}}
    snap = hf_snapshot(
        cache,
        "q-future/one-align",
        {
            "config.json": "{}",
            "preprocessor_config.json": "{}",
            "pytorch_model.bin.index.json": json.dumps(index),
            "model-00001-of-00002.bin": "w",
        },
        ref=False,  # no refs/main (a copied cache): any snapshot counts
    )
    # hub blobs are symlinks; one left dangling by an interrupted download is missing
    (snap / "tokenizer.model").symlink_to(snap.parent.parent / "blobs" / "gone")
    assert missing_weights(card) == [
        "hf:q-future/one-align/tokenizer.model",
        "hf:q-future/one-align/*.index.json",
    ]
    (snap / "tokenizer.model").unlink()
    (snap / "tokenizer.model").write_text("t")
    (snap / "model-00002-of-00002.bin").write_text("w")
    assert weights_cached(card)


def test_checking_imports_neither_torch_nor_pyiqa() -> None:
    code = (
        "import sys\n"
        "from agentiqa_cli.resources import default_cards_dir\n"
        "from agentiqa_cli.tools.cards import load_cards\n"
        "from agentiqa_cli.tools.weights import weights_cached\n"
        "[weights_cached(c) for c in load_cards(default_cards_dir())]\n"
        "assert not {'torch', 'pyiqa', 'huggingface_hub'} & set(sys.modules), sys.modules\n"
    )
    env = os.environ | {"PYTHONPATH": str(ROOT)}
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    assert r.returncode == 0, r.stderr


# -- the setting and the agent's candidates -----------------------------------------------------


@pytest.mark.parametrize(
    ("given", "value"),
    [(None, "auto"), (True, "on"), (False, "off"), ("1", "on"), ("no", "off"), ("Auto", "auto")],
)
def test_learned_tools_is_tri_state(given: object, value: str) -> None:
    flags = {} if given is None else {"learned_tools": given}
    assert load_settings(flags, environ={}).learned_tools == value


def test_learned_tools_rejects_other_words() -> None:
    with pytest.raises(ConfigError, match="learned_tools"):
        load_settings({}, environ={"AGENTIQA_LEARNED_TOOLS": "sometimes"})


def test_candidates_follow_the_caches_and_the_setting(caches: Path) -> None:
    fill(CARDS.get("musiq"))
    fill(CARDS.get("lpips"))  # FR: offered only with a reference
    auto_nr = {c.name for c in candidates(CARDS, False, "auto") if c.weights}
    assert auto_nr == {"musiq"}
    assert {c.name for c in candidates(CARDS, True, "auto") if c.weights} == {"musiq", "lpips"}
    assert not [c for c in candidates(CARDS, True, "off") if c.weights]
    assert {c.name for c in candidates(CARDS, True, "on")} == set(CARDS.names())
    weight_free_nr = {c.name for c in CARDS if c.mode == "NR" and not c.weights}
    assert {c.name for c in candidates(CARDS, False, "off")} == weight_free_nr


def offered_to_selector(tmp_path: Path, **settings: Any) -> list[str]:
    """The learned tools in the select step's input and prompt, with a scripted VLM."""
    session = make_session(tmp_path, **settings)
    vlm = ScriptedVLM({"planner": PLAN_GLOBAL, "examine": EXAMINE_NOISE, "select": SELECT_NOISE,
                       "summarize": lambda r: summary_reply()})  # fmt: skip
    (result,) = run_agent(session, vlm, pairs(tmp_path, 1, session))
    assert result.status == "ok"
    (request,) = vlm.calls("select")
    inputs = request.inputs
    assert inputs is not None
    names = [c.name for c in inputs.candidates if c.weights]  # type: ignore[attr-defined]
    prompt = "\n".join(m.text for m in request.messages)
    assert all(f'"{n}"' in prompt or n in prompt for n in names)
    return names


def test_agent_is_offered_a_cached_learned_tool_by_default(caches: Path) -> None:
    assert offered_to_selector(caches) == []
    fill(CARDS.get("musiq"))
    assert offered_to_selector(caches) == ["musiq"]


def test_no_learned_tools_forbids_even_cached_ones(caches: Path) -> None:
    fill(CARDS.get("musiq"))
    assert offered_to_selector(caches, learned_tools=False) == []


def test_learned_tools_forces_uncached_ones(caches: Path) -> None:
    expected = sorted(c.name for c in CARDS if c.weights and c.mode == "NR")
    assert sorted(offered_to_selector(caches, learned_tools=True)) == expected


def run_header(tmp_path: Path, *flags: str) -> dict[str, Any]:
    img = tmp_path / "img.png"
    if not img.exists():
        from tests.conftest import natural_like, save_rgb

        save_rgb(img, natural_like(64, 80, seed=0))
    out = tmp_path / f"r{len(flags)}{'-'.join(flags)}.csv"
    code, _ = invoke("assess", img, "-o", out, "-q", *flags)
    assert code == 0
    trace = out.with_name(out.stem + ".trace.jsonl").read_text().splitlines()
    header = json.loads(trace[0])
    assert header["step"] == "run"
    return dict(header["parsed"]["learned_tools"])


def test_run_header_names_the_learned_tools_offered(caches: Path) -> None:
    fill(CARDS.get("niqe"))
    assert run_header(caches) == {"setting": "auto", "offered": ["niqe"]}
    assert run_header(caches, "--no-learned-tools") == {"setting": "off", "offered": []}


def test_tools_list_shows_what_is_cached(caches: Path) -> None:
    fill(CARDS.get("musiq"))
    code, out = invoke("tools", "list", "--json")
    assert code == 0
    cached = {c["name"]: c["cached"] for c in json.loads(out)}
    assert cached["musiq"] is True and cached["dbcnn"] is False and cached["psnr"] is None
