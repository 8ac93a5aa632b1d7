"""Policies: hosted LLMs through litellm, and the scripted policies environments ship."""

from __future__ import annotations

from typing import Any

from agentgym.env import Env
from agentgym.errors import AgentgymError
from agentgym.policies.base import Policy, Reply
from agentgym.policies.litellm import LiteLLMPolicy

#: Model strings that start with it name a model on this machine (``local:PATH``), not a hosted one.
LOCAL_PREFIX = "local:"

__all__ = ["LOCAL_PREFIX", "LiteLLMPolicy", "Policy", "Reply", "load_policy"]

#: ``--model policy:module.path:Class`` names a policy class of your own (made with no arguments).
POLICY_PREFIX = "policy:"


#: The names the built-in envs give their scripted policies (``agentgym envs`` lists each env's).
SCRIPTED_NAMES = frozenset({"reference", "baseline"})


def load_policy(name: str, env_class: type[Env], **options: Any) -> Policy:
    """A policy by name: one of the env's scripted policies, a class of your own, else a litellm model.

    Args:
        name: ``"reference"``, ``"baseline"`` (if the env ships them: :meth:`Env.scripted_policies`),
            ``"policy:module.path:Class"`` (any policy class, built with no arguments: a custom env's
            scripted policy, say), ``"local:PATH"`` (a model on this machine, see
            :mod:`agentgym.policies.local`), or a litellm model string.
        env_class: The environment the policy will act in.
        **options: Keyword arguments for :class:`LiteLLMPolicy` or
            :meth:`~agentgym.policies.local.LocalModelPolicy.load` (ignored by scripted policies).

    Raises:
        AgentgymError: A ``policy:`` spec that cannot be imported or does not make a policy.
    """
    scripted = env_class.scripted_policies()
    if name in scripted:
        return scripted[name]()
    if name in SCRIPTED_NAMES:  # not a model string: say so, rather than "litellm cannot tell its provider"
        env = getattr(env_class, "id", None) or env_class.__name__
        has = f"its scripted policies are {', '.join(scripted)}" if scripted else "it ships no scripted policy"
        raise AgentgymError(f"--model {name}: {env} has no {name!r} policy ({has}); give a model, e.g. "
                            f"--model openai/gpt-4o-mini, or a policy class, --model {POLICY_PREFIX}module:Class")
    if name.startswith(POLICY_PREFIX):
        return _policy_class(name.removeprefix(POLICY_PREFIX))()
    if name.startswith(LOCAL_PREFIX):
        from agentgym.policies.local import LocalModelPolicy

        return LocalModelPolicy.load(name.removeprefix(LOCAL_PREFIX), **options)
    return LiteLLMPolicy(name, **options)


def _policy_class(spec: str) -> Any:
    from agentgym.registry import load_object

    try:
        target = load_object(spec)
    except ImportError as e:
        raise AgentgymError(f"--model {POLICY_PREFIX}{spec}: cannot load it: {e}") from e
    if not (isinstance(target, type) and callable(getattr(target, "act", None))):
        raise AgentgymError(f"--model {POLICY_PREFIX}{spec}: not a policy class (a class with an act method)")
    return target
