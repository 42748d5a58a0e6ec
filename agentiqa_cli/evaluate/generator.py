"""Run a generator command once per prompt, safely: no shell, a timeout, every failure a
message (which becomes the sample's error row; the evaluation goes on).

The template is split like a shell would (``shlex``) *before* the placeholders are filled,
so a prompt with spaces, quotes or ``; rm -rf`` stays one argument and is never run.
Placeholders: ``{prompt}``, ``{out}`` (required: where the image must be written) and
``{seed}``.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shlex
import signal
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from agentiqa_cli.errors import ConfigError

PLACEHOLDERS = ("{prompt}", "{out}", "{seed}")
STDERR_TAIL = 300


@dataclass(frozen=True)
class Generator:
    argv: tuple[str, ...]  # the split template, placeholders still in it
    timeout: float = 600.0

    @classmethod
    def parse(cls, template: str, timeout: float = 600.0) -> Generator:
        try:
            argv = tuple(shlex.split(template))
        except ValueError as e:
            raise ConfigError(f"--generator: cannot split the command: {e}") from None
        if not argv:
            raise ConfigError("--generator: empty command")
        if not any("{out}" in a for a in argv):
            raise ConfigError("--generator: the command must name the image it writes as {out}")
        if timeout <= 0:
            raise ConfigError("--generator-timeout must be positive")
        return cls(argv, timeout)

    def command(self, prompt: str, out: Path, seed: int) -> list[str]:
        values = {"{prompt}": prompt, "{out}": str(out), "{seed}": str(seed)}
        cmd = []
        for arg in self.argv:
            for key, value in values.items():
                arg = arg.replace(key, value)
            cmd.append(arg)
        return cmd

    async def run(self, prompt: str, out: Path, seed: int) -> str | None:
        """Generate one image at ``out``; None when it was written, else why not."""
        out.parent.mkdir(parents=True, exist_ok=True)
        with contextlib.suppress(FileNotFoundError):
            out.unlink()  # a stale file must not pass for this call's image
        cmd = self.command(prompt, out, seed)
        # stderr goes to a file, not a pipe: the generator's exit ends the call, while a
        # pipe's end comes only when every process holding it is gone (a server the
        # generator left running in the background would make each call time out)
        with tempfile.TemporaryFile() as stderr:
            try:
                proc = await asyncio.create_subprocess_exec(
                    *cmd,
                    stdin=asyncio.subprocess.DEVNULL,
                    stdout=asyncio.subprocess.DEVNULL,
                    stderr=stderr,
                    start_new_session=True,  # a timeout kills the generator's children too
                )
            except OSError as e:
                return f"generator could not start: {e.strerror or e} ({cmd[0]})"
            try:
                await asyncio.wait_for(proc.wait(), self.timeout)
            except asyncio.TimeoutError:
                _kill_group(proc)
                await proc.wait()
                return f"generator timed out after {self.timeout:g} s"
            err = _tail(stderr)
        if proc.returncode != 0:
            tail = err.decode("utf-8", "replace").strip().splitlines()
            last = tail[-1][:STDERR_TAIL] if tail else "no message"
            return f"generator exited with {proc.returncode}: {last}"
        if not out.is_file() or out.stat().st_size == 0:
            return f"generator wrote no image at {out}"
        return None


def _tail(f: IO[bytes], keep: int = 64 * 1024) -> bytes:
    """The last ``keep`` bytes written to ``f`` (its last line is what is shown)."""
    size = f.seek(0, os.SEEK_END)
    f.seek(max(0, size - keep))
    return f.read()


def _kill_group(proc: asyncio.subprocess.Process) -> None:
    """Kill the generator and what it started (its own session, by its pid only)."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        with contextlib.suppress(ProcessLookupError):
            proc.kill()
