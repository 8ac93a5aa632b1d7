"""The solver of drag-cube: turn a cube with the mouse until the face asked is the active one, then Submit.

The page marks the face it counts as facing the user with the class ``active`` (a person sees it red). A
mouse move with the button held gives the cube a spin (in degrees a tick, from the move's length) that the
held button brakes by a sixth every 20 ms tick, so one move turns it about 1.18 degrees a pixel, less about 6,
and it stops within a third of a second. Every episode starts from the same pose (face 6 active, turned over),
from which one held move along one axis brings each other face to the middle of its range, some 44 degrees
from either edge: the solver makes that move and, once the face asked is active, clicks Submit (the spin left
ends inside the face's range)."""

from __future__ import annotations

from agentgym.envs.gui.solvers.base import Action, Page, click, solves, submit_button

ROLLS = {"1": (0, -113), "2": (-119, 0), "3": (-42, 0), "4": (42, 0), "5": (117, 0)}
"""For each face but 6 (active at the start), the held move (dx, dy) in pixels from the cube's first pose that
turns it to the middle of that face's range: up 113 tips it 128 degrees over to face 1; left or right turns it
about its upright axis (it starts upside down: a move right turns it back)."""


@solves("drag-cube")
def drag_cube(page: Page) -> Action:
    """Press beside the cube's middle, move the held mouse the way :data:`ROLLS` says, hold it still until the
    face asked is active, then Submit; wrong: the same for another face.

    The mouse goes to where it is pressed a turn before it is: the cube's tick (20 ms) takes every move the
    mouse made since the last tick, and a press in the same tick as the move there would spin it by that."""
    faces = [n for n in page.dom if "cube-image" in n.classes]
    wanted = page.choose("123456", lambda face: face == page.quoted())
    if next(n.text for n in faces if "active" in n.classes) == wanted:
        return click(submit_button(page))
    cx = sum(n.center[0] for n in faces) / len(faces)
    cy = sum(n.center[1] for n in faces) / len(faces)
    dx, dy = ROLLS[wanted]
    start: dict[str, object] = {"x": round(cx - dx / 2, 1), "y": round(cy - dy / 2, 1)}
    if not page.history:  # there first: the page counts every move it sees the mouse make, pressed or not
        return "mouse_move", start
    if not page.count("mouse_down"):
        return "mouse_down", start
    if page.count("mouse_move") == 1:
        return "mouse_move", {"x": round(cx + dx / 2, 1), "y": round(cy + dy / 2, 1)}
    return page.history[-1]  # held still: the spin runs down
