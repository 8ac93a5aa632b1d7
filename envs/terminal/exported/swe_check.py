"""The check of an exported SWE task, run by its tests/test.sh as root (a copy travels in every exported
folder, with ``protect.py``, the SWE env's rule of what in a repository is the graders'): the repository is
graded as the SWE env grades a patch.

1. Every file of the tree that the rule calls the graders' (tests and their helpers, ``conftest.py``,
   pytest's configuration, path hooks, package metadata, bytecode) is removed, and the task's own are put
   back from ``protected.tar`` (the base commit's, ``test_patch`` applied): what the agent wrote there
   does not count, and a link it left in their way is replaced by a folder.
2. The task's test command runs on FAIL_TO_PASS and PASS_TO_PASS as ``nobody`` with a fixed environment
   and no bytecode, under the task's timeout; its output comes to this process through a pipe.
3. The log is read with SWE-bench's pytest rule (:func:`statuses`, held equal to ``swebench``'s
   ``parse_log_pytest`` by agentgym's tests) and the SWE env's rewards are written to
   ``/logs/verifier/reward.json``: ``resolved`` (the reward), ``tests_fraction`` and ``gated``.

    python3 -I swe_check.py swe.json
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import tarfile
from pathlib import Path

NOBODY = 65534
REPO = Path("/testbed")
LOGS = Path("/logs/verifier")
PASSING = ("PASSED", "XFAIL")
STATUSES = ("FAILED", "PASSED", "SKIPPED", "ERROR", "XFAIL")
_SKIP_COUNT = re.compile(r"^\[\d+\]$")


def statuses(log: str) -> dict[str, str]:
    """Test id → status, read from a ``pytest -rA`` log as SWE-bench's ``parse_log_pytest`` reads it."""
    found = {}
    for line in log.split("\n"):
        if not line.startswith(STATUSES):
            continue
        if line.startswith("FAILED"):
            line = line.replace(" - ", " ")
        words = line.split()
        if len(words) <= 1 or (words[0] == "SKIPPED" and _SKIP_COUNT.match(words[1])):
            continue
        found[words[1]] = words[0]
    return found


def restore(repo: Path, archive: Path) -> None:
    """Remove the graders' files the tree holds now and put the task's back (step 1)."""
    sys.path.insert(0, str(Path(__file__).parent))
    import protect  # type: ignore[import-not-found]  # the copy beside this file

    for folder, dirs, files in os.walk(repo):
        here = Path(folder)
        dirs[:] = [d for d in dirs if not (here == repo and d == ".git")]
        for name in files + [d for d in dirs if (here / d).is_symlink()]:
            path = here / name
            if protect.is_protected(str(path.relative_to(repo))):
                path.unlink()
        dirs[:] = [d for d in dirs if not (here / d).is_symlink()]
    with tarfile.open(archive) as tar:
        for member in tar.getmembers():
            if not member.isfile():
                continue
            target = repo / member.name
            _real_folders(repo, Path(member.name).parent)
            if target.is_symlink() or target.is_file():
                target.unlink()
            elif target.exists():
                shutil.rmtree(target)
            source = tar.extractfile(member)
            assert source is not None
            target.write_bytes(source.read())
            target.chmod(member.mode & 0o755 | 0o444)


def _real_folders(repo: Path, relative: Path) -> None:
    """Each folder on the way to ``relative`` made a real folder: a link or a file there is removed."""
    path = repo
    for part in relative.parts:
        path = path / part
        if path.is_symlink() or (path.exists() and not path.is_dir()):
            path.unlink()
        path.mkdir(mode=0o777, exist_ok=True)


def run(command: str, timeout: float) -> tuple[str, bool]:
    """The test command's output as ``nobody`` (stdout and stderr together), and whether it timed out."""
    environment = {"PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "HOME": "/tmp",
                   "LANG": "C.UTF-8", "PYTHONDONTWRITEBYTECODE": "1"}
    process = subprocess.Popen(["sh", "-c", command], cwd=REPO, env=environment, user=NOBODY, group=NOBODY,
                               extra_groups=[], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, start_new_session=True)
    try:
        output, _ = process.communicate(timeout=timeout)
        timed_out = False
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        output, _ = process.communicate()
        timed_out = True
    return output.decode("utf-8", "replace"), timed_out


def rewards(spec: dict, found: dict[str, str], timed_out: bool) -> dict[str, float]:
    """The SWE env's rewards: every graded test must pass to resolve; a timed-out run resolves nothing."""
    fail_to_pass, pass_to_pass = spec["FAIL_TO_PASS"], spec["PASS_TO_PASS"]
    fixed = [t for t in fail_to_pass if found.get(t) in PASSING]
    kept = [t for t in pass_to_pass if found.get(t) in PASSING]
    resolved = not timed_out and len(fixed) == len(fail_to_pass) and len(kept) == len(pass_to_pass)
    graded = len(fail_to_pass) + len(pass_to_pass)
    nothing_broke = not timed_out and len(kept) == len(pass_to_pass)
    return {
        "reward": float(resolved),
        "resolved": float(resolved),
        "tests_fraction": 0.0 if timed_out else (len(fixed) + len(kept)) / graded,
        "gated": 1.0 if resolved else (len(fixed) / len(fail_to_pass) if nothing_broke else 0.0),
    }


def main() -> int:
    here = Path(__file__).parent
    spec = json.loads(Path(sys.argv[1]).read_text())
    restore(REPO, here / "protected.tar")
    tests = " ".join(shlex.quote(t) for t in spec["FAIL_TO_PASS"] + spec["PASS_TO_PASS"])
    log, timed_out = run(f"{spec['test_cmd']} {tests}", spec["timeout"])
    LOGS.mkdir(parents=True, exist_ok=True)
    (LOGS / "test-output.txt").write_text(log)
    (LOGS / "reward.json").write_text(json.dumps(rewards(spec, statuses(log), timed_out)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
