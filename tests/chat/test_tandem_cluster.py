"""`manage.py tandem_cluster`: the nginx configuration it renders, and what it refuses."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from chat.management.commands.tandem_cluster import TEMPLATE, free_port, render_nginx

NGINX = shutil.which("nginx") or "/usr/sbin/nginx"


def test_it_renders_one_upstream_per_web_process_and_no_placeholder(tmp_path: Path) -> None:
    config = render_nginx(
        TEMPLATE.read_text(), run_dir=tmp_path, listen="127.0.0.1:8080", web_ports=[8001, 8002]
    )
    assert "@@" not in config
    assert "server 127.0.0.1:8001" in config and "server 127.0.0.1:8002" in config
    assert "listen 127.0.0.1:8080;" in config
    assert "proxy_set_header Upgrade $http_upgrade;" in config  # WebSockets pass


def test_nginx_accepts_the_rendered_configuration(tmp_path: Path) -> None:
    config = tmp_path / "nginx.conf"
    config.write_text(
        render_nginx(
            TEMPLATE.read_text(),
            run_dir=tmp_path,
            listen=f"127.0.0.1:{free_port()}",
            web_ports=[free_port()],
        )
    )
    done = subprocess.run(
        [NGINX, "-t", "-p", str(tmp_path), "-c", str(config)],
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    assert done.returncode == 0, done.stderr


@pytest.mark.django_db
def test_it_refuses_to_run_without_postgresql() -> None:
    with pytest.raises(CommandError, match="PostgreSQL"):
        call_command("tandem_cluster")
