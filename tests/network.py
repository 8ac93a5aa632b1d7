"""What isolation tests aim at: this machine's own addresses, where the test listens, and reserved
addresses no one answers. Never a real outside host or name: were isolation to break, the suite
would send its traffic to someone else's machine.

- :func:`host_addresses`: loopback and every address of this machine's interfaces (the Docker
  bridge's gateway, the host as a container sees it, among them). A test starts a listener on all
  of them, so a sandbox that reaches the host is *seen* reaching it, not inferred from an error.
- :data:`UNANSWERED`: one address of each IPv4 documentation range (RFC 5737), which no network
  routes. A sandbox with no network fails to connect there at once ("Network is unreachable"); one
  with a network would send the packet off (and wait, or be refused by whatever answers there), so
  a test accepts only the errors of a sandbox with no route at all: :data:`NO_ROUTE`.
"""

from __future__ import annotations

import socket

import psutil

UNANSWERED = ("192.0.2.1", "198.51.100.1")
NO_ROUTE = frozenset({"ENETUNREACH", "EPERM", "EACCES", "EAFNOSUPPORT"})
""":data:`PROBE`'s outcomes where nothing left the sandbox: no route, or no socket allowed at all."""

PROBE = """
import errno, socket
for host, port in {targets!r}:
    try:
        socket.create_connection((host, port), timeout=5).close()
        print(host, port, "reached")
    except socket.timeout:
        print(host, port, "timeout")
    except OSError as e:
        print(host, port, errno.errorcode.get(e.errno, "error"))
"""
"""Python run in a sandbox: one line per ``(host, port)`` target, ``reached``, ``timeout`` or the errno's name."""


def host_addresses() -> list[str]:
    """Every IPv4 address of this machine (loopback, its interfaces', the Docker bridge's gateway)."""
    found = {"127.0.0.1"}
    for addresses in psutil.net_if_addrs().values():
        found.update(a.address for a in addresses if a.family == socket.AF_INET)
    return sorted(found)


def outcomes(output: str) -> dict[tuple[str, int], str]:
    """:data:`PROBE`'s output as ``(host, port)`` → outcome."""
    rows = (line.split() for line in output.splitlines() if line.strip())
    return {(host, int(port)): outcome for host, port, outcome in rows}
