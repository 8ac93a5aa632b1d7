"""Scripted GUI policies: a reference that reads the DOM text to find its target, and random clicks.

The reference plays through the same tools a model gets and reads only what a model reads: the
instruction in the opening message and the DOM text of the latest observation (it needs
``observation="dom"`` or ``"both"``). Each solved task has a small solver that maps (instruction,
DOM, the actions taken so far) to the next single action, so every turn carries one action with the
page it was chosen on: the unit the action-prediction dataset records. A task with no solver, or a
page where a solver finds no target, gets ``finish`` (the env's ``done`` tool: ``Env.done`` is taken).

``random`` (the ``baseline``) clicks a uniformly random point of the task area every turn.
"""

from __future__ import annotations

import json
import random
import re
from collections.abc import Callable
from dataclasses import dataclass

from agentgym.envs.gui.observe import Dom, Node, parse_dom
from agentgym.errors import EnvError
from agentgym.policies.base import Reply
from agentgym.types import Message, Task, ToolCall, ToolSpec, assistant

Action = tuple[str, dict[str, object]]
"""A tool name and its arguments."""


@dataclass(frozen=True)
class Page:
    """What a solver sees: the instruction, the DOM, and the actions taken so far this episode."""

    instruction: str
    dom: Dom
    history: list[Action]

    def quoted(self, index: int = 0) -> str:
        """The ``index``-th double-quoted string of the instruction."""
        found = re.findall(r'"([^"]*)"', self.instruction)
        if len(found) <= index:
            raise LookupError(f"no quoted text #{index} in {self.instruction!r}")
        return found[index]

    def one(self, tag: str | None = None, text: str | None = None) -> Node:
        found = self.dom.find(tag=tag, text=text)
        if not found:
            raise LookupError(f"no {tag or 'element'} {text!r} on the page")
        return found[0]

    def clicked(self, node: Node) -> bool:
        return ("click_element", {"ref": node.ref}) in self.history


def click(node: Node) -> Action:
    return "click_element", {"ref": node.ref}


def fill(page: Page, field: Node, text: str) -> Action | None:
    """The next action to make ``field`` hold ``text``: focus it, select what it holds, type; ``None`` when done."""
    if field.value == text:
        return None
    if not field.focused:
        return click(field)
    if field.value:
        return "press", {"key": "Control+A"}
    return "type", {"text": text}


def fill_then_submit(page: Page, fields: list[tuple[Node, str]], submit: Node) -> Action:
    for field, text in fields:
        action = fill(page, field, text)
        if action is not None:
            return action
    return click(submit)


def submit_button(page: Page) -> Node:
    return next(n for n in page.dom if n.tag == "button" and n.text.lower() in ("submit", "login"))


def inputs(page: Page) -> list[Node]:
    return [n for n in page.dom if n.tag in ("input_text", "input_password", "textarea")]


def labelled(page: Page, kind: str) -> dict[str, Node]:
    """Checkboxes or radios by the text that follows each."""
    out: dict[str, Node] = {}
    nodes = page.dom.nodes
    for i, node in enumerate(nodes):
        if node.tag == kind and i + 1 < len(nodes) and nodes[i + 1].text:
            out[nodes[i + 1].text] = node
    return out


# ----------------------------------------------------------------- solvers, one per task
def solve_click_button(page: Page) -> Action:
    return click(page.one("button", page.quoted()))


def solve_click_button_sequence(page: Page) -> Action:
    first, second = page.one("button", "ONE"), page.one("button", "TWO")
    return click(second if page.clicked(first) else first)


def solve_click_test(page: Page) -> Action:
    return click(page.one("button"))


def solve_click_test_2(page: Page) -> Action:
    return click(page.one("button", page.instruction.split()[-1].rstrip(".")))


def solve_click_link(page: Page) -> Action:
    return click(page.one("span", page.quoted()))


def solve_click_tab(page: Page) -> Action:
    return click(page.one("a", f"Tab #{page.instruction.rstrip('.').split('#')[-1]}"))


def solve_click_tab_2(page: Page) -> Action:
    links = page.dom.find(tag="span", text=page.quoted())
    if links:
        return click(links[0])
    tabs = [n for n in page.dom if n.tag == "a" and n.text.startswith("Tab #") and not page.clicked(n)]
    return click(tabs[0])


