"""The env author's API: verifiers, final answers, env-side turns, model errors, sync tools, mixins, names."""

from __future__ import annotations

import json
import re
import threading
from typing import Any

import pytest

from agentgym import Env, EnvError, Episode, Message, Reward, Task, ToolCall, Trajectory, tool
from agentgym.rewards import LLMJudge, Rubric, exact_answer
from agentgym.rollout import rollout
from agentgym.testing import FakeOpenAI, completion
from agentgym.users import SimulatedUser

TASK = Task(id="t", prompt="What is six times seven?", data={"answer": "42"})


def call(name: str, arguments: str = "{}") -> Message:
    return Message(role="assistant", tool_calls=[ToolCall(id="c", name=name, arguments=arguments)])


def text(words: str) -> Message:
    return Message(role="assistant", content=words)


class Ledger(Env):
    """Sync tools in a mixin, a final tool, model errors, and a verifier that reads the final state."""

    max_turns = 6
    model_errors = (KeyError,)
    verifier = Rubric({"exact": exact_answer, "entries": lambda episode: float(episode.state == ["42"])})

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.entries: list[str] = []
        self.threads: list[str] = []

    async def setup(self, task: Task) -> None:
        self.entries = []

    async def final_state(self) -> list[str]:
        return list(self.entries)

    @tool
    def write(self, entry: str) -> str:
        """Write an entry (a plain method: it runs in a worker thread).

        Args:
            entry: What to write.
        """
        self.threads.append(threading.current_thread().name)
        if entry == "boom":
            raise RuntimeError("the ledger caught fire")
        if entry == "?":
            raise KeyError("no such entry")
        self.entries.append(entry)
        return "written"

    @tool(final=True)
    async def answer(self, value: str) -> str:
        """Give the final answer.

        Args:
            value: The answer.
        """
        if value == "?":
            raise KeyError("unreadable answer")
        if not value:
            raise ValueError("empty answer")  # not a model error here: crashes the episode
        return value


async def test_the_verifier_reads_the_final_answer_and_state_and_the_answer_round_trips() -> None:
    env = Ledger()
    await env.reset(TASK)
    await env.step(call("write", '{"entry": "42"}'))
    assert env.threads and env.threads[0] != threading.current_thread().name  # a sync tool ran off the loop
    done = await env.step(call("answer", '{"value": "42"}'))
    assert done.terminated and done.info["reward"]["components"] == {"exact": 1.0, "entries": 1.0}
    assert done.reward == 2.0 and env.final_answer == "42"
    trajectory = env.trajectory
    assert trajectory is not None and trajectory.attempts == [2.0]
    again = Trajectory.model_validate_json(trajectory.model_dump_json())
    assert again.final_answer == "42" and again.attempts == [2.0]
    assert exact_answer(Episode(TASK, again)) == 1.0  # scored again offline, from the saved record


async def test_model_errors_are_observations_and_other_errors_crash() -> None:
    env = Ledger()
    await env.reset(TASK)
    wrong = await env.step(call("write", '{"entry": "?"}'))
    assert wrong.observation[0].text == "Error: KeyError: 'no such entry'"
    assert wrong.info["tool_errors"] == ["tool_raised"]
    with pytest.raises(RuntimeError, match="caught fire"):
        await env.step(call("write", '{"entry": "boom"}'))


async def test_a_failed_final_tool_keeps_the_previous_answer() -> None:
    class Retry:
        async def review(self, env: Env, reward: Reward) -> list[Message] | None:
            assert env.trajectory is not None
            return [Message(role="user", content="again")] if len(env.trajectory.attempts) < 2 else None

    env = Ledger(feedback=Retry())
    await env.reset(TASK)
    first = await env.step(call("answer", '{"value": "41"}'))
    assert not first.terminated and first.info["attempt_reward"] == 0.0 and first.observation[-1].text == "again"
    unreadable = await env.step(call("answer", '{"value": "?"}'))
    assert not unreadable.terminated and env.final_answer == "41"
    with pytest.raises(ValueError, match="empty answer"):
        await env.step(call("answer", '{"value": ""}'))
    assert env.final_answer == "41"


async def test_the_constructor_verifier_replaces_the_class_one() -> None:
    env = Ledger(verifier=lambda episode: 0.25)
    await env.reset(TASK)
    done = await env.step(call("answer", '{"value": "42"}'))
    assert done.reward == 0.25 and env.trajectory is not None and env.trajectory.reward_components == {}


def test_score_is_not_overridden_and_a_verifier_is_not_a_method() -> None:
    with pytest.raises(TypeError, match=r"overrides Env\.score"):
        class Scores(Env):
            async def score(self) -> Reward:
                return Reward(value=1.0)

    with pytest.raises(TypeError, match="called with the Episode only"):
        class MethodVerifier(Env):
            def verifier(self, episode: Episode) -> float:  # type: ignore[override]
                return 1.0


@pytest.mark.parametrize("name", ["close", "reset", "step", "score", "sandbox", "final_answer"])
def test_a_tool_named_like_an_env_member_is_refused(name: str) -> None:
    async def clash(self: Any) -> str:
        """Clash."""
        return ""

    with pytest.raises(TypeError, match=f"tool '{name}' is named like the environment's own member '{name}'"):
        type("Clash", (Env,), {name: tool(clash, name=name)})
    with pytest.raises(TypeError, match=f"'{name}'"):
        type("Renamed", (Env,), {"harmless": tool(clash, name=name)})  # the name the model sees counts too


