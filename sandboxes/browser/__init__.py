"""Browser sandboxes: one Chromium per sandbox, driven from the host by Playwright, kept warm and reused.

The front door (needs the ``gui`` extra, i.e. Playwright; ``import agentgym`` does not import it)::

    from agentgym.sandboxes.browser import browser_pool

    lease = await (await browser_pool("auto")).acquire()  # Docker when an engine answers, else local (warned)
    try:
        context = await lease.held.new_context(viewport={"width": 160, "height": 210})
        page = await context.new_page()             # an ordinary Playwright page
        ...
    finally:
        await lease.release()                       # contexts closed, browser kept warm for the next episode

Backends: ``docker`` runs Debian's Chromium headless shell in a container with ``--network none`` (no route to the
host or anywhere else; serve pages with :func:`serve_directory` or Playwright routes), capped
memory, CPU and processes, no host environment, files or Docker socket, labelled so that
``agentgym sandbox ls``/``prune`` see it. ``local`` runs the host's Chromium (``/usr/bin/chromium-headless-shell``,
else ``/usr/bin/chromium``) with NO network isolation, for machines without Docker and trusted pages only.
See ``docs/browser-sandbox.md``.
"""

from agentgym.sandboxes.browser.frames import PageFrames
from agentgym.sandboxes.browser.launch import BrowserLimits
from agentgym.sandboxes.browser.pool import BrowserPool, browser_pool
from agentgym.sandboxes.browser.sandbox import PING_TIMEOUT, BrowserSandbox, create_browser
from agentgym.sandboxes.browser.serve import abort_all, serve_directory

__all__ = [
    "PING_TIMEOUT",
    "BrowserLimits",
    "BrowserPool",
    "BrowserSandbox",
    "PageFrames",
    "abort_all",
    "browser_pool",
    "create_browser",
    "serve_directory",
]
