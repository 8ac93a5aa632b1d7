"""How long `agentgym view`'s report takes to build and to open, for runs of the same size but different shapes.

The same number of episodes spread over few tasks (many samples each) or many tasks (one sample each)
must open alike: nothing in the page may scale with the samples per task (pass@k is drawn at a bounded
set of k). Each shape is built once and opened ``--repeat`` times in headless Chromium (Debian's
``/usr/bin/chromium`` through Playwright); "opened" is every plot drawn and the first page of episodes
listed. Writes (and prints) per shape the report's size, build seconds, open seconds (median, min,
max) and the points plotly drew, to ``benchmarks/results/view_open.json``.

    python3 benchmarks/view_open.py                 # 3 tasks x 3,334 samples vs 10,002 tasks x 1
    python3 benchmarks/view_open.py --repeat 5
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

from results_file import run_info, run_options, save_results
from stats import spread

from agentgym.types import Message, ToolCall, Trajectory, Turn, write_jsonl
from agentgym.view.report import write_report
from agentgym.view.runs import load_runs

CHROMIUM = "/usr/bin/chromium"


def shaped_run(tasks: int, samples: int) -> list[Trajectory]:
    """``tasks`` x ``samples`` one-turn episodes, about two in three successful."""
    out = []
    for t in range(tasks):
        for s in range(samples):
            ok = (t * 7 + s) % 3 != 0
            call = ToolCall(id="c", name="python", arguments=json.dumps({"code": f"print({t} + {s})"}))
            out.append(Trajectory(
                task_id=f"task/{t}", env="code", policy="synthetic", seed=s,
                messages=[Message(role="user", content=f"Task {t}.")],
                turns=[Turn(action=Message(role="assistant", tool_calls=[call]),
                            observation=[Message(role="tool", tool_call_id="c", name="python", content=str(t + s))],
                            reward=float(ok))],
                reward=float(ok), outcome_reward=float(ok),
            ))
    return out


def measure(tasks: int, samples: int, repeat: int, where: Path) -> dict[str, object]:
    from playwright.sync_api import sync_playwright

    run = where / f"shape-{tasks}x{samples}.jsonl"
    write_jsonl(run, shaped_run(tasks, samples))
    started = time.monotonic()
    report = write_report(load_runs([run]), where / f"shape-{tasks}x{samples}.html")
    built = time.monotonic() - started
    opened = []
    points = 0
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=["--no-sandbox", "--disable-gpu"])
        for _ in range(repeat):
            page = browser.new_page(viewport={"width": 1400, "height": 1000})
            started = time.monotonic()
            page.goto(report.as_uri(), wait_until="commit", timeout=600_000)
            page.wait_for_function("[...document.querySelectorAll('.plot')].every(p => p.querySelector('.main-svg'))",
                                   timeout=600_000)
            page.wait_for_selector("tr.episode-row", timeout=600_000)
            opened.append(time.monotonic() - started)
            points = page.evaluate("document.querySelectorAll('.js-plotly-plot .point').length")
            page.close()
        browser.close()
    return {"episodes": tasks * samples, "report_mb": round(report.stat().st_size / 1e6, 2),
            "build_s": round(built, 2), "open_s": spread(opened), "plotted_points": points}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    run_options(parser, "view_open", repeat=3, quick="one open of 3 x 334 and 1,002 x 1")
    args = parser.parse_args()
    samples, repeat = (334, 1) if args.quick else (3334, args.repeat)
    with tempfile.TemporaryDirectory() as tmp:
        result = {"few_tasks": measure(3, samples, repeat, Path(tmp)),
                  "many_tasks": measure(3 * samples, 1, repeat, Path(tmp)), "machine": run_info()}
    print(json.dumps(result, indent=2))
    save_results(result, args.out)


if __name__ == "__main__":
    main()
