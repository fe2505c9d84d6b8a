from __future__ import annotations

from django.urls import path

from chat.sockets.consumers import ConversationConsumer, ConversationListConsumer

websocket_urlpatterns = [
    path("ws/conversations/<int:conversation_id>/", ConversationConsumer.as_asgi()),
    path("ws/conversations/", ConversationListConsumer.as_asgi()),
    path("ws/conversations/current/<int:current>/", ConversationListConsumer.as_asgi()),
]
