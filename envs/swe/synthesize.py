"""SWE tasks synthesized from a real package: inject a bug, keep it if tests catch it, write a SWE-bench row.

For a package on PyPI (``agentgym swe synthesize --package toolz``):

1. its sdist image is built (:mod:`~agentgym.envs.swe.sdist_image`): the release at ``/testbed``;
2. the whole suite runs there once; the tests that pass are the candidates;
3. mutation sites in its non-test modules are ordered for the seed (:func:`~agentgym.envs.swe.mutate.sample`);
   each mutant runs the suite in a fresh sandbox (Docker, no network), ``jobs`` at a time, under a
   timeout; a mutant is kept when some candidate tests fail (FAIL_TO_PASS) and every other one still
   passes (PASS_TO_PASS) — one that stops a test from being collected or times out is not;
4. the row's base is the mutant's tree as the one commit of a new repository (a neutral message, no
   parent, no reflog, every file's time the same: nothing in the model's container tells the release
   or the bug apart from the rest); its gold ``patch`` is the diff that undoes the bug, and its problem
   statement is written from the failing output (a template, or a model through litellm with ``model``).

Mutants are tried in the seed's order and the first ``count`` kept ones, in that order, are the
tasks, however the parallel runs interleave: the same package, version and seed give the same rows
(with ``model``, the problem statements are as deterministic as the model is).

A synthesized task carries what rebuilds its repository anywhere: ``source_archive`` names the sdist
(package, version, sha256) and holds ``sdist_commit`` and the ``bug_patch``; :func:`checkout_base`
makes the base commit from them (the release's tree, the bug applied, one root commit), and its hash
must equal ``base_commit``.
"""

from __future__ import annotations

import asyncio
import dataclasses
import hashlib
import json
import logging
import re
import shlex
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from agentgym.envs.swe import mutate, protect
from agentgym.envs.swe.sdist_image import TESTBED, SdistImage, build_sdist_image, describe, root_commit_script
from agentgym.envs.swe.testrun import ERROR, FAILED, PASSED, XFAIL, SuiteResult, run_tests
from agentgym.errors import AgentgymError, SandboxError
from agentgym.sandboxes import Limits, Sandbox, start

log = logging.getLogger(__name__)

WORKTREE = "/work/testbed"
"""Where a sandbox's writable copy of the repository goes (the image's root, ``/testbed`` included, is read-only)."""
TEST_ARGS: dict[str, tuple[str, ...]] = {
    "more-itertools": (
        "--deselect", "tests/test_recipes.py::PrimeFunctionTests::test_primes",
        "--deselect", "tests/test_more.py::DiscreteFourierTransformTests::test_roundtrip",
    ),
}
"""Extra pytest arguments per package: its slowest tests (tens of seconds each) left out, so that one
mutant's run takes seconds. They become part of the task's ``test_cmd``."""
LIMITS = Limits(cpus=1.0, memory_mb=1024, pids=256, disk_mb=512, wall_seconds=3600.0, exec_timeout=120.0)
"""For one test run: a mutant may loop, recurse or allocate without end."""
MIN_TIMEOUT = 60.0
TIMEOUT_FACTOR = 3.0
"""A mutant's run may take this many times the clean run (at least :data:`MIN_TIMEOUT` seconds)."""
EXCERPT_LINES = 40
SYSTEM_PROMPT = (
    "You write bug reports for Python libraries, as a user who hit the bug would file them on GitHub. "
    "Describe the wrong behaviour and how to see it, from the failing tests and their output. "
    "Do not name the test files, do not say where in the code the bug is and do not suggest a fix."
)


class SynthesisError(AgentgymError):
    """Synthesis could not start or finish: the package's suite does not run, or nothing qualified."""


@dataclasses.dataclass(frozen=True)
class Candidate:
    """A mutant and what its run gave."""

    instance_id: str
    mutation: mutate.Mutation
    run: SuiteResult
    base_commit: str
    bug_patch: str
    patch: str
    fail_to_pass: tuple[str, ...]
    pass_to_pass: tuple[str, ...]


@dataclasses.dataclass
class Stats:
    """How a synthesis went: for the benchmark and the CLI's summary."""

    tried: int = 0
    kept: int = 0
    rejected: dict[str, int] = dataclasses.field(default_factory=dict)
    build_seconds: float = 0.0
    baseline_seconds: float = 0.0
    mutant_seconds: float = 0.0

    def reject(self, reason: str) -> None:
        self.rejected[reason] = self.rejected.get(reason, 0) + 1


def package_test_cmd(image: SdistImage, package: str) -> str:
    """The image's test command plus the package's :data:`TEST_ARGS`."""
    return " ".join([image.test_cmd, *(shlex.quote(a) for a in TEST_ARGS.get(_norm(package), ()))])


