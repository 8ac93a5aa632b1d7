"""Debian mirrors come from this machine's configuration (an option, a variable, apt's sources), never a recipe."""

from __future__ import annotations

import asyncio
import json
import shutil
import threading
import urllib.error
import urllib.request
import uuid
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from agentgym.errors import SandboxError
from agentgym.sandboxes import builder, engine, mirrors
from tests.conftest import docker_or_skip

DEB822 = """\
Types: deb deb-src
# a comment inside the stanza
URIs: http://192.0.2.10/debian
  http://192.0.2.11/debian
Suites: bookworm bookworm-updates
Components: main

Types: deb-src
URIs: http://192.0.2.12/only-sources
Suites: bookworm-security

Types: deb
Enabled: no
URIs: http://192.0.2.13/disabled
Suites: bookworm-security

Types: deb
URIs: http://192.0.2.14/debian-security
Suites: bookworm-security
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
"""

ONE_LINE = """\
# deb http://192.0.2.20/commented bookworm main
deb [arch=amd64 signed-by=/usr/share/keyrings/k.gpg] http://192.0.2.21/debian trixie main
deb-src http://192.0.2.22/debian trixie main
deb cdrom:/media/cdrom/ bookworm main
deb http://192.0.2.23/security trixie-security main  # trailing comment
"""


def test_deb822_and_one_line_sources_are_read_as_apt_reads_them() -> None:
    assert mirrors.parse_deb822(DEB822) == [
        mirrors.Source("http://192.0.2.10/debian", ("bookworm", "bookworm-updates")),
        mirrors.Source("http://192.0.2.11/debian", ("bookworm", "bookworm-updates")),
        mirrors.Source("http://192.0.2.14/debian-security", ("bookworm-security",)),
    ]
    assert mirrors.parse_one_line(ONE_LINE) == [
        mirrors.Source("http://192.0.2.21/debian", ("trixie",)),
        mirrors.Source("cdrom:/media/cdrom/", ("bookworm",)),  # apt_sources drops it: debootstrap cannot fetch it
        mirrors.Source("http://192.0.2.23/security", ("trixie-security",)),
    ]


@pytest.fixture
def apt_config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An apt configuration of the test's own (``APT_CONFIG``): its sources are the folder returned."""
    if shutil.which("apt-config") is None:
        pytest.skip("apt-config is not installed: apt's configuration cannot be pointed elsewhere")
    sources = tmp_path / "apt"
    (sources / "sources.list.d").mkdir(parents=True)
    config = tmp_path / "apt.conf"
    config.write_text(f'Dir::Etc::sourcelist "{sources}/sources.list";\n'
                      f'Dir::Etc::sourceparts "{sources}/sources.list.d";\n', encoding="utf-8")
    monkeypatch.setenv("APT_CONFIG", str(config))
    monkeypatch.delenv(mirrors.MIRROR_ENV, raising=False)
    monkeypatch.delenv(mirrors.SECURITY_MIRROR_ENV, raising=False)
    return sources


