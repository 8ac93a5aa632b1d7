"""Rewards: the verifier contract, rubrics that compose rewards, reusable components, turn-level credit.

Nothing here imports litellm, torch or TRL at import time; the LLM judge imports litellm when it is
first asked to grade.
"""

from agentgym.rewards.components import (
    answer_format,
    exact_answer,
    format_valid,
    gold_answers,
    normalize_answer,
    score_tool_calls,
    tool_call_match,
)
from agentgym.rewards.judge import LLMJudge, parse_verdict
from agentgym.rewards.probes import HACKS, ProbeReport, probe_judge
from agentgym.rewards.rubric import Gate, Rubric
from agentgym.rewards.turns import (
    discounted_returns,
    gated_return,
    gated_turn_rewards,
    leave_one_out_advantages,
    process_rewards,
    turn_rewards,
)
from agentgym.rewards.verifier import Episode, FunctionVerifier, Verifier, as_verifier, final_text, to_reward

__all__ = [
    "HACKS",
    "Episode",
    "FunctionVerifier",
    "Gate",
    "LLMJudge",
    "ProbeReport",
    "Rubric",
    "Verifier",
    "answer_format",
    "as_verifier",
    "discounted_returns",
    "exact_answer",
    "final_text",
    "format_valid",
    "gated_return",
    "gated_turn_rewards",
    "gold_answers",
    "leave_one_out_advantages",
    "normalize_answer",
    "parse_verdict",
    "probe_judge",
    "process_rewards",
    "score_tool_calls",
    "to_reward",
    "tool_call_match",
    "turn_rewards",
]
