"""This machine's Python package indexes, as pip is configured, for a file pip itself cannot fetch.

The corpus ships in an sdist that ``pip download`` cannot get (pip would build it to read its
metadata), so :mod:`.data` reads the index itself. It reads the one pip would: ``index-url`` and
``extra-index-url`` from ``pip config list`` (pip's files and its ``PIP_INDEX_URL`` /
``PIP_EXTRA_INDEX_URL`` variables, with pip's precedence: variable, then the ``download`` section,
then ``global``), else pip's built-in default, read from pip so that this repo names no host. A
company mirror, a proxy or a ``file://`` copy configured for pip is therefore used here too.
``AGENTGYM_PYPI_INDEX`` (or ``agentgym data fetch --index-url``) overrides them all.

An index page is read in either form of the simple API: JSON (PEP 691) or HTML (PEP 503; a
``file://`` index is a folder of ``index.html`` pages).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import urllib.parse
import urllib.request

from agentgym.errors import DataError

INDEX_ENV = "AGENTGYM_PYPI_INDEX"
JSON_TYPE = "application/vnd.pypi.simple.v1+json"
_ANCHOR = re.compile(r"<a\s[^>]*?href=\"([^\"]+)\"[^>]*>\s*([^<]+?)\s*</a>", re.IGNORECASE)


def indexes(override: str | None = None) -> list[str]:
    """The index URLs to try, in pip's order: ``override`` or ``$AGENTGYM_PYPI_INDEX`` alone, else pip's."""
    chosen = override or os.environ.get(INDEX_ENV)
    if chosen:
        return [chosen]
    settings = pip_settings()

    def setting(name: str) -> str | None:
        return next((settings[k] for k in (f":env:.{name}", f"download.{name}", f"global.{name}") if k in settings),
                    None)

    return [setting("index-url") or _pip_default(), *(setting("extra-index-url") or "").split()]


def pip_settings() -> dict[str, str]:
    """``pip config list`` as a dict (``global.index-url`` → its value); empty when pip says nothing."""
    done = subprocess.run([sys.executable, "-m", "pip", "config", "list"], capture_output=True, text=True,
                          timeout=60, check=False, env={**os.environ, "PIP_DISABLE_PIP_VERSION_CHECK": "1"})
    return dict(re.findall(r"^(\S+?)='(.*)'$", done.stdout, re.MULTILINE))


def project_files(index: str, project: str) -> dict[str, str]:
    """File name → download URL of every file the index lists for ``project``."""
    page = f"{index.rstrip('/')}/{project}/"
    if page.startswith("file:"):  # a folder on disk: its listing is the index.html inside
        page += "index.html"
    request = urllib.request.Request(page, headers={"Accept": f"{JSON_TYPE}, text/html;q=0.1"})
    with urllib.request.urlopen(request, timeout=60) as response:
        kind = response.headers.get("Content-Type", "")
        body = response.read()
    if "json" in kind:  # PEP 691 (servers that are not a real index may say plain application/json)
        listing = json.loads(body)
        return {str(f["filename"]): urllib.parse.urljoin(page, str(f["url"])) for f in listing.get("files", [])}
    text = body.decode("utf-8", errors="replace")
    return {name: urllib.parse.urldefrag(urllib.parse.urljoin(page, href)).url for href, name in _ANCHOR.findall(text)}


def _pip_default() -> str:
    """pip's own default index (pip keeps it as a constant; there is no command that prints it)."""
    try:
        from pip._internal.models.index import PyPI
    except ImportError as e:
        raise DataError(f"pip names no default index here; set {INDEX_ENV} or PIP_INDEX_URL") from e
    return str(PyPI.simple_url)

