"""The DOM text a model reads, read back by policies; MiniWoB's reward; UI-R1's action components."""

import json

import pytest

from agentgym.envs.gui import dom_text, parse_dom, score_action, task_reward
from agentgym.envs.gui.tasks import miniwob_task, task_names
from agentgym.errors import EnvError
from agentgym.rewards import Episode
from agentgym.types import Message, Task, Trajectory, Turn


def element(ref, tag, box, children=(), **extra):
    left, top, width, height = box
    return {"ref": ref, "tag": tag, "left": left, "top": top, "width": width, "height": height,
            "children": list(children), "id": "", "classes": "", **extra}


PAGE = element(1, "BODY", (0, 0, 160, 210), [
    element(2, "DIV", (0, 50, 160, 80), [  # a bare container: no line of its own
        element(3, "BUTTON", (2.4, 74.6, 33.5, 21), text='Say "hi" — ok', classes="primary big extra"),
        element(4, "INPUT_text", (34, 52, 117, 21), id="tt", value="typed", focused=True),
        element(5, "INPUT_checkbox", (6, 55, 20, 13), value=False),
        {"ref": -1, "tag": "t", "left": 29, "top": 59, "width": 20, "height": 11, "children": [], "text": "USa"},
        element(6, "OPTION", (3, 177, 148, 17), text="Christal", value=False, hidden=True),
        element(7, "circle", (40, 90, 14, 14), color="#ff0000"),
        element(8, "DIV", (60, 90, 50, 50), color="red; font-size: 99px"),  # not a colour the page script gives
    ]),
])


def test_dom_text_names_elements_and_reads_back_exactly():
    text = dom_text(PAGE)
    lines = text.splitlines()
    assert lines[0] == '[3] button .primary .big "Say \\"hi\\" — ok" @2,75 34x21'   # two classes at most
    assert '[4] input_text #tt value="typed" focused @34,52 117x21' in lines
    assert "[5] input_checkbox checked=false @6,55 20x13" in lines
    assert all("[2]" not in line and "[1]" not in line for line in lines)
    dom = parse_dom("Instruction: something\n" + text)
    assert '[6] option "Christal" checked=false hidden @3,177 148x17' in lines
    assert [n.ref for n in dom] == [3, 4, 5, -1, 6, 7, 8]
    assert "[7] circle color=#ff0000 @40,90 14x14" in lines and "[8] div @60,90 50x50" in lines
    assert dom.get(7).color == "#ff0000" and dom.get(8).color == "" and dom.get(3).color == ""
    assert dom.get(6).hidden and not any(dom.get(ref).hidden for ref in (3, 4, 5, -1))
    button = dom.get(3)
    assert button.text == 'Say "hi" — ok' and button.classes == ("primary", "big") and button.box == (2, 75, 34, 21)
    assert dom.get(4).value == "typed" and dom.get(4).focused and dom.get(4).id == "tt"
    assert dom.get(5).value is False and dom.get(-1).text == "USa"
    assert button.contains(*button.center) and not button.contains(100, 100)


def test_tasks_come_from_the_wheel():
    names = task_names()
    assert len(names) > 120 and "click-button" in names and "enter-text" in names
    assert miniwob_task("click-button").data == {"miniwob": "click-button"}
    with pytest.raises(EnvError, match="did you mean click-button"):
        miniwob_task("click-buton")


def _episode(state=None, turns=()):
    return Episode(Task(id="t", prompt="p"), Trajectory(task_id="t", env="gui", turns=list(turns)), state=state)


