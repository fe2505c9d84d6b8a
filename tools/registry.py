"""Tools are typed Python functions; this module turns them into schemas the model can call.

A tool is written once, as a module-level function with type hints and a docstring:

    @tool(timeout=30, safe_to_repeat=True)
    async def current_time(
        timezone: Annotated[str, Field(description="IANA zone, e.g. Europe/Paris")] = "UTC",
    ) -> str:
        '''Tell the current date and time in a time zone.'''

The input model is built from the signature by pydantic, so the JSON Schema sent to the API, the
validation of the model's input and the function's own types cannot drift apart.
"""

from __future__ import annotations

import copy
import inspect
import json
import re
import threading
import typing
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from functools import cached_property
from typing import Any, Protocol, overload

from pydantic import BaseModel, ConfigDict, ValidationError, create_model

from tools.context import ToolContext
from tools.errors import ToolInputError, ToolRegistrationError

NAME_PATTERN = re.compile(r"^[a-zA-Z0-9_-]{1,128}$")


@dataclass(frozen=True)
class ToolSpec:
    """Everything Tandem knows about one tool."""

    name: str
    description: str
    func: Callable[..., Any]
    is_async: bool
    input_model: type[BaseModel]
    timeout_s: float | None = None  # None: settings.TANDEM_TOOL_TIMEOUT_S
    safe_to_repeat: bool = False  # may be run again after a server restart
    context_param: str | None = None  # the parameter that receives the ToolContext

    def __post_init__(self) -> None:
        if not NAME_PATTERN.fullmatch(self.name):
            raise ToolRegistrationError(
                f"Tool name {self.name!r} must match {NAME_PATTERN.pattern} "
                "(letters, digits, _ and -, at most 128 characters)."
            )
        if not self.description.strip():
            raise ToolRegistrationError(f"Tool {self.name} needs a description (its docstring).")
        if self.timeout_s is not None and not self.timeout_s > 0:
            raise ToolRegistrationError(f"Tool {self.name}: timeout must be positive.")

    @cached_property
    def _input_schema(self) -> dict[str, Any]:
        return json_schema(self.input_model)

    def input_schema(self) -> dict[str, Any]:
        """The JSON Schema of the input: a plain object schema, `$ref`s inlined, no titles."""
        return copy.deepcopy(self._input_schema)

    def anthropic_schema(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "description": self.description,
            "input_schema": self.input_schema(),
        }

    def validate_input(self, raw: object) -> dict[str, Any]:
        """Return the keyword arguments for the function, or raise `ToolInputError`.

        The message names each wrong field and says what was expected, one line per problem,
        so the model can correct its call.
        """
        prefix = f"Invalid input for tool {self.name}"
        if not isinstance(raw, dict):
            raise ToolInputError(
                f"{prefix}: the input must be a JSON object, got {_json_type(raw)}."
            )
        try:
            validated = self.input_model.model_validate(raw)
        except ValidationError as exc:
            allowed = ", ".join(self.input_model.model_fields) or "none"
            lines = [f"{prefix}: {_describe(error, allowed)}" for error in exc.errors()]
            raise ToolInputError("\n".join(lines)) from None
        # dict(model) keeps nested models and enums as objects (model_dump would flatten them).
        return dict(validated)


