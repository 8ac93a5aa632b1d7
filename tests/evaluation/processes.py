"""Real ``agentgym eval`` processes for the operator tests: started, waited on, and their descendants seen."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import psutil

REPO = Path(__file__).resolve().parents[2]


def cli_env() -> dict[str, str]:
    """This environment, with a key for FakeOpenAI and this checkout first on the import path."""
    path = os.pathsep.join(p for p in (str(REPO), os.environ.get("PYTHONPATH")) if p)
    return {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True", "OPENAI_API_KEY": "sk-test", "PYTHONPATH": path}


def start_eval(cwd: Path, *args: str) -> subprocess.Popen[str]:
    """``agentgym eval ARGS`` as its own process, in ``cwd``, stdout and stderr piped."""
    return subprocess.Popen([sys.executable, "-m", "agentgym.cli", "eval", *args], cwd=cwd, env=cli_env(),
                            text=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def run_eval(cwd: Path, *args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "agentgym.cli", "eval", *args], cwd=cwd, env=cli_env(),
                          text=True, capture_output=True, timeout=timeout)


def wait_until(done: Callable[[], bool], proc: subprocess.Popen[str], what: str, timeout: float = 300) -> None:
    """Poll ``done`` until it holds; fail with ``proc``'s stderr if ``proc`` exits first or time runs out."""
    deadline = time.monotonic() + timeout
    while not done():
        if proc.poll() is not None:
            raise AssertionError(f"exited {proc.returncode} before {what}:\n{proc.communicate()[1]}")
        if time.monotonic() > deadline:
            proc.kill()
            raise AssertionError(f"not {what} within {timeout:g}s:\n{proc.communicate()[1]}")
        time.sleep(0.1)


def descendants(pid: int) -> list[psutil.Process]:
    """Every process below ``pid`` (sandboxes, their jails, helpers), for checking later that none is left."""
    try:
        return psutil.Process(pid).children(recursive=True)
    except psutil.NoSuchProcess:
        return []


def still_running(processes: list[psutil.Process], grace: float = 10.0) -> list[str]:
    """Those of ``processes`` alive after ``grace`` seconds (a sandbox's jail may take a moment to go)."""
    deadline = time.monotonic() + grace
    while True:
        alive = [p for p in processes if p.is_running() and p.status() != psutil.STATUS_ZOMBIE]
        if not alive or time.monotonic() > deadline:
            return [f"{p.pid} {' '.join(p.cmdline())[:120]}" for p in alive]
        time.sleep(0.2)
