"""API tokens for CI and scripts: created once, stored as a sha256, acting as their user, within scopes.

The token text is shown only when created; the database keeps its sha256 and a short prefix to
recognise it in lists. A revoked token is refused from then on.

A token does only what its scopes allow, and never more than its user may:

* ``read-sweeps``: a sweep's status and gate;
* ``run-sweeps``: start sweeps (and read them); leads and admins only;
* ``read-snapshots``: list and download export snapshots; leads and admins only.

A token may also be limited to languages (within its user's own): it then sees only sweeps and
snapshots of those languages and starts sweeps only in them.
"""

from __future__ import annotations

import hashlib
import re
import secrets
from collections.abc import Iterable, Sequence

from django.db import transaction
from django.utils import timezone

from reviewapp import access
from reviewapp.audit import audit_record
from reviewapp.models import ApiToken
from scoring.errors import TribunalError

TOKEN_PREFIX = "trb_"  # noqa: S105 - a marker that says what the text is, not a secret
# last_used_at is written at most this often per token, so a busy CI job does not write on every call.
LAST_USED_RESOLUTION_S = 60


READ_SWEEPS = "read-sweeps"
RUN_SWEEPS = "run-sweeps"
READ_SNAPSHOTS = "read-snapshots"
SCOPES = (READ_SWEEPS, RUN_SWEEPS, READ_SNAPSHOTS)
LEAD_SCOPES = frozenset({RUN_SWEEPS, READ_SNAPSHOTS})
# Scopes that include others: a token that may start sweeps may read them.
IMPLIED = {RUN_SWEEPS: {READ_SWEEPS}}
_LANGUAGE = re.compile(r"^[A-Za-z]{2,3}(-[A-Za-z0-9]{2,8})*$")


class ApiTokenError(TribunalError, ValueError):
    """A token that cannot be created or changed as asked."""


def _clean_scopes(user, scopes: Iterable[str]) -> list[str]:
    cleaned = list(dict.fromkeys(s.strip() for s in scopes if s.strip()))
    if not cleaned:
        raise ApiTokenError(f"A token needs at least one scope: {', '.join(SCOPES)}.")
    unknown = [s for s in cleaned if s not in SCOPES]
    if unknown:
        raise ApiTokenError(f"Unknown scope {', '.join(map(repr, unknown))}; the scopes are {', '.join(SCOPES)}.")
    beyond = sorted(set(cleaned) & LEAD_SCOPES) if not access.is_lead(user) else []
    if beyond:
        raise ApiTokenError(
            f"{user.get_username()!r} is not a lead or admin, so a token of theirs cannot have {', '.join(beyond)}."
        )
    return [s for s in SCOPES if s in cleaned]


def _clean_languages(user, languages: Iterable[str]) -> list[str]:
    cleaned = list(dict.fromkeys(code.strip() for code in languages if code.strip()))
    for code in cleaned:
        if not _LANGUAGE.match(code):
            raise ApiTokenError(f"{code!r} is not a BCP 47 language code (fr, fr-CA, ja ...).")
        if not access.language_allowed(user, code):
            raise ApiTokenError(f"{user.get_username()!r} does not work in {code}, so their token cannot either.")
    return cleaned


def token_has_scope(token: ApiToken, scope: str) -> bool:
    granted = set(token.scopes or ())
    for held in list(granted):
        granted |= IMPLIED.get(held, set())
    return scope in granted


def token_language_allowed(token: ApiToken, language: str) -> bool:
    """Whether a token limited to languages covers `language` ("fr" covers "fr-CA"); unlimited: True."""
    if not token.languages:
        return True
    language = language.lower()
    return any(language == code.lower() or language.startswith(code.lower() + "-") for code in token.languages)


def token_hash(raw: str) -> str:
    return hashlib.sha256(raw.encode("utf-8")).hexdigest()


@transaction.atomic
def api_token_create(
    *, user, name: str, scopes: Sequence[str], languages: Sequence[str] = (), actor=None
) -> tuple[ApiToken, str]:
    """A new token for `user` with `scopes` (and optionally only `languages`); returns the row and the
    token text (shown once, never stored)."""
    name = name.strip()
    if not name:
        raise ApiTokenError("A token needs a name (what uses it: 'CI gate', 'nightly export').")
    if len(name) > 200:
        raise ApiTokenError(f"A token name is at most 200 characters, not {len(name)}.")
    if not user.is_active:
        raise ApiTokenError(f"User {user.get_username()!r} is not active.")
    scopes = _clean_scopes(user, scopes)
    languages = _clean_languages(user, languages)
    raw = TOKEN_PREFIX + secrets.token_urlsafe(32)
    token = ApiToken.objects.create(
        user=user, name=name, key_hash=token_hash(raw), prefix=raw[:12], scopes=scopes, languages=languages
    )
    audit_record(
        actor=actor,
        action="api_token.create",
        obj=token,
        before=None,
        after={"name": token.name, "scopes": scopes, "languages": languages},
    )
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
