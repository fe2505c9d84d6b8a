"""The load benchmark's database checks, run inside the server's environment.

`manage.py shell -c "from tests.bench.load_checks import main; main('load')"` prints one JSON
object: whether the conversations of users named ``load*`` are quiet, and what the checks found:

* every user message answered: a complete, current reply with a higher seq;
* every tool_use paired exactly once: every ToolPair flushed, its tool_use in exactly one
  flushed call message and its tool_result in exactly one result message, and every tool_use a
  reply streamed has a ToolPair;
* no request refused by the simulator's validator: such a refusal is a 400 that Tandem turns
  into a reply with the error "The API rejected the request: ..." (chat/modelapi/error_texts.py).
"""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from typing import Any

REJECTED = "The API rejected the request"


def check(prefix: str) -> dict[str, Any]:
    from chat.models import Conversation, Message, ToolPair

    conversations = Conversation.objects.filter(owner__username__startswith=prefix)
    rows = list(
        Message.objects.filter(conversation__in=conversations)
        .order_by("conversation_id", "seq")
        .values("conversation_id", "seq", "kind", "status", "superseded", "error", "content")
    )
    by_conversation: dict[int, list[dict[str, Any]]] = defaultdict(list)
    for row in rows:
        by_conversation[row["conversation_id"]].append(row)

    unanswered = buried = 0
    for thread in by_conversation.values():
        buried += _buried(thread)
        answers = [
            m["seq"] for m in thread
            if m["kind"] == "reply" and m["status"] == "complete" and not m["superseded"]
        ]  # fmt: skip
        last_answer = max(answers, default=0)
        unanswered += sum(1 for m in thread if m["kind"] == "prompt" and m["seq"] > last_answer)

    uses, results, streamed = Counter[str](), Counter[str](), set()
    for row in rows:
        for block in row["content"] or []:
            if block.get("type") == "tool_use" and row["kind"] == "tool_calls":
                uses[block["id"]] += 1
            elif block.get("type") == "tool_use" and row["kind"] == "reply":
                streamed.add(block["id"])
            elif block.get("type") == "tool_result":
                results[block["tool_use_id"]] += 1
    pairs = list(
        ToolPair.objects.filter(conversation__in=conversations).values(
            "tool_use_id", "tool_name", "status", "flushed_at"
        )
    )
    pair_ids = {p["tool_use_id"] for p in pairs}
    badly_paired = [
        p["tool_use_id"] for p in pairs
        if p["flushed_at"] is None or uses[p["tool_use_id"]] != 1 or results[p["tool_use_id"]] != 1
    ]  # fmt: skip
    replies = [r for r in rows if r["kind"] == "reply"]
    return {
        "quiet": unanswered == 0
        and not any(r["status"] == "streaming" for r in replies)
        and all(p["flushed_at"] is not None for p in pairs),
        "conversations": len(by_conversation),
        "prompts": sum(1 for r in rows if r["kind"] == "prompt"),
        "replies": dict(Counter(r["status"] for r in replies)),
        "unanswered_prompts": unanswered,
        "prompts_before_a_flush": buried,
        "tool_pairs": len(pairs),
        "tool_pairs_by_tool": dict(Counter(p["tool_name"] for p in pairs)),
        "tool_pairs_by_status": dict(Counter(p["status"] for p in pairs)),
        "badly_paired": badly_paired[:20],
        "badly_paired_count": len(badly_paired),
        "unpaired_tool_uses": len(streamed - pair_ids),
        "orphan_results": len(set(results) - pair_ids),
        "rejected_by_validator": sum(1 for r in replies if REJECTED in r["error"]),
        "reply_errors": dict(Counter(r["error"][:120] for r in replies if r["error"])),
    }


def _buried(thread: list[dict[str, Any]]) -> int:
    """Prompts stored just before a tool pair was flushed: the next reply came after the pair.

    Information, not a failure: such a prompt is in the next request, but before the flushed
    pair, so the simulator (which reads the last user turn) answers the tool result only.
    """
    count, waiting = 0, False
    for message in thread:
        if message["kind"] == "prompt":
            waiting = True
        elif message["kind"] == "tool_calls" and waiting:
            count, waiting = count + 1, False
        elif message["kind"] == "reply":
            waiting = False
    return count


def main(prefix: str) -> None:
    print(json.dumps(check(prefix)))
