"""A conversation to take away: a readable Markdown transcript, or JSON exactly as stored.

The Markdown shows what the page shows: prompts, replies (thinking quoted), each tool call
with its input and result where the model called it. The JSON keeps every message's API
content blocks exactly as stored, the tool pairs (input, status, result) and the usage.
"""

from __future__ import annotations

import dataclasses
import json
import re
from typing import Any

from django.utils.text import slugify

from chat.models import Conversation, Message, ToolPair
from chat.queries import usage


def filename(conversation: Conversation, extension: str) -> str:
    """``plan-a-picnic.md``: the slugified title (or the conversation's number)."""
    stem = slugify(conversation.title)[:80].strip("-") or f"conversation-{conversation.pk}"
    return f"{stem}.{extension}"


def _messages(conversation: Conversation) -> list[Message]:
    return list(conversation.messages.order_by("seq"))


def _pairs(conversation: Conversation) -> list[ToolPair]:
    return list(
        ToolPair.objects.filter(conversation=conversation)
        .select_related("message")
        .order_by("message__seq", "block_index", "pk")
    )


def _fence(text: str, info: str = "") -> str:
    """``text`` in a code fence longer than any run of backticks inside it."""
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{fence}{info}\n{text}\n{fence}"


def _result_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(str(b.get("text", "")) if isinstance(b, dict) else str(b) for b in content)
    return json.dumps(content, ensure_ascii=False, indent=2)


def _tool_markdown(pair: ToolPair) -> str:
    lines = [
        f"**Tool call `{pair.tool_name}`**: {pair.get_status_display()}",
        _fence(json.dumps(pair.input, ensure_ascii=False, indent=2, sort_keys=True), "json"),
    ]
    if pair.result_content is not None:
        lines.append("**Error**" if pair.is_error else "**Result**")
        lines.append(_fence(_result_text(pair.result_content)))
    return "\n\n".join(lines)


def _reply_markdown(message: Message, pairs: dict[str, ToolPair]) -> str:
    parts = []
    for block in message.content:
        kind = block.get("type") if isinstance(block, dict) else None
        if kind == "text" and str(block.get("text", "")).strip():
            parts.append(str(block["text"]))
        elif kind == "thinking" and str(block.get("thinking", "")).strip():
            quoted = "\n".join(f"> {line}" for line in str(block["thinking"]).splitlines())
            parts.append(f"> **Thinking**\n>\n{quoted}")
        elif kind == "tool_use" and block.get("id") in pairs:
            parts.append(_tool_markdown(pairs.pop(str(block["id"]))))
    parts.extend(_tool_markdown(pair) for pair in pairs.values())
    if message.status in (Message.Status.INTERRUPTED, Message.Status.ERROR):
        parts.append(
            f"_{message.get_status_display()}{': ' if message.error else ''}{message.error}_"
        )
    return "\n\n".join(parts)


def markdown(conversation: Conversation) -> str:
    """The transcript people read: who said what, and what each tool did."""
    by_message: dict[int, dict[str, ToolPair]] = {}
    for pair in _pairs(conversation):
        by_message.setdefault(pair.message_id, {})[pair.tool_use_id] = pair
    sections = [f"# {conversation.title or 'New conversation'}"]
    if conversation.system_prompt:
        sections.append(f"System prompt:\n\n{_fence(conversation.system_prompt)}")
    for message in _messages(conversation):
        if message.kind == Message.Kind.PROMPT:
            sections.append(f"## You\n\n{message.text}")
        elif message.kind == Message.Kind.REPLY:
            body = _reply_markdown(message, dict(by_message.get(message.pk, {})))
            sections.append(f"## Claude\n\n{body}".rstrip())
        elif message.kind == Message.Kind.NOTICE:
            sections.append(f"_{message.text}_")
    return "\n\n".join(sections) + "\n"


def _json_safe(value: Any) -> Any:
    return value.isoformat() if hasattr(value, "isoformat") else value


def as_json(conversation: Conversation) -> dict[str, Any]:
    """Everything stored: the API content blocks exactly, the tool pairs, the usage."""
    totals = usage.conversation_totals(conversation)
    return {
        "conversation": {
            "id": conversation.pk,
            "title": conversation.title,
            "model": conversation.model,
            "system_prompt": conversation.system_prompt,
            "created_at": _json_safe(conversation.created_at),
        },
        "messages": [
            {
                "seq": m.seq,
                "role": m.role,
                "kind": m.kind,
                "status": m.status,
                "content": m.content,
                "stop_reason": m.stop_reason,
                "usage": m.usage,
                "error": m.error,
                "superseded": m.superseded,
                "created_at": _json_safe(m.created_at),
            }
            for m in _messages(conversation)
        ],
        "tool_pairs": [
            {
                "tool_use_id": p.tool_use_id,
                "tool_name": p.tool_name,
                "message_seq": p.message.seq,
                "input": p.input,
                "status": p.status,
                "result_content": p.result_content,
                "is_error": p.is_error,
                "started_at": _json_safe(p.started_at),
                "finished_at": _json_safe(p.finished_at),
            }
            for p in _pairs(conversation)
        ],
        "usage": {
            **dataclasses.asdict(totals.counts),
            "estimated_cost_usd": str(totals.cost),
            "unpriced_models": list(totals.unpriced),
        },
    }
