"""Rewards for acting economically: fewer tool calls, fewer tokens and dollars, counted only when right.

Both components scale a *gated* score: the episode must first be correct by the ``correct`` verifier
you pass (the task's own check, e.g. :func:`~agentgym.rewards.exact_answer`), and only then do its
savings count. Ungated, the cheapest policy would answer nothing at no cost; gated, an episode that
makes no calls and gives no answer scores 0 (the multiplicative gate of CaRL and of RoRecomp's
budget term). ``correct`` is required for that reason: there is no ungated form.

    rubric = Rubric({"correct": exact_answer,
                     "efficiency": ToolEfficiency(correct=exact_answer, budget=4),
                     "cost": Cost(correct=exact_answer, tokens=2_000)},
                    weights={"efficiency": 0.2, "cost": 0.1})
"""

from __future__ import annotations

from agentgym.parsing import parse_tool_calls
from agentgym.rewards.verifier import Episode, VerifierLike, as_verifier
from agentgym.types import Reward, Trajectory


def tool_calls_made(trajectory: Trajectory) -> int:
    """How many tool calls the model wrote over the episode, malformed and final ones included."""
    return sum(len(parse_tool_calls(turn.action)) for turn in trajectory.turns)


async def _correctness(correct: VerifierLike, episode: Episode) -> float:
    value = (await as_verifier(correct).score(episode)).value
    return min(max(value, 0.0), 1.0)


class ToolEfficiency:
    """``correct × max(0, 1 − calls / budget)``: a right answer reached with fewer calls scores more.

    The final answer's own call counts, so with ``budget=4`` one call scores 0.75 and four or more
    score 0. For the group-median form (fewer calls than the other rollouts of the same task), see
    :func:`~agentgym.rewards.median_tool_efficiency`.

    Args:
        correct: The verifier whose score (clipped to [0, 1]) gates and scales this one.
        budget: Calls at which the efficiency reaches 0; must be positive.
    """

    name = "tool_efficiency"

    def __init__(self, *, correct: VerifierLike, budget: int) -> None:
        if budget <= 0:
            raise ValueError(f"tool-call budget must be positive, got {budget}")
        self.correct, self.budget = correct, budget

    async def score(self, episode: Episode) -> Reward:
        calls = tool_calls_made(episode.trajectory)
        right = await _correctness(self.correct, episode)
        value = right * max(0.0, 1.0 - calls / self.budget)
        return Reward(value=value, components={"calls": float(calls), "correct": right})


class Cost:
    """``correct × max(0, 1 − spent / budget)`` for tokens and/or dollars from the run's own meter.

    ``spent`` is the policy's :attr:`~agentgym.types.Trajectory.usage` (prompt plus completion tokens,
    and ``cost_usd``), the numbers the evaluation summary reports; with both budgets given the score
    is the product of the two factors (Router-R1's cost term, as a bounded penalty).

    Args:
        correct: The verifier whose score (clipped to [0, 1]) gates and scales this one.
        tokens: Prompt plus completion tokens at which the token factor reaches 0.
        usd: Dollars at which the money factor reaches 0.
    """

    name = "cost"

    def __init__(self, *, correct: VerifierLike, tokens: int | None = None, usd: float | None = None) -> None:
        if tokens is None and usd is None:
            raise ValueError("Cost needs a budget: tokens=, usd= or both")
        if (tokens is not None and tokens <= 0) or (usd is not None and usd <= 0):
            raise ValueError(f"cost budgets must be positive, got tokens={tokens}, usd={usd}")
        self.correct, self.tokens, self.usd = correct, tokens, usd

    async def score(self, episode: Episode) -> Reward:
        usage = episode.trajectory.usage
        spent_tokens = usage.prompt_tokens + usage.completion_tokens
        factor = 1.0
        if self.tokens is not None:
            factor *= max(0.0, 1.0 - spent_tokens / self.tokens)
        if self.usd is not None:
            factor *= max(0.0, 1.0 - usage.cost_usd / self.usd)
        right = await _correctness(self.correct, episode)
        return Reward(value=right * factor,
                      components={"tokens": float(spent_tokens), "usd": usage.cost_usd, "correct": right})
