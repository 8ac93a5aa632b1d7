"""Policies: hosted LLMs through litellm, and the scripted policies environments ship."""

from __future__ import annotations

from typing import Any

from agentgym.env import Env
from agentgym.policies.base import Policy, Reply
from agentgym.policies.litellm import LiteLLMPolicy

__all__ = ["LiteLLMPolicy", "Policy", "Reply", "load_policy"]


def load_policy(name: str, env_class: type[Env], **options: Any) -> Policy:
    """A policy by name: one of the env's scripted policies (``reference``...), else a litellm model.

    Args:
        name: ``"reference"``, ``"baseline"`` (if the env ships them), or a litellm model string.
        env_class: The environment the policy will act in.
        **options: Keyword arguments for :class:`LiteLLMPolicy` (ignored by scripted policies).
    """
    scripted = env_class.scripted_policies()
    if name in scripted:
        return scripted[name]()
    return LiteLLMPolicy(name, **options)
