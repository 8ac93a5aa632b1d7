import pytest

from agentgym import EnvError, Message, ToolCall, make, register
from agentgym.parsing import format_text_tool_call

from .toy import Counter

register("test/Counter-v0", Counter)


def call(name: str, arguments: str, call_id: str = "c") -> Message:
    return Message(role="assistant", tool_calls=[ToolCall(id=call_id, name=name, arguments=arguments)])


async def test_episode_rewards_and_termination():
    async with make("test/Counter-v0") as env:
        opening = await env.reset(seed=0)
        assert opening[-1].role == "user" and env.task is not None
        target = env.task.data["target"]
        total = 0
        while total < target:
            step = min(3, target - total)
            result = await env.step(call("add", f'{{"amount": {step}}}'))
            total += step
            assert result.reward == pytest.approx(0.1) and not result.terminated
            assert result.observation[0].tool_call_id == "c" and f"total is {total}" in result.observation[0].text
        result = await env.step(call("submit", f'{{"total": {target}}}'))
        assert result.terminated and not result.truncated
        assert result.reward == pytest.approx(1.0)
        assert result.info["reward"]["components"] == {"exact": 1.0}
        assert env.trajectory.outcome_reward == 1.0
        assert env.trajectory.reward == pytest.approx(1.0 + 0.1 * len(env.trajectory.turns[:-1]))
        with pytest.raises(EnvError, match="after the episode ended"):
            await env.step(call("submit", '{"total": 1}'))


async def test_bad_calls_become_observations_and_are_counted():
    env = make("test/Counter-v0", max_turns=10)
    with pytest.raises(EnvError, match="before reset"):
        await env.step(call("add", '{"amount": 1}'))
    await env.reset(seed=1)
    cases = [
        (call("add", '{"amount": '), "malformed_json", "not valid JSON"),
        (call("nope", "{}"), "unknown_tool", "available: add, submit"),
        (call("add", '{"amount": "lots"}'), "invalid_arguments", "amount"),
        (call("add", '{"amount": 9}'), "tool_raised", "between 1 and 3"),
        (Message(role="assistant", content="<tool_call>{not json</tool_call>"), "malformed_json", "JSON"),
    ]
    for action, kind, text in cases:
        result = await env.step(action)
        assert not result.terminated
        assert result.info["tool_errors"] == [kind]
        assert result.observation[0].role == "tool" and text in result.observation[0].text
    assert env.trajectory.tool_errors == {"malformed_json": 2, "unknown_tool": 1, "invalid_arguments": 1,
                                          "tool_raised": 1}
    # a text-written call works like a native one
    result = await env.step(Message(role="assistant", content=format_text_tool_call("add", {"amount": 2})))
    assert "total is 2" in result.observation[0].text
    await env.close()
    await env.close()  # a second close does nothing
    with pytest.raises(EnvError, match="closed"):
        await env.reset()


async def test_turn_limit_truncates_and_text_reply_terminates():
    env = make("test/Counter-v0", max_turns=2)
    await env.reset(seed=0)
    assert not (await env.step(call("add", '{"amount": 1}'))).truncated
    last = await env.step(call("add", '{"amount": 1}'))
    assert last.truncated and not last.terminated and env.trajectory.outcome == "truncated"
    await env.reset(seed=0)
    done = await env.step(Message(role="assistant", content="I think the answer is 2"))
    assert done.terminated and env.final_answer == "I think the answer is 2"


def test_make_suggests_close_names_and_rejects_bad_kwargs():
    with pytest.raises(EnvError, match="Did you mean 'test/Counter-v0'"):
        make("test/Countr-v0")
    with pytest.raises(EnvError, match="test/Counter-v0"):
        make("test/Counter-v0", colour="red")
    with pytest.raises(EnvError, match="max_turns"):
        make("test/Counter-v0", max_turns=0)


def test_builtin_envs_come_through_the_entry_point():
    import agentgym

    assert "agentgym/code-v0" in agentgym.registered()


async def test_end_scores_an_episode_stopped_early():
    env = make("test/Counter-v0")
    with pytest.raises(EnvError, match="before reset"):
        await env.end()
    await env.reset(seed=0)
    await env.step(call("add", '{"amount": 1}'))
    reward = await env.end()
    assert env.done and reward.value == 0.0 and env.trajectory.outcome == "truncated"
    assert env.trajectory.reward == pytest.approx(0.1)
    with pytest.raises(EnvError, match="already ended"):
        await env.end()


async def test_step_takes_openai_format_messages():
    """A dict as written by hand or dumped by the OpenAI SDK, and the SDK's own message object."""
    from openai.types.chat import ChatCompletionMessage

    add = {"role": "assistant", "content": None,
           "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "add", "arguments": '{"amount": 2}'}}]}
    submit = ChatCompletionMessage.model_validate(
        {"role": "assistant", "content": None,
         "tool_calls": [{"id": "c2", "type": "function", "function": {"name": "submit", "arguments": '{"total": 2}'}}]})
    async with make("test/Counter-v0") as env:
        await env.reset(env.tasks()[0])  # target 2
        first = await env.step(add)
        assert first.observation[0].text == "total is 2" and first.observation[0].tool_call_id == "c1"
        assert (await env.step(submit.model_dump())).terminated
        assert env.trajectory.outcome_reward == 1.0
        assert env.trajectory.turns[0].action == Message(role="assistant", tool_calls=[
            ToolCall(id="c1", name="add", arguments='{"amount": 2}')])
        await env.reset(env.tasks()[0])
        await env.step(add)
        assert (await env.step(submit)).terminated and env.trajectory.outcome_reward == 1.0
        await env.reset(env.tasks()[0])
        with pytest.raises(EnvError, match="step\\(\\) needs an assistant message: role: Input should be"):
            await env.step({"content": "no role"})
        with pytest.raises(EnvError, match="got str"):
            await env.step("add 2")
