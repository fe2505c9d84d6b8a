"""Conversations, their messages, and the tool calls waiting to be paired with a result.

The database is the source of truth: the channel layer only rings a doorbell and carries
best-effort live deltas.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

from django.conf import settings
from django.db import models
from django.urls import reverse
from django.utils import timezone

from chat.usage_models import GroupBudget, ModelPrice, UsageRecord

__all__ = [
    "Conversation",
    "GroupBudget",
    "IllegalTransition",
    "Message",
    "ModelPrice",
    "ToolPair",
    "UsageRecord",
]


class IllegalTransition(ValueError):
    """A tool pair was asked to move to a status its lifecycle does not allow from here."""


def default_model() -> str:
    return str(settings.ANTHROPIC_MODEL)


class Conversation(models.Model):
    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="conversations"
    )
    title = models.CharField(max_length=200, blank=True)
    model = models.CharField(max_length=100, default=default_model)
    system_prompt = models.TextField(blank=True)
    thinking_budget = models.PositiveIntegerField(
        null=True,
        blank=True,
        help_text="Extended thinking budget in tokens (>= 1024); empty = off.",
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    # Allocation counters, bumped under a row lock (see chat.services).
    next_seq = models.PositiveIntegerField(default=1, editable=False)
    rev = models.PositiveBigIntegerField(
        default=0, editable=False, help_text="Change counter; every visible change bumps it."
    )
    # Highest message seq that a model turn has already been asked to answer.
    answered_seq = models.PositiveIntegerField(default=0, editable=False)

    # The turn lease: one model turn at a time per conversation, across processes.
    lease_owner = models.CharField(max_length=64, blank=True, editable=False)
    lease_expires_at = models.DateTimeField(null=True, blank=True, editable=False)
    # Prompt cache upkeep: when the last model request started, keep-alives since then.
    last_request_at = models.DateTimeField(null=True, blank=True, editable=False)
    keepalives_sent = models.PositiveIntegerField(default=0, editable=False)

    class Meta:
        ordering = ["-updated_at"]
        indexes = [models.Index(fields=["owner", "-updated_at"])]

    def __str__(self) -> str:
        return self.title or f"Conversation {self.pk}"

    def get_absolute_url(self) -> str:
        return reverse("chat:conversation", args=[self.pk])


class Message(models.Model):
    class Role(models.TextChoices):
        USER = "user"
        ASSISTANT = "assistant"
        NOTICE = "notice"  # shown to people, never sent to the model

    class Kind(models.TextChoices):
        PROMPT = "prompt", "user prompt"
        REPLY = "reply", "model reply"
        TOOL_CALLS = "tool_calls", "flushed tool calls"
        TOOL_RESULTS = "tool_results", "flushed tool results"
        NOTICE = "notice", "notice"

    class Status(models.TextChoices):
        STREAMING = "streaming"
        COMPLETE = "complete"
        INTERRUPTED = "interrupted"
        ERROR = "error"

    conversation = models.ForeignKey(
        Conversation, on_delete=models.CASCADE, related_name="messages"
    )
    seq = models.PositiveIntegerField()
    role = models.CharField(max_length=16, choices=Role.choices)
    kind = models.CharField(max_length=16, choices=Kind.choices)
    # API content blocks, exactly as sent or received.
    content = models.JSONField(default=list, blank=True)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.COMPLETE)
    stop_reason = models.CharField(max_length=40, blank=True)
    usage = models.JSONField(default=dict, blank=True)
    error = models.TextField(blank=True)
    api_message_id = models.CharField(max_length=100, blank=True)
    stop_requested = models.BooleanField(default=False)
    superseded = models.BooleanField(
        default=False, help_text="Replaced by a retry; kept for the record, not sent to the model."
    )
    rev = models.PositiveBigIntegerField(default=0, editable=False)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["conversation", "seq"]
        constraints = [
            models.UniqueConstraint(fields=["conversation", "seq"], name="message_seq_unique")
        ]
        indexes = [models.Index(fields=["conversation", "rev"])]

    def __str__(self) -> str:
        return f"#{self.seq} {self.role} ({self.kind})"

    @property
    def text(self) -> str:
        return "".join(
            b.get("text", "")
            for b in self.content
            if isinstance(b, dict) and b.get("type") == "text"
        )


class ToolPair(models.Model):
    """One tool_use from the model and, once it exists, its tool_result."""

    class Status(models.TextChoices):
        AWAITING_APPROVAL = "awaiting_approval", "awaiting approval"
        QUEUED = "queued"
        RUNNING = "running"
        SUCCEEDED = "succeeded"
        FAILED = "failed"
        TIMED_OUT = "timed_out", "timed out"
        CANCELLED = "cancelled"
        DENIED = "denied"

    # The lifecycle. A new pair starts queued, held for approval, or already refused; an open
    # pair waits for its result; a finished one keeps it. ``move_to`` is the only way to change
    # the status, and these tables are the only statement of which moves are legal.
    OPEN = frozenset({Status.AWAITING_APPROVAL, Status.QUEUED, Status.RUNNING})
    FINISHED = frozenset(
        {Status.SUCCEEDED, Status.FAILED, Status.TIMED_OUT, Status.CANCELLED, Status.DENIED}
    )
    PENDING_RUN = frozenset({Status.QUEUED, Status.RUNNING})  # handed to a runner, no result yet
    INITIAL = frozenset({Status.QUEUED, Status.AWAITING_APPROVAL, Status.FAILED, Status.DENIED})
    TRANSITIONS: dict[str, frozenset[str]] = {
        # approved, denied, waited too long, cancelled by the owner
        Status.AWAITING_APPROVAL: frozenset(
            {Status.QUEUED, Status.DENIED, Status.TIMED_OUT, Status.CANCELLED}
        ),
        # claimed by a runner, or given a result without running (an unknown tool, a cancel)
        Status.QUEUED: frozenset(
            {Status.RUNNING, Status.SUCCEEDED, Status.FAILED, Status.TIMED_OUT, Status.CANCELLED}
        ),
        # its result, or back in the queue after its process died
        Status.RUNNING: frozenset(
            {Status.QUEUED, Status.SUCCEEDED, Status.FAILED, Status.TIMED_OUT, Status.CANCELLED}
        ),
        Status.FAILED: frozenset({Status.QUEUED}),  # staff retry of a call that ran and failed
        Status.SUCCEEDED: frozenset(),
        Status.TIMED_OUT: frozenset(),
        Status.CANCELLED: frozenset(),
        Status.DENIED: frozenset(),
    }

    conversation = models.ForeignKey(
        Conversation, on_delete=models.CASCADE, related_name="tool_pairs"
    )
    message = models.ForeignKey(
        Message,
        on_delete=models.CASCADE,
        related_name="tool_pairs",
        help_text="The assistant reply that asked for this call.",
    )
    tool_use_id = models.CharField(max_length=128, unique=True)
    tool_name = models.CharField(max_length=128)
    input = models.JSONField(default=dict, blank=True)
    block_index = models.PositiveIntegerField(default=0)
    status = models.CharField(max_length=20, choices=Status.choices, default=Status.QUEUED)
    result_content: models.JSONField[Any, Any] = models.JSONField(null=True, blank=True)
    is_error = models.BooleanField(default=False)
    progress = models.FloatField(null=True, blank=True)
    progress_text = models.CharField(max_length=200, blank=True)
    attempts = models.PositiveIntegerField(default=0)
    decision = models.CharField(
        max_length=200, blank=True, help_text="Why the call was allowed, refused or held."
    )
    decided_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="+",
    )
    decided_at = models.DateTimeField(null=True, blank=True)
    decision_note = models.TextField(blank=True)
    runner = models.CharField(max_length=64, blank=True, help_text="Process running the tool.")
    heartbeat_at = models.DateTimeField(null=True, blank=True)
    timeline = models.JSONField(default=list, blank=True)
    rev = models.PositiveBigIntegerField(default=0, editable=False)
    requested_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    flushed_at = models.DateTimeField(null=True, blank=True)
    deadline_at = models.DateTimeField(null=True, blank=True)
    flush_message = models.ForeignKey(
        Message, on_delete=models.SET_NULL, null=True, blank=True, related_name="flushed_pairs"
    )

    class Meta:
        ordering = ["requested_at", "block_index"]
        indexes = [
            models.Index(fields=["conversation", "flushed_at"]),
            models.Index(fields=["status", "deadline_at"]),
        ]
        # Approving or denying a call held for staff: granted on its own, since being staff
        # (or being allowed to cancel and retry calls) must not be enough to let a call run.
        permissions = [("decide_toolpair", "Can approve or deny calls held for staff")]

    def __str__(self) -> str:
        return f"{self.tool_name} {self.tool_use_id} ({self.status})"

    def record(self, event: str, **extra: Any) -> None:
        """Add a step to the pair's timeline (saved with the pair)."""
        self.timeline = [
            *self.timeline,
            {"at": timezone.now().isoformat(), "event": event, **extra},
        ]

    def can_move_to(self, status: str) -> bool:
        allowed = self.INITIAL if self._state.adding else self.TRANSITIONS[self.status]
        return status in allowed

    def move_to(
        self, status: str, event: str, *, now: dt.datetime | None = None, **extra: Any
    ) -> None:
        """Change the status (the only place that does) and record why on the timeline.

        A finished pair gets its ``finished_at`` (and a success full progress); a pair that
        starts running counts the attempt; a pair going back to the queue forgets the run.
        The caller saves the pair. An illegal move raises ``IllegalTransition``.
        """
        if not self.can_move_to(status):
            raise IllegalTransition(f"A tool call cannot go from {self.status} to {status}.")
        now = now or timezone.now()
        if status in self.FINISHED:
            self.finished_at = now
            if status == self.Status.SUCCEEDED:
                self.progress = 1.0
        elif status == self.Status.RUNNING:
            self.attempts += 1
            self.started_at = now
            self.heartbeat_at = now
            self.progress = None
            self.progress_text = ""
        elif status == self.Status.QUEUED and not self._state.adding:
            self.runner = ""
            if self.finished_at is not None:  # a retry: the failed result is not kept
                self.result_content = None
                self.is_error = False
                self.finished_at = None
                self.progress = None
                self.progress_text = ""
        self.status = status
        self.record(event, **extra)

    def start_clock(self, seconds: float, *, now: dt.datetime | None = None) -> None:
        """Give the pair its deadline: ``seconds`` from now (the sweeper times it out after)."""
        self.deadline_at = (now or timezone.now()) + dt.timedelta(seconds=seconds)

    def seconds_left(self, *, now: dt.datetime | None = None) -> float | None:
        """Time until the deadline (never negative), or None when the pair has none."""
        if self.deadline_at is None:
            return None
        return max(0.0, (self.deadline_at - (now or timezone.now())).total_seconds())

    @property
    def is_open(self) -> bool:
        """Still waiting for its result: it may be cancelled, its input is shown open."""
        return self.status in self.OPEN

    @property
    def is_finished(self) -> bool:
        return self.status in self.FINISHED

    @property
    def is_running(self) -> bool:
        return self.status == self.Status.RUNNING

    @property
    def is_pending_run(self) -> bool:
        """Queued or running: the card shows its progress."""
        return self.status in self.PENDING_RUN

    @property
    def is_awaiting_approval(self) -> bool:
        return self.status == self.Status.AWAITING_APPROVAL

    @property
    def duration_s(self) -> float | None:
        if self.started_at and self.finished_at:
            return (self.finished_at - self.started_at).total_seconds()
        return None
