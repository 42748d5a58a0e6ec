"""Run settings. Precedence: command-line flags > environment (AGENTIQA_*) > project config
file > user config file > defaults (docs/configuration.md)."""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any, Literal
from urllib.parse import urlsplit, urlunsplit

from pydantic import BaseModel, ConfigDict, Field, SecretStr, ValidationError, field_validator

from agentiqa_cli.errors import ConfigError
from agentiqa_cli.io.read import load_yaml
from agentiqa_cli.records import LearnedTools

DEFAULT_QUERY = "How is the overall quality of this image?"
CONFIG_FILE_NAME = "agentiqa.yaml"
USER_CONFIG = Path("agentiqa") / "config.yaml"


class Settings(BaseModel):
    model_config = ConfigDict(extra="forbid", validate_assignment=True)

    vlm: str = Field("rules", description="rules | http(s)://HOST:PORT/v1 | vllm:MODEL_PATH")
    model: str | None = Field(None, description="model name served at --vlm URL")
    api_key: SecretStr | None = None
    vlm_fallback: Literal["none", "rules"] = "none"
    concurrency: int = Field(4, ge=1, le=256)
    timeout: float = Field(120.0, gt=0, description="seconds per VLM request")
    retries: int = Field(3, ge=0, le=10)
    image_pixels: int = Field(
        448 * 448, ge=64 * 64, description="pixel budget of images sent to the VLM"
    )
    device: str = "auto"
    tools: list[str] | None = None
    fusion: Literal["mean", "min"] = Field(
        "min", description="how `score` and the agent fuse the tools: min (the worst) or mean"
    )
    learned_tools: LearnedTools = Field(
        "auto",
        description="tools that need downloaded weights, offered to the agent: auto (those "
        "whose weights are cached), on (all; missing weights are downloaded), off (none)",
    )
    evidence: bool = Field(
        True, description="show the detectors' readings to the VLM (off: the paper's prompts)"
    )
    zoom: Literal["off", "on", "auto"] = Field(
        "auto",
        description="context-aware probing: close-ups of the original (auto: images above "
        "4x the VLM pixel budget, with a VLM; the rules backend reads every pixel already)",
    )
    zoom_turns: int = Field(6, ge=1, le=6, description="VLM calls per probe, final included")
    query: str = DEFAULT_QUERY
    max_pixels: int = Field(100_000_000, ge=1)
    prompts_dir: Path | None = None
    cards_dir: Path | None = None
    calibration: Path | None = None
    recursive: bool = False
    experience: Path | None = Field(
        None, description="experience pool (agentiqa experience build): tool choices it has learnt"
    )
    evolve: bool = Field(False, description="add each assessed image's records to the pool")
    engine: Literal["local", "ray"] = Field(
        "local", description="where images are processed: this process, or Ray Data workers"
    )
    ray_address: str | None = Field(
        None, description="Ray cluster for --engine ray (default: a local instance)"
    )
    ray_gpus: float = Field(
        0.0,
        ge=0.0,
        description="GPUs each Ray worker holds (learned tools on GPU nodes; 0: CPU workers)",
    )

    @field_validator("learned_tools", mode="before")
    @classmethod
    def _tri_state(cls, v: object) -> object:
        """``--learned-tools``/``--no-learned-tools`` and yes/no in files and the
        environment (AGENTIQA_LEARNED_TOOLS=1) mean on/off; unset is auto."""
        words = {"1": "on", "true": "on", "yes": "on", "0": "off", "false": "off", "no": "off"}
        if isinstance(v, bool):
            return "on" if v else "off"
        if isinstance(v, str):
            return words.get(v.strip().lower(), v.strip().lower())
        return v

    def redacted(self) -> dict[str, Any]:
        """Settings for the trace header: secrets never leave the process."""
        d = self.model_dump(mode="json")
        d["api_key"] = "***" if self.api_key else None
        d["vlm"] = redact_url(self.vlm)
        return d

    def fingerprint(self, *parts: Any, include_agent: bool = True) -> str:
        """Hash of the settings that change results (plus extra parts), for resume keys."""
        fields = {"tools", "fusion"}  # the calibration overlay is hashed by content, not path
        if include_agent:
            fields |= {"vlm", "model", "vlm_fallback", "query", "image_pixels", "learned_tools",
                       "evidence", "zoom", "zoom_turns", "experience", "evolve"}  # fmt: skip
        relevant = self.model_dump(mode="json", include=fields)
        blob = json.dumps([relevant, *parts], sort_keys=True, default=str)
        return hashlib.sha256(blob.encode()).hexdigest()[:16]


def redact_url(url: str) -> str:
    """Drop credentials and query strings (``user:pass@``, ``?key=``) from a URL."""

    if "://" not in url:
        return url
    parts = urlsplit(url)
    host = parts.hostname or ""
    netloc = host + (f":{parts.port}" if parts.port else "")
    if parts.username or parts.password:
        netloc = "***@" + netloc
    return urlunsplit((parts.scheme, netloc, parts.path, "***" if parts.query else "", ""))


# Credentials as they appear in text a server echoes back (an error page that quotes the
# request, a log line): an Authorization scheme and its token, a key or token field, the
# user:password of a URL, a query string's values.
_CREDENTIALS = [
    (re.compile(r"(?i)\b(basic|bearer|token|digest)(\s+)[A-Za-z0-9._~+/=-]{6,}"), r"\1\2***"),
    (
        re.compile(
            r"(?i)\b((?:x-)?api[-_]?key|access[-_]?token|auth[-_]?token|password|passwd|secret)"
            r"(\"?\s*[:=]\s*\"?)([^\s\"'&,;}]+)"
        ),
        r"\1\2***",
    ),
    (re.compile(r"(?i)\b([a-z][a-z0-9+.-]*://)[^/\s@]+@"), r"\1***@"),
    (re.compile(r"([?&][^=&\s#\"']+)=([^&\s#\"']+)"), r"\1=***"),
]


