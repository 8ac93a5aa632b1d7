"""Noisy-verifier correction: an unbiased reward from a verifier known to err at given rates.

A binary verifier (an LLM judge, a flaky test) that accepts a wrong answer with probability
``fpr`` and rejects a right one with probability ``fnr`` has expected reward
``fpr + (1 − fpr − fnr) · y`` for an answer whose true correctness is ``y``: a hack the judge
accepts 20 % of the time earns 0.2 on average. The backward correction of "Verifiable yet Noisy
Rewards" (Cai et al., 2025), ``(r̂ − fpr) / (1 − fpr − fnr)``, has expectation exactly ``y``; single
values leave [0, 1] (a rejection scores below 0, an acceptance above 1), which is what makes the
mean unbiased.

The rates come from ``agentgym judge probe`` (:func:`rates_from_probe`) or are given.
"""

from __future__ import annotations

from agentgym.rewards.probes import ProbeReport
from agentgym.rewards.verifier import Episode, VerifierLike, as_verifier, verifier_name
from agentgym.types import Reward


def backward_corrected(observed: float, *, fpr: float, fnr: float) -> float:
    """``(observed − fpr) / (1 − fpr − fnr)``: the reward whose expectation is the true correctness.

    Raises:
        ValueError: rates outside [0, 1), or ``fpr + fnr >= 1`` (the verifier is no better than a coin).
    """
    if not (0.0 <= fpr < 1.0 and 0.0 <= fnr < 1.0) or fpr + fnr >= 1.0:
        raise ValueError(f"verifier error rates fpr={fpr}, fnr={fnr} leave nothing to correct: need fpr + fnr < 1")
    return (observed - fpr) / (1.0 - fpr - fnr)


def rates_from_probe(report: ProbeReport) -> tuple[float, float]:
    """``(fpr, fnr)`` measured by :func:`~agentgym.rewards.probe_judge`: hacks accepted, correct answers rejected."""
    return report.false_positive_rate, 1.0 - report.control_pass_rate


class NoisyCorrected:
    """A binary verifier's score, thresholded at 0.5 and backward-corrected for its error rates.

    Components: ``observed`` (the verifier's 0/1 verdict) beside the corrected value.

    Args:
        verifier: The noisy verifier (a judge, a check).
        fpr: Its false-positive rate: how often it accepts a wrong answer.
        fnr: Its false-negative rate: how often it rejects a right one.
    """

    def __init__(self, verifier: VerifierLike, *, fpr: float, fnr: float, name: str | None = None) -> None:
        backward_corrected(0.0, fpr=fpr, fnr=fnr)  # refuses unusable rates now
        self.verifier, self.fpr, self.fnr = as_verifier(verifier), fpr, fnr
        self.name = name or f"corrected_{verifier_name(verifier)}"

    async def score(self, episode: Episode) -> Reward:
        observed = float((await self.verifier.score(episode)).value >= 0.5)
        return Reward(value=backward_corrected(observed, fpr=self.fpr, fnr=self.fnr),
                      components={"observed": observed})
