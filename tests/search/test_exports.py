"""The package's front door: ``__all__`` is the public surface, and importing it stays cheap."""

import subprocess
import sys

import agentgym.envs.search as search


def test_all_is_exactly_the_public_surface() -> None:
    public = {name for name in dir(search) if not name.startswith("_")}
    modules = {name for name in public if type(getattr(search, name)).__name__ == "module"}
    assert set(search.__all__) == public - modules


def test_import_loads_no_search_engine_http_client_or_llm_library() -> None:
    code = ("import sys, agentgym.envs.search; "
            "print(sorted(m for m in ('tantivy', 'trafilatura', 'litellm', 'aiohttp') if m in sys.modules))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"
