"""Browser sandbox speed on a MiniWoB++ task, against miniwob's own Selenium-based gymnasium env, in one run.

For each backend (docker: Chromium's headless shell in a container driven over the DevTools pipe;
local: the host's headless shell) it measures, as p50s over samples and median [min, max] over
repeated runs, on a browser that draws frames on demand (``frames="on_demand"``, as the GUI env's):

- ``start_ms``: a cold :func:`create_browser`; ``warm_acquire_ms``: a hand-out from a filled pool;
- ``reset_load_ms``: new context + MiniWoB page served by Playwright routes (no network) + seeded episode;
- ``reset_episode_ms``: a seeded episode in the loaded page (core.js ``startEpisodeReal``);
- ``step_ms``: a mouse click and one read of reward/done, as the GUI env makes them: on the page's
  direct DevTools session (``BrowserSandbox.session(page)``: ``click(x, y, then=READ)`` = mouse move,
  press, release and the read in one write, the read made again after the click's replies when it ran
  ahead of the release), not through Playwright's driver;
  ``step_playwright_ms``: the same through Playwright (``page.mouse.click`` then ``page.evaluate``),
  as before the direct session; ``step_screenshot_ms``: the direct step plus a PNG screenshot of the
  160x210 task area (``BrowserSandbox.frames(page).screenshot``, what the env takes);
- ``screenshot_ms``: that screenshot (``frame_png_clip``: a frame drawn for it, cut on the host),
  against the captures of a free-running browser of the same backend (Playwright's clipped PNG,
  CDP ``Page.captureScreenshot`` clipped with ``optimizeForSpeed``, PNG and JPEG);
- ``idle_mib``: the idle browser's memory (docker: the container's cgroup, page cache excluded;
  local: PSS of Chromium's processes);
- ``env_*``: whole GUI env episodes, what a user pays: ``GUIEnv(observation="both")`` (screenshot
  and DOM text every turn), ``env_reset_ms`` a reset of the task just played (its page prepared in
  the background), ``env_reset_cold_ms`` one after another task (its page loaded then),
  ``env_step_ms`` a ``click`` tool call with its observation, ``env_episode_ms`` a reset and
  ``--env-steps`` steps; back to back (an instant policy: the next page is prepared while the steps
  run), and ``*_think_ms`` with 0.5 s after each reset (a model reading the page; not counted).

Selenium (``miniwob.envs``, ``MiniWoBEnvironment`` with Debian's chromedriver): start (env + first
reset), ``env.reset(seed)``, and ``env.step(click)`` with screenshots off and on (its step also
extracts the DOM, as its observation always does); and, like for like with our step, its click
and one read of reward/done (``click_read_ms``) and a bare ``get_screenshot_as_png``. Ratios are
Selenium's p50 over ours (``step``: its ``env.step`` without screenshots over our step;
``env_step``: its ``env.step`` with screenshots, which also reads the DOM, over our env step with
both observations; ``env_episode``: its reset and as many of those steps over our env episode).

    python benchmarks/gui_browser.py [--quick] [--samples 50] [--repeats 3] [--backends docker local]

Writes benchmarks/results/gui_browser.json.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import os
import shutil
import statistics
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from results_file import results_path, run_info, save_results
from stats import percentile, summarize

from agentgym.envs.gui import GUIEnv
from agentgym.envs.gui.page import CLIP as TASK_CLIP
from agentgym.envs.gui.page import VIEWPORT
from agentgym.sandboxes import SandboxRuntime, channel, engine
from agentgym.sandboxes.browser import (
    BrowserPool,
    BrowserSandbox,
    create_browser,
    launch,
    serve_directory,
)
from agentgym.types import ToolCall, assistant

RESULTS = results_path("gui_browser")
TASK = "click-test"
OTHER_TASK = "click-button"  # what the env plays between two cold resets of TASK
THINK_SECONDS = 0.5  # a model's time on the opening page, in the env episodes "with think time"
CLIP = {"x": 0, "y": 0, "width": 160, "height": 210}  # the task area, instruction bar and 160x160 field
IDLE_POINT = (5, 205)  # a click on empty space in the task: the episode goes on
READ = "[WOB_REWARD_GLOBAL, WOB_DONE_GLOBAL, WOB_RAW_REWARD_GLOBAL]"
START_EPISODE = """(seed) => { Math.seedrandom(seed); core.setDataMode('train'); core.startEpisodeReal(); }"""
CHROMEDRIVER = "/usr/bin/chromedriver"
SELENIUM_CHROMIUM = "/usr/bin/chromium"  # chromedriver drives the full browser


def html_dir() -> Path:
    import miniwob

    return Path(miniwob.__file__).parent / "html"


async def p50_ms(samples: int, once: Callable[[], Awaitable[Any]]) -> float:
    times = []
    for _ in range(samples):
        started = time.perf_counter()
        await once()
        times.append(time.perf_counter() - started)
    return percentile(times, 50) * 1e3


async def load_task(sandbox: BrowserSandbox, seed: int) -> Any:
    context = await sandbox.new_context(viewport=VIEWPORT)
    base = await serve_directory(context, html_dir())
    page = await context.new_page()
    await page.goto(f"{base}miniwob/{TASK}.html")
    await start_episode(page, seed)
    return page


async def start_episode(page: Any, seed: int) -> None:
    await page.evaluate(START_EPISODE, seed)
    await page.wait_for_function("WOB_TASK_READY", polling=5)  # a timer: no frames are drawn by themselves


def free_screenshot_options(page: Any, cdp: Any) -> dict[str, Callable[[], Awaitable[Any]]]:
    """Captures of a free-running browser's page, clipped to the task area."""
    async def cdp_capture(fmt: str) -> bytes:
        params: dict[str, Any] = {"format": fmt, "optimizeForSpeed": True, "clip": {**CLIP, "scale": 1}}
        if fmt == "jpeg":
            params["quality"] = 80
        return base64.b64decode((await cdp.send("Page.captureScreenshot", params))["data"])

    return {
        "free_playwright_png_clip": lambda: page.screenshot(clip=CLIP),
        "free_cdp_png_clip_fast": lambda: cdp_capture("png"),
        "free_cdp_jpeg80_clip_fast": lambda: cdp_capture("jpeg"),
    }


