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

``tests/gui/test_gui_safety.py`` types markup into every text field of every task and checks that
none of it ran, and that honest play triggers no violation of the policy.
"""

from __future__ import annotations

import base64
import hashlib
import re

_INLINE_SCRIPT = re.compile(rb"<script\b([^>]*)>(.*?)</script\s*>", re.IGNORECASE | re.DOTALL)
_HAS_SRC = re.compile(rb"\bsrc\s*=", re.IGNORECASE)
_JQUERY_PROBE = b"t"
_NEEDS_EVAL = b"jscolor.min.js"


def content_security_policy(path: str, body: bytes) -> dict[str, str]:
    """The response headers for served file ``path`` with ``body``: the policy for an HTML page, else none."""
    if not path.endswith(".html"):
        return {}
    hashes = " ".join(f"'sha256-{digest}'" for digest in [*inline_script_hashes(body), _sha256(_JQUERY_PROBE)])
    evaluates = " 'unsafe-eval'" if _NEEDS_EVAL in body else ""
    policy = (f"script-src 'self'{evaluates} 'unsafe-hashes' {hashes}; object-src 'none'; base-uri 'self'; "
              "connect-src 'self'; form-action 'self'")
    return {"content-security-policy": policy, "content-type": "text/html; charset=utf-8"}


def inline_script_hashes(html: bytes) -> list[str]:
    """Base64 SHA-256 of each inline ``<script>`` block of ``html``, as CSP names them."""
    return [_sha256(match[2]) for match in _INLINE_SCRIPT.finditer(html) if not _HAS_SRC.search(match[1])]


def _sha256(code: bytes) -> str:
    return base64.b64encode(hashlib.sha256(code).digest()).decode()