class Searching:
    """A mixin with a tool: any env that inherits it offers it."""

    @tool
    async def look(self, query: str) -> str:
        """Look something up.

        Args:
            query: What to look for.
        """
        return f"found {query}"


class WithMixin(Searching, Env):
    @tool(final=True)
    async def finish(self) -> str:
        """Finish."""
        return "ok"


async def test_tools_come_from_mixins_and_specs_need_no_instance() -> None:
    assert [spec.name for spec in WithMixin.tool_specs()] == ["look", "finish"]
    env = WithMixin()
    assert env.tools == WithMixin.tool_specs()
    await env.reset(TASK)
    found = await env.step(call("look", '{"query": "sevens"}'))
    assert found.observation[0].text == "found sevens"


class Chat(Env):
    """A conversation: the agent talks to a simulated user until the user stops."""

    max_turns = 5
    verifier = exact_answer


async def test_a_simulated_user_played_by_an_llm_answers_text_replies() -> None:
    def person(request: dict[str, Any]) -> dict[str, Any]:
        flipped = request["messages"]
        assert flipped[0]["role"] == "system" and "six times seven" in flipped[0]["content"]
        assert [m["role"] for m in flipped[1:]] == ["assistant", "user"] * ((len(flipped) - 1) // 2)
        return completion("It is for my homework." if len(flipped) < 4 else "###STOP###", prompt_tokens=7)

    with FakeOpenAI(person) as server:
        user = SimulatedUser("openai/fake-person", api_base=server.base_url, api_key="sk-test")
        env = Chat(user=user)
        await env.reset(TASK)
        asked = await env.step(text("Why do you ask?"))
        assert not asked.terminated and asked.observation == [Message(role="user", content="It is for my homework.")]
        done = await env.step(text("42"))
    assert done.terminated and done.reward == 1.0
    assert env.trajectory is not None and env.trajectory.usage_by_role["user"].prompt_tokens == 14


async def test_a_judge_is_a_verifier_too() -> None:
    def grader(request: dict[str, Any]) -> dict[str, Any]:
        """Full marks when the fenced answer is 42; the verdict names the grading's block id, as it must."""
        graded = request["messages"][-1]["content"]
        block = re.search(r"^<response-(\w+)>\n(.*?)\n</response-\1>$", graded, re.DOTALL | re.MULTILINE)
        assert block is not None, graded
        answer = json.loads(block.group(2))["response"]
        return completion(json.dumps({"id": block.group(1), "reasoning": "ok", "score": int(answer == "42")}))

    with FakeOpenAI(grader) as server:
        env = Chat(verifier=LLMJudge("openai/fake-judge", api_base=server.base_url, api_key="sk-test"))
        await env.reset(TASK)
        done = await env.step(text("42"))
    assert done.reward == 1.0 and done.info["reward"]["components"] == {"judge": 1.0}


async def test_errors_before_reset_and_task_files() -> None:
    env = Chat()
    for action in (env.score(), env.end()):
        with pytest.raises(EnvError, match="before reset"):
            await action
    with pytest.raises(EnvError, match="Chat reads no task files"):
        Chat.load_tasks("tasks.jsonl")


def test_the_sandbox_is_typed_and_its_absence_says_why() -> None:
    """``env.sandbox`` is a Sandbox or a clear error naming why there is none; ``has_sandbox`` asks first."""

    class NeedsOne(Chat):
        sandbox_image = "python"

    for env, why in ((Chat(), "Chat declares no sandbox"), (NeedsOne(), "NeedsOne holds no sandbox now")):
        assert not env.has_sandbox
        with pytest.raises(EnvError, match=why):
            env.sandbox  # noqa: B018  # the property's error is what is tested


async def test_a_verifier_takes_sandboxes_from_the_episode_and_never_sees_the_env() -> None:
    """``episode.sandboxes`` gives a verifier sandboxes as the env gets them; with ``release_before_scoring``
    the model's sandbox is already back when it runs, and the episode holds no handle on the env."""
    from agentgym.sandboxes import SandboxRuntime

    seen: dict[str, Any] = {}

    async def runs_the_answer(episode: Episode) -> float:
        assert episode.sandboxes is not None and episode.sandboxes.image == "python"
        seen["fields"] = set(vars(episode))
        seen["held"] = env.has_sandbox
        box = await episode.sandboxes.acquire()
        try:
            result = await box.run_python(f"print({episode.final_answer} == 42)")
        finally:
            await box.close()
        return result.output == "True\n"

    class Computes(Env):
        sandbox_image = "python"
        release_before_scoring = True
        verifier = runs_the_answer

    async with SandboxRuntime() as runtime:
        async with Computes(sandbox_backend="local") as env:
            await env.reset(TASK)
            assert env.has_sandbox
            done = await env.step(text("6 * 7"))
        assert done.reward == 1.0
        assert seen == {"fields": {"task", "trajectory", "state", "sandboxes"}, "held": False}
        assert runtime.held("shared sandbox pools")  # the verifier's sandbox came from the env's runtime


async def test_rollout_keeps_the_policy_usage_apart_from_the_env_side() -> None:
    class Says:
        name = "says"

        async def act(self, messages: list[Message], tools: list[Any], *, task: Task) -> Any:
            from agentgym import Reply, Usage

            return Reply(message=text("42"), usage=Usage(prompt_tokens=3))

    trajectory = await rollout(Chat(), Says(), TASK)
    assert trajectory.usage.prompt_tokens == 3 and trajectory.usage_by_role == {} and trajectory.success
