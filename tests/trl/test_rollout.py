"""The rollout_func path: one row per prompt, env tokens masked out of the loss, env reward logged."""

from __future__ import annotations

import re
from typing import Any

import pytest

from agentgym.trl import rollout_spec
from agentgym.trl.rollout import TemplateRenderer, tokenizer_decode
from agentgym.types import Task, Trajectory
from tests.trl.conftest import grpo_config
from tests.trl.envs import Chatter, Constant, Crashy

BLUE = Task(id="blue", prompt="Pick a colour.", data={"colour": "blue"})


def _trainer(agent: tuple[Any, Any], tmp_path: Any, env: Any, **overrides: Any) -> tuple[Any, Any]:
    from trl import GRPOTrainer

    model, tokenizer = agent
    spec = rollout_spec(env, [BLUE], repeat=16)
    args = grpo_config(tmp_path, **overrides)
    return GRPOTrainer(model, args=args, processing_class=tokenizer, **spec.trainer_kwargs()), spec


def mask_problems(ids: list[int], mask: list[int], spans: list[list[int]], trajectory: Trajectory,
                  renderer: TemplateRenderer) -> list[str]:
    """How a completion differs from the episode rebuilt from its trajectory: each model turn (mask 1)
    followed, while the episode went on, by the env's answer as the chat template renders it (mask 0),
    cut to the completion's length. Empty when every token is where it belongs."""
    tokenizer = renderer.tokenizer
    rebuilt: list[tuple[int, int]] = []
    problems = []
    for k, (start, end) in enumerate(spans):
        turn = ids[start:end]
        if re.sub(r"<think>.*?</think>\s*", "", tokenizer_decode(tokenizer, turn), flags=re.DOTALL) != (
                trajectory.turns[k].action.text):  # the action is the turn's text without think blocks
            problems.append(f"turn {k}'s tokens are not the model's action")
        rebuilt += [(t, 1) for t in turn]
        if end < len(ids):  # the env answered and the episode went on
            rebuilt += [(t, 0) for t in renderer.observation(trajectory.turns[k].observation)]
    rebuilt = rebuilt[: len(ids)]
    if [t for t, _ in rebuilt] != ids:
        problems.append("the tokens are not the model's turns and the env's answers, in order")
    expected = [e for _, e in rebuilt]
    problems += [f"token {i} has mask {m}, expected {e}" for i, (e, m) in enumerate(zip(expected, mask, strict=False))
                 if e != m]
    return problems


def test_one_row_per_prompt_with_env_tokens_masked_and_cut_to_budget(agent: Any, tmp_path: Any) -> None:
    trainer, spec = _trainer(agent, tmp_path, Chatter, max_completion_length=80)
    renderer = TemplateRenderer(agent[1])
    prompts = [spec.train_dataset[0]["prompt"]] * 5
    out = spec.rollout_func(prompts, trainer)
    assert all(len(out[k]) == 5 for k in ("prompt_ids", "completion_ids", "env_mask", "agentgym_reward"))
    assert out["logprobs"] is None  # transformers' generate gives none; TRL's own path passes None too
    rows = zip(out["completion_ids"], out["env_mask"], out["agentgym_turn_spans"], out["agentgym_trajectory"],
               strict=True)
    leaks = 0
    for ids, mask, spans, trajectory in rows:
        assert len(ids) == len(mask) <= 80
        assert mask_problems(ids, mask, spans, trajectory, renderer) == []
        # The check catches one env token leaked into the loss, wherever it is, and one model token dropped.
        for i in range(len(mask)):
            flipped = [*mask[:i], 1 - mask[i], *mask[i + 1:]]
            assert mask_problems(ids, flipped, spans, trajectory, renderer), f"a flip at {i} went unnoticed"
            leaks += mask[i] == 0
    assert leaks > 0  # there were env tokens to leak: episodes went on after the env answered


