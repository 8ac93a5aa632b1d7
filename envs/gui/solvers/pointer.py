"""Solvers of tasks won by dragging: a box into another, a shape one way, a list item to its place, a list
sorted, a text area's corner, a paragraph's text highlighted; each with the pointer tools a model has."""

from __future__ import annotations

import re

from agentgym.envs.gui.observe import Node
from agentgym.envs.gui.page import HEIGHT, WIDTH
from agentgym.envs.gui.solvers.base import Action, Page, click, solves, submit_button

STEP = 30
"""How far a drag "left", "larger"... goes, in pixels: clearly one way, well inside the task area."""
DIRECTIONS = {"left": (-1, 0), "right": (1, 0), "up": (0, -1), "down": (0, 1)}
OPPOSITE = {"left": "right", "right": "left", "up": "down", "down": "up"}


def drag_element(node: Node, x: float, y: float) -> Action:
    return "drag_element", {"ref": node.ref, "to_x": _inside(x, WIDTH), "to_y": _inside(y, HEIGHT)}


def _inside(value: float, limit: int) -> float:
    return float(min(max(value, 1), limit - 1))


def dragged(page: Page) -> bool:
    return page.count("drag_element") + page.count("drag") > 0


@solves("drag-box")
def drag_box(page: Page) -> Action:
    """The small box's middle onto the large one's (its corner is then inside by half the difference);
    wrong: to the corner of the field farthest from the large box."""
    if dragged(page):
        return click(submit_button(page))
    small, large = page.by_id("draggableSmall"), page.by_id("draggableLarge")
    if not page.wrong:
        return drag_element(small, *large.center)
    field = page.by_id("draggable")
    fx, fy, fw, fh = field.box
    corners = [(fx + 15, fy + 15), (fx + fw - 15, fy + 15), (fx + 15, fy + fh - 15), (fx + fw - 15, fy + fh - 15)]
    far = max(corners, key=lambda c: (c[0] - large.center[0]) ** 2 + (c[1] - large.center[1]) ** 2)
    return drag_element(small, *far)


@solves("drag-circle", "drag-single-shape")
def drag_shape(page: Page) -> Action:
    """The shape :data:`STEP` pixels the way asked, then Submit; wrong: the opposite way."""
    if dragged(page):
        return click(submit_button(page))
    way = page.match(r"Drag the (?:circle|item) (\w+)")[1]
    dx, dy = DIRECTIONS[OPPOSITE[way] if page.wrong else way]
    shape = next(n for n in page.dom if n.tag in ("circle", "rect", "polygon"))
    x, y = shape.center
    return drag_element(shape, x + dx * STEP, y + dy * STEP)


@solves("resize-textarea")
def resize_textarea(page: Page) -> Action:
    """The corner handle :data:`STEP` pixels out (larger) or in (smaller) along the dimension asked; wrong:
    the other way."""
    if dragged(page):
        return click(submit_button(page))
    found = page.match(r"the (width|height) is (larger|smaller)")
    sign = (1 if found[2] == "larger" else -1) * (-1 if page.wrong else 1)
    (corner,) = page.by_class("ui-resizable-se")
    x, y = corner.center
    if found[1] == "width":
        return drag_element(corner, x + sign * STEP, y)
    return drag_element(corner, x, y + sign * STEP)


ORDINAL = re.compile(r"to the (\d+)(?:st|nd|rd|th) position")


@solves("drag-items")
def drag_items(page: Page) -> Action:
    """The named item dropped on the place asked (the page judges the drop); wrong: on another place."""
    items = [n for n in page.dom if n.tag == "li"]
    names = [next(c.text for c in page.subtree(item) if c.tag == "div") for item in items]
    name = page.match(r"Drag (.+?) (?:to the|up by|down by)")[1]
    now = names.index(name)
    target = _target(page.instruction, now, len(items))
    place = page.choose(range(len(items)), lambda i: i == target)
    x, y = items[place].center
    nudge = 0 if place == now else (8 if place > now else -8)  # past the middle of the item it replaces
    return drag_element(items[now], x, y + nudge)


GRID_PLACES = ("top left", "top center", "top right", "center left", "center", "center right", "bottom left",
               "bottom center", "bottom right")
GRID_MOVES = {"up": -3, "down": 3, "left": -1, "right": 1}
GRID_NUDGE = 8
"""Pixels past the middle of the item a dragged one takes the place of, on the side it comes from."""


