"""Action-prediction data: (screenshot, instruction, DOM, gold action with the target's box) per step.

The records come from the reference policy's successful GUI episodes: every turn it took is one
record holding the page it acted on (the observation before the turn) and the action it took, with
the box of the element a click targeted, read from that same DOM. That is the data UI-R1 trains on
(one screen, one instruction, one action). The file is JSON lines with one flat schema, so
``datasets.load_dataset("json", data_files=PATH)`` loads it as is::

    {"id": "click-button/s3/0", "task": "click-button", "seed": 3, "step": 0,
     "instruction": "Click on the \\"Ok\\" button.", "dom": "[2] div #wrap @0,0 160x210\\n...",
     "screenshot": "data:image/png;base64,...",
     "action": {"type": "click", "name": "click_element", "arguments": "{\\"ref\\": 6}",
                "ref": 6, "box": [2, 74, 34, 21], "text": null, "key": null}}

``arguments`` is the call's JSON text (its keys differ between actions, which a columnar schema
would otherwise spread over many null columns).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from agentgym.envs.gui.observe import parse_dom
from agentgym.envs.gui.rewards import ACTION_TYPES
from agentgym.errors import DataError
from agentgym.types import ImagePart, Message, Task, Trajectory, iter_json_lines

RECORD_FIELDS = ("id", "task", "seed", "step", "instruction", "dom", "screenshot", "action")


def _page_of(message: Message) -> tuple[str, str | None]:
    """The DOM text (heading line dropped) and the screenshot data URI of an observation message."""
    text = message.text
    dom = text.split("\n", 1)[1] if "\n" in text else ""
    image = next((p.image_url["url"] for p in message.content or [] if isinstance(p, ImagePart)), None) \
        if isinstance(message.content, list) else None
    return dom, image


def gold_action(name: str, arguments: dict[str, Any], dom_text: str) -> dict[str, Any] | None:
    """The gold action of one call, with the target's box for clicks; ``None`` for what is not an action."""
    if name not in ACTION_TYPES:
        return None
    action: dict[str, Any] = {"type": ACTION_TYPES[name], "name": name, "arguments": json.dumps(arguments),
                              "ref": None, "box": None, "text": None, "key": None}
    if name == "click_element":
        node = parse_dom(dom_text).get(arguments.get("ref"))  # type: ignore[arg-type]
        if node is None:
            return None
        action.update(ref=node.ref, box=list(node.box))
    elif name == "click":
        node = next((n for n in reversed(parse_dom(dom_text).nodes) if n.contains(arguments["x"], arguments["y"])),
                    None)  # the innermost element under the point
        if node is None:
            return None
        action.update(ref=node.ref, box=list(node.box))
    elif name == "type":
        action["text"] = arguments.get("text")
    elif name == "press":
        action["key"] = arguments.get("key")
    return action


def records_of(trajectory: Trajectory) -> Iterator[dict[str, Any]]:
    """One record per action of a successful GUI trajectory (``finish`` calls are not actions to learn)."""
    if not trajectory.success:
        return
    seed = trajectory.info.get("miniwob_seed", trajectory.seed)
    page = trajectory.messages[-1]
    for step, turn in enumerate(trajectory.turns):
        dom, image = _page_of(page)
        for call in turn.action.tool_calls[:1]:
            try:
                arguments = json.loads(call.arguments)
            except ValueError:
                continue
            action = gold_action(call.name, arguments, dom) if call.name != "finish" else None
            if action is not None:
                yield {"id": f"{trajectory.task_id}/s{seed}/{step}", "task": trajectory.task_id, "seed": seed,
                       "step": step, "instruction": trajectory.info.get("instruction", ""), "dom": dom,
                       "screenshot": image, "action": action}
        users = [m for m in turn.observation if m.role == "user"]
        if users:
            page = users[-1]


def write_records(path: str | Path, trajectories: Iterable[Trajectory]) -> int:
    """Write the records of ``trajectories`` to a JSONL file; return how many."""
    n = 0
    with open(path, "w", encoding="utf-8") as f:
        for trajectory in trajectories:
            for record in records_of(trajectory):
                f.write(json.dumps(record, ensure_ascii=False) + "\n")
                n += 1
    return n


def read_records(path: str | Path) -> list[Task]:
    """The records of a dataset file as ``gui-predict`` tasks (the gold action in ``data``, never shown).

    Raises:
        DataError: A line is not a record, or repeats an id; the message names the file and line.
    """
    tasks: list[Task] = []
    first_line: dict[str, int] = {}
    for lineno, row in iter_json_lines(path):
        if row is None:
            continue
        missing = [f for f in RECORD_FIELDS if not isinstance(row, dict) or f not in row]
        if missing:
            raise DataError(f"{path}:{lineno}: not a GUI action record: missing {', '.join(missing)}")
        action = row["action"]
        if not isinstance(action, dict) or action.get("type") not in set(ACTION_TYPES.values()) or (
                action["type"] == "click" and not (isinstance(action.get("box"), list) and len(action["box"]) == 4)):
            raise DataError(f"{path}:{lineno}: action must have a known type, and a click a 4-number box")
        record_id = str(row["id"])
        if record_id in first_line:
            first = first_line[record_id]
            raise DataError(f"{path}:{lineno}: duplicate record id {record_id!r} (first on line {first})")
        first_line[record_id] = lineno
        tasks.append(Task(id=record_id, prompt=str(row["instruction"]),
                          data={"gold": action, "dom": row["dom"], "screenshot": row["screenshot"],
                                "miniwob": row["task"]}))
    return tasks
