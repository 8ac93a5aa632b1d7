"""SQuAD's answer check: normalised exact match and token F1, taken as the best over all gold answers.

Normalisation is the official SQuAD v1.1 one: lower-case, drop punctuation, drop the articles
"a", "an", "the", squeeze whitespace. F1 counts shared tokens as a multiset.
"""

from __future__ import annotations

import re
import string
from collections import Counter
from collections.abc import Iterable

_PUNCTUATION = set(string.punctuation)
_ARTICLES = re.compile(r"\b(a|an|the)\b")


def normalize_answer(text: str) -> str:
    """Lower-case, strip punctuation and articles, and collapse whitespace."""
    text = "".join(ch for ch in text.lower() if ch not in _PUNCTUATION)
    return " ".join(_ARTICLES.sub(" ", text).split())


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
