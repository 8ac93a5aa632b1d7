"""MiniWoB tasks played as a person plays them, on both backends: a list's option chosen by its ref, drags."""

import json

import pytest

from agentgym.envs.gui import GUIEnv, parse_dom
from agentgym.envs.gui.coverage import measure
from agentgym.types import Message, ToolCall, assistant

pytestmark = pytest.mark.docker


def call(name: str, **arguments) -> Message:
    return assistant(tool_calls=[ToolCall(id="c1", name=name, arguments=json.dumps(arguments))])


async def test_click_element_on_an_option_chooses_it(backend):
    """A select's options are in the DOM text (MiniWoB leaves a closed select's out) and ``click_element`` on
    one makes it the select's value, as the page sees it: the page's Submit reads that option."""
    async with GUIEnv(names="choose-list", observation="dom", sandbox_backend=backend) as env:
        opening = (await env.reset(env.tasks()[0], seed=1))[1].text
        wanted = opening.split("Select ", 1)[1].split(" from the list")[0]
        options = parse_dom(opening).find(tag="option")
        assert len(options) >= 3 and [o.value for o in options].count(True) == 1
        (option,) = [o for o in options if o.text == wanted]
        assert not option.value  # the page does not start on the answer for this seed
        shown = await env.step(call("click_element", ref=option.ref))
        dom = parse_dom(shown.observation[-1].text)
        (select,) = dom.find(tag="select")
        assert select.value == wanted and dom.get(option.ref).value is True
        assert await env._live_page.page.evaluate("document.getElementById('options').value") == wanted
        (submit,) = dom.find(tag="button")
        end = await env.step(call("click_element", ref=submit.ref))
        assert end.terminated and env.trajectory.outcome_reward == 1.0


async def test_the_reference_chooses_from_a_list_and_a_wrong_choice_fails(backend):
    tasks = await measure("choose-list", samples=3, seed=10, sandbox=backend)
    (coverage,) = tasks.values()
    assert coverage.reference == [1.0] * 3 and coverage.wrong == [-1.0] * 3, coverage


DRAG_TASKS = ("drag-box,drag-circle,drag-single-shape,drag-items,drag-items-grid,drag-sort-numbers,drag-shapes,"
              "drag-shapes-2,drag-cube,resize-textarea,highlight-text,highlight-text-2,draw-line,draw-circle")


@pytest.mark.timeout(900)
async def test_the_reference_drags_and_a_wrong_drag_fails(backend):
    """Each drag, resize, highlight and draw task the reference solves, won with the pointer tools and lost by
    the same solver dragging wrong (the other way, to another place, over another paragraph, the other shapes
    into the box, a line the other way, a flat stroke for a circle, the cube turned to another face)."""
    tasks = await measure(DRAG_TASKS, samples=2, seed=20, sandbox=backend, concurrency=2)
    assert set(tasks) == set(DRAG_TASKS.split(","))
    assert not [t.errors for t in tasks.values() if t.errors]
    assert {t.task: t.reference for t in tasks.values() if t.reference != [1.0, 1.0]} == {}
    assert {t.task: t.wrong for t in tasks.values() if max(t.wrong) >= 1} == {}


async def test_the_items_of_a_list_of_no_height_are_in_the_dom_text_where_they_show(backend):
    """drag-items-grid floats its nine items in a list of no height, which MiniWoB's own DOM drops with all it
    holds: the DOM text keeps the list (its empty box) and lists each item with its own box, a 3x3 grid, under
    the names the page gives them (the one the instruction names among them)."""
    async with GUIEnv(names="drag-items-grid", observation="dom", sandbox_backend=backend) as env:
        opening = (await env.reset(env.tasks()[0], seed=4))[1].text
        dom = parse_dom(opening)
        (sortable,) = [n for n in dom if n.id == "sortable"]
        assert sortable.box[3] == 0 and sortable.box[2] > 100, sortable
        items = dom.find(tag="li")
        assert len(items) == 9 and all(n.box[2] > 30 and n.box[3] > 30 for n in items), items
        assert len({n.box[0] for n in items}) == len({n.box[1] for n in items}) == 3
        names = [n.text for n in dom.find(tag="div") if n.text]
        page = env._live_page.page
        assert names == await page.evaluate("[...document.querySelectorAll('#sortable li')].map(li => li.textContent)")
        assert opening.split("Drag ", 1)[1].split(" ", 1)[0] in names
        assert '"LI"' not in await page.evaluate("JSON.stringify(core.getDOMInfo())")  # MiniWoB's own leaves them out


CSS_COLORS = {"red": "#ff0000", "blue": "#0000ff", "olive": "#808000", "lime": "#00ff00", "black": "#000000",
              "white": "#ffffff", "grey": "#808080", "purple": "#800080", "orange": "#ffa500", "yellow": "#ffff00",
              "cyan": "#00ffff", "aqua": "#00ffff", "pink": "#ffc0cb", "magenta": "#ff00ff", "green": "#008000"}
FILLS = ("[...document.querySelectorAll('svg rect:not(#shape-container), svg circle, svg polygon')]"
         ".map(s => s.getAttribute('fill'))")
PAINTED = "[...document.querySelectorAll('#area .color')].map(d => d.dataset.color)"