@solves("drag-items-grid")
def drag_items_grid(page: Page) -> Action | None:
    """The named item dropped on the place of the 3x3 grid asked (the page judges the drop); wrong: on another.

    jQuery UI's sortable puts a floated item after the one under the pointer when the last move went right or
    down, else before it, and only with the pointer on the half the move went into. A drop on a later place
    comes in right or down, one on an earlier place up or left: a straight drag but for an earlier place up
    and to the right, which goes right along its row first, then straight up. The plan is made on the first
    page (once the drag starts, the item being dragged and the gap it leaves are in the list too)."""
    dom = page.earlier[0] if page.earlier else page.dom
    items = [n for n in dom if n.tag == "li"]
    names = [dom.nodes[dom.nodes.index(item) + 1].text for item in items]  # each item's div
    found = page.match(r"Drag (.+?) (?:to the (.+)|(up|down|left|right) by one)\.$")
    now = names.index(found[1])
    target = GRID_PLACES.index(found[2]) if found[2] else now + GRID_MOVES[found[3]]
    place = page.choose([i for i in range(len(items)) if i != now], lambda i: i == target)
    (x, y), (fx, fy) = items[place].center, items[now].center
    plan: list[Action]
    if place < now and x > fx + 1:
        plan = [("mouse_down", {"x": fx, "y": fy}), ("mouse_move", {"x": x, "y": fy}),
                ("mouse_up", {"x": x, "y": y - GRID_NUDGE})]
    elif abs(x - fx) > 1:
        plan = [drag_element(items[now], x + (GRID_NUDGE if x > fx else -GRID_NUDGE), y)]
    else:
        plan = [drag_element(items[now], x, y + (GRID_NUDGE if y > fy else -GRID_NUDGE))]
    return plan[len(page.history)] if len(page.history) < len(plan) else None


@solves("drag-sort-numbers")
def drag_sort_numbers(page: Page) -> Action:
    """Drag the number that belongs first out of place up to there, until sorted, then Submit; wrong: sorted
    the other way (highest first)."""
    items = [n for n in page.dom if n.tag == "li"]
    numbers = [int(next(c.text for c in page.subtree(item) if c.tag == "div")) for item in items]
    wanted = sorted(numbers, reverse=page.wrong)
    for place, (number, should) in enumerate(zip(numbers, wanted, strict=True)):
        if number != should:
            now = numbers.index(should, place + 1)
            x, y = items[place].center
            return drag_element(items[now], x, y - 8)
    return click(submit_button(page))


def _target(instruction: str, now: int, count: int) -> int:
    """The 0-based place ``instruction`` asks the item now at ``now`` to go to."""
    if instruction.endswith("to the top."):
        return 0
    if instruction.endswith("to the bottom."):
        return count - 1
    if instruction.endswith("down by one position."):
        return now + 1
    if instruction.endswith("up by one position."):
        return now - 1
    found = ORDINAL.search(instruction)
    if found is None:
        raise LookupError(f"no place in {instruction!r}")
    return int(found[1]) - 1


@solves("highlight-text")
def highlight_text(page: Page) -> Action:
    """Drag from the paragraph's first letter to past its last (a selection of all of it), then Submit;
    wrong: to its middle only."""
    if dragged(page):
        return click(submit_button(page))
    text = page.by_id("randomText")
    x, y, w, h = text.box
    end = (x + w / 2, y + 3) if page.wrong else (x + w + 2, y + h - 3)
    return "drag", {"x": float(x), "y": float(y + 3), "to_x": _inside(end[0], WIDTH), "to_y": _inside(end[1], HEIGHT)}


POSITIONS = {"1st": 0, "2nd": 1, "3rd": 2}


@solves("highlight-text-2")
def highlight_text_2(page: Page) -> Action:
    """Drag over the paragraph named, first letter to past its last, then Submit; wrong: another paragraph."""
    if dragged(page):
        return click(submit_button(page))
    paragraphs = [n for n in page.dom if n.tag == "p"]
    wanted = POSITIONS[page.match(r"in the (\w+) paragraph")[1]]
    x, y, w, h = paragraphs[page.choose(range(len(paragraphs)), lambda i: i == wanted)].box
    return "drag", {"x": float(x), "y": float(y + 3), "to_x": _inside(x + w + 2, WIDTH),
                    "to_y": _inside(y + h - 3, HEIGHT)}
