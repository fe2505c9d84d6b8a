"""Pages: short typed functions, one action each. All of them require login (middleware)."""

from __future__ import annotations

from django.conf import settings
from django.contrib import messages as flash
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import redirect, render
from django.utils.http import content_disposition_header
from django.views.decorators.http import require_GET, require_POST

from chat.queries import access, export, search, sidebar, thread, usage
from chat.services import conversations
from chat.services.errors import UserInputError


def _user_id(request: HttpRequest) -> int:
    assert request.user.pk is not None  # LoginRequiredMiddleware guarantees a user
    return int(request.user.pk)


@require_GET
def index(request: HttpRequest) -> HttpResponse:
    return render(request, "chat/index.html", sidebar.context(_user_id(request)))


@require_POST
def new_conversation(request: HttpRequest) -> HttpResponse:
    conversation = conversations.create_conversation(request.user)
    return redirect(conversation)


@require_GET
def conversation_page(request: HttpRequest, conversation_id: int) -> HttpResponse:
    conversation = access.get_owned_or_404(request.user, conversation_id)
    views, seq = thread.page(conversation)
    return render(
        request,
        "chat/conversation.html",
        {
            "conversation": conversation,
            "views": views,
            "seq": seq,
            "usage_totals": usage.conversation_totals(conversation),
            "max_message_chars": settings.TANDEM_MAX_MESSAGE_CHARS,
            "max_message_label": f"{settings.TANDEM_MAX_MESSAGE_CHARS:,}",
            **sidebar.context(_user_id(request), conversation.pk),
        },
    )


@require_POST
def rename(request: HttpRequest, conversation_id: int) -> HttpResponse:
    conversation = access.get_owned_or_404(request.user, conversation_id)
    try:
        conversations.rename_conversation(conversation.pk, request.POST.get("title", ""))
    except UserInputError as exc:
        flash.error(request, str(exc))
    return redirect(conversation)


@require_POST
def delete(request: HttpRequest, conversation_id: int) -> HttpResponse:
    conversation = access.get_owned_or_404(request.user, conversation_id)
    conversations.delete_conversation(conversation.pk)
    return redirect("chat:index")


@require_POST
def update_settings(request: HttpRequest, conversation_id: int) -> HttpResponse:
    conversation = access.get_owned_or_404(request.user, conversation_id)
    try:
        conversations.update_settings(
            conversation.pk,
            system_prompt=request.POST.get("system_prompt", ""),
            thinking=request.POST.get("thinking") == "on",
        )
    except UserInputError as exc:
        flash.error(request, str(exc))
    return redirect(conversation)


@require_GET
def search_page(request: HttpRequest) -> HttpResponse:
    query = request.GET.get("q", "").strip()[: search.MAX_QUERY_CHARS]
    hits = search.search(_user_id(request), query) if query else []
    return render(
        request,
        "chat/search.html",
        {
            "query": query,
            "search_query": query,
            "hits": hits,
            **sidebar.context(_user_id(request)),
        },
    )


@require_GET
def export_conversation(request: HttpRequest, conversation_id: int) -> HttpResponse:
    """The transcript as Markdown (the default) or, with ``?format=json``, as stored."""
    conversation = access.get_owned_or_404(request.user, conversation_id)
    response: HttpResponse
    if request.GET.get("format") == "json":
        response = JsonResponse(
            export.as_json(conversation), json_dumps_params={"ensure_ascii": False, "indent": 2}
        )
        name = export.filename(conversation, "json")
    else:
        response = HttpResponse(
            export.markdown(conversation), content_type="text/markdown; charset=utf-8"
        )
        name = export.filename(conversation, "md")
    response["Content-Disposition"] = content_disposition_header(True, name)
    return response
