"""The role registry: each role declares, in one place beside its input type, what it is.

A role is a question the pipeline asks a VLM (or the rules backend). Its declaration names
the typed input (``RoleInput`` subclass, whose ``role`` is also the prompt's file name,
``data/prompts/<role>.yaml``), the reply model the answer is validated into (its JSON
schema constrains decoding), the trace step its calls are recorded under, and the rules
backend's answer. The module that defines a role registers it when imported::

    register(Role(FixInput, FixReply, step="imperfect", answer=rules_fix))

Adding a role is that declaration plus its prompt file. The shipped roles are declared in
the modules of ``DECLARED_IN`` (agent/, evaluate/, imperfect/), imported by name when the
whole set is read (loading prompts), like a plugin list: this package imports no feature.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel

from agentiqa_cli.asking.schemas import reply_schema, schema_problems
from agentiqa_cli.records import Step
from agentiqa_cli.vlm.base import RoleInput

if TYPE_CHECKING:
    from agentiqa_cli.tools.cards import CardSet

# the rules backend's answer to one role input (deterministic; the tool cards at hand)
RulesAnswer = Callable[[Any, "CardSet"], BaseModel]

# the modules that declare the shipped roles (each registers its own when imported)
DECLARED_IN: tuple[str, ...] = (
    "agentiqa_cli.agent.roles",
    "agentiqa_cli.evaluate.planning",
    "agentiqa_cli.imperfect.roles",
)


@dataclass(frozen=True)
class Role:
    """One role: typed input, reply model, trace step, the rules backend's answer (None:
    the rules backend does not answer it through a model, e.g. probing runs its rules
    version itself)."""

    inputs: type[RoleInput]
    reply: type[BaseModel]
    step: Step
    answer: RulesAnswer | None
    schema: dict[str, Any] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        schema = reply_schema(self.reply)
        problems = schema_problems(schema, directives=True)
        if problems:  # a programming error: every shipped reply must decode in bounded time
            raise TypeError(f"{self.reply.__name__}: {'; '.join(problems[:3])}")
        object.__setattr__(self, "schema", schema)

    @property
    def name(self) -> str:
        """The role's name: its input's ``role``, its prompt's file name."""
        return self.inputs.role


_ROLES: dict[str, Role] = {}
_WHERE: dict[str, str] = {}  # role → the module that declared it


def register(role: Role) -> Role:
    """Declare ``role``; declaring another role under a taken name is a programming error."""
    known = _ROLES.get(role.name)
    if known is not None and (known.inputs, known.reply) != (role.inputs, role.reply):
        raise TypeError(f"role {role.name!r} is declared twice")
    _ROLES[role.name] = role
    _WHERE.setdefault(role.name, sys._getframe(1).f_globals.get("__name__", ""))
    return role


def roles() -> Mapping[str, Role]:
    """Every declared role, by name: the shipped ones in ``DECLARED_IN``'s order and each
    module's own (whichever was imported first), then any other."""
    for module in DECLARED_IN:
        # the roles' own modules sit in the layers above (agent, evaluate, imperfect), which
        # this one may not import at its top: imported by name when roles are first listed
        importlib.import_module(module)
    rank = {m: i for i, m in enumerate(DECLARED_IN)}
    order = sorted(_ROLES, key=lambda n: rank.get(_WHERE.get(n, ""), len(rank)))  # stable
    return MappingProxyType({n: _ROLES[n] for n in order})


def role(name: str) -> Role:
    """The declaration of role ``name`` (imports the shipped declarations if need be)."""
    found = _ROLES.get(name) or roles().get(name)
    if found is None:
        raise KeyError(f"no role named {name!r}; the roles are {', '.join(roles())}")
    return found
