"""Markdown while it streams: finished blocks rendered once, the open block per frame. Pure.

A reply's text so far is split into its top-level blocks (paragraphs, lists, tables, fenced
code, ...). A block is *finished* once the next block has started on a complete line (one
that ends in a newline): nothing written later can change it, so its sanitized HTML is sent
once and kept. Everything from the first unfinished block on is the *open* part, re-rendered
each frame: an unclosed fence is one open block, and a list or table stays open until a blank
line and another block follow.

Finished blocks are parsed once: each step parses only the text from the first unfinished
block on, so the cost of a frame is bounded by the open part, not by the whole reply. The
joined HTML of every block equals ``chat.rendering.markdown_to_html`` of the whole text (the
renderer concatenates per token, and a top-level block parses the same alone), so a finished
reply renders exactly as it streamed. Reference-style link definitions are off in both, since
one written at the end would change blocks already sent.

Most frames of a reply extend a paragraph of plain prose. Text whose every line starts with a
letter and holds only letters, digits, spaces and punctuation that means nothing to Markdown or
HTML cannot produce markup: its blocks are paragraphs of that same text, which the sanitizer
leaves as they are, so ``step`` writes them without parsing or sanitizing (``_plain_step``;
tests/chat/test_markdown_stream_plain.py holds it to the full path). Anything else, even one
such character, takes the full path.
"""

from __future__ import annotations

import re
import string
from dataclasses import dataclass
from functools import lru_cache

from markdown_it.token import Token

from chat.rendering import parser, sanitize

_NEWLINES = re.compile(r"\r\n?")


@dataclass(frozen=True)
class Progress:
    """What was already sent: how many finished blocks, and where the first open one starts."""

    blocks: int = 0
    offset: int = 0  # in the text with newlines normalized to "\n"


@dataclass(frozen=True)
class Step:
    new_blocks: tuple[str, ...]  # sanitized HTML of the blocks finished since ``Progress``
    open_html: str  # sanitized HTML of everything after the finished blocks
    progress: Progress


@dataclass(frozen=True)
class StreamRender:
    """The whole text so far, for a page load or a resync: as a tab shows it after every frame."""

    blocks: tuple[str, ...]
    open_html: str

    @property
    def finished_html(self) -> str:
        return "".join(self.blocks)

    @property
    def html(self) -> str:
        return self.finished_html + self.open_html


def normalize(text: str) -> str:
    return _NEWLINES.sub("\n", text)


def _groups(tokens: list[Token]) -> list[tuple[int, int]]:
    """(first, end) token indexes of each top-level block."""
    groups = []
    depth = 0
    start = 0
    for index, token in enumerate(tokens):
        if depth == 0:
            start = index
        depth += token.nesting
        if depth == 0:
            groups.append((start, index + 1))
    return groups


def _line_offsets(text: str) -> list[int]:
    """Where each line of ``text`` starts (markdown-it's line numbers)."""
    offsets = [0]
    index = text.find("\n")
    while index >= 0:
        offsets.append(index + 1)
        index = text.find("\n", index + 1)
    return offsets


def _html(tokens: list[Token], *, again: bool = False) -> str:
    """Sanitized HTML of ``tokens``; ``again``: a block the next frames will render the same."""
    md = parser()
    raw = md.renderer.render(tokens, md.options, {})
    return _sanitized(raw) if again else sanitize(raw)


@lru_cache(maxsize=256)
def _sanitized(raw: str) -> str:
    """A block followed by another in the text so far, sanitized once: it stays open until
    the next block's first line is complete, and then is sent as a finished block, so frames
    re-render it unchanged. (The last block, which changes every frame, is not kept.)"""
    return sanitize(raw)


# Plain prose: lines that start with a letter (a digit could start a list) and hold letters,
# digits, spaces and punctuation that is no Markdown syntax here (no emphasis, code, links,
# HTML, entities, escapes, tables; "-", "+", "=" and "." matter only at a line's start). ``"``
# is kept: Markdown escapes it and the sanitizer writes it back as it was.
_PROSE_PUNCTUATION = " ,.;:?!'\"/()%@$=+-"
_PROSE_UNICODE_PUNCTUATION = "\u2013\u2014\u2018\u2019\u201c\u201d\u2026"  # dashes, quotes, …
_NOT_PROSE = re.compile(rf"[^\w\n{re.escape(_PROSE_PUNCTUATION + _PROSE_UNICODE_PUNCTUATION)}]")
_ASCII_PROSE = (string.ascii_letters + string.digits + "\n" + _PROSE_PUNCTUATION).encode()


def _is_prose(text: str) -> bool:
    """Whether ``text`` holds only prose characters: letters, digits, newlines and the
    punctuation above (one pass over the bytes when the text is ASCII, as most is)."""
    if text.isascii():
        return not text.encode().translate(None, _ASCII_PROSE)
    return "_" not in text and _NOT_PROSE.search(text) is None


def _plain_step(tail: str, sent: Progress) -> Step | None:
    """``step`` for a tail of plain prose paragraphs, or None if it holds anything else.

    Lines other than the last may not end in a space (two make a hard break); the last one's
    trailing spaces end the paragraph, as Markdown strips them."""
    if not _is_prose(tail):
        return None
    lines = tail.split("\n")
    paragraphs: list[tuple[int, list[str]]] = []  # (first line, its lines)
    for number, line in enumerate(lines):
        if not line:
            continue
        if not line[0].isalpha():
            return None
        if line[-1] == " " and number < len(lines) - 1:
            return None
        if number and lines[number - 1] and paragraphs:
            paragraphs[-1][1].append(line)
        else:
            paragraphs.append((number, [line]))
    complete_lines = len(lines) - 1
    finished = 0
    while finished + 1 < len(paragraphs) and paragraphs[finished + 1][0] < complete_lines:
        finished += 1
    html = ["<p>" + "\n".join(p).rstrip(" ") + "</p>\n" for _, p in paragraphs]
    advance = sum(len(line) + 1 for line in lines[: paragraphs[finished][0]]) if finished else 0
    return Step(
        tuple(html[:finished]),
        "".join(html[finished:]),
        Progress(sent.blocks + finished, sent.offset + advance),
    )


def step(text: str, sent: Progress) -> Step:
    """The blocks of ``text`` finished since ``sent``, and the open part, each sanitized."""
    tail = normalize(text)[sent.offset :]
    plain = _plain_step(tail, sent)
    return plain if plain is not None else _full_step(tail, sent)


def _full_step(tail: str, sent: Progress) -> Step:
    tokens = parser().parse(tail)
    groups = _groups(tokens)
    lines = _line_offsets(tail)
    complete_lines = len(lines) - 1  # the last "line" has no newline yet (maybe empty)
    finished = 0
    while finished + 1 < len(groups):
        next_start = tokens[groups[finished + 1][0]].map
        if next_start is None or next_start[0] >= complete_lines:
            break
        finished += 1
    last = len(groups) - 1
    html = [_html(tokens[a:b], again=number < last) for number, (a, b) in enumerate(groups)]
    new_blocks, open_html = tuple(html[:finished]), "".join(html[finished:])
    start = tokens[groups[finished][0]].map if finished else None
    advance = lines[start[0]] if start is not None else 0  # checked above: not None
    return Step(new_blocks, open_html, Progress(sent.blocks + finished, sent.offset + advance))


@lru_cache(maxsize=64)
def render(text: str) -> StreamRender:
    """The whole streaming text at once (a page load, a resync, a tab that missed frames)."""
    result = step(text, Progress())
    return StreamRender(result.new_blocks, result.open_html)
