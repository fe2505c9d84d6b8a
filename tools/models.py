"""Tool policies: who may use a tool, whether a person must approve each call, and chains.

One row per registered tool, created by `sync_policies()` (run after every `migrate`, and by
the admin list). A tool without a row is treated as if it had a row with the defaults below.
"""

from __future__ import annotations

from django.core.validators import MinValueValidator
from django.db import DEFAULT_DB_ALIAS, models, transaction

from tools.config_generation import ConfigGeneration, GenerationQuerySet
from tools.registry import ToolRegistry, registry

__all__ = ["ConfigGeneration", "ToolPolicy", "sync_policies"]


class ToolPolicy(models.Model):
    class Approval(models.TextChoices):
        AUTO = "auto", "runs automatically"
        OWNER = "owner", "the conversation owner approves in the chat"
        STAFF = "staff", "staff approve in admin"

    tool_name = models.CharField(
        max_length=128, unique=True, editable=False, help_text="The tool's registered name."
    )
    enabled = models.BooleanField(
        default=True,
        help_text="Off: the tool is never offered to the model, and a call to it is refused "
        "with an error result the model can read.",
    )
    approval = models.CharField(
        "approval mode",
        max_length=8,
        choices=Approval.choices,
        default=Approval.AUTO,
        help_text="Whether each call runs at once, waits for the conversation owner to approve "
        "it from the tool card, or waits for staff to approve it here in admin. "
        "The conversation goes on while a call waits.",
    )
    timeout_s = models.PositiveIntegerField(
        "timeout (seconds)",
        null=True,
        blank=True,
        validators=[MinValueValidator(1)],
        help_text="How long a call may run before it is stopped. Empty: the tool's own default "
        "(or TANDEM_TOOL_TIMEOUT_S).",
    )
    approval_counts_toward_timeout = models.BooleanField(
        default=False,
        help_text="On: the time a call waits for approval is part of its timeout. "
        "Off: a waiting call times out after TANDEM_APPROVAL_TIMEOUT_S (24 hours by default), "
        "and its run timeout starts when it is approved.",
    )
    allowed_groups = models.ManyToManyField(
        "auth.Group",
        blank=True,
        related_name="tool_policies",
        help_text="Only owners of conversations in one of these groups may use the tool. "
        "Empty: everyone may.",
    )
    may_start_chain = models.BooleanField(
        default=True,
        help_text="Whether the model may call another tool in the reply that reads this tool's "
        "result. Off: any tool call right after this tool's result is refused.",
    )
    chain_targets = models.ManyToManyField(
        "self",
        symmetrical=False,
        blank=True,
        related_name="chain_sources",
        verbose_name="may lead to",
        help_text="The tools the model may call right after this tool's result (when it may "
        "start a chain). Empty: any tool.",
    )

    objects = GenerationQuerySet.as_manager()

    class Meta:
        ordering = ["tool_name"]
        verbose_name = "tool policy"
        verbose_name_plural = "tool policies"

    def __str__(self) -> str:
        return self.tool_name

    @property
    def is_registered(self) -> bool:
        return self.tool_name in registry


def sync_policies(tools: ToolRegistry | None = None, *, using: str = DEFAULT_DB_ALIAS) -> list[str]:
    """Create a default policy for every tool registered in code that has none; returns their
    names. (Tools from sources get theirs when they are added: tools.mcp.catalog.)

    Idempotent and safe to run concurrently (existing rows are never changed).
    """
    names = [spec.name for spec in (tools or registry).registered()]
    rows = ToolPolicy.objects.using(using)
    with transaction.atomic(using=using):
        existing = set(rows.filter(tool_name__in=names).values_list("tool_name", flat=True))
        missing = [name for name in names if name not in existing]
        rows.bulk_create([ToolPolicy(tool_name=name) for name in missing], ignore_conflicts=True)
    return missing
