from channels.generic.websocket import AsyncWebsocketConsumer
from django.urls import path, re_path

from kgapp.web.consumers import GraphConsumer, LiveConsumer

CLOSE_NOT_FOUND = 4404


class NoSuchSocket(AsyncWebsocketConsumer):
    """Any other WebSocket path: accepted only to be closed at once with 4404, so that a
    client reads "no such socket" (a close before accepting reaches it as HTTP 403, which
    says "forbidden"). Nothing is sent."""

    async def connect(self) -> None:
        await self.accept()
        await self.close(code=CLOSE_NOT_FOUND)


websocket_urlpatterns = [
    path("ws/t/<str:slug>/live/", LiveConsumer.as_asgi()),
    path("ws/t/<str:slug>/graph/", GraphConsumer.as_asgi()),
    re_path(r"", NoSuchSocket.as_asgi()),
]
