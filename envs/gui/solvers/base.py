"""What a solver sees and returns, the helpers every family shares, and the registry of solvers by task.

A solver maps a :class:`Page` (the instruction, the latest DOM text, the actions taken so far) to
the next single action, or ``None`` when it has nothing left to do (the policy then calls
``finish``). It reads only what a model reads and acts only through the model's tools.

Every solver also plays wrong on request (``Page.wrong``): the helpers that pick a target or a
text (:meth:`Page.one`, :meth:`Page.text`, :meth:`Page.choose`) then pick a wrong one, so the same
solver that shows a task can be won also shows that a wrong play of it is not rewarded as a win.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TypeVar

from agentgym.envs.gui.observe import Dom, Node

T = TypeVar("T")

Action = tuple[str, dict[str, object]]
"""A tool name and its arguments."""

Solver = Callable[["Page"], "Action | None"]

SOLVERS: dict[str, Solver] = {}
"""Task name → solver; filled by :func:`solves` as the family modules are imported."""


def solves(*tasks: str) -> Callable[[Solver], Solver]:
    """Register the decorated function as the solver of ``tasks``."""

    def register(solver: Solver) -> Solver:
        for task in tasks:
            if task in SOLVERS:
                raise ValueError(f"two solvers for {task}")
            SOLVERS[task] = solver
        return solver

    return register


@dataclass(frozen=True)
class Page:
    """What a solver sees: the instruction, the DOM, the actions taken so far, and whether to play wrong.

    ``earlier`` holds the DOMs of the pages shown before this one, oldest first: what a model has in
    its conversation, for the tasks whose answer was on a page that is gone (the sender of an email
    once the forward form hides it).
    """

    instruction: str
    dom: Dom
    history: list[Action]
    wrong: bool = False
    earlier: tuple[Dom, ...] = ()

    # ------------------------------------------------------------ reading the instruction
    def quoted(self, index: int = 0) -> str:
        """The ``index``-th double-quoted string of the instruction."""
        found = re.findall(r'"([^"]*)"', self.instruction)
        if len(found) <= index:
            raise LookupError(f"no quoted text #{index} in {self.instruction!r}")
        return found[index]

    def match(self, pattern: str) -> re.Match[str]:
        """``pattern`` searched in the instruction (dot matches newlines); LookupError if absent."""
        found = re.search(pattern, self.instruction, re.S)
        if found is None:
            raise LookupError(f"{pattern!r} not in {self.instruction!r}")
        return found

    # ------------------------------------------------------------ choosing what to act on (wrong on request)
    def one(self, tag: str | None = None, text: str | None = None) -> Node:
        """The first node of ``tag`` whose text is ``text``; when playing wrong, one of ``tag`` whose text is not."""
        if self.wrong and text is not None:
            others = [n for n in self.dom.find(tag=tag) if n.text and n.text != text]
            if not others:
                raise LookupError(f"no {tag or 'element'} other than {text!r}")
            return others[0]
        found = self.dom.find(tag=tag, text=text)
        if not found:
            raise LookupError(f"no {tag or 'element'} {text!r} on the page")
        return found[0]

    def exact(self, tag: str, text: str) -> Node:
        """The first node of ``tag`` whose text is ``text``, playing wrong or not (a form's own Submit)."""
        found = self.dom.find(tag=tag, text=text)
        if not found:
            raise LookupError(f"no {tag} {text!r} on the page")
        return found[0]

    def text(self, text: str) -> str:
        """The text to enter: ``text``, or when playing wrong a text that differs from it."""
        if not self.wrong:
            return text
        return text[::-1] if text[::-1] != text else text + "x"

    def choose(self, candidates: Iterable[T], right: Callable[[T], bool]) -> T:
        """The first candidate ``right`` holds for; when playing wrong, the first it does not."""
        for node in candidates:
            if right(node) != self.wrong:
                return node
        raise LookupError("no candidate fits")

    # ------------------------------------------------------------ the episode so far
    def clicked(self, node: Node) -> bool:
        return ("click_element", {"ref": node.ref}) in self.history

    def count(self, name: str) -> int:
        """How many actions of tool ``name`` were taken so far."""
        return sum(action == name for action, _ in self.history)

    def subtree(self, node: Node) -> list[Node]:
        """The nodes under ``node`` in the DOM text (deeper, until the next node at its depth or above)."""
        index = self.dom.nodes.index(node)
        out = []
        for below in self.dom.nodes[index + 1:]:
            if below.depth <= node.depth:
                break
            out.append(below)
        return out

    def after(self, node: Node, cls: str) -> Node | None:
        """The sibling right after ``node`` (the next node at its depth) if it has class ``cls``."""
        index = self.dom.nodes.index(node)
        below = next((n for n in self.dom.nodes[index + 1:] if n.depth <= node.depth), None)
        return below if below is not None and below.depth == node.depth and cls in below.classes else None

    def by_id(self, id_: str) -> Node:
        found = [n for n in self.dom if n.id == id_]
        if not found:
            raise LookupError(f"no #{id_} on the page")
        return found[0]

    def by_class(self, cls: str) -> list[Node]:
        return [n for n in self.dom if cls in n.classes]


# ---------------------------------------------------------------- actions
def click(node: Node) -> Action:
    return "click_element", {"ref": node.ref}


WAIT: Action = ("scroll", {"dx": 0, "dy": 0, "x": 1, "y": 1})
"""An action that changes nothing: the page gets a turn's time and a frame to move on (an animation).
The mouse goes to the top left corner (the instruction), so it hovers over nothing that reacts to it
(a suggestion list under the mouse would make the item it hovers the one a later click picks)."""


def press(key: str) -> Action:
    return "press", {"key": key}


def fill(page: Page, field: Node, text: str) -> Action | None:
    """The next action to make ``field`` hold ``text``: focus it, select what it holds, type; ``None`` when done."""
    if field.value == text:
        return None
    if not field.focused:
        return click(field)
    if field.value and page.history[-1:] != [press("Control+A")]:
        return press("Control+A")  # typing then replaces what it holds
    return "type", {"text": text}


def fill_then_submit(page: Page, fields: list[tuple[Node, str]], submit: Node) -> Action:
    """Fill each field with its text (wrong texts when playing wrong), then click ``submit``."""
    for field, text in fields:
        action = fill(page, field, page.text(text))
        if action is not None:
            return action
    return click(submit)


def submit_button(page: Page) -> Node:
    found = [n for n in page.dom if n.tag == "button" and n.text.lower() in ("submit", "login", "search")]
    if not found:
        raise LookupError("no submit button")
    return found[0]


def inputs(page: Page) -> list[Node]:
    """The text fields, in document order."""
    return [n for n in page.dom if n.tag in ("input_text", "input_password", "textarea", "input_number",
                                                    "input_email", "input_tel", "input_search")]


def labelled(page: Page, kind: str) -> dict[str, Node]:
    """Checkboxes or radios by the text that follows each."""
    out: dict[str, Node] = {}
    nodes = page.dom.nodes
    for i, node in enumerate(nodes):
        if node.tag == kind and i + 1 < len(nodes) and nodes[i + 1].text:
            out[nodes[i + 1].text] = node
    return out
