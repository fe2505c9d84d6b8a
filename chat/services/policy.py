"""Tool policies applied to a conversation: which tools are offered, and what a call may do.

Definitions used throughout:

* A tool is **usable** by a user when its policy is enabled and its allowed groups are empty
  or share a group with that user. The user is always the conversation's owner.
* A **chain**: a model reply whose request ended with tool_result blocks (the last message the
  request held, notices aside, was a flushed ``tool_results`` turn) is a *continuation* of the
  tools those results answer, its **origins**. A tool call B in such a reply is allowed only if
  every origin A may start a chain and either leads to any tool (no chain targets) or lists B
  among its chain targets. A reply to something the user wrote is not a continuation, so its
  calls are never chained; calls made side by side in one reply do not chain with each other.

Every call is judged when it is stored (``chat.services.pairing.decide``), and the decision is
recorded on its pair. ``judge`` and the helpers above it are pure; the functions below them
read the database.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType

from django.conf import settings

from chat.models import Conversation, Message, ToolPair
from chat.services import config_cache
from chat.services.config_cache import Snapshot
from chat.services.errors import ConversationGone
from tools import config_generation
from tools.models import ToolPolicy
from tools.registry import registry

AUTO = ToolPolicy.Approval.AUTO.value
OWNER = ToolPolicy.Approval.OWNER.value
STAFF = ToolPolicy.Approval.STAFF.value

ALLOWED = "allowed"
AWAITING_OWNER = "awaiting owner approval"
AWAITING_STAFF = "awaiting staff approval"
WAITING_DECISIONS = {OWNER: AWAITING_OWNER, STAFF: AWAITING_STAFF}
DECISION_MAX = 200


@dataclass(frozen=True)
class PolicyView:
    """A snapshot of one tool's policy; the defaults are those of a tool without a row."""

    name: str
    enabled: bool = True
    approval: str = AUTO
    timeout_s: float | None = None
    approval_counts_toward_timeout: bool = False
    group_ids: frozenset[int] = frozenset()
    may_start_chain: bool = True
    chain_targets: frozenset[str] = frozenset()


@dataclass(frozen=True)
class Ruling:
    """What the policy says about one call: a refusal (with a message for the model) or not."""

    decision: str
    refusal: str = ""
    approval: str = AUTO

    @property
    def allowed(self) -> bool:
        return not self.refusal


@dataclass(frozen=True)
class StartPlan:
    """How an allowed call starts: queued at once or held for approval, and its deadline."""

    status: str
    decision: str
    deadline_s: float


# --- the pure core ---------------------------------------------------------------------------


def usable(policy: PolicyView, group_ids: Iterable[int]) -> bool:
    return policy.enabled and (not policy.group_ids or bool(policy.group_ids & set(group_ids)))


def leads_to(origin: PolicyView, target: str) -> bool:
    return origin.may_start_chain and (not origin.chain_targets or target in origin.chain_targets)


def judge(policy: PolicyView, group_ids: Iterable[int], origins: Sequence[PolicyView]) -> Ruling:
    """The ruling on a call to ``policy``'s tool by a user in ``group_ids``, chained after
    ``origins`` (empty when the reply answers the user)."""
    name = policy.name
    if not policy.enabled:
        return Ruling(
            "refused: tool disabled",
            f"The tool {name} is switched off by the administrators. Do not call it again; "
            "tell the user it is not available.",
        )
    if not usable(policy, group_ids):
        return Ruling(
            "refused: not allowed for this user",
            f"The tool {name} is not available to this user. Do not call it again; "
            "tell the user it is not available to them.",
        )
    for origin in origins:
        if not leads_to(origin, name):
            return Ruling(
                f"refused: chain {origin.name} -> {name}"[:DECISION_MAX],
                f"The tool {name} may not be called right after a result of {origin.name} "
                "(tool chain rule). Answer with the results you have; if the user then asks "
                f"for {name}, you may call it.",
            )
    return Ruling(WAITING_DECISIONS.get(policy.approval, ALLOWED), approval=policy.approval)


def run_timeout_s(policy: PolicyView) -> float:
    """The policy's timeout, else the tool's own, else settings.TANDEM_TOOL_TIMEOUT_S."""
    if policy.timeout_s:
        return float(policy.timeout_s)
    spec = registry.get(policy.name)
    if spec is not None and spec.timeout_s:
        return float(spec.timeout_s)
    return float(settings.TANDEM_TOOL_TIMEOUT_S)


