"""GRPO step time with and without rollouts overlapping training (``OverlapGRPOTrainer``), in the same run.

Two arms on one warm-started model, alternated run by run so the machine's load falls on both:
``max_staleness=0`` (``GRPOTrainer``'s synchronous step: play the batch, then update) and
``max_staleness=1`` (the next batch plays while this one is scored and trained on). A step's wall time
is measured from one step's start to the next's (a trainer callback); the first step of each run is
left out (it has nothing to overlap with, and pays one-off costs).

Envs (``--env``):

- ``delayed`` (default): the toy env whose reset and every env step first wait ``--delay`` seconds,
  as a remote sandbox, a search API or a hosted grader would: env time that uses no CPU here. It is
  the case overlap is for, with a known env time to compare the gain with.
- ``code``: the code env on the ``local`` sandbox backend (4 HumanEval tasks): real sandboxes, whose
  work (session start, the model's calls, grading in sandboxes of its own) uses the same two cores
  as generation and the update. The tiny model writes no useful code; its episodes still start
  sessions, answer calls and get graded.

The model is the tiny offline one (``agentgym.trl.tiny``, ``--hidden`` sets its width: a wider model
has a longer update to hide env work behind), warm-started on the toy env's call format.

    python benchmarks/trl_overlap.py [--env delayed|code] [--delay 0.5] [--steps 6] [--repeat 3]

Writes benchmarks/results/trl_overlap.json (``--out`` to change).
"""

from __future__ import annotations

import argparse
import asyncio
import copy
import os
import tempfile
import time
from collections.abc import Mapping
from typing import Any

os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")

from results_file import run_args, run_info, run_options, save_results
from stats import fmt, spread
from transformers import TrainerCallback
from trl import GRPOConfig

import agentgym
from agentgym.env import Env
from agentgym.envs.toy.env import ColourEnv, say_examples
from agentgym.trl import OverlapGRPOTrainer, env_seconds, rollout_spec
from agentgym.trl.tiny import tiny_agent
from agentgym.types import Message, StepResult, Task


class DelayedColours(ColourEnv):
    """The toy env, whose reset and every step first wait :attr:`delay` seconds (env time without CPU)."""

    delay = 0.5

    async def setup(self, task: Task) -> None:
        await asyncio.sleep(self.delay)
        await super().setup(task)

    async def step(self, action: Message | Mapping[str, Any]) -> StepResult:
        await asyncio.sleep(self.delay)
        return await super().step(action)


