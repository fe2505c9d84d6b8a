"""Finding work that nobody is doing: overdue tools, orphaned replies and pairs, lost wakeups.

Run by the sweeper every few seconds; ``restart_recovery`` runs in its first sweep, when a
server's engine starts, and takes over the work of dead processes on the same host at once
instead of waiting for their leases and heartbeats to expire.
"""

from __future__ import annotations

import datetime as dt
import logging
import os
from typing import Any

from django.conf import settings
from django.db import transaction
from django.db.models import F, Max, Q
from django.utils import timezone

from chat.models import Conversation, Message, ToolPair
from chat.runtime import engine, events
from chat.services import pairing
from chat.services.conversations import bump_rev, lock
from tools.registry import registry

logger = logging.getLogger(__name__)

QUEUED_STALE_S = 10.0
MAX_RUNS = 3  # a call safe to repeat is re-run after a restart until it has started this often


def _lease_free(now: dt.datetime) -> Q:
    return Q(lease_owner="") | Q(lease_expires_at__lt=now)


def orphaned_replies(now: dt.datetime | None = None) -> list[int]:
    """Replies left streaming by a process that died: keep the text, mark them interrupted."""
    now = now or timezone.now()
    touched = []
    stale = Message.objects.filter(status=Message.Status.STREAMING).filter(
        Q(conversation__lease_owner="") | Q(conversation__lease_expires_at__lt=now)
    )
    for message_id, conversation_id in list(stale.values_list("pk", "conversation_id")):
        if engine.live_reply(message_id) is not None:
            continue  # still streaming here; only its lease renewal is late
        with transaction.atomic():
            conversation = lock(conversation_id)
            message = Message.objects.select_for_update().get(pk=message_id)
            if message.status != Message.Status.STREAMING:
                continue
            message.status = Message.Status.INTERRUPTED
            message.content = unsigned_thinking_dropped(message.content)
            message.stop_reason = "server restart"
            message.error = "The server restarted while this reply was being written."
            message.rev = bump_rev(conversation)
            message.save()
            events.ring(conversation_id, conversation.owner_id)
        touched.append(conversation_id)
    return touched


