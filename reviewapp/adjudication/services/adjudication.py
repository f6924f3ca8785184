"""A lead's decision on a disputed item: the final label (which becomes gold), or back to reviewers.

`adjudication_decide` writes the Adjudication and the item's GoldLabel(source=adjudicated) and closes
the item; deciding again revises both. `item_send_back` reopens the item for reviewers with the lead's
note; the reviews already given stay. Every change is written to the audit trail with before and after.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from django.core.exceptions import PermissionDenied
from django.db import transaction

from reviewapp import access
from reviewapp.audit import audit_record, model_state
from reviewapp.judging.services.signature_checks import signatures_after_gold
from reviewapp.models import Adjudication, Category, GoldLabel, Judge, Review, ReviewItem
from scoring.errors import TribunalError

Status = ReviewItem.Status


class AdjudicationError(TribunalError):
    """The decision cannot be made: wrong role, wrong item state, or an invalid label."""


# What the audit trail keeps of an item, a decision and its gold label.
ITEM_AUDITED = ("status", "lead_note", "claimed_by")
GOLD_AUDITED = ("source", "rating", "label", "passed", "failure_modes")


def _adjudication_state(adjudication: Adjudication, categories: Iterable[str]) -> dict[str, Any]:
    state = model_state(adjudication, "rating", "label", "passed", "rationale", "lead")
    return {**state, "categories": sorted(categories)}


def _check_lead(user) -> None:
    try:
        access.check_lead(user, "Only leads and admins decide disputed items.")
    except PermissionDenied as exc:
        raise AdjudicationError(str(exc)) from None


def _check_label(judge: Judge, *, rating: float | None, label: str, passed: bool | None) -> None:
    if rating is None and passed is None and not label:
        raise AdjudicationError("Give the final label: a rating, pass/fail or a label.")
    if rating is not None:
        low, high = judge.scale_min, judge.scale_max
        if (low is not None and rating < low) or (high is not None and rating > high):
            raise AdjudicationError(f"Rating {rating:g} is outside {judge.slug}'s scale ({low:g} to {high:g}).")


@transaction.atomic
def adjudication_decide(
    *,
    item: ReviewItem,
    lead,
    rationale: str,
    rating: float | None = None,
    label: str = "",
    passed: bool | None = None,
    categories: Iterable[Category] = (),
    failure_modes: Iterable[str] = (),
    after_gold: Callable[[int], object] | None = None,
) -> Adjudication:
    """Decide the final label of an item awaiting adjudication (or revise a decided one) and record it as gold.

    `failure_modes` are the judge's own (from its spec), kept on the gold label after the shared categories."""
    _check_lead(lead)
    item = ReviewItem.objects.select_for_update().select_related("judge").get(pk=item.pk)
    existing = Adjudication.objects.filter(item=item).first()
    if item.status != Status.AWAITING_ADJUDICATION and not (item.status == Status.CLOSED and existing):
        raise AdjudicationError(
            f"Item {item.pk} is {item.get_status_display().lower()}: only items awaiting adjudication "
            "(or already adjudicated) can be decided."
        )
    rationale = rationale.strip()
    if not rationale:
        raise AdjudicationError("A decision needs a rationale that reviewers can learn from.")
    label = label.strip()
    _check_label(item.judge, rating=rating, label=label, passed=passed)
    categories = list(categories)
    slugs = [c.slug for c in categories]

    before = _adjudication_state(existing, existing.categories.values_list("slug", flat=True)) if existing else None
    adjudication = existing or Adjudication(item=item)
    adjudication.lead = lead
    adjudication.rating, adjudication.label, adjudication.passed = rating, label, passed
    adjudication.rationale = rationale
    adjudication.save()
    adjudication.categories.set(categories)
    after = _adjudication_state(adjudication, slugs)
    if before != after:
        audit_record(
            actor=lead,
            action="adjudication.revise" if existing else "adjudication.decide",
            obj=adjudication,
            before=before,
            after=after,
        )

    gold = GoldLabel.objects.filter(
        judge=item.judge, conversation=item.conversation, turn=item.turn, source=GoldLabel.Source.ADJUDICATED
    ).first()
    gold_before = model_state(gold, *GOLD_AUDITED) if gold else None
    gold = gold or GoldLabel(
        judge=item.judge, conversation=item.conversation, turn=item.turn, source=GoldLabel.Source.ADJUDICATED
    )
    gold.rating, gold.label, gold.passed = rating, label, passed
    gold.failure_modes = slugs + [m for m in dict.fromkeys(failure_modes) if m not in slugs]
    gold.excluded = False
    gold.metadata = {**gold.metadata, "adjudication_id": adjudication.pk, "item_id": item.pk, "lead": lead.pk}
    gold.save()
    signatures_after_gold(judge_id=item.judge_id, dispatch=after_gold)
    if gold_before != model_state(gold, *GOLD_AUDITED):
        audit_record(
            actor=lead,
            action="gold.adjudicated",
            obj=gold,
            before=gold_before,
            after={**model_state(gold, *GOLD_AUDITED), "item": item.pk},
        )

    item_before = model_state(item, *ITEM_AUDITED)
    item.status = Status.CLOSED
    item.claimed_by = None
    item.lease_expires_at = None
    item.save(update_fields=["status", "claimed_by", "lease_expires_at", "updated_at"])
    if item_before != model_state(item, *ITEM_AUDITED):
        audit_record(
            actor=lead, action="item.close", obj=item, before=item_before, after=model_state(item, *ITEM_AUDITED)
        )
    return adjudication


