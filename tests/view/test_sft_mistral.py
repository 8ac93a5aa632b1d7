"""SFT rows through Mistral's own chat encoder: call ids it accepts, each answer under its call's id.

Mistral's models are served and fine-tuned through ``mistral-common`` (vLLM's and transformers'
Mistral tokenizers are it), whose validator refuses a tool-call id that is not 9 characters of
``a-zA-Z0-9``, and whose fine-tuning mode refuses a conversation that does not end with the
assistant. The tokenizer files are the ones the ``mistral-common`` package ships
(``mistral_common/data``), loaded by transformers' ``MistralCommonBackend`` in fine-tuning mode, as
a trainer would: the v3 SentencePiece and Tekken formats (a call's id inside its JSON, an answer's in
``call_id``) and v7 (the id before the answer's content).
"""

from __future__ import annotations

import json
import os
import re
import shutil
from pathlib import Path
from typing import Any

import pytest

from agentgym.types import Trajectory, read_jsonl
from agentgym.view.export import sft_rows

from .conftest import assert_paired

TOKENIZERS = {  # the file mistral-common ships, the name transformers looks for, how the version prints answers
    "v3": ("mistral_instruct_tokenizer_240323.model.v3", "tokenizer.model.v3", "v3"),
    "v3 Tekken": ("tekken_240718.json", "tekken.json", "v3"),
    "v7": ("mistral_instruct_tokenizer_241114.model.v7", "tokenizer.model.v7", "v7"),
}


def mistral(version: str, where: Path) -> Any:
    """A ``MistralCommonBackend`` in fine-tuning mode over one of mistral-common's tokenizer files."""
    try:
        import mistral_common
        import sentencepiece  # noqa: F401
    except ImportError:
        if os.environ.get("CI"):
            pytest.fail("CI is set but mistral-common or sentencepiece is missing: .ci/run installs them")
        pytest.skip("needs mistral-common and sentencepiece (see .ci/run)")
    from transformers.tokenization_mistral_common import MistralCommonBackend

    shipped, name, _ = TOKENIZERS[version]
    where.mkdir()
    shutil.copy(Path(mistral_common.__file__).parent / "data" / shipped, where / name)
    return MistralCommonBackend.from_pretrained(str(where), mode="finetuning")


def render(tokenizer: Any, row: dict[str, Any]) -> str:
    """The row as the model reads it, SentencePiece's word marks and byte pieces turned back into text."""
    ids = tokenizer.apply_chat_template(row["messages"], tools=row["tools"], tokenize=True)
    ids = ids["input_ids"] if hasattr(ids, "keys") else ids
    text = tokenizer.decode(ids).replace("▁", " ").replace("<0x0A>", "\n")
    return re.sub(r"(\[/?(?:INST|TOOL_CALLS|TOOL_RESULTS|TOOL_CONTENT|AVAILABLE_TOOLS|SYSTEM_PROMPT)\]) ", r"\1", text)


def dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)


def parsed(text: str) -> Any:
    """What Mistral's encoder does with a call's arguments or a v3 answer: JSON when it is JSON."""
    try:
        return json.loads(text)
    except ValueError:
        return text


def expected_blocks(messages: list[dict[str, Any]], answers: str) -> list[str]:
    """Each call and each answer as Mistral prints them, in order."""
    blocks = []
    for m in messages:
        if m.get("tool_calls"):
            calls = [{"name": c["function"]["name"], "arguments": c["function"]["arguments"], "id": c["id"]}
                     for c in m["tool_calls"]]
            blocks.append(f"[TOOL_CALLS]{dumps(calls)}</s>")
        if m["role"] == "tool" and answers == "v3":
            blocks.append(f"[TOOL_RESULTS]{dumps({'content': parsed(m['content']), 'call_id': m['tool_call_id']})}"
                          "[/TOOL_RESULTS]")
        elif m["role"] == "tool":
            blocks.append(f"[TOOL_RESULTS]{m['tool_call_id']}[TOOL_CONTENT]{m['content']}[/TOOL_RESULTS]")
    return blocks


def assert_in_order(blocks: list[str], rendered: str) -> None:
    at = 0
    for block in blocks:
        found = rendered.find(block, at)
        assert found >= 0, (block[:300], rendered[at:at + 600])
        at = found + len(block)


