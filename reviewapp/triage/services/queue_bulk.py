"""Bulk actions for leads on the review queue: close, re-prioritise, reassign language, send back.

All or nothing: when any chosen item refuses the action, nothing is written and every refusal is
named. Each item's change is an AuditEvent (action `item.bulk_<what>`, before and after).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from django.db import transaction

from reviewapp import access
from reviewapp.adjudication.services import adjudication
from reviewapp.audit import audit_record
from reviewapp.models import ReviewItem
from reviewapp.people.services.people import PeopleError, languages_clean
from scoring.errors import TribunalError

Status = ReviewItem.Status
ACTIONS = ("close", "reprioritise", "reassign_language", "send_back")
MAX_ITEMS = 500
PRIORITY_RANGE = (-1_000_000, 1_000_000)


class BulkError(TribunalError):
    """The bulk action was refused as a whole; `refusals` says why, item by item."""

    def __init__(self, message: str, refusals: Sequence[str] = ()):
        super().__init__(message)
        self.refusals = list(refusals)


@dataclass(frozen=True)
class BulkResult:
    action: str
    changed: int


def _state(item: ReviewItem) -> dict:
    return {
        "status": item.status,
        "priority": item.priority,
        "language": item.language,
        "claimed_by": item.claimed_by_id,
    }


def items_bulk_update(
    *,
    actor,
    item_ids: Sequence[int],
    action: str,
    priority: int | None = None,
    language: str = "",
    note: str = "",
    to: str = "original",
) -> BulkResult:
    """Apply `action` to every item in `item_ids` (a lead's choice on the queue page)."""
    if not access.is_lead(actor):
        raise BulkError("Only leads and admins act on many items at once.")
    if action not in ACTIONS:
        raise BulkError(f"Unknown bulk action {action!r}: one of {', '.join(ACTIONS)}.")
    ids = sorted(set(item_ids))
    if not ids:
        raise BulkError("Choose at least one item.")
    if len(ids) > MAX_ITEMS:
        raise BulkError(f"At most {MAX_ITEMS} items at once, not {len(ids)}.")
    if action == "reprioritise" and (priority is None or not PRIORITY_RANGE[0] <= priority <= PRIORITY_RANGE[1]):
        raise BulkError(f"Give a priority between {PRIORITY_RANGE[0]} and {PRIORITY_RANGE[1]}.")
    if action == "reassign_language":
        try:
            cleaned = languages_clean([language])
        except PeopleError as exc:
            raise BulkError(str(exc)) from None
        if not cleaned:
            raise BulkError("Give the language to reassign the items to.")
        language = cleaned[0]
    if action == "send_back" and not note.strip():
        raise BulkError("Say what reviewers should look at again.")

    with transaction.atomic():
        items = list(ReviewItem.objects.select_for_update().filter(pk__in=ids).order_by("pk"))
        missing = sorted(set(ids) - {item.pk for item in items})
        refusals = [f"Item {pk} does not exist." for pk in missing]
        if action == "send_back":
            for item in items:
                try:
                    with transaction.atomic():
                        adjudication.item_send_back(item=item, lead=actor, note=note, to=to)
                except adjudication.AdjudicationError as exc:
                    refusals.append(str(exc))
            if refusals:
                transaction.set_rollback(True)
                raise BulkError("Nothing was sent back.", refusals)
            return BulkResult(action, len(items))
        for item in items:
            if action == "close" and item.status == Status.CLOSED:
                refusals.append(f"Item {item.pk} is closed already.")
        if refusals:
            raise BulkError("Nothing was changed.", refusals)
        for item in items:
            before = _state(item)
            if action == "close":
                item.status, item.claimed_by, item.lease_expires_at = Status.CLOSED, None, None
            elif action == "reprioritise":
                item.priority = priority
            else:
                item.language = language
            item.save(update_fields=["status", "claimed_by", "lease_expires_at", "priority", "language", "updated_at"])
            audit_record(actor=actor, action=f"item.bulk_{action}", obj=item, before=before, after=_state(item))
        return BulkResult(action, len(items))