async def synthesize(
    package: str,
    *,
    version: str | None = None,
    count: int = 20,
    seed: int = 0,
    jobs: int = 2,
    max_tries: int | None = None,
    operators: Sequence[str] = mutate.OPERATORS,
    model: str | None = None,
    api_base: str | None = None,
    test_requirements: Sequence[str] = (),
    stats: Stats | None = None,
    progress: Callable[[str], None] | None = None,
) -> list[dict[str, Any]]:
    """Up to ``count`` SWE-bench rows for ``package`` (see the module docstring).

    Args:
        package: A PyPI name whose sdist ships its tests.
        version: The release; the newest when None (the rows record which it was).
        count: Tasks wanted.
        seed: Orders the mutants.
        jobs: Mutant test runs at once (each in its own sandbox with one CPU).
        max_tries: Mutants tried at most (default ``20 * count``).
        operators: Mutation operators to use.
        model: A litellm model string that writes the problem statements; a template when None.
        api_base: The model's endpoint.
        test_requirements: What the package's tests need beyond pytest and its own test extras
            (``hypothesis``, a pytest plugin), installed in its image; the rows record them
            (``source_archive["extra_requirements"]``, one a line), so the image is rebuilt the same.
        stats: Filled with counts and timings.
        progress: Called with one line per mutant tried.

    Raises:
        SynthesisError: The suite does not pass at all at the release, or no module can be mutated.
        SandboxError: The image could not be built or a sandbox not started.
    """
    stats = stats if stats is not None else Stats()
    say = progress or (lambda line: None)
    started = time.monotonic()
    extra = tuple(test_requirements)
    tag = await asyncio.to_thread(lambda: build_sdist_image(package, version, extra_requirements=extra))
    image = await asyncio.to_thread(describe, tag)
    stats.build_seconds = time.monotonic() - started
    test_cmd = package_test_cmd(image, package)

    started = time.monotonic()
    async with await start("docker", tag, LIMITS) as box:
        baseline = await run_tests(box, test_cmd, cwd=TESTBED, timeout=LIMITS.wall_seconds / 2)
        sources = await _sources(box)
    stats.baseline_seconds = time.monotonic() - started
    passing = frozenset(t for t, s in baseline.statuses.items() if s == PASSED)
    if baseline.timed_out or not passing:
        raise SynthesisError(f"the tests of {package} {image.version} do not run in its image "
                             f"(exit {baseline.exit_code}): {baseline.log[-1500:]}")
    if not sources:
        raise SynthesisError(f"{package} {image.version} has no non-test Python module to mutate")
    timeout = max(MIN_TIMEOUT, TIMEOUT_FACTOR * stats.baseline_seconds)
    say(f"{package} {image.version}: {len(passing)} tests pass at the release; "
        f"{len(sources)} modules to mutate; {timeout:.0f} s per mutant")

    order = mutate.sample(sources, seed, operators)[: max_tries or 20 * count]
    kept: list[Candidate] = []
    semaphore = asyncio.Semaphore(jobs)

    async def attempt(mutation: mutate.Mutation) -> Candidate | str:
        async with semaphore:
            return await _try(tag, image, package, test_cmd, sources, mutation, passing, timeout)

    started = time.monotonic()
    window = max(2 * jobs, 1)
    pending: list[asyncio.Task[Candidate | str]] = []
    position = 0
    try:
        while len(kept) < count and (pending or position < len(order)):
            while len(pending) < window and position < len(order):
                pending.append(asyncio.create_task(attempt(order[position])))
                position += 1
            outcome = await pending.pop(0)
            stats.tried += 1
            if isinstance(outcome, str):
                stats.reject(outcome)
                say(f"  [{stats.tried}] rejected: {outcome}")
                continue
            kept.append(outcome)
            stats.kept += 1
            m = outcome.mutation
            say(f"  [{stats.tried}] kept {m.operator} {m.path}:{m.line} ({len(outcome.fail_to_pass)} tests fail)")
    finally:
        for task in pending:
            task.cancel()
        await asyncio.gather(*pending, return_exceptions=True)
    stats.mutant_seconds = time.monotonic() - started

    rows = [_row(image, package, test_cmd, c, extra) for c in kept]
    if model is not None:
        for row, candidate in zip(rows, kept, strict=True):
            row["problem_statement"] = await _model_statement(model, api_base, image, candidate)
    return rows


async def _sources(box: Sandbox) -> dict[str, str]:
    """The repository's non-test Python modules: path to text."""
    listed = await box.exec("git ls-files -z -- '*.py'", cwd=TESTBED, timeout=60)
    if listed.exit_code != 0 or listed.truncated:
        raise SandboxError(f"could not list the repository's files: {listed.output[-500:]}")
    paths = [p for p in listed.stdout.split("\0") if p and _is_source(p)]
    texts = await asyncio.gather(*(box.read_file(f"{TESTBED}/{p}") for p in paths))
    return {p: t.decode("utf-8", errors="replace") for p, t in zip(paths, texts, strict=True)}


