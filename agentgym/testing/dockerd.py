"""A second Docker engine on this machine for a test or benchmark: its own socket, data root and exec root.

The shared engine at ``/var/run/docker.sock`` serves every other test (and other people's runs) and is
never touched. :func:`second_engine` starts ``dockerd`` listening on a unix socket and, with
``tls=True``, also on ``tcp://127.0.0.1:PORT`` with mutual TLS (certificates made here with
``cryptography``), with no iptables rules and a bridge of its own (a new interface on an unused
``10.x.y.0/24``, deleted afterwards). Not ``--bridge none``: a daemon started so deletes the host's
``docker0``, which the shared engine's networked containers need. Stopping it stops its containers;
its directory is then removed.

Needs root and ``dockerd`` on the PATH. Suites that need an engine they may stop or restart (a fault
suite) use it too::

    from agentgym.testing.dockerd import second_engine

    with second_engine() as engine:
        ...  # engine.unix, engine.tcp (an Endpoint), engine.stop(), engine.start()
"""

from __future__ import annotations

import contextlib
import datetime
import ipaddress
import os
import secrets
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

from agentgym.sandboxes.hosts import Endpoint

START_SECONDS = 60
STOP_SECONDS = 60


class Engine:
    """One extra ``dockerd`` under ``root``: ``unix`` is its socket endpoint, ``tcp`` its TLS one (or None)."""

    def __init__(self, root: Path, tls: bool, bridge: str) -> None:
        self.root = root
        self.bridge = bridge
        self.log = root / "dockerd.log"
        self.unix = Endpoint(f"unix://{root}/d.sock")
        self.tcp: Endpoint | None = None
        if tls:
            certs = root / "certs"
            make_certificates(certs)
            self.tcp = Endpoint(f"tcp://127.0.0.1:{free_port()}", tls_verify=True, cert_path=str(certs / "client"))
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        """Start the daemon and wait until it answers on its socket."""
        command = [
            "dockerd", "--host", self.unix.url, "--data-root", str(self.root / "data"),
            "--exec-root", str(self.root / "exec"), "--pidfile", str(self.root / "d.pid"),
            "--bridge", self.bridge, "--iptables=false", "--ip-masq=false", "--ip-forward=false",
        ]
        if self.tcp is not None:
            server = self.root / "certs" / "server"
            command += ["--host", self.tcp.url, "--tlsverify", f"--tlscacert={server / 'ca.pem'}",
                        f"--tlscert={server / 'cert.pem'}", f"--tlskey={server / 'key.pem'}"]
        with open(self.log, "ab") as log:
            self.proc = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        deadline = time.monotonic() + START_SECONDS
        while not self.answers():
            if self.proc.poll() is not None or time.monotonic() > deadline:
                tail = self.log.read_text(errors="replace")[-3000:]
                self.stop()
                raise RuntimeError(f"the second dockerd did not start:\n{tail}")
            time.sleep(0.2)

    def answers(self) -> bool:
        done = subprocess.run(["docker", "-H", self.unix.url, "version", "--format", "{{.Server.Version}}"],
                              capture_output=True, timeout=10, check=False)
        return done.returncode == 0

    def stop(self) -> None:
        """Stop the daemon (it stops its containers) and wait for it and its containerd to exit."""
        if self.proc is None:
            return
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(STOP_SECONDS)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()
        self.proc = None


@contextlib.contextmanager
def second_engine(*, tls: bool = False) -> Iterator[Engine]:
    """A running extra engine for the block; stopped and its directory removed afterwards."""
    root = Path(tempfile.mkdtemp(prefix="agentgym-dockerd-"))  # short: a socket path has 108 bytes at most
    bridge = _make_bridge()
    engine = Engine(root, tls, bridge)
    try:
        engine.start()
        yield engine
    finally:
        engine.stop()
        subprocess.run(["ip", "link", "delete", bridge], check=False, capture_output=True)
        _unmount_under(root)
        shutil.rmtree(root, ignore_errors=True)


def _make_bridge() -> str:
    """A new bridge interface with an address on a 10.x.y.0/24 no route uses yet; its name."""
    routes = subprocess.run(["ip", "-4", "route"], capture_output=True, text=True, check=True).stdout
    name = f"agbr{secrets.token_hex(3)}"
    while True:
        net = f"10.{secrets.randbelow(200) + 50}.{secrets.randbelow(250)}"
        if f"{net}." not in routes:
            break
    subprocess.run(["ip", "link", "add", name, "type", "bridge"], check=True, capture_output=True)
    subprocess.run(["ip", "addr", "add", f"{net}.1/24", "dev", name], check=True, capture_output=True)
    subprocess.run(["ip", "link", "set", name, "up"], check=True, capture_output=True)
    return name


def _unmount_under(root: Path) -> None:
    """Unmount whatever a killed daemon left mounted under ``root`` (deepest first), so it can be removed."""
    with open("/proc/self/mounts", encoding="utf-8") as f:
        points = [line.split()[1] for line in f if line.split()[1].startswith(str(root))]
    for point in sorted(points, key=len, reverse=True):
        subprocess.run(["umount", "-l", point], check=False, capture_output=True)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def make_certificates(folder: Path) -> None:
    """A CA, a server certificate for 127.0.0.1 and a client certificate, as Docker's TLS wants them.

    ``folder/server`` holds what dockerd needs, ``folder/client`` what a client needs (the
    ``DOCKER_CERT_PATH`` layout: ``ca.pem``, ``cert.pem``, ``key.pem``).
    """
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

    now = datetime.datetime.now(datetime.UTC)

    def name(common: str) -> x509.Name:
        return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common)])

    def issue(subject: str, key: ec.EllipticCurvePrivateKey, ca_key: ec.EllipticCurvePrivateKey,
              extensions: list[tuple[x509.ExtensionType, bool]]) -> x509.Certificate:
        builder = (x509.CertificateBuilder().subject_name(name(subject)).issuer_name(name("agentgym test CA"))
                   .public_key(key.public_key()).serial_number(x509.random_serial_number())
                   .not_valid_before(now - datetime.timedelta(minutes=5))
                   .not_valid_after(now + datetime.timedelta(days=1)))
        for extension, critical in extensions:
            builder = builder.add_extension(extension, critical=critical)
        return builder.sign(ca_key, hashes.SHA256())

    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca = issue("agentgym test CA", ca_key, ca_key, [(x509.BasicConstraints(ca=True, path_length=None), True)])
    server_key, client_key = ec.generate_private_key(ec.SECP256R1()), ec.generate_private_key(ec.SECP256R1())
    server = issue("127.0.0.1", server_key, ca_key, [
        (x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1")), x509.DNSName("localhost")]),
         False),
        (x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), False),
    ])
    client = issue("agentgym test client", client_key, ca_key,
                   [(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.CLIENT_AUTH]), False)])
    for role, cert, key in (("server", server, server_key), ("client", client, client_key)):
        (folder / role).mkdir(parents=True)
        (folder / role / "ca.pem").write_bytes(ca.public_bytes(serialization.Encoding.PEM))
        (folder / role / "cert.pem").write_bytes(cert.public_bytes(serialization.Encoding.PEM))
        (folder / role / "key.pem").write_bytes(key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()))
