"""The relay benchmark's what-ifs: patches applied to a measured Tandem server before it serves.

    python -m tests.bench.relay --n 50,100 --experiment before-round-5 --repeat 3

``--experiment NAME`` runs a second Tandem server beside the plain one, with
``EXPERIMENTS[NAME]`` applied (``tests/bench/tandem_server.py`` reads ``BENCH_EXPERIMENT``), so
both are measured in the same run against the same bare relay. Each undoes a round of issue 10
(``before-round-4``, ``before-round-5``) or tries another setting.
"""

from __future__ import annotations

from collections.abc import Callable
from importlib import import_module
from typing import Any

EXPERIMENT_ENV = "BENCH_EXPERIMENT"


def experiment_runner_reads_off_thread() -> None:
    """What-if: the turn runner's pure reads (the next turn's input, whether more is due) run
    in reader threads, as the sockets' doorbell reads do, instead of the shared thread."""
    from channels.db import database_sync_to_async

    from chat.runtime import runner
    from chat.services import turns

    reads = {turns.load_turn_input, turns.is_due}

    def db(fn: Any) -> Any:
        return database_sync_to_async(fn, thread_sensitive=fn not in reads)

    runner.db = db  # type: ignore[assignment]


def experiment_switch_interval(ms: float) -> Callable[[], None]:
    """What-if: another GIL switch interval than settings.TANDEM_GIL_SWITCH_INTERVAL_MS (0.2 ms;
    Python's default is 5 ms), which project/asgi.py applies when the server imports it."""

    def apply() -> None:
        from django.conf import settings

        settings.TANDEM_GIL_SWITCH_INTERVAL_MS = ms

    return apply


def experiment_before_round_4() -> None:
    """What-if: the send path as it was before round 4 of issue 10, for a same-run comparison:
    the session check on the shared database thread (channels' ``get_user``), the rate check
    in a thread, the message stored in one hop and its turn claimed and begun in the runner's
    next hop (two doorbells), a reply's end and the lease's release in two hops, 6 reader
    threads (asyncio's default executor on 2 CPUs) and a 1 ms switch interval. Only round 4's
    changes are undone: later rounds stay (so it is no longer round 4 as it was measured then).
    """
    from asgiref.sync import sync_to_async
    from channels.auth import get_user
    from channels.db import database_sync_to_async
    from django.conf import settings

    from chat.services import messages, turns
    from chat.services.errors import UserInputError
    from chat.sockets import consumers, outbound, ratelimit, socket_auth

    settings.TANDEM_GIL_SWITCH_INTERVAL_MS = 1.0
    settings.TANDEM_DB_READER_THREADS = 6

    async def still_signed_in(scope: dict[str, Any]) -> bool:
        user, key = scope["user"], scope["session"].session_key
        fresh = import_module(settings.SESSION_ENGINE).SessionStore(key)
        current = await get_user({"session": fresh})
        return bool(current.is_authenticated and current.is_active and current.pk == user.pk)

    async def check_rate(self: Any) -> None:
        allow = sync_to_async(ratelimit.allow, thread_sensitive=False)
        if not await allow(self.scope["user"].pk, per_minute=settings.TANDEM_RATE_LIMIT_PER_MINUTE):
            raise UserInputError(consumers.TOO_FAST)

    async def do_send(self: Any, action: Any) -> None:
        await self.check_rate()
        await database_sync_to_async(messages.post_user_message)(self.conversation_id, action.text)
        await self.send(text_data=outbound.stored(action.ref))

    def finish_only(message_id: int, conversation_id: int, owner: str, **finish: Any) -> None:
        messages.finish_reply(message_id, **finish)  # the runner then releases in its own hop

    turns.finish_and_release = finish_only  # type: ignore[assignment]
    socket_auth.still_signed_in = still_signed_in  # type: ignore[assignment]
    consumers.ConversationConsumer.check_rate = check_rate  # type: ignore[method-assign]
    consumers.ConversationConsumer.actions["send"] = do_send