def test_env_tokens_get_no_gradient_on_a_real_batch(agent: Any, tmp_path: Any) -> None:
    import torch

    trainer, spec = _trainer(agent, tmp_path, Chatter, max_completion_length=80)
    rows = [dict(spec.train_dataset[i]) for i in range(8)]
    trainer.model.train()
    trainer.current_gradient_accumulation_steps = 1  # set by the training loop, which this test skips
    batch = trainer._generate_and_score_completions(rows)
    tool_mask, completion_mask = batch["tool_mask"], batch["completion_mask"]
    assert (tool_mask == 0).any() and (tool_mask == 1).any()
    batch["advantages"] = torch.ones_like(batch["advantages"])  # every kept token pulls on the loss

    def token_grads(inputs: dict[str, Any]) -> torch.Tensor:
        """|d loss / d hidden| at the position predicting each completion token."""
        captured: list[torch.Tensor] = []

        def keep(module: Any, args: Any, output: torch.Tensor) -> None:
            output.retain_grad()
            captured.append(output)

        # The final norm's output at position p feeds only the logits at p (TRL fuses the LM head into
        # its log-prob computation, so hook the layer before it).
        handle = trainer.model.model.norm.register_forward_hook(keep)
        try:
            trainer.compute_loss(trainer.model, inputs).backward()
        finally:
            handle.remove()
        trainer.model.zero_grad()
        width = inputs["completion_ids"].size(1)  # position t of the last C + 1 predicts token t
        return captured[-1].grad[:, -(width + 1): -1, :].abs().sum(-1)

    env_tokens = (tool_mask == 0) & (completion_mask == 1)
    model_tokens = (tool_mask == 1) & (completion_mask == 1)
    grad = token_grads(batch)
    assert torch.all(grad[env_tokens] == 0)
    assert torch.all(grad[model_tokens] > 0)
    unmasked = token_grads({**batch, "tool_mask": torch.ones_like(tool_mask)})  # the control
    assert torch.all(unmasked[env_tokens] > 0)


def test_env_reward_and_components_reach_trl_metrics(agent: Any, tmp_path: Any) -> None:
    trainer, _ = _trainer(agent, tmp_path, Constant)
    trainer.train()
    for key in ("rewards/Constant/mean", "env/components/constant"):
        assert [h[key] for h in trainer.state.log_history if key in h] == pytest.approx([0.37] * 2)


def test_generation_needs_no_private_trl_method(agent: Any, tmp_path: Any, monkeypatch: Any) -> None:
    from trl import GRPOTrainer

    def private(*args: Any, **kwargs: Any) -> None:
        raise AssertionError("the rollout used GRPOTrainer._generate_single_turn")

    trainer, spec = _trainer(agent, tmp_path, Constant)
    monkeypatch.setattr(GRPOTrainer, "_generate_single_turn", private)
    out = spec.rollout_func([spec.train_dataset[0]["prompt"]] * 4, trainer)
    assert all(out["completion_ids"]) and out["agentgym_reward"] == [0.37] * 4


def test_an_env_crash_fails_its_episode_not_the_batch(agent: Any, tmp_path: Any) -> None:
    trainer, spec = _trainer(agent, tmp_path, Crashy)
    out = spec.rollout_func([spec.train_dataset[0]["prompt"]] * 16, trainer)
    failed = [i for i, f in enumerate(out["agentgym_failure"]) if f]
    assert failed and len(failed) < 16  # the tiny model says red about a third of the time
    for i, (reward, failure) in enumerate(zip(out["agentgym_reward"], out["agentgym_failure"], strict=True)):
        if i in failed:
            assert reward is None and failure == "RuntimeError: sandbox died"
        else:
            assert reward == 1.0
    rewards = spec.reward_funcs[0](completions=[None] * 16, agentgym_reward=out["agentgym_reward"])
    assert rewards == out["agentgym_reward"]  # None reaches TRL, which gives those rows no advantage
