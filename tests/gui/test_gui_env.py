"""The GUI env in a real browser: the reference solves each task, random clicks do not; seeded resets,
observations, limits, a hosted model through the CLI, and a browser that dies mid-episode."""

import asyncio
import base64
import io
import json
import re

import pytest
from PIL import Image

from agentgym.envs.gui import GUIEnv, parse_dom
from agentgym.envs.gui.policies import RandomClickPolicy, ReferencePolicy, history_of
from agentgym.evaluation import evaluate
from agentgym.rollout import run_episode
from agentgym.testing import FakeOpenAI
from agentgym.testing.fake_openai import completion, tool_call
from agentgym.types import ImagePart, Message, ToolCall, assistant, read_jsonl

from ..evaluation.helpers import run_cli

pytestmark = pytest.mark.docker

CI_TASKS = ["click-button", "click-checkboxes", "click-dialog-2", "enter-text", "login-user", "simple-algebra"]
"""A representative subset: one click, several clicks with state, a dialog, typing, two fields, arithmetic.
benchmarks/gui_reference.py plays every task the reference solves."""
SEEDS = 5


def per_task(trajectories):
    out: dict[str, list[bool]] = {}
    for t in trajectories:
        out.setdefault(t.task_id, []).append(t.success)
    return {task: sum(wins) / len(wins) for task, wins in out.items()}


async def test_reference_solves_each_task_and_random_clicks_do_not(gui_backend):
    kwargs = {"names": ",".join(CI_TASKS), "sandbox_backend": gui_backend}
    _, reference = await evaluate("gui", ReferencePolicy(), samples=SEEDS, concurrency=2, env_kwargs=kwargs,
                                  progress=False)
    _, random = await evaluate("gui", RandomClickPolicy(), samples=SEEDS, concurrency=2, env_kwargs=kwargs,
                               progress=False)
    assert all(t.outcome in ("terminated", "truncated") for t in reference + random), \
        [t.failure for t in reference + random if t.failure]
    solved, floor = per_task(reference), per_task(random)
    print("\nreference", solved, "\nrandom   ", floor)
    assert set(solved) == set(CI_TASKS)
    assert all(rate >= 0.95 for rate in solved.values()), solved
    assert sum(floor.values()) / len(floor) <= 0.2, floor
    assert all(floor[task] < solved[task] for task in CI_TASKS)


async def test_seeded_reset_repeats_the_same_problem(gui_backend):
    async with GUIEnv(names="click-button", observation="dom", sandbox_backend=gui_backend) as env:
        task = env.tasks()[0]
        first = (await env.reset(task, seed=5))[1].text
        again = (await env.reset(task, seed=5))[1].text
        others = {(await env.reset(task, seed=s))[1].text for s in (6, 7, 8)}
    assert first == again and first.startswith('Instruction: Click on the "')
    assert others - {first}


async def test_repeated_resets_start_in_a_prepared_page_with_nothing_of_the_last_episode(gui_backend):
    from agentgym.envs.gui.page import VIEWPORT
    from agentgym.sandboxes import SandboxRuntime

    async with SandboxRuntime() as rt:  # its own, so that closing it shows what closing leaves
        async with GUIEnv(names="click-button", observation="dom", sandbox_backend=gui_backend, runtime=rt) as env:
            task = env.tasks()[0]
            prepared, instructions = [], []
            for seed in (5, 6, 5, 7):
                opening = (await env.reset(task, seed=seed))[1].text
                prepared.append(env.trajectory.info["page_prepared"])
                instructions.append(opening)
                page = env._page.page
                assert await page.evaluate("[localStorage.getItem('seen'), document.cookie]") == [None, ""]
                await page.evaluate("localStorage.setItem('seen', '1'); document.cookie = 'seen=1'")
            assert prepared[1:] == [True, True, True]  # every reset prepares the next (the first may be one)
            assert instructions[0] == instructions[2] != instructions[1]  # a prepared page is seeded the same

            async def broken(context):
                raise RuntimeError("the page would not load")

            env.browser.prepare("click-button", broken, viewport=VIEWPORT)  # preparing fails: loaded as usual
            assert (await env.reset(task, seed=5))[1].text == instructions[0]
            assert not env.trajectory.info["page_prepared"]

            spare, _ = await env.browser._spare.task  # prepared, then its page goes away before the reset
            await spare.pages[0].close()
            assert (await env.reset(task, seed=5))[1].text == instructions[0]
            assert not env.trajectory.info["page_prepared"]
            assert (await env.reset(task, seed=5))[1].text == instructions[0]
            assert env.trajectory.info["page_prepared"]
            browser = env.browser
        assert browser._spare is not None  # given back to the pool with the next episode's context
    assert not [t for t in asyncio.all_tasks() if "_make_spare" in repr(t.get_coro())]
    assert not browser.connected


