"""Every ```python block in README.md and docs/*.md runs, each file's blocks in order as one script.

A block that cannot run here (it needs a model to train, or an API key) is marked on the line before it
with ``<!-- not run: why -->``; they are counted, so that they stay few.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
BLOCK = re.compile(r"^(<!-- not run: (?P<why>[^>]+) -->\n)?```python\n(?P<code>.*?)^```$", re.DOTALL | re.MULTILINE)
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


def blocks(doc: Path) -> list[re.Match[str]]:
    return list(BLOCK.finditer(doc.read_text(encoding="utf-8")))


RUNNABLE = [doc for doc in DOCS if any(m["why"] is None for m in blocks(doc))]


def test_snippets_are_found_and_few_are_left_unrun() -> None:
    found = {doc.name: len(blocks(doc)) for doc in DOCS}
    skipped = [(doc.name, m["why"]) for doc in DOCS for m in blocks(doc) if m["why"] is not None]
    assert found["README.md"] >= 1 and found["writing-envs.md"] >= 6
    assert len(skipped) <= 3, skipped
    fenced = sum(doc.read_text(encoding="utf-8").count("```python") for doc in DOCS)
    assert fenced == sum(found.values()), "a ```python block the extractor does not see"


@pytest.mark.parametrize("doc", RUNNABLE, ids=[doc.name for doc in RUNNABLE])
def test_the_python_snippets_run(doc: Path, tmp_path: Path) -> None:
    script = "\n\n".join(m["code"] for m in blocks(doc) if m["why"] is None)
    env = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    done = subprocess.run([sys.executable, "-c", script], cwd=tmp_path, env=env, text=True, capture_output=True,
                          timeout=900)
    assert done.returncode == 0, f"{doc.name}:\n{done.stdout[-2000:]}\n{done.stderr[-4000:]}"


def test_the_custom_env_example_runs(tmp_path: Path) -> None:
    env = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    done = subprocess.run([sys.executable, str(ROOT / "examples" / "custom_env.py")], cwd=tmp_path, env=env, text=True,
                          capture_output=True, timeout=600)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "outcome=terminated reward=1.0 turns=2"