def redact_text(text: str, secrets: Iterable[str] = ()) -> str:
    """``text`` with each of ``secrets`` (exact strings: a key, a password, their encoded
    forms) and anything shaped like a credential replaced by ``***``."""
    for secret in sorted(secrets, key=len, reverse=True):
        if secret:
            text = text.replace(secret, "***")
    for pattern, repl in _CREDENTIALS:
        text = pattern.sub(repl, text)
    return text


_ENV_ALIASES = {"AGENTIQA_VLM_URL": "vlm"}


def _from_env(environ: dict[str, str]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name in Settings.model_fields:
        key = f"AGENTIQA_{name.upper()}"
        if key in environ and environ[key] != "":
            out[name] = environ[key]
    for key, name in _ENV_ALIASES.items():
        if environ.get(key) and name not in out:
            out[name] = environ[key]
    if isinstance(out.get("tools"), str):
        out["tools"] = [t for t in out["tools"].split(",") if t.strip()]
    return out


def _from_file(path: Path, what: str = "config file") -> dict[str, Any]:
    data = load_yaml(path, what)  # a regular UTF-8 file, bounded; exit 2 otherwise
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ConfigError(f"{what} {path}: must be a mapping of setting: value")
    data = {str(k).replace("-", "_"): v for k, v in data.items()}
    if "api_key" in data:
        raise ConfigError(f"{what} {path}: put api_key in AGENTIQA_API_KEY, not in a file")
    return data


def user_config_path(environ: dict[str, str]) -> Path | None:
    """``$XDG_CONFIG_HOME/agentiqa/config.yaml``, else ``$HOME/.config/agentiqa/config.yaml``
    (XDG Base Directory Specification 0.8: a relative XDG_CONFIG_HOME is ignored). Read from
    ``environ`` only, so a caller that passes its own environment never reads the real home;
    None when neither variable says where home is."""
    xdg = environ.get("XDG_CONFIG_HOME", "")
    if os.path.isabs(xdg):
        return Path(xdg) / USER_CONFIG
    home = environ.get("HOME", "")
    return Path(home) / ".config" / USER_CONFIG if home else None


_PATH_SETTINGS = frozenset(
    name for name, f in Settings.model_fields.items() if "Path" in str(f.annotation)
)


def _paths_from(values: dict[str, Any], folder: Path) -> dict[str, Any]:
    """The user file's paths (``calibration: cal.yaml``, ``experience: ~/pool.db``) read from
    its own folder, whatever folder agentiqa runs in; ``~`` is the home folder."""
    out = dict(values)
    for name in _PATH_SETTINGS & out.keys():
        if isinstance(out[name], str) and out[name]:
            out[name] = folder / Path(out[name]).expanduser()  # an absolute path stays
    return out


def project_config_path(config_path: Path | None, environ: dict[str, str]) -> Path | None:
    """``--config``, else ``AGENTIQA_CONFIG``, else ``./agentiqa.yaml`` when it exists."""
    if config_path is None and environ.get("AGENTIQA_CONFIG"):
        config_path = Path(environ["AGENTIQA_CONFIG"])
    if config_path is None and Path(CONFIG_FILE_NAME).is_file():
        config_path = Path(CONFIG_FILE_NAME)
    return config_path


def load_settings(
    flags: dict[str, Any],
    config_path: Path | None = None,
    environ: dict[str, str] | None = None,
) -> Settings:
    """Merge the layers; ``flags`` holds only options the user actually gave (None = not given).

    The user file lies under the project file whichever way that one was found (``--config``
    included): it holds a person's defaults (their VLM server, their device), the project
    file what a project decides. A setting that fails validation is reported with the layer
    that gave it (the file's path, the variable, or the flag)."""
    env = dict(os.environ if environ is None else environ)
    layers: list[tuple[str, dict[str, Any]]] = []
    user = user_config_path(env)
    if user is not None and os.path.lexists(user):  # absent is fine; a directory is not
        values = _paths_from(_from_file(user, "user config file"), user.parent)
        layers.append((f"user config file {user}", values))
    project = project_config_path(config_path, env)
    if project is not None:
        layers.append((f"config file {project}", _from_file(project)))
    from_env = _from_env(env)
    aliases = {name: key for key, name in _ENV_ALIASES.items()}
    layers += [(f"environment {_env_name(k, env, aliases)}", {k: v}) for k, v in from_env.items()]
    layers.append(("command line", {k: v for k, v in flags.items() if v is not None}))
    merged: dict[str, Any] = {}
    source: dict[str, str] = {}
    for where, values in layers:
        merged.update(values)
        source.update(dict.fromkeys(values, where))
    try:
        return Settings.model_validate(merged)
    except ValidationError as e:
        err = e.errors()[0]
        where = ".".join(str(p) for p in err["loc"])
        origin = source.get(str(err["loc"][0])) if err["loc"] else None
        raise ConfigError(
            f"setting {where}: {err['msg']}" + (f" (from {origin})" if origin else "")
        ) from None


def _env_name(name: str, env: dict[str, str], aliases: dict[str, str]) -> str:
    key = f"AGENTIQA_{name.upper()}"
    return key if env.get(key) else aliases.get(name, key)
