"""A dataset's review settings (blind mode and how many reviews each item needs, k) and its description."""

from __future__ import annotations

from django.db import transaction
from django.db.models import Exists, OuterRef

from reviewapp import access
from reviewapp.audit import audit_record
from reviewapp.models import Dataset, Review, ReviewItem
from scoring.errors import TribunalError

MAX_REVIEWS_REQUIRED = 10
ACTIVE = (ReviewItem.Status.OPEN, ReviewItem.Status.IN_REVIEW)


class DatasetError(TribunalError):
    """An invalid change to a dataset's review settings."""


def _state(dataset: Dataset) -> dict:
    return {"blind_review": dataset.blind_review, "reviews_required": dataset.reviews_required}


@transaction.atomic
def dataset_settings_update(*, actor, dataset: Dataset, blind_review: bool, reviews_required: int) -> Dataset:
    """Set blind mode and k. Items nobody has reviewed yet take the new k at once (QA-sample items keep at
    least the two reviews they need); items under review or decided keep theirs. Audited, before and after."""
    if not access.is_lead(actor):
        raise DatasetError("Only leads and admins change a dataset's review settings.")
    if not 1 <= reviews_required <= MAX_REVIEWS_REQUIRED:
        raise DatasetError(f"Reviews per item is between 1 and {MAX_REVIEWS_REQUIRED}, not {reviews_required}.")
    dataset = Dataset.objects.select_for_update().get(pk=dataset.pk)
    before = _state(dataset)
    dataset.blind_review, dataset.reviews_required = blind_review, reviews_required
    dataset.save(update_fields=["blind_review", "reviews_required"])
    waiting = ReviewItem.objects.filter(dataset=dataset, status__in=ACTIVE).exclude(
        Exists(Review.objects.filter(item=OuterRef("pk")))
    )
    qa = waiting.filter(reasons__icontains=f'"{ReviewItem.Reason.QA_SAMPLE}"')
    changed = (
        waiting.exclude(pk__in=qa).exclude(reviews_required=reviews_required).update(reviews_required=reviews_required)
    )
    qa_k = max(reviews_required, access.QA_BLIND_FROM_K)
    changed += qa.exclude(reviews_required=qa_k).update(reviews_required=qa_k)
    if before != _state(dataset) or changed:
        audit_record(
            actor=actor,
            action="dataset.settings",
            obj=dataset,
            before=before,
            after={**_state(dataset), "items_updated": changed},
        )
    return dataset


@transaction.atomic
def dataset_describe(*, actor, dataset: Dataset, kind: str, description: str) -> Dataset:
    """Say what a dataset is (its kind: agent run, validation, review or demo set) and what it holds. Audited."""
    if not access.is_lead(actor):
        raise DatasetError("Only leads and admins describe a dataset.")
    if kind not in Dataset.Kind.values:
        raise DatasetError(f"Unknown dataset kind {kind!r}.")
    dataset = Dataset.objects.select_for_update().get(pk=dataset.pk)
    before = {"kind": dataset.kind, "description": dataset.description}
    after = {"kind": kind, "description": description.strip()}
    if before != after:
        dataset.kind, dataset.description = after["kind"], after["description"]
        dataset.save(update_fields=["kind", "description"])
        audit_record(actor=actor, action="dataset.describe", obj=dataset, before=before, after=after)
    return dataset
