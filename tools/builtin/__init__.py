"""Tandem's built-in tools, one module each. Importing this package registers them."""

from tools.builtin import calculate, current_time, tool_buffer_demo, unit_convert

__all__ = ["calculate", "current_time", "tool_buffer_demo", "unit_convert"]
