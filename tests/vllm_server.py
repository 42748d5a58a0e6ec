"""Start, wait for and stop a real vLLM OpenAI-compatible server on 127.0.0.1.

Used by the ``vllm_server`` tests' fixture; also runnable by hand:

    /tmp/venvtest/bin/python tests/vllm_server.py [--port N]   # serves until Ctrl-C

The server runs from the virtualenv made by ``scripts/vllm_env.sh`` and serves the tiny
model it builds. Locations: $AGENTIQA_VLLM_VENV (default .venv-vllm) and
$AGENTIQA_VLLM_MODEL (default .cache/tiny-qwen2vl).
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SERVED_NAME = "tiny-qwen2vl"
KEY = "agentiqa-test-key"  # the API key the tests' servers take (it must stay out of traces)

# guidance, not xgrammar: xgrammar let control characters into JSON strings. No free
# whitespace: with a random model the any-whitespace grammar never reaches the closing brace.
STRUCTURED_OUTPUTS = {"backend": "guidance", "disable_any_whitespace": True}


def venv_python() -> Path:
    return Path(os.environ.get("AGENTIQA_VLLM_VENV", ROOT / ".venv-vllm")) / "bin" / "python"


def model_dir() -> Path:
    return Path(os.environ.get("AGENTIQA_VLLM_MODEL", ROOT / ".cache" / "tiny-qwen2vl"))


def missing() -> str | None:
    """Why the real server cannot run here, or None when it can."""
    if not venv_python().is_file():
        return f"no vLLM virtualenv at {venv_python().parent.parent} (run scripts/vllm_env.sh)"
    if not (model_dir() / "model.safetensors").is_file():
        return f"no tiny model at {model_dir()} (run scripts/vllm_env.sh)"
    return None


def skip_unless_available() -> None:
    """Skip the calling test when the server cannot run here; fail instead under
    AGENTIQA_REQUIRE_VLLM=1 (CI, which installed it: a skip there would hide a broken setup)."""
    reason = missing()
    if reason is None:
        return
    import pytest

    if os.environ.get("AGENTIQA_REQUIRE_VLLM") == "1":
        pytest.fail(f"AGENTIQA_REQUIRE_VLLM=1 but {reason}")
    pytest.skip(reason)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def server_env() -> dict[str, str]:
    env = dict(os.environ)
    env.update(
        {
            "VLLM_CPU_KVCACHE_SPACE": "1",  # GiB; the default reserves far more than needed
            # The model worker runs inside the engine process: one fewer python start-up
            # (~10 s) and ~0.8 GB less memory, at no cost for a single CPU worker.
            "VLLM_ENABLE_V1_MULTIPROCESSING": "0",
            "HF_HUB_OFFLINE": "1",  # nothing may try the network
            "TRANSFORMERS_OFFLINE": "1",
            "VLLM_NO_USAGE_STATS": "1",
            "DO_NOT_TRACK": "1",
        }
    )
    return env


class VLLMServer:
    def __init__(
        self,
        port: int | None = None,
        *,
        max_model_len: int = 4096,
        max_num_seqs: int = 16,
        eager: bool = True,
        api_key: str | None = None,
        log_path: Path | None = None,
    ) -> None:
        self.port = port or free_port()
        self.root_url = f"http://127.0.0.1:{self.port}"
        self.base_url = self.root_url + "/v1"
        self.log_path = log_path or Path(f"/tmp/agentiqa-vllm-{self.port}.log")
        self.args = [
            str(venv_python()),
            "-m",
            "vllm.entrypoints.openai.api_server",  # the `vllm` script fails for vllm-cpu
            "--model", str(model_dir()),
            "--served-model-name", SERVED_NAME,
            "--host", "127.0.0.1",
            "--port", str(self.port),
            "--dtype", "float32",
            "--max-model-len", str(max_model_len),
            "--max-num-seqs", str(max_num_seqs),
            "--limit-mm-per-prompt", json.dumps({"image": 1, "video": 0}),
            "--structured-outputs-config", json.dumps(STRUCTURED_OUTPUTS),
            "--max-logprobs", "20",
        ]  # fmt: skip
        if api_key:
            self.args += ["--api-key", api_key]
        if eager:
            # torch.compile costs ~40 s at first start and buys nothing for a 0.5 M model.
            self.args.append("--enforce-eager")
        self.proc: subprocess.Popen[bytes] | None = None
        self.started_at = 0.0
        self.ready_seconds: float | None = None

    def start(self) -> VLLMServer:
        self.started_at = time.monotonic()
        with open(self.log_path, "wb") as log:
            # Own session: stop() can end the server's whole process tree and nothing else.
            self.proc = subprocess.Popen(
                self.args,
                stdout=log,
                stderr=subprocess.STDOUT,
                env=server_env(),
                cwd=ROOT,
                start_new_session=True,
            )
        return self

    def wait(self, timeout: float = 240.0) -> float:
        """Block until the server answers /health; returns seconds since start()."""
        assert self.proc is not None, "start() first"
        deadline = self.started_at + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(
                    f"vLLM server exited with {self.proc.returncode}:\n{self.log_tail()}"
                )
            try:
                with urllib.request.urlopen(self.root_url + "/health", timeout=2) as r:
                    if r.status == 200:
                        self.ready_seconds = time.monotonic() - self.started_at
                        return self.ready_seconds
            except OSError:
                pass
            time.sleep(0.5)
        self.stop()
        raise RuntimeError(f"vLLM server not ready after {timeout:.0f} s:\n{self.log_tail()}")

    def stop(self, grace: float = 20.0) -> None:
        if self.proc is None or self.proc.poll() is not None:
            return
        pgid = os.getpgid(self.proc.pid)
        os.killpg(pgid, signal.SIGTERM)
        try:
            self.proc.wait(grace)
        except subprocess.TimeoutExpired:
            os.killpg(pgid, signal.SIGKILL)
            self.proc.wait(10)
        # Engine and worker processes share the group; make sure none outlives the server.
        with contextlib.suppress(ProcessLookupError):
            os.killpg(pgid, signal.SIGKILL)

    def rss_bytes(self) -> int:
        """Resident memory of the server and all its descendants (API, engine, worker)."""
        if self.proc is None:
            return 0
        children: dict[int, list[int]] = {}
        for stat in Path("/proc").glob("[0-9]*/stat"):
            try:
                fields = stat.read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            children.setdefault(int(fields[1]), []).append(int(stat.parent.name))
        total, todo = 0, [self.proc.pid]
        while todo:
            pid = todo.pop()
            todo.extend(children.get(pid, []))
            try:
                for line in Path(f"/proc/{pid}/status").read_text().splitlines():
                    if line.startswith("VmRSS:"):
                        total += int(line.split()[1]) * 1024
            except OSError:
                pass
        return total

    def log_tail(self, lines: int = 30) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return "(no log)"

    def __enter__(self) -> VLLMServer:
        self.start()
        try:
            self.wait()
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def serve() -> Iterator[VLLMServer]:
    """The body of the ``vllm`` fixture (tests/conftest.py): a running server that takes
    ``KEY``, stopped when the module's tests are done (skipped where it cannot run)."""
    skip_unless_available()
    with VLLMServer(api_key=KEY) as srv:
        yield srv


def main() -> int:
    port = int(sys.argv[sys.argv.index("--port") + 1]) if "--port" in sys.argv else None
    reason = missing()
    if reason:
        print(reason, file=sys.stderr)
        return 2
    with VLLMServer(port) as server:
        print(
            f"serving {SERVED_NAME} at {server.base_url} "
            f"(ready in {server.ready_seconds:.1f} s, RSS {server.rss_bytes() / 2**30:.2f} GiB, "
            f"log {server.log_path}); Ctrl-C stops it",
            file=sys.stderr,
        )
        with contextlib.suppress(KeyboardInterrupt):
            server.proc.wait()  # type: ignore[union-attr]
    return 0


if __name__ == "__main__":
    sys.exit(main())
