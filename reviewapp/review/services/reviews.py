"""The review workflow: reviews and skips. Claims and leases live in reviewapp/triage/services/claims.py,
comments and the taxonomy in reviewapp/review/services/comments.py.

An item's life (every change is written with an AuditEvent through audit_record):

    open --claim--> in_review --k reviews, all agreeing with each other and the judge--> closed
                               --k reviews, any disagreement-------------------------> awaiting_adjudication
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from typing import Any

from django.db import IntegrityError, connection, transaction
from django.utils import timezone

from reviewapp.access import language_allowed
from reviewapp.audit import audit_record
from reviewapp.models import Category, GoldLabel, Judge, Review, ReviewItem, ReviewSkip, Verdict
from reviewapp.quality.selectors.outcomes import outcome_for
from reviewapp.review.selectors import screen_sql
from reviewapp.review.services.comments import (
    _active_categories,
    _check_span,
    comment_unsaved,
)
from reviewapp.review.services.label_writes import label_write
from reviewapp.triage.selectors.queue_filters import ACTIVE
from reviewapp.triage.services.claims import (
    ReviewError,
    _lease_live,
    _locked,
    _release,
    _state,
)

__all__ = ["item_skip", "review_submit"]

Status = ReviewItem.Status
AGREEMENT_VALUES = ("agree", "disagree")


# --- reviews ------------------------------------------------------------------------------------


def _value(judge: Judge, *, rating: float | None, passed: bool | None, label: str) -> Any:
    """What a label says, comparable between reviewers and judges: the judge's outcome (selectors.outcomes)."""
    return outcome_for(judge, rating=rating, passed=passed, label=label).value


def _binary_passed(judge: Judge, rating: float | None) -> bool | None:
    if judge.scale != Judge.Scale.BINARY or rating is None:
        return None
    high = judge.scale_max if judge.scale_max is not None else 1
    return rating >= high


def _check_rating(judge: Judge, rating: float | None) -> None:
    if rating is None:
        return
    if judge.scale_min is not None and rating < judge.scale_min:
        raise ReviewError(f"A {judge.slug} rating is at least {judge.scale_min:g}, not {rating:g}.")
    if judge.scale_max is not None and rating > judge.scale_max:
        raise ReviewError(f"A {judge.slug} rating is at most {judge.scale_max:g}, not {rating:g}.")


def review_submit(
    *,
    item: ReviewItem,
    user,
    rating: float | None = None,
    passed: bool | None = None,
    label: str = "",
    categories: Sequence[Category] = (),
    verdict_agreement: Mapping[int, str] | None = None,
    comment: str = "",
    quoted_span: str = "",
    seconds_spent: int | None = None,
    now: datetime | None = None,
    grain: Mapping[str, Any] | None = None,
    after_gold: Callable[[int], object] | None = None,
    locked: bool = False,
) -> Review:
    """Store `user`'s label on `item`, release their lease, and when the item has its k reviews close
    it (unanimous, agreeing with the judge: a unanimous gold label is written) or send it to a lead.
    A reviewer whose item a lead sent back to them revises their label instead (audited before/after);
    the item is settled once every reviewer asked has revised.
    A non-empty comment on a turn item is also kept as a Comment with the same categories.
    `locked`: the caller's open transaction read `item` under its row lock with `judge_signed`
    (`review_screen.item_for_review(lock=True)`), so it is not read again; a refusal then rolls back the
    caller's transaction."""
    now = now or timezone.now()
    if locked and not connection.in_atomic_block:
        raise ValueError("A label on an item locked by its caller is written in the caller's transaction.")
    with transaction.atomic(savepoint=not locked):
        if locked:
            signed = item.judge_signed
        else:
            item, signed = screen_sql.locked_item(item=item)
        if item.status not in ACTIVE:
            raise ReviewError(f"This item is {item.get_status_display().lower()}: it takes no more reviews.")
        if not language_allowed(user, item.language):
            raise ReviewError("This item's language is not assigned to you.")
        if _lease_live(item, now) and item.claimed_by_id != user.pk:
            raise ReviewError("Another reviewer holds this item; take the next one from the queue.")
        # The item's few reviews, read once with its target's verdicts: whether this is a revision,
        # whether others are revising, and later whether the item has its k reviews.
        others, verdicts = screen_sql.reviews_and_verdicts(item=item)
        others = sorted(others, key=lambda r: r.pk)
        existing = next((r for r in others if r.reviewer_id == user.pk), None)
        others = [r for r in others if r.reviewer_id != user.pk]
        if existing is not None and not existing.revision_requested:
            raise ReviewError("You have already reviewed this item.")
        if existing is None and any(r.revision_requested for r in others):
            raise ReviewError("A lead sent this item back to its reviewers; take the next one from the queue.")
        judge = item.judge
        _check_rating(judge, rating)
        if passed is None:
            passed = _binary_passed(judge, rating)
        if rating is None and passed is None and not label.strip():
            raise ReviewError("Give a rating (or a label) before submitting.")
        agreement = _check_agreement(verdict_agreement or {}, {v.pk for v in verdicts})
        categories = _active_categories(categories)
        turn = item.turn
        quoted_span = _check_span(turn, quoted_span)

        before = _state(item)
        fields = {
            "rating": rating,
            "passed": passed,
            "label": label.strip(),
            "verdict_agreement": {str(k): v for k, v in agreement.items()},
            "comment": comment.strip(),
            "quoted_span": quoted_span,
            "seconds_spent": seconds_spent,
            "grain": dict(grain or {}),
        }
        action, revised_from = "review.submit", None
        if existing is not None:
            action = "review.revise"
            revised_from = {"rating": existing.rating, "passed": existing.passed, "label": existing.label}
            for name, value in fields.items():
                setattr(existing, name, value)
            existing.revision_requested = False
            review = existing
        else:
            review = Review(item=item, reviewer=user, **fields)
        changes = []
        new_comment = None
        if comment.strip() and turn is not None:
            new_comment, created = comment_unsaved(
                author=user, turn=turn, body=comment, categories=categories, judge=judge, quoted_span=quoted_span
            )
            changes.append(created)
        labelled = {"item": item.pk, "rating": rating, "passed": passed, "label": review.label}
        changes.append((action, review, revised_from, labelled))

        # A new review's id comes from the sequence after every other's: it is the last.
        reviews = [*others, review] if existing is None else sorted([*others, review], key=lambda r: r.pk)
        gold = None
        if item.claimed_by_id == user.pk or not _lease_live(item, now):
            item.claimed_by, item.lease_expires_at = None, None
        if len(reviews) >= item.reviews_required and not any(r.revision_requested for r in reviews):
            item.status = _outcome(item, reviews, verdicts)
            item.claimed_by, item.lease_expires_at = None, None
            if item.status == Status.CLOSED:
                gold = _unanimous_gold(item, reviews, categories=categories, others=others)
                if signed and after_gold is not None:
                    # New gold for a judge with signatures: recheck them once it is committed (as
                    # signature_checks.signatures_after_gold does, with the check read under the item's lock).
                    judge_id = item.judge_id
                    transaction.on_commit(lambda: after_gold(judge_id))
        else:
            item.status = Status.IN_REVIEW
        item.updated_at = now
        events = [*changes, (f"item.{item.status}", item, before, _state(item))]
        label_write(
            actor=user, review=review, categories=categories, comment=new_comment, gold=gold, item=item, events=events
        )
        return review


