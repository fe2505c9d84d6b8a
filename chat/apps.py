from django.apps import AppConfig


class ChatConfig(AppConfig):
    name = "chat"
    verbose_name = "Conversations"

    def ready(self) -> None:
        """Hand the runtime what it runs: the engine never imports the layers above it.

        Importing the runner here also loads the SDK (about a second) at start-up rather than
        on the first message, where it would stall the loop and every socket on it.
        """
        from django.conf import settings

        from chat.runtime import doorbells, engine, events, runner, sweeper, tasks
        from chat.services import config_cache
        from chat.sockets import fanout, socket_auth
        from tools import task_backend

        # Several processes (REDIS_URL): ring the others when a turn or a cancel is due
        # elsewhere; a web process (the one whose loop gets bound) listens for both.
        shared = settings.TANDEM_DOORBELLS
        listeners = (doorbells.listen_for_kicks, doorbells.listen_for_cancels) if shared else ()
        engine.wire(
            engine.Wiring(
                run_turn=runner.run_conversation,
                run_begun=runner.run_begun,
                enqueue_tool=tasks.run_tool_pair.enqueue,
                background=(sweeper.run_forever, *listeners),
                on_bind=(task_backend.bind_loop,),
                remote_kick=doorbells.ring_kick if shared else None,
                remote_cancel=doorbells.ring_cancel if shared else None,
            )
        )
        events.describe_changes_with(fanout.describe)  # a bell carries its change
        socket_auth.connect_receivers()
        config_cache.connect_receivers()
