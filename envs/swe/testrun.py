"""Run a repository's tests in a sandbox and read per-test statuses from the log, as SWE-bench does.

The one place that knows how a test command is run and how its log is read: the synthesizer (which
records FAIL_TO_PASS / PASS_TO_PASS by running tests) and the verifier (which grades a patch) both
call :func:`run_tests`, so a task is graded by the very procedure that made it.

Statuses come from the ``swebench`` package's own log parsers (``parse_log_pytest`` by default), so
test ids have SWE-bench's form (``path::name``, ``path::Class::name[param]``) and a log can be handed
to ``swebench.harness.grading`` unchanged (:attr:`SuiteResult.swebench_log`).

The command's output goes to a file inside the sandbox, not through the exec reply, whose output is
capped per call (``Limits.output_bytes``): a suite of a thousand tests prints more than that, and the
per-test summary SWE-bench parses is at the end. Only the log's last :data:`LOG_BYTES` are kept.
"""

from __future__ import annotations

import shlex
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from agentgym.sandboxes import Sandbox

DEFAULT_TEST_CMD = "python3 -m pytest -rA -p no:cacheprovider --tb=short"
"""SWE-bench's pytest invocation (``-rA``: a summary line per test, which the parser reads), with no
cache directory written into the repository and short tracebacks."""
DEFAULT_PARSER = "parse_log_pytest"
"""A name in ``swebench.harness.log_parsers.PARSER_REGISTRY`` (SWE-bench's ``TestSpec.log_parser``)."""
LOG_BYTES = 8 << 20
"""How much of a log is kept: its end, where pytest's per-test summary is."""
KILL_GRACE = 5.0
"""Seconds between the in-sandbox ``timeout``'s TERM and its KILL."""
EXEC_SLACK = 30.0
"""The sandbox call's own timeout is this much longer than the test command's: a backstop, so the
in-sandbox ``timeout`` ends the run and the (partial) log survives."""
TIMEOUT_EXIT = 124
"""``timeout``'s exit status when the command ran out of time and stopped at its TERM."""

PASSED, FAILED, ERROR, SKIPPED, XFAIL = "PASSED", "FAILED", "ERROR", "SKIPPED", "XFAIL"
"""Statuses as SWE-bench spells them (``swebench.harness.constants.TestStatus``)."""


@dataclass(frozen=True)
class SuiteResult:
    """What one run of a test command gave.

    Attributes:
        statuses: Test id (SWE-bench's ``path::name``) to status (``PASSED``, ``FAILED``, ``ERROR``,
            ``SKIPPED``, ``XFAIL``), as the log parser read them.
        log: The command's output (stdout and stderr interleaved; its last :data:`LOG_BYTES`).
        exit_code: The command's exit status (124 when it timed out and stopped at the TERM, 137 when
            it had to be killed).
        timed_out: The command ran past its timeout and was killed; ``statuses`` hold only the tests
            reported before that, which with ``-rA`` is usually none.
        command: The command that was run, test ids included.
        tampered: Why the run cannot be trusted (set by the verifier's guarded run,
            :mod:`~agentgym.envs.swe.guard`), or None.
        lost: Which of the run's own files (its log, its exit status) could not be read afterwards,
            and why, or None: the output read is then the sandbox call's, usually nothing.
        collection_error: pytest stopped before running any test because a module did not import
            (set by the guarded run), or None.
    """

    statuses: dict[str, str]
    log: str
    exit_code: int
    timed_out: bool
    command: str = ""
    tampered: str | None = None
    lost: str | None = None
    collection_error: str | None = None
    passed: frozenset[str] = field(init=False)
    failed: frozenset[str] = field(init=False)

    def __post_init__(self) -> None:
        ok = {PASSED, XFAIL}
        object.__setattr__(self, "passed", frozenset(t for t, s in self.statuses.items() if s in ok))
        object.__setattr__(self, "failed", frozenset(t for t, s in self.statuses.items() if s in (FAILED, ERROR)))

    @property
    def swebench_log(self) -> str:
        """The log in the shape of a SWE-bench evaluation log (``run_instance``'s ``test_output.txt``).

        Its markers let ``swebench.harness.grading.get_logs_eval`` read it: the output between the
        start and end markers, then the exit status; a timed-out run carries SWE-bench's timeout
        marker, which that function treats as a failed run.
        """
        from swebench.harness.constants import END_TEST_OUTPUT, START_TEST_OUTPUT, TEST_EXIT_CODE, TESTS_TIMEOUT

        parts = [START_TEST_OUTPUT, self.log, END_TEST_OUTPUT, f"{TEST_EXIT_CODE}: {self.exit_code}"]
        if self.timed_out:
            parts.append(TESTS_TIMEOUT)
        return "\n".join(parts) + "\n"