async def test_the_dom_text_gives_each_shapes_fill_and_each_coloured_boxs_colour(backend):
    """drag-shapes-2 sorts shapes by the colour they are filled with, click-color asks for a colour's box: each
    shape's and box's ``color`` is the colour the page paints it; the empty boxes shapes go in show none."""
    async with GUIEnv(names="drag-shapes-2,click-color", observation="dom", sandbox_backend=backend) as env:
        shapes_task, color_task = env.tasks()
        dom = parse_dom((await env.reset(shapes_task, seed=5))[1].text)
        fills = await env._live_page.page.evaluate(FILLS)
        shapes = [n for n in dom if n.tag in ("rect", "circle", "polygon") and n.id != "shape-container"]
        assert len(shapes) == 5 and [n.color for n in shapes] == [CSS_COLORS[f] for f in fills], (shapes, fills)
        assert [n.color for n in dom if n.id == "shape-container"] == ["", ""]
        dom = parse_dom((await env.reset(color_task, seed=5))[1].text)
        painted = await env._live_page.page.evaluate(PAINTED)
        assert [n.color for n in dom.find(tag="div") if "color" in n.classes] == [CSS_COLORS[c] for c in painted]


async def test_press_move_release_drags_and_points_outside_the_task_area_are_refused(backend):
    """``mouse_down``, ``mouse_move`` and ``mouse_up`` in one message carry the small box into the large one;
    Submit at once (no drag) or a point outside the task area does not."""
    async with GUIEnv(names="drag-box", observation="dom", sandbox_backend=backend) as env:
        dom = parse_dom((await env.reset(env.tasks()[0], seed=3))[1].text)
        small, large = (next(n for n in dom if n.id == name) for name in ("draggableSmall", "draggableLarge"))
        refused = await env.step(call("drag", x=small.center[0], y=small.center[1], to_x=500, to_y=10))
        assert "outside the 160x210 task area" in refused.observation[0].text
        (mx, my), (tx, ty) = small.center, large.center
        stroke = assistant(tool_calls=[
            ToolCall(id="d", name="mouse_down", arguments=json.dumps({"x": mx, "y": my})),
            ToolCall(id="m", name="mouse_move", arguments=json.dumps({"x": (mx + tx) / 2, "y": (my + ty) / 2})),
            ToolCall(id="u", name="mouse_up", arguments=json.dumps({"x": tx, "y": ty}))])
        moved = parse_dom((await env.step(stroke)).observation[-1].text)
        now = next(n for n in moved if n.id == "draggableSmall")
        assert abs(now.center[0] - tx) <= 2 and abs(now.center[1] - ty) <= 2, (now, large)
        end = await env.step(call("click_element", ref=next(n.ref for n in moved if n.tag == "button")))
        assert end.terminated and env.trajectory.outcome_reward == 1.0
        await env.reset(env.tasks()[0], seed=3)
        lazy = await env.step(call("click_element", ref=next(n.ref for n in env._last_dom if n.tag == "button")))
        assert lazy.terminated and env.trajectory.outcome_reward == -1.0  # nothing moved: no win


SLIDE_AWAY = """(label) => {
  const button = [...document.querySelectorAll('button')].find(b => b.textContent === label);
  button.style.position = 'relative';
  let start = null;
  const step = now => { start = start ?? now; button.style.left = Math.min(120, (now - start) / 5) + 'px';
                        requestAnimationFrame(step); };
  requestAnimationFrame(step);
}"""
"""An animation on animation frames, as d3's transitions are: the button slides 120 px right in 0.6 s from
its first frame."""


async def test_page_time_passes_while_the_model_thinks(backend):
    """A target sliding away on animation frames, clicked 1.5 s after the model saw it where it was then,
    is missed: the page's clock went on between the turns (a browser that draws on demand drew nothing)."""
    import asyncio

    async with GUIEnv(names="click-button", observation="dom", sandbox_backend=backend) as env:
        opening = (await env.reset(env.tasks()[0], seed=2))[1].text
        label = opening.split('"')[1]
        await env._live_page.page.evaluate(SLIDE_AWAY, label)
        await env._live_page.draw()  # the animation's first frame: it starts now
        seen = (await env.step(call("scroll", dx=0, dy=0, x=1, y=1))).observation[-1].text
        (target,) = [n for n in parse_dom(seen) if n.tag == "button" and n.text == label]
        await asyncio.sleep(1.5)  # the model thinks
        result = await env.step(call("click", x=target.center[0], y=target.center[1]))
        assert env.trajectory.outcome_reward != 1.0 if result.terminated else True
        assert not (result.terminated and env.trajectory.outcome_reward == 1.0), "clicked where it was"
        if not result.terminated:
            (now,) = [n for n in parse_dom(result.observation[-1].text) if n.tag == "button" and n.text == label]
            assert now.box[0] >= target.box[0] + 100, (target, now)


async def test_a_scrolled_lists_options_out_of_view_are_marked_and_clickable_once_scrolled_in(backend):
    """MiniWoB gives an option below a list's visible box the box it would have, over the Submit button: it
    is marked ``hidden``; scrolled into view it is not, and a click at its new box chooses it."""
    async with GUIEnv(names="click-scroll-list", observation="dom", sandbox_backend=backend) as env:
        dom = parse_dom((await env.reset(env.tasks()[0], seed=1))[1].text)
        (select,) = dom.find(tag="select")
        sx, sy, sw, sh = select.box
        options = dom.find(tag="option")
        below = [o for o in options if o.box[1] >= sy + sh]
        assert below and all(o.hidden for o in below) and not any(o.hidden for o in options if o.box[1] < sy + sh - 5)
        last = options[-1]
        assert (await env.step(call("scroll", dx=0, dy=200, x=sx + sw / 2, y=sy + sh / 2))).observation
        (now,) = [o for o in env._last_dom.find(tag="option") if o.ref == last.ref]
        assert not now.hidden and sy <= now.center[1] <= sy + sh, now
        await env.step(call("click", x=now.center[0], y=now.center[1]))
        chosen = await env._live_page.page.evaluate("[...document.querySelector('select').selectedOptions]"
                                                    ".map(o => o.text)")
        assert chosen == [last.text]
