"""Turn-level credit: per-turn rewards turned into returns and baselines a trainer can use.

``Env.step`` gives every turn a reward (tools may return :class:`~agentgym.env.ToolResult` with one),
and adds the outcome reward to the last turn's. These helpers work on those per-turn lists:

- :func:`discounted_returns` gives each turn its return-to-go, so an early good step is credited
  with what followed it;
- :func:`gated_return` lets process rewards count only when the episode's outcome passes a threshold,
  so a policy cannot farm shaping rewards while failing the task;
- :func:`leave_one_out_advantages` compares each rollout's turn-``k`` return with the other rollouts
  of the same task at turn ``k`` (RLOO, one level down from the episode).
"""

from __future__ import annotations

from collections.abc import Sequence

from agentgym.types import Trajectory


def turn_rewards(trajectory: Trajectory) -> list[float]:
    """Each turn's reward, the outcome reward included in the last turn's (as ``Env.step`` records it)."""
    return [turn.reward for turn in trajectory.turns]


def process_rewards(trajectory: Trajectory) -> list[float]:
    """Each turn's reward without the outcome reward: what the tools alone gave."""
    rewards = turn_rewards(trajectory)
    if rewards and trajectory.outcome in ("terminated", "truncated"):
        rewards[-1] -= trajectory.outcome_reward
    return rewards


def discounted_returns(rewards: Sequence[float], gamma: float = 1.0) -> list[float]:
    """Return-to-go per turn: ``G_k = r_k + gamma * G_{k+1}``.

    With ``gamma=1`` the first entry is the episode's return, the number GRPO trains on.
    """
    if not 0.0 <= gamma <= 1.0:
        raise ValueError(f"gamma must be in [0, 1], got {gamma}")
    out = [0.0] * len(rewards)
    running = 0.0
    for k in range(len(rewards) - 1, -1, -1):
        running = rewards[k] + gamma * running
        out[k] = running
    return out


def gated_return(process: Sequence[float], outcome: float, *, threshold: float = 1.0) -> float:
    """The outcome plus the process rewards, which count only when ``outcome >= threshold``."""
    return outcome + (sum(process) if outcome >= threshold else 0.0)


def gated_turn_rewards(process: Sequence[float], outcome: float, *, threshold: float = 1.0) -> list[float]:
    """Per-turn rewards with the gate applied: process rewards zeroed below ``threshold``, outcome last.

    The per-turn form of :func:`gated_return`, ready for :func:`discounted_returns`.
    """
    if not process:
        return [outcome]
    kept = list(process) if outcome >= threshold else [0.0] * len(process)
    kept[-1] += outcome
    return kept


def leave_one_out_advantages(group: Sequence[Sequence[float]], *, gamma: float = 1.0) -> list[list[float]]:
    """Per-turn advantages for rollouts of one task: ``G_{i,k}`` minus the mean of the others' ``G_{j,k}``.

    ``group[i]`` is rollout ``i``'s per-turn rewards. The baseline for turn ``k`` averages only the
    other rollouts that reached turn ``k``; when none did, the turn inherits the rollout's turn-0
    advantage, so a long episode's late turns are judged by how the episode went as a whole.

    Returns:
        One list per rollout, one advantage per turn.
    """
    returns = [discounted_returns(r, gamma) for r in group]
    out: list[list[float]] = []
    for i, own in enumerate(returns):
        advantages: list[float] = []
        for k, g in enumerate(own):
            others = [r[k] for j, r in enumerate(returns) if j != i and len(r) > k]
            if others:
                advantages.append(g - sum(others) / len(others))
            else:
                advantages.append(advantages[0] if advantages else 0.0)
        out.append(advantages)
    return out
