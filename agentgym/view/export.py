"""Trajectories as Hugging Face datasets and parquet, and back, losslessly; and a view for SFT.

The dataset has one row per episode with typed, nested columns, so that it can be filtered and
browsed like any dataset (``ds.filter(lambda r: r["success"])``): messages and turns are lists of
structs, reward components a list of ``{name, value}``. Only what has no fixed shape is a JSON
string: ``info`` (the episode's and each turn's) and an image part's ``image_url``. A message keeps
``content`` for text and ``content_parts`` for multi-part content, so text, parts and ``None``
stay apart. ``success``, ``num_turns`` and the token and cost totals are derived columns for
convenience; reading back ignores them. :func:`to_rows` and :func:`from_row` are inverse:
``Trajectory`` → row → ``Trajectory`` gives an equal object, field by field.

``sft_rows`` is a different, lossy view for training: chat messages and the env's tools as function
specs, the format TRL's ``SFTTrainer`` and transformers' chat templates read (``messages`` plus a
``tools`` column; see :func:`sft_message`).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any, Literal

from agentgym.errors import DataError
from agentgym.types import Message, ToolCall, Trajectory, iter_jsonl, write_jsonl
from agentgym.view.call_ids import template_call_ids

Format = Literal["datasets", "parquet", "jsonl"]
DERIVED = ("success", "num_turns", "prompt_tokens", "completion_tokens", "cost_usd")


def features() -> Any:
    """The ``datasets.Features`` of an exported run: fixed, so even all-null columns keep their types."""
    from datasets import Features, List, Value

    string, f64, i64 = Value("string"), Value("float64"), Value("int64")
    part = {"type": string, "text": string, "image_url": string}
    call = {"id": string, "name": string, "arguments": string}
    message = {"role": string, "content": string, "content_parts": List(part), "tool_calls": List(call),
               "tool_call_id": string, "name": string}
    usage = {"prompt_tokens": i64, "completion_tokens": i64, "cost_usd": f64, "retries": i64, "unpriced_calls": i64}
    turn = {"action": message, "observation": List(message), "reward": f64, "tool_errors": List(string),
            "policy_seconds": f64, "env_seconds": f64, "usage": usage, "info": string}
    return Features({
        "task_id": string, "env": string, "policy": string, "seed": i64,
        "messages": List(message), "turns": List(turn),
        "reward": f64, "outcome_reward": f64, "reward_components": List({"name": string, "value": f64}),
        "final_answer": string, "attempts": List(f64), "usage_by_role": List({"role": string, **usage}),
        "failed_usage": usage, "outcome": string, "failure": string, "seconds": f64, "sandbox_seconds": f64,
        "policy_seconds": f64,
        "info": string,
        "success": Value("bool"), "num_turns": i64, "prompt_tokens": i64, "completion_tokens": i64, "cost_usd": f64,
    })


def _message_row(m: dict[str, Any]) -> dict[str, Any]:
    content = m["content"]
    parts = None
    if isinstance(content, list):
        parts = [{"type": p["type"], "text": p.get("text"),
                  "image_url": json.dumps(p["image_url"]) if "image_url" in p else None} for p in content]
        content = None
    return {"role": m["role"], "content": content, "content_parts": parts, "tool_calls": m["tool_calls"],
            "tool_call_id": m["tool_call_id"], "name": m["name"]}


def _message(row: dict[str, Any]) -> dict[str, Any]:
    content: Any = row["content"]
    if row["content_parts"] is not None:
        content = [{"type": "text", "text": p["text"]} if p["type"] == "text"
                   else {"type": p["type"], "image_url": json.loads(p["image_url"])} for p in row["content_parts"]]
    return {"role": row["role"], "content": content, "tool_calls": row["tool_calls"] or [],
            "tool_call_id": row["tool_call_id"], "name": row["name"]}


def to_row(t: Trajectory) -> dict[str, Any]:
    """One trajectory as a dataset row (see the module's docstring for the layout)."""
    d = t.model_dump(mode="json")
    usage = t.usage
    turns = [{**turn, "action": _message_row(turn["action"]),
              "observation": [_message_row(m) for m in turn["observation"]], "info": json.dumps(turn["info"])}
             for turn in d["turns"]]
    return {
        **{k: d[k] for k in ("task_id", "env", "policy", "seed", "reward", "outcome_reward", "outcome", "failure",
                             "seconds", "sandbox_seconds", "policy_seconds", "final_answer", "attempts",
                             "failed_usage")},
        "usage_by_role": [{"role": role, **u} for role, u in d["usage_by_role"].items()],
        "messages": [_message_row(m) for m in d["messages"]], "turns": turns,
        "reward_components": [{"name": k, "value": v} for k, v in d["reward_components"].items()],
        "info": json.dumps(d["info"]),
        "success": t.success, "num_turns": len(t.turns), "prompt_tokens": usage.prompt_tokens,
        "completion_tokens": usage.completion_tokens, "cost_usd": usage.cost_usd,
    }


def from_row(row: dict[str, Any]) -> Trajectory:
    """The trajectory a row was made from (derived columns are ignored)."""
    turns = [{**turn, "action": _message(turn["action"]), "observation": [_message(m) for m in turn["observation"]],
              "tool_errors": turn["tool_errors"] or [], "info": json.loads(turn["info"])} for turn in row["turns"]]
    data = {k: v for k, v in row.items() if k not in DERIVED}
    data.update(messages=[_message(m) for m in row["messages"]], turns=turns, info=json.loads(row["info"]),
                reward_components={c["name"]: c["value"] for c in row["reward_components"] or []},
                attempts=row["attempts"] or [],
                usage_by_role={u.pop("role"): u for u in (dict(u) for u in row["usage_by_role"] or [])})
    return Trajectory.model_validate(data)


def to_dataset(trajectories: Iterable[Trajectory]) -> Any:
    """A ``datasets.Dataset`` of the trajectories, one row each."""
    from datasets import Dataset

    return Dataset.from_list([to_row(t) for t in trajectories], features=features())


def from_dataset(dataset: Iterable[dict[str, Any]]) -> list[Trajectory]:
    """The trajectories of a dataset made by :func:`to_dataset` (or its parquet file)."""
    return [from_row(row) for row in dataset]


def source_format(path: Path) -> Format:
    """What ``path`` holds: a ``save_to_disk`` folder, a parquet file, or JSONL runs (a file or a folder)."""
    if path.is_dir() and (path / "dataset_info.json").is_file():
        return "datasets"
    if path.is_file() and path.suffix == ".parquet":
        return "parquet"
    return "jsonl"


def read_trajectories(path: str | Path) -> Iterator[Trajectory]:
    """Trajectories from a run's JSONL, a folder of runs, a ``save_to_disk`` folder or a parquet file.

    Raises:
        DataError: Nothing at ``path``, or a dataset that is not an agentgym export.
    """
    from agentgym.evaluation.runfile import current_episodes
    from agentgym.view.runs import run_files

    source = Path(path)
    kind = source_format(source)
    if kind == "jsonl":
        for file in run_files([source]):
            yield from current_episodes(iter_jsonl(file))  # a resumed run's superseded rows left out
        return
    try:
        if kind == "datasets":
            from datasets import load_from_disk

            rows: Iterable[dict[str, Any]] = load_from_disk(str(source))
        else:
            import pyarrow.parquet as pq

            rows = pq.read_table(source).to_pylist()
        for row in rows:
            yield from_row(row)
    except (KeyError, TypeError, ValueError) as e:
        raise DataError(f"{source} is not an agentgym trajectory export: {type(e).__name__}: {e}") from e


def write(trajectories: list[Trajectory], dest: str | Path, to: Format) -> Path:
    """Write trajectories as a ``save_to_disk`` folder, a parquet file, or run JSONL; return ``dest``."""
    out = Path(dest)
    if to == "jsonl":
        out.parent.mkdir(parents=True, exist_ok=True)
        write_jsonl(out, trajectories)
        return out
    return _save(to_dataset(trajectories), out, to)


def _save(dataset: Any, out: Path, to: Format) -> Path:
    """A ``datasets.Dataset`` as a ``save_to_disk`` folder or a parquet file at ``out``."""
    if to == "datasets":
        dataset.save_to_disk(str(out))
    else:
        out.parent.mkdir(parents=True, exist_ok=True)
        dataset.to_parquet(str(out))
    return out


# ---------------------------------------------------------------------- the SFT view
def sft_arguments(call: ToolCall) -> dict[str, Any] | str:
    """A call's arguments as chat templates want them: a mapping, which each template prints its own way.

    Templates that ``tojson`` the arguments (Qwen2.5, Llama 3.1) would print a JSON string a second
    time, quoted and escaped; those that list them as parameters (Qwen3.5, LFM2.5) need the keys.
    Arguments that are not a JSON object stay the model's text: there is no mapping to give, and a
    template that prints strings as they are shows what the model wrote.
    """
    try:
        parsed = json.loads(call.arguments)
    except ValueError:
        return call.arguments
    return parsed if isinstance(parsed, dict) else call.arguments


def sft_message(m: Message) -> dict[str, Any]:
    """A message in the shape TRL and transformers' chat templates read.

    ``role`` and ``content`` (text: image parts are dropped, a text-only model cannot read them) are
    always there; ``tool_calls`` (OpenAI's ``{id, type, function: {name, arguments}}`` with the
    arguments as a mapping), ``tool_call_id`` and ``name`` only when the message has them. Templates
    test for a key, not for a value: Llama 3.1's treats a message with an empty ``tool_calls`` as a
    tool call and fails. A tool's answer keeps role ``tool`` with the call's id (Mistral-style templates
    match on it) and the tool's name (Gemma- and gpt-oss-style templates print it).
    """
    out: dict[str, Any] = {"role": m.role, "content": m.text}
    if m.tool_calls:
        out["tool_calls"] = [{"id": c.id, "type": "function",
                              "function": {"name": c.name, "arguments": sft_arguments(c)}} for c in m.tool_calls]
    if m.tool_call_id is not None:
        out["tool_call_id"] = m.tool_call_id
    if m.name is not None:
        out["name"] = m.name
    return out


def sft_features() -> Any:
    """Columns of an SFT export: each message and tool spec a JSON value, so keys stay as written.

    As Arrow structs, a column of messages would give every message every key (``tool_calls: None``
    on a user's) and every call's arguments every tool's parameters (``"answer": None`` beside
    ``"code"``), which templates render or trip on. ``datasets.Json`` stores each one as JSON and
    gives back exactly the dict that went in.
    """
    from datasets import Features, Json, List, Value

    return Features({"messages": List(Json()), "tools": List(Json()), "task_id": Value("string"),
                     "reward": Value("float64")})


def env_tools(env_id: str) -> list[dict[str, Any]] | None:
    """The tool schemas of a registered env's class, or None when the env is not registered here."""
    from agentgym.errors import EnvError
    from agentgym.registry import env_class

    try:
        cls = env_class(env_id)
    except EnvError:
        return None
    return [spec.to_openai() for spec in cls.tool_specs()]


def sft_rows(trajectories: Iterable[Trajectory], *, successful_only: bool = False) -> list[dict[str, Any]]:
    """Rows for TRL's ``SFTTrainer``: ``messages`` (the conversation) and ``tools`` (function specs).

    The conversation ends with the model's last message: the tool answers after it are the env's
    text, which no model is trained to write, and Mistral's fine-tuning validator refuses a
    conversation that does not end with the assistant. An episode without an assistant message
    gives no row.

    ``tools`` is the env's tools as OpenAI function specs (``{"type": "function", "function": {name,
    description, parameters}}``), what ``apply_chat_template(tools=...)`` takes; empty for an env not
    registered here. Episodes that ended in an error, a timeout or a cancellation are left out (their
    conversation stops mid-way); with ``successful_only``, so is every episode that did not succeed.
    """
    tools: dict[str, list[dict[str, Any]]] = {}
    rows = []
    for t in trajectories:
        if t.outcome not in ("terminated", "truncated") or (successful_only and not t.success):
            continue
        if t.env not in tools:
            tools[t.env] = env_tools(t.env) or []
        messages = [sft_message(m) for m in t.all_messages()]
        while messages and messages[-1]["role"] != "assistant":
            messages.pop()
        if not messages:
            continue
        rows.append({"messages": template_call_ids(messages), "tools": tools[t.env],
                     "task_id": t.task_id, "reward": t.reward})
    return rows


def write_sft(rows: list[dict[str, Any]], dest: str | Path, to: Format) -> Path:
    """Write SFT rows as a ``save_to_disk`` folder, a parquet file or JSONL."""
    out = Path(dest)
    if to == "jsonl":
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
        return out
    from datasets import Dataset

    return _save(Dataset.from_list(rows, features=sft_features()), out, to)