def spec_from_function(
    func: Callable[..., Any],
    *,
    name: str | None = None,
    timeout: float | None = None,
    safe_to_repeat: bool = False,
) -> ToolSpec:
    """Build a ToolSpec from a typed function without registering it."""
    name = func.__name__ if name is None else name
    description = inspect.cleandoc(func.__doc__ or "")
    if not description:
        raise ToolRegistrationError(
            f"Tool {name} needs a docstring: it is the description the model reads."
        )
    try:
        hints = typing.get_type_hints(func, include_extras=True)
    except NameError as exc:
        raise ToolRegistrationError(f"Tool {name}: cannot resolve a type hint ({exc}).") from exc

    fields: dict[str, Any] = {}
    context_param = None
    for index, param in enumerate(inspect.signature(func).parameters.values()):
        if param.kind not in (param.POSITIONAL_OR_KEYWORD, param.KEYWORD_ONLY):
            raise ToolRegistrationError(
                f"Tool {name}: parameter {param.name} must be a plain or keyword-only parameter."
            )
        if param.name not in hints:
            raise ToolRegistrationError(f"Tool {name}: parameter {param.name} needs a type hint.")
        hint = hints[param.name]
        if hint is ToolContext:
            if index != 0:
                raise ToolRegistrationError(
                    f"Tool {name}: the ToolContext parameter must come first."
                )
            context_param = param.name
            continue
        if param.name.startswith("_"):
            raise ToolRegistrationError(
                f"Tool {name}: parameter {param.name} may not start with an underscore."
            )
        default = ... if param.default is param.empty else param.default
        fields[param.name] = (hint, default)

    with warnings.catch_warnings():
        # A parameter called e.g. "json" or "schema" shadows a BaseModel method; harmless here,
        # because arguments are read with dict(model), never as attributes.
        warnings.filterwarnings("ignore", message=".*shadows an attribute", category=UserWarning)
        model = create_model(
            f"{name}_input",
            __config__=ConfigDict(extra="forbid", protected_namespaces=()),
            **fields,
        )
    return ToolSpec(
        name=name,
        description=description,
        func=func,
        is_async=inspect.iscoroutinefunction(func),
        input_model=model,
        timeout_s=timeout,
        safe_to_repeat=safe_to_repeat,
        context_param=context_param,
    )


class ToolSource(Protocol):
    """Tools defined outside the code, e.g. in the database (MCP servers added in admin).

    Its answers are built fresh on every call, so a process that never saw the admin change
    (a task worker) sees the same tools. It reads the database: call it where sync ORM calls
    are allowed (from async code, through `database_sync_to_async`).
    """

    def get(self, name: str) -> ToolSpec | None: ...

    def all(self) -> list[ToolSpec]: ...


class ToolRegistry:
    """The tools the model may call, by name: registered ones, then the sources'. Thread-safe."""

    def __init__(self) -> None:
        self._tools: dict[str, ToolSpec] = {}
        self._sources: list[ToolSource] = []
        self._lock = threading.Lock()
        self.version = 0  # moves when a tool or source is added or removed (a cache key)

    def add_source(self, source: ToolSource) -> None:
        """Consult `source` for names no registered tool has (set up in an `AppConfig.ready()`)."""
        with self._lock:
            if source not in self._sources:
                self._sources.append(source)
                self.version += 1

    def register(self, spec: ToolSpec) -> ToolSpec:
        with self._lock:
            if spec.name in self._tools:
                existing = self._tools[spec.name].func
                raise ToolRegistrationError(
                    f"Tool name {spec.name!r} is already taken by "
                    f"{existing.__module__}.{existing.__qualname__}."
                )
            self._tools[spec.name] = spec
            self.version += 1
        return spec

    def unregister(self, name: str) -> None:
        with self._lock:
            self._tools.pop(name, None)
            self.version += 1

    @contextmanager
    def temporarily(self, *specs: ToolSpec) -> Iterator[None]:
        """Register tools for the duration of a `with` block (for tests)."""
        registered: list[str] = []
        try:
            for spec in specs:
                self.register(spec)
                registered.append(spec.name)
            yield
        finally:
            for name in registered:
                self.unregister(name)

    def get(self, name: str) -> ToolSpec | None:
        spec = self._tools.get(name)
        if spec is not None:
            return spec
        for source in list(self._sources):
            spec = source.get(name)
            if spec is not None:
                return spec
        return None

    def registered(self) -> list[ToolSpec]:
        """The tools registered in code (`@tool`), without the sources' (no database access)."""
        with self._lock:
            return sorted(self._tools.values(), key=lambda spec: spec.name)

    def all(self) -> list[ToolSpec]:
        found = {spec.name: spec for spec in self.registered()}
        for source in list(self._sources):
            for spec in source.all():
                found.setdefault(spec.name, spec)  # a registered tool wins a name
        return sorted(found.values(), key=lambda spec: spec.name)

    def names(self) -> list[str]:
        return [spec.name for spec in self.all()]

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and self.get(name) is not None

    def __len__(self) -> int:
        return len(self._tools)


