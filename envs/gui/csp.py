"""A Content-Security-Policy for every MiniWoB page: the page's own scripts run, nothing a model typed does.

Some task pages write what the model typed into the page as HTML (``terminal`` echoes each command
with ``innerHTML``), so typed markup such as ``<img src=x onerror=...>`` would run as script in the
page, and script can end the episode with any reward it likes. Rather than trust every page to
escape, each page is served with a policy that lets script run only from the served files and from
the page's own inline ``<script>`` blocks, named by their SHA-256 hashes: an event-handler attribute,
a ``<script>`` inserted later, or a ``javascript:`` URL, which is what markup typed into a page could
bring, is refused by the browser. So are ``eval`` and ``new Function``: jQuery 1.x runs the
``<script>`` elements of HTML it inserts (``.html()``, ``.append()``) through ``eval``, which let typed
``<script>`` run under a policy that allowed it. Only a page that loads jscolor gets them (it reads
its widget's options from an attribute with ``new Function``): the two colour-wheel tasks, which the
fuzz shows echo nothing (d3 needs them only to parse CSV, which no task does). Requests may go to the page's
own origin only (``connect-src``, which also covers WebSocket), and ``<object>``/``<embed>``
load nothing. Pages are declared UTF-8 (they are; with no charset Chromium guessed another encoding
for ``unicode-test``, showed its text garbled, and hashed its script differently).

One event handler is allowed by its hash: ``t``, the handler jQuery 1.x sets on a detached ``div``
to probe for ``focusin`` support (it never runs; refusing it changes nothing but reports a
violation on every page that loads jQuery). A model's markup could set that handler too; it does nothing.

Each page runs exactly its own scripts: ``script-src`` names the files its ``<script src>`` tags load
(by full URL, which CSP matches path and all), not every served file, so markup that does land in a
page cannot pull in another page's library as a gadget. No frames: ``frame-src 'none'`` refuses any
framed URL, and since a ``srcdoc`` frame is no request (it inherits the page's policy and would run
the page's scripts same-origin), :data:`NO_FRAMES`, an init script of every context, removes any
frame element as it is inserted and stops any frame document that starts anyway; no task ships a
frame. No new windows: the policy ``sandbox``es the page with scripts, same origin and forms only,
so ``target=_blank``, ``window.open``, downloads and modal dialogs are refused by the browser.

``tests/gui/test_gui_safety.py`` types markup into every text field of every task and checks that
none of it ran, and that honest play triggers no violation of the policy.
"""

from __future__ import annotations

import base64
import hashlib
import re
from urllib.parse import urljoin

_INLINE_SCRIPT = re.compile(rb"<script\b([^>]*)>(.*?)</script\s*>", re.IGNORECASE | re.DOTALL)
_HAS_SRC = re.compile(rb"\bsrc\s*=", re.IGNORECASE)
_SRC = re.compile(rb"""\bsrc\s*=\s*(?:"([^"]*)"|'([^']*)'|([^\s>]+))""", re.IGNORECASE)
SANDBOX = "sandbox allow-scripts allow-same-origin allow-forms"
"""What a page may do beyond showing itself: run its scripts, keep its origin (storage), submit its forms;
not open windows or tabs (``allow-popups``), download, or show modal dialogs."""
NO_FRAMES = """(() => {
  if (window !== window.top) { window.stop(); return; }
  const FRAMES = "iframe, frame";
  const drop = node => {
    if (node.nodeType !== 1) return;
    if (node.matches(FRAMES)) node.remove(); else for (const frame of node.querySelectorAll(FRAMES)) frame.remove();
  };
  new MutationObserver(records => { for (const record of records) record.addedNodes.forEach(drop); })
    .observe(document, {childList: true, subtree: true});
})();"""
"""Every context's init script (it runs before the page's own, in every frame): a frame element is removed
as it is inserted (a mutation observer's microtask, before its document loads) and a frame document that
starts anyway is stopped before it parses anything."""
_JQUERY_PROBE = b"t"
_NEEDS_EVAL = b"jscolor.min.js"


def content_security_policy(path: str, body: bytes) -> dict[str, str]:
    """The response headers for served file ``path`` (relative to the served root) with ``body``: the policy
    for an HTML page, else none."""
    if not path.endswith(".html"):
        return {}
    from agentgym.envs.gui.page import ORIGIN

    hashes = " ".join(f"'sha256-{digest}'" for digest in [*inline_script_hashes(body), _sha256(_JQUERY_PROBE)])
    scripts = " ".join(script_urls(f"{ORIGIN}/{path}", body)) or "'none'"
    evaluates = " 'unsafe-eval'" if _NEEDS_EVAL in body else ""
    policy = (f"script-src {scripts}{evaluates} 'unsafe-hashes' {hashes}; object-src 'none'; base-uri 'self'; "
              f"connect-src 'self'; form-action 'self'; frame-src 'none'; worker-src 'none'; {SANDBOX}")
    return {"content-security-policy": policy, "content-type": "text/html; charset=utf-8"}


def script_urls(page_url: str, html: bytes) -> list[str]:
    """The full URL of each script file ``html`` (served at ``page_url``) loads, in order, once each."""
    urls = []
    for match in _INLINE_SCRIPT.finditer(html):
        src = _SRC.search(match[1])
        if src is not None:
            url = urljoin(page_url, (src[1] or src[2] or src[3]).decode("utf-8", "replace").strip())
            urls.append(url.split("#", 1)[0].replace(";", "%3B").replace(",", "%2C").replace(" ", "%20"))
    return list(dict.fromkeys(urls))


def inline_script_hashes(html: bytes) -> list[str]:
    """Base64 SHA-256 of each inline ``<script>`` block of ``html``, as CSP names them."""
    return [_sha256(match[2]) for match in _INLINE_SCRIPT.finditer(html) if not _HAS_SRC.search(match[1])]


def _sha256(code: bytes) -> str:
    return base64.b64encode(hashlib.sha256(code).digest()).decode()
