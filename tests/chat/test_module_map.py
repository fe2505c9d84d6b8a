"""The README's module map, enforced: each room imports only the rooms below it.

Every import counts, function-level ones included, so a cycle cannot hide inside a function.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

CHAT = Path(__file__).resolve().parents[2] / "chat"

# room -> the chat rooms (and modules) it may import; models and errors are open to all.
ALLOWED = {
    "chat.runtime.engine": set(),
    "chat.runtime.progress": set(),
    "chat.runtime.events": {"chat.runtime.engine"},
    "chat.runtime.broadcast": {"chat.runtime.events"},
    "chat.modelapi": {"chat.simulator", "chat.modelapi"},
    "chat.queries": {"chat.runtime.engine", "chat.queries"},
    "chat.services": {
        "chat.services",
        "chat.runtime.engine",
        "chat.runtime.events",
        "chat.modelapi.history",
    },
    "chat.sockets": {"chat.sockets", "chat.services", "chat.queries", "chat.runtime.events"},
    "chat.simulator": {"chat.simulator"},
    "chat.billing": set(),
}
OPEN_TO_ALL = (
    "chat.models",
    "chat.usage_models",
    "chat.billing",
    "chat.services.errors",
    "chat.rendering",
    "chat.markdown_stream",
    "chat.compiled",
)


def _imports(path: Path) -> set[str]:
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.update(f"{node.module}.{alias.name}" for alias in node.names)
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level > 0:
            found.add("chat.simulator")  # relative imports exist only inside the simulator
    return {name for name in found if name.startswith("chat.")}


def _modules() -> list[tuple[str, Path]]:
    out = []
    for path in sorted(CHAT.rglob("*.py")):
        name = ".".join(("chat", *path.relative_to(CHAT).with_suffix("").parts))
        out.append((name.removesuffix(".__init__"), path))
    return out


def _room(module: str) -> str | None:
    matches = [room for room in ALLOWED if module == room or module.startswith(room + ".")]
    return max(matches, key=len) if matches else None


@pytest.mark.parametrize(
    ("module", "path"), [(m, p) for m, p in _modules() if _room(m) is not None]
)
def test_each_room_imports_only_what_the_map_allows(module: str, path: Path) -> None:
    allowed = ALLOWED[_room(module) or ""]
    strays = sorted(
        name
        for name in _imports(path)
        if not name.startswith(OPEN_TO_ALL)
        and not any(name == ok or name.startswith(ok + ".") for ok in allowed)
    )
    assert strays == []
