"""The "no dodge" check: whatever a model does to its own episode, the episode ends with a grade.

An ``error`` outcome is no grade: TRL gives the episode no advantage and ``--resume`` replays it, so
a failing policy would rather break its episode than fail it. ``error`` is only for what the model
could not cause (the infrastructure). :func:`check_no_dodge` plays every known way to break an
episode: the ones here, which apply to any env (malformed and unknown calls, arguments of the wrong
type, strings a file system or an encoder refuses, a huge reply, one message of many calls of each
tool), and the env's own (``Env.dodges()``, a :class:`~agentgym.env.Dodge` each). Each must end
``terminated`` or ``truncated`` within its time, and not as a success. No turn of it may run more
tool calls than the env's ``max_calls_per_turn`` (nor than :data:`UNBOUNDED_CALLS`), or take longer
than its ``max_turn_seconds`` (nor than :data:`TURN_SECONDS`) plus one call's time
(:data:`CALL_SECONDS`): a message of many calls must not outlast a driver's turn timeout.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

from agentgym.env import Dodge, Env
from agentgym.types import Message, Task, ToolCall, ToolSpec

HOSTILE_TEXT = "\x00 ../../\u202e\U0001f600" + "x" * 4096
"""A string argument no tool should choke on: a NUL byte, a path climbing out, a right-to-left override,
a character outside the BMP, some length."""
LONE_SURROGATE = "\ud800"
"""Text JSON can carry and UTF-8 cannot (``Env`` refuses it before any tool sees it)."""
HUGE_REPLY_CHARS = 1 << 20
MANY_CALLS = 100
"""Calls in the "many calls in one message" dodge: more than any env should run in one turn."""
UNBOUNDED_CALLS = 64
"""The most calls one turn may run, whatever the env's ``max_calls_per_turn`` says."""
TURN_SECONDS = 120.0
"""The most seconds of calls one turn may start, whatever the env's ``max_turn_seconds`` says."""
CALL_SECONDS = 60.0
"""What one call may add past the env's ``max_turn_seconds`` (it started in time, and runs to its own limit)."""
MANY_CALLS_TEXT = "z" * 500


def generic_dodges(specs: list[ToolSpec]) -> dict[str, Dodge]:
    """The dodges every env is held to, built from the specs of the tools it offers."""
    first = specs[0].name if specs else "no_such_tool"
    out = {
        "malformed tool call": Dodge((_raw_call(first, "{not json"),)),
        "unknown tool": Dodge.calls(("no_such_tool_anywhere", {})),
        "huge reply": Dodge((Message(role="assistant", content="y" * HUGE_REPLY_CHARS),)),
    }
    for spec in specs:
        properties = spec.parameters.get("properties", {})
        out[f"{spec.name} with arguments of the wrong type"] = Dodge.calls(
            (spec.name, {name: _wrong(schema) for name, schema in properties.items()}))
        strings = {name: HOSTILE_TEXT for name, schema in properties.items() if schema.get("type") == "string"}
        if strings:
            plausible = _plausible(properties, spec.parameters.get("required", []))
            out[f"{spec.name} with hostile strings"] = Dodge.calls((spec.name, {**plausible, **strings}))
            out.setdefault("a lone surrogate", Dodge.calls(
                (spec.name, {**plausible, **{key: LONE_SURROGATE for key in strings}})))
    return out


def many_calls_dodges(specs: list[ToolSpec], final: frozenset[str]) -> dict[str, Dodge]:
    """For every tool but those that end the episode (``final``), one message of many calls of it."""
    return {f"{MANY_CALLS} calls of {spec.name} in one message": many_calls(spec)
            for spec in specs if spec.name not in final}


def many_calls(spec: ToolSpec, count: int = MANY_CALLS) -> Dodge:
    """One message of ``count`` calls of ``spec``'s tool, with plausible arguments and long strings."""
    properties = spec.parameters.get("properties", {})
    arguments = {**_plausible(properties, spec.parameters.get("required", [])),
                 **{name: MANY_CALLS_TEXT for name, schema in properties.items() if schema.get("type") == "string"}}
    text = json.dumps(arguments)
    return Dodge((Message(role="assistant", tool_calls=[ToolCall(id=f"many_{i}", name=spec.name, arguments=text)
                                                        for i in range(count)]),))


