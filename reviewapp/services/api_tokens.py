"""API tokens for CI and scripts: created once, stored as a sha256, acting as their user.

The token text is shown only when created; the database keeps its sha256 and a short prefix to
recognise it in lists. A revoked token is refused from then on.
"""

from __future__ import annotations

import hashlib
import secrets

from django.db import transaction
from django.utils import timezone

from reviewapp.models import ApiToken
from reviewapp.services.audit import audit_record

TOKEN_PREFIX = "trb_"  # noqa: S105 - a marker that says what the text is, not a secret
# last_used_at is written at most this often per token, so a busy CI job does not write on every call.
LAST_USED_RESOLUTION_S = 60


class ApiTokenError(ValueError):
    """A token that cannot be created or changed as asked."""


def token_hash(raw: str) -> str:
    return hashlib.sha256(raw.encode("utf-8")).hexdigest()


@transaction.atomic
def api_token_create(*, user, name: str, actor=None) -> tuple[ApiToken, str]:
    """A new token for `user`; returns the row and the token text (shown once, never stored)."""
    name = name.strip()
    if not name:
        raise ApiTokenError("A token needs a name (what uses it: 'CI gate', 'nightly export').")
    if not user.is_active:
        raise ApiTokenError(f"User {user.get_username()!r} is not active.")
    raw = TOKEN_PREFIX + secrets.token_urlsafe(32)
    token = ApiToken.objects.create(user=user, name=name[:200], key_hash=token_hash(raw), prefix=raw[:12])
    audit_record(actor=actor, action="api_token.create", obj=token, before=None, after={"name": token.name})
    return token, raw


@transaction.atomic
def api_token_revoke(*, token: ApiToken, actor=None) -> ApiToken:
    if token.revoked_at is not None:
        raise ApiTokenError(f"Token {token.name!r} is already revoked.")
    token.revoked_at = timezone.now()
    token.save(update_fields=["revoked_at"])
    audit_record(actor=actor, action="api_token.revoke", obj=token, before={"revoked": False}, after={"revoked": True})
    return token


def api_token_authenticate(*, raw: str) -> ApiToken | None:
    """The live token for this text (with its user and profile), or None; marks it used."""
    if not raw:
        return None
    token = (
        ApiToken.objects.select_related("user", "user__profile")
        .filter(key_hash=token_hash(raw), revoked_at__isnull=True, user__is_active=True)
        .first()
    )
    if token is None:
        return None
    now = timezone.now()
    if token.last_used_at is None or (now - token.last_used_at).total_seconds() >= LAST_USED_RESOLUTION_S:
        ApiToken.objects.filter(pk=token.pk).update(last_used_at=now)
        token.last_used_at = now
    return token
