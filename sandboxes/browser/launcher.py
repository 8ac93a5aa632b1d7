"""Started by Playwright as its "Chromium": hands the DevTools pipe to the agentgym process, then becomes the browser.

Playwright starts its browser with the DevTools pipe on fds 3 (commands in) and 4 (replies out).
This script (run by a stub that ``direct.py`` writes, with ``python -I -S``: the standard library
only, nothing of the environment's Python settings) makes a new pipe for Chromium, connects to
``AGENTGYM_BROWSER_SOCKET`` (a unix socket in the agentgym process's private directory) and sends
it Playwright's two ends and its own two ends with ``SCM_RIGHTS``. Then it execs
``AGENTGYM_BROWSER_COMMAND`` (one argument a line) followed by Playwright's arguments, with
Chromium's end of the new pipe on fds 3 and 4, or, when the command is ``docker run``, on stdin
and stdout (the container maps them back onto Chromium's fds 3 and 4; Playwright's
``--user-data-dir``, a host path, becomes the container's ``/tmp/profile``). So Playwright still
starts, watches and kills the browser process itself; only the pipe's bytes pass through the
agentgym process on their way.
"""

import os
import socket
import sys


def main() -> None:
    path = os.environ.pop("AGENTGYM_BROWSER_SOCKET")
    command = os.environ.pop("AGENTGYM_BROWSER_COMMAND").split("\n")
    to_browser_r, to_browser_w = os.pipe()
    from_browser_r, from_browser_w = os.pipe()
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
        conn.connect(path)
        socket.send_fds(conn, [b"pipe"], [3, 4, to_browser_w, from_browser_r])
    for fd in (3, 4, to_browser_w, from_browser_r):
        os.close(fd)
    args = sys.argv[1:]
    if command[:2] == ["docker", "run"]:
        args = ["--user-data-dir=/tmp/profile" if a.startswith("--user-data-dir=") else a for a in args]
        os.dup2(to_browser_r, 0)
        os.dup2(from_browser_w, 1)
    else:
        os.dup2(to_browser_r, 3)
        os.dup2(from_browser_w, 4)
    os.close(to_browser_r)
    os.close(from_browser_w)
    os.execvp(command[0], [*command, *args])


if __name__ == "__main__":
    main()
