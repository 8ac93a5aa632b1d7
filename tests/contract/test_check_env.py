"""``check_env`` over every registered environment, and the contract breaks it must catch."""

from __future__ import annotations

import asyncio
from typing import Any, ClassVar

import pytest

import agentgym
from agentgym import Dodge, Env, Episode, Message, Reply, Task, ToolSpec, tool
from agentgym.errors import ToolError
from agentgym.testing import EnvCheckError, check_env

ADAPTERS = {"agentgym/mcp-v0"}
"""Envs whose tools and tasks come from the user (MCP servers): no tasks or reference of their own to check;
tests/mcp plays them against real MCP servers."""
DOCKER_ONLY = {"agentgym/swe-v0", "agentgym/terminal-v0"}
"""Envs that need Docker and tasks of the user's: tests/swe/test_env.py and tests/terminal/test_env.py run
check_env on them with their own tasks."""
BUILTIN = [env_id for env_id in agentgym.registered()
           if env_id.startswith("agentgym/") and env_id not in ADAPTERS | DOCKER_ONLY]


def test_the_builtin_envs_are_all_checked() -> None:
    assert BUILTIN == ["agentgym/code-v0", "agentgym/gui-predict-v0", "agentgym/gui-v0", "agentgym/search-v0",
                       "agentgym/toy-v0"]
    assert ADAPTERS | DOCKER_ONLY <= set(agentgym.registered())


@pytest.mark.parametrize("env_id", BUILTIN)
async def test_every_registered_env_keeps_the_contract(env_id: str, tmp_path) -> None:
    """Every env the package registers (the test suite's own envs are checked in their own tests)."""
    kwargs: dict[str, Any] = {}
    if env_id == "agentgym/search-v0":
        from agentgym.envs.search.data import fetch

        fetch()  # the corpus, downloaded once per machine
    if env_id == "agentgym/gui-v0":
        kwargs["names"] = "click-button,enter-text,login-user"  # tasks the reference solves (the host's Chromium)
    if env_id == "agentgym/gui-predict-v0":  # three records of a dataset, cut from a hand-written trajectory
        from agentgym.envs.gui.dataset import write_records

        from ..gui.test_predict import trajectory

        other = trajectory().model_copy(update={"info": {**trajectory().info, "miniwob_seed": 8}})
        write_records(tmp_path / "actions.jsonl", [trajectory(), other])
        kwargs["path"] = tmp_path / "actions.jsonl"
    report = await check_env(env_id, sandbox_backend="local", **kwargs)
    assert report.env == env_id and report.tasks == 3
    assert report.reference_return > (report.baseline_return or 0.0)
    if env_id == "agentgym/code-v0":  # per episode: the session's, the submission's and the tests' own; and the dodges'
        assert report.sandboxes > 3 * 3 * 2
    own = set(agentgym.make(env_id, **({"path": kwargs["path"]} if "path" in kwargs else {})).dodges())
    assert own <= set(report.dodges) and "huge reply" in report.dodges, report.dodges


def right_answer(episode: Episode) -> bool:
    return episode.final_answer == "right"


def never_right(episode: Episode) -> bool:
    return False


def broken(episode: Episode) -> bool:
    raise RuntimeError("verifier bug")


class Says:
    """A scripted policy that answers one word in text."""

    def __init__(self, word: str) -> None:
        self.name = word
        self.word = word

    async def act(self, messages: list[Message], tools: list[ToolSpec], *, task: Task) -> Reply:
        return Reply(message=Message(role="assistant", content=self.word))


class Guess(Env):
    """Answer in text; "right" is right."""

    verifier = right_answer

    def tasks(self) -> list[Task]:
        return [Task(id="g", prompt="Say the word.")]

    @classmethod
    def scripted_policies(cls) -> dict[str, Any]:
        return {"reference": lambda: Says("right"), "baseline": lambda: Says("wrong")}


async def test_a_sound_env_passes_and_a_blind_verifier_is_caught() -> None:
    report = await check_env(Guess)
    assert (report.reference_return, report.baseline_return, report.sandboxes) == (1.0, 0.0, 0)

    class Blind(Guess):
        verifier = never_right  # a solution looks like a non-solution

    with pytest.raises(EnvCheckError, match=r"does not beat the baseline's 0\.000"):
        await check_env(Blind)


