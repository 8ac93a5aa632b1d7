"""The documentation site builds from docs/ with warnings as errors, its API reference generated from docstrings.

``mkdocs build --strict`` turns every warning into a failure: a link to a page or a heading that does
not exist, a page left out of the nav, a docstring mkdocstrings cannot read. The second test shows the
check has teeth: a copy of docs/ with one broken link, to a page or to a heading, fails both this
file's build and the docs step of ``.ci/run`` run as written, naming the link (a flag such as ``--quiet``
raises mkdocs' log level past WARNING, and strict mode then counts no warning at all).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def need_docs_extra() -> None:
    try:
        import mkdocstrings  # noqa: F401
    except ImportError:
        if os.environ.get("CI"):
            pytest.fail("CI is set but mkdocs is missing: .ci/run installs the docs extra")
        pytest.skip("the site needs the docs extra: pip install -e '.[docs]'")


def build(config: Path, site: Path) -> subprocess.CompletedProcess[str]:
    need_docs_extra()
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


def ci_docs_command() -> str:
    """The docs step of ``.ci/run``, as CI runs it (its flags decide what fails, not this file's)."""
    lines = [line for line in (ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines()
             if "mkdocs build" in line and not line.lstrip().startswith("#")]
    assert len(lines) == 1, lines
    return lines[0]


@pytest.mark.parametrize("link", ["no-such-page.md", "swe.md#no-such-heading"])
@pytest.mark.parametrize("how", ["test", "ci"])
def test_a_broken_link_fails_the_build(how: str, link: str, tmp_path: Path) -> None:
    """A link to a missing page or to a missing heading of a page fails this file's build and CI's step."""
    copy = tmp_path / "repo"
    shutil.copytree(ROOT / "docs", copy / "docs")
    shutil.copy(ROOT / "mkdocs.yml", copy / "mkdocs.yml")
    page = copy / "docs" / "cli.md"
    page.write_text(page.read_text(encoding="utf-8") + f"\nSee [the missing part]({link}).\n", encoding="utf-8")
    if how == "test":
        done = build(copy / "mkdocs.yml", tmp_path / "site")
    else:
        need_docs_extra()
        env = {**os.environ, "PYTHONPATH": str(ROOT), "TMPDIR": str(tmp_path)}  # its mktemp -d lands here
        done = subprocess.run(["bash", "-c", ci_docs_command()], cwd=copy, env=env, text=True, capture_output=True,
                              timeout=300)
    assert done.returncode != 0 and link.split("#")[-1] in done.stderr, done.stderr[-2000:]
