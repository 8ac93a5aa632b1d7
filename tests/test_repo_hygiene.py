"""What the repository must never carry: a package registry's host name (mirrors come from the machine's
own apt and pip configuration), a real outside address for isolation tests to aim at (they aim at this
machine and at reserved documentation ranges), and in benchmark results an absolute path of the machine
they ran on (another machine can use none of it)."""

from __future__ import annotations

import json
import re
import subprocess
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).parents[1]

# Spelled in parts, so this file does not hold what it looks for.
REGISTRY_HOSTS = [".".join(parts) for parts in (
    ("deb", "debian", "org"), ("security", "debian", "org"), ("archive", "ubuntu", "com"),
    ("pypi", "org"), ("files", "pythonhosted", "org"), ("registry", "npmjs", "org"),
    ("download", "pytorch", "org"))]
PUBLIC_RESOLVERS = [".".join(parts) for parts in (("8", "8", "8", "8"), ("8", "8", "4", "4"),
                                                  ("1", "1", "1", "1"), ("9", "9", "9", "9"))]
ABSOLUTE_PATH = re.compile(r"(?:^|[\s,=:'\"(])(/[A-Za-z][^\s,'\")]*)")


def tracked_text_files() -> Iterator[tuple[str, str]]:
    names = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True).stdout
    for name in names.decode().split("\0"):
        path = ROOT / name
        if not name or not path.is_file():
            continue
        try:
            yield name, path.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            continue  # a binary file (an image): no text to name a host in


def test_no_tracked_file_names_a_registry_host_or_a_public_resolver():
    found = [(name, needle) for name, text in tracked_text_files()
             for needle in (*REGISTRY_HOSTS, *PUBLIC_RESOLVERS)
             if re.search(rf"(?<![\w.]){re.escape(needle)}(?![\w])", text)]
    assert not found, found


def strings(value: object) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for key, item in value.items():
            yield str(key)
            yield from strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from strings(item)


def test_no_benchmark_result_holds_an_absolute_path():
    results = sorted((ROOT / "benchmarks" / "results").glob("*.json"))
    assert results
    found = {path.name: hits for path in results
             if (hits := [m for s in strings(json.loads(path.read_text())) for m in ABSOLUTE_PATH.findall(s)])}
    assert not found, found


def test_the_path_pattern_finds_paths_in_commands_and_lists():
    assert ABSOLUTE_PATH.findall("x.py --versions /tmp/old,/srv/new --data=/a/b") == ["/tmp/old", "/srv/new", "/a/b"]
    assert not ABSOLUTE_PATH.findall("ratio 1.2/s, a/b relative, 2/3")
