from __future__ import annotations

from importlib import import_module
from typing import Any

from django.apps import AppConfig
from django.conf import settings
from django.db import DEFAULT_DB_ALIAS, connections
from django.db.models.signals import post_migrate


class ToolsConfig(AppConfig):
    name = "tools"
    verbose_name = "Tools"

    def ready(self) -> None:
        import tools.builtin  # noqa: F401  (registers the built-in tools)

        for module in settings.TANDEM_EXTRA_TOOL_MODULES:
            import_module(module)  # each registers its tools with @tool on import

        from tools import config_generation
        from tools.models import ToolPolicy

        config_generation.watch(
            ToolPolicy, ToolPolicy.allowed_groups.through, ToolPolicy.chain_targets.through
        )
        post_migrate.connect(_sync_policies, sender=self, dispatch_uid="tools.sync_policies")


def _sync_policies(using: str = DEFAULT_DB_ALIAS, **kwargs: Any) -> None:
    """After migrate (and after a test flush): one policy row per registered tool, and a
    fresh configuration generation (a flush deletes its row)."""
    from tools import config_generation
    from tools.models import ConfigGeneration, ToolPolicy, sync_policies

    # Not after `migrate tools zero` or a partial migrate that left the tables out.
    tables = connections[using].introspection.table_names()
    if ConfigGeneration._meta.db_table in tables:
        config_generation.bump(using)
    if ToolPolicy._meta.db_table in tables:
        sync_policies(using=using)
