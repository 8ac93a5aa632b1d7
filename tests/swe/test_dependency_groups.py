"""PEP 735 dependency groups as test requirements of an sdist's image (no Docker)."""

from __future__ import annotations

import io
import tarfile
from pathlib import Path

from agentgym.envs.swe.sdist_image import _pkg_info, dependency_groups

PYPROJECT = '''
[project]
name = "pkg"

[dependency-groups]
coverage = ["coverage>=7"]
Tests = ["pytest-mock>=3", {include-group = "coverage"}, "hypothesis; python_version >= '3'",
         "never; python_version < '3'", "not a requirement ["]
dev = ["ruff"]
'''


def test_test_groups_are_read_with_their_includes() -> None:
    assert dependency_groups(PYPROJECT) == ["pytest-mock>=3", "coverage>=7", 'hypothesis; python_version >= "3"']
    assert dependency_groups("[dependency-groups]\nlint = ['ruff']\n") == []
    assert dependency_groups("not toml [") == [] and dependency_groups("") == []
    cyclic = "[dependency-groups]\ntest = [{include-group = 'test'}, 'x']\n"
    assert dependency_groups(cyclic) == ["x"]


def test_an_sdist_s_groups_join_its_test_requirements(tmp_path: Path) -> None:
    path = tmp_path / "pkg-1.0.tar.gz"
    with tarfile.open(path, "w:gz") as tf:
        for name, text in (("PKG-INFO", "Metadata-Version: 2.1\nName: pkg\nVersion: 1.0\nRequires-Dist: attrs\n"
                                        "Requires-Dist: pytest-mock>=3; extra == 'test'\n"),
                           ("pyproject.toml", PYPROJECT)):
            data = text.encode()
            info = tarfile.TarInfo(f"pkg-1.0/{name}")
            info.size = len(data)
            tf.addfile(info, io.BytesIO(data))
    version, requires, test_requires = _pkg_info(path)
    assert (version, requires) == ("1.0", ("attrs",))
    assert test_requires == ("pytest-mock>=3", "coverage>=7", 'hypothesis; python_version >= "3"')
