"""Output schemas for constrained decoding: run-time directives and a boundedness check.

A prompt's schema is plain JSON Schema plus three directives for the parts that depend
on the run (tool names, the plan's objects, the distortion set, option letters):

- ``enum_from: NAME`` becomes ``enum: [...]`` with the values of ``NAME``;
- ``keys_from: NAME`` + ``each: SCHEMA`` becomes a closed object with one required
  property per key of ``NAME`` (a list, or a mapping whose value is then ``@value``
  inside ``each``);
- ``items_from: NAME`` + ``each: SCHEMA`` becomes a fixed-length array with one item
  per value (each value is ``@value`` inside ``each``).

``NAME`` is a value passed to ``expand_schema``, a built-in (``categories``,
``severities``, ``present_severities``, ``levels``), or ``@value``.

A role's schema in that form is derived from its reply model by ``reply_schema``
(declared with its role, ``asking/registry.py``), so a field's type, enum and length limits are written once.
"""

from __future__ import annotations

import copy
import math
import re
import types
from collections.abc import Iterable, Mapping
from typing import Annotated, Any, Literal, Union, get_args, get_origin

from annotated_types import Ge, Le, MaxLen, MinLen
from pydantic import BaseModel
from pydantic.fields import FieldInfo

from agentiqa_cli.records import CATEGORIES, LEVELS, SEVERITIES, Decode

BUILTIN_VALUES: dict[str, tuple[str, ...]] = {
    "categories": CATEGORIES,
    "severities": SEVERITIES,
    "present_severities": SEVERITIES[1:],
    "levels": LEVELS,
}

# What vLLM's guidance backend (llguidance) implements; any other validation keyword
# makes the server reject the request ("Unimplemented keys"), so a prompt may not use it.
PORTABLE_KEYWORDS = frozenset(
    {
        "anyOf",
        "const",
        "enum",
        "type",
        "items",
        "prefixItems",
        "minItems",
        "maxItems",
        "properties",
        "patternProperties",
        "additionalProperties",
        "required",
        "minProperties",
        "maxProperties",
        "minLength",
        "maxLength",
        "pattern",
        "minimum",
        "maximum",
    }
)
ANNOTATIONS = frozenset({"title", "description", "$comment"})
DIRECTIVES = frozenset({"enum_from", "keys_from", "items_from", "each"})
_UNBOUNDED_REGEX = re.compile(r"[*+]|\{\d+,\}")

# -- directive expansion ------------------------------------------------------------------

_NO_ITEM = object()


def _lookup(name: Any, values: Mapping[str, Any], item: Any) -> Any:
    if name == "@value":
        if item is _NO_ITEM or item is None:
            raise ValueError("'@value' used outside a keys_from mapping or items_from list")
        return item
    if not isinstance(name, str) or name not in values:
        raise ValueError(f"no values for {name!r}")
    return values[name]


def _strings(name: Any, values: Mapping[str, Any], item: Any) -> list[str]:
    src = _lookup(name, values, item)
    if isinstance(src, str):
        src = [src]
    if not isinstance(src, Iterable) or isinstance(src, Mapping):
        raise ValueError(f"{name!r} must be a list of strings")
    out = list(dict.fromkeys(str(s) for s in src))
    if not out:
        raise ValueError(f"{name!r} is empty: an empty enum can never be satisfied")
    return out


def _expand(node: Any, values: Mapping[str, Any], item: Any) -> Any:
    if isinstance(node, list):
        return [_expand(x, values, item) for x in node]
    if not isinstance(node, dict):
        return copy.deepcopy(node)
    out: dict[str, Any] = {}
    for key, sub in node.items():
        if key == "enum_from":
            out["enum"] = _strings(sub, values, item)
        elif key in ("keys_from", "items_from", "each"):
            continue
        else:
            out[key] = _expand(sub, values, item)
    if "keys_from" in node:
        src = _lookup(node["keys_from"], values, item)
        pairs = list(src.items()) if isinstance(src, Mapping) else [(k, None) for k in src]
        out["properties"] = {str(k): _expand(node["each"], values, v) for k, v in pairs}
        out["required"] = [str(k) for k, _ in pairs]
        out["additionalProperties"] = False
        out.setdefault("type", "object")
    if "items_from" in node:
        members = _strings(node["items_from"], values, item)
        out["prefixItems"] = [_expand(node["each"], values, m) for m in members]
        out["items"] = False
        out["minItems"] = out["maxItems"] = len(members)
        out.setdefault("type", "array")
    return out


