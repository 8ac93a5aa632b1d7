"""The report's layout in Chromium at a wide, a narrow and a phone-sized window: nothing overflows, plots fit.

Screenshots go to ``test-artifacts/report-WIDTH.png`` (docs/images has compressed copies of 1400 and 800).
"""

from __future__ import annotations

import pytest

from agentgym.view.report import write_report
from agentgym.view.runs import load_runs

from .conftest import ARTIFACTS, OVERFLOW_JS, Page

pytestmark = pytest.mark.slow


def read_an_episode(p) -> None:
    """Open an episode and its first tool call, as a person reading it would."""
    p.locator("tr.episode-row", has_text="HumanEval/0").first.click()
    p.wait_for_selector(".trajectory .tool-call")
    p.locator(".trajectory details.tool-call summary").first.click()


def expand_everything(p) -> None:
    """Every fold of the episode open, and a task side by side: the widest the page gets."""
    p.evaluate("document.querySelectorAll('#viewer details').forEach((d) => { d.open = true; })")
    p.locator("#task-table tbody tr").first.locator("button.side-link").click()
    p.wait_for_selector("#side-b .trajectory")
    p.evaluate("document.querySelectorAll('#side-by-side details').forEach((d) => { d.open = true; })")


@pytest.mark.parametrize("width", [1400, 800, 480])
def test_nothing_overflows_and_plots_fit_their_cells(browser, paired_runs, tmp_path, width):
    runs = load_runs(paired_runs)
    report = write_report(runs, tmp_path / "report.html")
    page = Page(browser, width=width)
    p = page.page
    p.goto(report.as_uri())
    p.wait_for_function("[...document.querySelectorAll('.plot')].every(p => p.dataset.drawn)")

    # The first plot is laid out for its own cell from the start (no resize needed): its SVG is as wide
    # as the cell, and every run's bar lies inside it.
    for plot in p.locator(".plot").all():
        cell, svg = plot.evaluate("d => [d.clientWidth, d.querySelector('.main-svg').getBoundingClientRect().width]")
        assert abs(cell - svg) <= 1, (plot.get_attribute("id"), cell, svg)
    box = p.locator("#plot-success").bounding_box()
    bars = p.locator("#plot-success .bars .point")
    assert bars.count() == len(runs)
    for bar in bars.all():
        b = bar.bounding_box()
        assert b["width"] > 10 and box["x"] <= b["x"] and b["x"] + b["width"] <= box["x"] + box["width"]
    if width >= 1400:  # two plots side by side on a wide page
        first, second = (p.locator(".plots .plot").nth(i).bounding_box() for i in range(2))
        assert first["y"] == second["y"] and first["x"] + first["width"] < second["x"]

    read_an_episode(p)
    assert p.evaluate(OVERFLOW_JS) == []
    ARTIFACTS.mkdir(exist_ok=True)
    # A full-page shot would repeat the sticky header mid-page and place the sticky viewer where it was scrolled.
    p.add_style_tag(content="header, .viewer { position: static; }")
    shot = ARTIFACTS / f"report-{width}.png"
    p.screenshot(path=str(shot), full_page=True)
    assert shot.stat().st_size > 50_000

    expand_everything(p)
    assert p.evaluate(OVERFLOW_JS) == []
    # The episode list shows every column within its own width: the last column's right edge is inside.
    table, last = (p.locator(s).bounding_box() for s in ("#episode-table", "#episode-table th:last-child"))
    assert last["x"] + last["width"] <= table["x"] + table["width"] + 1
    assert p.locator(".episode-list").evaluate("e => e.scrollWidth <= e.clientWidth")
    assert page.errors == []
    p.close()