def test_task_reward_is_the_pages_raw_reward_once_it_judged():
    won = {"done": True, "raw_reward": 1.0, "reward": 0.8, "reason": None}
    assert task_reward(_episode(won)).value == 1.0
    assert task_reward(_episode(won)).components == {"task": 1.0, "done": 1.0, "time_scaled": 0.8}
    lost = {"done": True, "raw_reward": -1.0, "reward": -1.0, "reason": "wrong"}
    assert task_reward(_episode(lost)).value == -1.0
    unjudged = {"done": False, "raw_reward": 0.0, "reward": 0.0, "reason": None}
    assert task_reward(_episode(unjudged)).value == -1.0  # no give-up in MiniWoB: quitting is a failure
    assert task_reward(_episode(unjudged)).components == {"task": -1.0, "done": 0.0, "time_scaled": -1.0}
    assert task_reward(_episode({**unjudged, "unjudged_reward": 0.0})).value == 0.0  # the env's lenient option
    # a saved trajectory is scored offline from the status its last action recorded
    turn = Turn(action=Message(role="assistant"), info={"miniwob": won})
    assert task_reward(_episode(None, [turn])).value == 1.0
    assert task_reward(_episode(None, [])).value == -1.0


GOLD_CLICK = {"type": "click", "ref": 3, "box": [2, 75, 34, 21]}
DOM = dom_text(PAGE)


@pytest.mark.parametrize(("calls", "expected"), [
    ([{"name": "click", "arguments": {"x": 10, "y": 80}}], (1, 1, 1)),          # inside the box
    ([{"name": "click", "arguments": {"x": 100, "y": 150}}], (1, 1, 0)),        # right type, outside
    ([{"name": "click_element", "arguments": {"ref": 3}}], (1, 1, 1)),          # the target itself
    ([{"name": "click_element", "arguments": {"ref": 4}}], (1, 1, 0)),          # another element
    ([{"name": "click_element", "arguments": {"ref": 99}}], (1, 1, 0)),         # no such element
    ([{"name": "type", "arguments": {"text": "x"}}], (1, 0, 0)),                 # wrong type
    ([{"name": "click", "arguments": {"x": 10, "y": 80}}] * 2, (0, 0, 0)),      # two actions: bad format
    ([{"name": "open", "arguments": {}}], (0, 0, 0)),                           # not an action tool
    ([], (0, 0, 0)),
])
def test_ui_r1_components_for_a_click(calls, expected):
    got = score_action(calls, GOLD_CLICK, DOM)
    assert (got["format"], got["action_type"], got["click_in_box"]) == expected


def test_ui_r1_components_for_typing_and_keys():
    gold = {"type": "type", "text": "Myron"}
    assert score_action([{"name": "type", "arguments": {"text": "Myron"}}], gold)["click_in_box"] == 1
    assert score_action([{"name": "type", "arguments": {"text": "myron"}}], gold)["click_in_box"] == 0
    key = {"type": "press", "key": "Enter"}
    assert score_action([{"name": "press", "arguments": {"key": "Enter"}}], key) == \
        {"format": 1.0, "action_type": 1.0, "click_in_box": 1.0}


def test_a_predicted_scroll_scores_only_in_the_gold_direction_and_about_its_amount():
    gold = {"type": "scroll", "arguments": json.dumps({"dx": 0, "dy": 300})}

    def box(dx: float, dy: float) -> float:
        return score_action([{"name": "scroll", "arguments": {"dx": dx, "dy": dy}}], gold)["click_in_box"]

    assert box(0, 300) == box(10, 200) == box(0, 450) == 1.0
    assert box(0, -300) == 0.0  # the other way
    assert box(0, 1000) == box(0, 100) == 0.0  # far more, or far less
    assert box(200, 300) == 0.0  # sideways too
    assert box(0, 0) == 0.0  # no scroll at all


def test_a_status_read_after_a_link_to_a_fragment_is_still_the_tasks_page() -> None:
    from agentgym.envs.gui.page import Status, task_url

    raw = {"done": True, "reward": 0.8, "raw_reward": 1.0, "reason": None}
    assert Status.read({**raw, "href": task_url("search-engine") + "#"}, "search-engine").broken is None
    elsewhere = Status.read({**raw, "href": task_url("click-dialog")}, "search-engine")
    assert elsewhere.broken is not None and elsewhere.reward == -1.0
    assert Status.read({**raw, "href": None}, "search-engine").broken is not None