def log_parser(name: str = DEFAULT_PARSER) -> Callable[[str], dict[str, str]]:
    """The ``swebench`` log parser called ``name``, as a function of the log alone.

    Raises:
        ValueError: ``swebench`` has no parser of that name; the message lists the Python ones.
    """
    from swebench.harness.log_parsers import PARSER_REGISTRY

    try:
        parse = PARSER_REGISTRY[name]
    except KeyError:
        known = ", ".join(sorted(n for n in PARSER_REGISTRY if "pytest" in n or "django" in n))
        raise ValueError(f"swebench has no log parser {name!r}; Python ones include {known}") from None
    # The Python parsers never look at the TestSpec; none is at hand here.
    return lambda log: dict(parse(log, None))  # type: ignore[arg-type]


def parse_statuses(log: str, parser: str = DEFAULT_PARSER) -> dict[str, str]:
    """Per-test statuses in ``log``, read by ``swebench``'s parser ``parser``."""
    return log_parser(parser)(log)


def test_command(test_cmd: str = DEFAULT_TEST_CMD, tests: Sequence[str] = ()) -> str:
    """``test_cmd`` narrowed to ``tests`` (SWE-bench ids, each shell-quoted), or the whole suite."""
    return " ".join([test_cmd, *(shlex.quote(t) for t in tests)])


async def run_tests(
    sandbox: Sandbox,
    test_cmd: str = DEFAULT_TEST_CMD,
    *,
    tests: Sequence[str] = (),
    cwd: str = "/testbed",
    timeout: float = 600.0,
    parser: str = DEFAULT_PARSER,
    env: Mapping[str, str] | None = None,
    reclaim: bool = False,
) -> SuiteResult:
    """Run ``test_cmd`` (narrowed to ``tests`` when given) in ``cwd`` and parse its log.

    No bytecode is written: a same-size edit in the same second as an earlier run (``results[1]`` to
    ``results[0]``) would otherwise leave Python running the stale ``.pyc``.
    The command runs under the sandbox's ``timeout`` utility, so a suite that hangs is killed after
    ``timeout`` seconds and whatever it printed is still read; the sandbox call itself is allowed
    :data:`EXEC_SLACK` more as a backstop. With ``env``, the command runs in that environment and
    the sandbox's ``PATH`` alone (``env -i``), not the one it was given. With ``reclaim``, every
    process of the sandbox's user left running is killed once the command is done and the run's
    files are made readable by their owner again, so what the tests left behind cannot hide them.

    Raises:
        SandboxError: The sandbox died or is closed.
        ValueError: ``parser`` names no ``swebench`` parser.
    """
    parse = log_parser(parser)
    command = test_command(test_cmd, tests)
    stem = f"/tmp/agentgym-tests-{uuid.uuid4().hex}"
    if env is None:
        runner = ""
    else:
        runner = "env -i PATH=\"$PATH\" " + "".join(f"{k}={shlex.quote(v)} " for k, v in env.items())
    script = (
        f"( PYTHONDONTWRITEBYTECODE=1 timeout -k {KILL_GRACE:g} {timeout:g} {runner}sh -c {shlex.quote(command)};"
        f" echo $? > {stem}.exit ) 2>&1"
        f" | tail -c {LOG_BYTES} > {stem}.log"
    )
    done = await sandbox.exec(script, timeout=timeout + KILL_GRACE + EXEC_SLACK, cwd=cwd)
    if reclaim:
        await sandbox.exec(f"kill -9 -1 2>/dev/null; chmod u+rw {stem}.log {stem}.exit 2>/dev/null; true",
                           timeout=30, cwd="/")
    # Either can be missing: the backstop fired (the sandbox's own limit), the shell could not
    # start at all, or the tests removed or replaced it (a folder where the log was).
    log_bytes, lost_log = await _read(sandbox, f"{stem}.log")
    exit_bytes, lost_exit = await _read(sandbox, f"{stem}.exit")
    lost = (f"its log could not be read ({lost_log})" if lost_log else
            f"its exit status could not be read ({lost_exit})" if lost_exit else None)
    if lost:
        log, exit_text = done.output, str(done.exit_code)
    else:
        log, exit_text = log_bytes.decode("utf-8", errors="replace"), exit_bytes.decode(errors="replace").strip()
    await sandbox.exec(f"rm -f {stem}.log {stem}.exit", timeout=30)
    exit_code = int(exit_text) if exit_text.lstrip("-").isdigit() else done.exit_code
    timed_out = done.timed_out or exit_code == TIMEOUT_EXIT
    return SuiteResult(statuses=parse(log), log=log, exit_code=exit_code, timed_out=timed_out, command=command,
                       lost=lost)


async def _read(sandbox: Sandbox, path: str) -> tuple[bytes, str | None]:
    """``path``'s bytes, or why it cannot be read (the error's kind)."""
    try:
        return await sandbox.read_file(path), None
    except OSError as e:
        return b"", type(e).__name__
