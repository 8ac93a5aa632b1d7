"""Export to Hugging Face datasets and parquet and back, field by field; the SFT view in TRL's SFTTrainer."""

from __future__ import annotations

import os

import pytest

from agentgym.types import ImagePart, Message, TextPart, ToolCall, Trajectory, Turn, Usage, read_jsonl
from agentgym.view.export import read_trajectories, sft_rows, to_dataset, write

from .conftest import agentgym


def every_field() -> Trajectory:
    """A trajectory in which every field, and every shape a message's content can take, is set."""
    png = bytes(range(256))
    return Trajectory(
        task_id="gui/7", env="code", policy="openai/gpt-x", seed=None,
        messages=[Message(role="system", content="be brief"),
                  Message(role="user", content=[TextPart(text="see:"), ImagePart(
                      image_url={"url": "data:image/png;base64,AA==", "detail": "low"})])],
        turns=[
            Turn(action=Message(role="assistant", content=None,
                                tool_calls=[ToolCall(id="a", name="python", arguments='{"code": "1/0"}'),
                                            ToolCall(id="b", name="nope", arguments="{not json")]),
                 observation=[Message(role="tool", tool_call_id="a", name="python", content="ZeroDivisionError"),
                              Message(role="tool", tool_call_id="b", name="nope",
                                      content=[TextPart(text="shot"), ImagePart.from_png(png)])],
                 reward=-0.25, tool_errors=["tool_raised", "malformed_json"], policy_seconds=1.5, env_seconds=0.25,
                 usage=Usage(prompt_tokens=120, completion_tokens=30, cost_usd=0.0012, retries=2),
                 info={"nested": {"list": [1, 2.5, None, "x"], "flag": True}}),
            Turn(action=Message(role="assistant", content="", name="bot"), observation=[],
                 usage=Usage(prompt_tokens=200, completion_tokens=5)),
            Turn(action=Message(role="assistant", content=[]),
                 observation=[Message(role="user", content="Call a tool.")]),
        ],
        reward=0.75, outcome_reward=1.0, reward_components={"z_last": 0.5, "a_first": 1.0},
        final_answer="def f():\n    return 1\n", attempts=[0.0, 1.0],
        usage_by_role={"user": Usage(prompt_tokens=9, completion_tokens=3, cost_usd=0.5, retries=1)},
        failed_usage=Usage(prompt_tokens=4, retries=3),
        outcome="truncated", failure="line one\nline two", seconds=12.5, sandbox_seconds=3.25, policy_seconds=7.5,
        info={"tests": [{"name": "t1", "passed": True}], "judge": {"reasoning": "ok", "attempts": 2}},
    )


@pytest.mark.parametrize("to", ["datasets", "parquet", "jsonl"])
def test_every_field_round_trips(real_runs, tmp_path, to):
    originals = [every_field(), *read_jsonl(real_runs["code"]), *read_jsonl(real_runs["search"])]
    dest = tmp_path / ("out.parquet" if to == "parquet" else "out.jsonl" if to == "jsonl" else "out")
    write(originals, dest, to)
    back = list(read_trajectories(dest))
    assert len(back) == len(originals)
    for a, b in zip(originals, back, strict=True):
        assert b.model_dump() == a.model_dump()  # every field, nested, with its type (None, "", [] apart)
    image = back[0].turns[0].observation[1].content[1]
    assert image == originals[0].turns[0].observation[1].content[1] and image.image_url["url"].startswith("data:")
    assert list(back[0].reward_components) == ["z_last", "a_first"]


def test_dataset_columns_are_typed_and_filterable(real_runs):
    ds = to_dataset([every_field(), *read_jsonl(real_runs["code"])])
    assert ds.features["turns"].feature["usage"]["prompt_tokens"].dtype == "int64"
    assert ds.features["seed"].dtype == "int64" and ds[0]["seed"] is None
    solved = ds.filter(lambda r: r["success"])
    assert len(solved) == 6  # every_field (outcome reward 1) and the five reference solutions
    assert ds[0]["prompt_tokens"] == 120 + 200 + 4 and ds[0]["num_turns"] == 3  # the turns' and the failed call's
    assert ds[1]["messages"][1]["content"].startswith("Complete the following Python function")
    assert ds[1]["turns"][0]["action"]["tool_calls"][0]["name"] == "python"


