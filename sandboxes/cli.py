"""``agentgym sandbox build | ls | prune``: the sandbox layer's command-line glue.

Each works on every configured Docker endpoint (see :mod:`~agentgym.sandboxes.hosts`), or on those
given with ``--docker-host URL`` (repeatable).
"""

from __future__ import annotations

import argparse
import logging
import time
from typing import TYPE_CHECKING

from agentgym.errors import SandboxError

if TYPE_CHECKING:
    from agentgym.sandboxes.hosts import Endpoint


def endpoint_arg(text: str) -> Endpoint:
    """``--docker-host URL[=CAPACITY]``: an endpoint, or a clear usage error."""
    from agentgym.sandboxes.hosts import parse

    try:
        return parse(text)
    except SandboxError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def add_docker_host_option(parser: argparse.ArgumentParser, purpose: str) -> None:
    """``--docker-host URL[=CAPACITY]``, repeatable, collected in ``args.docker_hosts``."""
    parser.add_argument("--docker-host", dest="docker_hosts", type=endpoint_arg, action="append", default=[],
                        metavar="URL[=CAP]", help=f"{purpose} (repeatable; unix:///path, tcp://host:port, "
                        "ssh://user@host; TLS from DOCKER_TLS_VERIFY and DOCKER_CERT_PATH); default: "
                        "AGENTGYM_DOCKER_HOSTS, else DOCKER_HOST")


def _endpoints(args: argparse.Namespace) -> tuple[Endpoint, ...]:
    from agentgym.sandboxes import hosts

    return tuple(args.docker_hosts) or hosts.configured()


def add_commands(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Register ``sandbox`` and its subcommands on the ``agentgym`` command's subparsers."""
    sandbox = subparsers.add_parser("sandbox", help="build sandbox images, list and prune sandboxes")
    commands = sandbox.add_subparsers(dest="sandbox_command", required=True)

    build = commands.add_parser("build", help="build a sandbox image from a recipe (no-op if built)")
    build.add_argument("--recipe", default="python", help="recipe name (default: python)")
    source = build.add_mutually_exclusive_group()
    source.add_argument("--from-registry", dest="registry", action="store_true", default=None,
                        help="pull the recipe's public base image")
    source.add_argument("--no-registry", dest="registry", action="store_false",
                        help="build with debootstrap + docker import (no registry needed)")
    build.add_argument("--mirror", metavar="URL",
                       help="Debian mirror for debootstrap (default: $AGENTGYM_DEBIAN_MIRROR, else apt's sources)")
    build.add_argument("--security-mirror", metavar="URL",
                       help="mirror of the security suite (default: $AGENTGYM_DEBIAN_SECURITY_MIRROR, else apt's)")
    add_docker_host_option(build, "the engine to build on; one lacking the image copies it from one that has it")
    build.set_defaults(func=_build)

    ls = commands.add_parser("ls", help="list agentgym containers")
    add_docker_host_option(ls, "the engine to list")
    ls.set_defaults(func=_ls)

    prune = commands.add_parser("prune", help="remove agentgym containers whose owner is gone (--all: every one)")
    prune.add_argument("--all", dest="everything", action="store_true",
                       help="also remove containers in use by live runs (yours or, on a shared engine, others')")
    prune.add_argument("--label", dest="labels", type=_label, action="append", default=[], metavar="KEY=VALUE",
                       help="only containers with this label too (repeatable), e.g. agentgym.owner_pid=1234")
    prune.add_argument("--images", action="store_true", help="also remove images of outdated recipes")
    prune.add_argument("--dry-run", action="store_true", help="print what would be removed, remove nothing")
    add_docker_host_option(prune, "the engine to prune")
    prune.set_defaults(func=_prune)


def _label(text: str) -> tuple[str, str]:
    key, sep, value = text.partition("=")
    if not sep or not key:
        raise argparse.ArgumentTypeError(f"expected KEY=VALUE, got {text!r}")
    return key, value


def _build(args: argparse.Namespace) -> int:
    from agentgym.sandboxes.builder import build_image

    logging.basicConfig(level=logging.WARNING, format="%(message)s")
    tags = {build_image(args.recipe, registry=args.registry, endpoint=e, mirror=args.mirror,
                        security_mirror=args.security_mirror) for e in _endpoints(args)}
    print(*sorted(tags), sep="\n")
    return 0


def _ls(args: argparse.Namespace) -> int:
    from agentgym.sandboxes.reaper import list_sandboxes

    rows = [c for endpoint in _endpoints(args) for c in list_sandboxes(endpoint=endpoint)]
    print(f"{'ID':<13} {'OWNER':>8} {'AGE':>7}  {'LEAKED':<6} {'STATUS':<24} {'IMAGE':<28} ENDPOINT")
    for c in rows:
        age = f"{time.time() - c.started:.0f}s" if c.started else "?"
        leaked = "yes" if c.leaked else "no"
        print(f"{c.id:<13} {c.owner_pid or '?':>8} {age:>7}  {leaked:<6} {c.status:<24} {c.image:<28} {c.endpoint}")
    return 0


def _prune(args: argparse.Namespace) -> int:
    from agentgym.sandboxes.reaper import prune

    removed = [name for endpoint in _endpoints(args) for name in prune(
        everything=args.everything, images=args.images, labels=dict(args.labels), dry_run=args.dry_run,
        endpoint=endpoint,
    )]
    verb = "would remove" if args.dry_run else "removed"
    for name in removed:
        print(f"{verb} {name}")
    print(f"{len(removed)} {'to remove' if args.dry_run else 'removed'}")
    return 0
