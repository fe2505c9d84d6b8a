from django.apps import apps

from tools.registry import registry


def test_it_registers_the_built_in_tools_when_django_starts():
    assert apps.get_app_config("tools").__class__.__name__ == "ToolsConfig"
    assert {"calculate", "current_time", "tool_buffer_demo", "unit_convert"} <= set(
        [spec.name for spec in registry.registered()]
    )
