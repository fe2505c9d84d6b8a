"""Messages as the API sees them: consecutive same-role turns merged, content as a block list.

The real API merges consecutive turns of the same role before it checks anything else, so the
validator and the brain both work on merged turns. A string content is shorthand for one text
block; an empty string contributes no block at all.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

Block = dict[str, Any]


@dataclass
class Turn:
    role: str
    blocks: list[Block] = field(default_factory=list)
    # Index, in the request's own list, of every message merged into this turn.
    sources: list[int] = field(default_factory=list)


def as_blocks(content: Any) -> list[Block]:
    """Content as a list of blocks (the caller has checked its shape)."""
    if isinstance(content, str):
        return [{"type": "text", "text": content}] if content else []
    return [block for block in content if isinstance(block, dict)]


def merge_turns(messages: list[Any]) -> list[Turn]:
    turns: list[Turn] = []
    for index, message in enumerate(messages):
        role = message["role"]
        if not turns or turns[-1].role != role:
            turns.append(Turn(role=role))
        turns[-1].blocks.extend(as_blocks(message["content"]))
        turns[-1].sources.append(index)
    return turns


def tool_result_text(block: Block) -> str:
    """The text of a tool_result block's content (images shown as a placeholder)."""
    content = block.get("content", "")
    if isinstance(content, str):
        return content
    parts: list[str] = []
    for item in content if isinstance(content, list) else []:
        if isinstance(item, dict) and item.get("type") == "text":
            parts.append(str(item.get("text", "")))
        elif isinstance(item, dict):
            parts.append(f"[{item.get('type', 'block')}]")
    return " ".join(parts)


def tool_use_ids(turn: Turn) -> list[str]:
    return [str(b.get("id")) for b in turn.blocks if b.get("type") == "tool_use"]
