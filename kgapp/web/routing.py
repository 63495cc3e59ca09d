from django.urls import path

from kgapp.web.consumers import LiveConsumer

websocket_urlpatterns = [
    path("ws/t/<str:slug>/live/", LiveConsumer.as_asgi()),
]
