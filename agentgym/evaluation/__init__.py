"""Evaluation: run a policy over an environment's tasks and summarise with confidence intervals."""

from agentgym.evaluation.metrics import Summary, pass_at_k, summarize, wilson_interval
from agentgym.evaluation.runner import evaluate

__all__ = ["Summary", "evaluate", "pass_at_k", "summarize", "wilson_interval"]
