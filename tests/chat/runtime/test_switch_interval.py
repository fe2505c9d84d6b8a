"""A server process shortens the GIL's switch interval (project/asgi.py, from settings)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]


def _interval_after_importing_asgi(**env: str) -> float:
    code = "import sys, project.asgi; print(sys.getswitchinterval())"
    out = subprocess.run(
        [sys.executable, "-c", code],
        cwd=ROOT,
        env={**os.environ, "DJANGO_SETTINGS_MODULE": "project.settings", **env},
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    return float(out.stdout.strip().splitlines()[-1])


def test_a_server_process_uses_the_configured_switch_interval() -> None:
    assert _interval_after_importing_asgi() == pytest.approx(0.0002)
    assert _interval_after_importing_asgi(TANDEM_GIL_SWITCH_INTERVAL_MS="0") == 0.005  # Python's
