"""``agentgym sandbox build | ls | prune`` through the real command.

``prune --all`` is only run with a label that only this test's containers carry: on a shared engine
it would remove other runs' sandboxes.
"""

from __future__ import annotations

import uuid

import pytest

from agentgym.cli import main
from agentgym.sandboxes import engine, image_tag
from tests.conftest import docker_or_skip
from tests.sandboxes.test_leaks import dead_pid, exists, labelled_sleeper

pytestmark = pytest.mark.docker


def test_build_prints_the_tag(capsys: pytest.CaptureFixture[str]) -> None:
    docker_or_skip()
    assert main(["sandbox", "build", "--recipe", "python"]) == 0
    assert capsys.readouterr().out.strip() == image_tag("python")


def test_ls_lists_agentgym_containers(capsys: pytest.CaptureFixture[str]) -> None:
    docker_or_skip()
    assert main(["sandbox", "ls"]) == 0
    assert capsys.readouterr().out.startswith("ID")


def test_unknown_recipe_is_an_error(capsys: pytest.CaptureFixture[str]) -> None:
    docker_or_skip()
    assert main(["sandbox", "build", "--recipe", "nope"]) == 2
    assert "no sandbox image recipe 'nope'" in capsys.readouterr().err


def test_prune_removes_only_sandboxes_whose_owner_is_gone(capsys: pytest.CaptureFixture[str]) -> None:
    docker_or_skip()
    mark = uuid.uuid4().hex
    orphan = labelled_sleeper(owner_pid=str(dead_pid()), test=mark)
    live = labelled_sleeper(test=mark)  # owned by this process: a run in progress
    try:
        assert main(["sandbox", "prune"]) == 0
        assert f"removed {live[:12]}" not in capsys.readouterr().out
        assert exists(live)
        assert not exists(orphan)  # removed here, or first by another process's reaper

        only_ours = ["--label", f"{engine.LABEL}.test={mark}"]
        assert main(["sandbox", "prune", "--all", "--dry-run", *only_ours]) == 0
        assert capsys.readouterr().out.splitlines() == [f"would remove {live[:12]}", "1 to remove"]
        assert exists(live)
        assert main(["sandbox", "prune", "--all", *only_ours]) == 0
        assert capsys.readouterr().out.splitlines() == [f"removed {live[:12]}", "1 removed"]
        assert not exists(live)
    finally:
        for container_id in (orphan, live):
            engine.remove_container(container_id)
