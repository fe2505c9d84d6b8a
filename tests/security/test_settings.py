"""Settings: DEBUG off unless asked for, secrets only from the environment, and a production
configuration that passes `manage.py check --deploy` without a single warning."""

from __future__ import annotations

import ast
import json
import os
import secrets
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SOURCES = ["project", "chat", "tools", "manage.py"]
PRODUCTION = {
    "DEBUG": "false",
    "SECRET_KEY": secrets.token_urlsafe(50),
    "ALLOWED_HOSTS": "example.com",
    "SECURE_SSL_REDIRECT": "true",
    "SECURE_HSTS_SECONDS": "31536000",
    "SECURE_HSTS_INCLUDE_SUBDOMAINS": "true",
    "SECURE_HSTS_PRELOAD": "true",
    "SESSION_COOKIE_SECURE": "true",
    "CSRF_COOKIE_SECURE": "true",
}


def run(*args: str, **env: str) -> subprocess.CompletedProcess[str]:
    """A fresh process on project.settings, with only the given variables set."""
    if (ROOT / ".env").exists():
        pytest.skip("a local .env file would add settings to this clean environment")
    clean = {"PATH": os.environ.get("PATH", ""), "DJANGO_SETTINGS_MODULE": "project.settings"}
    return subprocess.run(
        [sys.executable, *args], cwd=ROOT, env={**clean, **env}, capture_output=True, text=True
    )


def settings_of(**env: str) -> dict[str, object]:
    names = ["DEBUG", "SESSION_COOKIE_SECURE", "CSRF_COOKIE_SECURE", "TANDEM_DEMO_USERS"]
    script = (
        "import json; from django.conf import settings as s; "
        f"print(json.dumps({{n: getattr(s, n) for n in {names}}}))"
    )
    return dict(json.loads(run("-c", script, **env).stdout))


def test_it_keeps_debug_off_unless_asked_for() -> None:
    production = {"DEBUG": False, "SESSION_COOKIE_SECURE": True, "CSRF_COOKIE_SECURE": True}
    assert settings_of() == {**production, "TANDEM_DEMO_USERS": False}
    assert settings_of(DEBUG="true") == {k: not v for k, v in production.items()} | {
        "TANDEM_DEMO_USERS": True
    }


def test_it_takes_the_secret_key_from_the_environment_and_has_none_otherwise() -> None:
    script = "from django.conf import settings; print(settings.SECRET_KEY)"
    assert run("-c", script, SECRET_KEY="from-the-environment").stdout == "from-the-environment\n"
    assert "The SECRET_KEY setting must not be empty" in run("-c", script).stderr


def test_it_passes_the_deploy_check_with_production_settings() -> None:
    result = run("manage.py", "check", "--deploy", "--fail-level", "WARNING", **PRODUCTION)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "no issues" in result.stdout


def test_it_fails_the_deploy_check_without_a_secret_key() -> None:
    env = {k: v for k, v in PRODUCTION.items() if k != "SECRET_KEY"}
    result = run("manage.py", "check", "--deploy", "--fail-level", "WARNING", **env)
    assert result.returncode != 0
    assert "security.W009" in result.stderr


def _reads_environment(tree: ast.AST) -> list[int]:
    """Lines that read the environment: os.environ / os.getenv / django-environ."""
    lines = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and node.attr in {"environ", "getenv", "environb"}:
            lines.append(node.lineno)
        elif isinstance(node, ast.Import | ast.ImportFrom):
            names = [a.name for a in node.names]
            module = getattr(node, "module", None) or ""
            if module.split(".")[0] == "environ" or "environ" in names or "getenv" in names:
                lines.append(node.lineno)
    return sorted(lines)


def _sets_settings_module(source: str, line: int) -> bool:
    """Django's own bootstrap line, which writes a default and reads nothing else."""
    text = source.splitlines()[line - 1].strip()
    return text == 'os.environ.setdefault("DJANGO_SETTINGS_MODULE", "project.settings")'


def test_it_reads_the_environment_only_in_project_settings() -> None:
    offenders = []
    for entry in SOURCES:
        paths = [ROOT / entry] if entry.endswith(".py") else (ROOT / entry).rglob("*.py")
        for path in paths:
            if path == ROOT / "project" / "settings.py" or "migrations" in path.parts:
                continue
            source = path.read_text()
            for line in _reads_environment(ast.parse(source)):
                if not _sets_settings_module(source, line):
                    offenders.append(f"{path.relative_to(ROOT)}:{line}")
    assert offenders == []


def test_it_would_notice_a_module_reading_the_environment() -> None:
    tree = ast.parse("import os\nkey = os.environ['ANTHROPIC_API_KEY']\nfrom os import getenv")
    assert _reads_environment(tree) == [2, 3]
