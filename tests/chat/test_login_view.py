"""The login view runs off the one thread shared by sync views and database work."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import pytest
from asgiref.sync import sync_to_async
from django.db import connections
from django.http import HttpRequest, HttpResponse
from django.test import Client, RequestFactory

from chat.login_forms import login_view, off_the_shared_thread


def _where(request: HttpRequest) -> HttpResponse:
    return HttpResponse(str(threading.get_ident()))


async def _shared_thread() -> int:
    return int(await sync_to_async(threading.get_ident, thread_sensitive=True)())


async def test_it_runs_the_view_in_another_thread_than_the_shared_one(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(connections["default"], "is_in_memory_db", lambda: False)
    view = off_the_shared_thread(_where)
    assert asyncio.iscoroutinefunction(view)
    response: Any = await view(RequestFactory().get("/login/"))
    assert int(response.content) not in (threading.get_ident(), await _shared_thread())


async def test_an_in_memory_database_keeps_it_on_the_shared_thread() -> None:
    response: Any = await off_the_shared_thread(_where)(RequestFactory().get("/login/"))
    assert int(response.content) == await _shared_thread()


def test_the_login_page_stays_open_to_visitors_and_logs_in(db: Any, django_user_model: Any) -> None:
    assert getattr(login_view, "login_required", True) is False  # LoginRequiredMiddleware
    django_user_model.objects.create_user("ann", password="a long passphrase")
    client = Client()
    assert client.get("/login/").status_code == 200
    response = client.post("/login/", {"username": "ann", "password": "a long passphrase"})
    assert response.status_code == 302 and "_auth_user_id" in client.session
