"""Grading: swebench's verdict on a log, per-test statuses, and SWE-RL's patch similarity."""

from __future__ import annotations

import pytest

from agentgym.envs.swe import testrun
from agentgym.envs.swe.grading import MISSING, grade, patch_similarity, swebench_spec
from agentgym.envs.swe.tasks import SWETask
from agentgym.envs.swe.verifier import to_reward

from . import repo

TASK = SWETask.model_validate({**repo.task_row("a" * 40), "dockerfile": None})


def pytest_log(statuses: dict[str, str], exit_code: int = 1, timed_out: bool = False) -> str:
    lines = ["============ short test summary info ============"]
    lines += [f"{status} {test}" + (" - AssertionError" if status == "FAILED" else "")
              for test, status in statuses.items()]
    return testrun.SuiteResult(statuses={}, log="\n".join(lines), exit_code=exit_code, timed_out=timed_out).swebench_log


def swebench_verdict(log: str, tmp_path) -> dict:
    from swebench.harness.grading import get_eval_report

    path = tmp_path / "test_output.txt"
    path.write_text(log)
    prediction = {"instance_id": TASK.instance_id, "model_patch": "x", "model_name_or_path": "m"}
    return get_eval_report(swebench_spec(TASK), prediction, str(path), include_tests_status=True)[TASK.instance_id]


F2P, P2P = TASK.FAIL_TO_PASS, TASK.PASS_TO_PASS
LOGS = {
    "all pass": pytest_log(dict.fromkeys(F2P + P2P, "PASSED"), exit_code=0),
    "one f2p fails": pytest_log({F2P[0]: "PASSED", F2P[1]: "FAILED", **dict.fromkeys(P2P, "PASSED")}),
    "p2p breaks": pytest_log({**dict.fromkeys(F2P, "PASSED"), P2P[0]: "ERROR", P2P[1]: "PASSED"}),
    "p2p skipped": pytest_log({**dict.fromkeys(F2P, "PASSED"), P2P[0]: "SKIPPED", P2P[1]: "PASSED"}, exit_code=0),
    "a test missing": pytest_log({F2P[0]: "PASSED", **dict.fromkeys(P2P, "PASSED")}, exit_code=0),
    "timed out": pytest_log(dict.fromkeys(F2P + P2P, "PASSED"), exit_code=124, timed_out=True),
    "exit code contradicts": pytest_log(dict.fromkeys(F2P + P2P, "PASSED"), exit_code=1),
    "did not apply": ">>>>> Patch Apply Failed:\nerror: patch failed: calc/__init__.py:1\n",
}


@pytest.mark.parametrize("name", sorted(LOGS))
def test_verdicts_equal_swebench_on_the_same_log(name, tmp_path) -> None:
    ours = grade(TASK, LOGS[name], applied=name != "did not apply")
    theirs = swebench_verdict(LOGS[name], tmp_path)
    assert ours.resolved == theirs["resolved"]
    if "tests_status" in theirs:
        assert ours.fail_to_pass == theirs["tests_status"]["FAIL_TO_PASS"]
        assert ours.pass_to_pass == theirs["tests_status"]["PASS_TO_PASS"]
    assert ours.resolved == (name in ("all pass", "p2p skipped"))


def test_statuses_and_reasons_are_recorded() -> None:
    broke = grade(TASK, LOGS["p2p breaks"], applied=True)
    assert broke.statuses[P2P[0]] == "ERROR" and f"PASS_TO_PASS broken: {P2P[0]}" in broke.reason
    missing = grade(TASK, LOGS["a test missing"], applied=True)
    assert missing.statuses[F2P[1]] == MISSING and "FAIL_TO_PASS still failing" in missing.reason
    assert "timeout" in grade(TASK, LOGS["timed out"], applied=True).reason
    assert "does not apply" in grade(TASK, LOGS["did not apply"], applied=False).reason


def test_reward_options() -> None:
    partial = grade(TASK, LOGS["one f2p fails"], applied=True)
    reward = to_reward(partial, TASK, repo.GOLD, "gated")
    assert reward.components["resolved"] == 0.0
    assert reward.components["tests_fraction"] == 0.75  # 3 of 4
    assert reward.value == reward.components["gated"] == 0.5  # 1 of 2 FAIL_TO_PASS, nothing broke
    broke = to_reward(grade(TASK, LOGS["p2p breaks"], applied=True), TASK, repo.GOLD, "gated")
    assert broke.value == 0.0 and broke.components["tests_fraction"] == 0.75  # the gate: something that passed broke
    failed = to_reward(grade(TASK, LOGS["did not apply"], applied=False), TASK, repo.BAD, "patch_similarity")
    assert failed.value == -1.0  # SWE-RL: a patch that does not apply scores -1
    with pytest.raises(ValueError, match="unknown SWE reward"):
        from agentgym.envs.swe.verifier import SWEVerifier

        SWEVerifier("bleu")  # type: ignore[arg-type]


def test_patch_similarity_is_swe_rl_s() -> None:
    assert patch_similarity(repo.GOLD, repo.GOLD) == 1.0
    assert patch_similarity("", repo.GOLD) == -1.0 and patch_similarity("not a diff", repo.GOLD) == -1.0
    wrong = patch_similarity(repo.WRONG, repo.GOLD)
    assert 0.5 < wrong < 1.0  # one character differs in one line
    elsewhere = repo.GOLD.replace("calc/__init__.py", "other.py")
    assert patch_similarity(elsewhere, repo.GOLD) == 0.0  # two files, each touched by one side only
    both = repo.GOLD + elsewhere
    assert patch_similarity(both, repo.GOLD) == 0.5  # the gold file matches, the extra one counts as 0