def _is_source(path: str) -> bool:
    """Library code: not a test, conftest, setup script, doc or example, and nothing the verifier puts
    back from the base (:func:`~agentgym.envs.swe.protect.is_protected`: a bug there could not be fixed)."""
    if protect.is_protected(path):
        return False
    parts = path.split("/")
    name = parts[-1]
    if any(p in ("tests", "test", "testing", "docs", "doc", "examples", "benchmarks", "bench") for p in parts[:-1]):
        return False
    return not (name.startswith("test_") or name.endswith("_test.py") or name in ("conftest.py", "setup.py"))


async def _try(
    tag: str, image: SdistImage, package: str, test_cmd: str, sources: Mapping[str, str],
    mutation: mutate.Mutation, passing: frozenset[str], timeout: float,
) -> Candidate | str:
    """Commit one mutant and run the suite on it in a fresh sandbox: a :class:`Candidate`, or why it is not one."""
    source = mutation.apply(sources[mutation.path])
    if source is None:
        return "does not compile"
    instance_id = _instance_id(image, package, mutation)
    async with await start("docker", tag, LIMITS) as box:
        await _copy_repo(box, WORKTREE)
        await box.write_file(f"{WORKTREE}/{mutation.path}", source)
        bug_patch = await _git(box, WORKTREE, "diff HEAD")
        # -R swaps the prefixes too: given swapped, the gold patch reads "diff --git a/... b/..." like any other.
        patch = await _git(box, WORKTREE, "diff -R --src-prefix=b/ --dst-prefix=a/ HEAD")
        base_commit = await _commit(box, WORKTREE)
        try:
            run = await run_tests(box, test_cmd, cwd=WORKTREE, timeout=timeout)
        except SandboxError:  # the mutant took its sandbox down (memory, processes): not a task
            return "sandbox died in the run"
    if run.timed_out:
        return "timed out"
    if passing - run.statuses.keys():
        return "tests not collected or not run"
    fail = tuple(sorted(t for t in passing if run.statuses[t] in (FAILED, ERROR)))
    still = tuple(sorted(t for t in passing if run.statuses[t] in (PASSED, XFAIL)))
    if not fail:
        return "no test fails"
    if len(fail) + len(still) != len(passing):
        return "tests skipped"
    if not still:
        return "every test fails"
    return Candidate(instance_id, mutation, run, base_commit, bug_patch, patch, fail, still)


async def checkout_base(sandbox: Sandbox, task: Mapping[str, Any], dest: str = WORKTREE) -> str:
    """Make a synthesized task's base in ``sandbox`` (started from its sdist image): ``/testbed`` copied
    to ``dest``, the task's bug applied, the tree committed as the base. Returns ``dest``.

    Raises:
        SandboxError: The bug does not apply, or the commit made is not the task's ``base_commit``
            (the image holds another release, or the row was edited).
    """
    archive = task["source_archive"]
    await _copy_repo(sandbox, dest)
    await sandbox.write_file("/tmp/agentgym-bug.patch", archive["bug_patch"])
    applied = await sandbox.exec("git apply /tmp/agentgym-bug.patch && rm /tmp/agentgym-bug.patch",
                                 cwd=dest, timeout=60)
    if applied.exit_code != 0:
        raise SandboxError(f"{task['instance_id']}: the bug patch does not apply: {applied.output[-500:]}")
    made = await _commit(sandbox, dest)
    if made != task["base_commit"]:
        raise SandboxError(f"{task['instance_id']}: made base commit {made}, the task says {task['base_commit']}")
    return dest


async def _copy_repo(box: Sandbox, dest: str) -> None:
    copied = await box.exec(f"cp -a {TESTBED} {shlex.quote(dest)}", timeout=120)
    if copied.exit_code != 0:
        raise SandboxError(f"could not copy the repository: {copied.output[-500:]}")


async def _commit(box: Sandbox, repo: str) -> str:
    """Make the tree in ``repo`` a task's base (:func:`~agentgym.envs.swe.sdist_image.root_commit_script`:
    one commit, nothing of the release or the bug); the commit's hash, a function of the tree alone."""
    done = await box.exec(root_commit_script(), cwd=repo, timeout=120)
    if done.exit_code != 0:
        raise SandboxError(f"git commit failed: {done.output[-500:]}")
    return (await _git(box, repo, "rev-parse HEAD")).strip()


async def _git(box: Sandbox, repo: str, args: str) -> str:
    done = await box.exec(f"git {args}", cwd=repo, timeout=60)
    if done.exit_code != 0 or done.truncated:
        raise SandboxError(f"git {args} failed: {done.output[-500:]}")
    return done.stdout


