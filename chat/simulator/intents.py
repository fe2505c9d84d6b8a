"""Tool calls asked for in plain words, as the simulated model understands them.

Recognised (only for tools the request offers, unless said otherwise):

* "run the demo tool for 5 seconds", "try the tool_buffer_demo", "run the demo tool twice for
  3 seconds" -> `tool_buffer_demo` with `{"seconds": N}` (default 10), once per repetition;
* "what time is it in Tokyo" -> `current_time` with `{"timezone": "Asia/Tokyo"}` (a few city names,
  or an IANA name as is; UTC when no place is given);
* "calculate 2 * (3 + 4)", "what is 17*23" -> `calculate` with `{"expression": "..."}`;
* "use the docs__search tool with query="django tasks" and limit=3" (any other offered tool,
  e.g. an MCP server's, named as offered) -> that tool with each input property found written as
  `name=value`, `name: value` or `name value`, typed by the tool's schema; a JSON object after
  the name is taken as is, and a lone quoted text fills the one required property left;
* the test hook "call NAME with {json}" -> exactly that input, even if it does not fit the schema,
  and "call NAME with raw TEXT" -> TEXT streamed as the input JSON (deliberately invalid). The hook
  works for any NAME, offered or not, so that clients can be tested against a bad tool name.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

CITY_ZONES = {
    "tokyo": "Asia/Tokyo", "osaka": "Asia/Tokyo", "london": "Europe/London",
    "paris": "Europe/Paris", "berlin": "Europe/Berlin", "madrid": "Europe/Madrid",
    "rome": "Europe/Rome", "amsterdam": "Europe/Amsterdam", "moscow": "Europe/Moscow",
    "new york": "America/New_York", "nyc": "America/New_York", "chicago": "America/Chicago",
    "los angeles": "America/Los_Angeles", "san francisco": "America/Los_Angeles",
    "sao paulo": "America/Sao_Paulo", "sydney": "Australia/Sydney", "dubai": "Asia/Dubai",
    "singapore": "Asia/Singapore", "hong kong": "Asia/Hong_Kong", "beijing": "Asia/Shanghai",
    "shanghai": "Asia/Shanghai", "delhi": "Asia/Kolkata", "mumbai": "Asia/Kolkata",
    "utc": "UTC", "gmt": "UTC",
}  # fmt: skip
DEMO_TOOL, TIME_TOOL, CALC_TOOL = "tool_buffer_demo", "current_time", "calculate"
DEFAULT_SECONDS = 10
MAX_REPEATS = 5

_HOOK = re.compile(r"\bcall\s+([A-Za-z0-9_-]{1,128})\s+with\s+(raw\s+)?(.*)", re.S | re.I)
_DEMO = re.compile(
    r"\b(?:run|try|start|launch|use|call|test)\b[^?!\n]*?\b(?:demo tool|tool_buffer_demo)\b", re.I
)
_SECONDS = re.compile(r"(\d+(?:\.\d+)?)\s*(?:s|secs?|seconds?)\b", re.I)
_TIMES = re.compile(r"\b(twice|thrice|two times|three times|(\d+)\s*times)\b", re.I)
_TIME = re.compile(
    r"\b(?:what time is it|what(?:'s| is) the (?:current |local )?time|current time)\b"
    r"(?:[^?!.\n]*?\bin\s+([A-Za-z][\w/.'+-]*(?:\s+[A-Za-z][\w/.'+-]*){0,2}))?",
    re.I,
)
_NAMED = re.compile(
    r"\b(?:run|try|use|call|start|invoke)\s+(?:the\s+)?`?([A-Za-z0-9_-]{1,128})`?(?:\s+tool)?", re.I
)
_QUOTED = re.compile(r'"([^"]*)"|“([^”]*)”')
_IANA = re.compile(r"^[A-Za-z]+(?:/[A-Za-z0-9_+-]+)+$")
_CALC = re.compile(
    r"\b(?:calculate|compute|evaluate|what(?:'s| is))\s+((?=[\d\s+\-*/().^%]*\d)[\d\s+\-*/().^%]+)",
    re.I,
)


@dataclass(frozen=True)
class ToolCall:
    name: str
    input_json: str  # the exact text streamed as input_json_delta fragments
    raw: bool = False  # input_json is deliberately not valid JSON


@dataclass(frozen=True)
class ToolPlan:
    preamble: str
    calls: tuple[ToolCall, ...]


def plan_tool_calls(text: str, tools: list[dict[str, Any]], choice: dict[str, Any]) -> ToolPlan:
    """The tool calls `text` asks for, honouring `tool_choice`; no calls when none apply."""
    kind = choice.get("type", "auto")
    if not tools or kind == "none":
        return ToolPlan("", ())
    offered = {str(tool.get("name")) for tool in tools}
    hook = _hook_call(text)
    found = [(0, "", hook)] if hook else _plain_calls(text, offered)
    if not hook:
        found = sorted([*found, *_named_calls(text, tools)], key=lambda item: item[0])
    calls = [call for _, _, call in found]
    preamble = " ".join(dict.fromkeys(sentence for _, sentence, _ in found if sentence))
    if kind == "tool":
        calls = [call for call in calls if call.name == choice.get("name")]
    if kind in ("any", "tool"):
        # A forced tool call comes without any text before it, as in the real API.
        preamble = ""
        if not calls:
            calls = [_default_call(tools, choice)]
    if choice.get("disable_parallel_tool_use"):
        calls = calls[:1]
    return ToolPlan(preamble if calls else "", tuple(calls))


def _hook_call(text: str) -> ToolCall | None:
    match = _HOOK.search(text)
    if match is None:
        return None
    name, raw, rest = match.group(1), bool(match.group(2)), match.group(3).strip()
    if raw:
        return ToolCall(name, rest, raw=True)
    if not rest.startswith("{"):
        return None
    try:
        parsed = json.loads(rest)
    except ValueError:
        return ToolCall(name, rest, raw=True)
    return ToolCall(name, rest, raw=not isinstance(parsed, dict))


def _plain_calls(text: str, offered: set[str]) -> list[tuple[int, str, ToolCall]]:
    found: list[tuple[int, str, ToolCall]] = []
    if DEMO_TOOL in offered:
        for match in _DEMO.finditer(text):
            found.extend(_demo_calls(match.start(), _clause(text, match.start())))
    if TIME_TOOL in offered:
        for match in _TIME.finditer(text):
            zone = _zone(match.group(1) or "")
            call = ToolCall(TIME_TOOL, json.dumps({"timezone": zone}))
            found.append((match.start(), f"Let me check the current time in {zone}.", call))
    if CALC_TOOL in offered:
        for match in _CALC.finditer(text):
            expression = match.group(1).strip().rstrip(".").strip()
            if re.search(r"[+\-*/^%]", expression) and re.search(r"\d", expression):
                call = ToolCall(CALC_TOOL, json.dumps({"expression": expression}))
                found.append((match.start(), f"Let me work out `{expression}`.", call))
    return sorted(found, key=lambda item: item[0])


def _named_calls(text: str, tools: list[dict[str, Any]]) -> list[tuple[int, str, ToolCall]]:
    """Calls of offered tools named in the text ("use the docs__search tool with ...")."""
    by_name = {str(tool.get("name")): tool for tool in tools}
    found: list[tuple[int, str, ToolCall]] = []
    for match in _NAMED.finditer(text):
        name = match.group(1)
        if name not in by_name or name in (DEMO_TOOL, TIME_TOOL, CALC_TOOL):
            continue  # the built-ins have their own phrasing above
        schema = by_name[name].get("input_schema") or {}
        arguments = _arguments(text[match.end() :].split("\n", 1)[0], schema)
        sentence = f"I'll run {name} in the background; we can keep talking meanwhile."
        found.append((match.start(), sentence, ToolCall(name, json.dumps(arguments))))
    return found


def _arguments(rest: str, schema: dict[str, Any]) -> dict[str, Any]:
    """The input written after a tool's name, typed by its schema."""
    brace = rest.find("{")
    if brace >= 0:
        try:
            value, _ = json.JSONDecoder().raw_decode(rest[brace:])
        except ValueError:
            value = None
        if isinstance(value, dict):
            return value
    clause = _clause(rest, 0)
    properties: dict[str, Any] = schema.get("properties") or {}
    arguments: dict[str, Any] = {}
    for key, sub in properties.items():
        found = re.search(
            rf"\b{re.escape(key)}\b\s*(?:=|:|is\b|of\b)?\s*(\"[^\"]*\"|'[^']*'|[^\s,;]+)", clause
        )
        if found:
            arguments[key] = _typed(found.group(1).strip("\"'"), sub)
    missing = [key for key in schema.get("required") or [] if key not in arguments]
    quoted = _QUOTED.search(clause)
    if len(missing) == 1 and quoted:
        arguments[missing[0]] = _typed(
            quoted.group(1) or quoted.group(2) or "", properties.get(missing[0])
        )
    return arguments


