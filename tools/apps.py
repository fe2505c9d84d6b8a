from __future__ import annotations

from django.apps import AppConfig


class ToolsConfig(AppConfig):
    name = "tools"
    verbose_name = "Tools"

    def ready(self) -> None:
        import tools.builtin  # noqa: F401  (registers the built-in tools)
