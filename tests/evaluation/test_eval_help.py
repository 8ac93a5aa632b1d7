"""``agentgym eval --help`` explains every option, and a scripted-policy name an env lacks is said plainly."""

from __future__ import annotations

import argparse
from pathlib import Path

from agentgym.cli import build_parser

from .helpers import run_cli


def eval_parser() -> argparse.ArgumentParser:
    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return sub.choices["eval"]


def test_every_eval_option_has_help() -> None:
    bare = [a.option_strings[0] if a.option_strings else a.dest for a in eval_parser()._actions
            if not (a.help or "").strip()]
    assert bare == []


def test_eval_help_prints_each_option_with_its_words(capsys) -> None:
    code, printed, _ = run_cli(capsys, "eval", "--help")
    assert code == 0
    for option, words in (("--seed", "first seed"), ("--sandbox", "where untrusted code runs"),
                          ("--max-turns", "after N turns"), ("--temperature", "sampling temperature"),
                          ("--max-tokens", "completion tokens")):
        assert option in printed and words in printed, option


def test_mcp_with_the_reference_policy_says_it_ships_none(capsys) -> None:
    code, printed, err = run_cli(capsys, "eval", "mcp", "--model", "reference")
    assert code == 2 and printed == "" and len(err.strip().splitlines()) == 1, err
    assert "has no 'reference' policy (it ships no scripted policy)" in err
    assert "--model openai/gpt-4o-mini" in err and "cannot tell its provider" not in err


def test_an_env_with_other_scripted_policies_names_them(capsys, monkeypatch) -> None:
    monkeypatch.chdir(Path(__file__).resolve().parents[2])  # examples/ importable, as from a checkout
    code, _, err = run_cli(capsys, "eval", "examples.custom_env:Calculator", "--model", "reference")
    assert code == 2 and "has no 'reference' policy (its scripted policies are scripted)" in err, err
