"""Tools are typed Python methods; their signature and docstring are the schema the model reads.

``@tool`` marks a method of an :class:`~agentgym.env.Env` as a tool. The JSON schema comes from the
type hints (through pydantic), each parameter's description from the Google-style ``Args:`` section,
and the tool's description from the docstring's text above it. A parameter with no type hint or no
description is refused when the class is defined, not when a model first calls it.

Tools may be ``async def`` (the usual case: they await a sandbox or a client) or plain ``def``: a
plain one runs in a worker thread (``asyncio.to_thread``), so a blocking call inside it (a database,
a file, a CPU-bound check) does not stall the other episodes on the event loop.
"""

from __future__ import annotations

import asyncio
import inspect
import re
from collections.abc import Callable
from typing import Any, get_type_hints

from pydantic import BaseModel, ConfigDict, Field, ValidationError, create_model

from agentgym.types import ToolSpec

OUTPUT_CHARS = 16000
"""How much of a command's output a shell tool returns (the SWE and terminal envs' ``bash``)."""
_ARGS_HEADER = re.compile(r"^\s*(Args|Arguments|Parameters):\s*$")
_SECTION_HEADER = re.compile(r"^\s*(Returns|Raises|Yields|Examples?|Notes?):\s*$")
_ARG_LINE = re.compile(r"^\s*(\*{0,2}\w+)\s*(\([^)]*\))?\s*:\s*(.*)$")


def parse_docstring(doc: str) -> tuple[str, dict[str, str]]:
    """Split a Google-style docstring into its description and a ``{parameter: description}`` map."""
    lines = inspect.cleandoc(doc or "").splitlines()
    description: list[str] = []
    args: dict[str, str] = {}
    section = "description"
    current: str | None = None
    arg_indent = None
    for line in lines:
        if _ARGS_HEADER.match(line):
            section, current, arg_indent = "args", None, None
            continue
        if _SECTION_HEADER.match(line):
            section = "other"
            continue
        if section == "description":
            description.append(line)
        elif section == "args" and line.strip():
            indent = len(line) - len(line.lstrip())
            match = _ARG_LINE.match(line)
            if match and (arg_indent is None or indent <= arg_indent):
                arg_indent = indent
                current = match.group(1).lstrip("*")
                args[current] = match.group(3).strip()
            elif current is not None:
                args[current] = (args[current] + " " + line.strip()).strip()
    return "\n".join(description).strip(), args


class ToolFunction:
    """A tool: the function, its spec for the model, and a pydantic model that validates arguments."""

    def __init__(self, fn: Callable[..., Any], *, name: str | None = None, final: bool = False) -> None:
        self.fn = fn
        self.name = name or fn.__name__
        self.final = final
        self.is_async = inspect.iscoroutinefunction(fn)
        if not self.name.isidentifier():
            raise TypeError(f"tool name {self.name!r} is not an identifier: models and trainers call tools by name")
        description, arg_docs = parse_docstring(fn.__doc__ or "")
        if not description:
            raise TypeError(f"tool {self.name!r} needs a docstring: it is the description the model reads")
        hints = get_type_hints(fn)
        fields: dict[str, Any] = {}
        for pname, param in inspect.signature(fn).parameters.items():
            if pname == "self":
                continue
            if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
                raise TypeError(f"tool {self.name!r}: *args/**kwargs cannot be described to a model")
            if pname not in hints:
                raise TypeError(f"tool {self.name!r}: parameter {pname!r} needs a type hint")
            if pname not in arg_docs:
                raise TypeError(f"tool {self.name!r}: parameter {pname!r} needs a description under Args:")
            default = ... if param.default is inspect.Parameter.empty else param.default
            fields[pname] = (hints[pname], Field(default, description=arg_docs[pname]))
        self.arguments_model: type[BaseModel] = create_model(  # type: ignore[call-overload]
            f"{self.name}_arguments", __config__=ConfigDict(extra="forbid"), **fields
        )
        schema = self.arguments_model.model_json_schema()
        schema.pop("title", None)
        for prop in schema.get("properties", {}).values():
            prop.pop("title", None)
        schema.setdefault("required", [])
        self.spec = ToolSpec(name=self.name, description=description, parameters=schema, final=final)

    async def call(self, owner: Any, arguments: dict[str, Any]) -> Any:
        """Run the tool on ``owner`` (the env) with validated ``arguments``; a sync tool runs in a thread."""
        if self.is_async:
            return await self.fn(owner, **arguments)
        return await asyncio.to_thread(self.fn, owner, **arguments)

    def validate(self, arguments: dict[str, Any]) -> dict[str, Any]:
        """Check arguments against the schema; raises ``ValueError`` with a message a model can act on."""
        try:
            model = self.arguments_model.model_validate(arguments)
        except ValidationError as e:
            problems = "; ".join(
                f"{'.'.join(str(p) for p in err['loc']) or 'arguments'}: {err['msg']}" for err in e.errors()
            )
            raise ValueError(problems) from None
        return dict(model.__dict__)  # the fields, by name (extra="forbid": nothing else)


def tool(fn: Callable[..., Any] | None = None, *, name: str | None = None, final: bool = False) -> Any:
    """Mark a method as a tool the model may call (``async def``, or ``def`` to run it in a thread).

    Args:
        fn: The method (when used as a bare ``@tool``).
        name: The name the model sees; the method's name by default.
        final: Calling this tool ends the episode (``terminated``), e.g. ``submit``.
    """

    def mark(f: Callable[..., Any]) -> Callable[..., Any]:
        f.__agentgym_tool__ = ToolFunction(f, name=name, final=final)  # type: ignore[attr-defined]
        return f

    return mark(fn) if fn is not None else mark


def collect_tools(cls: type, *, reserved: frozenset[str] = frozenset()) -> dict[str, ToolFunction]:
    """All tools of a class and its bases (mixins included), by the name the model sees, in definition order.

    A subclass's tool replaces a base's tool of the same name.

    Raises:
        TypeError: a tool's method name or model-facing name is in ``reserved`` (the env's own
            members: a tool called ``close`` would replace ``Env.close``), naming the tool and class.
    """
    found: dict[str, ToolFunction] = {}
    for klass in reversed(cls.__mro__):
        for attr_name, attr in vars(klass).items():
            spec = getattr(attr, "__agentgym_tool__", None)
            if not isinstance(spec, ToolFunction):
                continue
            clash = next((n for n in (attr_name, spec.name) if n in reserved), None)
            if clash is not None:
                raise TypeError(
                    f"{klass.__name__}: tool {spec.name!r} is named like the environment's own member {clash!r}, "
                    "which it would replace; give the tool another name"
                )
            found[spec.name] = spec
    return found


def cut(text: str, limit: int = OUTPUT_CHARS) -> str:
    """``text``, or its head and tail with a note of how much was cut from the middle: a tool's long
    output keeps both the command's start and its end (where errors and summaries are)."""
    if len(text) <= limit:
        return text
    half = limit // 2
    return f"{text[:half]}\n[... {len(text) - 2 * half} characters cut ...]\n{text[-half:]}"
