"""SQuAD's answer check: normalised exact match and token F1, taken as the best over all gold answers.

Normalisation is the official SQuAD v1.1 one: lower-case, drop punctuation, drop the articles
"a", "an", "the", squeeze whitespace. F1 counts shared tokens as a multiset.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from typing import Literal

from agentgym.rewards import Episode, gold_answers, normalize_answer
from agentgym.types import Reward


def exact_match(prediction: str, gold: str) -> float:
    """1.0 when the two strings are equal after normalisation, else 0.0."""
    return float(normalize_answer(prediction) == normalize_answer(gold))


def token_f1(prediction: str, gold: str) -> float:
    """Harmonic mean of token precision and recall after normalisation."""
    pred_tokens = normalize_answer(prediction).split()
    gold_tokens = normalize_answer(gold).split()
    if not pred_tokens or not gold_tokens:
        return float(pred_tokens == gold_tokens)
    common = sum((Counter(pred_tokens) & Counter(gold_tokens)).values())
    if common == 0:
        return 0.0
    precision, recall = common / len(pred_tokens), common / len(gold_tokens)
    return 2 * precision * recall / (precision + recall)


def score_answer(prediction: str, golds: Iterable[str]) -> tuple[float, float]:
    """``(exact match, F1)`` of ``prediction``, each the maximum over ``golds`` (0 when none)."""
    golds = list(golds)
    if not golds:
        return 0.0, 0.0
    return max(exact_match(prediction, g) for g in golds), max(token_f1(prediction, g) for g in golds)


class AnswerScore:
    """The search env's verifier: the final answer's SQuAD F1 (or EM) against ``task.data["answer"]``.

    Both scores are components; ``info`` holds the answer, the gold answers, and what the env's final
    state says (``retrieval_hit``). It needs no live env, so saved trajectories can be scored again.

    Args:
        metric: Which score is the reward.
    """

    name = "answer"

    def __init__(self, metric: Literal["f1", "em"] = "f1") -> None:
        if metric not in ("f1", "em"):
            raise ValueError(f"metric must be 'f1' or 'em', not {metric!r}")
        self.metric = metric

    async def score(self, episode: Episode) -> Reward:
        golds = gold_answers(episode.task)
        em, f1 = score_answer(episode.final_answer or "", golds)
        info = {"answer": episode.final_answer, "gold_answers": golds, **(episode.state or {})}
        return Reward(value=f1 if self.metric == "f1" else em, components={"em": em, "f1": f1}, info=info)
