"""One turn of generation with the trainer's own model and sampling settings, through TRL's public parts.

A ``rollout_func`` must generate with the model being trained, as the trainer would. TRL has no
public method for one turn (``GRPOTrainer._generate_single_turn`` is private, and its signature
changed between 1.14, 1.15 and TRL's main branch), so this module uses what TRL does expose:

- vLLM (``use_vllm=True``): ``trainer.vllm_generation.generate``, the generator TRL syncs with the
  training weights right before it calls a ``rollout_func`` (for "custom rollouts that rely on vLLM
  utilities", in TRL's words);
- transformers: ``trl.models.unwrap_model_for_generation`` around ``model.generate``, with the
  trainer's ``generation_config`` (temperature, top-p, ...) and ``generation_kwargs``, as TRL does.

Distributed note: TRL's vLLM server mode gathers prompts across processes, so every process must
generate the same number of turns; multi-process runs of multi-turn rollouts are untested here.
"""

from __future__ import annotations

import copy
from typing import Any


def generate(
    trainer: Any, prompts: list[list[int]], max_new_tokens: int
) -> tuple[list[list[int]], list[list[float]] | None]:
    """One completion per prompt (token ids), capped at ``max_new_tokens``, and its logprobs if the backend gives them.

    Completions end at the first end-of-sequence token the trainer knows (``trainer.eos_token_ids``),
    which they keep. Logprobs are ``None`` with transformers' ``generate``, as on TRL's own path.
    """
    if getattr(trainer, "use_vllm", False):
        return _vllm(trainer.vllm_generation, prompts, max_new_tokens)
    return _transformers(trainer, prompts, max_new_tokens)


def _vllm(vllm: Any, prompts: list[list[int]], max_new_tokens: int) -> tuple[list[list[int]], list[list[float]]]:
    saved = vllm.max_completion_length  # the per-call budget is an attribute of TRL's generator
    vllm.max_completion_length = max_new_tokens
    try:
        _, completion_ids, logprobs, _ = vllm.generate(prompts=prompts, images=None, num_generations=1)
    finally:
        vllm.max_completion_length = saved
    # vLLM returns the top-k logprobs of each position; the sampled token's is first.
    return [list(ids) for ids in completion_ids], [[top[0] for top in row] for row in logprobs]


def _transformers(trainer: Any, prompts: list[list[int]], max_new_tokens: int) -> tuple[list[list[int]], None]:
    import torch
    from trl.models.utils import unwrap_model_for_generation

    from agentgym.policies.local import cut_at_eos, left_pad

    tokenizer = getattr(trainer.processing_class, "tokenizer", trainer.processing_class)
    input_ids, attention_mask = left_pad(prompts, tokenizer.pad_token_id)
    width = input_ids.shape[1]
    device = trainer.accelerator.device
    args = trainer.args
    config = copy.deepcopy(trainer.generation_config)  # the trainer's sampling settings, with this turn's budget
    config.max_new_tokens = max_new_tokens
    with (
        unwrap_model_for_generation(
            trainer.model_wrapped, trainer.accelerator,
            gather_deepspeed3_params=args.ds3_gather_for_generation,
            generation_kwargs=trainer.generation_kwargs,
            gradient_checkpointing_kwargs=args.gradient_checkpointing_kwargs,
        ) as model,
        torch.no_grad(),
    ):
        out = model.generate(input_ids=input_ids.to(device), attention_mask=attention_mask.to(device),
                             generation_config=config)
    return cut_at_eos(out[:, width:].tolist(), set(trainer.eos_token_ids)), None
