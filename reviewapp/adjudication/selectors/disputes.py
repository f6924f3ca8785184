"""Reads for the disputes screens: items awaiting adjudication, what kind of disagreement each is, and
one item with every verdict, review, comment and its audit history side by side."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from typing import Any

from django.db.models import Prefetch, Q

from reviewapp.models import Adjudication, AuditEvent, Category, Comment, GoldLabel, Review, ReviewItem, Turn, Verdict
from reviewapp.quality.selectors.quality_slice import outcome
from reviewapp.review.selectors.comments import active_categories

KINDS = [
    ("judge_vs_judge", "Judge vs judge"),
    ("run_vs_run", "Run vs run"),
    ("reviewer_vs_judge", "Reviewer vs judge"),
    ("reviewer_vs_reviewer", "Reviewer vs reviewer"),
]
KIND_LABELS = dict(KINDS)
DISPUTES_SHOWN = 100


def _kinds(item: ReviewItem, reviews: list[Review], verdicts: list[Verdict]) -> list[str]:
    kinds = []
    reasons = set(item.reasons)
    if ReviewItem.Reason.JUDGES_DISAGREE in reasons:
        kinds.append("judge_vs_judge")
    if reasons & {ReviewItem.Reason.RUNS_DISAGREE, ReviewItem.Reason.HIGH_VARIANCE}:
        kinds.append("run_vs_run")
    said = {outcome(item.judge, rating=r.rating, passed=r.passed, label=r.label) for r in reviews} - {None}
    judged = {
        outcome(item.judge, rating=v.rating, passed=v.passed, label=v.label)
        for v in verdicts
        if v.status == Verdict.Status.RESOLVED
    } - {None}
    if said and judged and said != judged:
        kinds.append("reviewer_vs_judge")
    if len(said) > 1:
        kinds.append("reviewer_vs_reviewer")
    return kinds


def _verdicts_for(items: list[ReviewItem]) -> dict[tuple[int, int, int | None], list[Verdict]]:
    """Verdicts of each item's judge on each item's target, in one query."""
    if not items:
        return {}
    q = Q(turn_id__in=[i.turn_id for i in items if i.turn_id]) | Q(
        turn__isnull=True, conversation_id__in=[i.conversation_id for i in items if not i.turn_id]
    )
    out: dict[tuple[int, int, int | None], list[Verdict]] = defaultdict(list)
    for v in (
        Verdict.objects.filter(q, judge_version__judge_id__in={i.judge_id for i in items})
        .select_related("judge_version", "sweep")
        .order_by("judge_version__created_at", "judge_version_id", "-sweep_id", "run_index")
    ):
        out[(v.judge_version.judge_id, v.conversation_id, v.turn_id)].append(v)
    return out


def awaiting_items(*, language: str = "", kind: str = "") -> tuple[list[ReviewItem], int]:
    """Items awaiting adjudication (oldest first, highest priority first) with `.kinds` and `.review_list`:
    three queries. Returns the first DISPUTES_SHOWN and how many match in all."""
    items = ReviewItem.objects.filter(status=ReviewItem.Status.AWAITING_ADJUDICATION)
    if language:
        items = items.filter(language__iexact=language)
    items = list(
        items.select_related("judge", "conversation", "turn")
        .prefetch_related(
            Prefetch(
                "reviews", queryset=Review.objects.select_related("reviewer").order_by("pk"), to_attr="review_list"
            )
        )
        .order_by("-priority", "updated_at", "pk")
    )
    verdicts = _verdicts_for(items)
    matching = []
    for item in items:
        item.verdict_list = verdicts.get((item.judge_id, item.conversation_id, item.turn_id), [])
        item.kinds = _kinds(item, item.review_list, item.verdict_list)
        item.kind_labels = [KIND_LABELS[k] for k in item.kinds]
        if not kind or kind in item.kinds:
            matching.append(item)
    return matching[:DISPUTES_SHOWN], len(matching)


def awaiting_languages() -> list[str]:
    """The languages of the items awaiting adjudication, for the disputes filter (one query)."""
    awaiting = ReviewItem.objects.filter(status=ReviewItem.Status.AWAITING_ADJUDICATION)
    return sorted(set(awaiting.order_by().values_list("language", flat=True).distinct()))


def item_for_dispute(*, item_id: int) -> ReviewItem:
    """Raises ReviewItem.DoesNotExist."""
    return ReviewItem.objects.select_related("judge", "conversation__dataset", "turn", "claimed_by").get(pk=item_id)


def _changes(before: dict | None, after: dict | None) -> list[dict[str, Any]]:
    before, after = before or {}, after or {}
    rows = []
    for key in list(dict.fromkeys([*before, *after])):
        if before.get(key) != after.get(key):
            rows.append({"field": key, "before": before.get(key), "after": after.get(key)})
    return rows


def item_history(*, item: ReviewItem, review_ids: list[int], adjudication_id: int | None) -> list[AuditEvent]:
    """Audit events on the item, its reviews, its adjudication and its gold labels, newest first: two queries."""
    gold_ids = GoldLabel.objects.filter(judge_id=item.judge_id, conversation_id=item.conversation_id)
    gold_ids = gold_ids.filter(turn_id=item.turn_id) if item.turn_id else gold_ids.filter(turn__isnull=True)
    q = Q(object_type="reviewapp.reviewitem", object_id=str(item.pk))
    q |= Q(object_type="reviewapp.review", object_id__in=[str(pk) for pk in review_ids])
    q |= Q(object_type="reviewapp.goldlabel", object_id__in=[str(pk) for pk in gold_ids.values_list("pk", flat=True)])
    if adjudication_id:
        q |= Q(object_type="reviewapp.adjudication", object_id=str(adjudication_id))
    events = list(AuditEvent.objects.filter(q).select_related("actor").order_by("-created_at", "-pk"))
    for event in events:
        event.changes = _changes(event.before, event.after)
        event.kind = event.object_type.rsplit(".", 1)[-1]
    return events


@dataclass
class DisputeDetail:
    item: ReviewItem
    context_turns: list[Turn]
    verdicts: list[Verdict]
    reviews: list[Review]
    comments: list[Comment]
    adjudication: Adjudication | None
    gold: list[GoldLabel]
    history: list[AuditEvent]
    categories: list[Category]
    kinds: list[str]
    next_item_id: int | None


def dispute_detail(*, item: ReviewItem) -> DisputeDetail:
    """Everything a lead weighs on one item: about a dozen queries, whatever the number of reviews or events."""
    verdicts = _verdicts_for([item]).get((item.judge_id, item.conversation_id, item.turn_id), [])
    reviews = list(item.reviews.select_related("reviewer").prefetch_related("categories").order_by("created_at", "pk"))
    comments: list[Comment] = []
    context: list[Turn] = []
    if item.turn_id:
        comments = list(
            Comment.objects.filter(turn_id=item.turn_id)
            .filter(Q(judge_id=item.judge_id) | Q(judge__isnull=True))
            .select_related("author")
            .prefetch_related("categories")
            .order_by("created_at", "pk")
        )
        context = list(
            Turn.objects.filter(conversation_id=item.conversation_id, position__lt=item.turn.position).order_by(
                "-position"
            )[:2]
        )[::-1]
    adjudication = Adjudication.objects.filter(item=item).select_related("lead").prefetch_related("categories").first()
    gold = GoldLabel.objects.filter(judge_id=item.judge_id, conversation_id=item.conversation_id)
    gold = list(
        (gold.filter(turn_id=item.turn_id) if item.turn_id else gold.filter(turn__isnull=True)).order_by("source")
    )
    next_item = (
        ReviewItem.objects.filter(status=ReviewItem.Status.AWAITING_ADJUDICATION)
        .exclude(pk=item.pk)
        .order_by("-priority", "updated_at", "pk")
        .values_list("pk", flat=True)
        .first()
    )
    return DisputeDetail(
        item=item,
        context_turns=context,
        verdicts=verdicts,
        reviews=reviews,
        comments=comments,
        adjudication=adjudication,
        gold=gold,
        history=item_history(
            item=item, review_ids=[r.pk for r in reviews], adjudication_id=adjudication.pk if adjudication else None
        ),
        categories=active_categories(),
        kinds=[KIND_LABELS[k] for k in _kinds(item, reviews, verdicts)],
        next_item_id=next_item,
    )
