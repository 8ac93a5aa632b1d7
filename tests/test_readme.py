"""README.md's commands run as written, and its front door stays a front door.

Every command line of README's ``bash`` blocks is named in ``COMMANDS`` below with how this test runs
it, so a command added to README without a way to run it fails here. The hosted-model command runs
as written against :class:`~agentgym.testing.FakeOpenAI` (its ``--api-base``, which README names),
answering with each task's canonical solution over the real wire format; the training command runs
as written with a tiny setting appended (argparse keeps the last value of an option).
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any

import pytest

from agentgym.testing import FakeOpenAI, completion, tool_call

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")
BASH = re.compile(r"^```bash\n(.*?)^```$", re.DOTALL | re.MULTILINE)

REFERENCE = "agentgym eval code --model reference --sandbox local --limit 20"
HOSTED = "agentgym eval code --model openai/gpt-4o-mini --limit 20"
TRAIN = "python examples/train_grpo.py"
INSTALLS = ("pip install -e .", "pip install -e '.[llm,view]'")
COMMANDS = {REFERENCE, HOSTED, TRAIN, *INSTALLS}


def readme_commands() -> list[str]:
    """Each command line of README's bash blocks, its trailing comment cut off."""
    lines = []
    for block in BASH.findall(README):
        for line in block.splitlines():
            command = line.split("  #")[0].strip()
            if command and not command.startswith("#"):
                lines.append(command)
    return lines


def run(command: str, cwd: Path, *extra: str, env: dict[str, str] | None = None,
        timeout: float = 900) -> subprocess.CompletedProcess[str]:
    argv = shlex.split(command) + list(extra)
    if argv[0] == "agentgym":
        argv = [sys.executable, "-m", "agentgym.cli", *argv[1:]]
    elif argv[0] == "python":
        argv = [sys.executable, str(ROOT / argv[1]), *argv[2:]]
    full = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True", "PYTHONPATH": str(ROOT), **(env or {})}
    return subprocess.run(argv, cwd=cwd, env=full, text=True, capture_output=True, timeout=timeout)


def summary(cwd: Path, name: str) -> dict[str, Any]:
    return json.loads((cwd / "runs" / f"{name}.summary.json").read_text())


def test_every_readme_command_is_one_this_file_runs() -> None:
    assert sorted(readme_commands()) == sorted(COMMANDS)


def test_readme_is_a_front_door() -> None:
    lines = README.splitlines()
    assert len(lines) < 130, len(lines)
    assert not re.search(r"\b20\d\d-\d\d-\d\d\b|\bload (average )?\d|`[0-9a-f]{7}`", README)  # undated
    for heading in ("## Install", "## Three commands", "## Environments", "## Figures", "## Documentation"):
        assert heading in lines


def test_the_install_lines_name_extras_that_exist() -> None:
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    named = {e for line in INSTALLS for e in re.findall(r"\[([\w,]+)\]", line) for e in e.split(",")}
    install = README.split("## Install", 1)[1].split("\n## ", 1)[0]
    table = set(re.findall(r"^\| `(\w+)` \|", install, re.MULTILINE))
    assert named <= set(extras) and table == set(extras), (named, table, set(extras))


def test_every_figure_names_a_benchmark_script_that_exists() -> None:
    section = README.split("## Figures", 1)[1].split("\n## ", 1)[0]
    rows = [line for line in section.splitlines() if line.startswith("| ") and "---" not in line][1:]
    assert len(rows) >= 4
    for row in rows:
        script = re.search(r"`python (benchmarks/\w+\.py)", row)
        assert script and (ROOT / script[1]).is_file(), row


def test_the_reference_command_runs_as_written(tmp_path: Path) -> None:
    done = run(REFERENCE, tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    s = summary(tmp_path, "code__reference")
    assert s["episodes"] == s["successes"] == 20
    again = run(REFERENCE, tmp_path)  # README: a finished run is not played again
    assert again.returncode == 0 and "nothing to play" in again.stderr


def solver(tasks: dict[str, str]) -> Any:
    """A responder that submits the canonical solution of the task whose prompt the request holds."""

    def answer(request: dict[str, Any]) -> dict[str, Any]:
        user = next(m["content"] for m in request["messages"] if m["role"] == "user")
        prompt = next(p for p in tasks if p in user)
        return completion(tool_calls=[tool_call("submit", {"code": prompt + tasks[prompt]})], model="gpt-4o-mini",
                          prompt_tokens=200, completion_tokens=60)

    return answer


def test_the_hosted_model_command_runs_as_written_against_an_openai_compatible_server(tmp_path: Path) -> None:
    from agentgym.envs.code.env import _humaneval

    tasks = {t.data["prompt"]: t.data["canonical_solution"] for t in _humaneval()[:20]}
    with FakeOpenAI(solver(tasks)) as server:
        done = run(HOSTED, tmp_path, "--sandbox", "local", "--api-base", server.base_url,
                   env={"OPENAI_API_KEY": "sk-test"})
    assert done.returncode == 0, done.stderr[-3000:]
    s = summary(tmp_path, "code__openai_gpt-4o-mini")
    assert s["episodes"] == s["successes"] == 20
    assert s["prompt_tokens"] == 20 * 200 and s["cost_usd"] > 0  # gpt-4o-mini is priced


@pytest.mark.slow
def test_the_training_command_runs_as_written_with_a_tiny_setting(tmp_path: Path) -> None:
    pytest.importorskip("trl")
    done = run(TRAIN, tmp_path, "--warm-start-steps", "25", "--steps", "1", "--generations", "2",
               "--output", str(tmp_path / "out"), env={"OMP_NUM_THREADS": "1"}, timeout=1800)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "GRPO: 1 steps" in done.stdout
