from django.apps import AppConfig


class ChatConfig(AppConfig):
    name = "chat"
    verbose_name = "Conversations"

    def ready(self) -> None:
        from chat import socket_auth

        socket_auth.connect_receivers()
