"""chat.compiled: querysets compiled once give what the ORM gives, with each call's values."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest
from django.db.models import Count, QuerySet
from django.test.utils import CaptureQueriesContext
from django.utils import timezone
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from chat import compiled
from chat.models import Conversation, Message

pytestmark = pytest.mark.django_db


@compiled.select
def _conversation(conversation_id: int) -> QuerySet[Conversation]:
    return Conversation.objects.filter(pk=conversation_id)[:1]


@compiled.select
def _annotated(owner_id: int) -> QuerySet[Conversation]:
    return (
        Conversation.objects.filter(owner_id=owner_id).annotate(n=Count("messages")).order_by("pk")
    )


@compiled.select
def _texts(conversation_id: int, after: int) -> QuerySet[Message]:
    rows = Message.objects.filter(conversation_id=conversation_id, seq__gt=after)
    return rows.order_by("seq").values_list("seq", "content")


@compiled.select
def _seqs(conversation_id: int) -> QuerySet[Message]:
    return Message.objects.filter(conversation_id=conversation_id).values_list("seq", flat=True)


@compiled.select
def _dicts(conversation_id: int) -> QuerySet[Message]:
    rows = Message.objects.filter(conversation_id=conversation_id).order_by("seq")
    return rows.values("seq", "role")


@compiled.update
def _retitle(
    conversation_id: int, title: str, older_than: dt.datetime
) -> tuple[QuerySet[Conversation], dict[str, object]]:
    rows = Conversation.objects.filter(pk=conversation_id, created_at__lt=older_than)
    return rows, {"title": title}


@compiled.update
def _set_content(
    message_id: int, content: list[dict[str, Any]]
) -> tuple[QuerySet[Message], dict[str, object]]:
    return Message.objects.filter(pk=message_id), {"content": content}


def _message(conversation: Conversation, seq: int, text: str = "") -> Message:
    return Message.objects.create(
        conversation=conversation,
        seq=seq,
        role=Message.Role.USER,
        kind=Message.Kind.PROMPT,
        content=[{"type": "text", "text": text or f"m{seq}"}],
    )


def _fields(obj: Any) -> dict[str, Any]:
    return {k: v for k, v in vars(obj).items() if k != "_state"}


def test_it_gives_the_same_instance_as_the_orm(conversation: Conversation) -> None:
    got = _conversation.one(conversation.pk)
    assert got is not None and _fields(got) == _fields(Conversation.objects.get(pk=conversation.pk))
    assert got._state.adding is False and got._state.db == "default"


def test_it_gives_annotations_and_none_for_no_row(conversation: Conversation) -> None:
    _message(conversation, 1)
    _message(conversation, 2)
    (row,) = _annotated(conversation.owner_id)
    assert row.pk == conversation.pk and row.n == 2
    assert _conversation.one(conversation.pk + 1000) is None
    assert _annotated(conversation.owner_id + 1000) == []


def test_each_call_runs_one_statement_with_its_own_values(conversation: Conversation) -> None:
    for seq in range(1, 5):
        _message(conversation, seq)
    _texts(conversation.pk, 0)  # compiled here
    from django.db import connection

    with CaptureQueriesContext(connection) as ran:
        assert [s for s, _ in _texts(conversation.pk, 2)] == [3, 4]
        assert [s for s, _ in _texts(conversation.pk, 3)] == [4]
    assert len(ran) == 2
    assert sorted(_seqs(conversation.pk)) == [1, 2, 3, 4]
    assert _dicts(conversation.pk)[0] == {"seq": 1, "role": "user"}


def test_json_comes_back_decoded_and_goes_in_encoded(conversation: Conversation) -> None:
    message = _message(conversation, 1, "hello")
    (row,) = _texts(conversation.pk, 0)
    assert row == (1, [{"type": "text", "text": "hello"}])
    content = [{"type": "text", "text": 'quotes " and \\ and ünïcode'}]
    assert _set_content(message.pk, content) == 1
    message.refresh_from_db()
    assert message.content == content


def test_datetime_arguments_compare_as_the_field_would(conversation: Conversation) -> None:
    later = conversation.created_at + dt.timedelta(seconds=1)
    earlier = conversation.created_at - dt.timedelta(seconds=1)
    assert _retitle(conversation.pk, "not yet", earlier) == 0
    assert _retitle(conversation.pk, "renamed", later) == 1
    conversation.refresh_from_db()
    assert conversation.title == "renamed"
    # Another time zone: the same instant.
    local = later.astimezone(dt.timezone(dt.timedelta(hours=5)))
    assert _retitle(conversation.pk, "again", local) == 1


def test_a_value_that_does_not_reach_the_sql_is_refused() -> None:
    @compiled.select
    def frozen(conversation_id: int, title: str) -> QuerySet[Conversation]:
        return Conversation.objects.filter(pk=conversation_id, title__icontains=title)

    with pytest.raises(ValueError, match="title"):
        frozen(1, "x")  # icontains wraps it in %...%: not the value itself


def test_it_refuses_unsupported_arguments_and_values() -> None:
    with pytest.raises(TypeError, match="must be annotated"):

        @compiled.select
        def listed(ids: list[int] | None) -> QuerySet[Conversation]:
            return Conversation.objects.filter(pk__in=ids or [])

    with pytest.raises(TypeError, match="is not a"):
        _conversation("1")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="is not a"):
        _conversation(True)


def test_it_refuses_querysets_of_several_statements(conversation: Conversation) -> None:
    @compiled.select
    def prefetching(conversation_id: int) -> QuerySet[Conversation]:
        return Conversation.objects.filter(pk=conversation_id).prefetch_related("messages")

    with pytest.raises(TypeError, match="prefetch"):
        prefetching(conversation.pk)


def test_explicit_kinds_for_a_builder_of_keyword_values(conversation: Conversation) -> None:
    def build(**values: Any) -> tuple[QuerySet[Conversation], dict[str, Any]]:
        pk = values.pop("pk")
        return Conversation.objects.filter(pk=pk), values

    bump = compiled.Update(build, {"pk": int, "rev": int, "updated_at": dt.datetime})
    now = timezone.now()
    assert bump(pk=conversation.pk, rev=7, updated_at=now) == 1
    conversation.refresh_from_db()
    assert (conversation.rev, conversation.updated_at) == (7, now)
    with pytest.raises(TypeError, match="takes exactly"):
        bump(pk=conversation.pk, rev=8)
    assert compiled.markable(3) and compiled.markable(now) and compiled.markable([])
    assert not compiled.markable(None) and not compiled.markable(True)


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    seqs=st.lists(st.integers(min_value=1, max_value=40), unique=True, max_size=12),
    after=st.integers(min_value=0, max_value=45),
)
def test_it_agrees_with_the_orm_for_any_cursor(
    conversation: Conversation, seqs: list[int], after: int
) -> None:
    # The fixture's conversation is shared by the examples: each starts from no messages.
    Message.objects.filter(conversation=conversation).delete()
    for seq in seqs:
        _message(conversation, seq)
    orm = Message.objects.filter(conversation_id=conversation.pk, seq__gt=after)
    assert _texts(conversation.pk, after) == list(orm.order_by("seq").values_list("seq", "content"))


_new_message = compiled.Insert(
    Message,
    {
        "conversation_id": int,
        "seq": int,
        "role": str,
        "kind": str,
        "content": list,
        "created_at": dt.datetime,
        "updated_at": dt.datetime,
    },
)


def test_an_insert_stores_the_row_the_orm_would(conversation: Conversation) -> None:
    now = timezone.now()
    values: dict[str, Any] = {
        "seq": 1,
        "role": Message.Role.USER,  # a TextChoices member goes in as its value
        "kind": Message.Kind.PROMPT,
        "content": [{"type": "text", "text": "hi"}],
        "created_at": now,
        "updated_at": now,
    }
    made = _new_message(conversation_id=conversation.pk, **values)
    other = _new_message(conversation_id=conversation.pk, **{**values, "seq": 2})
    assert made.pk and other.pk == made.pk + 1 and made._state.adding is False
    stored = Message.objects.get(pk=made.pk)
    assert _fields(stored) == _fields(made)
    assert (stored.role, stored.status, stored.usage, stored.rev) == ("user", "complete", {}, 0)


def test_an_insert_refuses_a_field_computed_on_save() -> None:
    with pytest.raises(TypeError, match="created_at is computed on save"):
        compiled.Insert(Message, {"conversation_id": int, "seq": int})
    with pytest.raises(TypeError, match="takes exactly"):
        _new_message(conversation_id=1)
