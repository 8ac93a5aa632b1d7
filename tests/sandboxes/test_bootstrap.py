"""The supervisor's bootstrap: a few hundred bytes on the command line, the package itself on stdin.

Linux refuses one argument over 128 KiB (MAX_ARG_STRLEN): when the supervisor went as ``python3 -c
<source>``, every sandbox would have failed to start once the source grew past it. Now only the
bootstrap and the config are arguments, and these tests keep them small, and check that the package
the bootstrap installs is what the host imports: stdlib and its own modules only, Python 3.9's grammar.
"""

from __future__ import annotations

import ast
import subprocess
import sys
import zlib

from agentgym.sandboxes import local
from agentgym.sandboxes.bootstrap import (
    BOOTSTRAP,
    PACKAGE,
    framed_package,
    imported,
    supervisor_argv,
    supervisor_config,
    supervisor_modules,
    supervisor_payload,
)
from agentgym.sandboxes.contract import Limits

MAX_ARG_STRLEN = 128 * 1024


def test_the_command_line_is_small_whatever_the_supervisor_weighs() -> None:
    config = supervisor_config(Limits(), workdir="/work", rlimits={"FSIZE": 1 << 30, "MSGQUEUE": 0},
                               cores=list(range(64)), user=(65534, 65534))
    argv = supervisor_argv("python3", config)
    assert len(BOOTSTRAP.encode()) < 512
    assert max(len(arg.encode()) for arg in argv) < 2048
    source = sum(len(s.encode()) for _, s in supervisor_modules())
    assert source > 4 * max(len(arg.encode()) for arg in argv)  # the supervisor is not in argv
    assert len(supervisor_payload()) < MAX_ARG_STRLEN  # not a limit any more, but a sign the source stays lean


def test_the_bootstrap_and_every_module_parse_as_the_oldest_python_promised() -> None:
    # The supervisor promises Python 3.9 (images' python3). This checks the grammar here, quickly; the
    # library is checked by running it there (test_conformance.py's oldest-Python test).
    ast.parse(BOOTSTRAP, feature_version=(3, 9))
    for name, source in supervisor_modules():
        ast.parse(source, feature_version=(3, 9), filename=name)


def test_the_package_is_sent_whole_in_an_order_the_bootstrap_can_run() -> None:
    modules = supervisor_modules()
    names = [name for name, _ in modules]
    assert names[0] == PACKAGE and names[-1] == "__main__"
    assert len(set(names)) == len(names) >= 8  # one module per job, none sent twice
    made: set[str] = set()
    for name, source in modules:
        assert {f"{PACKAGE}.{m}" for m in imported(source)} <= made, name  # what it imports is made before it
        made.add(name)


def test_the_supervisor_imports_the_standard_library_and_itself_only() -> None:
    stdlib = sys.stdlib_module_names
    for name, source in supervisor_modules():
        for node in ast.walk(ast.parse(source)):
            if isinstance(node, ast.Import):
                tops = [alias.name.partition(".")[0] for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0:
                tops = [(node.module or "").partition(".")[0]]
            else:
                continue  # relative: one of its own
            assert all(top in stdlib or top == "__future__" for top in tops), (name, tops)


def test_the_bootstrap_installs_a_package_runs_its_main_and_leaves_the_rest_of_stdin() -> None:
    modules = [
        ("pkg", ""),
        ("pkg.helper", "WORD = 'helped'\n"),
        ("__main__", "import os, sys\nfrom .helper import WORD\n"
                     "print(__name__, __package__, WORD, sys.argv[1:], os.read(0, 100))\n"),
    ]
    done = subprocess.run([sys.executable, "-c", BOOTSTRAP, "cfg"],
                          input=framed_package("pkg", modules) + b"request\n",
                          capture_output=True, timeout=30, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout == b"__main__ pkg helped ['cfg'] b'request\\n'\n"


def test_a_payload_cut_short_fails_with_a_reason() -> None:
    whole = zlib.compress(b'["pkg", [["__main__", "print(1)"]]]')
    done = subprocess.run([sys.executable, "-c", BOOTSTRAP], input=b"%d\n" % len(whole) + whole[:-3],
                          capture_output=True, timeout=30, check=False)
    assert done.returncode == 1
    assert b"cut short" in done.stderr


async def test_code_in_a_session_finds_none_of_the_supervisors_modules() -> None:
    # The zygote drops them from sys.modules: an ``import`` of code finds what a plain interpreter would.
    box = await local.create(Limits(memory_mb=256))
    try:
        code = "import sys\nprint(sorted(n for n in sys.modules if 'agentgym' in n or 'supervisor' in n))"
        first = await box.run_python(code)
        assert first.error is None and first.output == "[]\n", first
        await box.run_python("raise SystemExit")  # the next session, forked from the same zygote
        again = await box.run_python(code)
        assert again.output == "[]\n", again
    finally:
        await box.close()
