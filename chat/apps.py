from django.apps import AppConfig


class ChatConfig(AppConfig):
    name = "chat"
    verbose_name = "Conversations"

    def ready(self) -> None:
        """Hand the runtime what it runs: the engine never imports the layers above it.

        Importing the runner here also loads the SDK (about a second) at start-up rather than
        on the first message, where it would stall the loop and every socket on it.
        """
        from chat.runtime import engine, runner, sweeper, tasks
        from chat.sockets import socket_auth
        from tools import task_backend

        engine.wire(
            engine.Wiring(
                run_turn=runner.run_conversation,
                enqueue_tool=tasks.run_tool_pair.enqueue,
                background=(sweeper.run_forever,),
                on_bind=(task_backend.bind_loop,),
            )
        )
        socket_auth.connect_receivers()
