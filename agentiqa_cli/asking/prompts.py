"""Prompts: one YAML file per role, rendered in a Jinja2 sandbox, each with a bounded schema.

A prompt file holds data only: templates, token limits, and an example reply that
loading checks against the role's reply model. The output schema used for constrained
decoding is not in the file: it is derived from the reply model its role declares (``asking/registry.py``),
and templates quote its string limits as ``limits.<property>``.

Text shared by several prompts (a rule, the way evidence is listed) is written once, as a
Jinja macro in a fragment file ``_fragments/<name>.j2`` beside the prompts, and imported
by the templates (``{% import "looking.j2" as look %}``). A prompt's fingerprint covers
the fragments it uses, so editing a fragment changes the fingerprint of every prompt that
imports it.
"""

from __future__ import annotations

import copy
import hashlib
import json
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any
from weakref import WeakKeyDictionary

from jinja2 import (
    BaseLoader,
    Environment,
    StrictUndefined,
    TemplateError,
    TemplateNotFound,
    meta,
    nodes,
    sandbox,
)
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

from agentiqa_cli.asking.registry import role, roles
from agentiqa_cli.asking.schemas import (
    BUILTIN_VALUES,
    dynamic_names,
    expand_schema,
    string_limits,
)
from agentiqa_cli.asking.template_bounds import (
    BoundedSandbox,
    bounded_range,
    render_bounded,
    unsafe_formats,
)
from agentiqa_cli.errors import ConfigError
from agentiqa_cli.io.read import decode, parse_yaml, read_bytes, read_text
from agentiqa_cli.records import OPTION_LETTERS
from agentiqa_cli.resources import default_prompts_dir
from agentiqa_cli.vlm.base import ImagePart, Message

# Optional template sections leave blank lines behind when they are skipped.
_BLANK_RUNS = re.compile(r"\n[ \t]*(?:\n[ \t]*){2,}")


def _to_json(value: Any) -> str:
    def default(o: Any) -> Any:
        if isinstance(o, BaseModel):
            return o.model_dump(mode="json")
        raise TypeError(f"not JSON serializable: {type(o).__name__}")

    return json.dumps(value, ensure_ascii=False, default=default)


FRAGMENTS = "_fragments"  # sub-folder of a prompts folder holding the shared *.j2 fragments
_FRAGMENT_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*\.j2")


class FragmentLoader(BaseLoader):
    """Fragments by bare file name (``looking.j2``) from ``folders``, the first that has it.

    Nothing outside those folders can be read: names with a path separator are refused,
    and a symlink leading out of its folder counts as missing.
    """

    def __init__(self, folders: Sequence[Path]):
        self.folders = [f.resolve() for f in folders]

    def get_source(
        self, environment: Environment, template: str
    ) -> tuple[str, str, Callable[[], bool]]:
        if _FRAGMENT_NAME.fullmatch(template):
            for folder in self.folders:
                path = (folder / template).resolve()
                if path.parent == folder and path.is_file():
                    mtime = path.stat().st_mtime
                    source = read_text(path, "prompt fragment")
                    return source, str(path), lambda p=path, m=mtime: p.stat().st_mtime == m
        where = ", ".join(str(f) for f in self.folders) or "(no fragment folder)"
        raise TemplateNotFound(f"{template} (fragments are looked up in {where})")


def fragment_folders(prompts_dir: Path | None = None) -> list[Path]:
    """Where the templates of ``prompts_dir`` find fragments: its own ``_fragments``
    first, then the shipped ones (so a user folder overrides a fragment by name)."""
    shipped = default_prompts_dir() / FRAGMENTS
    own = [prompts_dir / FRAGMENTS] if prompts_dir is not None else []
    return [f for f in own if f.is_dir() and f.resolve() != shipped.resolve()] + [shipped]


def make_env(fragments: Sequence[Path] = ()) -> SandboxedEnvironment:
    # Sandboxed: a template can read the variables it is given but cannot reach Python
    # internals. StrictUndefined: a misspelt or missing variable is an error, not "".
    env = BoundedSandbox(  # also bounded in time and size (template_bounds)
        loader=FragmentLoader(fragments or fragment_folders()),
        undefined=StrictUndefined,
        autoescape=False,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=False,
        auto_reload=False,  # fragments are read once per run: no stat of each file per render
    )
    env.globals.update({k: list(v) for k, v in BUILTIN_VALUES.items()})
    env.globals["option_letters"] = OPTION_LETTERS
    env.globals["range"] = bounded_range
    # the reply models' string limits, so a prompt quotes the limit the decoder enforces
    env.globals["limits"] = string_limits(r.schema for r in roles().values())
    env.filters["json"] = _to_json
    return env


