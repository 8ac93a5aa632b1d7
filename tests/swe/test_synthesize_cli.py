"""``agentgym swe synthesize``: bad input fails at once (exit status 2, a message naming it), before any build."""

from __future__ import annotations

from pathlib import Path

import pytest

from agentgym.cli import main


@pytest.mark.parametrize(("extra", "message"), [
    (["--operators", "off_by_one,typo"], "unknown operators ['typo']"),
    (["--out", "/no/such/dir/tasks.jsonl"], "--out /no/such/dir/tasks.jsonl: no directory /no/such/dir"),
    (["--model", "nosuchprovider-model"], "unknown model 'nosuchprovider-model'"),
])
def test_bad_input_is_refused_before_any_work(extra: list[str], message: str, tmp_path: Path,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    args = ["swe", "synthesize", "--package", "toolz", "--out", str(tmp_path / "t.jsonl"), *extra]
    assert main(args) == 2
    assert message in capsys.readouterr().err
    assert not (tmp_path / "t.jsonl").exists()


def test_count_must_be_positive(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_:
        main(["swe", "synthesize", "--package", "toolz", "--out", "x.jsonl", "--count", "0"])
    assert exit_.value.code == 2 and "must be at least 1, got 0" in capsys.readouterr().err
