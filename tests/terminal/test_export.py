"""The code env's tasks exported as Harbor task folders (``agentgym export code --to harbor DIR``): harbor's
own loader and the terminal env read them back, and in Docker the oracle passes, the baseline fails and a
submission that tries to decide its own grade fails. The whole of HumanEval (164 oracles, 164 baselines)
is played by ``benchmarks/harbor_terminal.py``; here every sixteenth task."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from agentgym.cli import main
from agentgym.envs.code.tasks import load_tasks as code_tasks
from agentgym.envs.terminal import load_tasks
from agentgym.envs.terminal.env import TerminalEnv
from tests.terminal.test_env import Script, play
from tests.terminal.test_harbor_agrees import HARBOR_PYTHON, differences, needs_harbor

HERE = Path(__file__).parent
SAMPLE = 16  # every sixteenth HumanEval task is played here


@pytest.fixture(scope="module")
def exported(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("export") / "humaneval"
    assert main(["export", "code", "--to", "harbor", str(out)]) == 0
    return out


def test_every_humaneval_task_becomes_a_folder_the_terminal_env_reads(exported: Path) -> None:
    tasks = load_tasks(exported)
    assert len(tasks) == len(code_tasks()) == 164
    first = next(t for t in tasks if t.path.name == "humaneval-0")
    assert first.config.metadata["task_id"] == "HumanEval/0" and first.solution is not None
    assert "def has_close_elements" in first.instruction and "/app/solution.py" in first.instruction
    assert first.config.environment.network_mode == "no-network"
    assert main(["export", "code", "--to", "harbor", str(exported)]) == 2  # nothing is overwritten unasked


def test_harbors_own_loader_reads_every_exported_folder_as_the_terminal_env_does(exported: Path) -> None:
    needs_harbor()
    done = subprocess.run([HARBOR_PYTHON, str(HERE / "harbor_check.py"), str(exported)],
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    theirs = json.loads(done.stdout)["tasks"]
    ours = {task.path.name: task for task in load_tasks(exported)}
    assert sorted(theirs) == sorted(ours)
    for name, task in ours.items():
        assert differences(task.config.model_dump(mode="json"), theirs[name]["config"]) == [], name
        assert task.instruction == theirs[name]["instruction"], name


HACKS = {
    "exits 0 as it loads": "import os\nos._exit(0)\n",
    "writes the reward file": "open('/logs/verifier/reward.txt', 'w').write('1')\n",
    "replaces the comparison": "import builtins\nbuiltins.AssertionError = type('Never', (Exception,), {})\n"
                               "def has_close_elements(numbers, threshold):\n    return None\n",
    "answers with an object equal to everything": (
        "class Any:\n    def __eq__(self, other):\n        return True\n"
        "def has_close_elements(numbers, threshold):\n    return Any()\n"),
}


@pytest.mark.docker
@pytest.mark.slow
async def test_exported_tasks_grade_in_the_terminal_env_as_the_code_env_would(exported: Path) -> None:
    tasks = TerminalEnv.load_tasks(exported)[::SAMPLE]
    oracle, baseline = (TerminalEnv.scripted_policies()[name]() for name in ("oracle", "baseline"))
    first = TerminalEnv.load_tasks(exported / "humaneval-0")[0]
    hacks = [Script(f"cat > /app/solution.py <<'AGENTGYM'\n{source}AGENTGYM") for source in HACKS.values()]
    runs = await play(*[(t, oracle) for t in tasks], *[(t, baseline) for t in tasks],
                      *[(first, hack) for hack in hacks])
    oracles, baselines, hacked = runs[:len(tasks)], runs[len(tasks):2 * len(tasks)], runs[2 * len(tasks):]
    assert [r.outcome_reward for r in oracles] == [1.0] * len(tasks), [r.info.get("verifier") for r in oracles]
    assert [r.outcome_reward for r in baselines] == [0.0] * len(tasks)
    assert {name: r.outcome_reward for name, r in zip(HACKS, hacked, strict=True)} == dict.fromkeys(HACKS, 0.0)