registry = ToolRegistry()


@overload
def tool[F: Callable[..., Any]](func: F, /) -> F: ...
@overload
def tool[F: Callable[..., Any]](
    *,
    name: str | None = None,
    timeout: float | None = None,
    safe_to_repeat: bool = False,
    into: ToolRegistry | None = None,
) -> Callable[[F], F]: ...
def tool[F: Callable[..., Any]](
    func: F | None = None,
    /,
    *,
    name: str | None = None,
    timeout: float | None = None,
    safe_to_repeat: bool = False,
    into: ToolRegistry | None = None,
) -> F | Callable[[F], F]:
    """Register a typed function as a tool; the function itself is returned unchanged."""

    def decorate(f: F) -> F:
        spec = spec_from_function(f, name=name, timeout=timeout, safe_to_repeat=safe_to_repeat)
        (registry if into is None else into).register(spec)
        return f

    return decorate(func) if func is not None else decorate


# JSON Schema clean-up -----------------------------------------------------------------------

_SCHEMA_MAPS = frozenset({"properties", "patternProperties", "$defs", "definitions"})
_DATA_KEYWORDS = frozenset({"default", "const", "enum", "examples"})


class _RecursiveSchema(Exception):
    pass


def json_schema(model: type[BaseModel]) -> dict[str, Any]:
    """The model's JSON Schema with `$defs` inlined (kept only for recursive types), no titles."""
    schema = model.model_json_schema()
    defs = schema.pop("$defs", {})
    try:
        schema = _inline_refs(schema, defs, ())
    except _RecursiveSchema:
        schema["$defs"] = defs
    cleaned: dict[str, Any] = _strip_titles(schema)
    return cleaned


def _inline_refs(node: Any, defs: dict[str, Any], seen: tuple[str, ...]) -> Any:
    if isinstance(node, list):
        return [_inline_refs(item, defs, seen) for item in node]
    if not isinstance(node, dict):
        return node
    ref = node.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/$defs/"):
        target = ref.removeprefix("#/$defs/")
        if target in seen:
            raise _RecursiveSchema(target)
        inlined = _inline_refs(defs[target], defs, (*seen, target))
        siblings = {k: _inline_refs(v, defs, seen) for k, v in node.items() if k != "$ref"}
        return {**inlined, **siblings}
    return {key: _inline_refs(value, defs, seen) for key, value in node.items()}


def _strip_titles(node: Any) -> Any:
    if isinstance(node, list):
        return [_strip_titles(item) for item in node]
    if not isinstance(node, dict):
        return node
    cleaned: dict[str, Any] = {}
    for key, value in node.items():
        if key == "title" and isinstance(value, str):
            continue
        if key in _DATA_KEYWORDS:
            cleaned[key] = value
        elif key in _SCHEMA_MAPS and isinstance(value, dict):
            cleaned[key] = {name: _strip_titles(sub) for name, sub in value.items()}
        else:
            cleaned[key] = _strip_titles(value)
    return cleaned


# Error messages ------------------------------------------------------------------------------

_JSON_TYPES = {
    str: "string",
    int: "integer",
    float: "number",
    bool: "boolean",
    type(None): "null",
    dict: "object",
    list: "array",
}


def _json_type(value: object) -> str:
    return _JSON_TYPES.get(type(value), type(value).__name__)


def _describe(error: Any, allowed: str) -> str:
    where = ".".join(str(part) for part in error["loc"]) or "input"
    message = f"{where}: {error['msg']}"
    if error["type"] == "missing":
        return message
    if error["type"] == "extra_forbidden":
        return f"{message} (allowed: {allowed})" if len(error["loc"]) == 1 else message
    received = json.dumps(error.get("input"), ensure_ascii=False, default=repr)
    if len(received) > 60:
        received = received[:57] + "..."
    return f"{message} (got {_json_type(error.get('input'))} {received})"
