"""SQuAD-style answer checking."""

from __future__ import annotations

import pytest

from agentgym.envs.search import exact_match, normalize_answer, score_answer, token_f1


def test_normalisation_drops_case_punctuation_articles_and_spaces() -> None:
    assert normalize_answer("  The  Denver Broncos! ") == "denver broncos"
    assert normalize_answer("an apple, a pear") == "apple pear"
    assert normalize_answer("theatre") == "theatre"  # "the" only as a word


@pytest.mark.parametrize(
    ("prediction", "gold", "em", "f1"),
    [
        ("Denver Broncos", "the Denver Broncos", 1.0, 1.0),
        ("Broncos", "Denver Broncos", 0.0, 2 * (1 * 0.5) / 1.5),
        ("the Carolina Panthers", "Denver Broncos", 0.0, 0.0),
        ("24–10", "24–10", 1.0, 1.0),
        ("", "Denver Broncos", 0.0, 0.0),
        ("a", "the", 1.0, 1.0),  # both normalise to nothing
    ],
)
def test_exact_match_and_f1(prediction: str, gold: str, em: float, f1: float) -> None:
    assert exact_match(prediction, gold) == em
    assert token_f1(prediction, gold) == pytest.approx(f1)


def test_f1_counts_repeated_tokens_once_each() -> None:
    # prediction "new new york" vs gold "new york": common = 2, precision 2/3, recall 1
    assert token_f1("new new york", "new york") == pytest.approx(0.8)


def test_scores_are_the_best_over_all_gold_answers() -> None:
    golds = ["Santa Clara, California", "Levi's Stadium", "Santa Clara"]
    assert score_answer("santa clara", golds) == (1.0, 1.0)
    em, f1 = score_answer("Levi's Stadium in Santa Clara", golds)
    assert em == 0.0
    # 2 of 5 predicted tokens match "Levi's Stadium" (and "Santa Clara"), all of its 2: F1 = 4/7, which
    # beats "Santa Clara, California" (2 of 3 gold tokens: 0.5)
    assert f1 == pytest.approx(4 / 7)
    assert score_answer("anything", []) == (0.0, 0.0)
