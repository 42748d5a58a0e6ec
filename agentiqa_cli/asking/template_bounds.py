"""Bounds on rendering a prompt template: what Jinja's sandbox keeps from Python internals,
this keeps from time and memory.

- ``range`` yields at most ``MAX_STEPS`` values over one whole render, however the loops
  nest (Jinja's own ``range`` caps each call at 100 000: two nested loops were 10¹⁰ steps);
- ``*`` and ``**`` refuse a result that would be a string or list longer than
  ``MAX_CHARS``, or a number with more than ``MAX_DIGITS`` digits (``'x' * 300000000``);
- the rendered text is refused past ``MAX_CHARS`` characters or ``MAX_SECONDS`` seconds;
- at load, ``str.format`` with a replacement field that reads an attribute or an item
  (``"{0.__class__}".format(x)``, also reached by ``|attr``, by item or through a
  variable), on a string that is not a literal, or a method named at render, is refused:
  the sandbox would only refuse it when rendering, image after image.
"""

from __future__ import annotations

import math
import re
import string
import time
from collections.abc import Iterable, Iterator, Mapping
from contextvars import ContextVar
from typing import Any

from jinja2 import nodes
from jinja2.exceptions import SecurityError
from jinja2.nodes import Template as TemplateAST
from jinja2.runtime import Context
from jinja2.sandbox import SandboxedEnvironment

MAX_STEPS = 100_000  # range values per render
MAX_CHARS = 4 * 1024 * 1024  # characters of one rendered message, and of any * result
MAX_DIGITS = 10_000
MAX_SECONDS = 5.0

_steps: ContextVar[list[int] | None] = ContextVar("template_steps", default=None)


class BoundedRange:
    """``range`` counted against the render's budget of steps."""

    def __init__(self, r: range):
        self.r = r

    def __len__(self) -> int:
        return len(self.r)

    def __iter__(self) -> Iterator[int]:
        budget = _steps.get()
        for x in self.r:
            if budget is not None:
                budget[0] -= 1
                if budget[0] < 0:
                    raise SecurityError(f"template loops take more than {MAX_STEPS} steps")
            yield x


def bounded_range(*args: int) -> BoundedRange:
    r = range(*args)
    if len(r) > MAX_STEPS:
        raise SecurityError(f"range of {len(r)} values: at most {MAX_STEPS}")
    return BoundedRange(r)


class BoundedSandbox(SandboxedEnvironment):
    """Jinja's sandbox, with ``*`` and ``**`` that cannot build a huge value."""

    intercepted_binops = frozenset({"*", "**"})

    def call_binop(self, context: Context, operator: str, left: Any, right: Any) -> Any:
        if operator == "*":
            for seq, n in ((left, right), (right, left)):
                repeat = isinstance(seq, str | list | tuple) and isinstance(n, int | float)
                if repeat and len(seq) * max(n, 0) > MAX_CHARS:
                    raise SecurityError(f"a value longer than {MAX_CHARS} in a template")
        elif operator == "**" and _big_power(left, right):
            raise SecurityError(f"a number over {MAX_DIGITS} digits in a template")
        return super().call_binop(context, operator, left, right)


def _big_power(base: Any, exp: Any) -> bool:
    if not isinstance(base, int | float) or not isinstance(exp, int | float):
        return False
    if abs(base) <= 1 or exp <= 0:
        return False
    return exp * math.log10(abs(base)) > MAX_DIGITS


def render_bounded(parts: Iterable[str]) -> str:
    """Join a template's ``generate()`` output within the size and time bounds; the
    ``range`` budget is set for the duration."""
    token = _steps.set([MAX_STEPS])
    try:
        t0 = time.monotonic()
        out: list[str] = []
        size = 0
        for chunk in parts:
            size += len(chunk)
            if size > MAX_CHARS:
                raise SecurityError(f"the rendered text is over {MAX_CHARS} characters")
            if time.monotonic() - t0 > MAX_SECONDS:
                raise SecurityError(f"rendering took over {MAX_SECONDS:g} s")
            out.append(chunk)
        return "".join(out)
    finally:
        _steps.reset(token)


_FORMATS = ("format", "format_map")
# a replacement field's name: an argument (a number, a name or nothing), then ``.`` or ``[``
_REACHING = re.compile(r"\w*[.\[]")


def _reaching_fields(text: str) -> list[str]:
    """The replacement fields of ``text``, read as a format string, that read an attribute
    or an item (``{0.__class__}``, ``{x[k]}``), nested format specs included; none when it
    is not a valid format string (it then cannot be formatted at all)."""
    found: list[str] = []
    try:
        parsed = list(string.Formatter().parse(text))
    except ValueError:
        return found
    for _, field, spec, _ in parsed:
        if field is not None and _REACHING.match(field):
            found.append(f"{{{field}}}")
        if spec:
            found += _reaching_fields(spec)
    return found


def _is_text(node: nodes.Node) -> bool:
    return isinstance(node, nodes.Const) and isinstance(node.value, str)


def _names_a_format(node: nodes.Node) -> bool:
    return isinstance(node, nodes.Const) and node.value in _FORMATS


def unsafe_formats(asts: Mapping[str, TemplateAST]) -> list[str]:
    """What a template (by the name to report it under: "" for the prompt's own template,
    else its fragment's file) could hand to ``str.format``/``format_map`` that the sandbox
    would refuse only when rendering, image after image:

    - a literal string with a replacement field reading an attribute or an item, wherever
      it is (the format method can be reached in many ways: ``.format``, ``['format']``,
      ``|attr('format')``, kept in a variable);
    - the format method of a string that is not a literal (its fields are unknown until
      rendering), however it is taken;
    - a method taken by a name computed at render (``x[a ~ b](...)``,
      ``x|attr(name)``): it could be ``format`` on anything."""
    found: list[str] = []
    for where, ast in asts.items():
        at = f" (in {where})" if where else ""
        for const in ast.find_all(nodes.Const):
            if isinstance(const.value, str):
                found += [f + at for f in _reaching_fields(const.value)]
        taken: list[nodes.Node] = []  # the strings whose format method is taken
        taken += [n.node for n in ast.find_all(nodes.Getattr) if n.attr in _FORMATS]
        taken += [n.node for n in ast.find_all(nodes.Getitem) if _names_a_format(n.arg)]
        computed = False
        for f in ast.find_all(nodes.Filter):
            if f.name == "attr" and f.args:
                if _names_a_format(f.args[0]) and f.node is not None:
                    taken.append(f.node)
                computed |= not isinstance(f.args[0], nodes.Const)
        if any(not _is_text(n) for n in taken):
            found.append(f"a format method of a string built at render{at}")
        for call in ast.find_all(nodes.Call):
            fn = call.node
            computed |= isinstance(fn, nodes.Getitem) and not isinstance(fn.arg, nodes.Const)
        if computed:
            found.append(f"a method named at render (could be format){at}")
    return list(dict.fromkeys(found))
