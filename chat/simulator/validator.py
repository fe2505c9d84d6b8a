"""The request rules of the Messages API, as a pure function: this module is Tandem's rule book.

`validate_request(body)` raises `InvalidRequest` with the message text the real API uses.
Schema checks (schema.py) run first on the request as sent, with raw message indices. Then, as the
API does, consecutive turns of the same role are merged (rule 2) and every other rule runs on the
merged turns: paths such as `messages.3.content.1` use the merged turn index and the block index
within the merged turn. That is what the real API reports, since it only sees merged turns.
Wordings marked *unconfirmed* were not found in a real capture. Code elsewhere (the history
builder, the simulator's schema) cites these numbers.

The rules:

1. The body has the documented shape (schema.py): known top-level fields, roles `user` and
   `assistant`, known block types, `tool_result` only in user turns, `tool_use` and thinking
   only in assistant turns, unique tool names.
2. Consecutive turns of the same role are merged into one turn before the rules below run.
3. Every turn has content, except an optional final assistant turn.
4. Text blocks (also inside tool results and the system prompt) are non-empty and hold
   non-whitespace text.
5. Each `tool_result` answers a `tool_use` of the turn just before it.
6. Each `tool_use` is answered by a `tool_result` in the turn just after it.
7. That next turn begins with those `tool_result` blocks (nothing before them).
8. `tool_use` ids are unique across the request.
9. A request holding `tool_use` or `tool_result` blocks defines `tools` (even when none is
   offered for this turn); `tool_choice` needs `tools` too.
10. The request ends with a user turn: current models take no assistant prefill.
11. A final assistant turn does not end with trailing whitespace (checked before rule 10, so
    that it stays observable).
12. `max_tokens` exceeds `thinking.budget_tokens`, and thinking is not combined with a
    `tool_choice` that forces tool use.
13. At most 4 `cache_control` breakpoints (tools, system, messages, in that order), no `1h`
    breakpoint after a `5m` one, and none on an empty text block.
14. With thinking enabled, the last assistant turn that carries a `tool_use` starts with a
    `thinking` or `redacted_thinking` block; thinking blocks are sent back with their valid
    signatures.
15. A `tool_result`'s content is a string or a list of `text` and `image` blocks.
"""

from __future__ import annotations

from typing import Any

from .errors import InvalidRequest
from .schema import check_body, fail
from .signature import is_valid_signature
from .turns import Turn, merge_turns, tool_use_ids

__all__ = ["InvalidRequest", "thinking_enabled", "validate_count_tokens", "validate_request"]

MAX_BREAKPOINTS = 4
THINKING_FIRST = (
    "Expected `thinking` or `redacted_thinking`, but found `{found}`. When `thinking` is enabled, "
    "a final `assistant` message must start with a thinking block (preceeding the lastmost set of "
    "`tool_use` and `tool_result` blocks). We recommend you include thinking blocks from previous "
    "turns. To avoid this requirement, disable `thinking`. Please consult our documentation at "
    "https://docs.claude.com/en/docs/build-with-claude/extended-thinking"
)


def validate_request(body: dict[str, Any]) -> None:
    """Refuse, like POST /v1/messages would, a request that breaks a rule."""
    check_body(body, count_tokens=False)
    _check_rules(body, count_tokens=False)


def validate_count_tokens(body: dict[str, Any]) -> None:
    """The same checks for POST /v1/messages/count_tokens, which takes no max_tokens."""
    check_body(body, count_tokens=True)
    _check_rules(body, count_tokens=True)


def thinking_enabled(body: dict[str, Any]) -> bool:
    thinking = body.get("thinking")
    return isinstance(thinking, dict) and thinking.get("type") in ("enabled", "adaptive")


def _check_rules(body: dict[str, Any], *, count_tokens: bool) -> None:
    if not body["messages"]:  # rule 3
        fail("messages", "at least one message is required")  # unconfirmed wording
    turns = merge_turns(body["messages"])
    _check_non_empty(turns)
    _check_text_blocks(turns)
    _check_unique_ids(turns)
    _check_pairing(turns)
    _check_tools_defined(body, turns)
    _check_final_turn(turns)
    _check_cache_control(body, turns)
    _check_thinking(body, turns, count_tokens=count_tokens)