def _check_agreement(agreement: Mapping[int, str], verdict_ids: set[int]) -> dict[int, str]:
    checked = {}
    for key, value in agreement.items():
        if int(key) not in verdict_ids:
            raise ReviewError(f"Verdict {key} is not a verdict on this item.")
        if value not in AGREEMENT_VALUES:
            raise ReviewError(f"Say 'agree' or 'disagree' about verdict {key}, not {value!r}.")
        checked[int(key)] = value
    return checked


def _outcome(item: ReviewItem, reviews: list[Review], verdicts: list[Verdict]) -> str:
    """Closed when every reviewer gave the same value and none of it contradicts the judge; else a lead
    adjudicates. Verdicts that are unresolved or failed gave no value, so they cannot be contradicted."""
    judge = item.judge
    values = {_value(judge, rating=r.rating, passed=r.passed, label=r.label) for r in reviews}
    if len(values) != 1:
        return Status.AWAITING_ADJUDICATION
    (value,) = values
    if any("disagree" in r.verdict_agreement.values() for r in reviews):
        return Status.AWAITING_ADJUDICATION
    for verdict in verdicts:
        if verdict.status != Verdict.Status.RESOLVED:
            continue
        judged = _value(judge, rating=verdict.rating, passed=verdict.passed, label=verdict.label)
        if judged is not None and judged != value:
            return Status.AWAITING_ADJUDICATION
    return Status.CLOSED


def _unanimous_gold(
    item: ReviewItem, reviews: list[Review], *, categories: Sequence[Category], others: Sequence[Review]
) -> GoldLabel:
    """The item's unanimous gold label, to write; its failure modes are the reviews' categories: this
    label's `categories` and those of the `others` (read). A review not written yet has None for its id
    in the metadata (`label_writes.label_write` puts it in)."""
    first = reviews[0]
    slugs = {c.slug for c in categories}
    if others:
        slugs |= set(Category.objects.filter(reviews__in=[r.pk for r in others]).values_list("slug", flat=True))
    return GoldLabel(
        judge_id=item.judge_id,
        conversation_id=item.conversation_id,
        turn_id=item.turn_id,
        source=GoldLabel.Source.UNANIMOUS,
        rating=first.rating,
        passed=first.passed,
        label=first.label,
        failure_modes=sorted(slugs),
        excluded=False,
        metadata={"review_item": item.pk, "reviews": [r.pk for r in reviews]},
    )


def item_skip(*, item: ReviewItem, user, reason: str, now: datetime | None = None) -> ReviewSkip:
    """Pass on an item with a reason; it is never offered to `user` again and goes back to the queue."""
    now = now or timezone.now()
    reason = reason.strip()
    if not reason:
        raise ReviewError("Say why you skip this item: leads read the reasons.")
    with transaction.atomic():
        item = _locked(item)
        if item.status not in ACTIVE:
            raise ReviewError(f"This item is {item.get_status_display().lower()}: there is nothing to skip.")
        mine = Review.objects.filter(item=item, reviewer=user).first()
        if mine is not None and mine.revision_requested:
            raise ReviewError("A lead asked you to look again: submit your label (the same one if you keep it).")
        if mine is not None:
            raise ReviewError("You have already reviewed this item.")
        try:
            with transaction.atomic():
                skip = ReviewSkip.objects.create(item=item, reviewer=user, reason=reason)
        except IntegrityError:
            raise ReviewError("You have already skipped this item.") from None
        audit_record(actor=user, action="item.skip", obj=skip, before=None, after={"item": item.pk, "reason": reason})
        if item.claimed_by_id == user.pk:
            _release(item=item, actor=user, action="item.release", now=now)
        return skip
