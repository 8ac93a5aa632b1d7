"""Tool methods TRL can describe: each agentgym tool as a method whose hints transformers understands.

TRL shows an environment's tools to the model through transformers' ``get_json_schema``, which reads
a method's type hints and Google-style docstring and knows only basic types, Enum, Literal and lists,
tuples, dicts and unions of them: a pydantic model in a hint raises ``TypeHintParsingException``
inside the first GRPO step. agentgym tools may take pydantic models, so such a parameter is hinted as
a JSON object (``dict``) on the generated method, and its description carries the model's own JSON
schema, so the model still sees every field. The object the model writes reaches the env as JSON and
is validated into the pydantic model there, as on every other path. Any hint transformers still
cannot read is refused when the class is generated, with the tool's and parameter's names.
"""

from __future__ import annotations

import inspect
import json
import types
import typing
from collections.abc import Callable
from typing import Any, get_args, get_origin, get_type_hints

from pydantic import BaseModel

from agentgym.errors import EnvError
from agentgym.tools import ToolFunction, parse_docstring


def plain_hint(hint: Any) -> Any:
    """``hint`` with every pydantic model in it replaced by ``dict`` (a JSON object)."""
    if isinstance(hint, type) and issubclass(hint, BaseModel):
        return dict
    origin, args = get_origin(hint), get_args(hint)
    if origin is None or origin is typing.Literal or not args:
        return hint
    plain = tuple(plain_hint(a) for a in args)
    if plain == args:
        return hint
    if origin is typing.Union or origin is types.UnionType:
        return typing.Union[plain]  # noqa: UP007 (built from a tuple of types)
    return origin[plain]


def _inline(schema: Any, defs: dict[str, Any], seen: frozenset[str] = frozenset()) -> Any:
    """``schema`` with its ``$ref``s to ``$defs`` replaced by the definitions (recursive models stop at one level)."""
    if isinstance(schema, list):
        return [_inline(s, defs, seen) for s in schema]
    if not isinstance(schema, dict):
        return schema
    ref = schema.get("$ref", "")
    if ref.startswith("#/$defs/"):
        name = ref.removeprefix("#/$defs/")
        if name in seen:
            return {"type": "object"}
        return _inline({**defs[name], **{k: v for k, v in schema.items() if k != "$ref"}}, defs, seen | {name})
    return {k: _inline(v, defs, seen) for k, v in schema.items() if k not in ("title", "$defs")}


def tool_method(tool: ToolFunction, call: Callable[[Any, str, dict[str, Any]], str]) -> Callable[..., str]:
    """A method named like ``tool``, with its parameters and description, that runs ``call(self, name, arguments)``.

    The docstring is rebuilt from agentgym's own reading of the tool's, so both paths describe the
    tool the same way; a parameter hinted with a pydantic model gets its JSON schema appended.
    """

    def method(self: Any, **arguments: Any) -> str:
        return call(self, tool.name, arguments)

    signature = inspect.signature(tool.fn)
    hints = get_type_hints(tool.fn)
    description, arg_docs = parse_docstring(tool.fn.__doc__ or "")
    schema = tool.spec.parameters
    params, annotations, lines = [], {}, []
    for name, param in signature.parameters.items():
        if name == "self":
            continue
        hint = plain_hint(hints[name])
        doc = arg_docs[name]
        if hint is not hints[name]:
            own = {k: v for k, v in schema["properties"][name].items() if k != "description"}
            doc = f"{doc} JSON schema: {json.dumps(_inline(own, schema.get('$defs', {})))}"
        params.append(param.replace(annotation=hint))
        annotations[name] = hint
        lines.append(f"    {name}: {doc}")
    method.__name__ = method.__qualname__ = tool.name
    method.__doc__ = description + ("\n\nArgs:\n" + "\n".join(lines) if lines else "")
    method.__signature__ = signature.replace(  # type: ignore[attr-defined]
        parameters=[inspect.Parameter("self", inspect.Parameter.POSITIONAL_OR_KEYWORD), *params],
        return_annotation=str,
    )
    method.__annotations__ = {**annotations, "return": str}
    return method


def check_describable(method: Callable[..., Any], owner: str) -> None:
    """Raise :class:`EnvError` now if transformers cannot turn ``method`` into a tool schema."""
    from transformers.utils.chat_template_utils import get_json_schema

    try:
        get_json_schema(method)
    except Exception as e:  # transformers raises TypeHintParsingException / DocstringParsingException
        reason = str(e).split(". ")[0].rstrip(".")  # its advice (write the schema by hand) does not apply here
        raise EnvError(
            f"tool {method.__name__!r} of {owner} cannot be shown to a model through TRL's environment_factory: "
            f"transformers says: {reason}. Use basic types, Literal or Enum, pydantic models, or lists, dicts and "
            "unions of them; or train through agentgym.trl.rollout_spec, which uses agentgym's own schemas."
        ) from e