def _check_non_empty(turns: list[Turn]) -> None:
    """Rule 3: only an optional final assistant turn may be empty."""
    for index, turn in enumerate(turns):
        final_assistant = index == len(turns) - 1 and turn.role == "assistant"
        if not turn.blocks and not final_assistant:
            fail(
                f"messages.{index}",
                "all messages must have non-empty content except for the optional final "
                "assistant message",
            )


def _text_blocks(turns: list[Turn]) -> list[tuple[str, dict[str, Any]]]:
    """Every text block with its path, including those nested in tool results."""
    found: list[tuple[str, dict[str, Any]]] = []
    for index, turn in enumerate(turns):
        for position, block in enumerate(turn.blocks):
            path = f"messages.{index}.content.{position}"
            if block.get("type") == "text":
                found.append((path, block))
            nested = block.get("content") if block.get("type") == "tool_result" else None
            for inner, item in enumerate(nested if isinstance(nested, list) else []):
                if item.get("type") == "text":
                    found.append((f"{path}.content.{inner}", item))
    return found


def _check_text_blocks(turns: list[Turn]) -> None:
    """Rule 4 (and rule 13's ban on cache_control on an empty text block, checked first)."""
    for path, block in _text_blocks(turns):
        if block["text"] == "" and block.get("cache_control") is not None:
            fail(path, "cache_control cannot be set for empty text blocks")  # unconfirmed wording
        if block["text"] == "":
            fail("messages", "text content blocks must be non-empty")
        if not block["text"].strip():
            fail("messages", "text content blocks must contain non-whitespace text")


def _check_unique_ids(turns: list[Turn]) -> None:
    """Rule 8: `tool_use` ids are unique."""
    seen: set[str] = set()
    for index, turn in enumerate(turns):
        for position, block in enumerate(turn.blocks):
            if block.get("type") != "tool_use":
                continue
            if block["id"] in seen:
                fail(f"messages.{index}.content.{position}", "`tool_use` ids must be unique")
            seen.add(block["id"])  # the line above: unconfirmed wording


def _check_pairing(turns: list[Turn]) -> None:
    """Rules 5, 6 and 7, in turn order."""
    for index, turn in enumerate(turns):
        if turn.role == "user":
            _check_results_answer_previous(turns, index)
        else:
            _check_uses_answered_next(turns, index)


def _check_results_answer_previous(turns: list[Turn], index: int) -> None:
    previous = turns[index - 1] if index > 0 else None
    expected = set(tool_use_ids(previous)) if previous is not None else set()
    unexpected = [
        (position, str(block["tool_use_id"]))
        for position, block in enumerate(turns[index].blocks)
        if block.get("type") == "tool_result" and block["tool_use_id"] not in expected
    ]
    if unexpected:
        ids = ", ".join(tool_id for _, tool_id in unexpected)
        fail(
            f"messages.{index}.content.{unexpected[0][0]}",
            f"unexpected `tool_use_id` found in `tool_result` blocks: {ids}. Each `tool_result` "
            "block must have a corresponding `tool_use` block in the previous message.",
        )


def _check_uses_answered_next(turns: list[Turn], index: int) -> None:
    ids = tool_use_ids(turns[index])
    if not ids:
        return
    following = turns[index + 1].blocks if index + 1 < len(turns) else []
    answered = {b.get("tool_use_id") for b in following if b.get("type") == "tool_result"}
    missing = [tool_id for tool_id in ids if tool_id not in answered]
    if missing:
        fail(
            f"messages.{index}",
            "`tool_use` ids were found without `tool_result` blocks immediately after: "
            f"{', '.join(missing)}. Each `tool_use` block must have a corresponding "
            "`tool_result` block in the next message.",
        )
    leading: set[Any] = set()
    for block in following:
        if block.get("type") != "tool_result":
            break
        leading.add(block.get("tool_use_id"))
    if not set(ids) <= leading:
        fail(
            f"messages.{index + 1}",
            f"Did not find {len(ids)} `tool_result` block(s) at the beginning of this message. "
            "Messages following `tool_use` blocks must begin with a matching number of "
            "`tool_result` blocks.",
        )