def _typed(text: str, schema: Any) -> Any:
    kind = schema.get("type") if isinstance(schema, dict) else None
    try:
        if kind == "integer":
            return int(text)
        if kind == "number":
            return float(text)
    except ValueError:
        return text  # left for the tool's validation to refuse, as a real model's slip would be
    if kind == "boolean":
        return text.lower() in ("true", "yes", "on", "1")
    return text


def _clause(text: str, start: int) -> str:
    """The rest of the sentence from `start` (a dot inside a number does not end it)."""
    end = re.search(r"[?!\n]|\.(?!\d)", text[start:])
    return text[start : start + end.start()] if end else text[start:]


def _demo_calls(position: int, clause: str) -> list[tuple[int, str, ToolCall]]:
    seconds_match = _SECONDS.search(clause)
    seconds: float = float(seconds_match.group(1)) if seconds_match else DEFAULT_SECONDS
    shown = int(seconds) if seconds == int(seconds) else seconds
    times_match = _TIMES.search(clause)
    word = times_match.group(1).lower() if times_match else ""
    repeats = {"twice": 2, "two times": 2, "thrice": 3, "three times": 3}.get(word, 1)
    if times_match and times_match.group(2):
        repeats = int(times_match.group(2))
    repeats = max(1, min(repeats, MAX_REPEATS))
    if repeats == 1:
        sentence = f"I'll start the demo tool for {shown} seconds in the background; "
    elif repeats == 2:
        sentence = f"I'll start the demo tool twice, {shown} seconds each, in the background; "
    else:
        sentence = (
            f"I'll start the demo tool {repeats} times, {shown} seconds each, in the background; "
        )
    sentence += "we can keep talking meanwhile."
    call = ToolCall(DEMO_TOOL, json.dumps({"seconds": shown}))
    return [(position, sentence, call)] * repeats


def _zone(place: str) -> str:
    words = place.strip(" .'").split()
    for size in range(len(words), 0, -1):
        candidate = " ".join(words[:size])
        if candidate.lower() in CITY_ZONES:
            return CITY_ZONES[candidate.lower()]
        if size == 1 and _IANA.match(candidate):
            return candidate
    return words[0] if words else "UTC"


def _default_call(tools: list[dict[str, Any]], choice: dict[str, Any]) -> ToolCall:
    """The call a forced `tool_choice` gets when the text asks for nothing in particular."""
    by_name = {str(tool.get("name")): tool for tool in tools}
    tool = by_name.get(str(choice.get("name")), tools[0])
    schema = tool.get("input_schema") or {}
    properties = schema.get("properties") or {}
    examples = {"string": "example", "number": 1, "integer": 1, "boolean": True, "array": []}
    value = {
        key: examples.get(str((properties.get(key) or {}).get("type")), {})
        for key in schema.get("required") or []
    }
    if tool.get("name") == DEMO_TOOL:
        value = {"seconds": DEFAULT_SECONDS}
    return ToolCall(str(tool.get("name")), json.dumps(value))
