"""How a sandbox's supervisor starts: a few lines on the command line, the package itself on stdin.

Linux refuses one argument over 128 KiB (MAX_ARG_STRLEN), so the supervisor cannot travel as
``python3 -c <source>``: only :data:`BOOTSTRAP` and the config are arguments. The bootstrap reads the
package (:func:`supervisor_payload`) from stdin, installs its modules in memory and runs its entry;
nothing is written inside the sandbox and no image needs anything baked in.
"""

from __future__ import annotations

import ast
import functools
import graphlib
import json
import zlib
from collections.abc import Sequence
from importlib import resources

from agentgym.sandboxes.contract import Limits

PACKAGE = "agentgym.sandboxes.supervisor"
ENTRY = "main"  # the module the bootstrap runs as ``__main__``

BOOTSTRAP = """import os,sys,zlib,json
def take(n):
 b=b''
 while len(b)<n:
  c=os.read(0,n-len(b))
  if not c:raise SystemExit('agentgym: the supervisor was cut short on stdin')
  b+=c
 return b
h=b''
while h[-1:]!=b'\\n':h+=take(1)
p,ms=json.loads(zlib.decompress(take(int(h))))
for n,s in ms:
 m=sys.modules[n]=type(sys)(n)
 m.__package__=p
 exec(compile(s,n,'exec'),m.__dict__)
"""
"""What ``python3 -c`` runs in a sandbox. It reads a decimal length, a newline and that many bytes of
zlib-compressed JSON, ``[package, [[name, source], ...]]``, then makes each module in turn (a module
object in ``sys.modules`` whose ``__package__`` is the package, so relative imports find the modules
made before it) and runs its source; the last is ``__main__``, whose ``if __name__ == "__main__"``
starts the supervisor. It reads with ``os.read`` exactly the payload's bytes, so the requests that
follow on stdin stay where the supervisor reads them. Python 3.9 or newer, like the supervisor."""


def imported(source: str) -> set[str]:
    """The package's modules that ``source`` imports when it runs: its top-level ``from .x import``
    (those under ``if TYPE_CHECKING:`` are for annotations only)."""
    return {node.module for node in ast.parse(source).body
            if isinstance(node, ast.ImportFrom) and node.level == 1 and node.module}


@functools.cache
def supervisor_sources() -> dict[str, str]:
    """The supervisor package's source files by module name (``__init__`` for the package itself)."""
    files = sorted(resources.files(PACKAGE).iterdir(), key=lambda f: f.name)
    return {f.name.removesuffix(".py"): f.read_text(encoding="utf-8") for f in files if f.name.endswith(".py")}


@functools.cache
def supervisor_modules() -> tuple[tuple[str, str], ...]:
    """The supervisor's modules as the bootstrap makes them (:func:`in_order`)."""
    return in_order(PACKAGE, supervisor_sources())


def in_order(package: str, sources: dict[str, str]) -> tuple[tuple[str, str], ...]:
    """``sources`` (module name -> source, ``__init__`` and :data:`ENTRY` among them) as the bootstrap
    makes them, (name, source): the package first, each module after those it imports, the entry last
    as ``__main__``."""
    order = graphlib.TopologicalSorter({name: imported(source) for name, source in sources.items()})
    middle = [name for name in order.static_order() if name not in ("__init__", ENTRY)]
    return ((package, sources["__init__"]), *((f"{package}.{name}", sources[name]) for name in middle),
            ("__main__", sources[ENTRY]))


def framed_package(package: str, modules: Sequence[tuple[str, str]]) -> bytes:
    """``modules`` of ``package`` as :data:`BOOTSTRAP` reads them from stdin."""
    compressed = zlib.compress(json.dumps([package, [list(m) for m in modules]]).encode("utf-8"), 9)
    return b"%d\n" % len(compressed) + compressed


@functools.cache
def supervisor_payload() -> bytes:
    """The supervisor as the first bytes a backend writes to a new sandbox's stdin (made once)."""
    return framed_package(PACKAGE, supervisor_modules())


def supervisor_argv(python: str, config: dict[str, object]) -> list[str]:
    """The command line that starts the supervisor with ``python``: the bootstrap and the config, both small."""
    return [python, "-u", "-c", BOOTSTRAP, json.dumps(config)]


def supervisor_config(
    limits: Limits, *, workdir: str, rlimits: dict[str, int], cores: list[int] | None = None,
    user: tuple[int, int] | None = None, jail: dict[str, object] | None = None,
) -> dict[str, object]:
    """The supervisor's command-line config for ``limits``.

    ``cores`` asks the supervisor to pin itself to those cores, for backends with no CPU quota.
    ``user`` (uid, gid) is who code runs as, for backends that start the supervisor as root.
    ``jail`` asks the supervisor to make its own namespaces first (see its ``jail`` module).
    """
    return {
        "output_bytes": limits.output_bytes,
        "exec_timeout": limits.exec_timeout,
        "wall_seconds": limits.wall_seconds,
        "workdir": workdir,
        "rlimits": rlimits,
        "cores": cores,
        "user": user,
        "jail": jail,
    }