def _instance_id(image: SdistImage, package: str, mutation: mutate.Mutation) -> str:
    """``<package>__<package>-<version>.<operator>.<hash of the edits>``: SWE-bench's ``owner__repo-...`` shape."""
    digest = hashlib.sha256(json.dumps([mutation.path, mutation.edits]).encode()).hexdigest()[:8]
    name = _norm(package)
    return f"{name}__{name}-{image.version}.{mutation.operator}.{digest}"


def _row(image: SdistImage, package: str, test_cmd: str, candidate: Candidate,
         extra: tuple[str, ...]) -> dict[str, Any]:
    m = candidate.mutation
    wanted = {"extra_requirements": "\n".join(extra)} if extra else {}
    return {
        "instance_id": candidate.instance_id,
        "repo": f"pypi/{_norm(package)}",
        "base_commit": candidate.base_commit,
        "problem_statement": template_statement(image, candidate),
        "patch": candidate.patch,
        "test_patch": "",
        "FAIL_TO_PASS": list(candidate.fail_to_pass),
        "PASS_TO_PASS": list(candidate.pass_to_pass),
        "version": image.version,
        "source_archive": {
            **image.source_archive, "sdist_commit": image.base_commit, "bug_patch": candidate.bug_patch, **wanted,
        },
        "test_cmd": test_cmd,
        "mutation": {"operator": m.operator, "path": m.path, "line": m.line, "description": m.description},
    }


def _norm(package: str) -> str:
    return re.sub(r"[-_.]+", "-", package.lower())


def template_statement(image: SdistImage, candidate: Candidate) -> str:
    """A problem statement from the failing output alone: which tests fail and the first failure."""
    failing = candidate.fail_to_pass
    listed = "\n".join(f"- `{t}`" for t in failing[:10])
    if len(failing) > 10:
        listed += f"\n- and {len(failing) - 10} more"
    excerpt = failure_excerpt(candidate.run.log, failing[0])
    return (
        f"In {image.package} {image.version}, {len(failing)} of the library's tests fail:\n\n{listed}\n\n"
        f"The first failure:\n\n```\n{excerpt}\n```\n\n"
        "The tests are right and the library is wrong: fix the library so that these tests pass "
        "and the others keep passing."
    )


def failure_excerpt(log: str, test_id: str, max_lines: int = EXCERPT_LINES) -> str:
    """The traceback pytest printed for ``test_id`` (its FAILURES or ERRORS block), cut to ``max_lines``.

    Object addresses (``0x7f...``) are masked, so the same failure gives the same text in every run.
    Falls back to the test's line in the short summary when the log has no block for it.
    """
    name = ".".join(test_id.split("::")[1:])
    header = re.compile(rf"^_+ (?:ERROR at \w+ of )?{re.escape(name)} _+$", re.M)
    found = header.search(log)
    if found is not None:
        rest = log[found.end():]
        stop = re.search(r"^(_{3,} .* _{3,}|={3,}.*={3,})$", rest, re.M)
        block = rest[: stop.start() if stop else len(rest)].strip("\n")
    else:
        block = next((line for line in log.splitlines() if test_id in line and line.startswith((FAILED, ERROR))), "")
    lines = block.splitlines()
    if len(lines) > max_lines:
        lines = [*lines[: max_lines - 1], f"... ({len(lines) - max_lines + 1} more lines)"]
    return re.sub(r"0x[0-9a-f]{6,}", "0x...", "\n".join(lines))


async def _model_statement(model: str, api_base: str | None, image: SdistImage, candidate: Candidate) -> str:
    """A bug report written by ``model`` from the template's facts (agentgym's litellm policy: retries, keys)."""
    from agentgym.policies.litellm import as_policy
    from agentgym.types import Message, Task

    policy = as_policy(model, api_base=api_base, temperature=0.0)
    facts = template_statement(image, candidate)
    prompt = f"Write the bug report for this failure in {image.package} {image.version}.\n\n{facts}"
    reply = await policy.act(
        [Message(role="system", content=SYSTEM_PROMPT), Message(role="user", content=prompt)], [],
        task=Task(id=candidate.instance_id, prompt=prompt),
    )
    text = reply.message.text.strip()
    if not text:
        raise SynthesisError(f"{model} wrote an empty problem statement for {candidate.instance_id}")
    return text


def write_tasks(rows: Sequence[Mapping[str, Any]], path: str | Path) -> None:
    """Write rows as JSONL (keys sorted, so equal rows are equal bytes), replacing ``path`` at once."""
    target = Path(path)
    tmp = target.with_name(target.name + ".tmp")
    with open(tmp, "w", encoding="utf-8") as f:
        for row in rows:
            f.write(json.dumps(row, sort_keys=True) + "\n")
    tmp.replace(target)