def test_mirrors_come_from_apt_then_variables_then_options(apt_config: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (apt_config / "sources.list").write_text(ONE_LINE, encoding="utf-8")
    (apt_config / "sources.list.d" / "debian.sources").write_text(DEB822, encoding="utf-8")
    (apt_config / "sources.list.d" / "ignored.txt").write_text("deb http://192.0.2.30/x bookworm main\n")
    assert [s.uri for s in mirrors.apt_sources()] == [
        "http://192.0.2.21/debian", "http://192.0.2.23/security", "http://192.0.2.10/debian",
        "http://192.0.2.11/debian", "http://192.0.2.14/debian-security"]
    # the first entry that lists the suite, not the first entry
    assert mirrors.debian_mirrors("bookworm") == mirrors.DebianMirrors(
        "http://192.0.2.10/debian", "http://192.0.2.14/debian-security")
    assert mirrors.debian_mirrors("trixie") == mirrors.DebianMirrors(
        "http://192.0.2.21/debian", "http://192.0.2.23/security")
    monkeypatch.setenv(mirrors.MIRROR_ENV, "http://192.0.2.40/from-variable/")
    assert mirrors.debian_mirrors("bookworm") == mirrors.DebianMirrors(
        "http://192.0.2.40/from-variable", "http://192.0.2.14/debian-security")
    assert mirrors.debian_mirrors("bookworm", archive="http://192.0.2.50/a", security="http://192.0.2.50/s") == (
        mirrors.DebianMirrors("http://192.0.2.50/a", "http://192.0.2.50/s"))


def test_no_mirror_anywhere_is_an_error_that_says_what_to_set(apt_config: Path) -> None:
    with pytest.raises(SandboxError, match=f"{mirrors.MIRROR_ENV} and {mirrors.SECURITY_MIRROR_ENV}"):
        mirrors.debian_mirrors("bookworm")


def test_recipes_name_no_host_and_one_that_does_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for name in builder.recipe_names():
        text = (builder.RECIPES / f"{name}.json").read_text(encoding="utf-8")
        assert "://" not in text and "mirror" not in text, name
    (tmp_path / "hosted.json").write_text(json.dumps({"suite": "bookworm", "mirror": "http://192.0.2.1/debian"}))
    monkeypatch.setattr(builder, "RECIPES", tmp_path)
    with pytest.raises(SandboxError, match="mirror"):
        builder.load_recipe("hosted")


class _Mirror(ThreadingHTTPServer):
    """A mirror on loopback that passes requests on to this machine's real ones and notes each path."""

    def __init__(self, upstream: mirrors.DebianMirrors) -> None:
        super().__init__(("127.0.0.1", 0), _Forward)
        self.upstream = {"archive": upstream.archive, "security": upstream.security}
        self.seen: list[str] = []

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"


class _Forward(BaseHTTPRequestHandler):
    server: _Mirror

    def do_GET(self) -> None:  # the name http.server calls
        which, _, rest = self.path.lstrip("/").partition("/")
        self.server.seen.append(self.path)
        if which not in self.server.upstream:
            self.send_error(404)
            return
        try:
            with urllib.request.urlopen(f"{self.server.upstream[which]}/{rest}", timeout=120) as upstream:
                self.send_response(200)
                if upstream.headers.get("Content-Length"):
                    self.send_header("Content-Length", upstream.headers["Content-Length"])
                self.end_headers()
                shutil.copyfileobj(upstream, self.wfile)
        except urllib.error.HTTPError as e:
            self.send_error(e.code)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def loopback_mirror() -> Iterator[_Mirror]:
    try:
        upstream = mirrors.debian_mirrors("bookworm")  # this machine's real configuration, before the test's own
    except SandboxError as e:
        pytest.skip(f"this machine's apt sources name no Debian mirror to stand behind the test's: {e}")
    server = _Mirror(upstream)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()


@pytest.mark.docker
async def test_an_image_builds_from_the_mirror_apt_is_configured_with(
        loopback_mirror: _Mirror, apt_config: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The only mirror given is in apt's sources (a deb822 file); the build's every download goes through it."""
    docker_or_skip()
    (apt_config / "sources.list.d" / "debian.sources").write_text(
        f"Types: deb\nURIs: {loopback_mirror.base}/archive\nSuites: bookworm bookworm-updates\nComponents: main\n\n"
        f"Types: deb\nURIs: {loopback_mirror.base}/security\nSuites: bookworm-security\nComponents: main\n",
        encoding="utf-8")
    name = f"mirror-test-{uuid.uuid4().hex[:8]}"
    recipes = tmp_path / "recipes"
    recipes.mkdir()
    (recipes / f"{name}.json").write_text(json.dumps({
        "description": "minbase and one package from the security-enabled apt step", "suite": "bookworm",
        "packages": [], "apt_packages": ["hello"]}))
    monkeypatch.setattr(builder, "RECIPES", recipes)
    tag = builder.image_tag(name)
    api = engine.client()
    try:
        assert await asyncio.to_thread(builder.build_image, name, registry=False, copy=False) == tag
        said = await asyncio.to_thread(api.containers.run, tag, ["hello"], remove=True, network_mode="none")
        assert said == b"Hello, world!\n"
    finally:
        with_image = [t for i in api.images.list(name=tag.split(":")[0]) for t in i.tags]
        if tag in with_image:
            api.images.remove(tag)
    fetched = {path.split("/")[1] for path in loopback_mirror.seen}
    assert fetched == {"archive", "security"}, loopback_mirror.seen[:20]
    assert any(p.startswith("/archive/dists/bookworm/") for p in loopback_mirror.seen)
    assert any(p.startswith("/security/dists/bookworm-security/") for p in loopback_mirror.seen)
    assert any(p.startswith("/archive/pool/") and "/hello_" in p for p in loopback_mirror.seen)
