"""Token authentication for the API: `Authorization: Bearer <token>`, checked by services/api_tokens.

Each operation names the scope it needs (`TokenAuth(READ_SWEEPS)`). A missing, wrong or revoked
token is a 401; a live token without the scope is a 403 naming the scope and the ones it has. The
request then acts as the token's user (`request.user`), so the same access helpers as the pages
decide what it may see. Only the header is read, never the session cookie: a browser cannot make a
request carry the token on its own, so these operations need no CSRF token (and ninja's bearer auth
does not ask for one).
"""

from __future__ import annotations

from django.core.exceptions import PermissionDenied
from django.http import HttpRequest
from ninja.security import HttpBearer

from reviewapp.models import ApiToken
from reviewapp.people.services.api_tokens import api_token_authenticate, token_has_scope


class TokenAuth(HttpBearer):
    def __init__(self, scope: str):
        self.scope = scope
        super().__init__()

    def authenticate(self, request: HttpRequest, token: str) -> ApiToken | None:
        api_token = api_token_authenticate(raw=token.strip())
        if api_token is None:
            return None
        if not token_has_scope(api_token, self.scope):
            held = ", ".join(api_token.scopes or ()) or "none"
            raise PermissionDenied(f"This token lacks the {self.scope} scope (it has: {held}).")
        request.user = api_token.user
        request.api_token = api_token  # type: ignore[attr-defined]
        return api_token
