"""Browser sandbox speed on a MiniWoB++ task, against miniwob's own Selenium-based gymnasium env, in one run.

For each backend (docker: Chromium in a container driven over the DevTools pipe; local: the host's
Chromium) it measures, as p50s over samples and median [min, max] over repeated runs:

- ``start_ms``: a cold :func:`create_browser`; ``warm_acquire_ms``: a hand-out from a filled pool;
- ``reset_load_ms``: new context + MiniWoB page served by Playwright routes (no network) + seeded episode;
- ``reset_episode_ms``: a seeded episode in the loaded page (core.js ``startEpisodeReal``);
- ``step_ms``: a mouse click and one read of reward/done; ``step_screenshot_ms``: the same plus the
  fastest screenshot;
- ``screenshot_ms``: each capture option (Playwright PNG/JPEG, full or clipped to the 160x210 task;
  CDP ``Page.captureScreenshot`` with ``optimizeForSpeed``, PNG or JPEG, whole viewport or clipped);
- ``idle_mib``: the idle browser's memory (docker: the container's cgroup, page cache excluded;
  local: PSS of Chromium's processes).

Selenium (``miniwob.envs``, ``MiniWoBEnvironment`` with Debian's chromedriver): start (env + first
reset), ``env.reset(seed)``, and ``env.step(click)`` with screenshots off and on (its step also
extracts the DOM, as its observation always does); and, like for like with our step, its click
and one read of reward/done (``click_read_ms``) and a bare ``get_screenshot_as_png``. Ratios are
Selenium's p50 over ours (``step``: its ``env.step`` without screenshots over our step).

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

from agentgym.sandboxes import engine
from agentgym.sandboxes.browser import (
    BrowserPool,
    BrowserSandbox,
    create_browser,
    launch,
    serve_directory,
    shutdown_browser_pools,
)

RESULTS = results_path("gui_browser")
TASK = "click-test"
VIEWPORT = {"width": 160, "height": 210}  # the MiniWoB task area: instruction bar and 160x160 field
CLIP = {"x": 0, "y": 0, "width": 160, "height": 210}
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
    await page.wait_for_function("WOB_TASK_READY")


def screenshot_options(page: Any, cdp: Any) -> dict[str, Callable[[], Awaitable[Any]]]:
    async def cdp_capture(fmt: str, clip: bool) -> bytes:
        params: dict[str, Any] = {"format": fmt, "optimizeForSpeed": True}
        if clip:
            params["clip"] = {**CLIP, "scale": 1}
        if fmt == "jpeg":
            params["quality"] = 80
        return base64.b64decode((await cdp.send("Page.captureScreenshot", params))["data"])

    return {
        "playwright_png": lambda: page.screenshot(),
        "playwright_png_clip": lambda: page.screenshot(clip=CLIP),
        "playwright_jpeg80_clip": lambda: page.screenshot(clip=CLIP, type="jpeg", quality=80),
        "cdp_png_fast": lambda: cdp_capture("png", clip=False),
        "cdp_jpeg80_fast": lambda: cdp_capture("jpeg", clip=False),
        "cdp_png_clip_fast": lambda: cdp_capture("png", clip=True),
        "cdp_jpeg80_clip_fast": lambda: cdp_capture("jpeg", clip=True),
    }


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


async def one_run(backend: str, samples: int, starts: int) -> dict[str, Any]:
    start_ms = await p50_ms(starts, lambda: _start_and_close(backend))
    pool = BrowserPool(backend, size=1)
    try:
        warm = []
        for _ in range(starts):
            await pool.fill()
            started = time.perf_counter()
            sandbox = await pool.acquire()
            warm.append(time.perf_counter() - started)
            await pool.release(sandbox)
        sandbox = await pool.acquire()
        seeds = iter(range(10**6))
        reset_load_ms = await p50_ms(samples, lambda: load_task(sandbox, next(seeds)))
        page = await load_task(sandbox, 0)
        reset_episode_ms = await p50_ms(samples, lambda: start_episode(page, next(seeds)))

        async def step() -> Any:
            await page.mouse.click(*IDLE_POINT)
            return await page.evaluate(READ)

        await start_episode(page, 1)
        step_ms = await p50_ms(samples, step)
        cdp = await page.context.new_cdp_session(page)
        shots = {name: await p50_ms(samples, shot) for name, shot in screenshot_options(page, cdp).items()}
        fastest = min(shots, key=lambda name: shots[name])
        capture = screenshot_options(page, cdp)[fastest]

        async def step_and_shot() -> None:
            await step()
            await capture()

        await start_episode(page, 2)
        step_screenshot_ms = await p50_ms(samples, step_and_shot)
        memory = await idle_mib(sandbox)
        await pool.release(sandbox)
    finally:
        await pool.shutdown()
    return {
        "start_ms": start_ms, "warm_acquire_ms": statistics.median(warm) * 1e3,
        "reset_load_ms": reset_load_ms, "reset_episode_ms": reset_episode_ms,
        "step_ms": step_ms, "step_screenshot_ms": step_screenshot_ms, "fastest_screenshot": fastest,
        "screenshot_ms": shots, "idle_mib": memory,
    }


async def _start_and_close(backend: str) -> None:
    sandbox = await create_browser(backend)
    await sandbox.close()


def selenium_run(samples: int) -> dict[str, Any]:
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
    finally:
        env.close()
    return {"start_ms": start_ms, "reset_ms": reset_ms, "step_ms": step_ms, "step_screenshot_ms": step_screenshot_ms,
            "click_read_ms": click_read_ms, "screenshot_ms": screenshot_ms}


async def measure(backends: list[str], samples: int, repeats: int, starts: int) -> dict[str, Any]:
    rows: dict[str, Any] = {}
    for backend in backends:
        runs = [await one_run(backend, samples, starts) for _ in range(repeats)]
        rows[backend] = {"summary": summarize(runs), "runs": runs}
    await shutdown_browser_pools()
    if shutil.which(CHROMEDRIVER) is None:
        raise SystemExit(f"the Selenium comparison needs {CHROMEDRIVER}: apt-get install chromium-driver")
    selenium_runs = [await asyncio.to_thread(selenium_run, samples) for _ in range(repeats)]
    selenium = {"summary": summarize(selenium_runs), "runs": selenium_runs}
    for row in rows.values():
        ours = row["summary"]
        theirs = selenium["summary"]
        fastest = min(ours["screenshot_ms"], key=lambda name: ours["screenshot_ms"][name]["median"])
        row["selenium_over_ours"] = {
            "step": theirs["step_ms"]["median"] / ours["step_ms"]["median"],
            "step_screenshot": theirs["step_screenshot_ms"]["median"] / ours["step_screenshot_ms"]["median"],
            "click_read": theirs["click_read_ms"]["median"] / ours["step_ms"]["median"],
            "screenshot": theirs["screenshot_ms"]["median"] / ours["screenshot_ms"][fastest]["median"],
            "reset": theirs["reset_ms"]["median"] / ours["reset_episode_ms"]["median"],
        }
    return {"info": run_info(), "task": TASK, "backends": rows, "selenium": selenium}


def report(result: dict[str, Any]) -> None:
    keys = ("start_ms", "warm_acquire_ms", "reset_load_ms", "reset_episode_ms", "step_ms", "step_screenshot_ms",
            "idle_mib")
    print(f"{'':<20}" + "".join(f"{b:>14}" for b in result["backends"]) + f"{'selenium':>14}")
    selenium = result["selenium"]["summary"]
    theirs = {"start_ms": "start_ms", "reset_episode_ms": "reset_ms", "step_ms": "step_ms",
              "step_screenshot_ms": "step_screenshot_ms"}
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
    parser.add_argument("--quick", action="store_true", help="3 samples, 2 runs, 1 start: a smoke test")
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args()
    if args.quick:
        args.samples, args.repeats, args.starts = 3, 2, 1
    result = asyncio.run(measure(args.backends, args.samples, args.repeats, args.starts))
    report(result)
    save_results(result, args.out)
