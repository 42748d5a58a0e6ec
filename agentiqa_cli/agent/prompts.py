"""Prompts: one YAML file per role, rendered in a Jinja2 sandbox, each with a bounded schema.

A prompt file holds data only: templates, the output JSON schema used for constrained
decoding (with the run-time directives of ``agent/schemas.py``), and an example reply
that loading checks against the role's reply model.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import yaml
from jinja2 import StrictUndefined, TemplateError, meta
from jinja2.exceptions import SecurityError, UndefinedError
from jinja2.nodes import Template as TemplateAST
from jinja2.sandbox import SandboxedEnvironment
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PrivateAttr,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)

from agentiqa_cli.agent.probe_records import ProbeFinalReply, ProbeTurnReply
from agentiqa_cli.agent.replies import (
    AnalyzeReply,
    DetectReply,
    InterpretReply,
    ScoreReply,
    SelectReply,
)
from agentiqa_cli.agent.schemas import (
    BUILTIN_VALUES,
    dynamic_names,
    expand_schema,
    schema_problems,
)
from agentiqa_cli.errors import ConfigError
from agentiqa_cli.records import Plan
from agentiqa_cli.vlm.base import ImagePart, Message

ROLES: tuple[str, ...] = (
    "planner",
    "detect",
    "analyze",
    "examine",
    "select",
    "summarize",
    "interpret",
)

# The reply model each shipped role's output is validated into.
REPLY_MODELS: dict[str, type[BaseModel]] = {
    "planner": Plan,
    "detect": DetectReply,
    "analyze": AnalyzeReply,
    "examine": AnalyzeReply,
    "select": SelectReply,
    "summarize": ScoreReply,
    "interpret": InterpretReply,
    # optional roles (not in ROLES): validated when their files are present
    "probe": ProbeTurnReply,
    "probe_final": ProbeFinalReply,
}

OPTION_LETTERS = "ABCDEF"  # InterpretReply.final_answer's alphabet

# Optional template sections leave blank lines behind when they are skipped.
_BLANK_RUNS = re.compile(r"\n[ \t]*(?:\n[ \t]*){2,}")


def _to_json(value: Any) -> str:
    def default(o: Any) -> Any:
        if isinstance(o, BaseModel):
            return o.model_dump(mode="json")
        raise TypeError(f"not JSON serializable: {type(o).__name__}")

    return json.dumps(value, ensure_ascii=False, default=default)


def _make_env() -> SandboxedEnvironment:
    # Sandboxed: a template can read the variables it is given but cannot reach Python
    # internals. StrictUndefined: a misspelt or missing variable is an error, not "".
    env = SandboxedEnvironment(
        undefined=StrictUndefined,
        autoescape=False,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=False,
    )
    env.globals.update({k: list(v) for k, v in BUILTIN_VALUES.items()})
    env.globals["option_letters"] = OPTION_LETTERS
    env.filters["json"] = _to_json
    return env


_ENV = _make_env()


def _parse(source: str) -> TemplateAST:
    return _ENV.parse(source)


class PromptSpec(BaseModel):
    """One role's prompt, as loaded from ``prompts/<name>.yaml``."""

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)

    name: str = Field(pattern=r"^[a-z][a-z0-9_]*$")
    version: int | str
    description: str = Field(min_length=1)
    inputs: dict[str, str] = Field(description="template variable → what the pipeline passes")
    defaults: dict[str, Any] = Field(default_factory=dict)
    system: str = Field(min_length=1)
    user: str = Field(min_length=1)
    output_schema: dict[str, Any] = Field(alias="schema")
    example: dict[str, Any]
    example_vars: dict[str, Any] = Field(
        default_factory=dict, description="schema_for arguments the example was written for"
    )
    max_tokens: int = Field(512, ge=16, le=8192)
    top_logprobs: int = Field(0, ge=0, le=20)

    _sha256: str = PrivateAttr("")
    _templates: dict[str, Any] = PrivateAttr(default_factory=dict)

    @field_validator("version")
    @classmethod
    def _version(cls, v: int | str) -> int | str:
        if isinstance(v, str) and not re.fullmatch(r"\d+\.\d+\.\d+", v):
            raise ValueError(f"version must be an integer or semver X.Y.Z, got {v!r}")
        return v

    @field_validator("defaults")
    @classmethod
    def _defaults_declared(cls, v: dict[str, Any], info: ValidationInfo) -> dict[str, Any]:
        inputs = info.data.get("inputs", {})
        extra = sorted(set(v) - set(inputs))
        if extra:
            raise ValueError(f"defaults for undeclared inputs: {', '.join(extra)}")
        return v

    @field_validator("system", "user")
    @classmethod
    def _template(cls, v: str, info: ValidationInfo) -> str:
        try:
            ast = _parse(v)
        except TemplateError as e:
            raise ValueError(f"template syntax error: {e}") from None
        declared = set(info.data.get("inputs", {})) | set(_ENV.globals)
        unknown = sorted(meta.find_undeclared_variables(ast) - declared)
        if unknown:
            raise ValueError(f"template uses undeclared variables: {', '.join(unknown)}")
        return v

    @field_validator("output_schema")
    @classmethod
    def _schema(cls, v: dict[str, Any]) -> dict[str, Any]:
        problems = schema_problems(v, directives=True)
        if problems:
            raise ValueError("; ".join(problems[:3]))
        return v

    @model_validator(mode="after")
    def _example_fits_reply(self) -> PromptSpec:
        model = REPLY_MODELS.get(self.name)
        if model is None:
            return self
        props = self.output_schema.get("properties", {})
        wanted = {n for n, f in model.model_fields.items() if f.is_required()}
        missing = sorted(wanted - set(props))
        extra = sorted(set(props) - set(model.model_fields))
        if missing or extra:
            raise ValueError(
                f"schema properties disagree with {model.__name__}: "
                f"missing {missing or '-'}, unknown {extra or '-'}"
            )
        try:
            model.model_validate(self.example)
        except ValidationError as e:
            raise ValueError(f"example is not a valid {model.__name__}: {e.errors()[0]}") from None
        return self

    def model_post_init(self, __context: Any) -> None:
        self._templates = {
            "system": _ENV.from_string(self.system),
            "user": _ENV.from_string(self.user),
        }

    # -- identity for the trace header ------------------------------------------------

    @property
    def sha256(self) -> str:
        """Hash of the file the prompt was loaded from (of its content if built in code)."""
        return self._sha256 or hashlib.sha256(self.model_dump_json().encode()).hexdigest()

    @property
    def fingerprint(self) -> str:
        return f"{self.name}@{self.version}#{self.sha256[:12]}"

    @property
    def reply_model(self) -> type[BaseModel] | None:
        return REPLY_MODELS.get(self.name)

    # -- schema -----------------------------------------------------------------------

    @property
    def dynamic_names(self) -> set[str]:
        """``schema_for`` arguments this schema needs (built-ins excluded)."""
        return dynamic_names(self.output_schema)

    def schema_for(self, **values: Any) -> dict[str, Any]:
        """The plain JSON Schema for this request, directives expanded."""
        missing = sorted(self.dynamic_names - set(values))
        if missing:
            raise ConfigError(
                f"prompt {self.name!r}: its schema needs values for {', '.join(missing)}"
            )
        try:
            return expand_schema(self.output_schema, values)
        except ValueError as e:
            raise ConfigError(f"prompt {self.name!r}: {e}") from None

    # -- rendering ----------------------------------------------------------------------

    def render(self, images: Sequence[ImagePart] = (), **variables: Any) -> list[Message]:
        """System and user messages; ``images`` go with the user message, not its text."""
        context = {**self.defaults, **variables}
        missing = [k for k in self.inputs if k not in context]
        if missing:
            raise ConfigError(f"prompt {self.name!r}: missing template variables: {missing}")
        context = {k: context[k] for k in self.inputs}
        texts: dict[str, str] = {}
        for part, template in self._templates.items():
            try:
                texts[part] = _BLANK_RUNS.sub("\n\n", template.render(context)).strip()
            except SecurityError as e:
                raise ConfigError(f"prompt {self.name!r} {part}: unsafe template: {e}") from e
            except UndefinedError as e:
                raise ConfigError(f"prompt {self.name!r} {part}: {e}") from e
            except (TemplateError, TypeError, ValueError) as e:
                raise ConfigError(f"prompt {self.name!r} {part}: render failed: {e}") from e
        return [
            Message(role="system", text=texts["system"]),
            Message(role="user", text=texts["user"], images=list(images)),
        ]


