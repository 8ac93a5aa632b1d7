"""Rewards composed like modules: a weighted sum of named criteria, gates, and bounds.

    rubric = Rubric(
        {"correct": exact_answer, "format": format_valid, "judge": judge},
        weights={"correct": 1.0, "format": 0.1, "judge": 0.0},   # weight 0: recorded, not counted
        gates=[Gate("format", threshold=1.0)],                   # a malformed episode earns at most 0
        bounds=(0.0, 1.0),
    )
    reward = await rubric.score(episode)          # or: class QA(Env): verifier = rubric
    reward.components  # {"correct": 1.0, "format": 1.0, "judge": 0.8, "gate/format": 1.0}

Every criterion's score lands in ``Reward.components`` (which the env copies into
``trajectory.reward_components`` and the evaluation summary reports), so a run can show *why* its
reward moved, not only that it did. A criterion that returns components of its own (a nested rubric)
is recorded as ``"name.component"``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from agentgym.rewards.verifier import Episode, VerifierLike, as_verifier, verifier_name
from agentgym.types import Reward


@dataclass(frozen=True)
class Gate:
    """A constraint on the total: when ``criterion`` scores below ``threshold``, the total is capped.

    With the default ``cap=0.0`` a failed gate zeroes a non-negative reward (gated aggregation: no
    credit for a right answer in a broken format); a higher cap limits it instead.

    Attributes:
        criterion: Name of a rubric criterion (give it weight 0 to use it only as a gate).
        threshold: The score the criterion must reach for the gate to pass.
        cap: The most the total may be when the gate fails.
    """

    criterion: str
    threshold: float = 1.0
    cap: float = 0.0


class Rubric:
    """A weighted sum of named verifiers, then gates, then clipping to bounds.

    Criteria are scored concurrently. The rubric is itself a verifier, so rubrics nest.

    Args:
        criteria: Name to verifier (or plain scoring function); a sequence is named by each
            verifier's name.
        weights: Weight per criterion name; missing names weigh 1. Weight 0 records a score as a metric
            without counting it.
        gates: Applied to the weighted sum, in order.
        bounds: ``(low, high)`` the final value is clipped to; ``None`` for no clipping.
        name: The name this rubric is recorded under when nested in another.
    """

    def __init__(
        self,
        criteria: Mapping[str, VerifierLike] | Sequence[VerifierLike],
        *,
        weights: Mapping[str, float] | None = None,
        gates: Sequence[Gate] = (),
        bounds: tuple[float, float] | None = None,
        name: str = "rubric",
    ) -> None:
        if isinstance(criteria, Mapping):
            items = list(criteria.items())
        else:
            items = [(verifier_name(c), c) for c in criteria]
        self.criteria = {key: as_verifier(value, name=key) for key, value in items}
        if len(self.criteria) != len(items):
            raise ValueError("rubric criteria must have distinct names")
        self.weights = dict(weights or {})
        unknown = (set(self.weights) | {g.criterion for g in gates}) - set(self.criteria)
        if unknown:
            raise ValueError(f"weights or gates name unknown criteria: {sorted(unknown)}")
        if bounds is not None and bounds[0] > bounds[1]:
            raise ValueError(f"bounds {bounds} are empty")
        self.gates = list(gates)
        self.bounds = bounds
        self.name = name

    async def score(self, episode: Episode) -> Reward:
        names = list(self.criteria)
        rewards = await asyncio.gather(*(self.criteria[n].score(episode) for n in names))
        scores = dict(zip(names, (r.value for r in rewards), strict=True))
        components: dict[str, float] = dict(scores)
        info: dict[str, object] = {}
        for name, reward in zip(names, rewards, strict=True):
            for sub, value in reward.components.items():
                if sub != name:
                    components[f"{name}.{sub}"] = value
            if reward.info:
                info[name] = reward.info
        total = sum(self.weights.get(n, 1.0) * s for n, s in scores.items())
        for gate in self.gates:
            passed = scores[gate.criterion] >= gate.threshold
            components[f"gate/{gate.criterion}"] = float(passed)
            if not passed:
                total = min(total, gate.cap)
        if self.bounds is not None:
            total = min(max(total, self.bounds[0]), self.bounds[1])
        return Reward(value=total, components=components, info=info)
