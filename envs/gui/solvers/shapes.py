"""Solvers of tasks won by sorting SVG shapes into boxes, by kind (the shape's tag) or by colour (its
``color=`` in the DOM text), each shape dragged with ``drag_element`` to a free spot of its box."""

from __future__ import annotations

from agentgym.envs.gui.observe import Node
from agentgym.envs.gui.solvers.base import Action, Page, click, solves, submit_button
from agentgym.envs.gui.solvers.pointer import drag_element

KINDS = {"rectangles": "rect", "circles": "circle", "triangles": "polygon"}
"""The instruction's word for a kind of shape, and the SVG tag the page draws it with."""
COLORS = {"red": "#ff0000", "green": "#008000", "blue": "#0000ff", "aqua": "#00ffff", "black": "#000000",
          "magenta": "#ff00ff", "yellow": "#ffff00"}
"""The CSS colours MiniWoB's shapes are filled with (``shapes.COLORS``), as the DOM text gives them."""
SPOTS = ((-20, -10), (0, -10), (20, -10), (-20, 10), (0, 10), (20, 10))
"""Where in a box (from its middle) the shapes dropped in it go: apart, and each well inside (a 70x45 box; a
shape is 14 pixels)."""
BOX = "shape-container"


def _shapes(page: Page) -> list[Node]:
    return [n for n in page.dom if n.tag in KINDS.values() and n.id != BOX]


def _inside(shape: Node, box: Node) -> bool:
    return box.contains(*shape.center)


def _sort(page: Page, boxes: list[tuple[Node, list[Node]]]) -> Action:
    """Drag the first shape not yet in its box to the next free spot there; Submit once every one is in."""
    for box, shapes in boxes:
        inside = sum(_inside(s, box) for s in _shapes(page))
        for shape in shapes:
            if not _inside(shape, box):
                x, y = box.center
                dx, dy = SPOTS[inside % len(SPOTS)]
                return drag_element(shape, x + dx, y + dy)
    return click(submit_button(page))


@solves("drag-shapes")
def drag_shapes(page: Page) -> Action:
    """Every shape of the kind asked into the black box, then Submit; wrong: the other shapes instead."""
    kind = KINDS[page.match(r"Drag all (\w+) into the black box")[1]]
    box = page.by_id(BOX)
    return _sort(page, [(box, [s for s in _shapes(page) if (s.tag == kind) != page.wrong])])


@solves("drag-shapes-2")
def drag_shapes_2(page: Page) -> Action:
    """The shapes of the kind or colour asked into the left box, every other one into the right box, then
    Submit; wrong: the other way round."""
    word = page.match(r"Drag all (\w+) (?:shapes )?into the left box")[1]
    if word in KINDS:
        def picked(shape: Node) -> bool:
            return shape.tag == KINDS[word]
    else:
        def picked(shape: Node) -> bool:
            return shape.color == COLORS[word]
    left, right = sorted((n for n in page.dom if n.id == BOX), key=lambda n: n.box[0])
    shapes = _shapes(page)
    return _sort(page, [(left, [s for s in shapes if picked(s) != page.wrong]),
                        (right, [s for s in shapes if picked(s) == page.wrong])])