async def test_after_a_wasted_preparation_a_browser_prepares_again_only_on_a_repeat(gui_backend):
    async with GUIEnv(names="click-button,enter-text", observation="dom", sandbox_backend=gui_backend) as env:
        button, text = env.tasks()
        await env.reset(button, seed=1)
        assert env.browser._spare.key == "click-button"
        await env.reset(text, seed=1)  # another task: the prepared page goes to waste
        assert env.browser.missed and env.browser._spare is None
        await env.reset(button, seed=1)
        assert not env.trajectory.info["page_prepared"] and env.browser._spare is None
        await env.reset(button, seed=2)  # twice in a row: preparing again
        assert env.browser._spare.key == "click-button"
        await env.reset(button, seed=3)
        assert env.trajectory.info["page_prepared"]


async def test_observations_screenshot_dom_or_both(gui_backend):
    async with GUIEnv(names="enter-text", observation="screenshot", sandbox_backend=gui_backend) as env:
        opening = (await env.reset(env.tasks()[0], seed=1))[1]
        text, image = opening.content
        assert text.text.startswith("Instruction: Enter") and "[" not in text.text
        picture = Image.open(io.BytesIO(base64.b64decode(image.image_url["url"].split(",", 1)[1])))
        assert picture.format == "PNG" and picture.size == (160, 210)
        result = await env.step(assistant(tool_calls=[ToolCall(id="a", name="click_element", arguments='{"ref": 5}')]))
        assert "screenshot only" in result.observation[0].text
    async with GUIEnv(names="enter-text", observation="dom", sandbox_backend=gui_backend) as env:
        opening = (await env.reset(env.tasks()[0], seed=1))[1]
        assert isinstance(opening.content, str) and parse_dom(opening.content).find(tag="input_text")
    async with GUIEnv(names="enter-text", sandbox_backend=gui_backend) as env:
        opening = (await env.reset(env.tasks()[0], seed=1))[1]
        assert [type(p).__name__ for p in opening.content] == ["TextPart", "ImagePart"]
        assert parse_dom(opening.content[0].text).find(tag="button", text="Submit")


def call(name: str, **arguments: object) -> Message:
    return assistant(tool_calls=[ToolCall(id=name, name=name, arguments=json.dumps(arguments))])


async def test_a_click_at_the_targets_coordinates_solves_the_task(gui_backend):
    """``click(x, y)`` is a trusted mouse click sent straight to Chromium (not through Playwright's driver)."""
    async with GUIEnv(names="click-button", observation="dom", sandbox_backend=gui_backend) as env:
        for seed in (1, 2, 3):
            opening = (await env.reset(env.tasks()[0], seed=seed))[1].text
            label = re.search(r'Click on the "(.*)" button', opening)[1]
            (target,) = parse_dom(opening).find(tag="button", text=label)
            result = await env.step(call("click", x=target.center[0], y=target.center[1]))
            assert result.terminated and env.trajectory.success, result.observation
            assert env.trajectory.turns[-1].info["miniwob"]["raw_reward"] == 1.0


async def test_a_page_that_cannot_say_its_status_after_a_click_ends_the_episode_as_a_failure(gui_backend):
    """The click reads the status in its own write; a status the page cannot give ends the episode
    as MiniWoB's failure with the reason (tests/gui/test_gui_safety.py has the other ways to break it)."""
    async with GUIEnv(names="click-button", observation="dom", sandbox_backend=gui_backend) as env:
        await env.reset(env.tasks()[0], seed=1)
        await env._live_page.page.evaluate("WOB_REWARD_REASON = {toString() { throw new Error('no verdict here'); }}")
        result = await env.step(call("click", x=5, y=5))
        assert result.terminated and env.trajectory.outcome == "terminated" and env.trajectory.reward == -1.0
        assert "no verdict here" in env.trajectory.info["miniwob_reason"]


async def test_bad_actions_are_tool_errors_and_the_turn_limit_ends_what_the_page_never_ends(gui_backend):
    async with GUIEnv(names="click-button", max_turns=3, sandbox_backend=gui_backend) as env:
        await env.reset(env.tasks()[0], seed=2)
        outside = await env.step(call("click", x=400, y=5))
        assert "outside the 160x210 task area" in outside.observation[0].text
        unknown = await env.step(call("press", key="NoSuchKey"))
        assert unknown.observation[0].text.startswith("Error: ") and "NoSuchKey" in unknown.observation[0].text
        last = await env.step(call("click", x=5, y=5))  # the instruction's banner: nothing happens
        assert last.truncated and not last.terminated and env.trajectory.outcome == "truncated"
        assert env.trajectory.outcome_reward == -1.0 and env.trajectory.reward_components["done"] == 0.0
        assert env.trajectory.tool_errors == {"tool_raised": 2}


