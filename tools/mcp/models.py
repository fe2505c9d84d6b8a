"""MCP servers staff add in admin, and the tools each one listed at its last refresh."""

from __future__ import annotations

from django.conf import settings
from django.core.validators import RegexValidator
from django.db import models

from tools.config_generation import GenerationQuerySet
from tools.mcp import rules


class McpServer(models.Model):
    name = models.CharField(
        max_length=rules.MAX_SERVER_NAME,
        unique=True,
        validators=[RegexValidator(rules.SERVER_NAME, rules.SERVER_NAME_HELP)],
        help_text="A short slug, e.g. docs: the model sees its tool search as docs__search. "
        + rules.SERVER_NAME_HELP,
    )
    url = models.URLField(
        "URL",
        max_length=500,
        help_text="The server's streamable HTTP endpoint, e.g. https://tools.example.com/mcp",
    )
    token = models.CharField(
        "bearer token",
        max_length=2000,
        blank=True,
        help_text="Sent as 'Authorization: Bearer ...'. Write-only: never shown again.",
    )
    token_env = models.CharField(
        "token environment variable",
        max_length=100,
        blank=True,
        validators=[
            RegexValidator(
                rf"^{settings.TANDEM_MCP_TOKEN_PREFIX}[A-Z0-9_]+$",
                f"The name must start with {settings.TANDEM_MCP_TOKEN_PREFIX} "
                "(capital letters, digits and _).",
            )
        ],
        help_text="Instead of a stored token: the environment variable of every Tandem process "
        f"that holds it (it must start with {settings.TANDEM_MCP_TOKEN_PREFIX}).",
    )
    enabled = models.BooleanField(
        default=True, help_text="Off: none of its tools is offered or run."
    )
    refreshed_at = models.DateTimeField("refreshed at", null=True, blank=True, editable=False)
    refresh_ok = models.BooleanField("last refresh worked", default=False, editable=False)
    refresh_status = models.TextField("refresh result", blank=True, editable=False)

    objects = GenerationQuerySet.as_manager()

    class Meta:
        ordering = ["name"]
        verbose_name = "MCP server"
        verbose_name_plural = "MCP servers"

    def __str__(self) -> str:
        return self.name

    def bearer_token(self) -> str:
        """The token to send: the stored one, else the named variable's value ("" if none)."""
        if self.token:
            return self.token
        if self.token_env:
            return str(settings.TANDEM_MCP_TOKENS.get(self.token_env, ""))
        return ""


class McpTool(models.Model):
    server = models.ForeignKey(McpServer, on_delete=models.CASCADE, related_name="tools")
    name = models.CharField("name on the server", max_length=rules.MAX_API_NAME)
    api_name = models.CharField("name the model sees", max_length=rules.MAX_API_NAME, unique=True)
    description = models.TextField(blank=True)
    input_schema = models.JSONField(default=dict)
    annotations = models.JSONField(default=dict, blank=True)
    present = models.BooleanField(
        default=True, help_text="Off: the server no longer lists it (its policy is disabled)."
    )

    objects = GenerationQuerySet.as_manager()

    class Meta:
        ordering = ["server__name", "name"]
        constraints = [
            models.UniqueConstraint(fields=["server", "name"], name="mcp_tool_unique_per_server")
        ]
        verbose_name = "MCP tool"

    def __str__(self) -> str:
        return self.api_name
