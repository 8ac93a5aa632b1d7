"""Started by Playwright as its "Chromium": hands the DevTools pipe to the agentgym process, then becomes the browser.

Playwright starts its browser with the DevTools pipe on fds 3 (commands in) and 4 (replies out).
This script (run by a stub that ``direct.py`` writes, with ``python -I -S``: the standard library
only, nothing of the environment's Python settings) connects to ``AGENTGYM_BROWSER_SOCKET`` (a unix
socket in the agentgym process's private directory), sends it Playwright's two ends with
``SCM_RIGHTS``, and execs ``AGENTGYM_BROWSER_COMMAND`` (one argument a line) followed by
Playwright's arguments. Chromium's own end of the pipe is, by ``AGENTGYM_BROWSER_PIPE``:

- ``pipes``: a new pair of pipes made here, whose other ends go to the agentgym process with
  Playwright's; Chromium gets them on fds 3 and 4, or ``docker run -i`` on its stdin and stdout
  (the container maps them onto Chromium's fds 3 and 4: Docker's attach stream carries the bytes);
- ``fifos``: two FIFOs the agentgym process made in a directory mounted into the container, which
  Chromium opens inside as its fds 3 and 4 (the kernel carries the bytes; nothing of Docker's does).

For ``docker run``, Playwright's ``--user-data-dir``, a host path, becomes the container's
``/tmp/profile``. So Playwright still starts, watches and kills the browser process itself; only the
pipe's bytes pass through the agentgym process on their way.
"""

import os
import socket
import sys


def main() -> None:
    path = os.environ.pop("AGENTGYM_BROWSER_SOCKET")
    command = os.environ.pop("AGENTGYM_BROWSER_COMMAND").split("\n")
    fifos = os.environ.pop("AGENTGYM_BROWSER_PIPE") == "fifos"
    docker = command[:2] == ["docker", "run"]
    ours: list[int] = []
    if not fifos:
        to_browser_r, to_browser_w = os.pipe()
        from_browser_r, from_browser_w = os.pipe()
        ours = [to_browser_w, from_browser_r]
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
        conn.connect(path)
        socket.send_fds(conn, [b"pipe"], [3, 4, *ours])
    for fd in (3, 4, *ours):
        os.close(fd)
    if not fifos:
        os.dup2(to_browser_r, 0 if docker else 3)
        os.dup2(from_browser_w, 1 if docker else 4)
        os.close(to_browser_r)
        os.close(from_browser_w)
    args = sys.argv[1:]
    if docker:
        args = ["--user-data-dir=/tmp/profile" if a.startswith("--user-data-dir=") else a for a in args]
    os.execvp(command[0], [*command, *args])


if __name__ == "__main__":
    main()
