"""The rewards and TRL packages keep their front doors honest and cheap to import."""

from __future__ import annotations

import subprocess
import sys

import agentgym.rewards
import agentgym.trl


def test_all_names_resolve() -> None:
    for package in (agentgym.rewards, agentgym.trl):
        missing = [name for name in package.__all__ if name != "TurnCreditGRPOTrainer" and not hasattr(package, name)]
        assert not missing, f"{package.__name__}.__all__ names what it does not export: {missing}"


def test_importing_rewards_and_trl_pulls_in_no_heavy_dependency() -> None:
    code = (
        "import sys, agentgym.rewards, agentgym.trl; "
        "print(sorted(m for m in ('litellm', 'trl', 'torch', 'transformers', 'datasets') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