def _check_tools_defined(body: dict[str, Any], turns: list[Turn]) -> None:
    """Rule 9 (unconfirmed wordings): tool blocks and tool_choice need tools."""
    uses_tools = any(
        block.get("type") in ("tool_use", "tool_result") for turn in turns for block in turn.blocks
    )
    if uses_tools and not body.get("tools"):
        fail("", "Requests which include `tool_use` or `tool_result` blocks must define tools.")
    choice = body.get("tool_choice")
    if choice is not None and choice["type"] != "none" and not body.get("tools"):
        fail("", "tool_choice may only be specified while providing tools.")


def _check_final_turn(turns: list[Turn]) -> None:
    """Rule 11, then rule 10 (checked second so that rule 11 stays observable)."""
    last = turns[-1]
    if last.role != "assistant":
        return
    final = last.blocks[-1] if last.blocks else {}
    if final.get("type") == "text" and final["text"] != final["text"].rstrip():
        fail("messages", "final assistant content cannot end with trailing whitespace")
    raise InvalidRequest(
        "This model does not support assistant message prefill. "
        "The conversation must end with a user message."
    )


def _breakpoints(body: dict[str, Any], turns: list[Turn]) -> list[dict[str, Any]]:
    """Every cache_control, in cache prefix order: tools, system, messages."""
    holders: list[Any] = list(body.get("tools") or [])
    if isinstance(body.get("system"), list):
        holders.extend(body["system"])
    for turn in turns:
        for block in turn.blocks:
            holders.append(block)
            nested = block.get("content") if block.get("type") == "tool_result" else None
            holders.extend(nested if isinstance(nested, list) else [])
    return [h["cache_control"] for h in holders if h.get("cache_control") is not None]


def _check_cache_control(body: dict[str, Any], turns: list[Turn]) -> None:
    """Rule 13: at most 4 breakpoints, and no 1h breakpoint after a 5m one."""
    breakpoints = _breakpoints(body, turns)
    if len(breakpoints) > MAX_BREAKPOINTS:
        fail(
            "",
            f"A maximum of {MAX_BREAKPOINTS} blocks with cache_control may be provided. "
            f"Found {len(breakpoints)}.",
        )
    seen_short = False
    for control in breakpoints:
        ttl = control.get("ttl", "5m")
        if ttl == "1h" and seen_short:
            fail(  # unconfirmed wording
                "",
                "A cache_control block with ttl='1h' must not come after one with ttl='5m' "
                "(the order is tools, system, messages).",
            )
        seen_short = seen_short or ttl == "5m"


def _check_thinking(body: dict[str, Any], turns: list[Turn], *, count_tokens: bool) -> None:
    """Rules 12 and 14 (with the signature check of thinking blocks sent back)."""
    _check_signatures(turns)
    thinking = body.get("thinking") or {}
    budget = thinking.get("budget_tokens", 0) if thinking.get("type") == "enabled" else 0
    if not count_tokens and budget >= body["max_tokens"] > 0:
        fail(  # unconfirmed wording
            "",
            "`max_tokens` must be greater than `thinking.budget_tokens`. Please consult our "
            "documentation at https://docs.claude.com/en/docs/build-with-claude/"
            "extended-thinking#max-tokens-and-context-window-size",
        )
    if not thinking_enabled(body):
        return
    if (body.get("tool_choice") or {}).get("type") in ("any", "tool"):
        fail("", "Thinking may not be enabled when tool_choice forces tool use.")
    assistant = [i for i, turn in enumerate(turns) if turn.role == "assistant"]
    if not assistant or not tool_use_ids(turns[assistant[-1]]):
        return
    first = turns[assistant[-1]].blocks[0]["type"]
    if first not in ("thinking", "redacted_thinking"):
        fail(f"messages.{assistant[-1]}.content.0.type", THINKING_FIRST.format(found=first))


def _check_signatures(turns: list[Turn]) -> None:
    for index, turn in enumerate(turns):
        for position, block in enumerate(turn.blocks):
            if block.get("type") != "thinking":
                continue
            if not is_valid_signature(block["thinking"], block["signature"]):
                fail(
                    f"messages.{index}.content.{position}",
                    "Invalid `signature` in `thinking` block",
                )
