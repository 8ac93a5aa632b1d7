"""SFT rows render through the real chat templates of nine model families, tool calls and results intact.

Each tokenizer is made here from files: a ``tokenizer.json`` over the 256 byte-level symbols and a
``tokenizer_config.json`` holding the family's real chat template, loaded with ``AutoTokenizer`` (no
hub). The templates are read from the installed ``trl`` package, which ships the original templates
of the models it recognises (``trl/chat_templates/``); nothing is copied into this repository.

For each family the test knows how that template prints a call and a tool's answer, and checks that
every call and answer of real code and search runs is printed that way: arguments as the mapping
the template walks or serialises once (never the model's JSON text quoted a second time), a tool's
answer in the family's tool-result block. DeepSeek-V3's template is the exception among TRL's
tool-use templates: it concatenates ``arguments`` as a string, so it cannot take the mapping the
others need (checked below, so that the day it changes, this file says so).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

import pytest

from .conftest import agentgym, assert_paired

pytest.importorskip("trl")

Args = dict[str, Any]


def dumps(value: Any) -> str:
    """What transformers' ``tojson`` filter prints (``ensure_ascii=False``)."""
    return json.dumps(value, ensure_ascii=False)


def text(value: Any) -> str:
    """A value as templates that print parameters one by one show it: strings as they are."""
    return value if isinstance(value, str) else dumps(value)


def hermes_call(name: str, args: Args) -> str:
    """Qwen2.5 and Qwen3: the call as one JSON object, its arguments serialised once."""
    return f'<tool_call>\n{{"name": "{name}", "arguments": {dumps(args)}}}\n</tool_call>'


def parameters_call(name: str, args: Args) -> str:
    """Qwen3.5 and Nemotron 3: one XML-ish block per parameter, strings as they are."""
    params = "".join(f"<parameter={k}>\n{text(v)}\n</parameter>\n" for k, v in args.items())
    return f"<function={name}>\n{params}</function>"


def glm_call(name: str, args: Args) -> str:
    pairs = "".join(f"<arg_key>{k}</arg_key>\n<arg_value>{text(v)}</arg_value>\n" for k, v in args.items())
    return f"<tool_call>{name}\n{pairs}</tool_call>"


def gemma_call(name: str, args: Args) -> str:
    values = (f'{k}:<|"|>{v}<|"|>' if isinstance(v, str) else f"{k}:{dumps(v)}" for k, v in sorted(args.items()))
    return f"<|tool_call>call:{name}{{{','.join(values)}}}<tool_call|>"


def lfm_call(name: str, args: Args) -> str:
    values = (f"{k}='{v}'" if isinstance(v, str) else f"{k}={v}" for k, v in args.items())
    return f"<|tool_call_start|>[{name}({', '.join(values)})]<|tool_call_end|>"


def tool_response(name: str, content: str) -> str:
    return f"<tool_response>\n{content}\n</tool_response>"


@dataclass(frozen=True)
class Family:
    """A model family's template file in TRL, and how it prints one call and one tool answer."""

    template: str
    call: Callable[[str, Args], str]
    result: Callable[[str, str], str]
    bos: str = "<s>"
    eos: str = "</s>"


FAMILIES = {
    "Qwen2.5": Family("qwen2_5", hermes_call, tool_response, eos="<|im_end|>"),
    "Qwen3": Family("qwen3", hermes_call, tool_response, eos="<|im_end|>"),
    "Qwen3.5": Family("qwen3_5_nothink", parameters_call, lambda n, c: tool_response(n, c.strip()), eos="<|im_end|>"),
    "Nemotron 3 Nano": Family("nemotron_3_nano", parameters_call, tool_response, eos="<|im_end|>"),
    "Llama 3.1": Family("llama3_1", lambda n, a: f'{{"name": "{n}", "parameters": {dumps(a)}}}<|eot_id|>',
                        lambda n, c: f"<|start_header_id|>ipython<|end_header_id|>\n\n{dumps(c)}<|eot_id|>",
                        bos="<|begin_of_text|>", eos="<|eot_id|>"),
    "GLM-4.5": Family("glm4moe", glm_call, tool_response),
    "gpt-oss": Family("gptoss",
                      lambda n, a: f"<|start|>assistant to=functions.{n}<|channel|>commentary json<|message|>"
                                   f"{dumps(a)}<|call|>",
                      lambda n, c: f"<|start|>functions.{n} to=assistant<|channel|>commentary<|message|>"
                                   f"{dumps(c)}<|end|>"),
    "Gemma 4": Family("gemma4_v5", gemma_call,
                      lambda n, c: f'<|tool_response>response:{n}{{value:<|"|>{c}<|"|>}}<tool_response|>', bos="<bos>"),
    "LFM2.5": Family("lfm2_2_5_v2", lfm_call, lambda n, c: f"<|im_start|>tool\n{c}<|im_end|>", eos="<|im_end|>"),
}


