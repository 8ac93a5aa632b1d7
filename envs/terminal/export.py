"""agentgym's code tasks written as Harbor task folders, so any harness that reads the format can run them.

Each task (HumanEval's, or any JSONL the code env reads) becomes::

    humaneval-0/
      instruction.md        the code env's prompt, answered by writing /app/solution.py
      task.toml             agent and verifier timeouts, no network, the task id in [metadata]
      environment/Dockerfile
      tests/test.sh         runs tests/check.py, writes /logs/verifier/reward.txt (1 or 0)
      tests/check.py        the task's tests, calling the submission through a relay
      tests/run_submission.py
      tests/task.json       the prompt, tests and entry point
      solution/solve.sh     writes the canonical solution (when the task has one)

The check keeps the code env's rule that nothing the submission does decides its grade: the tests run as
root in one process and call the submitted function through a relay to another, run as ``nobody``, and
only Python literals cross (:mod:`~agentgym.envs.terminal.exported`). A submission that exits, patches
builtins or writes files does so in its own process, away from the tests and their reward file.
"""

from __future__ import annotations

import base64
import json
import re
from collections.abc import Iterable
from importlib import resources
from pathlib import Path

from agentgym.types import Task

DEFAULT_BASE = "python:3.13-slim-bookworm"
SOLUTION = "/app/solution.py"
INSTRUCTION = (
    "Complete the following Python function so that it passes hidden tests. Write the complete function "
    f"definition, including its signature and any imports it needs, to `{SOLUTION}`.\n\n```python\n{{prompt}}```\n"
)
TEST_SH = f"""#!/bin/bash
# The submission is {SOLUTION}; the task's tests call it through a relay (check.py), as plain values.
mkdir -p /logs/verifier
if python3 -I /tests/check.py /tests/task.json {SOLUTION} > /logs/verifier/check.txt 2>&1; then
    echo 1 > /logs/verifier/reward.txt
else
    echo 0 > /logs/verifier/reward.txt
fi
"""
TASK_TOML = """version = "1.0"

[metadata]
source = "agentgym code env"
task_id = {task_id}

[agent]
timeout_sec = 600.0

[verifier]
timeout_sec = 120.0

[environment]
network_mode = "no-network"
cpus = 1
memory_mb = 2048
"""


def folder_name(task_id: str) -> str:
    """A task id as a folder name harbor accepts: ``HumanEval/0`` is ``humaneval-0``."""
    return re.sub(r"[^a-z0-9]+", "-", task_id.lower()).strip("-")


def export_code_tasks(tasks: Iterable[Task], out: Path, *, base_image: str = DEFAULT_BASE) -> list[Path]:
    """Write each code task as a Harbor task folder in ``out``; the folders, in order.

    Raises:
        FileExistsError: ``out`` holds a folder of one of the tasks' names already (nothing is overwritten).
    """
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for task in tasks:
        folder = out / folder_name(task.id)
        folder.mkdir()
        _write_one(task, folder, base_image)
        written.append(folder)
    return written


def _write_one(task: Task, folder: Path, base_image: str) -> None:
    data = task.data
    (folder / "instruction.md").write_text(INSTRUCTION.format(prompt=data["prompt"]))
    (folder / "task.toml").write_text(TASK_TOML.format(task_id=json.dumps(task.id)))
    (folder / "environment").mkdir()
    (folder / "environment" / "Dockerfile").write_text(f"FROM {base_image}\nWORKDIR /app\n")
    tests = folder / "tests"
    tests.mkdir()
    script(tests / "test.sh", TEST_SH)
    here = resources.files("agentgym.envs.terminal.exported")
    for name in ("check.py", "run_submission.py"):
        (tests / name).write_text(here.joinpath(name).read_text())
    (tests / "task.json").write_text(json.dumps({k: data[k] for k in ("prompt", "test", "entry_point")}))
    if data.get("canonical_solution") is not None:
        (folder / "solution").mkdir()
        source = base64.b64encode((data["prompt"] + data["canonical_solution"]).encode()).decode()
        script(folder / "solution" / "solve.sh", f"#!/bin/bash\necho {source} | base64 -d > {SOLUTION}\n")


def script(path: Path, text: str) -> None:
    """Write an executable script."""
    path.write_text(text)
    path.chmod(0o755)
