"""The rows and filter choices of the list pages (sweeps, exports, signatures, people): each a bounded
list at a fixed number of queries, filtered by what the address asks for and the user may see."""

from __future__ import annotations

from django.contrib.auth import get_user_model
from django.db.models import QuerySet

from reviewapp.exports.selectors import exports as export_selectors
from reviewapp.judging.selectors import sweeps as sweep_selectors
from reviewapp.models import ExportSnapshot, Judge, Role, Signature, Sweep, Turn

# A list page shows at most this many rows, newest first.
ROWS_SHOWN = 200


def query_filters(request, *names: str) -> dict[str, str]:
    """The filters a list page's address asks for, by name: each stripped, "" when absent. The page
    passes them on to its rows and echoes them back into its filter bar."""
    return {name: request.GET.get(name, "").strip() for name in names}


def judge_slugs() -> list[str]:
    """Every judge's slug, for a judge filter."""
    return list(Judge.objects.order_by("slug").values_list("slug", flat=True))


def sweeps_listed(*, user, status: str, limit: int = ROWS_SHOWN) -> list[Sweep]:
    """The newest `limit` sweeps `user` may see, of one status when it names a known one."""
    sweeps = sweep_selectors.sweeps_visible(user=user)
    if status in Sweep.Status.values:
        sweeps = sweeps.filter(status=status)
    return list(sweeps[:limit])


def snapshots_listed(*, user, judge_slug: str, limit: int = ROWS_SHOWN) -> list[ExportSnapshot]:
    """The newest `limit` export snapshots, of one judge when one is named."""
    snapshots = export_selectors.snapshots_visible(user=user)
    if judge_slug:
        snapshots = snapshots.filter(judge__slug=judge_slug)
    return list(snapshots[:limit])


def signature_languages() -> list[str]:
    """The languages some signature is written for, for the signatures filter."""
    return list(Signature.objects.order_by("language").values_list("language", flat=True).distinct())


def signature_evidence(*, signature: Signature) -> QuerySet[Turn]:
    """The turns that justified a signature, in conversation order, with their conversation and dataset."""
    return signature.evidence.select_related("conversation", "conversation__dataset").order_by(
        "conversation_id", "position"
    )


def people_listed(*, role: str) -> list:
    """Every user with their profile, by username, of one role when it names a known one."""
    users = get_user_model().objects.select_related("profile").order_by("username")
    if role in Role.values:
        users = users.filter(profile__role=role)
    return list(users)