@lru_cache(maxsize=1)
def _shipped_env() -> SandboxedEnvironment:
    return make_env()


def _env(context: Any) -> SandboxedEnvironment:
    """The environment passed as validation context ``{"env": ...}``, else the shipped one."""
    env = context.get("env") if isinstance(context, dict) else None
    return env if isinstance(env, SandboxedEnvironment) else _shipped_env()


# what the sandbox refuses at render time, found in the template's syntax tree at load
_UNSAFE_NAMES = frozenset({"mro"}).union(
    sandbox.UNSAFE_FUNCTION_ATTRIBUTES,
    sandbox.UNSAFE_METHOD_ATTRIBUTES,
    sandbox.UNSAFE_GENERATOR_ATTRIBUTES,
    sandbox.UNSAFE_COROUTINE_ATTRIBUTES,
    sandbox.UNSAFE_ASYNC_GENERATOR_ATTRIBUTES,
)


def _unsafe_attributes(ast: TemplateAST) -> list[str]:
    """Attribute names a template reads that start with ``_`` or are Python internals
    (``x.__class__``, ``x['__class__']``, ``x|attr('__class__')``)."""
    names: list[object] = [n.attr for n in ast.find_all(nodes.Getattr)]
    names += [n.arg.value for n in ast.find_all(nodes.Getitem) if isinstance(n.arg, nodes.Const)]
    names += [
        n.args[0].value
        for n in ast.find_all(nodes.Filter)
        if n.name == "attr" and n.args and isinstance(n.args[0], nodes.Const)
    ]
    found = {x for x in names if isinstance(x, str) and (x.startswith("_") or x in _UNSAFE_NAMES)}
    return sorted(found)


# syntax trees by environment and source: a folder's twelve prompts share their fragments,
# and each template is read by several checks at load (parsing is most of loading's time)
_PARSED: WeakKeyDictionary[SandboxedEnvironment, dict[str, TemplateAST]] = WeakKeyDictionary()


def _parse(env: SandboxedEnvironment, source: str) -> TemplateAST:
    """``env.parse(source)``, once per environment (the trees are only read)."""
    trees = _PARSED.setdefault(env, {})
    if source not in trees:
        trees[source] = env.parse(source)
    return trees[source]


@dataclass(frozen=True)
class _Reads:
    """What the load-time checks find in one syntax tree (a fragment's is read once, not
    once per template that imports it)."""

    undeclared: frozenset[str]  # variables it reads that it does not set itself
    unsafe: tuple[str, ...]  # internal attributes it reaches for
    formats: tuple[str, ...]  # what it could hand str.format that the sandbox would refuse


_READS: WeakKeyDictionary[TemplateAST, dict[str, _Reads]] = WeakKeyDictionary()


def _reads(ast: TemplateAST, where: str) -> _Reads:
    """The checks' findings in ``ast``, reported under ``where`` ("" for a prompt's own
    template, else its fragment's file); kept while the tree is (``_PARSED``)."""
    by_where = _READS.setdefault(ast, {})
    if where not in by_where:
        by_where[where] = _Reads(
            frozenset(meta.find_undeclared_variables(ast)),
            tuple(_unsafe_attributes(ast)),
            tuple(unsafe_formats({where: ast})),
        )
    return by_where[where]


def _fragments_of(env: SandboxedEnvironment, ast: TemplateAST) -> dict[str, TemplateAST]:
    """Every fragment ``ast`` imports or includes, transitively, parsed, by name."""
    found: dict[str, TemplateAST] = {}
    todo = [ast]
    while todo:
        for name in meta.find_referenced_templates(todo.pop()):
            if name is None:
                raise ValueError("fragment names must be literal strings")
            if name not in found:
                assert env.loader is not None
                found[name] = _parse(env, env.loader.get_source(env, name)[0])
                todo.append(found[name])
    return found


def _fragment_digest(env: SandboxedEnvironment, names: Iterable[str]) -> str:
    assert env.loader is not None
    h = hashlib.sha256()
    for name in sorted(names):
        h.update(f"\0{name}\0".encode() + env.loader.get_source(env, name)[0].encode())
    return h.hexdigest()


