"""Action-prediction records from trajectories, and the offline gui-predict env that scores one action.

No browser here: the records are cut from a trajectory written by hand, as the GUI env writes them.
A hosted vision model is played by FakeOpenAI over real HTTP through the CLI, which shows the
screenshot reaching the wire as an OpenAI ``image_url`` part.
"""

import io
import json

import pytest
from PIL import Image

from agentgym.envs.gui.dataset import read_records, records_of, write_records
from agentgym.envs.gui.observe import dom_text
from agentgym.envs.gui.predict import GUIPredictEnv
from agentgym.errors import DataError
from agentgym.evaluation import evaluate
from agentgym.testing import FakeOpenAI
from agentgym.testing.fake_openai import completion, tool_call
from agentgym.types import ImagePart, Message, TextPart, ToolCall, Trajectory, Turn, assistant

from ..evaluation.helpers import run_cli
from .test_observe import element


def png(colour: str) -> bytes:
    buffer = io.BytesIO()
    Image.new("RGB", (160, 210), colour).save(buffer, format="PNG")
    return buffer.getvalue()


def form(focused: bool) -> dict:
    return element(1, "BODY", (0, 0, 160, 210), [
        element(4, "INPUT_text", (34, 52, 117, 21), id="tt", value="", focused=focused),
        element(6, "BUTTON", (5, 87, 101, 31), text="Submit"),
    ])


def page_message(heading: str, dom: dict, colour: str) -> Message:
    return Message(role="user", content=[TextPart(text=f"{heading}\n{dom_text(dom)}"), ImagePart.from_png(png(colour))])


def trajectory(success: bool = True) -> Trajectory:
    """Two turns as the GUI env records them: click the field, then type into it."""
    return Trajectory(
        task_id="enter-text", env="agentgym/gui-v0", seed=7, outcome_reward=1.0 if success else -1.0,
        info={"instruction": 'Enter "Myron" and press Submit.', "miniwob_seed": 7},
        messages=[Message(role="system", content="..."),
                  page_message('Instruction: Enter "Myron"', form(False), "white")],
        turns=[
            Turn(action=assistant(tool_calls=[ToolCall(id="c0", name="click_element", arguments='{"ref": 4}')]),
                 observation=[Message(role="tool", tool_call_id="c0", content="Clicked [4]."),
                              page_message("The page now:", form(True), "grey")]),
            Turn(action=assistant(tool_calls=[ToolCall(id="c1", name="type", arguments='{"text": "Myron"}')])),
        ])


def test_records_pair_each_action_with_the_page_it_was_taken_on(tmp_path):
    records = list(records_of(trajectory()))
    assert [r["id"] for r in records] == ["enter-text/s7/0", "enter-text/s7/1"]
    first, second = records
    assert first["action"] == {"type": "click", "name": "click_element", "arguments": '{"ref": 4}', "ref": 4,
                               "box": [34, 52, 117, 21], "text": None, "key": None}
    assert first["dom"] == dom_text(form(False)) and second["dom"] == dom_text(form(True))  # the page after it
    assert first["screenshot"] != second["screenshot"]         # each its own screenshot
    assert first["screenshot"].startswith("data:image/png;base64,")
    assert second["action"]["type"] == "type" and second["action"]["text"] == "Myron"
    assert first["instruction"] == 'Enter "Myron" and press Submit.'
    assert list(records_of(trajectory(success=False))) == []   # only the reference's successes are gold

    path = tmp_path / "actions.jsonl"
    assert write_records(path, [trajectory(), trajectory(success=False)]) == 2
    import datasets

    loaded = datasets.load_dataset("json", data_files=str(path), split="train")
    assert loaded.num_rows == 2 and loaded[0]["action"]["box"] == [34, 52, 117, 21]
    assert loaded[1]["action"]["text"] == "Myron" and loaded[0]["screenshot"] == first["screenshot"]


def test_bad_records_are_refused_naming_the_line(tmp_path):
    path = tmp_path / "bad.jsonl"
    good = next(records_of(trajectory()))
    path.write_text(json.dumps(good) + "\n" + json.dumps({"id": "x"}) + "\n")
    with pytest.raises(DataError, match=r"bad.jsonl:2: not a GUI action record: missing task"):
        read_records(path)
    path.write_text(json.dumps({**good, "action": {**good["action"], "box": None}}) + "\n")
    with pytest.raises(DataError, match=r":1: action must have a known type, and a click a 4-number box"):
        read_records(path)
    path.write_text((json.dumps(good) + "\n") * 2)
    with pytest.raises(DataError, match=r":2: duplicate record id 'enter-text/s7/0' \(first on line 1\)"):
        read_records(path)


@pytest.fixture
def records(tmp_path):
    path = tmp_path / "actions.jsonl"
    write_records(path, [trajectory()])
    return path


async def test_reference_predicts_the_gold_actions_and_random_clicks_do_not(records):
    from agentgym.envs.gui.policies import RandomClickPolicy, ReferencePolicy

    tasks = GUIPredictEnv.load_tasks(records)
    summary, reference = await evaluate("gui-predict", ReferencePolicy(), tasks=tasks, progress=False)
    assert summary.successes == 2 and all(t.outcome == "terminated" and len(t.turns) == 1 for t in reference)
    assert reference[0].reward_components == {"action_type": 1.0, "click_in_box": 1.0, "format": 1.0}
    summary, random = await evaluate("gui-predict", RandomClickPolicy(), tasks=tasks, progress=False)
    assert summary.successes == 0
    assert random[1].reward_components["action_type"] == 0.0   # a click where typing was due


def test_a_hosted_model_sees_the_screenshot_on_the_wire(records, tmp_path, capsys, monkeypatch):
    """`agentgym eval gui-predict --model openai/...`: the image part reaches the server unchanged."""
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    expected = [r["screenshot"] for r in map(json.loads, records.read_text().splitlines())]

    def model(request: dict) -> dict:
        return completion(tool_calls=[tool_call("click", {"x": 50, "y": 60})])

    out = tmp_path / "run.jsonl"
    with FakeOpenAI(model) as server:
        code, stdout, _ = run_cli(capsys, "eval", "gui-predict", "--model", "openai/fake-model", "--api-base",
                                  server.base_url, "--tasks", str(records), "--out", str(out), "--concurrency", "1")
    assert code == 0, stdout
    seen = []
    for request in server.requests:
        (user,) = [m for m in request["messages"] if m["role"] == "user"]
        parts = {p["type"]: p for p in user["content"]}
        assert parts["text"]["text"].startswith("Instruction: ")
        seen.append(parts["image_url"]["image_url"]["url"])
        assert {t["function"]["name"] for t in request["tools"]} == {
            "click", "click_element", "type", "press", "scroll", "finish"}
    assert sorted(seen) == sorted(expected)
    assert "reward[click_in_box]  0.5000" in stdout   # (50, 60) lies in the field's box, not in the typing step's
