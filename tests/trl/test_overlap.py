"""Rollouts overlapping training (``OverlapGRPOTrainer``): the next batch's env work runs during this update,
no batch is staler than the bound, the loss's old log-probabilities are the generating weights', and
``max_staleness=0`` is ``GRPOTrainer`` unchanged."""

from __future__ import annotations

import copy
import time
from typing import Any

import pytest

from agentgym.trl import OverlapGRPOTrainer, environment_spec, rollout_spec
from agentgym.types import Task
from tests.trl.conftest import grpo_config
from tests.trl.envs import EnvClock, Timed

BLUE = Task(id="blue", prompt="Pick a colour.", data={"colour": "blue"})
UPDATE_SECONDS = 0.5  # the optimizer step made slower, as a real model's is, so that there is an update to hide


class UpdateWindows:
    """When the trainer worked on each batch: from its rollout's return (scoring, loss, backward) to the end
    of the optimizer step, made ``UPDATE_SECONDS`` longer by a callback."""

    def __init__(self, trainer: Any) -> None:
        from transformers import TrainerCallback

        played: list[float] = []
        ended: list[float] = []
        self.played, self.ended = played, ended
        rollout = trainer.rollout_func

        def timed(prompts: list[Any], trainer: Any) -> dict[str, Any]:
            out = rollout(prompts, trainer)
            played.append(time.perf_counter())
            return out

        class Callback(TrainerCallback):  # type: ignore[misc]
            def on_pre_optimizer_step(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
                time.sleep(UPDATE_SECONDS)

            def on_optimizer_step(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
                ended.append(time.perf_counter())

        trainer.rollout_func = timed
        trainer.add_callback(Callback())

    def windows(self) -> list[tuple[float, float]]:
        return list(zip(self.played, self.ended, strict=True))


def batches_of_calls(clock: EnvClock, batch_size: int) -> list[list[tuple[str, float, float]]]:
    """The timed env calls of each batch: envs are made a batch at a time, so serials group them."""
    serials = sorted({serial for serial, *_ in clock.calls})
    batch_of = {serial: rank // batch_size for rank, serial in enumerate(serials)}
    out: list[list[tuple[str, float, float]]] = [[] for _ in range(len(serials) // batch_size)]
    for serial, kind, start, end in clock.calls:
        out[batch_of[serial]].append((kind, start, end))
    return out


def train_timed(agent: tuple[Any, Any], tmp_path: Any, max_staleness: int) -> tuple[Any, list[Any], list[Any]]:
    model, tokenizer = agent
    Timed.clock = EnvClock()
    spec = rollout_spec(Timed, [BLUE], repeat=100)
    trainer = OverlapGRPOTrainer(model, args=grpo_config(tmp_path, max_steps=4), processing_class=tokenizer,
                                 max_staleness=max_staleness, **spec.trainer_kwargs())
    updates = UpdateWindows(trainer)
    trainer.train()
    return trainer, batches_of_calls(Timed.clock, 8), updates.windows()


def overlapping(calls: list[tuple[str, float, float]], window: tuple[float, float]) -> list[str]:
    return [kind for kind, start, end in calls if start < window[1] and end > window[0]]


def test_the_next_batch_plays_during_the_update_one_step_stale(agent: Any, tmp_path: Any) -> None:
    trainer, batches, windows = train_timed(agent, tmp_path, max_staleness=1)
    assert len(batches) == 4 and len(windows) == 4  # one batch per step, none played for a step that never came
    assert all([kind for kind, *_ in b].count("reset") == 8 for b in batches)
    for step in range(3):  # batch k+1's env work (resets, tool calls) runs while the trainer works on batch k
        assert overlapping(batches[step + 1], windows[step]), f"no env call of batch {step + 1} during update {step}"
    assert trainer.rollout_staleness == [0, 1, 1, 1]  # the first batch had nothing to overlap with
    logged = [h["overlap/staleness"] for h in trainer.state.log_history if "overlap/staleness" in h]
    assert logged == [0, 1, 1, 1]
    losses = [h["loss"] for h in trainer.state.log_history if "loss" in h]
    rewards = [h["rewards/Timed/mean"] for h in trainer.state.log_history if "rewards/Timed/mean" in h]
    assert len(losses) == len(rewards) == 4 and all(0 <= r <= 1 for r in rewards)


def test_without_staleness_env_work_never_meets_an_update(agent: Any, tmp_path: Any) -> None:
    trainer, batches, windows = train_timed(agent, tmp_path, max_staleness=0)
    assert len(batches) == 4 and len(windows) == 4
    assert all(not overlapping(b, w) for b in batches for w in windows)
    assert trainer.rollout_staleness == []
    assert not any("overlap/staleness" in h for h in trainer.state.log_history)


def reference_logps(tokenizer: Any, weights: dict[str, Any], batch: dict[str, Any]) -> Any:
    """Per-token log-probabilities of a batch's completions under ``weights``, with a plain transformers model."""
    import torch

    from agentgym.trl.tiny import tiny_model

    model = tiny_model(tokenizer)
    model.load_state_dict(weights)
    ids = torch.cat([batch["prompt_ids"], batch["completion_ids"]], dim=1)
    mask = torch.cat([batch["prompt_mask"], batch["completion_mask"]], dim=1)
    width = batch["completion_ids"].size(1)
    with torch.no_grad():
        logits = model(input_ids=ids, attention_mask=mask).logits[:, -width - 1: -1]
    return torch.log_softmax(logits.float(), -1).gather(-1, batch["completion_ids"].unsqueeze(-1)).squeeze(-1)


def test_a_stale_batch_is_weighed_against_the_weights_that_generated_it(agent: Any, tmp_path: Any) -> None:
    import torch
    from transformers import TrainerCallback

    model, tokenizer = agent
    spec = rollout_spec("toy", [BLUE], repeat=100)
    weights: list[dict[str, Any]] = []  # the weights at the start of each step

    class Weights(TrainerCallback):  # type: ignore[misc]
        def on_step_begin(self, args: Any, state: Any, control: Any, model: Any = None, **kwargs: Any) -> None:
            weights.append(copy.deepcopy(model.state_dict()))

    trainer = OverlapGRPOTrainer(model, args=grpo_config(tmp_path, max_steps=3, learning_rate=1e-2),
                                 processing_class=tokenizer, callbacks=[Weights()], max_staleness=1,
                                 **spec.trainer_kwargs())
    batches: list[dict[str, Any]] = []
    score = trainer._generate_and_score_completions
    trainer._generate_and_score_completions = lambda inputs: batches.append(score(inputs)) or batches[-1]
    trainer.train()
    assert trainer.rollout_staleness == [0, 1, 1]
    assert "old_per_token_logps" not in batches[0]  # played at its turn: TRL's own on-policy path
    for step in (1, 2):
        batch = batches[step]
        kept = batch["completion_mask"].bool()
        behaviour = reference_logps(tokenizer, weights[step - 1], batch)
        current = reference_logps(tokenizer, weights[step], batch)
        assert torch.allclose(batch["old_per_token_logps"][kept], behaviour[kept], atol=1e-4)
        assert not torch.allclose(current[kept], behaviour[kept], atol=1e-3)  # the update moved them: a ratio to keep


def test_a_snapshot_generates_with_its_own_weights(agent: Any, tmp_path: Any) -> None:
    import torch

    model, tokenizer = agent
    spec = rollout_spec("toy", [BLUE], repeat=100)
    trainer = OverlapGRPOTrainer(model, args=grpo_config(tmp_path), processing_class=tokenizer, max_staleness=1,
                                 **spec.trainer_kwargs())
    ids = torch.tensor([tokenizer.apply_chat_template([{"role": "user", "content": "Pick a colour."}],
                                                      add_generation_prompt=True, tokenize=True, return_dict=False)])
    snapshot, naive_copy = trainer._snapshot(), copy.deepcopy(trainer.model)  # TRL patched the model's forward
    before = snapshot(input_ids=ids).logits
    greedy = snapshot.generate(ids, max_new_tokens=8, do_sample=False)
    with torch.no_grad():
        for p in trainer.model.parameters():
            p.zero_()
    assert torch.equal(snapshot(input_ids=ids).logits, before)
    assert torch.equal(snapshot.generate(ids, max_new_tokens=8, do_sample=False), greedy)
    assert not torch.equal(naive_copy(input_ids=ids).logits, before)  # a plain deep copy follows the live weights


def test_max_staleness_zero_is_grpo_trainer(agent: Any, tmp_path: Any) -> None:
    from trl import GRPOTrainer

    model, tokenizer = agent
    histories = []
    for cls, extra in ((GRPOTrainer, {}), (OverlapGRPOTrainer, {"max_staleness": 0})):
        spec = rollout_spec("toy", [BLUE], repeat=100)
        trainer = cls(copy.deepcopy(model), args=grpo_config(tmp_path), processing_class=tokenizer,
                      **extra, **spec.trainer_kwargs())
        trainer.train()
        histories.append([{k: v for k, v in h.items() if "time" not in k and "per_second" not in k}
                          for h in trainer.state.log_history])
    assert histories[0] == histories[1]
    assert any("loss" in h for h in histories[0])


def test_what_cannot_overlap_is_refused(agent: Any, tmp_path: Any) -> None:
    model, tokenizer = agent
    rollout = rollout_spec("toy", [BLUE], repeat=100).trainer_kwargs()
    with pytest.raises(ValueError, match="whole number"):
        OverlapGRPOTrainer(model, args=grpo_config(tmp_path), processing_class=tokenizer, max_staleness=-1, **rollout)
    with pytest.raises(ValueError, match="rollout_func path"):
        OverlapGRPOTrainer(model, args=grpo_config(tmp_path), processing_class=tokenizer, max_staleness=1,
                           **environment_spec("toy", [BLUE], repeat=100).trainer_kwargs())
    with pytest.raises(ValueError, match="steps_per_generation 2"):  # the next generation is 2 steps away
        OverlapGRPOTrainer(model, args=grpo_config(tmp_path, steps_per_generation=2), processing_class=tokenizer,
                           max_staleness=1, **rollout)
