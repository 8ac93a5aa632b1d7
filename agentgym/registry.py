"""Environments by name: ``register("code", "agentgym.envs.code.env:CodeEnv")`` then ``make("code")``.

Entry points are strings resolved on first use, so registering costs no import. Other packages add
environments through the ``agentgym.envs`` entry-point group: each entry point names a callable that
registers its environments (or an ``Env`` subclass, registered under the entry point's name).
"""

from __future__ import annotations

import difflib
import importlib
from importlib.metadata import entry_points
from typing import Any

from agentgym.env import Env
from agentgym.errors import EnvError

_REGISTRY: dict[str, str | type[Env]] = {}
_ENTRY_POINTS_LOADED = False


def register(env_id: str, entry_point: str | type[Env]) -> None:
    """Register an environment under ``env_id``.

    Args:
        env_id: The name users pass to :func:`make`, e.g. ``"code"`` or ``"myorg/Calculator-v0"``.
        entry_point: An ``Env`` subclass, or ``"module.path:ClassName"`` imported on first ``make``.
    """
    _REGISTRY[env_id] = entry_point


def _load_entry_points() -> None:
    global _ENTRY_POINTS_LOADED
    if _ENTRY_POINTS_LOADED:
        return
    _ENTRY_POINTS_LOADED = True
    for ep in entry_points(group="agentgym.envs"):
        try:
            target = ep.load()
        except Exception as e:  # a broken plugin must not break every other environment
            import warnings

            warnings.warn(f"agentgym: entry point {ep.name!r} ({ep.value}) failed to load: {e}", stacklevel=2)
            continue
        if isinstance(target, type) and issubclass(target, Env):
            register(ep.name, target)
        else:
            target()


def registered() -> list[str]:
    """Every registered environment id, sorted."""
    _load_entry_points()
    return sorted(_REGISTRY)


def env_class(env_id: str) -> type[Env]:
    """The class registered under ``env_id``, importing it if needed."""
    _load_entry_points()
    if env_id not in _REGISTRY:
        close = difflib.get_close_matches(env_id, list(_REGISTRY), n=1)
        hint = f" Did you mean {close[0]!r}?" if close else ""
        raise EnvError(f"no environment {env_id!r}.{hint} Registered: {', '.join(sorted(_REGISTRY))}")
    target = _REGISTRY[env_id]
    if isinstance(target, str):
        module_name, _, attr = target.partition(":")
        try:
            cls = getattr(importlib.import_module(module_name), attr)
        except (ImportError, AttributeError) as e:
            raise EnvError(f"environment {env_id!r}: cannot load {target!r}: {e}") from e
        _REGISTRY[env_id] = target = cls
    return target


def make(env_id: str, **kwargs: Any) -> Env:
    """Build the environment registered as ``env_id``; keyword arguments go to its constructor."""
    cls = env_class(env_id)
    try:
        env = cls(**kwargs)
    except TypeError as e:
        raise EnvError(f"make({env_id!r}, {', '.join(f'{k}=...' for k in kwargs)}): {e}") from e
    env.id = env_id  # type: ignore[misc]
    return env