def _directive_names(node: Any) -> set[str]:
    names: set[str] = set()
    if isinstance(node, list):
        for x in node:
            names |= _directive_names(x)
    elif isinstance(node, dict):
        for key, sub in node.items():
            if key in ("enum_from", "keys_from", "items_from") and isinstance(sub, str):
                names.add(sub)
            names |= _directive_names(sub)
    return names


# -- boundedness ---------------------------------------------------------------------------


def schema_problems(schema: Any, directives: bool = False, path: str = "$") -> list[str]:
    """Why constrained decoding with ``schema`` might not terminate or be refused.

    Every string needs ``maxLength`` (or an enum/const), every array ``maxItems``, every
    object closed keys (``additionalProperties: false``, or key patterns of bounded length
    plus ``maxProperties``); only keywords the decoding backend implements are allowed.
    With ``directives`` the unexpanded form (``enum_from``, ``keys_from``...) is checked.
    """
    if not isinstance(schema, dict):
        return [f"{path}: a schema must be a mapping"]
    allowed = PORTABLE_KEYWORDS | ANNOTATIONS | (DIRECTIVES if directives else frozenset())
    problems = [f"{path}: unsupported keyword {k!r}" for k in schema if k not in allowed]
    if ("keys_from" in schema or "items_from" in schema) and "each" not in schema:
        problems.append(f"{path}: keys_from/items_from needs 'each'")
    if "enum" in schema or "const" in schema or "enum_from" in schema:
        return problems
    if "anyOf" in schema:
        for i, branch in enumerate(schema["anyOf"]):
            problems += schema_problems(branch, directives, f"{path}.anyOf[{i}]")
        return problems
    types = schema.get("type")
    if types is None and "keys_from" in schema:
        types = "object"
    elif types is None and "items_from" in schema:
        types = "array"
    if types is None:
        return [*problems, f"{path}: no type, enum or anyOf"]
    for t in [types] if isinstance(types, str) else list(types):
        if t == "string" and "maxLength" not in schema:
            problems.append(f"{path}: string without maxLength")
        elif t in ("number", "integer") and not {"minimum", "maximum"} <= set(schema):
            problems.append(f"{path}: number without minimum and maximum")
        elif t == "array":
            problems += _array_problems(schema, directives, path)
        elif t == "object":
            problems += _object_problems(schema, directives, path)
    return problems


def _array_problems(schema: dict[str, Any], directives: bool, path: str) -> list[str]:
    if "items_from" in schema:
        return schema_problems(schema.get("each"), directives, f"{path}.each")
    problems = [] if "maxItems" in schema else [f"{path}: array without maxItems"]
    for i, sub in enumerate(schema.get("prefixItems", [])):
        problems += schema_problems(sub, directives, f"{path}.prefixItems[{i}]")
    items = schema.get("items")
    if items is None:
        problems.append(f"{path}: array without items")
    elif items is not False:
        problems += schema_problems(items, directives, f"{path}.items")
    return problems