def unbounded_turn(env: Env) -> str | None:
    """How a turn of ``env``'s current episode broke the bounds of one turn's work, or None."""
    assert env.trajectory is not None
    calls = min(getattr(env, "max_calls_per_turn", UNBOUNDED_CALLS), UNBOUNDED_CALLS)
    seconds = min(float(getattr(env, "max_turn_seconds", TURN_SECONDS)), TURN_SECONDS) + CALL_SECONDS
    for number, turn in enumerate(env.trajectory.turns, 1):
        ran = len(turn.action.tool_calls) - turn.tool_errors.count("turn_limit")
        if ran > calls:
            return f"turn {number} ran {ran} tool calls of one message (at most {calls})"
        if turn.env_seconds > seconds:
            return f"turn {number}'s tool calls took {turn.env_seconds:.1f} s (at most {seconds:g})"
    return None


async def check_no_dodge(instance: Env, name: str, task: Task, *, timeout: float = 300.0,
                         only: list[str] | None = None) -> list[str]:
    """Play every dodge (generic and the env's, or those named in ``only``) on ``instance``; their names.

    A dodge that names no task of its own is played on ``task``.

    Raises:
        EnvCheckError: A dodge ended the episode as an error or a timeout, or was graded a success.
    """
    from agentgym.testing.check_env import EnvCheckError

    try:
        await instance.reset(task, seed=0)  # what tools the env offers (an MCP env learns them from its servers)
    except Exception as e:
        raise EnvCheckError(f"{name}: reset() on {task.id} failed: {type(e).__name__}: {e}") from e
    final = frozenset(name for name, fn in type(instance).tool_functions().items() if fn.final)
    specs = list(instance.tools)
    dodges = {**generic_dodges(specs), **type(instance).dodges(), **many_calls_dodges(specs, final)}
    if only is not None:
        dodges = {key: dodges[key] for key in only}
    for label, dodge in dodges.items():
        where = f"{name}: dodge {label!r}"
        outcome = await _play(instance, dodge, dodge.task or task, timeout)
        if outcome is not None:
            raise EnvCheckError(f"{where}: the episode ended with no grade ({outcome}); a model's action must "
                                "end in a grade (a failure with its reason), and an error is only for what it "
                                "could not cause")
        trajectory = instance.trajectory
        assert trajectory is not None
        unbounded = unbounded_turn(instance)
        if unbounded is not None:
            raise EnvCheckError(f"{where}: {unbounded}: nothing bounds one message's work, so a message of many "
                                "calls outlasts a driver's turn timeout and ends the episode with no grade")
        if trajectory.success:
            raise EnvCheckError(f"{where}: graded a success ({trajectory.outcome_reward:g}) without doing the task")
    return list(dodges)


async def _play(env: Env, dodge: Dodge, task: Task, timeout: float) -> str | None:
    """Play ``dodge``; None when it ended graded, else what it ended in instead."""
    try:
        async with asyncio.timeout(timeout):
            await env.reset(task, seed=0)
            for reply in dodge.replies:
                result = await env.step(reply)
                if result.terminated or result.truncated:
                    break
            if not env.done:
                await env.end()
    except TimeoutError:
        return f"it ran past {timeout:g} s"
    except Exception as e:
        return f"{type(e).__name__}: {str(e)[:500]}"
    trajectory = env.trajectory
    assert trajectory is not None
    if trajectory.outcome not in ("terminated", "truncated") or trajectory.failure:
        return f"outcome {trajectory.outcome}: {trajectory.failure}"
    return None


def _raw_call(name: str, arguments: str) -> Message:
    return Message(role="assistant", tool_calls=[ToolCall(id="dodge_raw", name=name, arguments=arguments)])


def _wrong(schema: dict[str, Any]) -> Any:
    """A value not of ``schema``'s type."""
    return {"nested": [1, 2]} if schema.get("type") in ("string", "integer", "number", "boolean") else "text"


def _plausible(properties: dict[str, Any], required: list[str]) -> dict[str, Any]:
    """Values of the right type for the required parameters, so that a call gets past the schema."""
    kinds = {"integer": 1, "number": 1.0, "boolean": True, "array": [], "object": {}, "string": "x"}
    return {name: kinds.get(properties[name].get("type"), "x") for name in required if name in properties}