SEND_BACK_TO = ("original", "any")


@transaction.atomic
def item_send_back(*, item: ReviewItem, lead, note: str, to: str = "original") -> ReviewItem:
    """Reopen an item awaiting adjudication for reviewers, with the lead's note.

    `to="original"`: its reviewers who can still review the language are asked to revise their labels
    (the item is theirs alone until they have). `to="any"`: one more review, from any reviewer of the
    language who has neither reviewed nor skipped it. Refused when nobody could take it, so an item
    never waits for no one. Reviews already given stay."""
    from reviewapp.triage.selectors.progress import item_takers

    _check_lead(lead)
    item = ReviewItem.objects.select_for_update().get(pk=item.pk)
    if item.status != Status.AWAITING_ADJUDICATION:
        raise AdjudicationError(
            f"Item {item.pk} is {item.get_status_display().lower()}: only items awaiting adjudication go back "
            "to reviewers."
        )
    if to not in SEND_BACK_TO:
        raise AdjudicationError(f"Send an item back to 'original' or 'any' reviewers, not {to!r}.")
    note = note.strip()
    if not note:
        raise AdjudicationError("Say what reviewers should look at again.")
    takers = item_takers(items=[item])[item.pk]
    before = {**model_state(item, *ITEM_AUDITED), "reviews_required": item.reviews_required}
    if to == "original":
        if not takers.original:
            raise AdjudicationError(
                f"None of item {item.pk}'s reviewers can take it back (inactive, or no longer assigned "
                f"{item.language}): send it to any reviewer of {item.language}, or decide it."
            )
        able = list(item.reviews.filter(reviewer__username__in=takers.original).values_list("pk", flat=True))
        Review.objects.filter(pk__in=able).update(revision_requested=True)
    else:
        if not takers.anyone:
            raise AdjudicationError(
                f"No reviewer of {item.language} is left who has not reviewed or skipped item {item.pk}: send "
                "it to its original reviewers, add a reviewer on the People page, or decide it."
            )
        item.reviews_required = item.reviews.count() + 1
    item.status = Status.OPEN
    item.lead_note = note
    item.claimed_by = None
    item.lease_expires_at = None
    item.save(update_fields=["status", "lead_note", "claimed_by", "lease_expires_at", "reviews_required", "updated_at"])
    who = takers.original if to == "original" else takers.anyone
    after = {**model_state(item, *ITEM_AUDITED), "reviews_required": item.reviews_required, "to": to, "takers": who}
    audit_record(actor=lead, action="item.send_back", obj=item, before=before, after=after)
    return item