class PromptSpec(BaseModel):
    """One role's prompt, as loaded from ``prompts/<name>.yaml``."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field(pattern=r"^[a-z][a-z0-9_]*$")
    version: int | str
    description: str = Field(min_length=1)
    inputs: dict[str, str] = Field(description="template variable → what the pipeline passes")
    defaults: dict[str, Any] = Field(default_factory=dict)
    system: str = Field(min_length=1)
    user: str = Field(min_length=1)
    example: dict[str, Any]
    example_vars: dict[str, Any] = Field(
        default_factory=dict, description="schema_for arguments the example was written for"
    )
    max_tokens: int = Field(512, ge=16, le=8192)
    top_logprobs: int = Field(0, ge=0, le=20)

    _sha256: str = PrivateAttr("")
    _env: SandboxedEnvironment | None = PrivateAttr(None)
    _templates: dict[str, Any] = PrivateAttr(default_factory=dict)  # compiled when first used
    _fragments: tuple[str, ...] = PrivateAttr(())
    _fragments_sha256: str = PrivateAttr("")
    _digest: str = PrivateAttr("")  # own hash + sha256, kept (the trace asks per request)

    @model_validator(mode="before")
    @classmethod
    def _no_schema(cls, data: Any) -> Any:
        if isinstance(data, dict) and "schema" in data:
            raise ValueError(
                "'schema' is not read from prompt files: a role's output schema comes from "
                "its reply model (declared with the role: agentiqa_cli/asking/registry.py); delete the key"
            )
        return data

    @field_validator("name")
    @classmethod
    def _role(cls, v: str) -> str:
        if v not in roles():
            raise ValueError(f"no role named {v!r}; the roles are {', '.join(roles())}")
        return v

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
        env = _env(info.context)
        try:
            ast = _parse(env, v)
            fragments = _fragments_of(env, ast)
        except TemplateNotFound as e:
            raise ValueError(f"fragment not found: {e}") from None
        except TemplateError as e:
            raise ValueError(f"template syntax error: {e}") from None
        reads = [_reads(ast, "")] + [_reads(f, f"_fragments/{n}") for n, f in fragments.items()]
        declared = set(info.data.get("inputs", {})) | set(env.globals)
        unknown = sorted(frozenset().union(*(r.undeclared for r in reads)) - declared)
        if unknown:
            raise ValueError(f"template uses undeclared variables: {', '.join(unknown)}")
        unsafe = sorted({a for r in reads for a in r.unsafe})
        if unsafe:
            raise ValueError(
                f"unsafe template: it reaches for internal attribute(s) {', '.join(unsafe)}, "
                "which the sandbox refuses when rendering"
            )
        formats = list(dict.fromkeys(f for r in reads for f in r.formats))
        if formats:
            raise ValueError(
                f"unsafe template: str.format with {', '.join(formats)} (attribute or item "
                "access in a format string is refused; use Jinja expressions instead)"
            )
        return v

    @model_validator(mode="after")
    def _example_fits_reply(self) -> PromptSpec:
        model = role(self.name).reply
        try:
            model.model_validate(self.example)
        except ValidationError as e:
            raise ValueError(f"example is not a valid {model.__name__}: {e.errors()[0]}") from None
        return self

    def model_post_init(self, context: Any) -> None:
        env = self._env = _env(context)
        names = {n for t in (self.system, self.user) for n in _fragments_of(env, _parse(env, t))}
        self._fragments = tuple(sorted(names))
        self._fragments_sha256 = _fragment_digest(env, names)

    # -- identity for the trace header ------------------------------------------------

    @property
    def sha256(self) -> str:
        """Hash of the file the prompt was loaded from (of its content if built in code),
        of the fragments it uses and of its output schema."""
        own = self._sha256 or hashlib.sha256(self.model_dump_json().encode()).hexdigest()
        if not self._digest.startswith(own):
            schema = json.dumps(role(self.name).schema, sort_keys=True)
            digest = hashlib.sha256(f"{own}:{self._fragments_sha256}:{schema}".encode())
            self._digest = own + digest.hexdigest()
        return self._digest[len(own) :]

    @property
    def fragments(self) -> tuple[str, ...]:
        """The fragment files the templates use, directly or through other fragments."""
        return self._fragments

    @property
    def fingerprint(self) -> str:
        return f"{self.name}@{self.version}#{self.sha256[:12]}"

    # -- schema -----------------------------------------------------------------------

    @property
    def output_schema(self) -> dict[str, Any]:
        """The role's output schema with run-time directives, from its reply model."""
        return copy.deepcopy(role(self.name).schema)

    @property
    def dynamic_names(self) -> set[str]:
        """``schema_for`` arguments this schema needs (built-ins excluded)."""
        return dynamic_names(role(self.name).schema)  # reads it only: no copy

    def schema_for(self, **values: object) -> dict[str, Any]:
        """The plain JSON Schema for this request, directives expanded."""
        missing = sorted(self.dynamic_names - set(values))
        if missing:
            raise ConfigError(
                f"prompt {self.name!r}: its schema needs values for {', '.join(missing)}"
            )
        try:
            return expand_schema(role(self.name).schema, values)  # builds a new schema
        except ValueError as e:
            raise ConfigError(f"prompt {self.name!r}: {e}") from None

    # -- rendering ----------------------------------------------------------------------

    def render(self, images: Sequence[ImagePart] = (), **variables: object) -> list[Message]:
        """System and user messages; ``images`` go with the user message, not its text."""
        context = {**self.defaults, **variables}
        missing = [k for k in self.inputs if k not in context]
        if missing:
            raise ConfigError(f"prompt {self.name!r}: missing template variables: {missing}")
        context = {k: context[k] for k in self.inputs}
        # the string limits of this role's own reply (a name may differ between replies)
        context["limits"] = string_limits([role(self.name).schema])
        texts: dict[str, str] = {}
        if not self._templates:  # start-up time: a run compiles only the prompts it renders
            env = self._env or _shipped_env()
            self._templates = {
                "system": env.from_string(self.system),
                "user": env.from_string(self.user),
            }
        for part, template in self._templates.items():
            try:
                text = render_bounded(template.generate(context))
                texts[part] = _BLANK_RUNS.sub("\n\n", text).strip()
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