class StepClock(TrainerCallback):  # type: ignore[misc]
    """Each step's wall time (start to start, so waiting on an early batch counts), and the env's and
    generation's seconds in it (in the overlap arm, those of the batch playing in the background)."""

    def __init__(self, rollout: Any) -> None:
        self.rollout = rollout
        self.marks: list[tuple[float, float, float]] = []

    def _mark(self) -> None:
        self.marks.append((time.perf_counter(), env_seconds(), self.rollout.generation_seconds))

    def on_step_begin(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        self._mark()

    def on_train_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        self._mark()

    def steps(self) -> list[dict[str, float]]:
        pairs = zip(self.marks, self.marks[1:], strict=False)
        return [{"wall": b[0] - a[0], "env": b[1] - a[1], "generation": b[2] - a[2]} for a, b in pairs]


def source(env: str, delay: float) -> tuple[Any, list[Task]]:
    """The env to train on and its tasks."""
    if env == "code":
        def code_env() -> Env:
            return agentgym.make("code", sandbox_backend="local")

        return code_env, list(code_env().tasks())[:4]
    DelayedColours.delay = delay
    return DelayedColours, [Task(id="blue", prompt="Pick a colour.", data={"colour": "blue"})]


def run(model: Any, tokenizer: Any, env: Any, tasks: list[Task], args: argparse.Namespace,
        max_staleness: int) -> dict[str, Any]:
    spec = rollout_spec(env, tasks, repeat=1000)
    clock = StepClock(spec.rollout_func)
    with tempfile.TemporaryDirectory() as out:
        config = GRPOConfig(
            output_dir=out, use_cpu=True, bf16=False, gradient_checkpointing=False, report_to="none",
            per_device_train_batch_size=16, num_generations=8, max_completion_length=args.max_completion_length,
            learning_rate=1e-4, max_steps=args.steps + 1, logging_steps=1, save_strategy="no", seed=0,
            disable_tqdm=True,
        )
        trainer = OverlapGRPOTrainer(copy.deepcopy(model), args=config, processing_class=tokenizer,
                                     callbacks=[clock], max_staleness=max_staleness, **spec.trainer_kwargs())
        trainer.train()
    kept = clock.steps()[1:]  # the first step has nothing to overlap with
    waits = [h["overlap/wait_seconds"] for h in trainer.state.log_history if "overlap/wait_seconds" in h]
    return {
        "step_seconds": [s["wall"] for s in kept],
        "env_seconds_per_step": [s["env"] for s in kept],
        "generation_seconds_per_step": [s["generation"] for s in kept],
        "staleness": list(trainer.rollout_staleness),
        "wait_seconds": waits,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description="GRPO step time with and without rollouts overlapping training")
    parser.add_argument("--env", choices=["delayed", "code"], default="delayed")
    parser.add_argument("--delay", type=float, default=0.5, help="seconds each reset and step waits (delayed env)")
    parser.add_argument("--steps", type=int, default=6, help="measured steps per run (one more is run first)")
    parser.add_argument("--hidden", type=int, default=64, help="the tiny model's width")
    parser.add_argument("--max-completion-length", type=int, default=64)
    run_options(parser, "trl_overlap", repeat=3, quick="2 steps, 1 run per arm")
    args = parser.parse_args()
    info = run_info()  # the load at the start
    if args.quick:
        args.steps, args.repeat = 2, 1
    import torch

    # One thread per op: on a shared 2-core machine a second one mostly waits (as in tests/trl), and
    # the overlap arm runs two threads of work already.
    torch.set_num_threads(1)
    model, tokenizer = tiny_agent("toy", say_examples(), steps=150, hidden_size=args.hidden)
    env, tasks = source(args.env, args.delay)
    arms: dict[str, list[dict[str, Any]]] = {"sync": [], "overlap": []}
    order = [("sync", 0), ("overlap", 1)]
    for repeat in range(args.repeat):  # ABBA...: neither arm always runs first
        for name, staleness in order if repeat % 2 == 0 else order[::-1]:
            arms[name].append(run(model, tokenizer, env, tasks, args, staleness))
            print(name, fmt(spread(arms[name][-1]["step_seconds"]), "{:.2f}"), flush=True)
    summary: dict[str, Any] = {}
    for name, runs in arms.items():
        steps = [s for r in runs for s in r["step_seconds"]]
        summary[name] = {
            "step_seconds": spread(steps),
            "env_seconds_per_step": spread([s for r in runs for s in r["env_seconds_per_step"]]),
            "generation_seconds_per_step": spread([s for r in runs for s in r["generation_seconds_per_step"]]),
            "staleness_max": max((s for r in runs for s in r["staleness"]), default=0),
        }
    waits = [w for r in arms["overlap"] for w in r["wait_seconds"]]
    summary["overlap"]["wait_seconds"] = spread(waits) if waits else None
    ratio = summary["sync"]["step_seconds"]["median"] / summary["overlap"]["step_seconds"]["median"]
    summary["speedup_sync_over_overlap"] = ratio
    print(f"step s sync {fmt(summary['sync']['step_seconds'], '{:.2f}')}, "
          f"overlap {fmt(summary['overlap']['step_seconds'], '{:.2f}')}: {ratio:.2f}x")
    env_desc = (f"toy env, every reset and step waits {args.delay} s" if args.env == "delayed"
                else "code env, local sandbox backend, 4 HumanEval tasks")
    save_results({
        "run": info, "args": run_args(args), "env": env_desc,
        "model": f"tiny Qwen3 (2 layers, hidden {args.hidden}), warm-started on the toy env's call format",
        "batch": f"16 completions (2 prompts x 8 generations), max_completion_length {args.max_completion_length}",
        "summary": summary, "runs": arms,
    }, args.out)


if __name__ == "__main__":
    main()
