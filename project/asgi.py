"""ASGI entry point: HTTP through Django, WebSockets through Channels."""

from __future__ import annotations

import os
import sys

from django.core.asgi import get_asgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "project.settings")
django_asgi_app = get_asgi_application()

from django.conf import settings  # noqa: E402

if settings.TANDEM_GIL_SWITCH_INTERVAL_MS > 0:  # a server process: see settings
    sys.setswitchinterval(settings.TANDEM_GIL_SWITCH_INTERVAL_MS / 1000)

from channels.auth import AuthMiddlewareStack  # noqa: E402
from channels.routing import ProtocolTypeRouter, URLRouter  # noqa: E402
from django.contrib.staticfiles.handlers import ASGIStaticFilesHandler  # noqa: E402

from chat.routing import websocket_urlpatterns  # noqa: E402
from chat.runtime.engine import EngineMiddleware  # noqa: E402
from chat.sockets.origin_check import SameOriginValidator  # noqa: E402

application = EngineMiddleware(
    ProtocolTypeRouter(
        {
            "http": ASGIStaticFilesHandler(django_asgi_app),
            "websocket": SameOriginValidator(AuthMiddlewareStack(URLRouter(websocket_urlpatterns))),
        }
    )
)
