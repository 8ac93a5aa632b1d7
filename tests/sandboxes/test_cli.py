"""``agentgym sandbox build | ls`` through the real command (``prune`` is left out: on a shared engine
it would remove other runs' sandboxes)."""

from __future__ import annotations

import pytest

from agentgym.cli import main
from agentgym.sandboxes import image_tag
from tests.conftest import docker_or_skip

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
