"""The dry run's probe (envs/code/probe.py) run in this interpreter: what it must not flag as the tests' doing."""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Callable, Iterator
from importlib import resources
from typing import Any

import pytest


@pytest.fixture
def probe() -> Iterator[Callable[[Any], Any]]:
    """The probe's wrapper, and this process's state put back after it (it changes directory, stdout, env)."""
    namespace: dict[str, Any] = {}
    source = resources.files("agentgym.envs.code").joinpath("probe.py").read_text(encoding="utf-8")
    exec(compile(source, "probe.py", "exec", dont_inherit=True), namespace)
    cwd, stdout, argv, limit = os.getcwd(), sys.stdout, list(sys.argv), sys.getrecursionlimit()
    interval = sys.getswitchinterval()
    try:
        yield namespace["_agentgym_probe"]
    finally:
        sys.setswitchinterval(interval)
        os.chdir(cwd)
        sys.stdout, sys.argv[:] = stdout, argv
        sys.setrecursionlimit(limit)
        os.environ.pop("AGENTGYM_PROBE", None)


def test_threads_calling_at_once_do_not_read_one_call_s_own_changes_as_the_tests(
        probe: Callable[[Any], Any]) -> None:
    """The probe's first call changes process state; another thread's call must not take that for the tests'."""
    sys.setswitchinterval(1e-6)  # a thread switch between any two bytecodes, as on a loaded machine
    wrong = []
    for trial in range(200):
        def square(x: int) -> int:
            return x * x

        probed = probe(square)
        results: dict[int, int] = {}

        def work(k: int) -> None:
            results[k] = probed(k)  # noqa: B023  # each trial's own probe, joined before the next

        threads = [threading.Thread(target=work, args=(k,)) for k in range(8)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        if results != {k: k * k for k in range(8)}:
            wrong.append((trial, results))
    assert not wrong, f"{len(wrong)} of 200 trials answered the sentinel: {wrong[:3]}"


def test_state_the_tests_set_between_calls_is_still_seen(probe: Callable[[Any], Any]) -> None:
    """One thread as before: the tests changing os.environ between calls still makes the next answer wrong."""
    probed = probe(lambda x: x + 1)
    assert probed(1) == 2
    assert probed(2) == 3
    os.environ["AGENTGYM_PROBE_TEST"] = "set by the tests"
    try:
        assert probed(3) != 4
    finally:
        os.environ.pop("AGENTGYM_PROBE_TEST")
