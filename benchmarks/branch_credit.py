"""How well each per-turn credit method finds the decisive turn, and what branching costs in sandboxes.

The env is :class:`agentgym.envs.toy.lock.LockEnv`: turn 1 sets a dial (right with probability
``p``, by a seeded random policy), the next 0-3 turns wait, the last opens the lock. The outcome
depends on turn 1 alone, so the true advantage of turn 1 is ``outcome − p`` and of every other turn
0. For groups of ``--group`` episodes of one task, each method's per-turn advantage is correlated
(Pearson, over every turn of every episode) with that truth:

- **uniform** (GRPO): every turn gets the episode's ``R − mean(R of the group)``;
- **leave-one-out** (:func:`agentgym.rewards.leave_one_out_advantages`, what
  ``TurnCreditGRPOTrainer`` adds): each turn's return-to-go against the others' at that turn;
- **branch** (:func:`agentgym.branch.branch_rollout`): ``V_k − V_{k−1}`` from ``n`` forked
  continuations after each turn.

The cost of branching is the forks made and the sandbox-seconds they were held, beside the
seconds of the same episodes played without branching (:func:`agentgym.rollout.rollout`, its
sandbox's start included, as the forks' is). Commands::

    python benchmarks/branch_credit.py                      # 8 groups of 4, n = 2 and 4, local sandboxes
    python benchmarks/branch_credit.py --quick --out "$(mktemp -d)/b.json"   # smoke test
"""

from __future__ import annotations

import argparse
import asyncio
import time
from typing import Any

from results_file import run_args, run_info, run_options, save_results

from agentgym.branch import branch_rollout, correlation
from agentgym.envs.toy.lock import LockEnv, RandomLockPolicy
from agentgym.rewards import leave_one_out_advantages
from agentgym.rollout import rollout
from agentgym.types import Task


async def measure(groups: int, group: int, n: int, p: float, backend: str, seed: int) -> dict[str, Any]:
    truth: list[float] = []
    credit: dict[str, list[float]] = {"uniform": [], "leave_one_out": [], "branch": []}
    forks, fork_seconds, episode_seconds = 0, 0.0, 0.0
    started = time.perf_counter()
    for g in range(groups):
        task = Task(id=f"lock-{g % 2}", prompt="Set the dial, then open the lock.", data={"code": g % 2})
        results = []
        for i in range(group):
            policy_seed = seed + 1000 * g + i
            async with LockEnv(sandbox_backend=backend) as env:
                results.append(await branch_rollout(env, RandomLockPolicy(p_right=p, seed=policy_seed), task, n=n))
            async with LockEnv(sandbox_backend=backend) as env:
                plain = await rollout(env, RandomLockPolicy(p_right=p, seed=policy_seed), task)
                await env.close()  # the sandbox goes back now, so its seconds are counted
            episode_seconds += plain.seconds  # reset (the sandbox's start) included, as forks' start is
        rewards = [r.trajectory.reward for r in results]
        mean = sum(rewards) / len(rewards)
        loo = leave_one_out_advantages([[t.reward for t in r.trajectory.turns] for r in results])
        for r, own_loo in zip(results, loo, strict=True):
            turns = len(r.trajectory.turns)
            truth += [r.trajectory.reward - p] + [0.0] * (turns - 1)
            credit["uniform"] += [r.trajectory.reward - mean] * turns
            credit["leave_one_out"] += own_loo
            credit["branch"] += r.advantages
            forks += r.forks
            fork_seconds += r.sandbox_seconds
    episodes = groups * group
    return {
        "n": n, "episodes": episodes, "turns": len(truth),
        "correlation": {name: round(correlation(values, truth), 3) for name, values in credit.items()},
        "forks_per_episode": forks / episodes,
        "branch_sandbox_seconds_per_episode": round(fork_seconds / episodes, 3),
        "plain_episode_sandbox_seconds": round(episode_seconds / episodes, 4),
        "wall_seconds": round(time.perf_counter() - started, 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--groups", type=int, default=8)
    parser.add_argument("--group", type=int, default=4, help="episodes per group (GRPO's num_generations)")
    parser.add_argument("--branches", type=int, nargs="+", default=[2, 4], help="n: continuations per fork point")
    parser.add_argument("--p-right", type=float, default=0.5)
    parser.add_argument("--backend", default="local")
    parser.add_argument("--seed", type=int, default=0)
    run_options(parser, "branch_credit_lock_local", repeat=1, quick="2 groups of 2, n = 2")
    args = parser.parse_args()
    if args.quick:
        args.groups, args.group, args.branches = 2, 2, [2]
    rows = [asyncio.run(measure(args.groups, args.group, n, args.p_right, args.backend, args.seed))
            for n in args.branches]
    for row in rows:
        c = row["correlation"]
        print(f"n={row['n']}: corr uniform {c['uniform']:+.3f}  leave-one-out {c['leave_one_out']:+.3f}  "
              f"branch {c['branch']:+.3f}  | {row['forks_per_episode']:.1f} forks/episode, "
              f"{row['branch_sandbox_seconds_per_episode']:.2f} sandbox-s of forks/episode "
              f"(unbranched episode {row['plain_episode_sandbox_seconds']:.3f} s)")
    save_results({"run": run_info(), "args": run_args(args), "results": rows}, args.out)


if __name__ == "__main__":
    main()
