import pytest

from agentgym import Message, Task, ToolCall, Trajectory, Turn, Usage, read_jsonl, write_jsonl
from agentgym.errors import DataError
from agentgym.types import ImagePart, TextPart, read_tasks


def test_trajectory_jsonl_round_trip_is_lossless(tmp_path):
    traj = Trajectory(
        task_id="t/1", env="code", policy="p", seed=3,
        messages=[Message(role="system", content="s"),
                  Message(role="user", content=[TextPart(text="look"), ImagePart.from_png(b"\x89PNG")])],
        turns=[Turn(action=Message(role="assistant", content=None,
                                   tool_calls=[ToolCall(id="c", name="f", arguments='{"a": [1, "é"]}')]),
                    observation=[Message(role="tool", tool_call_id="c", name="f", content="out")],
                    reward=0.25, tool_errors=["unknown_tool"], policy_seconds=0.5, env_seconds=0.1,
                    usage=Usage(prompt_tokens=3, completion_tokens=4, cost_usd=0.001, retries=2))],
        reward=1.25, outcome_reward=1.0, reward_components={"tests": 1.0}, outcome="terminated",
        sandbox_seconds=1.5, info={"tests": [{"passed": True}]},
    )
    path = tmp_path / "t.jsonl"
    write_jsonl(path, [traj, traj])
    with open(path, "a") as f:
        f.write('{"task_id": "torn')  # a run killed mid-write
    back = read_jsonl(path)
    assert back == [traj, traj]
    assert back[0].usage.retries == 2 and back[0].tool_errors == {"unknown_tool": 1}
    assert back[0].all_messages()[2].tool_calls[0].name == "f"


def test_openai_round_trip():
    msg = Message(role="assistant", content="hi", tool_calls=[ToolCall(id="1", name="f", arguments="{}")])
    wire = msg.to_openai()
    assert wire["tool_calls"][0] == {"id": "1", "type": "function", "function": {"name": "f", "arguments": "{}"}}
    assert Message.from_openai(wire) == msg
    assert Task(id="a", prompt="p").data == {}


def test_a_bad_row_inside_a_trajectory_file_is_named_not_skipped(tmp_path):
    good = Trajectory(task_id="a", env="e").model_dump_json()
    path = tmp_path / "t.jsonl"
    path.write_text(f"{good}\n{{\"task_id\": 3}}\n{good}\n")
    with pytest.raises(DataError, match=r"t.jsonl:2: not a trajectory: "):
        read_jsonl(path)


@pytest.mark.parametrize("lines, expected", [
    ([b'{"id": "a", "prompt": "p"}', b'{"id": "b", "prompt": "p"'],
     "tasks.jsonl:2: not valid JSON: Expecting ',' delimiter (column 26)"),
    ([b'{"id": 3, "prompt": "p"}'], "tasks.jsonl:1: id: Input should be a valid string (got 3)"),
    ([b'{"id": "a", "prompt": null}'], "tasks.jsonl:1: prompt: Input should be a valid string (got null)"),
    ([b'{"id": "a"}'], "tasks.jsonl:1: missing field 'prompt'"),
    ([b"", b"[1, 2]"], "tasks.jsonl:2: expected a JSON object, got an array [1, 2]"),
    ([b'{"id": "a", "prompt": "caf\xe9"}'], "tasks.jsonl:1: not UTF-8 text (byte 0xe9 at column 27)"),
    ([b'{"id": "a", "prompt": "p"}', b'{"id": "a", "prompt": "q"}'],
     "tasks.jsonl:2: duplicate task id 'a' (first on line 1)"),
])
def test_task_file_errors_name_the_file_and_line(tmp_path, lines, expected):
    path = tmp_path / "tasks.jsonl"
    path.write_bytes(b"\n".join(lines) + b"\n")
    with pytest.raises(DataError) as caught:
        read_tasks(path)
    assert str(caught.value) == f"{tmp_path}/{expected}"


def test_task_file_round_trip(tmp_path):
    tasks = [Task(id="a", prompt="p", data={"answers": ["x"]}), Task(id="b", prompt="q", system="s")]
    path = tmp_path / "tasks.jsonl"
    path.write_text("".join(t.model_dump_json() + "\n\n" for t in tasks))
    assert read_tasks(path) == tasks
