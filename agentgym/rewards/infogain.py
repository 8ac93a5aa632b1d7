"""Information gain per turn (IGPO): how much a turn raised the policy's belief in the gold answer.

IGPO (Wang et al., 2025) rewards turn ``k`` with ``p_k − p_{k−1}``, where ``p_k`` is the policy's
probability of producing the gold answer given the conversation through turn ``k``. The turn that
fetched the decisive fact gets the credit, not the final turn that merely repeated it.

The probability needs the model's log-probs of a *given* text, so a :class:`GoldScorer` supplies it:
:class:`TransformersGoldScorer` for a model in this process (the TRL trainer's own model), and
:class:`CompletionsGoldScorer` for a hosted model whose server echoes the log-probs of a prompt
(vLLM's OpenAI-compatible ``/completions``). Hosted chat APIs return log-probs of tokens they
generate, not of a text handed to them, and ``local:`` GGUF models are run without them, so
:func:`gold_scorer_for` refuses those by name, and a server that sends no log-probs back is refused
too, rather than guessing a number.

Farming: the gains of an episode sum to ``p_T − p_0`` whatever happens in between, so no sequence of
turns earns more than the final belief allows; and a turn that repeats an earlier one (same action,
same answer from the env) gets gain 0 and is left out of the context, so re-asking for a fact the
model already has cannot be paid twice, whatever the model's probability does on seeing it again.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
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


def transcript(messages: Sequence[Message]) -> str:
    """A plain ``role: text`` rendering of a conversation, ending where the assistant speaks next."""
    return "".join(f"{m.role}: {m.text}\n" for m in messages) + "assistant: "


class CompletionsGoldScorer:
    """Probabilities from a hosted model whose server returns log-probs of a given text.

    It asks an OpenAI-compatible ``/completions`` endpoint (vLLM's, and any that honour ``echo``) to
    score the rendered conversation followed by the answer, generating nothing (``max_tokens=0``,
    ``echo=true``, ``logprobs=0``), and averages the log-probs of the answer's tokens. A server that
    sends no log-probs back is refused with one clear error, never taken as probability 0.

    Args:
        model: The model name the server knows.
        api_base: The server's base URL (up to ``/v1``).
        api_key: Sent as a bearer token when given.
        render: Turns the conversation into the prompt text; :func:`transcript` by default (pass the
            model's chat template rendering for a chat model).
    """

    def __init__(self, model: str, *, api_base: str, api_key: str | None = None,
                 render: Callable[[Sequence[Message]], str] = transcript) -> None:
        self.model, self.url, self.api_key, self.render = model, api_base.rstrip("/") + "/completions", api_key, render

    async def probability(self, messages: Sequence[Message], answer: str) -> float:
        import aiohttp

        prefix = self.render(messages)
        body = {"model": self.model, "prompt": prefix + answer, "max_tokens": 0, "echo": True, "logprobs": 0}
        headers = {"Authorization": f"Bearer {self.api_key}"} if self.api_key else {}
        async with aiohttp.ClientSession() as session, session.post(self.url, json=body, headers=headers) as response:
            if response.status != 200:
                raise PolicyError(f"{self.model} at {self.url}: HTTP {response.status} when asked for log-probs",
                                  fatal=response.status in (401, 403, 404))
            reply = await response.json()
        logprobs = ((reply.get("choices") or [{}])[0].get("logprobs") or {})
        offsets, values = logprobs.get("text_offset"), logprobs.get("token_logprobs")
        if not offsets or not values:
            raise PolicyError(f"{self.model} at {self.url} returned no log-probs of the prompt (echo with logprobs): "
                              "information gain cannot be scored with it", fatal=True)
        answer_logprobs = [v for o, v in zip(offsets, values, strict=False) if o >= len(prefix) and v is not None]
        if not answer_logprobs:
            raise PolicyError(f"{self.model} at {self.url} returned no log-probs for the answer's tokens", fatal=True)
        return math.exp(sum(answer_logprobs) / len(answer_logprobs))


def gold_scorer_for(model: str) -> GoldScorer:
    """A scorer for a policy named as ``agentgym eval --model`` names it, or a clear refusal.

    Raises:
        PolicyError: always for a model string: hosted chat providers (and ``local:`` GGUF models as
            agentgym runs them) give no log-probs of a given answer. Pass a
            :class:`TransformersGoldScorer` for a model loaded in this process, or a
            :class:`CompletionsGoldScorer` for a server that echoes prompt log-probs (vLLM).
    """
    kind = "local: GGUF models are run without per-token log-probs" if model.startswith("local:") else (
        "hosted chat APIs return log-probs only of tokens they generate, not of a given answer")
    raise PolicyError(f"information gain needs the probability of the gold answer under {model}, and {kind}; "
                      "score it with TransformersGoldScorer(model, tokenizer) on a model loaded here (the TRL path), "
                      "or CompletionsGoldScorer on a server that echoes prompt log-probs (vLLM)",
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
