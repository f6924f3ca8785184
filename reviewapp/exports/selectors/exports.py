"""Reads for exports: who may see them, and the rows they hold.

The rows come two ways, both a fixed number of streamed queries whatever the size:
`export_flat.flat_rows` (for JSONL, CSV and Parquet: one streamed statement on PostgreSQL; rows, turns
and verdicts on SQLite) and
`export_rows.export_rows` (row objects with the whole conversation, for the EVA shapes). What an
export draws from (filters, gold labels, pseudonyms) is in `export_filters`.
"""

from __future__ import annotations

from django.core.exceptions import PermissionDenied
from django.db.models import QuerySet

from reviewapp.access import is_lead
from reviewapp.models import ExportSnapshot

__all__ = ["check_snapshot", "snapshots_visible"]


def check_snapshot(user, snapshot: ExportSnapshot | None = None) -> ExportSnapshot | None:
    """Exports are for leads and admins: they hold every language and every reviewer's (pseudonymised) labels."""
    if not is_lead(user):
        raise PermissionDenied("Exports are for leads and admins.")
    return snapshot


def snapshots_visible(*, user) -> QuerySet[ExportSnapshot]:
    check_snapshot(user)
    return ExportSnapshot.objects.select_related("judge", "created_by").order_by("-created_at", "-id")
