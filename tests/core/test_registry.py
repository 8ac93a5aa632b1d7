"""Environment ids: namespaced and versioned, short aliases, and envs named by ``module:Class``."""

from __future__ import annotations

import pytest

import agentgym
from agentgym import EnvError, make, register
from agentgym.registry import aliases, env_class, resolve

from .toy import Counter


def test_builtin_ids_are_versioned_and_the_short_names_are_aliases() -> None:
    assert {"agentgym/code-v0", "agentgym/search-v0", "agentgym/toy-v0"} <= set(agentgym.registered())
    assert "code" not in agentgym.registered() and aliases()["code"] == "agentgym/code-v0"
    assert env_class("toy") is env_class("agentgym/toy-v0")
    assert make("toy").id == make("agentgym/toy-v0").id == "agentgym/toy-v0"


def test_ids_must_be_namespaced_and_versioned_and_aliases_unique() -> None:
    for bad in ("counter", "test/Counter", "Counter-v0"):
        with pytest.raises(EnvError, match="namespace/Name-v0"):
            register(bad, Counter)
    with pytest.raises(EnvError, match="alias 'code' already names 'agentgym/code-v0'"):
        register("test/Other-v0", Counter, aliases=["code"])
    register("test/Counter-v1", Counter, aliases=["counter"])
    register("test/Counter-v1", Counter, aliases=["counter"])  # registering again is harmless
    assert resolve("counter") == "test/Counter-v1"


def test_an_env_is_made_from_module_and_class_without_registering() -> None:
    env = make("tests.core.toy:Counter", max_turns=2)
    assert isinstance(env, Counter) and env.id == "tests.core.toy:Counter" and env.max_turns == 2
    with pytest.raises(EnvError, match=r"cannot load 'tests\.core\.toy:Nope'"):
        make("tests.core.toy:Nope")
    with pytest.raises(EnvError, match="is not an agentgym Env subclass"):
        make("tests.core.test_registry:test_an_env_is_made_from_module_and_class_without_registering")


def test_the_old_sandbox_keyword_is_refused_by_name() -> None:
    with pytest.raises(EnvError, match="unexpected keyword argument 'sandbox'"):
        make("code", sandbox="local")