def plan_start(policy: PolicyView) -> StartPlan:
    if policy.approval == AUTO:
        return StartPlan(ToolPair.Status.QUEUED, ALLOWED, run_timeout_s(policy))
    wait = (
        run_timeout_s(policy)
        if policy.approval_counts_toward_timeout
        else float(settings.TANDEM_APPROVAL_TIMEOUT_S)
    )
    return StartPlan(ToolPair.Status.AWAITING_APPROVAL, WAITING_DECISIONS[policy.approval], wait)


# --- reading the database --------------------------------------------------------------------


def _policy_table() -> Mapping[str, PolicyView]:
    rows = ToolPolicy.objects.prefetch_related("allowed_groups", "chain_targets")
    return MappingProxyType(
        {
            row.tool_name: PolicyView(
                name=row.tool_name,
                enabled=row.enabled,
                approval=row.approval,
                timeout_s=row.timeout_s,
                approval_counts_toward_timeout=row.approval_counts_toward_timeout,
                group_ids=frozenset(g.pk for g in row.allowed_groups.all()),
                may_start_chain=row.may_start_chain,
                chain_targets=frozenset(t.tool_name for t in row.chain_targets.all()),
            )
            for row in rows
        }
    )


def load(names: Iterable[str], *, config: Snapshot | None = None) -> dict[str, PolicyView]:
    """Policy snapshots by tool name; a tool without a row gets the defaults. Every policy is
    read at once and kept per configuration generation (``chat.services.config_cache``)."""
    table = config_cache.snapshot(config).get("tool_policies", _policy_table)
    return {name: table.get(name) or PolicyView(name) for name in dict.fromkeys(names)}


def policy_for(name: str, *, config: Snapshot | None = None) -> PolicyView:
    return load([name], config=config)[name]


def group_ids_of(user_id: int, *, config: Snapshot | None = None) -> frozenset[int]:
    return config_cache.group_ids_of(user_id, config_cache.snapshot(config))


def offered_names(
    user_id: int, names: Iterable[str], *, config: Snapshot | None = None
) -> set[str]:
    """Which of ``names`` may be offered to the model in a conversation of this user."""
    config = config_cache.snapshot(config)
    groups = group_ids_of(user_id, config=config)
    return {name for name, view in load(names, config=config).items() if usable(view, groups)}


def chain_origins(conversation_id: int, message_id: int) -> list[str]:
    """The tools a reply continues (see the module docstring); empty if it answers the user.

    Call it while the reply streams: the conversation's ``answered_seq`` is then the last
    message its request held.
    """
    reply_seq = Message.objects.filter(pk=message_id).values_list("seq", flat=True).first()
    answered = (
        Conversation.objects.filter(pk=conversation_id)
        .values_list("answered_seq", flat=True)
        .first()
    )
    if reply_seq is None or answered is None:
        return []
    last = (
        Message.objects.filter(
            conversation_id=conversation_id, seq__lt=reply_seq, seq__lte=answered, superseded=False
        )
        .exclude(role=Message.Role.NOTICE)
        .order_by("-seq")
        .values_list("kind", "content")
        .first()
    )
    if last is None or last[0] != Message.Kind.TOOL_RESULTS:
        return []
    ids = [b.get("tool_use_id") for b in last[1] if isinstance(b, dict)]
    names = ToolPair.objects.filter(conversation_id=conversation_id, tool_use_id__in=ids)
    return sorted(set(names.values_list("tool_name", flat=True)))


def rule_on_call(conversation_id: int, message_id: int, name: str) -> Ruling:
    """The policy's ruling on a call the model just made in reply ``message_id``."""
    row = (
        Conversation.objects.filter(pk=conversation_id)
        .annotate(config_token=config_generation.token_subquery())
        .values_list("owner_id", "config_token")
        .first()
    )
    if row is None:
        raise ConversationGone(f"Conversation {conversation_id} was deleted.")
    owner_id, token = row
    config = Snapshot(token)
    origins = chain_origins(conversation_id, message_id)
    views = load([name, *origins], config=config)
    groups = group_ids_of(owner_id, config=config)
    return judge(views[name], groups, [views[o] for o in origins])
