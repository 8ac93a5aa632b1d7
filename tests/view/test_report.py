"""`agentgym view` as a person uses it: real runs, a report opened in headless Chromium, read through the DOM."""

from __future__ import annotations

import json
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from agentgym.types import ImagePart, Message, TextPart, ToolCall, Trajectory, Turn, iter_jsonl, write_jsonl
from agentgym.view.report import CHUNK, write_report
from agentgym.view.runs import load_runs

from .conftest import Page, agentgym


def open_report(page: Page, report: Path) -> None:
    page.page.goto(report.as_uri())
    page.page.wait_for_selector("#summary-table")
    # Every plot drawn by plotly (its SVG), not just a div waiting for it.
    page.page.wait_for_function("[...document.querySelectorAll('.plot')].every(p => p.dataset.drawn)")
    page.page.wait_for_selector(".js-plotly-plot .main-svg")


def test_report_of_a_code_run_and_a_search_run(real_runs, page, tmp_path):
    report = tmp_path / "report.html"
    done = agentgym("view", str(real_runs["code"]), str(real_runs["search"]), "--out", str(report), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "2 runs, 10 episodes" in done.stdout
    open_report(page, report)
    p = page.page
    rows = p.locator("#summary-table tbody tr")
    assert rows.count() == 2
    assert rows.nth(0).locator("td").first.inner_text() == "code__reference"
    assert "5/5 = 100.0%" in rows.nth(0).inner_text()
    assert p.locator("#plot-success .bars .point").count() == 2  # one bar per run
    # Turns are constant within each run (scripted policies): a sentence, not a one-bar histogram.
    assert p.locator("#plot-turns").count() == 0
    assert "Turns per episode: 2 in every episode of code__reference; 3 in every episode of search__reference" \
        in p.locator("#plots").inner_text()
    # One run per env: nothing to pair (a code run is never compared with a search run).
    assert p.locator("#comparison-table").count() == 0
    assert "no env has two runs" in p.locator("#comparison").inner_text()
    assert p.locator("#cost-table tbody tr").count() == 2
    tasks = p.locator("#task-table tbody tr td:first-child").all_inner_texts()
    assert tasks[:5] == [f"HumanEval/{i}" for i in range(5)] and len(tasks) == 10  # in task-id order
    assert tasks[5:] == sorted(tasks[5:])
    assert p.locator("tr.episode-row").count() == 10

    # A code episode: its python and submit calls, folded, with their outputs.
    p.locator("tr.episode-row", has_text="HumanEval/0").click()
    p.wait_for_selector(".trajectory .tool-call")
    trajectory = p.locator(".trajectory")
    assert trajectory.locator("h3").inner_text() == "HumanEval/0"
    calls = trajectory.locator(".tool-call summary")
    assert calls.count() == 2 and "python" in calls.nth(0).inner_text() and "submit" in calls.nth(1).inner_text()
    assert trajectory.locator(".tool-output").count() == 2
    assert trajectory.locator(".turn").count() == 2
    assert "reward +1.000" in trajectory.locator(".turn").nth(1).locator(".badge.reward").inner_text()
    details = trajectory.locator("details.tool-call").first
    assert details.get_attribute("open") is None  # folded until clicked
    details.locator("summary").click()
    # The code as code: highlighted Python, real newlines, no JSON escapes.
    code = details.locator("pre.code.lang-python")
    assert code.count() == 1
    text = code.inner_text()
    assert "def has_close_elements" in text and "\n" in text and "\\n" not in text and '\\"' not in text
    assert code.locator(".tok-keyword", has_text="def").count() >= 1
    assert code.locator(".tok-def", has_text="has_close_elements").count() == 1

    # A search episode, reached through the filters.
    p.select_option("#ep-run", label="search__reference")
    assert p.locator("tr.episode-row").count() == 5
    p.locator("tr.episode-row").first.click()
    p.wait_for_selector(".trajectory .tool-call >> text=search")
    names = p.locator(".trajectory .tool-call summary code").all_inner_texts()
    assert names[0] == "search" and names[-1] == "answer"
    assert page.errors == []


@pytest.mark.slow
def test_runs_pair_within_their_env_and_with_a_named_baseline(paired_runs, page, tmp_path):
    code = paired_runs[0]
    report = tmp_path / "report.html"
    done = agentgym("view", *map(str, paired_runs), "--out", str(report), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    open_report(page, report)
    rows = page.page.locator("#comparison-table tbody tr:not(.env-row)")
    assert rows.all_inner_texts() and [r.split("\t")[0] for r in rows.all_inner_texts()] == [
        "code__worse vs code__reference", "search__worse vs search__reference"]
    envs = page.page.locator("#comparison-table tr.env-row").all_inner_texts()
    assert envs == [f"agentgym/{env}-v0: pairwise, the earlier run of each pair as its baseline"
                    for env in ("code", "search")]
    assert "no task and seed in common" not in page.page.locator("#comparison").inner_text()
    first = rows.nth(0).locator("td")
    assert first.nth(1).inner_text() == "5"  # every episode paired
    assert first.nth(3).inner_text() == "3 / 0"  # the worse run lost 3 successes (episodes 0, 2, 4)
    assert page.page.locator("#plot-wins .bars .point").count() >= 2
    assert page.errors == []

    named = agentgym("view", *map(str, paired_runs), "--baseline", "code__worse", "--out", str(report), cwd=tmp_path)
    assert named.returncode == 0, named.stderr
    open_report(page, report)
    texts = page.page.locator("#comparison-table tbody tr:not(.env-row) td:first-child").all_inner_texts()
    assert texts == ["code__reference vs code__worse", "search__worse vs search__reference"]

    wrong = agentgym("view", str(code), "--baseline", "nope", "--out", str(tmp_path / "x.html"), cwd=tmp_path)
    assert wrong.returncode == 2 and "--baseline nope: no such run (the runs are: code__reference)" in wrong.stderr
    assert not (tmp_path / "x.html").exists()


def test_episode_list_sorts_searches_text_and_follows_tasks(paired_runs, page, tmp_path):
    report = write_report(load_runs(paired_runs), tmp_path / "report.html")
    lost = next(t.task_id for t in iter_jsonl(paired_runs[1]) if t.reward == 0)  # worse than the reference here
    open_report(page, report)
    p = page.page

    def column(n: int) -> list[str]:
        return p.locator(f"tr.episode-row td:nth-child({n})").all_inner_texts()

    assert p.locator("tr.episode-row").count() == 20
    p.locator("th[data-sort=reward]").click()
    rewards = [float(x) for x in column(5)]
    assert rewards == sorted(rewards) and rewards[0] < rewards[-1]
    p.locator("th[data-sort=reward]").click()
    assert [float(x) for x in column(5)] == sorted(rewards, reverse=True)
    assert "▼" in p.locator("th[data-sort=reward]").inner_text()
    p.locator("th[data-sort=turns]").click()
    assert column(6) == sorted(column(6), key=int)

    # Text only inside trajectories (the prompt and the model's code) is found, once the chunks are read.
    p.fill("#ep-search", "has_close_elements")
    p.wait_for_function("document.querySelectorAll('tr.episode-row').length === 2")
    assert {t.split("\n")[0] for t in column(2)} == {"HumanEval/0"}
    p.fill("#ep-search", "")

    # A per-task cell lists that run's episodes of the task.
    row = p.locator(f"#task-table tbody tr[data-task='{lost}']")
    row.locator("a.task-link[data-run='1']").click()
    assert p.locator("tr.episode-row").count() == 1
    assert column(2) == [f"{lost}\ncode__worse"]
    assert p.locator("#ep-task").is_visible() and lost in p.locator("#ep-task").inner_text()
    p.locator("#ep-task").click()
    assert p.locator("tr.episode-row").count() == 5  # the run filter stays; the task filter went

    # Side by side: both runs' episodes of the task, same seed.
    row.locator("button.side-link").click()
    p.wait_for_selector("#side-a .trajectory")
    p.wait_for_selector("#side-b .trajectory")
    assert p.locator("#side-by-side").is_visible()
    assert p.locator("#side-a .trajectory h3").inner_text() == lost
    assert p.locator("#side-b .trajectory h3").inner_text() == lost
    runs = [p.locator(f"#{k} select.side-run option:checked").inner_text() for k in ("side-a", "side-b")]
    assert runs == ["code__reference", "code__worse"]
    assert "0.0000 (outcome 0.0000)" in p.locator("#side-b .meta").inner_text()
    assert "1.0000 (outcome 1.0000)" in p.locator("#side-a .meta").inner_text()
    p.locator("#side-b select.side-run").select_option(label="code__reference")
    p.wait_for_function("document.querySelector('#side-b .meta') && "
                        "document.querySelector('#side-b .meta').innerText.includes('1.0000 (outcome 1.0000)')")
    assert page.errors == []


def gui_trajectory(png: bytes) -> Trajectory:
    """A GUI episode: the model clicks, the env answers with a screenshot (an image content part)."""
    click = ToolCall(id="c1", name="click", arguments='{"x": 40, "y": 20}')
    return Trajectory(
        task_id="gui/press-ok", env="gui", policy="scripted", seed=0,
        messages=[Message(role="user", content=[TextPart(text="Press OK. The screen:"), ImagePart.from_png(png)])],
        turns=[Turn(action=Message(role="assistant", content="Clicking OK.", tool_calls=[click]),
                    observation=[Message(role="tool", tool_call_id="c1", name="click",
                                         content=[TextPart(text="clicked"), ImagePart.from_png(png)])],
                    reward=1.0)],
        reward=1.0, outcome_reward=1.0,
    )


def test_gui_screenshots_show_inline(page, tmp_path):
    page.page.set_content("<button style='font-size:40px'>OK</button>")
    png = page.page.screenshot(clip={"x": 0, "y": 0, "width": 160, "height": 80})
    run = tmp_path / "gui.jsonl"
    write_jsonl(run, [gui_trajectory(png)])
    report = write_report(load_runs([run]), tmp_path / "gui.html")
    open_report(page, report)
    page.page.locator("tr.episode-row").first.click()
    page.page.wait_for_selector(".trajectory img.inline-image")
    images = page.page.locator(".trajectory img.inline-image")
    assert images.count() == 2
    for i in range(2):  # decoded, at the screenshot's own size, outside any fold
        assert images.nth(i).evaluate("img => img.complete && img.naturalWidth") == 160
        assert images.nth(i).is_visible()
    assert page.errors == []


def test_serve_answers_on_localhost_only(real_runs, tmp_path):
    report = tmp_path / "served.html"
    proc = subprocess.Popen([sys.executable, "-m", "agentgym.cli", "view", str(real_runs["code"]), "--out",
                             str(report), "--serve", "--port", "0"], stdout=subprocess.PIPE, text=True, cwd=tmp_path)
    try:
        assert proc.stdout is not None
        lines = [proc.stdout.readline(), proc.stdout.readline()]
        url = lines[1].split()[1]
        assert url.startswith("http://127.0.0.1:"), lines
        with urllib.request.urlopen(url, timeout=30) as r:
            body = r.read().decode()
        assert r.status == 200 and 'id="summary-table"' in body
        # The file as written, with the live version filled in (the page polls only when served).
        assert body == report.read_text().replace('name="agentgym-live" content=""', 'name="agentgym-live" content="0"')
        try:
            urllib.request.urlopen(url + "etc/passwd", timeout=30)
            raise AssertionError("a path beside the report was served")
        except urllib.error.HTTPError as e:
            assert e.code == 404
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def many_trajectories(n: int) -> list[Trajectory]:
    """``n`` episodes of two kinds (solved, failed with a reason), each with a call and its output."""
    out = []
    for i in range(n):
        ok = i % 3 != 0
        call = ToolCall(id=f"c{i}", name="python", arguments=json.dumps({"code": f"print({i} * 2)"}))
        out.append(Trajectory(
            task_id=f"task/{i // 2}", env="code", policy="synthetic", seed=i % 2,
            messages=[Message(role="user", content=f"Task {i // 2}: double {i}.")],
            turns=[Turn(action=Message(role="assistant", tool_calls=[call]),
                        observation=[Message(role="tool", tool_call_id=f"c{i}", name="python", content=str(i * 2))],
                        reward=1.0 if ok else 0.0)],
            reward=1.0 if ok else 0.0, outcome_reward=1.0 if ok else 0.0,
            outcome="terminated" if ok else "error", failure=None if ok else f"SandboxError: died on {i % 4}",
        ))
    return out


def test_ten_thousand_episodes_load_lazily(page, tmp_path):
    n = 10_000
    run = tmp_path / "big.jsonl"
    write_jsonl(run, many_trajectories(n))
    started = time.monotonic()
    report = write_report(load_runs([run]), tmp_path / "big.html")
    built = time.monotonic() - started
    started = time.monotonic()
    open_report(page, report)
    page.page.wait_for_selector("tr.episode-row")
    loaded = time.monotonic() - started
    p = page.page
    nodes = p.evaluate("document.getElementsByTagName('*').length")
    chunks = p.evaluate("document.querySelectorAll('script[id^=chunk-]').length")
    print(f"\n10,000 episodes: report {report.stat().st_size / 1e6:.1f} MB, built in {built:.1f} s, "
          f"opened in {loaded:.1f} s, {nodes} elements, {chunks} chunks")
    assert chunks == n // CHUNK
    assert p.locator("tr.episode-row").count() == 50  # one page, not 10,000 rows
    assert nodes < 3_000
    assert "· 10,000 episodes" in p.locator("#episode-pager").inner_text()
    # The last episode: its page, then its chunk (the last one), decompressed on demand.
    p.fill("#ep-search", "task/4999")
    assert p.locator("tr.episode-row").count() == 2
    p.locator("tr.episode-row[data-index='9999']").click()
    p.wait_for_selector(".trajectory[data-index='9999'] .tool-call")
    p.locator(".trajectory .tool-call summary").first.click()
    assert "print(9999 * 2)" in p.locator(".trajectory .tool-call pre").first.inner_text()
    assert p.locator(".trajectory .tool-output pre").first.text_content() == "19998"
    # Text only inside one trajectory (its code), found by reading all 100 chunks in the background.
    started = time.monotonic()
    p.fill("#ep-search", "print(9876 * 2)")
    p.wait_for_function("document.querySelectorAll('tr.episode-row').length === 1 && "
                        "document.getElementById('ep-searching').textContent === ''", timeout=120_000)
    print(f"full-text search over 10,000 episodes: {time.monotonic() - started:.1f} s")
    assert p.locator("tr.episode-row").get_attribute("data-index") == "9876"
    p.fill("#ep-search", "")
    # Failures group by reason; the link filters the list to that reason.
    failures = p.locator("#failures-table tbody tr")
    assert failures.count() == 4
    failures.first.locator("a.failure-link").click()
    assert "· 834 episodes" in p.locator("#episode-pager").inner_text()
    assert page.errors == []


def test_bad_input_is_a_clear_error(tmp_path):
    missing = agentgym("view", str(tmp_path / "nope.jsonl"), cwd=tmp_path)
    assert missing.returncode == 2 and "no such run" in missing.stderr
    (tmp_path / "empty.jsonl").write_text("\n")
    empty = agentgym("view", str(tmp_path / "empty.jsonl"), cwd=tmp_path)
    assert empty.returncode == 2 and "holds no trajectory" in empty.stderr
    (tmp_path / "garbage.jsonl").write_text("not json\n")
    garbage = agentgym("view", str(tmp_path / "garbage.jsonl"), cwd=tmp_path)
    assert garbage.returncode == 2 and "garbage.jsonl:1: not a trajectory" in garbage.stderr
    (tmp_path / "folder").mkdir()
    folder = agentgym("view", str(tmp_path / "folder"), cwd=tmp_path)
    assert folder.returncode == 2 and "holds no .jsonl run" in folder.stderr
    assert not (tmp_path / "report.html").exists()


def test_tool_calls_show_code_json_trees_and_diffs(page, tmp_path):
    code = 'import json\n\ndef f(x):\n    """Doubles."""\n    return {"twice": x * 2}  # a dict\n\nprint(f(21))\n'
    patch = "--- a/m.py\n+++ b/m.py\n@@ -1 +1 @@\n-x = 1\n+x = 2\n"
    result = {"results": [{"title": "Paris", "score": 0.91}, {"title": "Lyon", "score": 0.2}], "total": 2}
    calls = [ToolCall(id="c1", name="python", arguments=json.dumps({"code": code})),
             ToolCall(id="c2", name="apply_patch", arguments=json.dumps({"patch": patch, "strict": True})),
             ToolCall(id="c3", name="search", arguments=json.dumps({"query": "capital of France", "k": 2}))]
    t = Trajectory(
        task_id="tools/1", env="custom", policy="scripted", seed=0,
        messages=[Message(role="user", content="Go.")],
        turns=[Turn(action=Message(role="assistant", tool_calls=calls), observation=[
            Message(role="tool", tool_call_id="c1", name="python", content='{"twice": 42}\n'),
            Message(role="tool", tool_call_id="c2", name="apply_patch", content="applied"),
            Message(role="tool", tool_call_id="c3", name="search", content=json.dumps(result))])],
    )
    run = tmp_path / "tools.jsonl"
    write_jsonl(run, [t])
    open_report(page, write_report(load_runs([run]), tmp_path / "tools.html"))
    p = page.page
    p.locator("tr.episode-row").first.click()
    p.wait_for_selector(".trajectory .tool-call")
    p.evaluate("document.querySelectorAll('.trajectory details').forEach((d) => { d.open = true; })")
    python, patched, searched = (p.locator(".trajectory details.tool-call").nth(i) for i in range(3))
    # The code exactly as the model wrote it (no \n or \" escapes), highlighted.
    assert python.locator("pre.code.lang-python").text_content() == code
    assert python.locator(".tok-string").first.inner_text() == '"""Doubles."""'
    assert python.locator(".tok-comment").inner_text() == "# a dict"
    assert python.locator(".tok-def").inner_text() == "f"
    assert {"def", "return", "import"} <= set(python.locator(".tok-keyword").all_inner_texts())
    assert python.locator(".tok-builtin", has_text="print").count() == 1
    # A patch as a diff; its other argument as a JSON value.
    assert patched.locator("pre.code.lang-diff .tok-add").inner_text() == "+x = 2\n"
    assert patched.locator("pre.code.lang-diff .tok-del").inner_text() == "-x = 1\n"
    assert patched.locator(".arg-inline").inner_text() == "strict: true"
    assert searched.locator(".arg-inline").all_inner_texts() == ['query: "capital of France"', "k: 2"]
    # JSON results as folded trees: the search results' objects fold, their leaves are typed.
    outputs = p.locator(".trajectory details.tool-output")
    assert outputs.nth(1).locator("details.json-tree").count() == 0  # plain text stays text
    tree = outputs.nth(2).locator("details.json-tree").first
    assert tree.locator("> summary").inner_text() == "{ 2 keys }"
    assert tree.locator(".json-key").first.text_content() == "results: "
    assert tree.locator(".json-string", has_text='"Paris"').count() == 1
    assert tree.locator(".json-number", has_text="0.91").count() == 1
    assert outputs.nth(0).locator(".json-number").inner_text() == "42"
    assert page.errors == []


@pytest.mark.slow
def test_three_tasks_of_3334_samples_open_like_any_other_shape(page, tmp_path):
    """The shape that took minutes to open (pass@k drawn at every k): a bounded number of points now."""
    trajectories = [t.model_copy(update={"task_id": f"task/{i % 3}", "seed": i // 3})
                    for i, t in enumerate(many_trajectories(3 * 3334))]
    run = tmp_path / "few-tasks.jsonl"
    write_jsonl(run, trajectories)
    report = write_report(load_runs([run]), tmp_path / "few-tasks.html")
    started = time.monotonic()
    open_report(page, report)
    page.page.wait_for_selector("tr.episode-row")
    opened = time.monotonic() - started
    p = page.page
    points = p.locator("#plot-pass-at-k .scatterlayer .point").count()
    ticks = p.locator("#plot-pass-at-k .xtick").count()
    everything = p.evaluate("document.querySelectorAll('.js-plotly-plot .point').length")
    nodes = p.evaluate("document.getElementsByTagName('*').length")
    print(f"\n3 tasks x 3,334 samples: opened in {opened:.1f} s; pass@k {points} points, {ticks} ticks; "
          f"{everything} points in all plots; {nodes} elements")
    assert points == 12  # k = 1, 2, 5, ..., 2000, 3334: not 3,334 markers
    assert ticks <= 12 and everything <= 30 and nodes < 3_000
    assert p.locator("#task-table tbody tr").count() == 3
    assert all("/3334 success" in cell for cell in p.locator("#task-table tbody td.cell-mixed").all_inner_texts())
    assert page.errors == []


@pytest.mark.slow
def test_serve_is_live_as_rows_are_appended(browser, tmp_path):
    """`agentgym view --serve` on a run in progress: the open page follows as episodes are appended."""
    episodes = many_trajectories(8)
    run = tmp_path / "progress.jsonl"
    write_jsonl(run, episodes[:3])
    proc = subprocess.Popen([sys.executable, "-m", "agentgym.cli", "view", str(run), "--out", str(tmp_path / "r.html"),
                             "--serve", "--port", "0"], stdout=subprocess.PIPE, text=True, cwd=tmp_path)
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    try:
        assert proc.stdout is not None
        assert "3 episodes" in proc.stdout.readline()
        url = proc.stdout.readline().split()[1]

        def live() -> dict:
            with urllib.request.urlopen(url + "__live__", timeout=30) as r:
                return json.loads(r.read())

        def shows(n: int) -> None:
            pager = "document.getElementById('episode-pager')"  # null while the page reloads
            page.wait_for_function(f"{pager} && {pager}.innerText.includes('· {n} episodes')", timeout=60_000)

        page.goto(url)
        shows(3)
        assert page.locator("#live-status").is_visible() and "live" in page.locator("#live-status").inner_text()
        page.fill("#ep-search", "task/")  # the reader's place, kept across updates
        page.locator("th[data-sort=reward]").click()
        before = live()["version"]

        def append(text: str) -> None:
            with run.open("a", encoding="utf-8") as f:
                f.write(text)

        append("".join(t.model_dump_json() + "\n" for t in episodes[3:6]))
        shows(6)
        assert int(live()["version"]) > int(before)
        assert page.input_value("#ep-search") == "task/"
        assert "▲" in page.locator("th[data-sort=reward]").inner_text()
        # A row half written (the writer is mid-line): the report leaves it out until it is whole.
        line = episodes[6].model_dump_json() + "\n"
        append(line[:40])
        assert live()["error"] is None
        time.sleep(3)  # a few polls: the page must still show 6, not fail
        shows(6)
        append(line[40:])
        shows(7)
        # A damaged row: the last good report stays, and the page says why it is not updated.
        append("not a trajectory\n")
        page.wait_for_function("document.getElementById('live-status').innerText.includes('not a trajectory')",
                               timeout=60_000)
        assert "progress.jsonl:8: not a trajectory" in live()["error"]
        shows(7)
        assert errors == []
    finally:
        page.close()
        proc.terminate()
        proc.wait(timeout=30)