def _titlebar_close(page: Page) -> Node:
    """The dialog's close button: the button holding the text "Close"."""
    for i, node in enumerate(page.dom.nodes):
        if node.tag == "button" and any(n.text == "Close" for n in _subtree(page.dom, i)):
            return node
    raise LookupError("no dialog close button")


def _subtree(dom: Dom, index: int) -> list[Node]:
    depth, out = dom.nodes[index].depth, []
    for node in dom.nodes[index + 1:]:
        if node.depth <= depth:
            break
        out.append(node)
    return out


def solve_click_dialog(page: Page) -> Action:
    return click(_titlebar_close(page))


def solve_click_dialog_2(page: Page) -> Action:
    label = page.quoted()
    return click(_titlebar_close(page) if label.lower() == "x" else page.one("button", label))


def solve_click_collapsible(page: Page) -> Action:
    header = page.one("h3")  # the section starts collapsed: open it, then submit
    return click(page.one("button", "Submit") if page.clicked(header) else header)


def solve_click_checkboxes(page: Page) -> Action:
    match = re.match(r"Select (.*) and click Submit", page.instruction)
    wanted = set() if match is None or match[1] == "nothing" else {
        w.strip() for w in re.split(r",| and ", match[1]) if w.strip()}
    for text, box in labelled(page, "input_checkbox").items():
        if (text in wanted) != bool(box.value):
            return click(box)
    return click(submit_button(page))


def solve_click_option(page: Page) -> Action:
    match = re.match(r"Select (.*) and click Submit", page.instruction)
    radio = labelled(page, "input_radio").get(match[1] if match else "")
    if radio is None:
        raise LookupError("no such option")
    return click(submit_button(page)) if radio.value else click(radio)


WIDGETS = {"radio": "input_radio", "checkbox": "input_checkbox", "text": "input_text", "textarea": "textarea",
           "button": "button"}


def solve_click_widget(page: Page) -> Action:
    return click(page.one(WIDGETS[page.quoted()]))


def solve_focus_text(page: Page) -> Action | None:
    field = inputs(page)[0]
    return None if field.focused else click(field)


def solve_focus_text_2(page: Page) -> Action | None:
    index = int(re.search(r"(\d+)(?:st|nd|rd|th)", page.instruction)[1]) - 1  # type: ignore[index]
    field = inputs(page)[index]
    return None if field.focused else click(field)


def solve_enter_text(page: Page) -> Action:
    return fill_then_submit(page, [(inputs(page)[0], page.quoted())], submit_button(page))


def solve_enter_text_2(page: Page) -> Action:
    text = page.quoted()
    text = text.lower() if "lower case" in page.instruction else text.upper()
    return fill_then_submit(page, [(inputs(page)[0], text)], submit_button(page))


def solve_enter_password(page: Page) -> Action:
    password = page.quoted()
    return fill_then_submit(page, [(field, password) for field in inputs(page)], submit_button(page))


def solve_login_user(page: Page) -> Action:
    username, password = page.quoted(0), page.quoted(1)
    fields = inputs(page)
    return fill_then_submit(page, [(fields[0], username), (fields[1], password)], submit_button(page))


def solve_simple_arithmetic(page: Page) -> Action:
    a, op, b = next(n for n in page.dom if n.id == "math-problem").text.rstrip("= ").split()
    value = {"+": int(a) + int(b), "-": int(a) - int(b), "x": int(a) * int(b)}[op]
    return fill_then_submit(page, [(inputs(page)[0], str(value))], submit_button(page))


def solve_simple_algebra(page: Page) -> Action:
    left, right = next(n for n in page.dom if n.id == "math-problem").text.split("=")
    total, (a, op, b) = int(right), left.split()
    if a == "x":  # x + d = t, x - d = t
        value = total - int(b) if op == "+" else total + int(b)
    else:  # d + x = t, d - x = t
        value = total - int(a) if op == "+" else int(a) - total
    return fill_then_submit(page, [(inputs(page)[0], str(value))], submit_button(page))


SHAPE_BUTTONS = {"rect": "Rectangle", "circle": "Circle", "polygon": "Triangle"}


def solve_identify_shape(page: Page) -> Action:
    svg = next(i for i, n in enumerate(page.dom.nodes) if n.tag == "svg")
    shape = _subtree(page.dom, svg)[0]
    if shape.tag == "text":
        answer = "Number" if shape.text.isdigit() else "Letter"
    else:
        answer = SHAPE_BUTTONS[shape.tag]
    return click(page.one("button", answer))


