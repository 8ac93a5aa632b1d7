"""Information gain per turn (IGPO): how much a turn raised the policy's belief in the gold answer.

IGPO (Wang et al., 2025) rewards turn ``k`` with ``p_k − p_{k−1}``, where ``p_k`` is the policy's
probability of producing the gold answer given the conversation through turn ``k``. The turn that
fetched the decisive fact gets the credit, not the final turn that merely repeated it.

The probability needs the model's log-probs of a *given* text, so a :class:`GoldScorer` supplies it:
:class:`TransformersGoldScorer` for a model in this process (the TRL trainer's own model). Hosted
chat APIs return log-probs of tokens they generate, not of a text handed to them, and ``local:``
GGUF models are run without them, so :func:`gold_scorer_for` refuses those by name rather than
guessing a number.

Farming: the gains of an episode sum to ``p_T − p_0`` whatever happens in between, so no sequence of
turns earns more than the final belief allows; and a turn that repeats an earlier one (same action,
same answer from the env) gets gain 0 and is left out of the context, so re-asking for a fact the
model already has cannot be paid twice, whatever the model's probability does on seeing it again.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, Protocol, runtime_checkable

from agentgym.errors import PolicyError
from agentgym.rewards.components import gold_answers
from agentgym.rewards.verifier import Episode
from agentgym.types import Message, Reward, Turn


@runtime_checkable
class GoldScorer(Protocol):
    """The policy's probability of answering ``answer`` next, given ``messages``."""

    async def probability(self, messages: Sequence[Message], answer: str) -> float:
        """A probability in [0, 1]."""
        ...


class TransformersGoldScorer:
    """Probabilities from a transformers causal LM: the answer's tokens after the chat-templated conversation.

    The probability is length-normalised (the geometric mean of the answer tokens' probabilities), so
    a long gold answer is not near 0 by its length alone.

    Args:
        model: A transformers causal LM (the trainer's ``model``).
        tokenizer: Its tokenizer, with a chat template.
    """

    def __init__(self, model: Any, tokenizer: Any) -> None:
        self.model, self.tokenizer = model, tokenizer

    def _probability(self, messages: Sequence[Message], answer: str) -> float:
        import torch

        from agentgym.policies.chat_template import chat_dicts

        prompt = list(self.tokenizer.apply_chat_template(chat_dicts(messages), tokenize=True, return_dict=False,
                                                         add_generation_prompt=True))
        target = list(self.tokenizer(answer, add_special_tokens=False)["input_ids"])
        if not target:
            raise ValueError("the gold answer tokenises to nothing")
        ids = torch.tensor([prompt + target], device=next(self.model.parameters()).device)
        with torch.no_grad():
            logits = self.model(ids).logits[0, len(prompt) - 1: -1].float()
        logprobs = torch.log_softmax(logits, dim=-1).gather(1, ids[0, len(prompt):, None]).squeeze(1)
        return math.exp(float(logprobs.mean()))

    async def probability(self, messages: Sequence[Message], answer: str) -> float:
        return self._probability(messages, answer)


def gold_scorer_for(model: str) -> GoldScorer:
    """A scorer for a policy named as ``agentgym eval --model`` names it, or a clear refusal.

    Raises:
        PolicyError: always for a model string: hosted chat providers (and ``local:`` GGUF models as
            agentgym runs them) give no log-probs of a given answer. Pass a
            :class:`TransformersGoldScorer` for a model loaded in this process.
    """
    kind = "local: GGUF models are run without per-token log-probs" if model.startswith("local:") else (
        "hosted chat APIs return log-probs only of tokens they generate, not of a given answer")
    raise PolicyError(f"information gain needs the probability of the gold answer under {model}, and {kind}; "
                      "score it with TransformersGoldScorer(model, tokenizer) on a model loaded here (the TRL path)",
                      fatal=True)


def _turn_key(turn: Turn) -> str:
    calls = [(c.name, c.arguments) for c in turn.action.tool_calls]
    return repr((turn.action.text.strip(), calls, [m.text for m in turn.observation]))


class InformationGain:
    """Per-turn gains ``p_k − p_{k−1}`` of the gold answer's probability; the reward is their sum.

    Components: ``p_before`` (``p_0``, the opening messages alone), ``p_after`` (``p_T``) and
    ``repeated_turns`` (turns given 0 as repeats). :meth:`gains` gives the per-turn list, for
    per-turn credit.

    Args:
        scorer: Where the probabilities come from.
    """

    name = "info_gain"

    def __init__(self, scorer: GoldScorer) -> None:
        self.scorer = scorer

    async def _profile(self, episode: Episode) -> tuple[list[float], float, int]:
        answer = gold_answers(episode.task)[0]
        context = list(episode.trajectory.messages)
        p0 = await self.scorer.probability(context, answer)
        previous, seen, gains, repeats = p0, set(), [], 0
        for turn in episode.trajectory.turns:
            key = _turn_key(turn)
            if key in seen:
                gains.append(0.0)
                repeats += 1
                continue
            seen.add(key)
            context += [turn.action, *turn.observation]
            p = await self.scorer.probability(context, answer)
            gains.append(p - previous)
            previous = p
        return gains, p0, repeats

    async def gains(self, episode: Episode) -> list[float]:
        """One gain per turn of the episode."""
        return (await self._profile(episode))[0]

    async def score(self, episode: Episode) -> Reward:
        gains, p0, repeats = await self._profile(episode)
        return Reward(value=sum(gains), components={"p_before": p0, "p_after": p0 + sum(gains),
                                                    "repeated_turns": float(repeats)})
