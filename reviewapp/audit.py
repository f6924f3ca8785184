"""One way to write the audit trail: who changed what, before and after.

Every service that changes review state calls `audit_record` inside its own transaction, so the
event and the change are committed (or rolled back) together.
"""

from __future__ import annotations

from typing import Any

from django.db import models

from reviewapp.models import AuditEvent


def audit_record(
    *,
    actor: Any,
    action: str,
    obj: models.Model,
    before: dict[str, Any] | None,
    after: dict[str, Any] | None,
) -> AuditEvent:
    """Store one AuditEvent for `obj`. `actor` is a user, or None for the system (imports, tasks).

    `before` and `after` must be JSON-serialisable dicts (or None for a creation / deletion).
    """
    if actor is not None and not getattr(actor, "is_authenticated", False):
        actor = None
    return AuditEvent.objects.create(
        actor=actor,
        action=action,
        object_type=obj._meta.label_lower,
        object_id=str(obj.pk),
        before=before,
        after=after,
    )
