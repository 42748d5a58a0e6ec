"""Bounds on rendering a prompt template: what Jinja's sandbox keeps from Python internals,
this keeps from time and memory.

- ``range`` yields at most ``MAX_STEPS`` values over one whole render, however the loops
  nest (Jinja's own ``range`` caps each call at 100 000: two nested loops were 10¹⁰ steps);
- ``*`` and ``**`` refuse a result that would be a string or list longer than
  ``MAX_CHARS``, or a number with more than ``MAX_DIGITS`` digits (``'x' * 300000000``);
- the rendered text is refused past ``MAX_CHARS`` characters or ``MAX_SECONDS`` seconds;
- at load, ``str.format`` with a replacement field that reads an attribute or an item
  (``"{0.__class__}".format(x)``), or on a string that is not a literal, is refused: the
  sandbox would only refuse it when rendering, image after image.
"""

from __future__ import annotations

import math
import string
import time
from collections.abc import Iterable, Iterator
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


def unsafe_formats(asts: Iterable[TemplateAST]) -> list[str]:
    """``.format``/``.format_map`` calls a template makes that the sandbox would refuse or
    that cannot be checked now: a replacement field reading an attribute or an item, or a
    format string that is not a literal."""
    found: list[str] = []
    for ast in asts:
        for call in ast.find_all(nodes.Call):
            fn = call.node
            if not (isinstance(fn, nodes.Getattr) and fn.attr in ("format", "format_map")):
                continue
            if not isinstance(fn.node, nodes.Const) or not isinstance(fn.node.value, str):
                found.append(f".{fn.attr} on a value that is not a literal string")
                continue
            try:
                fields = [f for _, f, _, _ in string.Formatter().parse(fn.node.value) if f]
            except ValueError:
                found.append(f"a malformed format string {fn.node.value[:40]!r}")
                continue
            found += [f"{{{f}}}" for f in fields if any(c in f for c in ".[")]
    return found