def option_letters(n: int) -> list[str]:
    """The answer letters for ``n`` options (the interpret schema's ``letters``)."""
    if not 1 <= n <= len(OPTION_LETTERS):
        raise ConfigError(f"a question needs 1 to {len(OPTION_LETTERS)} options, got {n}")
    return list(OPTION_LETTERS[:n])


# -- loading --------------------------------------------------------------------------------


def load_prompt(path: Path, env: SandboxedEnvironment | None = None) -> PromptSpec:
    """One prompt file; its fragments come from ``env`` (default: the file's own folder's
    ``_fragments``, then the shipped ones)."""
    env = env or make_env(fragment_folders(path.parent))
    raw = read_bytes(path, "")  # a regular UTF-8 file, bounded; exit 2 otherwise
    data = parse_yaml(decode(raw, str(path)), str(path))
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: a prompt file must be a mapping")
    try:
        spec = PromptSpec.model_validate(data, context={"env": env})
    except ValidationError as e:
        err = e.errors()[0]
        where = ".".join(str(p) for p in err["loc"]) or "(top level)"
        raise ConfigError(f"{path}: field {where}: {err['msg']}") from None
    if spec.name != path.stem:
        raise ConfigError(f"{path}: field name: {spec.name!r} must match the file name")
    spec._sha256 = hashlib.sha256(raw).hexdigest()
    return spec


def load_prompts(folder: Path, required: Iterable[str] | None = None) -> dict[str, PromptSpec]:
    """Every ``*.yaml`` prompt in ``folder``, by name; the ``required`` roles (default: every declared role) must be there.

    Fragments: a template's ``{% import "x.j2" ... %}`` / ``{% include "x.j2" %}`` reads
    ``folder/_fragments/x.j2`` if it exists, else the shipped ``_fragments/x.j2``. So a user's
    ``--prompts`` folder can hold copies of the shipped prompts alone (they keep using the
    shipped fragments), or its own ``_fragments`` folder with a fragment of the same name to
    change that text for every prompt of the folder, or new fragments under new names.
    """
    if not folder.is_dir():
        raise ConfigError(f"prompts folder not found: {folder}")
    env = make_env(fragment_folders(folder))
    prompts = {p.stem: load_prompt(p, env) for p in sorted(folder.glob("*.yaml"))}
    missing = [r for r in (roles() if required is None else required) if r not in prompts]
    if missing:
        raise ConfigError(f"{folder}: missing prompts for roles: {', '.join(missing)}")
    return prompts