def experiment_before_round_5() -> None:
    """What-if: the live path as it was before round 5 of issue 10, for a same-run comparison:
    Channels' own loop over a socket's two inboxes (a task per message and ``asyncio.wait``),
    its hop through the shared database thread before every browser frame, the sockets' reads
    in reader threads on SQLite too, Python's default garbage collector, a client copied for
    every request, and the cursor, title and send confirmation rendered by the template
    engine."""
    from channels.consumer import AsyncConsumer, get_handler_name

    from chat.modelapi import client
    from chat.runtime import keepalive, runner
    from chat.sockets import consumers, outbound

    def render(partial: str, **context: object) -> Callable[..., str]:
        def build(*args: Any) -> str:
            names = {"cursor": ("seq", "rev"), "title": ("title",), "stored": ("stored_ref",)}
            values = dict(zip(names[partial], args, strict=True))
            template = "composer_error" if partial == "stored" else partial
            return outbound._render(template, **context, **values, oob=True)

        return build

    async def dispatch(self: Any, message: dict[str, Any]) -> None:
        if message["type"].startswith("websocket."):
            await AsyncConsumer.dispatch(self, message)  # with its hop
        else:
            await getattr(self, get_handler_name(message))(message)

    def copied_client() -> Any:
        return client.get_client().with_options(max_retries=0)

    experiment_reads_in_reader_threads()
    experiment_gc(False, 0)()
    consumers.GroupSocket.__call__ = AsyncConsumer.__call__  # type: ignore[method-assign]
    consumers.GroupSocket.dispatch = dispatch  # type: ignore[method-assign]
    runner.get_client_without_retries = copied_client  # type: ignore[attr-defined]
    keepalive.get_client_without_retries = copied_client  # type: ignore[attr-defined]
    outbound.cursor = render("cursor")  # type: ignore[assignment]
    outbound.title = render("title")  # type: ignore[assignment]
    outbound.stored = render("stored", error_text="")  # type: ignore[assignment]


def experiment_reads_in_reader_threads() -> None:
    """What-if: the sockets' reads in reader threads on SQLite too (``TANDEM_DB_READS_OFF_THREAD``
    on), as before round 5: three threads, not one, take the GIL back after each SQLite call."""
    from django.conf import settings

    settings.TANDEM_DB_READS_OFF_THREAD = True


def experiment_bells_carried() -> None:
    """What-if: doorbells that carry their change (``TANDEM_CARRY_CHANGES`` on): the writer
    describes it after its commit, in its own hop, and the tabs at the bell's start read
    nothing, instead of one read per process and cursor."""
    from django.conf import settings

    settings.TANDEM_CARRY_CHANGES = True


def experiment_gc(freeze: bool, gen0: int) -> Callable[[], None]:
    """What-if: another garbage collector set-up than settings.TANDEM_GC_FREEZE (on) and
    TANDEM_GC_GEN0_THRESHOLD (20,000), which ``manage.py tandem`` applies once its loop is up;
    gen0 0 keeps Python's default threshold (2,000)."""

    def apply() -> None:
        from django.conf import settings

        settings.TANDEM_GC_FREEZE = freeze
        settings.TANDEM_GC_GEN0_THRESHOLD = gen0

    return apply


def experiment_readers(count: int) -> Callable[[], None]:
    """What-if: another number of reader threads than settings.TANDEM_DB_READER_THREADS (2);
    6 is what asyncio's default executor, which served these reads before, has on 2 CPUs."""

    def apply() -> None:
        from django.conf import settings

        settings.TANDEM_DB_READER_THREADS = count

    return apply


EXPERIMENTS = {
    "switch-interval-5ms": experiment_switch_interval(5.0),
    "switch-interval-1ms": experiment_switch_interval(1.0),
    "switch-interval-0.5ms": experiment_switch_interval(0.5),
    "switch-interval-0.2ms": experiment_switch_interval(0.2),
    "runner-reads-off-thread": experiment_runner_reads_off_thread,
    "before-round-4": experiment_before_round_4,
    "before-round-5": experiment_before_round_5,
    "readers-6": experiment_readers(6),
    "readers-1": experiment_readers(1),
    "gc-untuned": experiment_gc(False, 0),
    "gc-freeze-only": experiment_gc(True, 0),
    "gc-gen0-50k": experiment_gc(True, 50_000),
    "reads-in-reader-threads": experiment_reads_in_reader_threads,
    "bells-carried": experiment_bells_carried,
}
