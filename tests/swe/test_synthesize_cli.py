"""``agentgym swe synthesize``: bad input fails at once (exit status 2, a message naming it), before any build;
a package that cannot be had is not a bad option (exit status 3)."""

from __future__ import annotations

from pathlib import Path

import pytest

from agentgym.cli import main


@pytest.mark.parametrize(("extra", "message"), [
    (["--operators", "off_by_one,typo"], "unknown operators ['typo']"),
    (["--out", "/no/such/dir/tasks.jsonl"], "--out /no/such/dir/tasks.jsonl: no directory /no/such/dir"),
    (["--model", "nosuchprovider-model"], "unknown model 'nosuchprovider-model'"),
    (["--test-requirement", "hypothesis>>1"], "--test-requirement 'hypothesis>>1'"),
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


def test_a_release_that_cannot_be_downloaded_is_exit_3(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """pip is asked for a version iso8601 never had: the download fails, which no option could have prevented."""
    args = ["swe", "synthesize", "--package", "iso8601", "--version", "0.0.0.1", "--out", str(tmp_path / "t.jsonl")]
    assert main(args) == 3
    err = capsys.readouterr().err
    assert "agentgym: error: pip download --no-deps --no-binary iso8601" in err and "iso8601==0.0.0.1" in err
    assert not (tmp_path / "t.jsonl").exists()
