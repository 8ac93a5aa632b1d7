"""A tiny, randomly initialised chat model built offline, for CPU smoke tests and examples.

Nothing is downloaded: the tokenizer is a byte-level BPE trained on the fly with ``tokenizers`` on
text rendered through TRL's Qwen3 chat template (which TRL recognises for tool calling), and the
model is a 2-layer Qwen3 built from a config. A random model never writes a well-formed tool call, so
:func:`warm_start` teaches it the call format with a few hundred supervised steps first; after that,
GRPO has a signal to sharpen. Point the same scripts at a real checkpoint by loading it with
``AutoModelForCausalLM.from_pretrained`` instead.
"""

from __future__ import annotations

import itertools
import random
from collections.abc import Callable, Iterable, Sequence
from typing import Any

SPECIAL = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
ADDED = ["<tool_call>", "</tool_call>", "<tool_response>", "</tool_response>", "<think>", "</think>"]


def tiny_tokenizer(corpus: Iterable[str], *, vocab_size: int = 800) -> Any:
    """A byte-level BPE tokenizer with the Qwen3 chat template, trained on ``corpus``.

    Args:
        corpus: Text like what the model will read (render a few prompts with the chat template);
            any text can still be encoded, byte by byte at worst.
        vocab_size: Target vocabulary size, special tokens included.
    """
    from tokenizers import AddedToken, Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast
    from trl.chat_template_utils import qwen3_chat_template

    core = Tokenizer(models.BPE())
    core.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    core.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size, special_tokens=SPECIAL,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False,
    )
    core.train_from_iterator(list(corpus), trainer=trainer)
    # Markup the model writes stays in decoded text (as in Qwen's tokenizers), so parsers can see it.
    core.add_tokens([AddedToken(t, special=False, normalized=False) for t in ADDED])
    tokenizer = PreTrainedTokenizerFast(  # type: ignore[no-untyped-call]
        tokenizer_object=core, eos_token="<|im_end|>", pad_token="<|endoftext|>",
        additional_special_tokens=["<|im_start|>"],
    )
    tokenizer.chat_template = qwen3_chat_template
    return tokenizer


def tiny_model(tokenizer: Any, *, hidden_size: int = 64, layers: int = 2, seed: int = 0) -> Any:
    """A randomly initialised Qwen3 causal LM sized for CPU tests (about 0.1 M parameters)."""
    import torch
    from transformers import Qwen3Config, Qwen3ForCausalLM

    torch.manual_seed(seed)
    config = Qwen3Config(
        vocab_size=len(tokenizer), hidden_size=hidden_size, intermediate_size=hidden_size * 2,
        num_hidden_layers=layers, num_attention_heads=4, num_key_value_heads=2, head_dim=hidden_size // 4,
        max_position_embeddings=4096, tie_word_embeddings=True,
        pad_token_id=tokenizer.pad_token_id, eos_token_id=tokenizer.eos_token_id,
    )
    model = Qwen3ForCausalLM(config)
    model.generation_config.pad_token_id = tokenizer.pad_token_id
    model.generation_config.eos_token_id = tokenizer.eos_token_id
    return model


def warm_start(
    model: Any,
    tokenizer: Any,
    examples: Sequence[tuple[list[dict[str, Any]], dict[str, Any]]],
    *,
    tool_sets: Sequence[list[dict[str, Any]] | None] = (None,),
    steps: int = 300,
    lr: float = 3e-3,
    batch_size: int = 8,
    seed: int = 0,
    on_step: Callable[[int, float], None] | None = None,
) -> list[float]:
    """Supervised steps on (prompt messages, assistant reply) pairs, loss on the reply only.

    This is what makes a random model emit tool calls at all, so that RL starts from a policy that
    sometimes succeeds. Each example is rendered once per tool set in ``tool_sets`` (the tool
    schemas shown in the system prompt). Returns the loss per step; ``on_step(step, loss)`` is
    called after each one (steps count from 1), for a caller that reports progress.
    """
    import torch

    rows = []
    for (prompt, reply), tools in itertools.product(examples, tool_sets):
        start = tokenizer.apply_chat_template(prompt, tools=tools, add_generation_prompt=True, tokenize=True,
                                              return_dict=False)
        full = tokenizer.apply_chat_template([*prompt, reply], tools=tools, tokenize=True, return_dict=False)
        if full[: len(start)] != start:
            raise ValueError("the chat template does not render the prompt as a prefix of the conversation")
        end = len(full)
        while end > len(start) and full[end - 1] != tokenizer.eos_token_id:
            end -= 1  # drop what the template adds after the reply's end-of-turn token
        rows.append((full[:end], len(start)))
    rng = random.Random(seed)
    optimizer = torch.optim.AdamW(model.parameters(), lr=lr)
    model.train()
    losses = []
    for _ in range(steps):
        batch = [rows[rng.randrange(len(rows))] for _ in range(batch_size)]
        width = max(len(ids) for ids, _ in batch)
        input_ids = torch.full((len(batch), width), tokenizer.pad_token_id)
        labels = torch.full((len(batch), width), -100)
        attention = torch.zeros((len(batch), width), dtype=torch.long)
        for i, (ids, start) in enumerate(batch):
            input_ids[i, : len(ids)] = torch.tensor(ids)
            labels[i, start: len(ids)] = torch.tensor(ids[start:])
            attention[i, : len(ids)] = 1
        loss = model(input_ids=input_ids, attention_mask=attention, labels=labels).loss
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        losses.append(loss.item())
        if on_step is not None:
            on_step(len(losses), losses[-1])
    return losses


def tiny_agent(
    source: Any,
    examples: Sequence[tuple[list[dict[str, Any]], dict[str, Any]]],
    *,
    steps: int = 150,
    seed: int = 0,
    on_step: Callable[[int, float], None] | None = None,
    hidden_size: int = 64,
) -> tuple[Any, Any]:
    """A tiny model and tokenizer for an env, warm-started on ``examples`` so that it calls tools.

    The tokenizer is trained on the examples rendered with the env's tool schemas, so prompts are
    short; the model then gets ``steps`` supervised steps (:func:`warm_start`). Both paths' schemas
    are used, agentgym's (``rollout_func``) and the ones TRL derives from the generated class's
    methods (``environment_factory``), so one tiny agent serves either path.

    Args:
        source: The env (id, class or factory), for its tool schemas.
        examples: (prompt messages, assistant reply) pairs in chat-template form.
        on_step: Called after each warm-start step with the step number and its loss.
        hidden_size: The model's width (:func:`tiny_model`).
    """
    from transformers.utils.chat_template_utils import get_json_schema, render_jinja_template
    from trl.chat_template_utils import qwen3_chat_template

    from agentgym.trl.environment import env_factory, environment_class

    cls, make_env = env_factory(source)
    generated = environment_class(source)
    tool_sets: list[list[Any]] = [
        [t.to_openai() for t in make_env().tools],
        [get_json_schema(getattr(generated, name)) for name in cls.tool_functions()],
    ]
    conversations = [[*prompt, reply] for prompt, reply in examples]
    corpus: list[str] = []
    for tools in tool_sets:
        rendered, _ = render_jinja_template(  # type: ignore[str-unpack]
            conversations=conversations, tools=tools, chat_template=qwen3_chat_template
        )
        corpus += rendered
    tokenizer = tiny_tokenizer(corpus * 20)
    model = tiny_model(tokenizer, hidden_size=hidden_size, seed=seed)
    warm_start(model, tokenizer, examples, tool_sets=tool_sets, steps=steps, seed=seed, on_step=on_step)
    return model, tokenizer
