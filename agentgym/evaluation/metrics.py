"""Summary statistics of a set of trajectories: success with a confidence interval, costs, failures."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel, Field

from agentgym.errors import reason_line
from agentgym.rewards.calibration import CalibrationReport, calibration_reports
from agentgym.types import Trajectory, Usage


def wilson_interval(successes: int, n: int, z: float = 1.959964) -> tuple[float, float]:
    """95 % Wilson score interval for a success rate: sensible at 0/n and n/n, unlike the normal one."""
    if n == 0:
        return 0.0, 0.0
    p = successes / n
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    return max(0.0, centre - half), min(1.0, centre + half)


def pass_at_k(n: int, c: int, k: int) -> float:
    """Unbiased pass@k from ``n`` samples with ``c`` correct (Chen et al., 2021)."""
    if n - c < k:
        return 1.0
    return 1.0 - math.prod(1.0 - k / i for i in range(n - c + 1, n + 1))


def cost_text(cost_usd: float, unpriced_calls: int) -> str:
    """A cost for people: ``$0.0123``, or unknown where calls had no price (unknown is not free)."""
    if not unpriced_calls:
        return f"${cost_usd:.4f}"
    calls = f"{unpriced_calls} unpriced call{'s' * (unpriced_calls != 1)}"
    return f"unknown ({calls})" if cost_usd == 0 else f"${cost_usd:.4f} + unknown ({calls})"


class Summary(BaseModel):
    """What an evaluation run printed and saved."""

    env: str
    policy: str
    episodes: int
    successes: int
    success_rate: float
    success_ci95: tuple[float, float]
    mean_reward: float
    mean_turns: float
    prompt_tokens: int
    completion_tokens: int
    cost_usd: float
    unpriced_calls: int = 0
    """Policy calls whose price is unknown: ``cost_usd`` leaves them out (see :func:`cost_text`)."""
    retries: int
    usage_by_role: dict[str, Usage] = Field(default_factory=dict)
    """Env-side model calls (a simulated user, a feedback model) by role; the fields above are the policy's."""
    tool_errors: dict[str, int]
    outcomes: dict[str, int]
    grading: dict[str, int] = Field(default_factory=dict)
    """Episodes by how the env graded them, where it says (``info["grading"]``: the code env's
    ``isolated`` or ``inprocess``), so a reader of the run knows what its grades trusted."""
    failures: dict[str, int] = Field(default_factory=dict)
    reward_components: dict[str, float] = Field(default_factory=dict)
    pass_at_k: dict[str, float] = Field(default_factory=dict)
    calibration: dict[str, CalibrationReport] = Field(default_factory=dict)
    """Per :class:`~agentgym.rewards.Calibration` criterion: ECE and the reliability diagram's bins."""
    sandbox_seconds: float
    sandbox_seconds_waiting: float = 0.0
    """Of ``sandbox_seconds``, those spent waiting on the model (its retries through an outage included)."""
    policy_seconds: float = 0.0
    """Seconds waiting on the policy, failed calls and their retries included."""
    wall_seconds: float = 0.0
    episodes_per_second: float = 0.0

    def table(self) -> str:
        lo, hi = self.success_ci95
        rows: list[tuple[str, Any]] = [
            ("env", self.env),
            ("policy", self.policy),
            ("episodes", self.episodes),
            ("success", f"{self.successes}/{self.episodes} = {self.success_rate:.1%}  (95% CI {lo:.1%}–{hi:.1%})"),
            ("mean reward", f"{self.mean_reward:.4f}"),
            ("mean turns", f"{self.mean_turns:.2f}"),
            ("tokens", f"{self.prompt_tokens} prompt + {self.completion_tokens} completion"),
            ("cost", cost_text(self.cost_usd, self.unpriced_calls)),
            ("retries", self.retries),
            *((f"{role} usage", f"{u.prompt_tokens} prompt + {u.completion_tokens} completion, "
               f"{cost_text(u.cost_usd, u.unpriced_calls)}, "
               f"{u.retries} retries") for role, u in self.usage_by_role.items()),
            ("outcomes", _fmt(self.outcomes)),
            *((("grading", _fmt(self.grading)),) if self.grading else ()),
            ("tool errors", _fmt(self.tool_errors) or "none"),
            ("model seconds", f"{self.policy_seconds:.1f}  (waiting on the policy, retries and failed calls included)"),
            ("sandbox seconds",
             f"{self.sandbox_seconds:.1f}  ({self.sandbox_seconds_waiting:.1f} of them waiting on the model)"),
            ("wall seconds", f"{self.wall_seconds:.1f}  ({self.episodes_per_second:.2f} episodes/s)"),
        ]
        rows += [(f"pass@{k}", f"{v:.1%}") for k, v in self.pass_at_k.items()]
        rows += [(f"reward[{k}]", f"{v:.4f}") for k, v in self.reward_components.items()]
        for name, report in self.calibration.items():
            rows.append((f"calibration[{name or 'verifier'}]",
                         f"ECE {report.ece:.3f} over {report.stated} stated ({report.unstated} unstated)"))
        if self.failures:
            rows.append(("failures", "; ".join(f"{n}× {r}" for r, n in self.failures.items())))
        width = max(len(k) for k, _ in rows)
        table = "\n".join(f"{k:<{width}}  {v}" for k, v in rows)
        diagrams = [f"reliability[{name or 'verifier'}]\n{r.diagram()}"
                    for name, r in self.calibration.items() if r.stated]
        return "\n".join([table, *diagrams])


