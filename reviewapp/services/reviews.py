"""The review workflow: claiming items under a lease, reviews, skips, comments and the taxonomy.

An item's life (every change is written with an AuditEvent through audit_record):

    open --claim--> in_review --k reviews, all agreeing with each other and the judge--> closed
                               --k reviews, any disagreement-------------------------> awaiting_adjudication

A claim is a 15-minute lease, renewed by the review screen's heartbeat. An expired lease needs no
sweeper: claim queries treat it as free, so the item is back in the queue the moment it expires.
While an item has fewer than its k reviews it stays `in_review` and claimable by reviewers who have
not reviewed or skipped it. Two reviewers claiming at the same moment never get the same item: on
PostgreSQL the candidate row is locked with SELECT ... FOR UPDATE SKIP LOCKED; elsewhere (SQLite) the
claim is a conditional UPDATE that must affect one row, retried with the next candidate.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import datetime, timedelta
from typing import Any

from django.db import IntegrityError, connection, transaction
from django.db.models import Q
from django.utils import timezone

from ..access import language_allowed
from ..models import Category, Comment, GoldLabel, Judge, Review, ReviewItem, ReviewSkip, Turn, Verdict
from ..selectors.outcomes import outcome_for
from ..selectors.queue import (
    ACTIVE,
    QueueFilters,
    claim_candidate_ids,
    claim_candidates,
    held_item,
    review_languages,
)
from .audit import audit_record
from .signature_checks import signatures_after_gold

__all__ = [
    "LEASE",
    "ReviewError",
    "category_create",
    "category_update",
    "comment_create",
    "comment_flag",
    "item_claim",
    "item_skip",
    "lease_renew",
    "review_submit",
]

LEASE = timedelta(minutes=15)
CLAIM_CANDIDATES = 10
CLAIM_ROUNDS = 5
Status = ReviewItem.Status
AGREEMENT_VALUES = ("agree", "disagree")


class ReviewError(Exception):
    """An invalid review action: the message says what to do instead."""


def _state(item: ReviewItem) -> dict[str, Any]:
    return {
        "status": item.status,
        "claimed_by": item.claimed_by_id,
        "lease_expires_at": item.lease_expires_at.isoformat() if item.lease_expires_at else None,
    }


def _lease_live(item: ReviewItem, now: datetime) -> bool:
    return bool(item.claimed_by_id and item.lease_expires_at and item.lease_expires_at >= now)


def _locked(item: ReviewItem) -> ReviewItem:
    """The item re-read under a row lock (PostgreSQL; SQLite serialises writers anyway)."""
    return ReviewItem.objects.select_for_update().select_related("judge", "dataset").get(pk=item.pk)


# --- claims -------------------------------------------------------------------------------------


def item_claim(
    *, user, filters: QueueFilters | None = None, item: ReviewItem | None = None, now: datetime | None = None
) -> ReviewItem | None:
    """Give `user` an item under a fresh lease: the one they already hold, else `item` if given and
    claimable, else the highest-priority claimable item matching `filters`. None when nothing is left."""
    now = now or timezone.now()
    with transaction.atomic():
        languages = review_languages(user=user)
        held = held_item(user=user, now=now, languages=languages)
        if held is not None and (item is None or held.pk == item.pk):
            ReviewItem.objects.filter(pk=held.pk).update(lease_expires_at=now + LEASE, updated_at=now)
            held.lease_expires_at = now + LEASE
            return held
        skip_locked = connection.features.has_select_for_update_skip_locked
        if skip_locked and item is None:
            claimed = _claim_skip_locked(
                user=user,
                now=now,
                read_ids=lambda: claim_candidate_ids(
                    user=user, filters=filters, now=now, limit=CLAIM_CANDIDATES, languages=languages
                ),
            )
        else:
            candidates = claim_candidates(user=user, filters=filters, now=now, languages=languages)
            if item is not None:
                candidates = candidates.filter(pk=item.pk)
            claimed = (
                _claim_skip_locked(user=user, now=now, read_ids=lambda: _first_ids(candidates))
                if skip_locked
                else _claim_conditional(user=user, candidates=candidates, now=now)
            )
        if claimed is None:
            return None
        before, claimed = claimed
        if held is not None:
            # One lease per reviewer: opening another item gives the held one back to the queue.
            _release(item=held, actor=user, action="item.release", now=now)
        audit_record(actor=user, action="item.claim", obj=claimed, before=before, after=_state(claimed))
        return claimed


def _first_ids(candidates) -> list[int]:
    return list(candidates.values_list("pk", flat=True)[:CLAIM_CANDIDATES])


def _claim_skip_locked(*, user, now: datetime, read_ids: Callable[[], list[int]]) -> tuple[dict, ReviewItem] | None:
    """Read the first few candidates without locks (`read_ids`: bounded index walks), then lock the
    first of them still free with FOR UPDATE SKIP LOCKED: locking the whole ordered set would sort it
    all first."""
    free = Q(status__in=ACTIVE) & (Q(claimed_by__isnull=True) | Q(lease_expires_at__lt=now))
    item = None
    for attempt in range(CLAIM_ROUNDS):
        ids = read_ids()
        if not ids:
            return None
        item = (
            ReviewItem.objects.filter(free, pk__in=ids)
            .order_by("-priority", "id")
            .select_for_update(skip_locked=True)
            .first()
        )
        if item is not None:
            break
        # Every candidate locked or just taken: others are claiming right now; read the list again.
        time.sleep(0.02 * (attempt + 1))
    if item is None:
        return None
    before = _state(item)
    item.claimed_by, item.lease_expires_at, item.status, item.updated_at = user, now + LEASE, Status.IN_REVIEW, now
    item.save(update_fields=["claimed_by", "lease_expires_at", "status", "updated_at"])
    return before, item


def _claim_conditional(*, user, candidates, now: datetime) -> tuple[dict, ReviewItem] | None:
    free = Q(status__in=ACTIVE) & (Q(claimed_by__isnull=True) | Q(lease_expires_at__lt=now))
    for _ in range(CLAIM_ROUNDS):
        rows = list(candidates.values_list("pk", "status", "claimed_by", "lease_expires_at")[:CLAIM_CANDIDATES])
        if not rows:
            return None
        for pk, status, claimed_by, lease in rows:
            won = (
                ReviewItem.objects.filter(free, pk=pk).update(
                    claimed_by=user, lease_expires_at=now + LEASE, status=Status.IN_REVIEW, updated_at=now
                )
                == 1
            )
            if won:
                before = {
                    "status": status,
                    "claimed_by": claimed_by,
                    "lease_expires_at": lease.isoformat() if lease else None,
                }
                return before, ReviewItem.objects.select_related("judge", "dataset").get(pk=pk)
    return None


def lease_renew(*, item: ReviewItem, user, now: datetime | None = None) -> datetime:
    """Extend `user`'s lease on `item` (the review screen's heartbeat). Heartbeats are not audited:
    they change no state anyone decides on, and a day of them would bury the real events."""
    now = now or timezone.now()
    expires = now + LEASE
    renewed = ReviewItem.objects.filter(pk=item.pk, claimed_by=user, status__in=ACTIVE).update(
        lease_expires_at=expires, updated_at=now
    )
    if not renewed:
        raise ReviewError("You no longer hold this item: its lease ended and it went back to the queue.")
    item.lease_expires_at = expires
    return expires


def _release(*, item: ReviewItem, actor, action: str, now: datetime) -> None:
    before = _state(item)
    has_reviews = Review.objects.filter(item=item).exists()
    item.claimed_by, item.lease_expires_at, item.updated_at = None, None, now
    if item.status == Status.IN_REVIEW and not has_reviews:
        item.status = Status.OPEN
    item.save(update_fields=["claimed_by", "lease_expires_at", "status", "updated_at"])
    audit_record(actor=actor, action=action, obj=item, before=before, after=_state(item))


# --- reviews ------------------------------------------------------------------------------------


def _norm(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip()


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


def _active_categories(categories: Iterable[Category]) -> list[Category]:
    categories = list(categories)
    retired = [c.slug for c in categories if not c.active]
    if retired:
        raise ReviewError(f"Retired categories cannot be used: {', '.join(retired)}.")
    return categories


def _check_span(turn: Turn | None, quoted_span: str) -> str:
    quoted_span = quoted_span.strip()
    if not quoted_span:
        return ""
    if turn is None or not any(_norm(quoted_span) in _norm(text) for text in (turn.text, turn.intended_text) if text):
        raise ReviewError("The quoted span must be copied from the turn's text.")
    return quoted_span


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
) -> Review:
    """Store `user`'s label on `item`, release their lease, and when the item has its k reviews close
    it (unanimous, agreeing with the judge: a unanimous gold label is written) or send it to a lead.
    A reviewer whose item a lead sent back to them revises their label instead (audited before/after);
    the item is settled once every reviewer asked has revised.
    A non-empty comment on a turn item is also kept as a Comment with the same categories."""
    now = now or timezone.now()
    with transaction.atomic():
        item = _locked(item)
        if item.status not in ACTIVE:
            raise ReviewError(f"This item is {item.get_status_display().lower()}: it takes no more reviews.")
        if not language_allowed(user, item.language):
            raise ReviewError("This item's language is not assigned to you.")
        if _lease_live(item, now) and item.claimed_by_id != user.pk:
            raise ReviewError("Another reviewer holds this item; take the next one from the queue.")
        existing = Review.objects.filter(item=item, reviewer=user).first()
        if existing is not None and not existing.revision_requested:
            raise ReviewError("You have already reviewed this item.")
        if existing is None and item.reviews.filter(revision_requested=True).exists():
            raise ReviewError("A lead sent this item back to its reviewers; take the next one from the queue.")
        judge = item.judge
        _check_rating(judge, rating)
        if passed is None:
            passed = _binary_passed(judge, rating)
        if rating is None and passed is None and not label.strip():
            raise ReviewError("Give a rating (or a label) before submitting.")
        verdicts = _item_verdicts(item)
        agreement = _check_agreement(verdict_agreement or {}, {v.pk for v in verdicts})
        categories = _active_categories(categories)
        turn = Turn.objects.get(pk=item.turn_id) if item.turn_id else None
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
        if existing is not None:
            revised_from = {"rating": existing.rating, "passed": existing.passed, "label": existing.label}
            for name, value in fields.items():
                setattr(existing, name, value)
            existing.revision_requested = False
            existing.save()
            review = existing
            audit_record(
                actor=user,
                action="review.revise",
                obj=review,
                before=revised_from,
                after={"item": item.pk, "rating": rating, "passed": passed, "label": review.label},
            )
        else:
            review = Review.objects.create(item=item, reviewer=user, **fields)
        review.categories.set(categories)
        if comment.strip() and turn is not None:
            comment_create(
                author=user,
                turn=turn,
                body=comment,
                categories=categories,
                judge=judge,
                quoted_span=quoted_span,
            )

        reviews = list(item.reviews.prefetch_related("categories"))
        if item.claimed_by_id == user.pk or not _lease_live(item, now):
            item.claimed_by, item.lease_expires_at = None, None
        if len(reviews) >= item.reviews_required and not any(r.revision_requested for r in reviews):
            item.status = _outcome(item, reviews, verdicts)
            item.claimed_by, item.lease_expires_at = None, None
            if item.status == Status.CLOSED:
                _unanimous_gold(item, reviews)
        else:
            item.status = Status.IN_REVIEW
        item.updated_at = now
        item.save(update_fields=["status", "claimed_by", "lease_expires_at", "updated_at"])
        if existing is None:
            audit_record(
                actor=user,
                action="review.submit",
                obj=review,
                before=None,
                after={"item": item.pk, "rating": rating, "passed": passed, "label": review.label},
            )
        audit_record(actor=user, action=f"item.{item.status}", obj=item, before=before, after=_state(item))
        return review


def _item_verdicts(item: ReviewItem) -> list[Verdict]:
    verdicts = Verdict.objects.filter(judge_version__judge=item.judge_id, conversation=item.conversation_id)
    verdicts = verdicts.filter(turn=item.turn_id) if item.turn_id else verdicts.filter(turn__isnull=True)
    return list(verdicts.only("pk", "status", "rating", "passed", "label"))


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


def _unanimous_gold(item: ReviewItem, reviews: list[Review]) -> None:
    first = reviews[0]
    modes = sorted({c.slug for r in reviews for c in r.categories.all()})
    GoldLabel.objects.update_or_create(
        judge_id=item.judge_id,
        conversation_id=item.conversation_id,
        turn_id=item.turn_id,
        source=GoldLabel.Source.UNANIMOUS,
        defaults={
            "rating": first.rating,
            "passed": first.passed,
            "label": first.label,
            "failure_modes": modes,
            "excluded": False,
            "metadata": {"review_item": item.pk, "reviews": [r.pk for r in reviews]},
        },
    )
    signatures_after_gold(judge_id=item.judge_id)


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


# --- comments -----------------------------------------------------------------------------------


def comment_create(
    *,
    author,
    turn: Turn,
    body: str,
    categories: Sequence[Category] = (),
    parent: Comment | None = None,
    judge: Judge | None = None,
    quoted_span: str = "",
    flagged_for_lead: bool = False,
) -> Comment:
    """A comment on a turn (a reply when `parent` is given), with failure categories from the taxonomy."""
    body = body.strip()
    if not body:
        raise ReviewError("A comment needs some text.")
    if parent is not None:
        if parent.turn_id != turn.pk:
            raise ReviewError("A reply belongs to the same turn as the comment it answers.")
        # Threads stay one level deep: a reply to a reply joins the same thread.
        parent = parent.parent if parent.parent_id else parent
    categories = _active_categories(categories)
    quoted_span = _check_span(turn, quoted_span)
    with transaction.atomic():
        comment = Comment.objects.create(
            turn=turn,
            author=author,
            parent=parent,
            judge=judge,
            body=body,
            quoted_span=quoted_span,
            flagged_for_lead=flagged_for_lead,
        )
        comment.categories.set(categories)
        audit_record(
            actor=author,
            action="comment.create",
            obj=comment,
            before=None,
            after={
                "turn": turn.pk,
                "parent": parent.pk if parent else None,
                "categories": [c.slug for c in categories],
                "flagged_for_lead": flagged_for_lead,
            },
        )
    return comment


def comment_flag(*, comment: Comment, user, flagged: bool) -> Comment:
    """Flag a comment for a lead's attention, or clear the flag."""
    with transaction.atomic():
        before = {"flagged_for_lead": comment.flagged_for_lead}
        Comment.objects.filter(pk=comment.pk).update(flagged_for_lead=flagged)
        comment.flagged_for_lead = flagged
        audit_record(actor=user, action="comment.flag", obj=comment, before=before, after={"flagged_for_lead": flagged})
    return comment


# --- the taxonomy -------------------------------------------------------------------------------


def _category_state(category: Category) -> dict[str, Any]:
    return {
        "slug": category.slug,
        "name": category.name,
        "description": category.description,
        "active": category.active,
    }


@transaction.atomic
def category_create(*, actor, slug: str, name: str, description: str = "") -> Category:
    slug, name = slug.strip(), name.strip()
    if not slug or not name:
        raise ReviewError("A category needs a slug and a name.")
    if Category.objects.filter(slug=slug).exists():
        raise ReviewError(f"A category with the slug {slug!r} exists already.")
    category = Category.objects.create(slug=slug, name=name, description=description.strip())
    audit_record(actor=actor, action="category.create", obj=category, before=None, after=_category_state(category))
    return category


@transaction.atomic
def category_update(*, actor, category: Category, name: str, description: str, active: bool) -> Category:
    """Rename, describe or retire a category. The slug never changes: labels already given keep meaning."""
    name = name.strip()
    if not name:
        raise ReviewError("A category needs a name.")
    before = _category_state(category)
    category.name, category.description, category.active = name, description.strip(), active
    category.save(update_fields=["name", "description", "active"])
    audit_record(actor=actor, action="category.update", obj=category, before=before, after=_category_state(category))
    return category
