"""A token limited to languages sees and starts only what lies within them ("fr" covers "fr-CA")."""

from __future__ import annotations

from django.core.exceptions import PermissionDenied
from django.http import HttpRequest

from reviewapp.models import ExportSnapshot
from reviewapp.people.services.api_tokens import token_language_allowed


def check_token_languages(request: HttpRequest, *languages: str) -> None:
    token = request.api_token
    outside = sorted({code for code in languages if not token_language_allowed(token, code)})
    if outside:
        raise PermissionDenied(
            f"This token is limited to {', '.join(token.languages)}; this covers {', '.join(outside)}."
        )


def snapshot_languages(snapshot: ExportSnapshot) -> list[str]:
    languages = (snapshot.filters or {}).get("languages") or []
    return [languages] if isinstance(languages, str) else list(languages)


def snapshot_in_token_languages(request: HttpRequest, snapshot: ExportSnapshot) -> bool:
    """A token limited to languages sees a snapshot only when the snapshot is limited to them too."""
    if not request.api_token.languages:
        return True
    languages = snapshot_languages(snapshot)
    return bool(languages) and all(token_language_allowed(request.api_token, code) for code in languages)
