from django.urls import path

from kgapp.web.consumers import GraphConsumer, LiveConsumer

websocket_urlpatterns = [
    path("ws/t/<str:slug>/live/", LiveConsumer.as_asgi()),
    path("ws/t/<str:slug>/graph/", GraphConsumer.as_asgi()),
]
