"""Every built-in env takes its sandboxes from a runtime the same way, ``make(name, runtime=rt)``, and
closing the runtime closes what it lent: no container and no host process of it is left.

The runtime is handed over, not opened with ``async with`` around the episode: the env must draw from
the one it was given, and the event loop's default runtime (what ``current()`` gives here) must hold
nothing of it.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import psutil
import pytest

import agentgym
from agentgym.env import Env
from agentgym.errors import EnvError
from agentgym.sandboxes import SandboxPool, list_sandboxes, runtime
from agentgym.sandboxes.pool import shared_pools
from agentgym.sandboxes.runtime import SandboxRuntime
from agentgym.types import Message, Task, ToolCall
from tests.conftest import docker_or_skip
from tests.mcp.test_mcp import SANDBOXED
from tests.swe.fixtures import base_commit  # noqa: F401  (the session fixture, for the SWE case)


@dataclass
class Case:
    """One env: how to make it, its task, one tool call, and which kinds of supply it takes from the runtime."""

    kwargs: dict[str, Any]
    task: Callable[[Env, dict[str, Any]], Task]  # from the env and what the case's fixtures prepared
    call: tuple[str, dict[str, Any]]
    supplies: list[str]
    final: tuple[str, dict[str, Any]] | None = None  # ends the episode, so the verifier draws its sandboxes too
    pools: int | None = None  # shared pools it uses in all (the model's, and the verifier's roles')
    docker: bool = True


def first_task(env: Env, prepared: dict[str, Any]) -> Task:
    return env.tasks()[0]


def swe_task(env: Env, prepared: dict[str, Any]) -> Task:
    from agentgym.envs.swe.tasks import SWETask
    from tests.swe import repo

    return SWETask.model_validate(repo.task_row(prepared["base_commit"])).to_task()


MCP_TASK = Task(id="sum", prompt="What is 2 + 3?", data={"answer": "5"})
POOLS, BROWSERS, DRIVER, KEPT = ("shared sandbox pools", "shared browser pools", "Playwright driver",
                                 "container pools")
CASES = {
    "code": Case({"sandbox_backend": "docker"}, first_task, ("python", {"code": "print(6 * 7)"}), [POOLS],
                 final=("submit", {"code": "def has_close_elements(numbers, threshold):\n    return False\n"}),
                 pools=3),
    "search": Case({}, first_task, ("search", {"query": "Super Bowl 50"}), [], docker=False),
    "swe": Case({}, swe_task, ("bash", {"command": "git status --short"}), [KEPT]),
    "gui": Case({"names": "click-button", "observation": "dom", "sandbox_backend": "docker"}, first_task,
                ("click", {"x": 1, "y": 1}), [BROWSERS, DRIVER]),
    "mcp": Case({"servers": [SANDBOXED], "tasks": [MCP_TASK], "sandbox_backend": "docker"}, lambda env, p: MCP_TASK,
                ("whoami", {}), [POOLS], pools=1),
    "toy": Case({}, first_task, ("hint", {}), [], docker=False),
}
SLOW = {"swe", "gui"}  # a repository image's container; a Chromium


@pytest.fixture
def prepared(name: str, request: pytest.FixtureRequest) -> dict[str, Any]:
    """What a case needs made before its test runs: the SWE tiny repository's image and base commit."""
    if CASES[name].docker:
        docker_or_skip()
    return {"base_commit": request.getfixturevalue("base_commit")} if name == "swe" else {}


def ours() -> set[str]:
    """This process's containers (every agentgym container is labelled with its owner's pid)."""
    return {c.id for c in list_sandboxes({"agentgym.owner_pid": str(os.getpid())})}


def children() -> set[int]:
    """This process's descendants: local sandboxes, Playwright's driver, MCP servers on the host."""
    return {p.pid for p in psutil.Process().children(recursive=True) if p.status() != psutil.STATUS_ZOMBIE}


def call(name: str, arguments: dict[str, Any]) -> Message:
    return Message(role="assistant", tool_calls=[ToolCall(id="c1", name=name, arguments=json.dumps(arguments))])


@pytest.mark.parametrize("name", [pytest.param(n, marks=[pytest.mark.slow] if n in SLOW else []) for n in CASES])
async def test_every_env_takes_its_sandboxes_from_the_runtime_it_is_given_and_closing_it_leaves_nothing(
    name: str, prepared: dict[str, Any]
) -> None:
    case = CASES[name]
    await runtime.shutdown()  # the default runtime's sandboxes (earlier tests') gone, so what is left now is ours
    containers, processes = ours(), children()
    rt = SandboxRuntime()
    env = agentgym.make(name, runtime=rt, **case.kwargs)
    try:
        await env.reset(case.task(env, prepared))
        step = await env.step(call(*case.call))
        assert step.observation and env.trajectory is not None
        assert env.trajectory.turns[-1].tool_errors == [], step.observation[0].text
        if case.final is not None:
            assert (await env.step(call(*case.final))).terminated
            assert env.trajectory.outcome == "terminated", env.trajectory.failure  # graded, not an error
        assert rt.kinds() == case.supplies  # what it drew, it drew from the runtime it was given
        if case.pools is not None:
            assert len(shared_pools(rt)) == case.pools
        assert runtime.current().kinds() == []  # and nothing from the default one
        assert bool(ours() - containers) == case.docker  # the check below can fail: there was something to close
    finally:
        await env.close()
        await rt.close()
    assert ours() <= containers, f"{name}: containers left after the runtime closed: {ours() - containers}"
    assert children() <= processes, f"{name}: processes left after the runtime closed: {children() - processes}"
    assert runtime.current().kinds() == []


@pytest.mark.parametrize("name", ["swe", "gui"])
def test_an_env_that_takes_no_provider_refuses_one_and_says_to_pass_a_runtime(name: str) -> None:
    with pytest.raises(EnvError, match=r"runtime=, a SandboxRuntime"):
        agentgym.make(name, sandbox_backend=SandboxPool("local"))