def _fmt(counts: dict[str, int]) -> str:
    return ", ".join(f"{k}={v}" for k, v in sorted(counts.items()))


def summarize(trajectories: Sequence[Trajectory], *, env: str, policy: str, wall_seconds: float = 0.0) -> Summary:
    """Aggregate trajectories into a :class:`Summary`."""
    n = len(trajectories)
    successes = sum(t.success for t in trajectories)
    tool_errors: Counter[str] = Counter()
    components: dict[str, list[float]] = {}
    by_role: dict[str, Usage] = {}
    for t in trajectories:
        tool_errors.update(t.tool_errors)
        for role, usage in t.usage_by_role.items():
            by_role[role] = by_role.get(role, Usage()) + usage
        for name, value in t.reward_components.items():
            components.setdefault(name, []).append(value)
    by_task: dict[str, list[bool]] = {}
    for t in trajectories:
        by_task.setdefault(t.task_id, []).append(t.success)
    samples = min((len(v) for v in by_task.values()), default=0)
    passk = {}
    for k in (1, 5, 10):
        if samples >= k > 1 or (k == 1 and samples > 1):
            passk[str(k)] = sum(pass_at_k(len(v), sum(v), k) for v in by_task.values()) / len(by_task)
    failures = Counter(reason_line(t.failure) for t in trajectories if t.failure)
    return Summary(
        env=env,
        policy=policy,
        episodes=n,
        successes=successes,
        success_rate=successes / n if n else 0.0,
        success_ci95=wilson_interval(successes, n),
        mean_reward=sum(t.reward for t in trajectories) / n if n else 0.0,
        mean_turns=sum(len(t.turns) for t in trajectories) / n if n else 0.0,
        prompt_tokens=sum(t.usage.prompt_tokens for t in trajectories),
        completion_tokens=sum(t.usage.completion_tokens for t in trajectories),
        cost_usd=sum(t.usage.cost_usd for t in trajectories),
        unpriced_calls=sum(t.usage.unpriced_calls for t in trajectories),
        retries=sum(t.usage.retries for t in trajectories),
        usage_by_role=by_role,
        tool_errors=dict(tool_errors),
        outcomes=dict(Counter(t.outcome for t in trajectories)),
        grading=dict(Counter(str(t.info["grading"]) for t in trajectories if "grading" in t.info)),
        failures=dict(failures.most_common(5)),
        reward_components={k: sum(v) / len(v) for k, v in components.items()},
        pass_at_k=passk,
        calibration=calibration_reports([t.reward_components for t in trajectories if t.failure is None]),
        sandbox_seconds=sum(t.sandbox_seconds for t in trajectories),
        sandbox_seconds_waiting=sum(min(t.policy_seconds, t.sandbox_seconds) for t in trajectories),
        policy_seconds=sum(t.policy_seconds for t in trajectories),
        wall_seconds=wall_seconds,
        episodes_per_second=n / wall_seconds if wall_seconds else 0.0,
    )
