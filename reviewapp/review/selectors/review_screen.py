"""Reads for the turn review screen: the item, its context turns, verdicts, reviews and comments."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.db.models import prefetch_related_objects
from django.utils import timezone

from reviewapp import access
from reviewapp.corpus.selectors import corpus
from reviewapp.models import Category, Comment, Judge, Review, ReviewItem, Turn, Verdict
from reviewapp.review.selectors import screen_sql

# Turns shown around the turn under review.
CONTEXT_TURNS = 4

# --- the review screen --------------------------------------------------------------------------


def item_for_review(*, item_id: int, user, lock: bool = False) -> ReviewItem:
    """The item with what the review screen and a submitted label ask of it, in one statement
    (`screen_sql.item_row`): its judge, dataset, conversation, turn and holder; whether `user` has
    labelled its target (`access.target_labelled`, kept as `labelled_by`); the grain its judge is
    labelled at (`verdict_shapes.annotated_grain`); whether a QA-sample item keeps its turn blind.
    With `lock`, inside a transaction that submits a label: the item's row is locked and read with whether
    its judge has a usable signature (`judge_signed`), all `review_submit(locked=True)` needs of it.
    Raises ReviewItem.DoesNotExist."""
    return screen_sql.item_row(item_id=item_id, user=user, lock=lock)


def item_alone(*, item_id: int) -> ReviewItem:
    """The item's own row, for actions that change its lease and show no screen (claim, heartbeat).
    Raises ReviewItem.DoesNotExist."""
    return ReviewItem.objects.get(pk=item_id)


def item_verdicts(*, item: ReviewItem) -> list[Verdict]:
    """Every verdict of the item's judge on its target, newest version first, runs in order."""
    return screen_sql.target_verdicts(item=item)


def item_reviews(*, item: ReviewItem) -> list[Review]:
    reviews = screen_sql.item_reviews(item=item)
    prefetch_related_objects(reviews, "categories")
    return reviews


def turn_comments(*, turn_id: int, user) -> list[Comment]:
    """The threads on a turn that `user` may read (`access.comments_visible_to`: in blind review only
    their own until they have labelled it): top-level comments in order, each with `thread` (its
    replies, in order)."""
    comments = Comment.objects.filter(access.comments_visible_to(user), turn_id=turn_id)
    return threads(
        list(comments.select_related("author", "judge").prefetch_related("categories").order_by("created_at", "pk"))
    )


def screen_comments(*, item: ReviewItem, user) -> list[Comment]:
    """The threads on the item's turn that `user` may read, as `turn_comments`: the rule is
    `access.turn_comments_open` (`access.comments_visible_to` on facts already read), given what
    `item_for_review` read: the conversation's language and dataset, whether `user` labelled the turn
    and whether a QA-sample item keeps it blind."""
    conversation = item.conversation
    shown = access.turn_comments_open(
        user,
        language=conversation.language,
        labelled=item.labelled,
        blind=conversation.dataset.blind_review or item.turn_qa_blind,
    )
    if shown == "none":
        return []
    comments = screen_sql.turn_comments(turn_id=item.turn_id, author_id=user.pk if shown == "own" else None)
    prefetch_related_objects(comments, "categories")
    return threads(comments)


def threads(comments: list[Comment]) -> list[Comment]:
    """Top-level comments in order, each with `thread` (its replies, in order)."""
    by_parent: dict[int | None, list[Comment]] = {}
    for comment in comments:
        by_parent.setdefault(comment.parent_id, []).append(comment)
    for comment in comments:
        comment.thread = by_parent.get(comment.pk, [])
    return by_parent.get(None, [])


def rating_choices(judge: Judge) -> list[int]:
    """The ratings a reviewer types with one digit, when the judge's scale is a short integer range."""
    low, high = judge.scale_min, judge.scale_max
    if judge.scale == Judge.Scale.BINARY and (low is None or high is None):
        low, high = 0, 1
    if low is None or high is None or low != int(low) or high != int(high) or not 0 <= low <= high <= 9:
        return []
    return list(range(int(low), int(high) + 1))


@dataclass
class ReviewScreen:
    item: ReviewItem
    turns: list
    verdicts: list[Verdict]
    reviews: list[Review]
    my_review: Review | None
    comments: list[Comment]
    categories: list[Category]
    ratings: list[int]
    revealed: bool
    held_by_me: bool
    lease_active: bool
    turn: Any = None
    blind: bool = False  # blind review applies to this item (access.item_is_blind)


def context_turns(*, item: ReviewItem) -> list[Turn]:
    """The turn under review with up to CONTEXT_TURNS turns on each side (a conversation-level item:
    every turn), in order: one query that reads only the turns shown, however long the conversation.

    The verdicts panel shows this item's judge; context turns stay plain text, and without gold (nor
    "agrees with gold" marks) so reviewers label independently of it."""
    position = item.turn.position if item.turn_id else None
    shown = screen_sql.window_turns(conversation_id=item.conversation_id, position=position, around=CONTEXT_TURNS)
    for turn in shown:
        turn.gold, turn.judged = [], []
        corpus._decorate(turn)  # the diff and tidy tool JSON, as on the conversation page
        turn.blind = False
        turn.is_target = turn.pk == item.turn_id
    return shown


def review_screen(*, item: ReviewItem, user, now: datetime | None = None) -> ReviewScreen:
    """Everything the turn review screen shows. In blind review (`access.can_see_judgements`) the
    judges' verdicts, other reviewers' labels and comments stay hidden until this reviewer has
    submitted. Gold labels are never shown here:
    reviewers label independently of them."""
    now = now or timezone.now()
    reviews = item_reviews(item=item)
    my_review = next((r for r in reviews if r.reviewer_id == user.pk), None)
    revealed = access.can_see_judgements(user, item)
    turns = context_turns(item=item)
    target = next((turn for turn in turns if turn.is_target), None)
    lease_active = bool(item.claimed_by_id and item.lease_expires_at and item.lease_expires_at >= now)
    return ReviewScreen(
        item=item,
        turns=turns,
        turn=target,
        verdicts=item_verdicts(item=item) if revealed else [],
        reviews=reviews if revealed else [r for r in reviews if r.reviewer_id == user.pk],
        my_review=my_review,
        comments=screen_comments(item=item, user=user) if item.turn_id else [],
        categories=screen_sql.active_categories(),
        ratings=rating_choices(item.judge),
        revealed=revealed,
        held_by_me=lease_active and item.claimed_by_id == user.pk,
        lease_active=lease_active,
        blind=access.item_is_blind(item),
    )


def lease_left(item: ReviewItem, now: datetime) -> timedelta:
    if not item.lease_expires_at:
        return timedelta(0)
    return max(timedelta(0), item.lease_expires_at - now)