def solve_navigate_tree(page: Page) -> Action:
    targets = [n for n in page.dom if n.tag == "span" and n.text == page.quoted()]
    if targets:
        return click(targets[0])
    hits = [n for n in page.dom if "expandable-hitarea" in n.classes and not page.clicked(n)]
    return click(hits[0])


Solver = Callable[[Page], "Action | None"]
SOLVERS: dict[str, Solver] = {
    "click-button": solve_click_button,
    "click-button-sequence": solve_click_button_sequence,
    "click-checkboxes": solve_click_checkboxes,
    "click-collapsible": solve_click_collapsible,
    "click-collapsible-nodelay": solve_click_collapsible,
    "click-dialog": solve_click_dialog,
    "click-dialog-2": solve_click_dialog_2,
    "click-link": solve_click_link,
    "click-option": solve_click_option,
    "click-tab": solve_click_tab,
    "click-tab-2": solve_click_tab_2,
    "click-test": solve_click_test,
    "click-test-2": solve_click_test_2,
    "click-widget": solve_click_widget,
    "enter-password": solve_enter_password,
    "enter-text": solve_enter_text,
    "enter-text-2": solve_enter_text_2,
    "enter-text-dynamic": solve_enter_text,
    "focus-text": solve_focus_text,
    "focus-text-2": solve_focus_text_2,
    "identify-shape": solve_identify_shape,
    "login-user": solve_login_user,
    "navigate-tree": solve_navigate_tree,
    "simple-algebra": solve_simple_algebra,
    "simple-arithmetic": solve_simple_arithmetic,
    "unicode-test": solve_click_button,
}
"""Task name → solver."""

SOLVED_TASKS = tuple(sorted(SOLVERS))
"""The tasks the reference policy has a solver for (``names="reference"``)."""


def _call(messages: list[Message], action: Action) -> Reply:
    turn = sum(m.role == "assistant" for m in messages)
    name, arguments = action
    return Reply(message=assistant(tool_calls=[ToolCall(id=f"call_{turn}", name=name,
                                                        arguments=json.dumps(arguments))]))


def instruction_of(messages: list[Message]) -> str:
    """The instruction the GUI env states in its opening message (``Instruction: ...``)."""
    opening = next((m.text for m in messages if m.role == "user"), "")
    first = opening.split("\n", 1)[0]
    return first.removeprefix("Instruction: ").strip()


def history_of(messages: list[Message]) -> list[Action]:
    """The actions the assistant has taken so far, as (name, arguments)."""
    out: list[Action] = []
    for m in messages:
        for call in m.tool_calls if m.role == "assistant" else []:
            try:
                out.append((call.name, json.loads(call.arguments)))
            except ValueError:
                continue
    return out


class ReferencePolicy:
    """Read the instruction and the latest DOM text, and take the next action of the task's solver."""

    name = "reference"

    async def act(self, messages: list[Message], tools: list[ToolSpec], *, task: Task) -> Reply:
        latest = next((m.text for m in reversed(messages) if m.role == "user"), "")
        dom = parse_dom(latest)
        if not dom.nodes:
            raise EnvError("the reference GUI policy reads the DOM text: use observation='dom' or 'both'")
        solver = SOLVERS.get(str(task.data.get("miniwob", task.id)))
        action: Action | None = None
        if solver is not None:
            try:
                action = solver(Page(instruction_of(messages), dom, history_of(messages)))
            except (LookupError, StopIteration, ValueError, TypeError, KeyError):
                action = None  # the solver found no target on this page
        return _call(messages, action or ("finish", {}))


class RandomClickPolicy:
    """Click a uniformly random point of the 160x210 task area every turn: the floor to beat."""

    name = "random"

    def __init__(self, seed: int = 0) -> None:
        self.rng = random.Random(seed)

    async def act(self, messages: list[Message], tools: list[ToolSpec], *, task: Task) -> Reply:
        from agentgym.envs.gui.page import HEIGHT, WIDTH

        x, y = round(self.rng.uniform(0, WIDTH), 1), round(self.rng.uniform(0, HEIGHT), 1)
        point: dict[str, object] = {"x": x, "y": y}
        return _call(messages, ("click", point))
