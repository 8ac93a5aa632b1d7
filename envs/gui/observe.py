"""The DOM as compact text with element refs, and back: what the model reads and what policies parse.

``core.getDOMInfo()`` gives the page's visible elements as a tree with a ref each (negative refs are
runs of text inside an element with other children). :func:`dom_text` writes one line per element
worth naming, indented by depth::

    [4] button "Submit" @17,104 101x31
    [5] input_text #tt value="" focused @17,64 128x21
    [6] input_checkbox #ch0 checked=false @6,55 20x13
    [7] circle color=#ff0000 @40,90 14x14

``[ref]`` is what ``click_element`` takes; ``@x,y wxh`` is the box in CSS pixels of the 160x210
task area (what ``click(x, y)`` aims at); ``hidden`` marks one scrolled out of its container's view (its
box is where it would be, and a click there lands on whatever is shown there); ``color=#rrggbb`` is the fill
of an SVG shape or the background of a plain coloured box. Strings are JSON, so any text reads back exactly.
:func:`parse_dom` reads that text back into :class:`Node` objects: the reference policy finds its
targets in the same text a model gets, not in anything the model cannot see.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

_CONTAINERS = frozenset({"BODY", "DIV", "SPAN", "FORM", "P", "TABLE", "TBODY", "THEAD", "TR", "UL", "OL", "LABEL"})
_MAX_CLASSES = 2
_COLOR = re.compile(r"#[0-9a-f]{6}")


@dataclass(frozen=True)
class Node:
    """One element (or text run) of the DOM text."""

    ref: int
    tag: str
    box: tuple[int, int, int, int]
    text: str = ""
    id: str = ""
    classes: tuple[str, ...] = ()
    value: str | bool | None = None
    focused: bool = False
    depth: int = 0
    hidden: bool = False
    """Out of view: its box lies outside a scrolled container's visible box (scroll it into view to click it)."""
    color: str = ""
    """The colour it shows, ``#rrggbb``: an SVG shape's fill, a plain box's background ("" where none)."""

    @property
    def center(self) -> tuple[float, float]:
        x, y, w, h = self.box
        return x + w / 2, y + h / 2

    def contains(self, x: float, y: float) -> bool:
        bx, by, bw, bh = self.box
        return bx <= x <= bx + bw and by <= y <= by + bh


@dataclass
class Dom:
    """A parsed DOM text: its nodes in document order, findable by ref."""

    nodes: list[Node] = field(default_factory=list)

    def __iter__(self) -> Iterator[Node]:
        return iter(self.nodes)

    def get(self, ref: int) -> Node | None:
        return next((n for n in self.nodes if n.ref == ref), None)

    def find(self, *, tag: str | None = None, text: str | None = None) -> list[Node]:
        """Nodes whose tag starts with ``tag`` (case-insensitive) and whose text equals ``text``."""
        return [n for n in self.nodes
                if (tag is None or n.tag.lower().startswith(tag.lower())) and (text is None or n.text == text)]


def _named(info: dict[str, Any]) -> bool:
    """Whether an element earns a line: anything but a bare container (no text, id or value) that has children."""
    if info.get("text") or info.get("id") or "value" in info:
        return True
    return not (info["tag"] in _CONTAINERS and info.get("children"))


def _line(info: dict[str, Any], depth: int) -> str:
    parts = [f"[{info['ref']}]", info["tag"].lower()]
    if info.get("id"):
        parts.append(f"#{info['id']}")
    classes = str(info.get("classes") or "").split()[:_MAX_CLASSES] if isinstance(info.get("classes"), str) else []
    parts += [f".{c}" for c in classes]
    if info.get("text"):
        parts.append(json.dumps(info["text"], ensure_ascii=False))
    if "value" in info:
        value = info["value"]
        parts.append(f"checked={'true' if value else 'false'}" if isinstance(value, bool)
                     else f"value={json.dumps(str(value), ensure_ascii=False)}")
    if isinstance(info.get("color"), str) and _COLOR.fullmatch(info["color"]):
        parts.append(f"color={info['color']}")
    if info.get("focused"):
        parts.append("focused")
    if info.get("hidden"):
        parts.append("hidden")
    box = [round(info[k]) for k in ("left", "top", "width", "height")]
    parts.append(f"@{box[0]},{box[1]} {box[2]}x{box[3]}")
    return "  " * depth + " ".join(parts)


def dom_text(info: dict[str, Any] | None) -> str:
    """The DOM tree of ``core.getDOMInfo()`` as compact text, one line per named element."""
    lines: list[str] = []

    def walk(node: dict[str, Any], depth: int) -> None:
        named = _named(node)
        if named:
            lines.append(_line(node, depth))
        for child in node.get("children") or []:
            walk(child, depth + 1 if named else depth)

    if info:
        walk(info, 0)
    return "\n".join(lines)


_STRING = r'"(?:[^"\\]|\\.)*"'
_LINE = re.compile(
    r"^(?P<indent> *)\[(?P<ref>-?\d+)\] (?P<tag>\S+)"
    r"(?: #(?P<id>\S+))?(?P<classes>(?: \.\S+)*)"
    rf"(?: (?P<text>{_STRING}))?"
    rf"(?: value=(?P<value>{_STRING})| checked=(?P<checked>true|false))?"
    r"(?: color=(?P<color>#[0-9a-f]{6}))?(?P<focused> focused)?(?P<hidden> hidden)?"
    r" @(?P<x>-?\d+),(?P<y>-?\d+) (?P<w>\d+)x(?P<h>\d+)$"
)


def parse_dom(text: str) -> Dom:
    """Read :func:`dom_text` back; lines that are not element lines (a heading, blank lines) are skipped."""
    nodes = []
    for line in text.splitlines():
        m = _LINE.match(line)
        if m is None:
            continue
        value: str | bool | None = None
        if m["value"] is not None:
            value = json.loads(m["value"])
        elif m["checked"] is not None:
            value = m["checked"] == "true"
        nodes.append(Node(
            ref=int(m["ref"]), tag=m["tag"], text=json.loads(m["text"]) if m["text"] else "",
            id=m["id"] or "", classes=tuple(c for c in m["classes"].split(" .") if c),
            value=value, focused=bool(m["focused"]), hidden=bool(m["hidden"]), color=m["color"] or "",
            depth=len(m["indent"]) // 2,
            box=(int(m["x"]), int(m["y"]), int(m["w"]), int(m["h"])),
        ))
    return Dom(nodes)
