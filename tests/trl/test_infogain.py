"""Information gain with the trainer's own model: real log-probs of the gold answer."""

from __future__ import annotations

import math
from typing import Any

from agentgym.rewards import Episode, InformationGain, TransformersGoldScorer
from agentgym.types import Message, Task, Trajectory, Turn


async def test_gains_are_differences_of_the_models_own_probabilities(toy_agent: tuple[Any, Any]) -> None:
    import torch

    model, tokenizer = toy_agent
    scorer = TransformersGoldScorer(model, tokenizer)
    opening = [Message(role="user", content="Pick a colour.")]
    told = [*opening, Message(role="assistant", content="hint"), Message(role="user", content="blue")]
    p0 = await scorer.probability(opening, "blue")
    p1 = await scorer.probability(told, "blue")
    assert 0.0 < p0 < 1.0 and 0.0 < p1 < 1.0 and p0 != p1
    # The same number computed by hand from the logits.
    prompt = tokenizer.apply_chat_template([{"role": "user", "content": "Pick a colour."}], tokenize=True,
                                           return_dict=False, add_generation_prompt=True)
    target = tokenizer("blue", add_special_tokens=False)["input_ids"]
    with torch.no_grad():
        logits = model(torch.tensor([list(prompt) + target])).logits[0]
    logps = [torch.log_softmax(logits[len(prompt) - 1 + j], -1)[t].item() for j, t in enumerate(target)]
    assert p0 == math.exp(sum(logps) / len(logps)) or abs(p0 - math.exp(sum(logps) / len(logps))) < 1e-5
    task = Task(id="t", prompt="Pick a colour.", data={"answer": "blue"})
    turn = Turn(action=Message(role="assistant", content="hint"), observation=[Message(role="user", content="blue")])
    episode = Episode(task, Trajectory(task_id="t", env="toy", messages=opening, turns=[turn]))
    assert await InformationGain(scorer).gains(episode) == [p1 - p0]
