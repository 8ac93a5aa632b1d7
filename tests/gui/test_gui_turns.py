"""A GUI turn is bounded and graded, on both backends: one message of many calls ends inside a 30 s turn
timeout, quitting before the page's verdict scores MiniWoB's failure value, and nothing copied in one
episode can be pasted in the next."""

import asyncio
import contextlib
import json
import os
import signal
import subprocess
import time
from collections.abc import Iterator

import pytest

from agentgym.envs.gui import GUIEnv
from agentgym.rollout import rollout
from agentgym.types import Message, ToolCall, assistant

pytestmark = pytest.mark.docker


def calls(*pairs: tuple[str, dict]) -> Message:
    return assistant(tool_calls=[ToolCall(id=f"c{i}", name=name, arguments=json.dumps(arguments))
                                 for i, (name, arguments) in enumerate(pairs)])


async def test_twelve_long_types_in_one_message_end_inside_a_30_s_turn_and_are_graded(backend):
    async with GUIEnv(names="enter-text", observation="dom", sandbox_backend=backend) as env:
        await env.reset(env.tasks()[0], seed=1)
        started = time.monotonic()
        async with asyncio.timeout(30):
            result = await env.step(calls(("click", {"x": 80, "y": 80}), *[("type", {"text": "z" * 500})] * 12))
        seconds = time.monotonic() - started
        assert len(result.observation) == 14  # a tool message per call, and the page
        refused = [m.text for m in result.observation if m.role == "tool" and "not run" in m.text]
        assert refused and result.info["tool_errors"].count("turn_limit") == len(refused)
        ran = 13 - len(refused)
        assert ran <= GUIEnv.max_calls_per_turn and seconds < 30
        print(f"\n{backend}: {ran} of 13 calls ran in {seconds:.1f} s; refused: {refused[0]}")
        end = await env.step(calls(("finish", {})))
        assert end.terminated and env.trajectory.outcome == "terminated"
        assert env.trajectory.outcome_reward == -1.0  # the page never judged it: a failure, not 0


async def test_finish_before_the_verdict_scores_the_failure_value_unless_the_lenient_option_is_set(backend):
    for unjudged, expected in ((None, -1.0), (0.0, 0.0)):
        kwargs = {} if unjudged is None else {"unjudged_reward": unjudged}
        async with GUIEnv(names="click-button", observation="dom", sandbox_backend=backend, **kwargs) as env:
            await env.reset(env.tasks()[0], seed=3)
            result = await env.step(calls(("finish", {})))
            assert result.terminated and env.trajectory.outcome_reward == expected
            assert env.trajectory.reward_components["done"] == 0.0
            assert env.trajectory.info["miniwob_reason"] == "the page never judged the episode"


async def test_text_copied_in_one_episode_pastes_nothing_in_the_next_of_either_task(backend):
    """The clipboard is the browser's: the next episode, prepared (same task) or loaded (another), has it empty."""
    async with GUIEnv(names="enter-text,enter-password", observation="dom", sandbox_backend=backend) as env:
        text, password = env.tasks()
        await env.reset(text, seed=1)
        copy = calls(("click", {"x": 60, "y": 74}), ("type", {"text": "SECRET42"}),
                     ("press", {"key": "Control+A"}), ("press", {"key": "Control+C"}))
        await env.step(copy)
        await env.step(calls(("press", {"key": "End"}), ("press", {"key": "Control+V"})))
        assert await _field(env) == "SECRET42SECRET42"  # the copy did copy, within its episode
        for task, seed in ((text, 2), (password, 3)):
            await env.reset(task, seed=seed)
            await env.step(calls(("click", {"x": 60, "y": 74}), ("press", {"key": "Control+V"})))
            assert await _field(env) == "", task.id


async def _field(env: GUIEnv) -> str:
    return str(await env._live_page.page.evaluate("document.querySelector('input').value"))


async def test_a_host_stall_during_a_right_click_is_graded_from_the_pages_own_verdict(backend, monkeypatch):
    """The click's call runs out of time while the page, stalled once for 3 s, goes on to record a win."""
    from agentgym.envs.gui import page

    monkeypatch.setattr(page, "CALL_SECONDS", 2.0)
    async with GUIEnv(names="click-button", observation="dom", sandbox_backend=backend) as env:
        opening = await env.reset(env.tasks()[0], seed=4)
        label = opening[1].text.split('"')[1]  # Click on the "<label>" button.
        target = next(n for n in env._last_dom if n.tag == "button" and n.text == label)
        await env._page.page.evaluate("addEventListener('mousedown', () => { const t = Date.now(); "
                                      "while (Date.now() - t < 3000) {} }, {capture: true, once: true})")
        result = await env.step(calls(("click", {"x": target.center[0], "y": target.center[1]})))
        assert result.terminated and env.trajectory.outcome == "terminated"
        assert env.trajectory.outcome_reward == 1.0, env.trajectory.info


@contextlib.contextmanager
def stopped(browser) -> Iterator[None]:
    """The browser's sandbox frozen (``docker pause``; SIGSTOP of the local Chromium) until the block ends."""
    from agentgym.sandboxes.browser import launch

    if browser._container is not None:
        subprocess.run(["docker", "pause", browser._container], check=True, capture_output=True)
        try:
            yield
        finally:
            subprocess.run(["docker", "unpause", browser._container], check=True, capture_output=True)
        return
    pid = launch.local_browser_pid(browser._marker)
    assert pid is not None
    os.kill(pid, signal.SIGSTOP)
    try:
        yield
    finally:
        os.kill(pid, signal.SIGCONT)


class StopsTheBrowserThenClicks:
    """Freezes the episode's browser, clicks, and lets it go again once the episode has ended."""

    name = "stopper"

    def __init__(self, env: GUIEnv, stack: contextlib.ExitStack) -> None:
        self.env, self.stack = env, stack

    async def act(self, messages, tools, *, task):
        from agentgym.policies.base import Reply

        self.stack.enter_context(stopped(self.env.browser))
        return Reply(message=calls(("click", {"x": 80, "y": 100})))


async def test_a_browser_that_stops_answering_is_an_infrastructure_error_that_says_so(backend, monkeypatch):
    """The whole browser frozen is no page's and no action's doing: an error naming the stall, never the
    model's -1 (a page whose own script loops while its browser answers is graded -1: test_gui_safety)."""
    from agentgym.envs.gui import page
    from agentgym.sandboxes.browser import sandbox

    monkeypatch.setattr(page, "CALL_SECONDS", 2.0)
    monkeypatch.setattr(sandbox, "PING_TIMEOUT", 1.0)
    async with GUIEnv(names="click-button", observation="dom", sandbox_backend=backend) as env:
        with contextlib.ExitStack() as stack:
            trajectory = await rollout(env, StopsTheBrowserThenClicks(env, stack), env.tasks()[0], seed=1)
        assert trajectory.outcome == "error", trajectory.info
        assert trajectory.failure.startswith("BrowserStalled: the browser stopped answering"), trajectory.failure
        assert "not the model's doing" in trajectory.failure
        await env.reset(env.tasks()[0], seed=2)  # let go, the browser plays on
        assert not (await env.step(calls(("click", {"x": 5, "y": 5})))).terminated
