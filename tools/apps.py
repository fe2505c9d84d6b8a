from __future__ import annotations

from typing import Any

from django.apps import AppConfig
from django.db.models.signals import post_migrate


class ToolsConfig(AppConfig):
    name = "tools"
    verbose_name = "Tools"

    def ready(self) -> None:
        import tools.builtin  # noqa: F401  (registers the built-in tools)

        post_migrate.connect(_sync_policies, sender=self, dispatch_uid="tools.sync_policies")


def _sync_policies(**kwargs: Any) -> None:
    """After migrate (and after a test flush): one policy row per registered tool."""
    from tools.models import sync_policies

    sync_policies()
