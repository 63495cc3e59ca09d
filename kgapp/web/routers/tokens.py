"""Your own API tokens."""

from __future__ import annotations

from ninja import Router, Status
from ninja.errors import HttpError

from kgapp.web import ratelimits
from kgapp.web.auth import AuthenticatedHttpRequest
from kgapp.web.schemas import ErrorOut, TokenCreatedOut, TokenIn, TokenOut
from tenants import selectors, services
from tenants.models import ApiToken

router = Router(tags=["tokens"])


@router.get("/tokens", response=list[TokenOut])
def token_list(request: AuthenticatedHttpRequest) -> list[ApiToken]:
    return list(selectors.tokens_of_user(request.user))


@router.post("/tokens", response={201: TokenCreatedOut, 403: ErrorOut, 429: ErrorOut})
def token_create(request: AuthenticatedHttpRequest, payload: TokenIn) -> Status[dict[str, object]]:
    """A new token; its secret is in the answer and nowhere else, ever. Only a signed-in
    session creates tokens (403 to a token): a leaked token cannot make itself a
    successor that outlives its revocation."""
    if getattr(request, "api_token", None):
        raise HttpError(
            403,
            "A token cannot create tokens: sign in and create one from your session"
            " (the API docs at /api/docs, or POST /api/v1/tokens with the session cookie).",
        )
    ratelimits.check(request, "token_create")
    token, secret = services.token_create(user=request.user, name=payload.name)
    return Status(201, {**TokenOut.from_orm(token).dict(), "token": secret})


@router.delete("/tokens/{token_id}", response={204: None, 404: ErrorOut})
def token_revoke(request: AuthenticatedHttpRequest, token_id: int) -> Status[None]:
    token = selectors.tokens_of_user(request.user).filter(pk=token_id).first()
    if token is None:
        raise HttpError(404, f"you have no token {token_id}")
    services.token_revoke(token=token)
    return Status(204, None)
