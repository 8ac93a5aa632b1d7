"""Policies: hosted LLMs through litellm, and the scripted policies environments ship."""

from __future__ import annotations

from typing import Any

from agentgym.env import Env
from agentgym.policies.base import Policy, Reply
from agentgym.policies.litellm import LiteLLMPolicy

#: Model strings that start with it name a model on this machine (``local:PATH``), not a hosted one.
LOCAL_PREFIX = "local:"

__all__ = ["LOCAL_PREFIX", "LiteLLMPolicy", "Policy", "Reply", "load_policy"]


def load_policy(name: str, env_class: type[Env], **options: Any) -> Policy:
    """A policy by name: one of the env's scripted policies (``reference``...), else a litellm model.

    Args:
        name: ``"reference"``, ``"baseline"`` (if the env ships them), ``"local:PATH"`` (a model on this
            machine, see :mod:`agentgym.policies.local`), or a litellm model string.
        env_class: The environment the policy will act in.
        **options: Keyword arguments for :class:`LiteLLMPolicy` or
            :meth:`~agentgym.policies.local.LocalModelPolicy.load` (ignored by scripted policies).
    """
    scripted = env_class.scripted_policies()
    if name in scripted:
        return scripted[name]()
    if name.startswith(LOCAL_PREFIX):
        from agentgym.policies.local import LocalModelPolicy

        return LocalModelPolicy.load(name.removeprefix(LOCAL_PREFIX), **options)
    return LiteLLMPolicy(name, **options)
