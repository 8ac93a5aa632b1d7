"""Evaluation: run a policy over an environment's tasks and summarise with confidence intervals."""

from agentgym.evaluation.metrics import Summary, pass_at_k, summarize, wilson_interval
from agentgym.evaluation.runner import RunStopped, evaluate

__all__ = ["RunStopped", "Summary", "evaluate", "pass_at_k", "summarize", "wilson_interval"]
