from __future__ import annotations

from django.conf import settings
from django.http import HttpRequest
from ninja import Router, Status

from kgapp import surreal_server
from kgapp.web.schemas import HealthOut

router = Router(tags=["health"])


@router.get("/health", response={200: HealthOut, 503: HealthOut}, auth=None)
def health(request: HttpRequest) -> Status[HealthOut]:
    """Is the graph store reachable? 503 when it is not."""
    answer = surreal_server.health(settings.SURREAL_URL)
    if answer is None:
        return Status(503, HealthOut(status="degraded", graph="unavailable"))
    return Status(200, HealthOut(status="ok", graph="ok", graph_version=str(answer.get("version"))))
