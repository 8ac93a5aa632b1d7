"""Policies: hosted LLMs through litellm, scripted reference solutions and baselines."""

from agentgym.policies.base import Policy, Reply

__all__ = ["Policy", "Reply"]
