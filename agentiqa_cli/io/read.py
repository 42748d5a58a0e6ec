"""The one reader of the small files a run is configured by: config, calibration overlays,
tool cards, prompts and their fragments, ``--tiers`` CSVs.

Only a regular file is read (a FIFO would block, ``/dev/zero`` never ends), opened without
blocking and measured before reading, at most ``limit`` bytes; the text must be UTF-8; a
YAML or JSON error of any kind (bad syntax, nesting deep enough to exhaust the recursion
limit, an integer over Python's 4,300-digit conversion limit) is a ConfigError (exit 2)
naming the file, never an internal error.
"""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path
from typing import Any

import yaml

from agentiqa_cli.errors import ConfigError

MAX_TEXT_BYTES = 8 * 1024 * 1024  # far above any card, prompt, config or overlay
_NONBLOCK = getattr(os, "O_NONBLOCK", 0)
# what parsing hostile text can raise besides the parser's own errors: nesting too deep,
# an integer too long to convert, a number too large for a float
_PARSE_ERRORS = (RecursionError, ValueError, OverflowError, TypeError)

# libyaml's safe loader when PyYAML was built with it: the same data, ~10× less start-up time
# for the tool cards and prompts every command reads
SAFE_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def read_bytes(path: Path, what: str, limit: int = MAX_TEXT_BYTES) -> bytes:
    """The bytes of a regular file of at most ``limit`` bytes; ConfigError otherwise."""
    name = f"{what} {path}".strip()
    try:
        fd = os.open(path, os.O_RDONLY | _NONBLOCK | getattr(os, "O_NOCTTY", 0))
    except OSError as e:
        raise ConfigError(f"{name}: {e.strerror or e}") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            kind = "a folder" if stat.S_ISDIR(st.st_mode) else "a device, pipe or socket"
            raise ConfigError(f"{name}: not a regular file ({kind})")
        if st.st_size > limit:
            raise ConfigError(f"{name}: {st.st_size} bytes, over the {limit}-byte limit")
        chunks, size = [], 0
        while chunk := os.read(fd, 1 << 20):
            size += len(chunk)
            if size > limit:  # grew while read
                raise ConfigError(f"{name}: over the {limit}-byte limit")
            chunks.append(chunk)
        return b"".join(chunks)
    except OSError as e:
        raise ConfigError(f"{name}: {e.strerror or e}") from None
    finally:
        os.close(fd)


def read_text(path: Path, what: str, limit: int = MAX_TEXT_BYTES) -> str:
    """``read_bytes`` decoded as UTF-8 (a leading BOM dropped)."""
    return decode(read_bytes(path, what, limit), f"{what} {path}".strip())


def decode(data: bytes, where: str) -> str:
    """UTF-8 text (a leading BOM dropped); ConfigError naming the first bad byte."""
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        bad = data[e.start : e.start + 1]
        raise ConfigError(f"{where}: not UTF-8 text (byte {e.start}: {bad!r})") from None


def parse_yaml(text: str, where: str, loader: Any = None) -> Any:
    """YAML text as data; ConfigError for every way it can fail."""
    try:
        return yaml.load(text, Loader=loader or SAFE_LOADER)  # (only safe loaders are passed)
    except yaml.YAMLError as e:
        raise ConfigError(f"{where}: invalid YAML: {e}") from None
    except _PARSE_ERRORS as e:
        raise ConfigError(f"{where}: invalid YAML: {_why(e)}") from None


def parse_json(text: str | bytes, where: str) -> Any:
    """JSON text as data; ConfigError for every way it can fail."""
    try:
        return json.loads(text)
    except (json.JSONDecodeError, *_PARSE_ERRORS) as e:
        raise ConfigError(f"{where}: invalid JSON: {_why(e)}") from None


def load_yaml(path: Path, what: str, loader: Any = None, limit: int = MAX_TEXT_BYTES) -> Any:
    """A YAML file read by ``read_text`` and parsed by ``parse_yaml``."""
    return parse_yaml(read_text(path, what, limit), f"{what} {path}".strip(), loader)


def _why(e: BaseException) -> str:
    if isinstance(e, RecursionError):
        return "nested too deeply"
    return str(e).splitlines()[0][:200] if str(e) else type(e).__name__
