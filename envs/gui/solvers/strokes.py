"""Solvers of tasks won by a freehand stroke: ``mouse_down``, ``mouse_move`` to each corner of the path,
``mouse_up``, one a turn, then Submit. The page grades the points its drag handler saw (each move is sent as
several, see ``page.DRAG_STEPS``): a line's spread along and across, a circle's distances from its centre."""

from __future__ import annotations

import math

from agentgym.envs.gui.observe import Node
from agentgym.envs.gui.page import HEIGHT, WIDTH
from agentgym.envs.gui.solvers.base import Action, Page, click, solves, submit_button

Point = tuple[float, float]
HALF_LINE = 30
"""Pixels a line runs on each side of the dot: draw-line wants the points' spread along it above 5 (of the
last point from their mean, over the root of their count) and across it below 1.5."""
RADIUS = 20
"""draw-circle's circle: its path's box must be at least 20 pixels each way, and well inside the drawing area."""
CORNERS = 6
"""A hexagon: its sides' points are 0.87 to 1 radius from the centre, a spread of the distances under 2 pixels
(the page's full marks), in 1 + 5 moves + 1 turns."""


def _stroke(page: Page, points: list[Point]) -> Action:
    """The next action of the stroke through ``points`` (press at the first, release at the last), then Submit."""
    done = page.count("mouse_down") + page.count("mouse_move") + page.count("mouse_up")
    if done >= len(points):
        return click(submit_button(page))
    x, y = points[done]
    name = "mouse_down" if done == 0 else "mouse_up" if done == len(points) - 1 else "mouse_move"
    return name, {"x": round(x, 1), "y": round(y, 1)}


def _within(value: float, low: float, high: float) -> float:
    return min(max(value, low), high)


def _line(dot: Node, area: Node, horizontal: bool) -> list[Point]:
    """A straight line through the dot's middle, pressed inside the drawing area on the side with less room and
    released on the other (the task area bounds it; the page follows the mouse out of the drawing area)."""
    cx, cy = dot.center
    ax, ay, aw, ah = area.box
    if horizontal:
        way = 1 if cx < ax + aw / 2 else -1
        start = _within(cx - way * HALF_LINE, ax + 2, ax + aw - 2)
        return [(start, cy), (cx, cy), (_within(cx + way * HALF_LINE, 1, WIDTH - 1), cy)]
    way = 1 if cy < ay + ah / 2 else -1
    start = _within(cy - way * HALF_LINE, ay + 2, ay + ah - 2)
    return [(cx, start), (cx, cy), (cx, _within(cy + way * HALF_LINE, 1, HEIGHT - 1))]


@solves("draw-line")
def draw_line(page: Page) -> Action:
    """A line of the direction asked through the dot; wrong: the other direction."""
    horizontal = page.match(r"Draw a (horizontal|vertical) line")[1] == "horizontal"
    area = next(n for n in page.dom if n.tag == "svg")
    return _stroke(page, _line(page.by_id("circ"), area, horizontal != page.wrong))


@solves("draw-circle")
def draw_circle(page: Page) -> Action:
    """A hexagon of :data:`RADIUS` around the marked point, back to where it started; wrong: the same stroke
    flattened to a line through the point (a path of no height)."""
    cx, cy = page.by_id("circ").center
    squash = 0 if page.wrong else 1
    return _stroke(page, [(cx + RADIUS * math.cos(a), cy + squash * RADIUS * math.sin(a))
                          for a in (2 * math.pi * i / CORNERS for i in range(CORNERS + 1))])