def test_export_cli_there_and_back(real_runs, tmp_path):
    there = agentgym("export", str(real_runs["code"]), "--to", "datasets", str(tmp_path / "ds"), cwd=tmp_path)
    assert there.returncode == 0, there.stderr
    assert "5 trajectories" in there.stdout
    back = agentgym("export", str(tmp_path / "ds"), "--to", "jsonl", str(tmp_path / "back.jsonl"), cwd=tmp_path)
    assert back.returncode == 0, back.stderr
    assert (tmp_path / "back.jsonl").read_text() == real_runs["code"].read_text()
    runs = agentgym("export", str(real_runs["code"].parent), "--to", "parquet", str(tmp_path / "all.parquet"),
                    cwd=tmp_path)
    assert runs.returncode == 0 and "10 trajectories" in runs.stdout  # a folder of runs: both
    kept = (tmp_path / "back.jsonl").read_text()
    again = agentgym("export", str(tmp_path / "ds"), "--to", "jsonl", str(tmp_path / "back.jsonl"), cwd=tmp_path)
    assert again.returncode == 2 and "exists; pass --force" in again.stderr
    assert (tmp_path / "back.jsonl").read_text() == kept  # a mistyped DEST loses nothing
    wrong = agentgym("export", str(real_runs["code"]), "--to", "csv", str(tmp_path / "x"), cwd=tmp_path)
    assert wrong.returncode == 2 and "expected one of datasets, parquet, jsonl" in wrong.stderr
    import pyarrow as pa
    import pyarrow.parquet as pq

    pq.write_table(pa.table({"a": [1, 2]}), tmp_path / "other.parquet")
    foreign = agentgym("export", str(tmp_path / "other.parquet"), "--to", "jsonl", str(tmp_path / "o.jsonl"),
                       cwd=tmp_path)
    assert foreign.returncode == 2 and "is not an agentgym trajectory export" in foreign.stderr


def failed_copy(t: Trajectory) -> Trajectory:
    return t.model_copy(update={"task_id": t.task_id + "/failed", "outcome_reward": 0.0, "reward": 0.0})


def test_sft_rows_select_and_shape(real_runs):
    episodes = read_jsonl(real_runs["code"])
    crashed = episodes[0].model_copy(update={"outcome": "error", "failure": "SandboxError: died"})
    every = sft_rows([*episodes, failed_copy(episodes[1]), crashed])
    assert len(every) == 6  # the crashed episode stops mid-way: never a training example
    assert len(sft_rows([*episodes, failed_copy(episodes[1])], successful_only=True)) == 5
    row = every[0]
    # It ends with the model's message: the answer to the last call is the env's text, nothing to learn.
    assert [m["role"] for m in row["messages"]] == ["system", "user", "assistant", "tool", "assistant"]
    call = row["messages"][2]["tool_calls"][0]
    assert call["type"] == "function" and call["function"]["name"] == "python"
    assert "def " in call["function"]["arguments"]["code"]  # a mapping, as chat templates read it
    assert [t["function"]["name"] for t in row["tools"]] == ["python", "submit"]


def test_sft_view_trains_one_step_in_sfttrainer(real_runs, tmp_path):
    pytest.importorskip("trl")
    import torch
    from datasets import load_from_disk
    from transformers.utils.chat_template_utils import render_jinja_template
    from trl import SFTConfig, SFTTrainer
    from trl.chat_template_utils import qwen3_chat_template

    from agentgym.trl.tiny import tiny_model, tiny_tokenizer

    torch.set_num_threads(1)
    os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")
    out = tmp_path / "sft"
    done = agentgym("export", str(real_runs["code"]), "--to", "datasets", str(out), "--for", "sft",
                    "--successful-only", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    dataset = load_from_disk(str(out))
    assert len(dataset) == 5 and set(dataset.column_names) >= {"messages", "tools"}
    rendered, _ = render_jinja_template(conversations=[r["messages"] for r in dataset],
                                        tools=dataset[0]["tools"], chat_template=qwen3_chat_template)
    assert "<tool_call>" in rendered[0] and '"name": "python"' in rendered[0]
    tokenizer = tiny_tokenizer(rendered * 4)
    model = tiny_model(tokenizer)
    before = [p.detach().clone() for p in model.parameters()]
    config = SFTConfig(output_dir=str(tmp_path / "trainer"), max_steps=1, per_device_train_batch_size=2,
                       learning_rate=1e-3, max_length=1024, use_cpu=True, bf16=False, report_to="none",
                       save_strategy="no", logging_steps=1, disable_tqdm=True, seed=0)
    trainer = SFTTrainer(model=model, args=config, train_dataset=dataset, processing_class=tokenizer)
    trainer.train()
    losses = [log["loss"] for log in trainer.state.log_history if "loss" in log]
    assert trainer.state.global_step == 1 and len(losses) == 1 and 0 < losses[0] < 100
    assert any(not torch.equal(a, b) for a, b in zip(before, model.parameters(), strict=True))
