"""The Debian mirrors an image build downloads from: this machine's own, never a host named in the repo.

A recipe says *what* an image holds (suite, packages); *where* the packages come from belongs to the
machine: a company mirror, a caching proxy, an offline copy. So the mirrors are read, in this order,
from

1. an explicit value (``agentgym sandbox build --mirror URL --security-mirror URL``),
2. ``AGENTGYM_DEBIAN_MIRROR`` and ``AGENTGYM_DEBIAN_SECURITY_MIRROR``,
3. apt's sources on this machine: the deb822 files (``*.sources``) and one-line lists (``*.list`` and
   ``sources.list``) where apt's own configuration puts them (``apt-config``, so ``APT_CONFIG`` is
   honoured; ``/etc/apt`` when apt is not installed).

From apt's sources, the archive mirror is the first ``deb`` entry that lists the recipe's suite (e.g.
``bookworm``), the security mirror the first that lists ``<suite>-security``. On a Debian host whose
sources name another release, its entries for any suite serve: a Debian mirror carries every release.
A machine with neither (not Debian, no variable) gets an error that says which variable to set.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from agentgym.errors import SandboxError

MIRROR_ENV = "AGENTGYM_DEBIAN_MIRROR"
SECURITY_MIRROR_ENV = "AGENTGYM_DEBIAN_SECURITY_MIRROR"
SCHEMES = ("http://", "https://", "file:/")
"""What debootstrap and apt in the chroot can fetch from (``mirror+``, ``cdrom:`` and the like cannot serve)."""


@dataclass(frozen=True)
class Source:
    """One ``deb`` entry of apt's sources: a mirror's URI and the suites it is used for."""

    uri: str
    suites: tuple[str, ...]


@dataclass(frozen=True)
class DebianMirrors:
    """Where ``debootstrap`` and the chroot's ``apt-get`` fetch a suite and its security updates."""

    archive: str
    security: str


def debian_mirrors(suite: str, *, archive: str | None = None, security: str | None = None) -> DebianMirrors:
    """The mirrors for ``suite``: the given ones, else the variables', else apt's sources' (module doc).

    Raises:
        SandboxError: No mirror is given and apt's sources name none for a Debian suite.
    """
    archive = archive or os.environ.get(MIRROR_ENV) or None
    security = security or os.environ.get(SECURITY_MIRROR_ENV) or None
    if archive and security:
        return DebianMirrors(archive.rstrip("/"), security.rstrip("/"))
    sources = apt_sources()
    archive = archive or _pick(sources, suite, security=False)
    security = security or _pick(sources, suite, security=True)
    if not archive or not security:
        missing = [name for name, value in ((MIRROR_ENV, archive), (SECURITY_MIRROR_ENV, security)) if not value]
        listed = "; ".join(f"{s.uri} ({' '.join(s.suites)})" for s in sources) or "none"
        raise SandboxError(
            f"no Debian mirror for {suite!r} in apt's sources on this machine (deb entries: {listed}); "
            f"set {' and '.join(missing)} (or pass --mirror/--security-mirror to agentgym sandbox build)")
    return DebianMirrors(archive.rstrip("/"), security.rstrip("/"))


def apt_sources() -> list[Source]:
    """The enabled ``deb`` entries of apt's sources, in the order apt reads them."""
    listing, parts = _source_paths()
    files = [listing] if listing.is_file() else []
    if parts.is_dir():
        files += sorted(p for p in parts.iterdir() if p.suffix in (".list", ".sources") and p.is_file())
    found: list[Source] = []
    for path in files:
        text = path.read_text(encoding="utf-8", errors="replace")
        found += parse_deb822(text) if path.suffix == ".sources" else parse_one_line(text)
    return [s for s in found if s.uri.startswith(SCHEMES)]


def parse_deb822(text: str) -> list[Source]:
    """The ``deb`` entries of a deb822 ``.sources`` file (``Enabled: no`` ones left out)."""
    found: list[Source] = []
    for stanza in re.split(r"\n\s*\n", text):
        fields: dict[str, str] = {}
        key = ""
        for line in stanza.splitlines():
            if line.startswith("#") or not line.strip():
                continue
            if line[0].isspace() and key:  # a continuation of the previous field
                fields[key] += " " + line.strip()
                continue
            key, _, value = line.partition(":")
            key = key.strip().lower()
            fields[key] = value.strip()
        if "deb" not in fields.get("types", "").split() or fields.get("enabled", "yes").lower() == "no":
            continue
        suites = tuple(fields.get("suites", "").split())
        found += [Source(uri, suites) for uri in fields.get("uris", "").split()]
    return found


def parse_one_line(text: str) -> list[Source]:
    """The ``deb`` lines of a one-line ``sources.list`` (``deb [options] URI SUITE COMPONENT...``)."""
    found: list[Source] = []
    for line in text.splitlines():
        line = re.sub(r"^(\s*deb)\s+\[[^\]]*\]", r"\1", line.split("#", 1)[0])  # drop [arch=... signed-by=...]
        words = line.split()
        if len(words) >= 3 and words[0] == "deb":
            found.append(Source(words[1], (words[2],)))
    return found


def _pick(sources: list[Source], suite: str, *, security: bool) -> str | None:
    """The first source for ``suite`` (or its security suite); on a Debian host, for any such suite."""
    wanted = f"{suite}-security" if security else suite
    for source in sources:
        if wanted in source.suites:
            return source.uri
    if not _debian_host():
        return None
    for source in sources:
        if any(s.endswith("-security") == security for s in source.suites):
            return source.uri
    return None


def _debian_host() -> bool:
    try:
        release = Path("/etc/os-release").read_text(encoding="utf-8")
    except OSError:
        return False
    return re.search(r"^ID=\"?debian\"?$", release, re.MULTILINE) is not None


def _source_paths() -> tuple[Path, Path]:
    """apt's ``sources.list`` and ``sources.list.d``, as its configuration (``APT_CONFIG`` included) says."""
    if shutil.which("apt-config") is None:
        return Path("/etc/apt/sources.list"), Path("/etc/apt/sources.list.d")
    done = subprocess.run(
        ["apt-config", "shell", "LIST", "Dir::Etc::sourcelist/f", "PARTS", "Dir::Etc::sourceparts/d"],
        capture_output=True, text=True, timeout=30, check=False)
    if done.returncode != 0:
        raise SandboxError(f"apt-config could not say where apt's sources are: {done.stderr.strip()[-500:]}")
    values = dict(re.findall(r"^(LIST|PARTS)='(.*)'$", done.stdout, re.MULTILINE))
    return Path(values.get("LIST", "/etc/apt/sources.list")), Path(values.get("PARTS", "/etc/apt/sources.list.d"))
