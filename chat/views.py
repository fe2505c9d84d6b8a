"""Pages: short typed functions, one action each. All of them require login (middleware)."""

from __future__ import annotations

from django.contrib import messages as flash
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_POST

from chat import access, thread_state
from chat.models import Conversation
from chat.services import conversations
from chat.services.errors import UserInputError


def _sidebar(request: HttpRequest) -> list[Conversation]:
    return list(Conversation.objects.filter(owner_id=request.user.pk).order_by("-updated_at")[:100])


@require_GET
def index(request: HttpRequest) -> HttpResponse:
    return render(request, "chat/index.html", {"conversations": _sidebar(request)})


@require_POST
def new_conversation(request: HttpRequest) -> HttpResponse:
    conversation = conversations.create_conversation(request.user)
    return redirect(conversation)


@require_GET
def conversation_page(request: HttpRequest, conversation_id: int) -> HttpResponse:
    conversation = access.get_owned_or_404(request.user, conversation_id)
    views, seq = thread_state.page(conversation)
    return render(
        request,
        "chat/conversation.html",
        {
            "conversation": conversation,
            "views": views,
            "seq": seq,
            "conversations": _sidebar(request),
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
