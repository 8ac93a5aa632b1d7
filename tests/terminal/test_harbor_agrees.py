"""agentgym's copy of harbor's task models against harbor itself: the same fields (names, types, defaults),
and the same parse of every fixture and of task.toml files using fields the terminal env refuses.

Harbor needs Python 3.12 and agentgym runs on 3.11, so harbor runs in a subprocess of the interpreter
HARBOR_PYTHON names (made as tests/terminal/HARBOR_VENV.md says). Without HARBOR_PYTHON these tests are
skipped, saying why (under CI, which makes that interpreter, they fail); with it set, anything wrong with
that interpreter fails them.
"""

from __future__ import annotations

import json
import os
import subprocess
import tomllib
from pathlib import Path
from typing import Any

import pytest

from agentgym.envs.terminal import TaskConfig, load_tasks
from agentgym.envs.terminal.config import HARBOR_VERSION
from tests.terminal.harbor_check import schema

HERE = Path(__file__).parent
HARBOR_PYTHON = os.environ.get("HARBOR_PYTHON", "")



def needs_harbor() -> None:
    """Skip without HARBOR_PYTHON, saying how to make one; under CI (which makes one) fail instead."""
    if HARBOR_PYTHON:
        return
    why = (f"HARBOR_PYTHON is unset: point it at a Python 3.12 with harbor=={HARBOR_VERSION} installed "
           "(tests/terminal/HARBOR_VENV.md) to compare agentgym's task.toml models with harbor's own")
    if os.environ.get("CI"):
        pytest.fail(why)
    pytest.skip(why)


# task.toml files that harbor reads and the terminal env refuses (after parsing): the copy must still
# parse them as harbor does, so that what it refuses is what harbor would have run.
REFUSED_BUT_VALID = {
    "healthcheck.toml": "[environment.healthcheck]\ncommand = 'true'\nretries = 5\n",
    "windows-gpus.toml": "[environment]\nos = 'WINDOWS'\ngpus = 2\ngpu_types = ['H100']\ncpus = 2.0\n",
    "tpu.toml": "[environment.tpu]\ntype = 'v6e'\ntopology = ' 2x4 '\n",
    "mcp.toml": "[[environment.mcp_servers]]\nname = 'files'\ntransport = 'http'\nurl = 'http://127.0.0.1:1/mcp'\n"
                "[[environment.mcp_servers]]\nname = 'local'\ntransport = 'stdio'\ncommand = 'srv'\nargs = ['-v']\n",
    "allowlist.toml": "[environment]\nnetwork_mode = 'allowlist'\nallowed_hosts = ['example.com', '*.example.org']\n",
    "verifier-environment.toml": "[verifier]\nuser = 'tester'\nnetwork_mode = 'public'\n"
                                 "[verifier.environment]\nallow_internet = false\nmemory = '512M'\n"
                                 "[[verifier.collect]]\ncommand = 'true'\n",
    "allow-internet-loses-to-network-mode.toml": "[environment]\nallow_internet = false\nnetwork_mode = 'public'\n",
    "steps.toml": "multi_step_reward_strategy = 'final'\n[[steps]]\nname = 'one'\nmin_reward = 0.5\n"
                  "[steps.agent]\ntimeout_sec = 10\n[[steps]]\nname = 'two'\nmin_reward = {a = 1.0}\n",
    "artifacts.toml": "artifacts = ['/app/out', {source = '/app/log', destination = 'log', exclude = ['*.tmp']}]\n",
    "package.toml": "schema_version = '1.4'\nsource = 's'\n[task]\nname = 'org/x'\nversion = '2'\n"
                    "[[task.authors]]\nname = 'A'\n[agent]\nuser = 0\n"
                    "[environment]\nworkdir = '/w'\nskills_dir = '/s'\n"
                    "[environment.env]\nA = '${A:-1}'\n",
}


def differences(ours: Any, theirs: Any, where: str = "") -> list[str]:
    """Each dotted place where two JSON values differ, so a failure names the field."""
    if isinstance(ours, dict) and isinstance(theirs, dict):
        return [line for key in sorted(set(ours) | set(theirs))
                for line in differences(ours.get(key, "<absent>"), theirs.get(key, "<absent>"), f"{where}.{key}")]
    if isinstance(ours, list) and isinstance(theirs, list) and len(ours) == len(theirs):
        return [line for i, (a, b) in enumerate(zip(ours, theirs, strict=True))
                for line in differences(a, b, f"{where}[{i}]")]
    return [] if ours == theirs else [f"{where.lstrip('.')}: agentgym {ours!r}, harbor {theirs!r}"]


@pytest.fixture(scope="module")
def harbor(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    needs_harbor()
    configs = tmp_path_factory.mktemp("configs")
    for name, text in REFUSED_BUT_VALID.items():
        (configs / name).write_text(text)
    args = [str(HERE / "tasks"), *sorted(str(p) for p in configs.iterdir())]
    done = subprocess.run([HARBOR_PYTHON, str(HERE / "harbor_check.py"), *args],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, f"{HARBOR_PYTHON} harbor_check.py failed:\n{done.stderr[-3000:]}"
    report: dict[str, Any] = json.loads(done.stdout)
    report["config_dir"] = configs
    return report


def test_it_is_the_harbor_release_copied(harbor):
    assert harbor["harbor"] == HARBOR_VERSION


def test_the_models_have_harbors_fields_types_and_defaults(harbor):
    assert differences(schema(TaskConfig), harbor["schema"]) == []


def test_every_fixture_parses_as_harbor_parses_it(harbor):
    ours = {task.path.name: task for task in load_tasks(HERE / "tasks")}
    assert sorted(ours) == sorted(harbor["tasks"])
    for name, task in ours.items():
        theirs = harbor["tasks"][name]
        assert differences(task.config.model_dump(mode="json"), theirs["config"]) == [], name
        assert (task.name, task.instruction) == (theirs["name"], theirs["instruction"]), name


def test_refused_fields_parse_as_harbor_parses_them(harbor):
    assert sorted(harbor["configs"]) == sorted(REFUSED_BUT_VALID)
    for name, text in REFUSED_BUT_VALID.items():
        ours = TaskConfig.model_validate(tomllib.loads(text)).model_dump(mode="json")
        assert differences(ours, harbor["configs"][name]) == [], name
