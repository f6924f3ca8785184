"""One way to write the audit trail: who changed what, before and after.

Every service that changes review state calls `audit_record` inside its own transaction, so the
event and the change are committed (or rolled back) together.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from typing import Any

from django.db import models

from reviewapp.models import AuditEvent

# One change to write: (action, object, before, after).
AuditChange = tuple[str, models.Model, dict[str, Any] | None, dict[str, Any] | None]


def _event(*, actor: Any, action: str, obj: models.Model, before, after) -> AuditEvent:
    if actor is not None and not getattr(actor, "is_authenticated", False):
        actor = None
    return AuditEvent(
        actor=actor,
        action=action,
        object_type=obj._meta.label_lower,
        object_id=str(obj.pk),
        before=before,
        after=after,
    )


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
    event = _event(actor=actor, action=action, obj=obj, before=before, after=after)
    event.save(force_insert=True)
    return event


def audit_records(*, actor: Any, events: Iterable[AuditChange]) -> list[AuditEvent]:
    """Store several events by one `actor` in one INSERT, in the order given."""
    return AuditEvent.objects.bulk_create(
        _event(actor=actor, action=action, obj=obj, before=before, after=after) for action, obj, before, after in events
    )


def model_state(obj: models.Model, *names: str) -> dict[str, Any]:
    """`obj`'s fields `names` as an audit trail's before or after: a foreign key as its id, a time in ISO 8601."""
    state = {}
    for name in names:
        value = obj.serializable_value(name)
        state[name] = value.isoformat() if isinstance(value, datetime) else value
    return state