def _object_problems(schema: dict[str, Any], directives: bool, path: str) -> list[str]:
    if "keys_from" in schema:
        return schema_problems(schema.get("each"), directives, f"{path}.each")
    problems: list[str] = []
    patterns = schema.get("patternProperties", {})
    if schema.get("additionalProperties") is not False:
        problems.append(f"{path}: object without additionalProperties: false")
    if patterns and "maxProperties" not in schema:
        problems.append(f"{path}: patternProperties without maxProperties")
    for pattern, sub in patterns.items():
        if _UNBOUNDED_REGEX.search(pattern):
            problems.append(f"{path}: key pattern {pattern!r} has an unbounded repeat")
        problems += schema_problems(sub, directives, f"{path}.patternProperties[{pattern}]")
    for key, sub in schema.get("properties", {}).items():
        problems += schema_problems(sub, directives, f"{path}.{key}")
    unknown = sorted(set(schema.get("required", [])) - set(schema.get("properties", {})))
    if unknown:
        problems.append(f"{path}: required names unknown properties {unknown}")
    return problems


def expand_schema(schema: dict[str, Any], values: Mapping[str, Any]) -> dict[str, Any]:
    """Plain JSON Schema from ``schema``: directives expanded with ``values`` + built-ins.

    Raises ValueError when a needed value is missing or empty.
    """
    out = _expand(schema, {**BUILTIN_VALUES, **values}, _NO_ITEM)
    assert isinstance(out, dict)
    return out


def dynamic_names(schema: Any) -> set[str]:
    """The values ``expand_schema`` needs for ``schema``, built-ins excluded."""
    return _directive_names(schema) - set(BUILTIN_VALUES) - {"@value"}


# -- schemas from reply models -------------------------------------------------------------


def reply_schema(model: type[BaseModel]) -> dict[str, Any]:
    """The output schema (directive form) of a reply model.

    Every property is required and in field order (the decoder writes them all, first
    field first); strings and lists take their bounds from the validated lengths
    (``Field(max_length=...)``) or from ``Decode``; a ``Literal`` becomes an enum; a mapping
    needs ``Decode(keys_from=...)`` or ``Decode(key_pattern=...)``.
    """
    return _schema(model, [])


def _unwrap(tp: Any, meta: list[Any]) -> tuple[Any, list[Any]]:
    """The bare type and all its metadata (``Annotated`` layers, ``Field`` constraints)."""
    meta = list(meta)
    while get_origin(tp) is Annotated:
        tp, *more = get_args(tp)
        meta += more
    flat: list[Any] = []
    for m in meta:
        flat += m.metadata if isinstance(m, FieldInfo) else [m]
    return tp, flat


def _bound(meta: list[Any], name: str) -> int | None:
    """``min_*``/``max_*`` from ``Decode``, else the validated length (``MinLen``/``MaxLen``)."""
    for m in meta:
        if isinstance(m, Decode) and getattr(m, name) is not None:
            return int(getattr(m, name))
    for m in meta:
        if name.startswith("max") and isinstance(m, MaxLen):
            return int(m.max_length)
        if name.startswith("min") and isinstance(m, MinLen):
            return int(m.min_length)
    return None


def _decode(meta: list[Any], name: str) -> Any:
    return next(
        (getattr(m, name) for m in meta if isinstance(m, Decode) and getattr(m, name)), None
    )


def _sized(out: dict[str, Any], meta: list[Any], low: str, high: str, what: str) -> None:
    lo, hi = _bound(meta, "min_" + what), _bound(meta, "max_" + what)
    if lo is not None:
        out[low] = lo
    if hi is not None:
        out[high] = hi