def template(name: str) -> str:
    return (resources.files("trl") / "chat_templates" / f"{name}.jinja").read_text(encoding="utf-8")


def tokenizer_from_files(chat_template: str, where: Path, *, bos: str, eos: str) -> Any:
    """A tokenizer written to ``where`` as a model repository has it, then loaded by ``AutoTokenizer``."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers
    from transformers import AutoTokenizer

    vocab = {symbol: i for i, symbol in enumerate(sorted(pre_tokenizers.ByteLevel.alphabet()))}
    core = Tokenizer(models.BPE(vocab=vocab, merges=[]))
    core.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    core.decoder = decoders.ByteLevel()
    where.mkdir()
    core.save(str(where / "tokenizer.json"))
    config = {"tokenizer_class": "PreTrainedTokenizerFast", "chat_template": chat_template,
              "bos_token": bos, "eos_token": eos, "pad_token": eos}
    (where / "tokenizer_config.json").write_text(json.dumps(config), encoding="utf-8")
    return AutoTokenizer.from_pretrained(str(where))


@pytest.mark.parametrize("family", FAMILIES, ids=list(FAMILIES))
def test_rows_render_tool_calls_and_results(family: str, rows: list[dict[str, Any]], tmp_path: Path) -> None:
    spec = FAMILIES[family]
    tokenizer = tokenizer_from_files(template(spec.template), tmp_path / "tok", bos=spec.bos, eos=spec.eos)
    for row in rows:
        rendered = tokenizer.apply_chat_template(row["messages"], tools=row["tools"], tokenize=False)
        calls = [c["function"] for m in row["messages"] for c in m.get("tool_calls", [])]
        assert calls and all(isinstance(c["arguments"], dict) for c in calls)
        for call in calls:
            assert spec.call(call["name"], call["arguments"]) in rendered, (family, call["name"])
            raw = json.dumps(call["arguments"])
            assert json.dumps(raw)[1:-1] not in rendered  # the arguments' JSON text, quoted a second time
        answers = [m for m in row["messages"] if m["role"] == "tool"]
        assert_paired(row["messages"])
        for answer in answers:
            assert spec.result(answer["name"], answer["content"]) in rendered, (family, answer["name"])
        for tool in row["tools"]:  # the tools column reaches the template as function specs
            first_line = tool["function"]["description"].splitlines()[0]
            assert first_line in rendered, (family, tool["function"]["name"])
        ids = tokenizer.apply_chat_template(row["messages"], tools=row["tools"], tokenize=True)
        ids = ids["input_ids"] if isinstance(ids, dict) or hasattr(ids, "keys") else ids
        assert tokenizer.decode(ids) == rendered  # the files make a working tokenizer, not just a template


def test_deepseek_v3_template_wants_argument_strings(rows: list[dict[str, Any]]) -> None:
    """The one TRL tool-use template that concatenates arguments as text: documented in docs/view.md."""
    from transformers.utils.chat_template_utils import render_jinja_template

    with pytest.raises(TypeError, match="concatenate"):
        render_jinja_template(conversations=[rows[0]["messages"]], tools=rows[0]["tools"],
                              chat_template=template("deepseekv3"))


def test_export_cli_writes_the_same_rows_to_jsonl_and_parquet(real_runs: dict[str, Path], rows: list[dict[str, Any]],
                                                              tmp_path: Path) -> None:
    from datasets import load_dataset

    code_rows = [r for r in rows if r["tools"][0]["function"]["name"] == "python"]
    for to, dest in (("jsonl", tmp_path / "sft.jsonl"), ("parquet", tmp_path / "sft.parquet")):
        done = agentgym("export", str(real_runs["code"]), "--to", to, str(dest), "--for", "sft", cwd=tmp_path)
        assert done.returncode == 0, done.stderr
        if to == "jsonl":
            back = [json.loads(line) for line in dest.read_text().splitlines()]
        else:
            back = [dict(r) for r in load_dataset("parquet", data_files=str(dest), split="train")]
        assert back == code_rows, to
        user, assistant, answer = back[0]["messages"][1], back[0]["messages"][2], back[0]["messages"][3]
        assert set(user) == {"role", "content"}  # no empty tool_calls, no null tool_call_id
        assert set(assistant) == {"role", "content", "tool_calls"}
        assert set(answer) == {"role", "content", "tool_call_id", "name"} and answer["role"] == "tool"
        assert answer["tool_call_id"] == assistant["tool_calls"][0]["id"]
