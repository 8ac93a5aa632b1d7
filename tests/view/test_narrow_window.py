"""The report in an 800 px window, where the episode viewer sits below the list, read in Chromium.

Clicking an episode brings it into view (it renders under the list, off screen, so the click
seemed to do nothing); ``#episode-N`` opens episode N and lands on it, on load and as an in-page link; the sticky
header keeps one height whatever the number of runs; reward components and per-task outcomes come
a table per env, with that env's runs only; and the comparison names the baseline the user chose.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

from agentgym.view.report import write_report
from agentgym.view.runs import load_runs

from .conftest import OVERFLOW_JS, Page

WIDTH = 800


@pytest.fixture
def narrow(browser: Any) -> Any:
    page = Page(browser, width=WIDTH)
    yield page
    assert page.errors == []
    page.page.close()


def load(page: Page, report: Path, fragment: str = "") -> Any:
    p = page.page
    p.goto(report.as_uri() + fragment)
    p.wait_for_function("[...document.querySelectorAll('.plot')].every(p => p.dataset.drawn)")
    return p


def in_view(p: Any, selector: str) -> bool:
    """The element's top edge is on screen, below the sticky header."""
    return p.locator(selector).evaluate(
        "e => { const top = e.getBoundingClientRect().top;"
        " return top >= document.querySelector('header').getBoundingClientRect().bottom - 1"
        " && top < window.innerHeight - 40; }")


def opened(p: Any, index: int) -> None:
    p.wait_for_selector(f".trajectory[data-index='{index}']")


def test_clicking_an_episode_brings_it_into_view(narrow: Page, paired_runs: list[Path], tmp_path: Path) -> None:
    p = load(narrow, write_report(load_runs(paired_runs), tmp_path / "report.html"))
    row = p.locator("tr.episode-row[data-index='7']")
    row.scroll_into_view_if_needed()
    below = p.locator("#viewer").evaluate("e => e.getBoundingClientRect().top - window.innerHeight")
    assert below > 0  # the viewer starts off screen, under the list
    row.click()
    opened(p, 7)
    assert in_view(p, ".trajectory h3"), p.locator(".trajectory").evaluate("e => e.getBoundingClientRect().top")
    assert p.evaluate("location.hash") == "#episode-7"
    assert p.evaluate(OVERFLOW_JS) == []


def test_an_episode_link_lands_on_the_episode(narrow: Page, paired_runs: list[Path], tmp_path: Path) -> None:
    report = write_report(load_runs(paired_runs), tmp_path / "report.html")
    p = load(narrow, report, "#episode-13")
    opened(p, 13)
    assert in_view(p, ".trajectory h3")
    assert p.locator("tr.episode-row.selected").get_attribute("data-index") == "13"

    p.evaluate("window.scrollTo(0, 0)")
    p.select_option("#ep-run", label="code__reference")  # a filter that hides episode 16 (a search run's)
    assert p.locator("tr.episode-row[data-index='16']").count() == 0
    p.evaluate("location.hash = '#episode-16'")  # as a link within the page
    opened(p, 16)
    assert in_view(p, ".trajectory h3")
    assert p.locator("tr.episode-row.selected").get_attribute("data-index") == "16"


def test_the_header_keeps_its_height_as_runs_are_added(narrow: Page, real_runs: dict[str, Path],
                                                      tmp_path: Path) -> None:
    heights = {}
    for n in (2, 12):
        where = tmp_path / str(n)
        where.mkdir()
        paths = [Path(shutil.copy(real_runs["code"], where / f"code__model-with-a-long-name-{k}.jsonl"))
                 for k in range(n)]
        p = load(narrow, write_report(load_runs(paths), where / "report.html"))
        heights[n] = p.locator("header").bounding_box()["height"]
        assert p.evaluate(OVERFLOW_JS) == []
    assert heights[12] == heights[2] and heights[2] < 120, heights


def test_components_and_tasks_split_by_env_and_the_baseline_is_named(narrow: Page, paired_runs: list[Path],
                                                                      tmp_path: Path) -> None:
    p = load(narrow, write_report(load_runs(paired_runs), tmp_path / "report.html", baseline="code__worse"))
    envs = ["agentgym/code-v0", "agentgym/search-v0"]
    assert p.locator("#components h3.env-head").all_inner_texts() == envs
    for k, env in enumerate(("code", "search")):
        table = p.locator("#components table").nth(k)
        assert table.locator("tbody td:first-child").all_inner_texts() == [f"{env}__reference", f"{env}__worse"]
        assert "–" not in table.locator("tbody").inner_text()  # no column of another env's component

    assert p.locator("#tasks h3.env-head").all_inner_texts() == envs
    for k, env in enumerate(("code", "search")):
        table = p.locator("#task-table table").nth(k)
        assert table.locator("thead th").all_inner_texts()[:3] == ["task", f"{env}__reference", f"{env}__worse"]
        assert table.locator("tbody tr").count() == 5
        assert table.locator("tbody td", has_text="–").count() == 0

    headings = p.locator("#comparison-table tr.env-row").all_inner_texts()
    assert headings[0] == "agentgym/code-v0: each run against the baseline code__worse (--baseline)"
    assert "--baseline code__worse is not a run of this env" in headings[1] and "pairwise" in headings[1]
    rows = p.locator("#comparison-table tbody tr:not(.env-row) td:first-child").all_inner_texts()
    assert rows == ["code__reference vs code__worse", "search__worse vs search__reference"]
    assert p.evaluate(OVERFLOW_JS) == []