def unsigned_thinking_dropped(content: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A snapshot's blocks without thinking cut off before its signature (invalid to send)."""
    return [b for b in content if b.get("type") != "thinking" or b.get("signature")]


def heartbeat_expiry_s() -> float:
    """A running pair silent this long lost its process (chat.runtime.tasks beats 3 times)."""
    return float(settings.TANDEM_TOOL_HEARTBEAT_EXPIRY_S)


def orphaned_pairs(
    running_here: set[str], now: dt.datetime | None = None, only: list[int] | None = None
) -> list[int]:
    """Running pairs whose runner stopped beating: re-run if safe, else answer with an error."""
    now = now or timezone.now()
    touched = []
    stale = ToolPair.objects.filter(
        status=ToolPair.Status.RUNNING,
        heartbeat_at__lt=now - dt.timedelta(seconds=heartbeat_expiry_s()),
    ).exclude(tool_use_id__in=running_here)
    if only is not None:
        stale = stale.filter(pk__in=only)
    for pair in list(stale):
        spec = registry.get(pair.tool_name)
        if spec is not None and spec.safe_to_repeat and pair.attempts < MAX_RUNS:
            if not _requeue(pair.pk):
                continue
        else:
            again = (
                f" It already ran {pair.attempts} times, so it was not run again."
                if spec is not None and spec.safe_to_repeat
                else " It is not safe to run twice, so it was not re-run."
            )
            done = pairing.finish(
                pair.pk,
                status=ToolPair.Status.FAILED,
                content=f"The tool {pair.tool_name} was interrupted by a server restart "
                f"(the process running it stopped).{again}",
                is_error=True,
                event="interrupted by a server restart",
                allowed_from=frozenset({ToolPair.Status.RUNNING}),
            )
            if done is None:
                continue
        touched.append(pair.conversation_id)
    return touched


def _requeue(pair_id: int) -> bool:
    """Put a pair whose process died back in the queue, visibly; False if it moved on."""
    with transaction.atomic():
        locked = pairing.lock_pair(pair_id)
        if locked is None or locked[0].status != ToolPair.Status.RUNNING:
            return False
        pair, conversation = locked
        pair.move_to(ToolPair.Status.QUEUED, "re-run after a server restart")
        pair.rev = bump_rev(conversation)
        pair.save(update_fields=["status", "runner", "timeline", "rev"])
        events.ring(pair.conversation_id, conversation.owner_id)
        transaction.on_commit(lambda: pairing.enqueue_run(pair_id))
    return True


def stale_queued(now: dt.datetime | None = None) -> list[int]:
    """Queued pairs whose task was lost (the process died before running it): enqueue again.

    Not with a durable queue (the tool workers'): a queued task waits there for a free worker,
    however long, and enqueueing it again would only pile up copies.
    """
    if settings.TANDEM_TASKS_DURABLE:
        return []
    now = now or timezone.now()
    cutoff = now - dt.timedelta(seconds=QUEUED_STALE_S)
    stale = ToolPair.objects.filter(
        Q(heartbeat_at__lt=cutoff) | Q(heartbeat_at__isnull=True, requested_at__lt=cutoff),
        status=ToolPair.Status.QUEUED,
    ).values_list("pk", flat=True)
    ids = list(stale)
    for pk in ids:
        pairing.enqueue_run(pk)
    return ids


def _runner_is_dead(runner: str, me: str) -> bool:
    """True when the runner was a process on this host that no longer exists."""
    host, _, rest = runner.partition(":")
    pid_text, _, _ = rest.partition(":")
    my_host, _, my_rest = me.partition(":")
    if host != my_host or not pid_text.isdigit():
        return False
    if runner != me and pid_text == my_rest.partition(":")[0]:
        return True  # same pid, other instance: an earlier life of this process slot
    try:
        os.kill(int(pid_text), 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        return False
    return False


def release_dead_leases(me: str) -> list[int]:
    """Turn leases held by dead processes on this host: free them now, not when they expire."""
    held = Conversation.objects.exclude(lease_owner="").values_list("pk", "lease_owner")
    freed = []
    for conversation_id, holder in list(held):
        if holder != me and _runner_is_dead(holder, me):
            released = Conversation.objects.filter(pk=conversation_id, lease_owner=holder).update(
                lease_owner="", lease_expires_at=None
            )
            if released:
                logger.info("released the turn lease of dead process %s", holder)
                freed.append(conversation_id)
    return freed


def dead_on_this_host(running_here: set[str], me: str) -> list[int]:
    """Work of dead processes on this host need not wait for timeouts: their turn leases are
    released (so their half-written replies are marked interrupted by the next
    ``orphaned_replies``) and their running tool calls re-run or answered. Every sweep does
    this, so a web process or worker killed beside others is taken over within a sweep."""
    touched = release_dead_leases(me)
    dead = [
        pk
        for pk, runner in ToolPair.objects.filter(status=ToolPair.Status.RUNNING).values_list(
            "pk", "runner"
        )
        if _runner_is_dead(runner, me)
    ]
    if dead:
        later = timezone.now() + dt.timedelta(seconds=heartbeat_expiry_s() + 1)
        touched += orphaned_pairs(running_here, now=later, only=dead)
    return touched


def restart_recovery(running_here: set[str], me: str) -> list[int]:
    """On start-up: take over the work of dead processes on this host (``dead_on_this_host``),
    and enqueue again the queued calls whose in-process task died with them (a durable queue
    still holds its own)."""
    touched = dead_on_this_host(running_here, me)
    if not settings.TANDEM_TASKS_DURABLE:
        queued = ToolPair.objects.filter(status=ToolPair.Status.QUEUED).values_list("pk", flat=True)
        for pk in queued:
            pairing.enqueue_run(pk)
    return touched


def conversations_needing_a_turn(now: dt.datetime | None = None) -> list[int]:
    """Unanswered messages or unflushed results, with no live lease: a doorbell was lost."""
    now = now or timezone.now()
    free = Conversation.objects.filter(_lease_free(now))
    unanswered = free.annotate(newest=Max("messages__seq", filter=Q(messages__role="user"))).filter(
        newest__gt=F("answered_seq")
    )
    unflushed = free.filter(
        tool_pairs__flushed_at__isnull=True, tool_pairs__finished_at__isnull=False
    )
    ids = set(unanswered.values_list("pk", flat=True)) | set(unflushed.values_list("pk", flat=True))
    return sorted(ids)