def _schema(tp: Any, meta: list[Any]) -> dict[str, Any]:
    tp, meta = _unwrap(tp, meta)
    origin = get_origin(tp)
    if tp is type(None):
        return {"type": "null"}
    if origin in (Union, types.UnionType):
        return {"anyOf": [_schema(a, []) for a in get_args(tp)]}
    if isinstance(tp, type) and issubclass(tp, BaseModel):
        fields = tp.model_fields
        return {
            "type": "object",
            "additionalProperties": False,
            "required": list(fields),
            "properties": {
                name: _schema(f.annotation, list(f.metadata)) for name, f in fields.items()
            },
        }
    if tp is bool:
        return {"type": "boolean"}
    if tp is float:
        return {"enum": _grid(tp, meta)}
    if tp is int:  # every integer in [ge, le], as an enum for the same reason as a float
        return {"enum": [int(v) for v in _grid(tp, [Decode(grid=1), *meta])]}
    if origin is tuple:
        items = get_args(tp)
        if len(set(items)) != 1:
            raise TypeError(f"{tp}: only tuples of one item type have an output schema")
        n = len(items)
        return {"type": "array", "minItems": n, "maxItems": n, "items": _schema(items[0], meta)}
    if origin is Literal and not all(isinstance(v, str) for v in get_args(tp)):
        return {"enum": list(get_args(tp))}  # e.g. degrees 90 | 180 | 270
    if tp is str or origin is Literal:
        out: dict[str, Any] = {"type": "string"}
        values = get_args(tp)
        if _decode(meta, "enum_from"):
            out["enum_from"] = _decode(meta, "enum_from")
        elif len(values) == 1:
            out["const"] = values[0]
        elif values:
            out["enum"] = list(values)
        else:
            _sized(out, meta, "minLength", "maxLength", "length")
        return out
    if origin is list:
        out = {"type": "array"}
        (item,) = get_args(tp)
        if _decode(meta, "items_from"):
            return {**out, "items_from": _decode(meta, "items_from"), "each": _schema(item, [])}
        _sized(out, meta, "minItems", "maxItems", "items")
        return {**out, "items": _schema(item, [])}
    if origin is dict:
        _, value = get_args(tp)
        if _decode(meta, "keys_from"):
            return {
                "type": "object",
                "keys_from": _decode(meta, "keys_from"),
                "each": _schema(value, []),
            }
        out = {"type": "object"}
        _sized(out, meta, "minProperties", "maxProperties", "items")
        pattern = _decode(meta, "key_pattern")
        if pattern is None:
            raise TypeError(
                f"{tp}: a mapping needs Decode(keys_from=...) or Decode(key_pattern=...)"
            )
        return {
            **out,
            "additionalProperties": False,
            "patternProperties": {pattern: _schema(value, [])},
        }
    raise TypeError(f"no output schema for {tp!r}")


def _grid(tp: Any, meta: list[Any]) -> list[float]:
    """A number's values under ``Decode(grid=...)``: low, low + grid, ..., high."""
    decode = [m for m in meta if isinstance(m, Decode)]
    step = next((m.grid for m in decode if m.grid is not None), None)
    low = next((m.low for m in decode if m.low is not None), None)
    high = next((m.high for m in decode if m.high is not None), None)
    for m in meta:
        low = float(m.ge) if low is None and isinstance(m, Ge) else low  # type: ignore[arg-type]
        high = float(m.le) if high is None and isinstance(m, Le) else high  # type: ignore[arg-type]
    if step is None or low is None or high is None:
        raise TypeError(f"{tp}: a number needs Decode(grid=...) and bounds (ge/le or low/high)")
    n = round((float(high) - float(low)) / step)
    digits = max(0, -math.floor(math.log10(step)) + 1)
    return [round(float(low) + k * step, digits) for k in range(n + 1)]


def string_limits(schemas: Iterable[Any]) -> dict[str, int]:
    """Every string property's ``maxLength`` by property name, for prompts to quote (each
    prompt is rendered with its own reply's). A name with different limits in the given
    schemas is left out, so quoting it fails rather than giving a wrong number."""
    found: dict[str, set[int]] = {}

    def walk(node: Any) -> None:
        if isinstance(node, list):
            for x in node:
                walk(x)
        elif isinstance(node, dict):
            for name, sub in node.get("properties", {}).items():
                limit = sub.get("maxLength") if isinstance(sub, dict) else None
                if limit is not None:
                    found.setdefault(name, set()).add(int(limit))
            for sub in node.values():
                walk(sub)

    for schema in schemas:
        walk(schema)
    return {name: next(iter(limits)) for name, limits in found.items() if len(limits) == 1}
