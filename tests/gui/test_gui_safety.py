"""What a model does to a GUI page never runs as script, and a page it breaks is graded, not lost; on both backends.

- the fuzz: markup typed into every text field of every MiniWoB task (and into the page with no
  field focused), then Enter and every button, runs nothing; the same fuzz finds the task that
  echoes typed text as HTML when the pages are served without their Content-Security-Policy;
- honest play (random clicks on every task) trips no violation of that policy;
- a page whose status is corrupted, out of range, not a number, that leaves its URL or that hangs
  ends the episode as MiniWoB's failure (-1) with the reason, never as an error;
- every tool's arguments are bounded.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time

import pytest

from agentgym.envs.gui import GUIEnv, parse_dom, task_names
from agentgym.envs.gui.policies import RandomClickPolicy
from agentgym.rollout import rollout
from agentgym.types import Message, Task, ToolCall

pytestmark = [pytest.mark.docker, pytest.mark.slow]

MARK = "_q9"
PAYLOAD = f"\"><img src=x onerror={MARK}=1><script>{MARK}=2</script>"
"""Markup that sets a global if a page parses it as HTML and runs what it holds (an event handler, a script)."""
TEXT_FIELDS = ("input_text", "input_password", "input_email", "input_search", "input_tel", "input_url",
               "input_number", "textarea")
WATCH_VIOLATIONS = """window.__agentgymViolations = [];
addEventListener('securitypolicyviolation',
                 (e) => window.__agentgymViolations.push(e.violatedDirective + ' ' + e.blockedURI));"""
"""An init script (it runs before the page's own): the page's count of Content-Security-Policy violations."""


def call(name: str, **arguments) -> Message:
    return Message(role="assistant", content="", tool_calls=[ToolCall(id="c1", name=name,
                                                                      arguments=json.dumps(arguments))])


async def fuzz(env: GUIEnv, task: Task) -> object:
    """Type :data:`PAYLOAD` into every text field of one episode of ``task``, press Enter, click every
    button; what the page's marker global holds then (None: nothing ran)."""
    opening = (await env.reset(task, seed=1))[1].text
    dom = parse_dom(opening)
    fields = [n.ref for n in dom if n.tag in TEXT_FIELDS]
    buttons = [n.ref for n in dom if n.tag.startswith("button") or n.tag in ("input_submit", "input_button")]
    actions = [call("type", text=PAYLOAD), call("press", key="Enter")]  # no field focused: to the page itself
    for ref in fields:
        actions += [call("click_element", ref=ref), call("type", text=PAYLOAD), call("press", key="Enter")]
    actions += [call("click_element", ref=ref) for ref in buttons]
    for action in actions:
        result = await env.step(action)
        if result.terminated or result.truncated:
            break
    assert env.trajectory.outcome != "error", env.trajectory.failure
    return await env._page.page.evaluate(f"window.{MARK}")


@contextlib.asynccontextmanager
async def watched(env: GUIEnv):
    """Every browser context opened in this process watches its pages for policy violations, until the block
    ends: the env's browser among them, whenever its lease is taken and whichever page it prepares."""
    from playwright.async_api import Browser

    original = Browser.new_context

    async def new_context(self, **kwargs):
        context = await original(self, **kwargs)
        await context.add_init_script(WATCH_VIOLATIONS)
        return context

    Browser.new_context = new_context
    try:
        yield
    finally:
        Browser.new_context = original


async def play_and_fuzz(tasks: list[Task], backend: str, found: dict[str, dict]) -> None:
    """Per task: random clicks (honest play: no violation may be reported), then the fuzz in a new episode."""
    async with GUIEnv(names="all", observation="dom", sandbox_backend=backend) as env:
        async with watched(env):
            for task in tasks:
                env.max_turns = 2
                honest = await rollout(env, RandomClickPolicy(), task, seed=3, turn_timeout=60)
                if honest.outcome not in ("terminated", "truncated"):
                    found["not graded"][task.id] = honest.failure
                seen = await env._page.page.evaluate("window.__agentgymViolations")
                if seen:
                    found["violations"][task.id] = seen
                env.max_turns = 200
                ran = await fuzz(env, task)
                if ran is not None:
                    found["ran"][task.id] = ran


@pytest.mark.timeout(1800)  # 5 minutes a backend on the 2-core machine, 10 when it is busy
async def test_no_task_runs_typed_markup_and_honest_play_trips_no_policy_violation(backend):
    """Every task on Docker, every fourth on the local backend (what runs typed markup is the page and its
    Content-Security-Policy, the same on both; the backends' isolation has tests of its own), on two
    browsers at once: random clicks trip no violation, markup typed anywhere runs nothing."""
    started = time.monotonic()
    every = list(GUIEnv(names="all").tasks())
    assert len(every) == len(task_names()) >= 100
    tasks = every if backend == "docker" else every[::4]
    found: dict[str, dict] = {"not graded": {}, "violations": {}, "ran": {}}
    await asyncio.gather(play_and_fuzz(tasks[0::2], backend, found), play_and_fuzz(tasks[1::2], backend, found))
    print(f"\nplayed and fuzzed {len(tasks)} tasks on {backend} in {time.monotonic() - started:.0f} s")
    assert not found["not graded"] and not found["violations"], found
    assert not found["ran"], f"typed markup ran as script in {found['ran']}"


async def test_the_fuzz_finds_the_echoing_task_when_pages_come_without_their_policy(backend, monkeypatch):
    """The fuzz can fail: without the Content-Security-Policy the terminal task runs typed markup."""
    from agentgym.envs.gui import csp

    monkeypatch.setattr(csp, "content_security_policy", lambda path, body: {})
    async with GUIEnv(names="terminal", observation="dom", max_turns=50, sandbox_backend=backend) as env:
        value = await fuzz(env, env.tasks()[0])
    assert value in (1, 2)


BREAKS = {
    "a reward of 1e9": ("WOB_REWARD_GLOBAL = WOB_RAW_REWARD_GLOBAL = 1e9; WOB_DONE_GLOBAL = true",
                        "raw_reward is 1000000000, not a number in [-1, 1]"),
    "a reward of -1e9": ("WOB_REWARD_GLOBAL = WOB_RAW_REWARD_GLOBAL = -1e9; WOB_DONE_GLOBAL = true",
                         "not a number in [-1, 1]"),
    "a reward that is not a number": ("WOB_RAW_REWARD_GLOBAL = NaN; WOB_DONE_GLOBAL = true",
                                      "raw_reward is None, not a number"),
    "a reward that is text": ("WOB_RAW_REWARD_GLOBAL = '1'", "raw_reward is '1', not a number"),
    "a done flag that is not a boolean": ("WOB_DONE_GLOBAL = 'yes'", "done flag is 'yes', not a boolean"),
    "the status gone": ("WOB_DONE_GLOBAL = undefined", "done flag is None"),
    "a page that navigates away": ("location.href = '/miniwob/click-dialog.html'", "could not be judged"),
    "a page that hangs": ("setTimeout(() => { while (true) {} }, 50)", "did not finish a click within 2 s"),
}


@pytest.mark.parametrize("how", list(BREAKS))
async def test_page_script_that_breaks_the_status_ends_the_episode_as_a_failure_with_the_reason(backend, how,
                                                                                                monkeypatch):
    """What page script can do to the episode ends it as MiniWoB's failure (-1) with the reason, never as an error
    (a page's script is the task's, or the model's only through a hole like the one the fuzz looks for)."""
    from agentgym.envs.gui import page

    if how == "a page that hangs":
        monkeypatch.setattr(page, "CALL_SECONDS", 2.0)
    script, reason = BREAKS[how]
    async with GUIEnv(names="click-button", observation="dom", sandbox_backend=backend) as env:
        for seed in (1, 2):  # the second episode, on the same browser, is unaffected
            await env.reset(env.tasks()[0], seed=seed)
            if seed == 1:
                await env._page.page.evaluate(script)
                await asyncio.sleep(0.2)
            result = await env.step(call("click", x=5, y=5))
            trajectory = env.trajectory
            if seed == 1:
                assert result.terminated and trajectory.outcome == "terminated", trajectory.failure
                assert trajectory.reward == -1.0 and trajectory.reward_components["done"] == 1.0
                assert reason in trajectory.info["miniwob_reason"], trajectory.info["miniwob_reason"]
                assert trajectory.turns[-1].info["miniwob"]["broken"]
            else:
                assert trajectory.outcome is not None and not result.terminated, trajectory.info


async def test_a_page_that_hangs_after_an_action_is_a_failure_when_ended(backend, monkeypatch):
    """A page that hangs while the model types, and one that ends at the turn limit: graded, not errors."""
    from agentgym.envs.gui import page

    monkeypatch.setattr(page, "CALL_SECONDS", 2.0)
    async with GUIEnv(names="enter-text", observation="dom", max_turns=2, sandbox_backend=backend) as env:
        await env.reset(env.tasks()[0], seed=1)
        await env._page.page.evaluate("addEventListener('keydown', () => { while (true) {} })")
        result = await env.step(call("type", text="abc"))
        assert result.terminated and env.trajectory.reward == -1.0
        assert "did not finish typing" in env.trajectory.info["miniwob_reason"]


FRAME = '<iframe srcdoc="<script src=/common/ui_utils.js></script>"></iframe>'
LINK = '<a id="away" href="click-button.html" target="_blank">away</a>'


async def test_markup_that_lands_in_a_page_opens_no_frame_and_no_window(backend):
    """``terminal`` writes each command into the page as HTML: a typed frame (whose ``srcdoc`` would run the
    served scripts same-origin) is gone as soon as it lands, and a typed ``target=_blank`` link, clicked,
    opens no page; the page stays the task's."""
    async with GUIEnv(names="terminal", observation="dom", sandbox_backend=backend) as env:
        opening = (await env.reset(env.tasks()[0], seed=1))[1].text
        (prompt,) = [n for n in parse_dom(opening) if n.id == "terminal-target"]
        await env.step(call("click_element", ref=prompt.ref))
        for markup in (FRAME, LINK):
            await env.step(call("type", text=markup))
            shown = await env.step(call("press", key="Enter"))
        page = env._live_page.page
        await asyncio.sleep(0.3)
        assert await page.evaluate("document.querySelectorAll('iframe, frame').length") == 0
        assert page.frames == [page.main_frame]
        (link,) = [n for n in parse_dom(shown.observation[-1].text) if n.id == "away"]  # the link did land
        await env.step(call("click_element", ref=link.ref))
        await env.step(call("click", x=link.center[0], y=link.center[1]))
        await page.evaluate("window.open('click-button.html')")  # as a page's own script would
        await asyncio.sleep(0.5)
        assert page.context.pages == [page], [p.url for p in page.context.pages]
        assert (await env._live_page.status()).broken is None  # still the task's page, judged by it


async def test_a_page_may_load_only_its_own_script_files(backend):
    """A served script file the page does not load itself is refused, even inserted by page script."""
    async with GUIEnv(names="click-button", observation="dom", sandbox_backend=backend) as env:
        await env.reset(env.tasks()[0], seed=1)
        page = env._live_page.page
        loads = """(src) => new Promise(done => { const s = document.createElement('script'); s.src = src;
                     s.onload = () => done(true); s.onerror = () => done(false); document.head.append(s); })"""
        assert await page.evaluate(loads, "../core/core.js")  # its own
        assert not await page.evaluate(loads, "../core/jscolor.min.js")  # another page's
        assert await page.evaluate("typeof jscolor") == "undefined"


@pytest.mark.parametrize(("name", "arguments", "error"), [
    ("scroll", {"dx": 0, "dy": 1e12}, "at most 1000 pixels"),
    ("scroll", {"dx": float("nan"), "dy": 0}, "at most 1000 pixels"),
    ("scroll", {"dx": 0, "dy": 10, "x": 1e9, "y": 0}, "outside the 160x210 task area"),
    ("type", {"text": "x" * 501}, "at most 500 characters"),
    ("press", {"key": "Shift+" * 20 + "A"}, "is not one key"),
    ("press", {"key": "A" * 1000}, "is not one key"),
    ("click", {"x": float("inf"), "y": 0}, "outside the 160x210 task area"),
])
async def test_every_tool_bounds_its_arguments(backend, name, arguments, error):
    async with GUIEnv(names="click-button", observation="dom", max_turns=3, sandbox_backend=backend) as env:
        await env.reset(env.tasks()[0], seed=1)
        started = time.monotonic()
        result = await env.step(Message(role="assistant", content="", tool_calls=[ToolCall(
            id="c1", name=name, arguments=json.dumps(arguments))]))
        assert error in result.observation[0].text, result.observation[0].text
        assert env.trajectory.tool_errors == {"tool_raised": 1} and time.monotonic() - started < 5
        fine = await env.step(call("scroll", dx=0, dy=1000))  # the largest scroll is still quick
        assert fine.observation[0].text.startswith("Scrolled")


BAD_PATHS = ["/miniwob/%00.html", "/%00", "/core/" + "a" * 300 + ".js", "/" + "b" * 5000,
             "/miniwob/..%2f..%2f..%2fetc%2fpasswd", "/core/core.js/x", "/%ff%fe"]
"""Request paths the file system refuses (a NUL byte, names too long), or that climb out or through a file."""


async def test_requests_a_page_makes_for_impossible_paths_fail_no_other_episode(backend):
    """A page asks for paths the file system refuses; its episode and a concurrent episode of another task
    play on, and nothing of the host's paths reaches either trajectory."""
    from agentgym.envs.gui.tasks import html_root

    async with GUIEnv(names="click-button", observation="dom", sandbox_backend=backend) as attacker, \
            GUIEnv(names="enter-text", observation="dom", sandbox_backend=backend) as bystander:
        await attacker.reset(attacker.tasks()[0], seed=1)
        opening = (await bystander.reset(bystander.tasks()[0], seed=1))[1].text
        statuses = await attacker._page.page.evaluate(
            "async (paths) => Promise.all(paths.map(p => fetch(p).then(r => r.status, e => String(e))))", BAD_PATHS)
        assert all(status == 404 for status in statuses), statuses
        await asyncio.sleep(0.2)
        (field,) = parse_dom(opening).find(tag="input_text")
        await bystander.step(call("click_element", ref=field.ref))
        typed = await bystander.step(call("type", text="hello"))   # a Playwright call on the shared connection
        assert typed.observation[0].text == "Typed 'hello'.", typed.observation[0].text
        clicked = await attacker.step(call("press", key="Tab"))
        assert clicked.observation[0].text == "Pressed Tab."
        for env in (attacker, bystander):
            await env.end()
            text = env.trajectory.model_dump_json()
            assert env.trajectory.outcome == "truncated" and env.trajectory.failure is None
            assert str(html_root()) not in text and "site-packages" not in text


REACH_OUT = """async ([port, hosts]) => {
  for (const host of hosts) {
    try { new WebSocket(`ws://${host}:${port}/`); } catch (e) {}
    try {
      const pc = new RTCPeerConnection({iceServers: [{urls: `stun:${host}:${port}`},
        {urls: `turn:${host}:${port}?transport=tcp`, username: 'u', credential: 'c'}]});
      pc.createDataChannel('x');
      await pc.setLocalDescription(await pc.createOffer());
    } catch (e) {}
  }
  await new Promise(r => setTimeout(r, 1500));
}"""
"""A page's WebSocket and WebRTC (STUN over UDP, TURN over TCP) to ``port`` of each of ``hosts``."""


def host_addresses() -> list[str]:
    """This machine's addresses: loopback and each interface's (the page may aim at any of them)."""
    import socket

    addresses = {"127.0.0.1"}
    with contextlib.suppress(OSError):
        probe = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        probe.connect(("192.0.2.1", 9))  # no packet is sent: this only picks the outgoing interface
        addresses.add(probe.getsockname()[0])
        probe.close()
    return sorted(addresses)


async def test_a_page_reaches_no_host_address_by_websocket_or_webrtc(backend, tmp_path):
    """A page served with no policy of its own (the browser sandbox's isolation alone, not MiniWoB's CSP)
    opens WebSockets and WebRTC connections to this machine's addresses: nothing arrives, over TCP or UDP."""
    import socket

    from agentgym.sandboxes.browser import browser_pool, serve_directory

    tcp = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    tcp.bind(("0.0.0.0", 0))
    tcp.listen(16)
    tcp.setblocking(False)
    port = tcp.getsockname()[1]
    udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    udp.bind(("0.0.0.0", port))
    udp.setblocking(False)
    (tmp_path / "index.html").write_text("<html><body>reach out</body></html>")
    lease = await (await browser_pool(backend)).acquire()
    browser = lease.held
    try:
        context = await browser.new_context()
        origin = await serve_directory(context, tmp_path)
        page = await context.new_page()
        await page.goto(origin + "index.html")
        await page.evaluate(REACH_OUT, [port, host_addresses()])
    finally:
        await lease.release()
    arrived = []
    with contextlib.suppress(BlockingIOError):
        arrived.append(tcp.accept())
    with contextlib.suppress(BlockingIOError):
        arrived.append(udp.recvfrom(2048))
    tcp.close()
    udp.close()
    assert not arrived, f"reached the host on {backend}: {arrived}"
