"""One model turn at a time across server processes: real processes racing on PostgreSQL."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.postgres_db import fresh_database

pytestmark = pytest.mark.postgres

ROOT = Path(__file__).resolve().parents[3]


@pytest.fixture
def pg_url() -> Iterator[str]:
    with fresh_database("tandem_lease") as url:
        yield url


def _manage(url: str, *args: str) -> subprocess.Popen[str]:
    env = {**os.environ, "DATABASE_URL": url, "SECRET_KEY": "lease-test", "DEBUG": "false"}
    return subprocess.Popen(
        [sys.executable, "manage.py", *args, *(["--no-imports"] if args[0] == "shell" else [])],
        cwd=ROOT,
        env=env,
        text=True,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )


def _run(url: str, *args: str) -> str:
    process = _manage(url, *args)
    out, err = process.communicate(timeout=120)
    assert process.returncode == 0, err
    return out


def test_it_gives_the_lease_to_exactly_one_of_several_processes(pg_url: str) -> None:
    _run(pg_url, "migrate", "--noinput")
    conversation = _run(
        pg_url,
        "shell",
        "-c",
        "from django.contrib.auth.models import User; from chat.models import Conversation; "
        "print(Conversation.objects.create(owner=User.objects.create(username='u')).pk)",
    ).strip()
    start = time.time() + 4  # every process is loaded and waiting before the race starts
    racers = [
        _manage(
            pg_url,
            "shell",
            "-c",
            f"import time; from chat.services.turns import claim_lease; "
            f"time.sleep(max(0, {start} - time.time())); "
            f"print(claim_lease({conversation}, 'proc-{n}'))",
        )
        for n in range(6)
    ]
    results = [p.communicate(timeout=120)[0].strip() for p in racers]
    assert sorted(results) == ["False"] * 5 + ["True"]
    expired = _run(
        pg_url,
        "shell",
        "-c",
        "import datetime as dt; from django.utils import timezone; "
        "from chat.models import Conversation; from chat.services.turns import claim_lease; "
        f"Conversation.objects.filter(pk={conversation}).update("
        "lease_expires_at=timezone.now() - dt.timedelta(seconds=1)); "
        f"print(claim_lease({conversation}, 'newcomer'))",
    )
    assert expired.strip() == "True"
