"""Rewards: the verifier contract, rubrics that compose rewards, reusable components, turn-level credit.

Nothing here imports litellm, torch or TRL at import time; the LLM judge imports litellm when it is
first asked to grade.
"""

from agentgym.rewards.calibration import (
    Calibration,
    CalibrationReport,
    calibration_report,
    proper_score,
    stated_confidence,
)
from agentgym.rewards.components import (
    answer_format,
    exact_answer,
    format_valid,
    gold_answers,
    normalize_answer,
    score_tool_calls,
    tool_call_match,
)
from agentgym.rewards.efficiency import Cost, ToolEfficiency, tool_calls_made
from agentgym.rewards.group import (
    component_advantages,
    group_test_credit,
    median_tool_efficiency,
    summed_advantages,
    unit_test_weights,
    weighted_test_credit,
    zero_signal_groups,
)
from agentgym.rewards.infogain import (
    CompletionsGoldScorer,
    GoldScorer,
    InformationGain,
    TransformersGoldScorer,
    gold_scorer_for,
)
from agentgym.rewards.judge import LLMJudge, parse_verdict
from agentgym.rewards.noisy import NoisyCorrected, backward_corrected, rates_from_probe
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
    "Calibration",
    "CalibrationReport",
    "CompletionsGoldScorer",
    "Cost",
    "Episode",
    "FunctionVerifier",
    "Gate",
    "GoldScorer",
    "InformationGain",
    "LLMJudge",
    "NoisyCorrected",
    "ProbeReport",
    "Rubric",
    "ToolEfficiency",
    "TransformersGoldScorer",
    "Verifier",
    "answer_format",
    "as_verifier",
    "backward_corrected",
    "calibration_report",
    "component_advantages",
    "discounted_returns",
    "exact_answer",
    "final_text",
    "format_valid",
    "gated_return",
    "gated_turn_rewards",
    "gold_answers",
    "gold_scorer_for",
    "group_test_credit",
    "leave_one_out_advantages",
    "median_tool_efficiency",
    "normalize_answer",
    "parse_verdict",
    "probe_judge",
    "process_rewards",
    "proper_score",
    "rates_from_probe",
    "score_tool_calls",
    "stated_confidence",
    "summed_advantages",
    "to_reward",
    "tool_call_match",
    "tool_calls_made",
    "turn_rewards",
    "unit_test_weights",
    "weighted_test_credit",
    "zero_signal_groups",
]
