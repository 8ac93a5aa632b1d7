from agentgym import Message, Task, ToolCall, Trajectory, Turn, Usage, read_jsonl, write_jsonl
from agentgym.types import ImagePart, TextPart


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
