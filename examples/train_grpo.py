"""Train a model on an agentgym environment with TRL's GRPOTrainer.

As written it runs on a CPU, offline: a tiny randomly initialised model is built from a config,
warm-started to call tools (300 supervised steps), then trained with GRPO (40 steps) on the toy colour
env, whose reward (1 for saying the secret colour, blue) it must discover. It prints its progress as it
goes and the reward curve at the end. That is about 7.5 CPU-minutes (docs/trl.md has the measurement):
minutes on a 2-core machine, more on a busy one.

    python examples/train_grpo.py                          # tiny model, rollout_func path
    python examples/train_grpo.py --path environment       # TRL runs the loop (environment_factory)
    python examples/train_grpo.py --turn-credit            # per-turn advantages (rollout path)

Point it at a real model, which calls tools already and needs no warm start:

    python examples/train_grpo.py --model Qwen/Qwen3-0.6B --env code --steps 200 --lr 1e-6 --gpu

Any registered env works (``--env code``, ``--env search``); its built-in tasks are the dataset,
streamed: each row is built when the trainer reads it, in a seeded order, so the search env's 48,201
questions are never held as a list of rows (a 2-step run peaks at about 1.1 GB of RSS, toy's at 0.7 GB).
"""

from __future__ import annotations

import argparse
import os
import time

os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")

from trl import GRPOConfig, GRPOTrainer

from agentgym.trl import EnvGRPOTrainer, TurnCreditGRPOTrainer, environment_spec, rollout_spec
from agentgym.types import Task

STARTED = time.monotonic(), time.process_time()


def elapsed() -> str:
    """Wall and CPU seconds since the start: on a shared machine the first grows with the load, the second not."""
    return f"{time.monotonic() - STARTED[0]:.0f} s ({time.process_time() - STARTED[1]:.0f} CPU-s)"


def load(args: argparse.Namespace) -> tuple[object, object]:
    if args.model:
        from transformers import AutoModelForCausalLM, AutoTokenizer

        return AutoModelForCausalLM.from_pretrained(args.model), AutoTokenizer.from_pretrained(args.model)
    from agentgym.envs.toy.env import say_examples
    from agentgym.trl.tiny import tiny_agent

    steps = args.warm_start_steps
    print(f"warm start: teaching the tiny model to call tools ({steps} supervised steps)", flush=True)

    def report(step: int, loss: float) -> None:
        if step % 25 == 0 or step == steps:
            print(f"warm start: step {step}/{steps}, loss {loss:.3f}, {elapsed()}", flush=True)

    return tiny_agent("toy", say_examples(), steps=steps, on_step=report)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", help="a Hugging Face model id or path (default: a tiny offline model)")
    parser.add_argument("--env", default="toy", help="registered env id")
    parser.add_argument("--path", choices=["rollout", "environment"], default="rollout")
    parser.add_argument("--turn-credit", action="store_true", help="per-turn advantages (rollout path only)")
    parser.add_argument("--steps", type=int, default=40)
    parser.add_argument("--warm-start-steps", type=int, default=300,
                        help="supervised steps that teach the tiny model to call tools first")
    parser.add_argument("--lr", type=float, default=5e-4, help="5e-4 suits the tiny model; ~1e-6 a real one")
    parser.add_argument("--generations", type=int, default=8)
    parser.add_argument("--max-completion-length", type=int, default=48)
    parser.add_argument("--gpu", action="store_true", help="train on the GPU in bf16")
    parser.add_argument("--output", default="runs/train_grpo")
    args = parser.parse_args()

    model, tokenizer = load(args)
    # The toy env's built-in tasks hide one of three colours each; train on the blue one only, so
    # that there is one right answer to learn. Other envs train on all their built-in tasks.
    tasks = [Task(id="blue", prompt="Pick a colour.", data={"colour": "blue"})] if args.env == "toy" else None
    make_spec = rollout_spec if args.path == "rollout" else environment_spec
    spec = make_spec(args.env, tasks, repeat=None)  # an endless stream of rows; max_steps ends training
    config = GRPOConfig(
        output_dir=args.output, use_cpu=not args.gpu, bf16=args.gpu, gradient_checkpointing=False,
        report_to="none", per_device_train_batch_size=2 * args.generations, num_generations=args.generations,
        max_completion_length=args.max_completion_length, learning_rate=args.lr, max_steps=args.steps,
        logging_steps=1, save_strategy="no", seed=0, disable_tqdm=True, max_tool_calling_iterations=2,
    )
    # EnvGRPOTrainer overlaps a batch's tool calls on the environment path; GRPOTrainer makes them one by one.
    trainer_class = (TurnCreditGRPOTrainer if args.turn_credit
                     else EnvGRPOTrainer if args.path == "environment" else GRPOTrainer)
    trainer = trainer_class(model, args=config, processing_class=tokenizer, **spec.trainer_kwargs())
    print(f"GRPO: {args.steps} steps of {args.generations} generations each (a line of metrics per step), "
          f"starting at {elapsed()}", flush=True)
    trainer.train()

    logs = trainer.state.log_history
    key = next(k for h in logs for k in h if k.startswith("rewards/") and k.endswith("/mean"))
    curve = [h[key] for h in logs if key in h]
    window = max(1, len(curve) // 4)
    print(f"{key}: first {window} steps {sum(curve[:window]) / window:.2f} -> "
          f"last {window} steps {sum(curve[-window:]) / window:.2f}")
    print("curve:", " ".join(f"{x:.2f}" for x in curve))
    print(f"done in {elapsed()}")


if __name__ == "__main__":
    main()
