"""Tool pairs: stored when the model asks, finished when a result arrives, flushed in pairs.

Each decision about a call is made when it is stored and recorded on the pair. A pair is
flushed into the thread exactly once: flushing happens only under the turn lease, and the
conditional updates below make a late result (after a timeout or cancel) a no-op.
"""

from __future__ import annotations

import datetime as dt
import logging
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.db import transaction
from django.db.models import Count, Q, QuerySet
from django.utils import timezone

from chat import compiled
from chat.models import Conversation, Message, ToolPair
from chat.runtime import engine, events
from chat.services import policy
from chat.services.conversations import bump_rev, lock
from chat.services.errors import ConversationGone
from chat.services.messages import append
from tools.errors import ToolInputError
from tools.registry import registry

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class Refusal:
    status: str
    message: str
    notice: str = ""
    decision: str = ""


def since_last_prompt(conversation_id: int, *, last_prompt: int | None = None) -> tuple[int, int]:
    """(tool rounds, invalid calls) since the user last wrote (at seq ``last_prompt``, looked
    up when not given)."""
    if last_prompt is None:
        last_prompt = (
            Message.objects.filter(conversation_id=conversation_id, kind=Message.Kind.PROMPT)
            .order_by("-seq")
            .values_list("seq", flat=True)
            .first()
            or 0
        )
    counts = _rounds_since(conversation_id, last_prompt)
    return counts[0] if counts else (0, 0)


@compiled.select
def _rounds_since(conversation_id: int, last_prompt: int) -> QuerySet[Any, tuple[int, int]]:
    """(rounds, invalid calls) as one row grouped by the conversation; no row when none."""
    return (
        ToolPair.objects.filter(conversation_id=conversation_id, message__seq__gt=last_prompt)
        .values("conversation_id")
        .annotate(
            rounds=Count("message_id", distinct=True),
            invalid=Count("pk", filter=Q(decision__startswith="invalid")),
        )
        .values_list("rounds", "invalid")
        .order_by()
    )


def round_cap_reached(rounds_with_this_one: int) -> bool:
    """The cap on tool rounds per user message (checked when a call is stored and when the
    next turn is built, so the model is neither refused nor offered tools past it)."""
    return rounds_with_this_one > int(settings.TANDEM_MAX_TOOL_ROUNDS)


def invalid_cap_reached(invalid_calls: int) -> bool:
    """The cap on invalid calls since the user last wrote."""
    return invalid_calls >= int(settings.TANDEM_MAX_INVALID_TOOL_CALLS)


def decide(
    conversation_id: int,
    message_id: int,
    name: str,
    raw_input: object,
    *,
    invalid_json: str | None = None,
) -> Refusal | None:
    """Whether a call may run; None means yes."""
    spec = registry.get(name)
    if spec is None:
        available = ", ".join(registry.names()) or "none"
        return Refusal("failed", f"Unknown tool {name!r}. Available tools: {available}.")
    ruling = policy.rule_on_call(conversation_id, message_id, name)
    if not ruling.allowed:
        return Refusal(ToolPair.Status.DENIED, ruling.refusal, decision=ruling.decision)
    rounds, invalid = since_last_prompt(conversation_id)
    already_counted = ToolPair.objects.filter(message_id=message_id).exists()
    if round_cap_reached(rounds + (0 if already_counted else 1)):
        limit = settings.TANDEM_MAX_TOOL_ROUNDS
        return Refusal(
            "failed",
            f"Tool round limit reached ({limit} rounds for one user message). "
            "Answer with what you have, without calling tools.",
            notice=f"Tool calls stopped: the limit of {limit} tool rounds per message was reached.",
        )
    if invalid_cap_reached(invalid):
        limit = settings.TANDEM_MAX_INVALID_TOOL_CALLS
        return Refusal(
            "failed",
            f"Too many invalid tool calls ({limit}) since the user's last message. "
            "Stop calling tools and explain the problem to the user.",
            notice=f"Tool calls stopped: the model made {limit} invalid calls in a row.",
        )
    if invalid_json is not None:
        return Refusal(
            "invalid",
            f"The input for {name} was not valid JSON ({invalid_json[:200]!r}). "
            "Send a single JSON object that matches the tool's input schema.",
        )
    try:
        spec.validate_input(raw_input)
    except ToolInputError as exc:
        return Refusal("invalid", str(exc))
    return None