async def test_a_missing_reference_and_a_bad_tool_spec_are_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    class NoReference(Guess):
        @classmethod
        def scripted_policies(cls) -> dict[str, Any]:
            return {}

    with pytest.raises(EnvCheckError, match="no 'reference'"):
        await check_env(NoReference)

    class Tooled(Guess):
        @tool
        async def look(self, where: str) -> str:
            """Look somewhere.

            Args:
                where: The place.
            """
            return where

    bad = Tooled.tool_specs()[0].model_copy(update={"parameters": {"type": "object", "properties": {},
                                                                   "required": ["where"]}})
    monkeypatch.setattr(Tooled, "tool_specs", classmethod(lambda cls: [bad]))
    with pytest.raises(EnvCheckError, match="requires unknown parameter 'where'"):
        await check_env(Tooled)


class Leaky(Guess):
    """Takes an extra sandbox in setup and never gives it back."""

    sandbox_image = "python"
    spares: ClassVar[list[Any]] = []

    async def setup(self, task: Task) -> None:
        from agentgym.sandboxes import acquire

        self.spares.append(await acquire(self.sandbox_backend, image="python"))


async def test_a_leaked_sandbox_is_caught() -> None:
    try:
        with pytest.raises(EnvCheckError, match="2 of 4 sandboxes were never given back"):
            await check_env(Leaky, sandbox_backend="local", dodges=False)
    finally:
        for spare in Leaky.spares:
            await spare.close()


class Crashes(Guess):
    """Its verifier crashes: every episode is an error."""

    verifier = broken


async def test_an_episode_that_errors_is_caught() -> None:
    with pytest.raises(EnvCheckError, match="ended error: RuntimeError: verifier bug"):
        await check_env(Crashes)


class Dodgeable(Guess):
    """A tool the model can make raise: an episode it would rather end in an error than be graded."""

    @tool
    async def note(self, text: str) -> str:
        """Take a note.

        Args:
            text: What to note.
        """
        if text.startswith("!"):
            raise RuntimeError("notes may not start with '!'")
        return "noted"

    @classmethod
    def dodges(cls) -> dict[str, Dodge]:
        return {"a note that crashes the tool": Dodge.calls(("note", {"text": "!boom"}))}


class Fixed(Dodgeable):
    """The same tool, with the model's mistake as a tool error: the dodge ends graded."""

    model_errors = (RuntimeError,)


class Hangs(Guess):
    """A tool that waits as long as the model asks."""

    @tool
    async def wait(self, seconds: float) -> str:
        """Wait.

        Args:
            seconds: How long.
        """
        await asyncio.sleep(seconds)
        return "waited"

    @classmethod
    def dodges(cls) -> dict[str, Dodge]:
        return {"a long wait": Dodge.calls(("wait", {"seconds": 3600}))}


class Files(Guess):
    """A tool that opens what the model names, declaring no dodges: check_env's own find what breaks it."""

    @tool
    async def read(self, name: str) -> str:
        """Read a file of the task.

        Args:
            name: The file's name.
        """
        try:
            return open(name).read()
        except OSError as e:
            raise ToolError(str(e)) from e


async def test_no_dodge_fails_on_dodgeable_envs_and_passes_once_they_grade() -> None:
    with pytest.raises(EnvCheckError, match="dodge 'a note that crashes the tool': the episode ended with no grade "
                                            r"\(RuntimeError: notes may not start"):
        await check_env(Dodgeable)
    report = await check_env(Fixed)
    assert {"a note that crashes the tool", "note with hostile strings", "a lone surrogate"} <= set(report.dodges)
    with pytest.raises(EnvCheckError, match="dodge 'a long wait': the episode ended with no grade \\(it ran past 2 s"):
        await check_env(Hangs, episode_timeout=2)
    with pytest.raises(EnvCheckError, match=r"dodge 'read with hostile strings'.*ValueError: embedded null byte"):
        await check_env(Files)


async def test_an_env_that_refuses_runtime_or_leaves_a_process_is_caught() -> None:
    """The runtime check: every env takes ``runtime=``, and closing it (and the runtime) leaves nothing running."""

    class NoRuntime(Guess):
        def __init__(self) -> None:  # drops Env's keyword arguments
            super().__init__()

    with pytest.raises(EnvCheckError, match="does not accept runtime="):
        await check_env(NoRuntime)

    started: list[asyncio.subprocess.Process] = []

    class LeavesAProcess(Guess):
        async def setup(self, task: Task) -> None:
            started.append(await asyncio.create_subprocess_exec("sleep", "60"))

    try:
        with pytest.raises(EnvCheckError, match=r"LeavesAProcess: closing the env and its runtime left \['process "):
            await check_env(LeavesAProcess, dodges=False)
    finally:
        for process in started:
            process.kill()
            await process.wait()
    with pytest.raises(EnvCheckError, match="passes a runtime of its own"):
        await check_env(Guess, runtime=object())
