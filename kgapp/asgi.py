"""ASGI entry point: HTTP through Django (and the MCP server), WebSockets through Channels."""

import os

from django.core.asgi import get_asgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "kgapp.settings.dev")
django_asgi_app = get_asgi_application()

from channels.auth import AuthMiddlewareStack  # noqa: E402
from channels.routing import ProtocolTypeRouter, URLRouter  # noqa: E402
from channels.security.websocket import AllowedHostsOriginValidator  # noqa: E402

from kgapp.web.mcp import with_mcp  # noqa: E402
from kgapp.web.request_size import RequestSizeLimit  # noqa: E402
from kgapp.web.routing import websocket_urlpatterns  # noqa: E402

application = ProtocolTypeRouter(
    {
        # /mcp/t/<slug>/: the MCP server of a tenant (kgapp/web/mcp/); the rest: Django.
        "http": RequestSizeLimit(with_mcp(django_asgi_app)),
        "websocket": AllowedHostsOriginValidator(
            AuthMiddlewareStack(URLRouter(websocket_urlpatterns))
        ),
    }
)
