"""The documentation site builds from docs/ with warnings as errors, its API reference generated from docstrings.

``mkdocs build --strict`` turns every warning into a failure: a link to a page or a heading that does
not exist, a page left out of the nav, a docstring mkdocstrings cannot read. The second test shows the
check has teeth: the same build of a copy of docs/ with one broken link fails, naming it.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def build(config: Path, site: Path) -> subprocess.CompletedProcess[str]:
    try:
        import mkdocstrings  # noqa: F401
    except ImportError:
        if os.environ.get("CI"):
            pytest.fail("CI is set but mkdocs is missing: .ci/run installs the docs extra")
        pytest.skip("the site needs the docs extra: pip install -e '.[docs]'")
    env = {**os.environ, "PYTHONPATH": str(ROOT), "NO_MKDOCS_2_WARNING": "1"}
    return subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-f", str(config), "--site-dir",
                           str(site)], cwd=config.parent, env=env, text=True, capture_output=True, timeout=300)


def test_the_site_builds_strictly_with_an_api_reference(tmp_path: Path) -> None:
    done = build(ROOT / "mkdocs.yml", tmp_path / "site")
    assert done.returncode == 0, done.stderr[-4000:]
    reference = (tmp_path / "site" / "reference" / "evaluation" / "index.html").read_text(encoding="utf-8")
    assert "Play every task" in reference  # evaluate()'s docstring, rendered
    front = (tmp_path / "site" / "reference" / "agentgym" / "index.html").read_text(encoding="utf-8")
    assert "check_env" in (tmp_path / "site" / "reference" / "testing" / "index.html").read_text(encoding="utf-8")
    for name in ("agentgym.registry.make", "agentgym.env.Env", "agentgym.rollout.rollout", "agentgym.tools.tool"):
        assert f'id="{name}"' in front, name


def test_a_broken_link_fails_the_build(tmp_path: Path) -> None:
    copy = tmp_path / "repo"
    shutil.copytree(ROOT / "docs", copy / "docs")
    shutil.copy(ROOT / "mkdocs.yml", copy / "mkdocs.yml")
    page = copy / "docs" / "cli.md"
    page.write_text(page.read_text(encoding="utf-8") + "\nSee [the missing page](no-such-page.md).\n",
                    encoding="utf-8")
    done = build(copy / "mkdocs.yml", tmp_path / "site")
    assert done.returncode != 0 and "no-such-page.md" in done.stderr, done.stderr[-2000:]
