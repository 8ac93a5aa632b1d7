"""``agentgym swe rows``: bad input is refused at once (exit status 2, one line naming it), before any build; the files
its test runs are given."""

from __future__ import annotations

from pathlib import Path

import pytest

from agentgym.cli import main
from agentgym.envs.swe.rows import files_to_run


@pytest.mark.parametrize(("extra", "message"), [
    (["--patch", "fix.diff"], "--patch and --test-patch go together"),
    (["--patch", "/no/such.diff", "--test-patch", "/no/such.diff"], "cannot read /no/such.diff"),
    (["--fix", "v1", "--test-cmd", "python -m unittest"], "--test-cmd 'python -m unittest' does not run pytest"),
    (["--fix", "v1", "--out", "/no/such/dir/rows.jsonl"], "--out /no/such/dir/rows.jsonl: no directory"),
])
def test_bad_input_is_refused_before_any_work(extra: list[str], message: str, tmp_path: Path,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    args = ["swe", "rows", "--image", "none:here", "--base", "abc", "--instance-id", "a-1", "--repo", "a/a",
            "--problem-statement", "x", "--out", str(tmp_path / "rows.jsonl"), *extra]
    assert main(args) == 2
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1, err
    assert not (tmp_path / "rows.jsonl").exists()


def test_the_row_s_test_runs_get_the_python_files_the_test_change_leaves() -> None:
    """A named file pytest has no collector for (a PKG-INFO) would fail the whole run; a deleted one cannot run."""
    test_patch = "".join(f"diff --git a/{path} b/{path}\n{header}--- a/{path}\n+++ b/{path}\n@@ -1 +1 @@\n-a\n+b\n"
                         for path, header in [("tests/test_a.py", ""), ("PKG-INFO", ""), ("tests/data.json", ""),
                                              ("tests/test_gone.py", "deleted file mode 100644\n"),
                                              ("tests/__init__.py", "")])
    assert files_to_run(test_patch) == ["tests/__init__.py", "tests/test_a.py"]
