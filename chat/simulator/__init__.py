"""A faithful in-process fake of the Anthropic Messages API (rule book: validator.py)."""

from __future__ import annotations

from .client import make_client
from .errors import InvalidRequest
from .faults import Fault, clear_faults, push_fault
from .transport import Simulator, SimulatorStats

__all__ = [
    "Fault",
    "InvalidRequest",
    "Simulator",
    "SimulatorStats",
    "clear_faults",
    "make_client",
    "push_fault",
]
