"""Environments by id: ``register("agentgym/code-v0", "agentgym.envs.code.env:CodeEnv")`` then ``make(...)``.

Ids are namespaced and versioned, ``namespace/Name-vN``, as Gymnasium's are: a new version of an env
gets a new id, so a result always names exactly what produced it. Short names (``code``) are aliases
that resolve to an id. Besides registered ids, :func:`make` and :func:`env_class` take a
``"module.path:ClassName"`` spec and import it, so an env need not be registered to be run.

Entry points are strings resolved on first use, so registering costs no import. Other packages add
environments through the ``agentgym.envs`` entry-point group: each entry point names a callable that
registers its environments (or an ``Env`` subclass, registered under the entry point's name).
"""

from __future__ import annotations

import difflib
import importlib
import re
from collections.abc import Sequence
from importlib.metadata import entry_points
from typing import Any

from agentgym.env import Env
from agentgym.errors import AgentgymError, EnvError

ID_PATTERN = re.compile(r"^[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+-v\d+$")
"""``namespace/Name-vN``: what a registered id looks like."""

_REGISTRY: dict[str, str | type[Env]] = {}
_ALIASES: dict[str, str] = {}
_ENTRY_POINTS_LOADED = False


def register(env_id: str, entry_point: str | type[Env], *, aliases: Sequence[str] = ()) -> None:
    """Register an environment under ``env_id``.

    Args:
        env_id: ``namespace/Name-vN``, e.g. ``"myorg/Calculator-v0"``.
        entry_point: An ``Env`` subclass, or ``"module.path:ClassName"`` imported on first ``make``.
        aliases: Short names that resolve to ``env_id`` (e.g. ``"calculator"``).

    Raises:
        EnvError: ``env_id`` is not namespaced and versioned, or an alias names another env.
    """
    if not ID_PATTERN.match(env_id):
        raise EnvError(f"environment id {env_id!r} must look like 'namespace/Name-v0' (namespaced and versioned)")
    for alias in aliases:
        if _ALIASES.get(alias, env_id) != env_id or alias in _REGISTRY:
            raise EnvError(f"alias {alias!r} already names {_ALIASES.get(alias, alias)!r}")
    _REGISTRY[env_id] = entry_point
    _ALIASES.update(dict.fromkeys(aliases, env_id))


def _load_entry_points() -> None:
    global _ENTRY_POINTS_LOADED
    if _ENTRY_POINTS_LOADED:
        return
    _ENTRY_POINTS_LOADED = True
    for ep in entry_points(group="agentgym.envs"):
        try:
            target = ep.load()
            if isinstance(target, type) and issubclass(target, Env):
                register(ep.name, target)
            else:
                target()
        except Exception as e:  # a broken plugin must not break every other environment
            import warnings

            warnings.warn(f"agentgym: entry point {ep.name!r} ({ep.value}) failed to load: {e}", stacklevel=2)


def registered() -> list[str]:
    """Every registered environment id, sorted (aliases not included)."""
    _load_entry_points()
    return sorted(_REGISTRY)


def aliases() -> dict[str, str]:
    """Every alias and the id it resolves to."""
    _load_entry_points()
    return dict(_ALIASES)


def resolve(env_id: str) -> str:
    """The id ``env_id`` names: itself, the id an alias stands for, or a ``module:Class`` spec unchanged."""
    _load_entry_points()
    return _ALIASES.get(env_id, env_id)


def load_object(spec: str) -> Any:
    """What a ``module.path:name`` spec names, imported.

    Raises:
        ImportError: The module cannot be imported, or has no such name (``AttributeError`` included).
    """
    module_name, sep, attr = spec.partition(":")
    if not sep or not module_name or not attr:
        raise ImportError(f"expected module.path:Name, got {spec!r}")
    try:
        return getattr(importlib.import_module(module_name), attr)
    except AttributeError as e:
        raise ImportError(str(e)) from e


def _import(spec: str, env_id: str) -> type[Env]:
    try:
        target = load_object(spec)
    except ImportError as e:
        raise EnvError(f"environment {env_id!r}: cannot load {spec!r}: {e}") from e
    if not (isinstance(target, type) and issubclass(target, Env)):
        raise EnvError(f"environment {env_id!r}: {spec!r} is not an agentgym Env subclass")
    return target


def env_class(env_id: str) -> type[Env]:
    """The class registered under ``env_id`` (an id or an alias), or named by a ``module:Class`` spec."""
    env_id = resolve(env_id)
    if env_id not in _REGISTRY:
        if ":" in env_id:
            return _import(env_id, env_id)
        names = sorted([*_REGISTRY, *_ALIASES])
        close = difflib.get_close_matches(env_id, names, n=1)
        hint = f" Did you mean {close[0]!r}?" if close else ""
        raise EnvError(f"no environment {env_id!r}.{hint} Registered: {', '.join(sorted(_REGISTRY))} "
                       "(or pass 'module.path:ClassName')")
    target = _REGISTRY[env_id]
    if isinstance(target, str):
        target = _REGISTRY[env_id] = _import(target, env_id)
    return target


def arguments(kwargs: dict[str, Any]) -> str:
    """Keyword arguments as a short line, ``metric='bogus', tasks_path=123``, for an error message."""
    if not kwargs:
        return "no arguments"
    shown = [f"{k}={v!r}" if len(repr(v)) <= 60 else f"{k}={repr(v)[:57]}..." for k, v in kwargs.items()]
    return ", ".join(shown)


def make(env_id: str, **kwargs: Any) -> Env:
    """Build the environment ``env_id`` names (an id, an alias, or ``module:Class``); kwargs go to its constructor.

    The env's ``id`` is the resolved id (``agentgym/code-v0`` for ``code``), which trajectories record.

    Raises:
        EnvError: An unknown id, or the constructor refused its arguments (any error it raises that
            is not already an :class:`~agentgym.errors.AgentgymError` is re-raised as one, naming
            the env and the arguments, the cause chained), as Gymnasium's ``make`` does.
    """
    cls = env_class(env_id)
    try:
        env = cls(**kwargs)
    except AgentgymError:
        raise
    except Exception as e:  # a constructor refusing its arguments (TypeError, ValueError...): the caller's error
        raise EnvError(f"cannot build {resolve(env_id)} with {arguments(kwargs)}: {e}") from e
    env.id = resolve(env_id)  # type: ignore[misc]
    return env
