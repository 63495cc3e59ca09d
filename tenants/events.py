"""Events other processes must hear about, sent only once the change has committed."""

from __future__ import annotations

from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer
from django.db import transaction


def tenant_group(namespace: str) -> str:
    """The Channels group of every open socket of one tenant."""
    return f"tenant.{namespace}"


def send_access_revoked(*, namespace: str, user_id: int) -> None:
    def send() -> None:
        layer = get_channel_layer()
        if layer is not None:
            async_to_sync(layer.group_send)(
                tenant_group(namespace), {"type": "access.revoked", "user_id": user_id}
            )

    transaction.on_commit(send)