def store_tool_call(
    conversation_id: int,
    message_id: int,
    block: dict[str, Any],
    block_index: int,
    *,
    invalid_json: str | None = None,
) -> ToolPair:
    """Record a tool_use the moment its content block stops, then start it (after commit)."""
    name = str(block.get("name", ""))
    raw_input = block.get("input")
    refusal = decide(conversation_id, message_id, name, raw_input, invalid_json=invalid_json)
    plan = policy.plan_start(policy.policy_for(name)) if refusal is None else None
    now = timezone.now()
    with transaction.atomic():
        conversation = lock(conversation_id)
        pair = ToolPair(
            conversation=conversation,
            message_id=message_id,
            tool_use_id=str(block["id"]),
            tool_name=name,
            input=raw_input if isinstance(raw_input, dict) else {"_raw": raw_input},
            block_index=block_index,
        )
        pair.record("requested")
        if plan is not None:
            pair.decision = plan.decision
            pair.start_clock(plan.deadline_s, now=now)
            if plan.status == ToolPair.Status.AWAITING_APPROVAL:
                pair.move_to(plan.status, plan.decision, now=now)
        elif refusal is not None:
            pair.decision = refusal.decision or (
                "invalid input" if refusal.status == "invalid" else "refused"
            )
            denied = refusal.status == ToolPair.Status.DENIED
            pair.result_content = refusal.message
            pair.is_error = True
            pair.move_to(
                ToolPair.Status.DENIED if denied else ToolPair.Status.FAILED,
                "refused",
                now=now,
                reason=refusal.message,
            )
        pair.rev = bump_rev(conversation)
        pair.save()
        if refusal is not None and refusal.notice:
            append(
                conversation,
                role=Message.Role.NOTICE,
                kind=Message.Kind.NOTICE,
                content=[{"type": "text", "text": refusal.notice}],
            )
        events.ring(conversation_id, conversation.owner_id)
        if pair.status == ToolPair.Status.QUEUED:
            transaction.on_commit(lambda: enqueue_run(pair.pk))
        else:
            transaction.on_commit(lambda: engine.kick(conversation_id))
    return pair


def enqueue_run(pair_id: int) -> None:
    """Hand a queued pair to the task backend. While queued, ``heartbeat_at`` says when it
    was last handed over, so the sweeper re-enqueues a lost task only once in a while."""
    ToolPair.objects.filter(pk=pair_id, status=ToolPair.Status.QUEUED).update(
        heartbeat_at=timezone.now()
    )
    engine.enqueue_tool(pair_id)


def lock_pair(pair_id: int) -> tuple[ToolPair, Conversation] | None:
    """Lock the pair's conversation, then the pair (the order every writer uses, so two
    transactions never wait on each other); None if the pair is gone."""
    conversation_id = (
        ToolPair.objects.filter(pk=pair_id).values_list("conversation_id", flat=True).first()
    )
    if conversation_id is None:
        return None
    try:
        conversation = lock(conversation_id)
    except ConversationGone:
        return None
    pair = ToolPair.objects.select_for_update().filter(pk=pair_id).first()
    return None if pair is None else (pair, conversation)


def mark_running(pair_id: int, runner: str) -> ToolPair | None:
    """Claim a queued pair for running; None if it is no longer queued."""
    with transaction.atomic():
        locked = lock_pair(pair_id)
        if locked is None or locked[0].status != ToolPair.Status.QUEUED:
            return None
        pair, conversation = locked
        pair.runner = runner
        pair.move_to(ToolPair.Status.RUNNING, "started", attempt=pair.attempts + 1, runner=runner)
        pair.rev = bump_rev(conversation)
        pair.save()
        events.ring(pair.conversation_id, conversation.owner_id)
    return pair


def save_progress(pair_id: int, fraction: float | None, text: str) -> bool:
    """Persist progress and a heartbeat; False if the pair is no longer running."""
    return bool(
        ToolPair.objects.filter(pk=pair_id, status=ToolPair.Status.RUNNING).update(
            progress=fraction, progress_text=text[:200], heartbeat_at=timezone.now()
        )
    )


def beat(pair_id: int) -> bool:
    """A running tool is alive; False if its pair is no longer running (then it should stop)."""
    return bool(
        ToolPair.objects.filter(pk=pair_id, status=ToolPair.Status.RUNNING).update(
            heartbeat_at=timezone.now()
        )
    )


def finish(
    pair_id: int,
    *,
    status: str,
    content: Any,
    is_error: bool,
    event: str,
    allowed_from: frozenset[str] = ToolPair.OPEN,
    **fields: Any,
) -> ToolPair | None:
    """Give an open pair its result. A pair already finished keeps its first result."""
    with transaction.atomic():
        locked = lock_pair(pair_id)
        if locked is None:
            return None
        pair, conversation = locked
        if pair.status not in allowed_from or not pair.can_move_to(status):
            # A late result after a timeout or cancel: record it, never flush it again.
            pair.record("late result ignored", status=status)
            pair.save(update_fields=["timeline"])
            return None
        pair.result_content = content
        pair.is_error = is_error
        for name, value in fields.items():
            setattr(pair, name, value)
        pair.move_to(status, event)
        pair.rev = bump_rev(conversation)
        pair.save()
        events.ring(pair.conversation_id, conversation.owner_id)
        conversation_id = pair.conversation_id
        transaction.on_commit(lambda: engine.kick(conversation_id))
    return pair


