"""CPU per GUI env step on the docker backend: Chromium's pipe as FIFOs (the default) or over Docker's attach stream.

Each run plays ``GUIEnv(names="click-test", observation="both")`` on the docker backend: one reset,
5 warm-up steps, then ``--steps`` ``click`` tool calls on empty space (the episode goes on), each a
click, a status read, a screenshot and the DOM text, back to back, with no page being prepared
beside them. :class:`cpu_accounting.CpuMeter` charges the steps' CPU to this process (``client``),
its child processes (Playwright's driver, the ``docker run`` client), the browser's container
(Chromium) and its ``containerd-shim``; ``docker_daemons`` (dockerd, containerd) is reported beside
them, and is shared with whatever else uses the engine. ``fifos`` is the browser sandbox as it starts
on a local engine; ``attach`` the same with the pipe over ``docker run -i``'s attach stream (what an
engine elsewhere gets), forced here by treating the engine as remote.

    python benchmarks/gui_step_cpu.py [--steps 300] [--repeats 3] [--quick]

Writes benchmarks/results/gui_step_cpu.json.
"""

from __future__ import annotations

import argparse
import asyncio
import time
from pathlib import Path
from typing import Any

from cpu_accounting import CpuMeter
from results_file import results_path, run_info, save_results
from stats import summarize

from agentgym.envs.gui import GUIEnv
from agentgym.sandboxes import SandboxRuntime, channel
from agentgym.types import ToolCall, assistant

RESULTS = results_path("gui_step_cpu")
CLICK = assistant(tool_calls=[ToolCall(id="c", name="click", arguments='{"x": 5, "y": 205}')])  # empty space


async def one_run(pipe: str, steps: int) -> dict[str, Any]:
    usable = channel.usable
    if pipe == "attach":
        channel.usable = lambda endpoint=None: False  # type: ignore[assignment]
    try:
        async with SandboxRuntime(), GUIEnv(names="click-test", observation="both", sandbox_backend="docker",
                                            max_turns=steps + 10) as env:  # the run's browsers, closed after it
            await env.reset(env.tasks()[0], seed=0)
            assert env.browser is not None and (env.browser.pipe.fifos is not None) == (pipe == "fifos")
            await asyncio.sleep(1.0)  # the next episode's page, prepared in the background, is ready
            for _ in range(5):
                await env.step(CLICK)
            meter = CpuMeter()
            started = time.perf_counter()
            for _ in range(steps):
                result = await env.step(CLICK)
                assert not result.terminated and not result.truncated
            wall = time.perf_counter() - started
            cpu = meter.stop()
    finally:
        channel.usable = usable
    per_step = {key: cpu[key] / steps * 1e3 for key in ("client", "child_processes", "containers",
                                                        "container_shims", "total", "docker_daemons")}
    return {**per_step, "wall_ms": wall / steps * 1e3}


async def measure(steps: int, repeats: int) -> dict[str, Any]:
    info = run_info()
    out: dict[str, Any] = {"info": info, "steps": steps}
    for pipe in ("fifos", "attach"):
        runs = [await one_run(pipe, steps) for _ in range(repeats)]
        out[pipe] = {"summary": summarize(runs), "runs": runs}
    return out


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, help="steps per run (default 300; 20 with --quick)")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--out", type=Path, default=RESULTS)
    parser.add_argument("--quick", action="store_true", help="1 run of 20 steps (unless --steps): a smoke test")
    args = parser.parse_args()
    if args.quick:
        args.repeats = 1
    args.steps = args.steps or (20 if args.quick else 300)
    result = asyncio.run(measure(args.steps, args.repeats))
    for pipe in ("fifos", "attach"):
        row = result[pipe]["summary"]
        print(pipe, ", ".join(f"{k} {v['median']:.2f}" for k, v in row.items()), "(ms per step, medians)")
    save_results(result, args.out)