async def free_screenshots(backend: str, samples: int) -> dict[str, float]:
    sandbox = await create_browser(backend, frames="free")
    try:
        page = await load_task(sandbox, 0)
        cdp = await page.context.new_cdp_session(page)
        return {name: await p50_ms(samples, shot) for name, shot in free_screenshot_options(page, cdp).items()}
    finally:
        await sandbox.close()


def click(x: float, y: float) -> Any:
    return assistant(tool_calls=[ToolCall(id="c", name="click", arguments=f'{{"x": {x}, "y": {y}}}')])


async def env_episodes(backend: str, samples: int, steps: int) -> dict[str, float]:
    """Whole GUI env episodes (reset + ``steps`` clicks, screenshot and DOM every turn), p50s.

    Back to back (an instant policy: the next page is prepared while the steps run, and the reset
    waits for what is left of it), and with ``THINK_SECONDS`` after each reset (a model reading the
    page: the preparation is over before the steps and the next reset).
    """
    out: dict[str, float] = {}
    async with GUIEnv(names=f"{TASK},{OTHER_TASK}", observation="both", sandbox_backend=backend,
                      max_turns=steps + 1) as env:
        task, other = env.tasks()
        await env.reset(task, seed=0)  # from now on each reset of TASK prepares the next
        for think, suffix in ((0.0, ""), (THINK_SECONDS, "_think")):
            resets, step_times, episodes = [], [], []
            for seed in range(samples):
                started = time.perf_counter()
                await env.reset(task, seed=seed)
                reset = time.perf_counter() - started
                assert env.trajectory is not None and env.trajectory.info["page_prepared"], "no prepared page"
                await asyncio.sleep(think)
                for _ in range(steps):
                    began = time.perf_counter()
                    result = await env.step(click(*IDLE_POINT))
                    step_times.append(time.perf_counter() - began)
                    assert not result.terminated and not result.truncated, "the idle click ended the episode"
                resets.append(reset)
                episodes.append(time.perf_counter() - started - think)
            out.update({f"env_reset{suffix}_ms": percentile(resets, 50) * 1e3,
                        f"env_step{suffix}_ms": percentile(step_times, 50) * 1e3,
                        f"env_episode{suffix}_ms": percentile(episodes, 50) * 1e3})
        cold = []
        for seed in range(samples):
            await env.reset(other, seed=seed)
            started = time.perf_counter()
            await env.reset(task, seed=seed)
            cold.append(time.perf_counter() - started)
            assert env.trajectory is not None and not env.trajectory.info["page_prepared"]
        out["env_reset_cold_ms"] = percentile(cold, 50) * 1e3
    return out


async def idle_mib(sandbox: BrowserSandbox) -> float:
    await asyncio.sleep(2.0)  # let the page settle
    if sandbox.backend == "docker":
        stats = await asyncio.to_thread(engine.client().api.stats, sandbox.id, stream=False)
        memory = stats["memory_stats"]
        return (memory["usage"] - memory.get("stats", {}).get("inactive_file", 0)) / 2**20
    main = launch.local_browser_pid(sandbox._marker or "")
    return sum(_pss_kib(pid) for pid in _tree(main)) / 1024 if main else float("nan")


