"""The queue's shared vocabulary: which statuses are active, the filters a queue is read with, and the
languages a user may review. A reviewer sees only items in their languages (access.language_q), on
every read of the queue, the claims and the review screen."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from django.db import connection
from django.db.models import Q, QuerySet

from reviewapp.access import language_allowed, sees_all_languages
from reviewapp.corpus.selectors.languages import conversation_languages
from reviewapp.models import ReviewItem
from reviewapp.triage.forms.queue import QueueFilterForm

Status = ReviewItem.Status
Reason = ReviewItem.Reason
# Items a reviewer can still label: nobody has given it its k reviews yet.
ACTIVE = (Status.OPEN, Status.IN_REVIEW)
QUEUE_PAGE_SIZE = 50
STATUS_CHOICES = [("", "To review"), *Status.choices]


@dataclass(frozen=True)
class ListFilters:
    """The filters the queue and the comments list share; empty values mean "any"."""

    language: str = ""
    judge: str = ""
    dataset: int | None = None

    def as_query(self) -> dict[str, Any]:
        """The filters that are set, as query parameters (a flag that is on as "1")."""
        return {key: "1" if value is True else value for key, value in asdict(self).items() if value}

    def where(self, lookups: dict[str, str]) -> Q:
        """The filters that are set, each through its lookup in `lookups` (filter name: ORM lookup)."""
        q = Q()
        for name, lookup in lookups.items():
            if value := getattr(self, name):
                q &= Q(**{lookup: value})
        return q


@dataclass(frozen=True)
class QueueFilters(ListFilters):
    """What the queue shows. `status` empty means open or in review."""

    reason: str = ""
    status: str = ""

    @classmethod
    def from_query(cls, params) -> QueueFilters:
        """Parsed by `QueueFilterForm` (query strings and the session alike); junk is dropped."""
        return cls.from_form(QueueFilterForm.from_params(params))

    @classmethod
    def from_form(cls, form: QueueFilterForm) -> QueueFilters:
        return cls(
            language=form.value("language") or "",
            judge=form.value("judge") or "",
            reason=form.value("reason") or "",
            dataset=form.value("dataset"),
            status=form.value("status") or "",
        )

    def q(self, *, with_reason: bool = True) -> Q:
        q = Q(status=self.status) if self.status else Q(status__in=ACTIVE)
        q &= self.where({"language": "language__iexact", "judge": "judge__slug", "dataset": "dataset_id"})
        if self.reason and with_reason:
            q &= reason_q(self.reason)
        return q


def keyset_q(*keys: tuple[str, Any, bool]) -> Q:
    """The rows after the row whose sort keys are `keys` (field, its value there, descending?), in the
    order of those fields: a keyset, never an OFFSET. The last key must be unique (the id)."""
    q = Q()
    for part in keyset_ranges(*keys):
        q |= part
    return q


def keyset_ranges(*keys: tuple[str, Any, bool]) -> list[Q]:
    """`keyset_q` as its ranges, each one an index can start at: for (priority desc, id) after (p, i),
    `priority = p AND id > i`, then `priority < p`. An index walk given the whole OR reads it as a
    filter and walks from the top of the index to the keyset (an OFFSET in all but name); one walk
    per range starts where its range starts (claims.walk_parts)."""
    ranges, same = [], Q()
    for name, value, descending in keys:
        ranges.append(same & Q(**{f"{name}__{'lt' if descending else 'gt'}": value}))
        same &= Q(**{name: value})
    return ranges[::-1]  # in queue order: the rest of the keyset's own priority first


def reason_q(reason: str) -> Q:
    """Items that have `reason` among their reasons (a JSON list of codes). On PostgreSQL, containment:
    the active queue has a partial index per reason that answers it in claim order (migration
    0012_item_queue_per_reason). Elsewhere the quoted code matches one whole element of the JSON text."""
    if connection.vendor == "postgresql":
        return Q(reasons__contains=[reason])
    return Q(reasons__icontains=f'"{reason}"')


def review_languages(*, user) -> list[str]:
    """The exact language codes `user` may review, sorted: one small query.

    An item copies its conversation's language, so these are the distinct conversation languages that
    access allows (`access.language_allowed`, the same rule as `access.language_q`). Filtering items with
    `language IN (...)` then walks the queue indexes (item_active_queue, item_queue), which lead with the
    language, instead of upper-casing every row the way a case-insensitive prefix match must.
    """
    codes = conversation_languages()
    return sorted((code for code in codes if language_allowed(user, code)), key=lambda code: (code.lower(), code))


def item_language_q(user, languages: list[str] | None = None) -> Q:
    """`access.language_q` for review items, in a form the queue indexes can use."""
    if sees_all_languages(user):
        return Q()
    return languages_q(sees_all=False, languages=review_languages(user=user) if languages is None else languages)


def languages_q(*, sees_all: bool, languages: list[str]) -> Q:
    """`item_language_q` for a user who sees every language or not (`access.sees_all_languages`), whose
    review languages are `languages`."""
    return Q() if sees_all else Q(language__in=languages)


def visible_items(*, user) -> QuerySet[ReviewItem]:
    return ReviewItem.objects.filter(item_language_q(user))
