"""The agent's bootstrap: a few hundred bytes on the command line, the agent itself on stdin.

Linux refuses one argument over 128 KiB (MAX_ARG_STRLEN): when the agent went as ``python3 -c
<source>``, every sandbox would have failed to start once the source grew past it. Now only the
bootstrap and the config are arguments, and these tests keep them small.
"""

from __future__ import annotations

import ast
import subprocess
import sys
import zlib

from agentgym.sandboxes.base import Limits
from agentgym.sandboxes.sandbox import BOOTSTRAP, agent_argv, agent_config, agent_payload, agent_source, framed_source

MAX_ARG_STRLEN = 128 * 1024


def test_the_command_line_is_small_whatever_the_agent_weighs() -> None:
    config = agent_config(Limits(), workdir="/work", rlimits={"FSIZE": 1 << 30, "MSGQUEUE": 0},
                          cores=list(range(64)), user=(65534, 65534))
    argv = agent_argv("python3", config)
    assert len(BOOTSTRAP.encode()) < 512
    assert max(len(arg.encode()) for arg in argv) < 2048
    assert len(agent_source().encode()) > 4 * max(len(arg.encode()) for arg in argv)  # the agent is not in argv
    assert len(agent_payload()) < MAX_ARG_STRLEN  # not a limit any more, but a sign the source stays lean


def test_the_bootstrap_and_the_agent_parse_as_the_oldest_python_promised() -> None:
    # The agent promises Python 3.9 (images' python3). This checks the grammar here, quickly; the
    # library is checked by running it there (test_conformance.py's oldest-Python test).
    ast.parse(BOOTSTRAP, feature_version=(3, 9))
    ast.parse(agent_source(), feature_version=(3, 9))


def test_the_bootstrap_runs_the_source_and_leaves_the_rest_of_stdin() -> None:
    source = "import os, sys\nprint(__name__, sys.argv[1:], os.read(0, 100))\n"
    done = subprocess.run([sys.executable, "-c", BOOTSTRAP, "cfg"], input=framed_source(source) + b"request\n",
                          capture_output=True, timeout=30, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout == b"__main__ ['cfg'] b'request\\n'\n"


def test_a_source_cut_short_fails_with_a_reason() -> None:
    whole = zlib.compress(b"print(1)")
    done = subprocess.run([sys.executable, "-c", BOOTSTRAP], input=b"%d\n" % len(whole) + whole[:-3],
                          capture_output=True, timeout=30, check=False)
    assert done.returncode == 1
    assert b"cut short" in done.stderr
