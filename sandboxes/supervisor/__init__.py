"""The in-sandbox supervisor: a stdlib-only package that answers newline-delimited JSON requests.

The host starts ``python3 -u -c <bootstrap> <config json>`` and writes this package's modules to its
stdin (see ``agentgym.sandboxes.bootstrap.BOOTSTRAP``, a few lines that install them in memory and run
:mod:`.main`), so it runs in any image that has a ``python3`` (3.9 or newer: CI holds it to the
sandbox contract on Debian bullseye's 3.9, the ``python-oldest`` recipe) and nothing needs baking
into the image or writing inside the sandbox. Requests arrive on stdin, or on a unix socket the host
listens on (``"socket"`` in the config), and replies go back the same way, in the format of
:mod:`.wire`, the one module the host imports too. The ops are listed in :mod:`.ops`.

One module per job: :mod:`.wire` (frames, replies, output capture), :mod:`.process` and
:mod:`.linux` (system calls), :mod:`.jail` (namespaces without bubblewrap), :mod:`.session` (the
Python session), :mod:`.zygote`, :mod:`.cleaner` (a wipe), :mod:`.copier` (a fork), :mod:`.ops` (the
requests) and :mod:`.main` (the loop).

Five kinds of process, so that no user code ever runs where it could reach anything but its own session:

- The **supervisor** reads requests. When the host starts it as root (Docker; bubblewrap as root; the
  local backend's own namespaces as root) it keeps only the rights to switch user and to signal,
  and every process that runs code is another uid (``"user"`` in the config), which cannot signal,
  trace or read the supervisor.
- The **zygote** is forked from the supervisor before the first request, so its memory holds nothing a
  request brought. It forks one Python session (a worker) whenever the supervisor asks, which costs a
  fork instead of starting an interpreter, and reaps its workers, telling the supervisor how each ended.
- A **worker** becomes the code's uid right after the fork (limits, new session, closed file
  descriptors, reseeded ``random``) and runs code in a fresh ``__main__``.
- A **copier** is forked by the supervisor for a fork's snapshot or restore and becomes the code's uid:
  it writes the entries of the places code can write to a pipe, or makes them from a pipe.
- A wipe's **cleaner** is the next worker, before it takes any code: forked by the zygote like any
  session and already the code's uid (so it removes exactly what that uid may remove), it kills every
  other process of the uid with one ``kill(-1)`` and waits for each to end on its pidfd, removes
  SysV IPC objects, and deletes everything that was
  not there at start from every writable mount (found in ``/proc/self/mountinfo`` when the supervisor
  started, not from a fixed list); it sends its verdict as its first reply, then serves as the
  fresh session. Anything it cannot remove makes the wipe unclean (and the supervisor kills it).
  One fork per wipe, from the small zygote, rather than a cleaner forked from the supervisor and then a
  session.

Code cannot use kernel keyrings: every process that runs code gets a seccomp filter under which
``add_key``, ``request_key`` and ``keyctl`` fail with EPERM (as Docker's default profile does), so
code can leave nothing there for a wipe to find (a uid's persistent keyring outlives its processes).

The supervisor itself never runs user code: commands and the Python session are child processes whose
output it reads through pipes, keeping at most ``output_bytes`` of each stream and draining (and
dropping) the rest, so that nothing user code does (loop forever, print gigabytes, fork, exhaust
memory, close its file descriptors, exit) can stop it from answering. A session lent to the host
(``session``) is read by the host instead, with the same bounds (``agentgym.sandboxes.direct_session``); the
supervisor then only starts and kills sessions. Children get the rlimits in
the config and volunteer to be the out-of-memory killer's first choice. The supervisor exits after
``wall_seconds`` or when the request stream closes, taking every child with it.

With ``"jail"`` in the config (the local backend without bubblewrap) the supervisor first gives itself
private mount, IPC, UTS, pid and (unless the sandbox has network) network namespaces: every host
mount read-only, fresh size-limited tmpfs at ``/tmp``, ``/dev/shm`` and the working directory, a
``/proc`` of its own, and an init that reaps orphans.
"""
