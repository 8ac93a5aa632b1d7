"""A synthesized SWE task exported as a Harbor task folder (``agentgym export swe --to harbor DIR``): harbor's
own loader reads it, and the terminal env grades each patch as the SWE env's verifier grades it (the gold
patch, none, one that breaks another test, and two that try to pass by editing the graders' files)."""

from __future__ import annotations

import asyncio
import base64
import json
import subprocess
from pathlib import Path

import pytest

from agentgym.cli import main
from agentgym.envs.swe.images import image_for
from agentgym.envs.swe.tasks import SWETask
from agentgym.envs.swe.testrun import parse_statuses
from agentgym.envs.swe.verifier import evaluate_patch
from agentgym.envs.terminal.env import TerminalEnv
from agentgym.envs.terminal.exported import swe_check
from agentgym.envs.terminal.policies import Oracle
from agentgym.sandboxes import engine
from tests.conftest import docker_or_skip
from tests.terminal.test_env import Script, play
from tests.terminal.test_harbor_agrees import HARBOR_PYTHON, needs_harbor

pytestmark = [pytest.mark.docker, pytest.mark.slow, pytest.mark.timeout(1800)]

HERE = Path(__file__).parent
ROWS = HERE.parent / "swe" / "data" / "toolz.jsonl"  # rows written by `agentgym swe synthesize --package toolz`
PASS_EVERYTHING = """import pytest


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    outcome.get_result().outcome = "passed"
"""
EDITS = {
    "replaces the failing tests": "printf 'def test_curry_bind():\\n    pass\\n' > toolz/tests/test_functoolz.py",
    "adds a conftest that passes everything": f"echo {base64.b64encode(PASS_EVERYTHING.encode()).decode()} | "
                                              "base64 -d > conftest.py",
    "fixes the bug and breaks merge": "git apply /tmp/gold.patch && "
                                      "printf 'def merge(*a, **k):\\n    raise RuntimeError\\n' >> toolz/dicttoolz.py",
}


@pytest.fixture(scope="module")
def row(tmp_path_factory: pytest.TempPathFactory) -> tuple[SWETask, Path]:
    docker_or_skip()
    first = tmp_path_factory.mktemp("rows") / "toolz.jsonl"
    first.write_text(ROWS.read_text().splitlines()[0] + "\n")
    out = tmp_path_factory.mktemp("export") / "swe"
    assert main(["export", "swe", "--to", "harbor", str(out), "--tasks", str(first)]) == 0
    return SWETask.model_validate_json(first.read_text()), out


def patch_of(task: SWETask, edit: str) -> str:
    """The diff (new files included) that ``edit`` makes in a container of the task's image."""
    gold = base64.b64encode(task.patch.encode()).decode()
    script = (f"echo {gold} | base64 -d > /tmp/gold.patch && cd /testbed && {edit} && git add -A && "
              "git diff --cached")
    return engine.client().containers.run(image_for(task), ["sh", "-c", script], remove=True, network_disabled=True,
                                          entrypoint=[]).decode()


def applies(patch: str) -> Script:
    encoded = base64.b64encode(patch.encode()).decode()
    return Script(f"echo {encoded} | base64 -d > /tmp/p.patch && cd /testbed && git apply /tmp/p.patch && echo ok")


def test_harbors_own_loader_reads_the_exported_folder(row: tuple[SWETask, Path]) -> None:
    needs_harbor()
    task, out = row
    done = subprocess.run([HARBOR_PYTHON, str(HERE / "harbor_check.py"), str(out)],
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    (theirs,) = json.loads(done.stdout)["tasks"].values()
    assert theirs["config"]["metadata"]["instance_id"] == task.instance_id
    assert theirs["config"]["environment"]["docker_image"] == image_for(task)


def test_each_patch_is_graded_as_the_swe_env_grades_it(row: tuple[SWETask, Path]) -> None:
    task, out = row
    (exported,) = TerminalEnv.load_tasks(out)
    patches = {"gold": task.patch, "empty": "", **{name: patch_of(task, edit) for name, edit in EDITS.items()}}

    async def both() -> tuple[dict, list]:
        swe = {name: await evaluate_patch(task, patch, image=image_for(task), timeout=300)
               for name, patch in patches.items()}
        terminal = await play((exported, Oracle()), *((exported, applies(p)) for p in patches.values()))
        return swe, terminal

    swe, (oracle, *terminal) = asyncio.run(both())
    assert oracle.reward == 1.0, oracle.info
    for (name, graded), played in zip(swe.items(), terminal, strict=True):
        assert played.outcome == "terminated", (name, played.info)
        assert played.reward == float(graded.resolved), (name, graded.reason, played.info)
        assert played.reward_components["tests_fraction"] == pytest.approx(graded.tests_passed_fraction), name
    assert [name for name, graded in swe.items() if graded.resolved] == ["gold"]
    for graded in swe.values():  # the exported check reads a log as swebench's parser does
        assert swe_check.statuses(graded.log) == parse_statuses(graded.log)


def test_swe_export_needs_a_task_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["export", "swe", "--to", "harbor", str(tmp_path / "out")]) == 2
    assert "needs --tasks" in capsys.readouterr().err and not (tmp_path / "out").exists()
