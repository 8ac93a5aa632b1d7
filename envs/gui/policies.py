"""Scripted GUI policies: a reference that reads the DOM text to find its target, and random clicks.

The reference plays through the same tools a model gets and reads only what a model reads: the
instruction in the opening message and the DOM text of the latest observation (it needs
``observation="dom"`` or ``"both"``). Each solved task has a small solver that maps (instruction,
DOM, the actions taken so far) to the next single action, so every turn carries one action with the
page it was chosen on: the unit the action-prediction dataset records. A task with no solver, or a
page where a solver finds no target, gets ``finish`` (the env's ``done`` tool: ``Env.done`` is taken).

:class:`WrongPlayPolicy` plays every solver wrong on purpose (the wrong element, the wrong text):
the check that a page does not reward a wrong play as a win.

``random`` (the ``baseline``) clicks a uniformly random point of the task area every turn.
"""

from __future__ import annotations

import json
import random

from agentgym.envs.gui.observe import parse_dom
from agentgym.envs.gui.solvers import SOLVERS, Action, Page
from agentgym.errors import EnvError
from agentgym.policies.base import Reply
from agentgym.types import Message, Task, ToolCall, ToolSpec, assistant

SOLVED_TASKS = tuple(sorted(SOLVERS))
"""The tasks the reference policy has a solver for (``names="reference"``)."""


def _call(messages: list[Message], action: Action) -> Reply:
    turn = sum(m.role == "assistant" for m in messages)
    name, arguments = action
    return Reply(message=assistant(tool_calls=[ToolCall(id=f"call_{turn}", name=name,
                                                        arguments=json.dumps(arguments))]))


def instruction_of(messages: list[Message]) -> str:
    """The instruction the GUI env states in its opening message (``Instruction: ...``)."""
    opening = next((m.text for m in messages if m.role == "user"), "")
    first = opening.split("\n", 1)[0]
    return first.removeprefix("Instruction: ").strip()


def history_of(messages: list[Message]) -> list[Action]:
    """The actions the assistant has taken so far, as (name, arguments)."""
    out: list[Action] = []
    for m in messages:
        for call in m.tool_calls if m.role == "assistant" else []:
            try:
                out.append((call.name, json.loads(call.arguments)))
            except ValueError:
                continue
    return out


class ReferencePolicy:
    """Read the instruction and the latest DOM text (and the earlier ones), and take the solver's next action."""

    name = "reference"
    wrong = False

    async def act(self, messages: list[Message], tools: list[ToolSpec], *, task: Task) -> Reply:
        pages = [parse_dom(m.text) for m in messages if m.role == "user"]
        dom = pages[-1] if pages else parse_dom("")
        if not dom.nodes:
            raise EnvError("the reference GUI policy reads the DOM text: use observation='dom' or 'both'")
        solver = SOLVERS.get(str(task.data.get("miniwob", task.id)))
        action: Action | None = None
        if solver is not None:
            try:
                action = solver(Page(instruction_of(messages), dom, history_of(messages), wrong=self.wrong,
                                     earlier=tuple(pages[:-1])))
            except (LookupError, StopIteration, ValueError, TypeError, KeyError):
                action = None  # the solver found no target on this page
        return _call(messages, action or ("finish", {}))


class WrongPlayPolicy(ReferencePolicy):
    """The reference's solvers playing wrong: each picks a wrong target or text where it would pick the right one."""

    name = "reference-wrong"
    wrong = True


class RandomClickPolicy:
    """Click a uniformly random point of the 160x210 task area every turn: the floor to beat."""

    name = "random"

    def __init__(self, seed: int = 0) -> None:
        self.rng = random.Random(seed)

    async def act(self, messages: list[Message], tools: list[ToolSpec], *, task: Task) -> Reply:
        from agentgym.envs.gui.page import HEIGHT, WIDTH

        x, y = round(self.rng.uniform(0, WIDTH), 1), round(self.rng.uniform(0, HEIGHT), 1)
        point: dict[str, object] = {"x": x, "y": y}
        return _call(messages, ("click", point))