@pytest.mark.parametrize("version", TOKENIZERS)
def test_rows_render_through_mistral(version: str, rows: list[dict[str, Any]], tmp_path: Path) -> None:
    tokenizer = mistral(version, tmp_path / "tok")
    for row in rows:
        assert_paired(row["messages"])
        rendered = render(tokenizer, row)
        assert_in_order(expected_blocks(row["messages"], TOKENIZERS[version][2]), rendered)
        for tool in row["tools"]:
            assert dumps(tool["function"]["description"])[1:60] in rendered, tool["function"]["name"]
        assert rendered.endswith("</s>")  # the model's last call, trained to its end


def test_the_runs_own_ids_and_ending_are_refused(real_runs: dict[str, Path], rows: list[dict[str, Any]],
                                                  tmp_path: Path) -> None:
    """What the export mends: ``call_0`` ids, and a conversation that ends with the env's answer."""
    from mistral_common.exceptions import InvalidFunctionCallException, InvalidMessageStructureException

    tokenizer = mistral("v3 Tekken", tmp_path / "tok")
    row = next(r for r in rows if r["tools"][0]["function"]["name"] == "search")
    episode = next(t for t in read_jsonl(real_runs["search"]) if t.task_id == row["task_id"])
    old_ids = [c.id for m in episode.all_messages() for c in m.tool_calls]
    assert old_ids and not any(re.fullmatch(r"[a-zA-Z0-9]{9}", i) for i in old_ids), old_ids
    new_ids = [c["id"] for m in row["messages"] for c in m.get("tool_calls", [])]
    old = dict(zip(new_ids, old_ids, strict=True))
    restored = json.loads(json.dumps(row["messages"]))
    for message in restored:
        for call in message.get("tool_calls", []):
            call["id"] = old[call["id"]]
        if "tool_call_id" in message:
            message["tool_call_id"] = old[message["tool_call_id"]]
    with pytest.raises(InvalidFunctionCallException, match="length of 9"):
        render(tokenizer, {**row, "messages": restored})
    answer = {"role": "tool", "content": "done", "tool_call_id": row["messages"][-1]["tool_calls"][0]["id"],
              "name": "answer"}
    with pytest.raises(InvalidMessageStructureException, match="last role"):
        render(tokenizer, {**row, "messages": [*row["messages"], answer]})


def reids(episode: Trajectory, new_id: Any) -> Trajectory:
    """The episode with its calls' ids rewritten by ``new_id(turn, index)``, and its answers' to match."""
    turns = []
    for n, turn in enumerate(episode.turns):
        ids = {c.id: new_id(n, i) for i, c in enumerate(turn.action.tool_calls)}
        action = turn.action.model_copy(update={"tool_calls": [c.model_copy(update={"id": ids[c.id]})
                                                               for c in turn.action.tool_calls]})
        answers = [m.model_copy(update={"tool_call_id": ids.get(m.tool_call_id or "", m.tool_call_id)})
                   for m in turn.observation]
        turns.append(turn.model_copy(update={"action": action, "observation": answers}))
    return episode.model_copy(update={"turns": turns})


@pytest.mark.parametrize("ids", ["per message from 0", "OpenAI-style"])
def test_hosted_ids_keep_their_pairing(ids: str, real_runs: dict[str, Path], tmp_path: Path) -> None:
    """Ids servers write: ``call_0`` in every message (the same id reused), or ``call_`` and 24 characters."""
    new_id = (lambda n, i: f"call_{i}") if ids == "per message from 0" else (lambda n, i: f"call_{n:012d}{i:012d}")
    episodes = [reids(t, new_id) for t in read_jsonl(real_runs["search"])]
    if ids == "per message from 0":
        assert len({c.id for t in episodes for m in t.all_messages() for c in m.tool_calls}) == 1
    tokenizer = mistral("v7", tmp_path / "tok")  # v7 prints the id right before the answer's content
    for episode, row in zip(episodes, sft_rows(episodes), strict=True):
        assert_paired(row["messages"])
        answers = [m.text for m in episode.all_messages() if m.role == "tool"][:-1]  # the last is left out
        assert [m["content"] for m in row["messages"] if m["role"] == "tool"] == answers
        rendered = render(tokenizer, row)
        assert_in_order(expected_blocks(row["messages"], "v7"), rendered)
    assert sft_rows(episodes) == sft_rows(episodes)  # an export is repeatable: the same ids each time
