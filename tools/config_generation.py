"""The configuration generation: one number in the database that moves with every change of
the configuration a turn reads, and the per-process cache that trusts it.

Tool policies, MCP servers and tools, groups, group membership and group budgets almost never
change, yet every turn needs them. Each process keeps them in memory (``Snapshot.get``) and
checks one number first: the token in the single row of ``ConfigGeneration``. A turn reads it
with one tiny statement, or as a column of a query it runs anyway (``token_subquery``). When the
token differs from the one the cache was built under, the cache starts afresh.

Why this is never stale, in any process:

* Every change moves the token **in the same transaction as the change**: signal receivers for
  the watched models (``watch``: post_save, post_delete, m2m_changed) and ``GenerationQuerySet``
  for the bulk calls that send no signals (``update``, ``bulk_create``, ``bulk_update``). So
  whoever reads the token after the change committed, in whatever process, sees it moved.
* The token is random, not a counter: a rolled-back change, or a table a test flushed, never
  brings an old token back, so one token always means one configuration (or a newer one).
* Readers read the token first, then the configuration: a value is at least as new as the token
  it is filed under. (Read the configuration first and you might file old rows under a new token.)
* Only configuration is cached, never usage (which changes with every reply).

What moves nothing: SQL written by hand, and rows of an auto-created many-to-many table written
directly (``Through.objects...``: Django sends them no signal). Change links through the
relation (``add``, ``remove``, ``set``, ``clear``), as admin does, or call ``bump`` yourself.

Values are shared between threads: build immutable ones (tuples, frozensets, frozen
dataclasses) and never mutate what ``get`` returns. Without the row (a database being set up)
nothing is cached.
"""

from __future__ import annotations

import secrets
import threading
from collections.abc import Callable, Hashable, Iterable
from dataclasses import dataclass, field
from typing import Any

from django.db import DEFAULT_DB_ALIAS, connections, models, transaction
from django.db.models import BigIntegerField, Subquery
from django.db.models.signals import m2m_changed, post_delete, post_save

ROW = 1
MAX_ENTRIES = 10_000  # a bound on the per-user entries; past it the cache starts afresh


class ConfigGeneration(models.Model):
    """The single row (pk 1) whose token moves with every configuration change."""

    token = models.BigIntegerField()

    class Meta:
        verbose_name = "configuration generation"

    def __str__(self) -> str:
        return f"configuration generation {self.token}"


def new_token() -> int:
    return secrets.randbits(62)


def bump(using: str = DEFAULT_DB_ALIAS) -> None:
    """Move the token (inside the caller's transaction, if any); create the row if missing."""
    rows = ConfigGeneration.objects.using(using)
    token = new_token()
    with transaction.atomic(using=using, savepoint=False):
        if not rows.filter(pk=ROW).update(token=token):
            rows.bulk_create([ConfigGeneration(pk=ROW, token=token)], ignore_conflicts=True)


def read(using: str = DEFAULT_DB_ALIAS) -> int | None:
    """The current token (one tiny statement, without the ORM's overhead); None without a row."""
    table = connections[using].ops.quote_name(ConfigGeneration._meta.db_table)
    with connections[using].cursor() as cursor:
        cursor.execute(f"SELECT token FROM {table} WHERE id = %s", [ROW])  # noqa: S608
        row = cursor.fetchone()
    return None if row is None else int(row[0])


def token_subquery() -> Subquery:
    """The token as a column of another query (one statement fewer per turn)."""
    rows = ConfigGeneration.objects.filter(pk=ROW).values("token")[:1]
    return Subquery(rows, output_field=BigIntegerField())


class GenerationQuerySet[M: models.Model](models.QuerySet[M]):
    """For watched models: bulk writes, which send no signals, move the token too."""

    def update(self, **kwargs: Any) -> int:
        with transaction.atomic(using=self.db, savepoint=False):
            count = super().update(**kwargs)
            bump(self.db)
        return count

    def bulk_create(self, objs: Iterable[M], *args: Any, **kwargs: Any) -> list[M]:
        with transaction.atomic(using=self.db, savepoint=False):
            created = super().bulk_create(objs, *args, **kwargs)
            if created:
                bump(self.db)
        return created

    def bulk_update(self, objs: Iterable[M], *args: Any, **kwargs: Any) -> int:
        with transaction.atomic(using=self.db, savepoint=False):
            count = super().bulk_update(objs, *args, **kwargs)
            bump(self.db)
        return count


def _bump_on_change(sender: Any, using: str = DEFAULT_DB_ALIAS, **kwargs: Any) -> None:
    if kwargs.get("action", "post_").startswith("post_"):  # m2m_changed: after the change
        bump(using)


def watch(*models_: type[models.Model]) -> None:
    """Move the token whenever a row of these models is saved or deleted, or links of these
    (auto-created) through models change. Call from ``AppConfig.ready``."""
    for model in models_:
        uid = f"config_generation.{model._meta.label}"
        post_save.connect(_bump_on_change, sender=model, dispatch_uid=f"{uid}.save")
        post_delete.connect(_bump_on_change, sender=model, dispatch_uid=f"{uid}.delete")
        m2m_changed.connect(_bump_on_change, sender=model, dispatch_uid=f"{uid}.m2m")


# --- the per-process cache -------------------------------------------------------------------


@dataclass
class _Store:
    token: int | None = None
    values: dict[Hashable, Any] = field(default_factory=dict)


_lock = threading.Lock()
_store = _Store()


@dataclass(frozen=True)
class Snapshot:
    """The configuration as of one token: each value built once per process, then shared.

    ``token`` None (no generation row): nothing is cached, every ``get`` builds afresh.
    """

    token: int | None

    def get[T](self, key: Hashable, build: Callable[[], T]) -> T:
        """The value filed under ``key`` for this token, built by ``build`` when missing.

        ``build`` reads the database; it runs outside the lock (two threads may both build).
        """
        global _store
        if self.token is None:
            return build()
        with _lock:
            if _store.token == self.token and key in _store.values:
                cached: T = _store.values[key]
                return cached
        value = build()
        with _lock:
            if _store.token != self.token or len(_store.values) >= MAX_ENTRIES:
                _store = _Store(self.token)
            _store.values[key] = value
        return value


def current(using: str = DEFAULT_DB_ALIAS) -> Snapshot:
    """The snapshot as of now: one tiny statement."""
    return Snapshot(read(using))


def forget() -> None:
    """Drop everything cached in this process (tests; never needed for correctness)."""
    global _store
    with _lock:
        _store = _Store()