def _tree(root: int) -> list[int]:
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            children.setdefault(ppid, []).append(int(entry.name))
    out, todo = [], [root]
    while todo:
        pid = todo.pop()
        out.append(pid)
        todo.extend(children.get(pid, []))
    return out


def _pss_kib(pid: int) -> int:
    try:
        for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
            if line.startswith("Pss:"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


async def one_run(backend: str, samples: int, starts: int, env_steps: int) -> dict[str, Any]:
    start_ms = await p50_ms(starts, lambda: _start_and_close(backend))
    pool = BrowserPool(backend, size=1, frames="on_demand")
    try:
        warm = []
        for _ in range(starts):
            await pool.fill()
            started = time.perf_counter()
            lease = await pool.acquire()
            warm.append(time.perf_counter() - started)
            await lease.release()
        lease = await pool.acquire()
        sandbox = lease.held
        seeds = iter(range(10**6))
        reset_load_ms = await p50_ms(samples, lambda: load_task(sandbox, next(seeds)))
        page = await load_task(sandbox, 0)
        reset_episode_ms = await p50_ms(samples, lambda: start_episode(page, next(seeds)))

        frames = sandbox.frames(page)
        session = await sandbox.session(page)

        async def step() -> Any:
            return await session.click(*IDLE_POINT, then=READ)

        async def step_playwright() -> Any:
            await frames.run(page.mouse.click(*IDLE_POINT))
            return await page.evaluate(READ)

        async def capture() -> bytes:
            return await frames.screenshot(TASK_CLIP)

        async def step_and_shot() -> None:
            await step()
            await capture()

        await start_episode(page, 1)
        step_ms = await p50_ms(samples, step)
        step_playwright_ms = await p50_ms(samples, step_playwright)
        shots = {"frame_png_clip": await p50_ms(samples, capture)}
        await start_episode(page, 2)
        step_screenshot_ms = await p50_ms(samples, step_and_shot)
        memory = await idle_mib(sandbox)
        await lease.release()
    finally:
        await pool.shutdown()
    shots.update(await free_screenshots(backend, samples))
    envs = await env_episodes(backend, samples, env_steps)
    return {
        "start_ms": start_ms, "warm_acquire_ms": statistics.median(warm) * 1e3,
        "reset_load_ms": reset_load_ms, "reset_episode_ms": reset_episode_ms,
        "step_ms": step_ms, "step_playwright_ms": step_playwright_ms, "step_screenshot_ms": step_screenshot_ms,
        "screenshot_ms": shots, "idle_mib": memory, **envs,
    }


async def _start_and_close(backend: str) -> None:
    sandbox = await create_browser(backend, frames="on_demand")
    await sandbox.close()


def selenium_run(samples: int, env_steps: int) -> dict[str, Any]:
    """miniwob's own env: Selenium + chromedriver + the host's Chromium, headless."""
    os.environ.setdefault("MINIWOB_CHROME_BINARY", SELENIUM_CHROMIUM)
    os.environ.setdefault("MINIWOB_CHROMEDRIVER", CHROMEDRIVER)
    from miniwob.action import ActionTypes
    from miniwob.environment import MiniWoBEnvironment
    from miniwob.selenium_actions import execute_action_on_chromedriver

    started = time.perf_counter()
    env = MiniWoBEnvironment(subdomain=TASK)
    try:
        env.reset(seed=0)
        start_ms = (time.perf_counter() - started) * 1e3

        def p50(once: Callable[[], Any]) -> float:
            times = []
            for _ in range(samples):
                began = time.perf_counter()
                once()
                times.append(time.perf_counter() - began)
            return percentile(times, 50) * 1e3

        seeds = iter(range(1, 10**6))
        reset_ms = p50(lambda: env.reset(seed=next(seeds)))
        click = env.create_action(ActionTypes.CLICK_COORDS, coords=list(IDLE_POINT))
        env.reset(seed=0, options={"record_screenshots": False})
        step_ms = p50(lambda: env.step(click))
        env.reset(seed=0, options={"record_screenshots": True})
        step_screenshot_ms = p50(lambda: env.step(click))
        # Like for like with our step: the click and one read of reward/done, no observation.
        instance, config = env.instance, env.action_space_config
        env.reset(seed=0)

        def click_and_read() -> None:
            execute_action_on_chromedriver(click, [], config, instance.driver)
            instance.get_metadata()

        click_read_ms = p50(click_and_read)
        screenshot_ms = p50(instance.driver.get_screenshot_as_png)

        def episode() -> None:  # a reset and env_steps steps, screenshots on (its observation reads the DOM too)
            env.reset(seed=next(seeds), options={"record_screenshots": True})
            for _ in range(env_steps):
                env.step(click)

        episode_ms = p50(episode)
    finally:
        env.close()
    return {"start_ms": start_ms, "reset_ms": reset_ms, "step_ms": step_ms, "step_screenshot_ms": step_screenshot_ms,
            "click_read_ms": click_read_ms, "screenshot_ms": screenshot_ms, "episode_ms": episode_ms}


async def measure(backends: list[str], samples: int, repeats: int, starts: int, env_steps: int) -> dict[str, Any]:
    info = run_info()  # the load before the run, not after it
    rows: dict[str, Any] = {}
    for backend in backends:
        async with SandboxRuntime():  # one backend's browsers and driver, closed before the next backend's
            runs = [await one_run(backend, samples, starts, env_steps) for _ in range(repeats)]
        rows[backend] = {"summary": summarize(runs), "runs": runs}
    if shutil.which(CHROMEDRIVER) is None:
        raise SystemExit(f"the Selenium comparison needs {CHROMEDRIVER}: apt-get install chromium-driver")
    selenium_runs = [await asyncio.to_thread(selenium_run, samples, env_steps) for _ in range(repeats)]
    selenium = {"summary": summarize(selenium_runs), "runs": selenium_runs}
    for row in rows.values():
        ours = row["summary"]
        theirs = selenium["summary"]
        row["selenium_over_ours"] = {
            "step": theirs["step_ms"]["median"] / ours["step_ms"]["median"],
            "step_playwright": theirs["step_ms"]["median"] / ours["step_playwright_ms"]["median"],
            "step_screenshot": theirs["step_screenshot_ms"]["median"] / ours["step_screenshot_ms"]["median"],
            "click_read": theirs["click_read_ms"]["median"] / ours["step_ms"]["median"],
            "screenshot": theirs["screenshot_ms"]["median"] / ours["screenshot_ms"]["frame_png_clip"]["median"],
            "reset": theirs["reset_ms"]["median"] / ours["reset_episode_ms"]["median"],
            "env_step": theirs["step_screenshot_ms"]["median"] / ours["env_step_ms"]["median"],
            "env_episode": theirs["episode_ms"]["median"] / ours["env_episode_ms"]["median"],
            "env_step_think": theirs["step_screenshot_ms"]["median"] / ours["env_step_think_ms"]["median"],
            "env_episode_think": theirs["episode_ms"]["median"] / ours["env_episode_think_ms"]["median"],
        }
    docker_pipe = "fifos" if "docker" in backends and channel.usable() else "attach stream"
    return {"info": info, "task": TASK, "env_steps": env_steps, "docker_pipe": docker_pipe, "backends": rows,
            "selenium": selenium}


def report(result: dict[str, Any]) -> None:
    keys = ("start_ms", "warm_acquire_ms", "reset_load_ms", "reset_episode_ms", "step_ms", "step_playwright_ms",
            "step_screenshot_ms",
            "idle_mib", "env_reset_ms", "env_reset_cold_ms", "env_step_ms", "env_episode_ms", "env_reset_think_ms",
            "env_step_think_ms", "env_episode_think_ms")
    print(f"{'':<20}" + "".join(f"{b:>14}" for b in result["backends"]) + f"{'selenium':>14}")
    selenium = result["selenium"]["summary"]
    theirs = {"start_ms": "start_ms", "reset_episode_ms": "reset_ms", "step_ms": "step_ms",
              "step_playwright_ms": "step_ms", "step_screenshot_ms": "step_screenshot_ms",
              "env_step_ms": "step_screenshot_ms",
              "env_episode_ms": "episode_ms", "env_step_think_ms": "step_screenshot_ms",
              "env_episode_think_ms": "episode_ms"}
    for key in keys:
        cells = [row["summary"][key]["median"] for row in result["backends"].values()]
        other = selenium[theirs[key]]["median"] if key in theirs else None
        print(f"{key:<20}" + "".join(f"{c:>14.1f}" for c in cells) + (f"{other:>14.1f}" if other else ""))
    for backend, row in result["backends"].items():
        shots = ", ".join(f"{k} {v['median']:.1f}" for k, v in row["summary"]["screenshot_ms"].items())
        ratio = ", ".join(f"{k} {v:.0f}x" for k, v in row["selenium_over_ours"].items())
        print(f"{backend}: screenshots ms: {shots}\n{backend}: Selenium's p50 over ours: {ratio}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=50)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--starts", type=int, default=5, help="cold starts and warm acquires per run")
    parser.add_argument("--backends", nargs="+", default=["docker", "local"])
    parser.add_argument("--env-steps", type=int, default=5, help="steps of each measured GUI env episode")
    parser.add_argument("--quick", action="store_true", help="3 samples, 2 runs, 1 start: a smoke test")
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args()
    if args.quick:
        args.samples, args.repeats, args.starts = 3, 2, 1
    result = asyncio.run(measure(args.backends, args.samples, args.repeats, args.starts, args.env_steps))
    report(result)
    save_results(result, args.out)