def record_result(pair_id: int, *, status: str, content: Any, is_error: bool) -> ToolPair | None:
    return finish(
        pair_id,
        status=status,
        content=content,
        is_error=is_error,
        event=status,
        allowed_from=ToolPair.PENDING_RUN,
    )


def cancel(pair_id: int, *, by: str) -> ToolPair | None:
    """Stop a call; the model is told who cancelled it."""
    pair = finish(
        pair_id,
        status=ToolPair.Status.CANCELLED,
        content=f"The tool call was cancelled by {by} before it finished.",
        is_error=True,
        event=f"cancelled by {by}",
    )
    if pair is not None:
        tool_use_id = pair.tool_use_id
        transaction.on_commit(lambda: engine.cancel_tool(tool_use_id))
    return pair


def expire_overdue(now: dt.datetime | None = None) -> list[int]:
    """Time out open pairs past their deadline; returns the conversations touched."""
    now = now or timezone.now()
    touched: list[int] = []
    overdue = ToolPair.objects.filter(status__in=ToolPair.OPEN, deadline_at__lt=now).values_list(
        "pk", "tool_name", "deadline_at", "requested_at", "status"
    )
    for pk, name, deadline, requested, status in list(overdue):
        waited = round((deadline - requested).total_seconds()) if deadline else 0
        content = f"The tool {name} timed out after {waited} s and was stopped."
        if status == ToolPair.Status.AWAITING_APPROVAL:
            content = f"The call to {name} waited {waited} s for approval and never ran."
        pair = finish(
            pk,
            status=ToolPair.Status.TIMED_OUT,
            content=content,
            is_error=True,
            event="timed out",
        )
        if pair is not None:
            touched.append(pair.conversation_id)
            tool_use_id = pair.tool_use_id
            transaction.on_commit(lambda t=tool_use_id: engine.cancel_tool(t))  # type: ignore[misc]
    return touched


def ready_to_flush(conversation_id: int) -> bool:
    return ToolPair.objects.filter(
        conversation_id=conversation_id, flushed_at__isnull=True, finished_at__isnull=False
    ).exists()


def has_unflushed(conversation_id: int) -> bool:
    """Whether ``flush_ready`` has anything to do (a read, no lock: the caller then flushes)."""
    return bool(_unflushed(conversation_id))


@compiled.select
def _unflushed(conversation_id: int) -> QuerySet[ToolPair, int]:
    rows = ToolPair.objects.filter(conversation_id=conversation_id, flushed_at__isnull=True)
    return rows.filter(~Q(status__in=ToolPair.OPEN)).values_list("pk", flat=True)[:1]


def flush_ready(conversation_id: int) -> list[ToolPair]:
    """Append every finished, unflushed pair to the thread: one call turn, one result turn.

    Call only while holding the conversation's turn lease.
    """
    with transaction.atomic():
        conversation = lock(conversation_id)
        pairs = list(
            ToolPair.objects.select_for_update()
            .filter(conversation_id=conversation_id, flushed_at__isnull=True)
            .filter(~Q(status__in=ToolPair.OPEN))
            .select_related("message")
            .order_by("message__seq", "block_index")
        )
        if not pairs:
            return []
        calls = [
            {"type": "tool_use", "id": p.tool_use_id, "name": p.tool_name, "input": p.input}
            for p in pairs
        ]
        results = [_result_block(p) for p in pairs]
        call_message = append(
            conversation, role=Message.Role.ASSISTANT, kind=Message.Kind.TOOL_CALLS, content=calls
        )
        append(
            conversation, role=Message.Role.USER, kind=Message.Kind.TOOL_RESULTS, content=results
        )
        now = timezone.now()
        for pair in pairs:
            pair.flushed_at = now
            pair.flush_message = call_message
            pair.record("flushed", seq=call_message.seq)
            pair.rev = conversation.rev
            pair.save(update_fields=["flushed_at", "flush_message", "timeline", "rev"])
        events.ring(conversation_id, conversation.owner_id)
    return pairs


def _result_block(pair: ToolPair) -> dict[str, Any]:
    content = pair.result_content
    if content is None or content == "" or content == []:
        content = f"The tool {pair.tool_name} returned nothing."
    block: dict[str, Any] = {"type": "tool_result", "tool_use_id": pair.tool_use_id}
    block["content"] = content
    if pair.is_error:
        block["is_error"] = True
    return block