def test_a_hosted_model_plays_through_the_cli_and_the_jsonl_keeps_the_screenshots(gui_backend, tmp_path, capsys,
                                                                                         monkeypatch):
    """`agentgym eval gui --model openai/...`: a stand-in vision model over real HTTP reads the page it is sent."""
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")

    def model(request: dict) -> dict:
        messages = [Message.from_openai(m) for m in request["messages"]]
        users = [m for m in messages if m.role == "user"]
        assert isinstance(users[-1].content, list) and users[-1].content[1].image_url["url"].startswith(
            "data:image/png;base64,")
        instruction = users[0].text.split("\n", 1)[0]
        target = instruction.split('"')[1]
        button = parse_dom(users[-1].text).find(tag="button", text=target)[0]
        return completion(tool_calls=[tool_call("click", {"x": button.center[0], "y": button.center[1]})])

    out = tmp_path / "run.jsonl"
    with FakeOpenAI(model) as server:
        code, stdout, _ = run_cli(capsys, "eval", "gui", "--model", "openai/fake-model", "--api-base", server.base_url,
                                  "--env-arg", "names=click-button", "--samples", "3", "--sandbox", gui_backend,
                                  "--out", str(out), "--concurrency", "1")
    assert code == 0, stdout
    assert re.search(r"success\s+3/3", stdout) and len(server.requests) == 3
    for trajectory in read_jsonl(out):
        image = trajectory.messages[1].content[1]
        assert isinstance(image, ImagePart)    # inline in the JSONL, as the model saw it
        png = base64.b64decode(image.image_url["url"].removeprefix("data:image/png;base64,"))
        assert Image.open(io.BytesIO(png)).size == (160, 210)


class KillsTheBrowser:
    """Kills the episode's Chromium inside its sandbox, then clicks."""

    name = "killer"

    def __init__(self, envs: list[GUIEnv]) -> None:
        self.envs = envs

    async def act(self, messages, tools, *, task):
        from agentgym.policies.base import Reply

        await self.envs[-1].browser.kill_browser()
        return Reply(message=call("click", x=80, y=100))


async def test_a_browser_that_dies_mid_episode_ends_it_with_a_reason_and_leaves_no_container(gui_backend):
    envs: list[GUIEnv] = []

    def make() -> GUIEnv:
        envs.append(GUIEnv(names="click-button", sandbox_backend=gui_backend))
        return envs[-1]

    browser = None

    async def remember_browser():
        nonlocal browser
        while not envs or envs[-1].browser is None:
            await asyncio.sleep(0.01)
        browser = envs[-1].browser

    watcher = asyncio.ensure_future(remember_browser())
    task = GUIEnv(names="click-button").tasks()[0]
    trajectory = await run_episode(make, KillsTheBrowser(envs), task, seed=1)
    await watcher
    assert trajectory.outcome == "error"
    assert trajectory.failure.startswith("BrowserCrashed: the browser died mid-episode"), trajectory.failure
    assert "close_error" not in trajectory.info
    assert not browser.connected
    if browser.backend == "docker":
        from agentgym.sandboxes import engine

        def listed() -> list[dict]:  # the low-level list: no inspect of a container that goes meanwhile (a 404)
            return engine.client().api.containers(all=True, filters={"id": browser.id})

        for _ in range(600):  # up to 60 s: a loaded engine is slow to remove it
            if not listed():
                break
            await asyncio.sleep(0.1)
        assert not listed()
    assert history_of(trajectory.all_messages()) == [("click", {"x": 80, "y": 100})]


def test_gui_dataset_records_the_references_steps(gui_backend, tmp_path, capsys):
    """`agentgym gui dataset`: one record per reference action, each with its page and the target's box."""
    out = tmp_path / "actions.jsonl"
    code, stdout, _ = run_cli(capsys, "gui", "dataset", "--out", str(out), "--names", "click-button,enter-text",
                              "--samples", "2", "--sandbox", gui_backend)
    assert code == 0, stdout
    episodes = read_jsonl(tmp_path / "actions.episodes.jsonl")
    assert len(episodes) == 4 and all(t.success for t in episodes), [(t.task_id, t.failure) for t in episodes]
    import datasets

    records = datasets.load_dataset("json", data_files=str(out), split="train")
    by_task = {task: records.filter(lambda r, t=task: r["task"] == t) for task in ("click-button", "enter-text")}
    assert by_task["click-button"].num_rows == 2                         # one click each
    assert by_task["enter-text"].num_rows == 2 * 3                       # focus, type, submit
    assert [r["action"]["type"] for r in by_task["enter-text"]][:3] == ["click", "type", "click"]
    for record in records:
        assert record["screenshot"].startswith("data:image/png;base64,") and record["instruction"]
        if record["action"]["type"] == "click":
            node = parse_dom(record["dom"]).get(record["action"]["ref"])
            assert node is not None and list(node.box) == record["action"]["box"]