def render(spec: PromptSpec, images: Sequence[ImagePart] = (), **variables: Any) -> list[Message]:
    return spec.render(images, **variables)


def option_letters(n: int) -> list[str]:
    """The answer letters for ``n`` options (the interpret schema's ``letters``)."""
    if not 1 <= n <= len(OPTION_LETTERS):
        raise ConfigError(f"a question needs 1 to {len(OPTION_LETTERS)} options, got {n}")
    return list(OPTION_LETTERS[:n])


# -- loading --------------------------------------------------------------------------------


def load_prompt(path: Path) -> PromptSpec:
    try:
        raw = path.read_bytes()
        data = yaml.safe_load(raw.decode("utf-8"))
    except (OSError, UnicodeDecodeError) as e:
        raise ConfigError(f"{path}: cannot read prompt: {e}") from None
    except yaml.YAMLError as e:
        raise ConfigError(f"{path}: invalid YAML: {e}") from None
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: a prompt file must be a mapping")
    try:
        spec = PromptSpec.model_validate(data)
    except ValidationError as e:
        err = e.errors()[0]
        where = ".".join(str(p) for p in err["loc"]) or "(top level)"
        raise ConfigError(f"{path}: field {where}: {err['msg']}") from None
    if spec.name != path.stem:
        raise ConfigError(f"{path}: field name: {spec.name!r} must match the file name")
    spec._sha256 = hashlib.sha256(raw).hexdigest()
    return spec


def load_prompts(folder: Path, required: Iterable[str] = ROLES) -> dict[str, PromptSpec]:
    """Every ``*.yaml`` prompt in ``folder``, by name; the ``required`` roles must be there."""
    if not folder.is_dir():
        raise ConfigError(f"prompts folder not found: {folder}")
    prompts = {p.stem: load_prompt(p) for p in sorted(folder.glob("*.yaml"))}
    missing = [r for r in required if r not in prompts]
    if missing:
        raise ConfigError(f"{folder}: missing prompts for roles: {', '.join(missing)}")
    return prompts


def prompt_versions(prompts: Mapping[str, PromptSpec]) -> dict[str, dict[str, str]]:
    """``{name: {version, sha256}}`` for the run trace header."""
    return {
        name: {"version": str(spec.version), "sha256": spec.sha256[:16]}
        for name, spec in sorted(prompts.items())
    }
