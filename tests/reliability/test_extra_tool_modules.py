"""TANDEM_EXTRA_TOOL_MODULES: more tool modules, imported when the tools app starts."""

from __future__ import annotations

import sys
from collections.abc import Iterator

import pytest
from django.apps import apps
from django.test import override_settings

from tools.registry import registry

MODULE = "tests.e2e.restart_tools"


@pytest.fixture
def _fresh_import() -> Iterator[None]:
    sys.modules.pop(MODULE, None)
    yield
    registry.unregister("slow_unsafe")
    sys.modules.pop(MODULE, None)


@pytest.mark.usefixtures("_fresh_import")
def test_it_registers_the_tools_of_extra_modules_at_start_up() -> None:
    assert "slow_unsafe" not in registry
    with override_settings(TANDEM_EXTRA_TOOL_MODULES=[MODULE]):
        apps.get_app_config("tools").ready()
    spec = registry.get("slow_unsafe")
    assert spec is not None and not spec.safe_to_repeat


@pytest.mark.usefixtures("_fresh_import")
def test_it_fails_loudly_on_a_module_that_does_not_exist() -> None:
    with (
        override_settings(TANDEM_EXTRA_TOOL_MODULES=["tests.no_such_tools"]),
        pytest.raises(ModuleNotFoundError),
    ):
        apps.get_app_config("tools").ready()
