"""Tool-call ids that every chat template takes, for SFT rows.

A call's id only pairs it with the tool message that answers it, but templates are strict about its
form: Mistral's (its tokenizers' validator and the Jinja templates shipped with its models) refuse
any id that is not exactly 9 characters of ``a-z``, ``A-Z`` and ``0-9``, while agents and servers
write ``call_0`` or ``call_`` plus 24 characters. So an SFT conversation gets new ids of that form,
the same pairing kept. Each call gets its own id even when the model reused one (some servers
number the calls of each message from 0): a tool message answers the latest call of its id.
"""

from __future__ import annotations

import hashlib
import string
from typing import Any

ALPHABET = string.ascii_letters + string.digits
LENGTH = 9


def _new_id(original: str, seen: set[str]) -> str:
    """9 alphanumeric characters derived from the old id and the ids already given: an export is repeatable."""
    salt = len(seen)
    while True:
        number = int.from_bytes(hashlib.sha256(f"{salt}\0{original}".encode()).digest(), "big")
        made = ""
        for _ in range(LENGTH):
            number, digit = divmod(number, len(ALPHABET))
            made += ALPHABET[digit]
        if made not in seen:
            seen.add(made)
            return made
        salt += 1


def template_call_ids(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``messages`` (chat-template dicts, changed in place and returned) with every call id made template-safe.

    An assistant message's calls get fresh ids; a tool message's ``tool_call_id`` becomes the id given
    to the latest call that had its old id, or a fresh one when no call had it (an answer to nothing
    stays an answer to nothing, rather than being paired with some other call).
    """
    seen: set[str] = set()
    latest: dict[str, str] = {}
    for message in messages:
        for call in message.get("tool_calls", []):
            new = _new_id(call["id"], seen)
            latest[call["id"]] = new
            call["id"] = new
        if "tool_call_id" in message:
            old = message["tool_call_id"]
            message["tool_call_id"] = latest[old] if old in latest else _new_id(old, seen)
    return messages
