"""Fixtures for the report tests: real runs made by the CLI, and a headless Chromium through Playwright.

Chromium is Debian's (``/usr/bin/chromium``; ``.ci/run`` installs it): Playwright's own browser
download needs a network this project does not have. Off CI a machine without it skips the
browser tests with a reason; under CI (``CI`` set) a missing browser is a failure.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
                 "--disable-sync", "--no-first-run"]
ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts"


def agentgym(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    return subprocess.run([sys.executable, "-m", "agentgym.cli", *args], cwd=cwd, env=env, text=True,
                          capture_output=True, timeout=600)


@pytest.fixture(scope="session")
def real_runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """A code-env run (local sandbox) and a search-env run (the cached SQuAD corpus), 5 episodes each."""
    from agentgym.envs.search.data import fetch

    fetch()  # cached after the first time on a machine (tests/search use the same corpus)
    where = tmp_path_factory.mktemp("runs")
    made = {}
    for env, extra in (("code", ["--sandbox", "local"]), ("search", [])):
        out = where / f"{env}__reference.jsonl"
        done = agentgym("eval", env, "--model", "reference", "--limit", "5", *extra, "--out", str(out), cwd=where)
        assert done.returncode == 0, done.stderr
        made[env] = out
    return made


@pytest.fixture(scope="session")
def paired_runs(real_runs: dict[str, Path], tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    """Two runs per env: each real run, and a copy where every other episode scores 0 (a worse policy)."""
    from agentgym.types import iter_jsonl, write_jsonl

    where = tmp_path_factory.mktemp("paired")
    made = []
    for env, run in real_runs.items():
        worse = []
        for i, t in enumerate(iter_jsonl(run)):
            zero = {k: 0.0 for k in t.reward_components}
            lost = {"reward": 0.0, "outcome_reward": 0.0, "reward_components": zero} if i % 2 == 0 else {}
            worse.append(t.model_copy(update={**lost, "policy": "worse"}))
        write_jsonl(where / f"{env}__worse.jsonl", worse)
        made += [run, where / f"{env}__worse.jsonl"]
    return made


def assert_paired(messages: list[dict[str, Any]]) -> None:
    """An SFT conversation's call ids: each 9 alphanumeric characters, unique, every answer naming its call.

    The calls of real reference runs are one per message and answered in order; the conversation
    ends with the model's message, whose calls have no answer in it.
    """
    ids = [c["id"] for m in messages for c in m.get("tool_calls", [])]
    assert ids and all(re.fullmatch(r"[a-zA-Z0-9]{9}", i) for i in ids) and len(set(ids)) == len(ids), ids
    answered = [m["tool_call_id"] for m in messages if m["role"] == "tool"]
    assert answered == ids[:len(answered)] and messages[-1]["role"] == "assistant", (answered, ids)
    assert len(answered) == len(ids) - len(messages[-1].get("tool_calls", []))


@pytest.fixture(scope="session")
def rows(real_runs: dict[str, Path]) -> list[dict[str, Any]]:
    """SFT rows of the code and search runs, as written to a dataset and read back (what a trainer reads)."""
    from datasets import load_from_disk

    from agentgym.types import read_jsonl
    from agentgym.view.export import sft_rows, write_sft

    made = sft_rows([*read_jsonl(real_runs["code"]), *read_jsonl(real_runs["search"])])
    assert {r["tools"][0]["function"]["name"] for r in made} == {"python", "search"}
    where = real_runs["code"].parent / "sft-templates"
    if not where.exists():
        write_sft(made, where, "datasets")
    back = [dict(r) for r in load_from_disk(str(where))]
    assert back == made  # keys stay as written: no None-filled keys from Arrow's struct unification
    return back


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    """One Chromium per test module. Playwright's sync API keeps an event loop running in this
    thread while it is open, so it must be closed before any async test runs: module scope, in
    modules of sync tests only."""
    if not Path(CHROMIUM).exists() or shutil.which("chromium") is None:
        if os.environ.get("CI"):
            pytest.fail(f"CI is set but {CHROMIUM} is missing: .ci/run should have installed Debian's chromium")
        pytest.skip(f"no {CHROMIUM} on this machine (apt-get install chromium)")
    playwright = pytest.importorskip("playwright.sync_api")
    with playwright.sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        yield b
        b.close()


OVERFLOW_JS = """() => {
  // Elements wider than their container, or whose content overflows them (clipped or scrolled sideways).
  // Plotly's own elements are left out: its modebar and hover layers are placed absolutely by design.
  const name = (e) => e.tagName.toLowerCase() + (e.id ? "#" + e.id : "") +
    (typeof e.className === "string" && e.className ? "." + e.className.trim().split(/\\s+/).join(".") : "");
  const bad = [];
  const page = document.documentElement.scrollWidth;
  if (page > window.innerWidth) bad.push(`page: ${page} px wide in a ${window.innerWidth} px window`);
  for (const e of document.querySelectorAll("body *")) {
    if (e.closest(".js-plotly-plot") || e.closest("svg")) continue;
    const r = e.getBoundingClientRect();
    if (r.width === 0 && r.height === 0) continue;
    const p = e.parentElement.getBoundingClientRect();
    if (r.right > p.right + 1 || r.left < p.left - 1) {
      const where = `${r.left | 0}..${r.right | 0} outside ${p.left | 0}..${p.right | 0}`;
      bad.push(`${name(e)} in ${name(e.parentElement)}: ${where}`);
    }
    if (getComputedStyle(e).display !== "inline" && e.clientWidth > 0 && e.scrollWidth > e.clientWidth + 1) {
      bad.push(`${name(e)}: content ${e.scrollWidth} px wide in ${e.clientWidth} px`);
    }
  }
  return bad;
}"""


class Page:
    """A browser page that records console errors and uncaught exceptions."""

    def __init__(self, browser: Any, width: int = 1400) -> None:
        self.page = browser.new_page(viewport={"width": width, "height": 1000})
        self.errors: list[str] = []
        self.page.on("console", self._console)
        self.page.on("pageerror", lambda e: self.errors.append(f"pageerror: {e}"))
        # The report needs no network: any request leaving the file is a defect, and fails here.
        self.page.route("http://**/*", self._refuse)
        self.page.route("https://**/*", self._refuse)

    def _console(self, message: Any) -> None:
        if message.type == "error":
            self.errors.append(f"console.error: {message.text}")

    def _refuse(self, route: Any) -> None:
        self.errors.append(f"network: {route.request.url}")
        route.abort()


@pytest.fixture
def page(browser: Any) -> Iterator[Page]:
    p = Page(browser)
    yield p
    p.page.close()
