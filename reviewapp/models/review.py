from django.conf import settings
from django.db import models
from django.db.models import Q

from reviewapp.models import choices
from reviewapp.models.values import LabelValue


class Category(models.Model):
    """The failure taxonomy reviewers use; leads may edit it."""

    slug = models.SlugField(max_length=100, unique=True)
    name = models.CharField(max_length=200)
    description = models.TextField(blank=True)
    active = models.BooleanField(default=True)

    class Meta:
        ordering = ["name"]
        verbose_name_plural = "categories"

    def __str__(self) -> str:
        return self.name


class GoldLabel(LabelValue):
    """The label a turn or conversation should get from a judge, and where that truth came from."""

    Source = choices.GoldLabelSource

    # No index of its own: gold_judge (judge, excluded) starts with it (migration 0013).
    judge = models.ForeignKey("reviewapp.Judge", on_delete=models.CASCADE, related_name="gold_labels", db_index=False)
    conversation = models.ForeignKey("reviewapp.Conversation", on_delete=models.CASCADE, related_name="gold_labels")
    turn = models.ForeignKey(
        "reviewapp.Turn", null=True, blank=True, on_delete=models.CASCADE, related_name="gold_labels"
    )
    source = models.CharField(max_length=16, choices=Source.choices)
    failure_modes = models.JSONField(default=list, blank=True)
    excluded = models.BooleanField(default=False, help_text="Kept for the record but not gold (e.g. marked invalid).")
    metadata = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["judge", "turn", "source"], condition=Q(turn__isnull=False), name="gold_unique_turn"
            ),
            models.UniqueConstraint(
                fields=["judge", "conversation", "source"],
                condition=Q(turn__isnull=True),
                name="gold_unique_conversation",
            ),
        ]
        indexes = [models.Index(fields=["judge", "excluded"], name="gold_judge")]

    def __str__(self) -> str:
        return f"gold {self.judge_id} {self.rating if self.rating is not None else self.label} ({self.source})"


# Which truth wins when a target has several: a lead's decision, then agreeing reviewers, then imports.
GOLD_SOURCE_ORDER = (GoldLabel.Source.ADJUDICATED, GoldLabel.Source.UNANIMOUS, GoldLabel.Source.IMPORTED)


class ReviewItem(models.Model):
    """A turn (or conversation) and judge that needs people."""

    Status = choices.ReviewItemStatus
    Reason = choices.ReviewItemReason

    judge = models.ForeignKey("reviewapp.Judge", on_delete=models.CASCADE, related_name="review_items")
    conversation = models.ForeignKey("reviewapp.Conversation", on_delete=models.CASCADE, related_name="review_items")
    turn = models.ForeignKey(
        "reviewapp.Turn", null=True, blank=True, on_delete=models.CASCADE, related_name="review_items"
    )
    dataset = models.ForeignKey("reviewapp.Dataset", on_delete=models.CASCADE, related_name="review_items")
    language = models.CharField(max_length=35)
    reasons = models.JSONField(default=list)
    priority = models.IntegerField(default=0)
    plan_term = models.SmallIntegerField(
        default=0, help_text="The label planner's share of `priority` (services/label_plan.py), replaced on each apply."
    )
    sample_weight = models.FloatField(default=1.0, help_text="1 / sampling probability, for QA-sample estimates.")
    status = models.CharField(max_length=32, choices=Status.choices, default=Status.OPEN)
    reviews_required = models.PositiveSmallIntegerField(default=1)
    claimed_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="claimed_items"
    )
    lease_expires_at = models.DateTimeField(null=True, blank=True)
    lead_note = models.TextField(blank=True, help_text="A lead's note when sending the item back to reviewers.")
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["judge", "turn"], condition=Q(turn__isnull=False), name="item_unique_turn"),
            models.UniqueConstraint(
                fields=["judge", "conversation"], condition=Q(turn__isnull=True), name="item_unique_conversation"
            ),
        ]
        indexes = [
            models.Index(fields=["status", "language", "-priority", "id"], name="item_queue"),
            models.Index(fields=["dataset", "status"], name="item_dataset_status"),
            # Only claimed items: the few under a lease, found at once however long the queue.
            models.Index(
                fields=["claimed_by", "lease_expires_at"], condition=Q(claimed_by__isnull=False), name="item_claims"
            ),
            # The queue in claim order over both active statuses at once: one index walk per language.
            models.Index(
                fields=["language", "-priority", "id"],
                condition=Q(status__in=["open", "in_review"]),
                name="item_active_queue",
            ),
        ]

    def __str__(self) -> str:
        return f"item {self.pk} {self.judge_id} {self.status}"


class QueueCount(models.Model):
    """How many review items share a language, judge, dataset, status and list of reasons.

    Kept by the database itself, in the transaction that writes the items: triggers on the item table
    (the initial migration, 0001_squashed_0010_queue_counts; on PostgreSQL 0015, which notes each
    item's move and folds the notes once per statement) add one to an item's group when it is
    created or moves in, and take one away when it moves out or is deleted. Every write path keeps it
    (services, bulk inserts, queryset updates, cascading deletes), and the queue's counts are a read of
    these few rows at any queue size.
    Nothing in Python writes it; groups that emptied stay with n = 0.
    """

    language = models.CharField(max_length=35)
    judge = models.ForeignKey("reviewapp.Judge", on_delete=models.CASCADE, related_name="+")
    dataset = models.ForeignKey("reviewapp.Dataset", on_delete=models.CASCADE, related_name="+")
    status = models.CharField(max_length=32, choices=ReviewItem.Status.choices)
    reasons = models.JSONField(default=list)
    n = models.IntegerField(default=0)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["language", "judge", "dataset", "status", "reasons"], name="queue_count_group"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.n} {self.status} {self.language} items of judge {self.judge_id}"


class Review(LabelValue):
    item = models.ForeignKey(ReviewItem, on_delete=models.CASCADE, related_name="reviews")
    reviewer = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="reviews")
    categories = models.ManyToManyField(Category, blank=True, related_name="reviews")
    verdict_agreement = models.JSONField(default=dict, blank=True, help_text="{verdict_id: 'agree' | 'disagree'}")
    grain = models.JSONField(
        default=dict,
        blank=True,
        help_text="Labels at the judge's own grain: sub-metric scores, criteria met, the judge's failure modes.",
    )
    comment = models.TextField(blank=True)
    quoted_span = models.TextField(blank=True)
    seconds_spent = models.PositiveIntegerField(null=True, blank=True)
    revision_requested = models.BooleanField(
        default=False, help_text="A lead sent the item back to its reviewers: this reviewer may revise the label."
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["item", "reviewer"], name="review_one_per_reviewer")]
        indexes = [
            # The few reviews a lead sent back, which keep their items from everyone but their reviewers.
            models.Index(fields=["item"], condition=Q(revision_requested=True), name="review_revising"),
        ]

    def __str__(self) -> str:
        return f"review {self.pk} by {self.reviewer_id}"


class ReviewSkip(models.Model):
    """A reviewer passed on an item, and why; the item is not offered to them again."""

    item = models.ForeignKey(ReviewItem, on_delete=models.CASCADE, related_name="skips")
    reviewer = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="skips")
    reason = models.TextField()
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["item", "reviewer"], name="skip_one_per_reviewer")]

    def __str__(self) -> str:
        return f"skip of item {self.item_id} by {self.reviewer_id}"


class Comment(models.Model):
    turn = models.ForeignKey("reviewapp.Turn", on_delete=models.CASCADE, related_name="comments")
    author = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="comments")
    parent = models.ForeignKey("self", null=True, blank=True, on_delete=models.CASCADE, related_name="replies")
    judge = models.ForeignKey(
        "reviewapp.Judge", null=True, blank=True, on_delete=models.SET_NULL, related_name="comments"
    )
    body = models.TextField()
    categories = models.ManyToManyField(Category, blank=True, related_name="comments")
    quoted_span = models.TextField(blank=True)
    flagged_for_lead = models.BooleanField(default=False)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["created_at"]
        indexes = [models.Index(fields=["turn", "created_at"], name="comment_turn")]

    def __str__(self) -> str:
        return f"comment {self.pk} on turn {self.turn_id}"


class Adjudication(LabelValue):
    item = models.OneToOneField(ReviewItem, on_delete=models.CASCADE, related_name="adjudication")
    lead = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="adjudications")
    categories = models.ManyToManyField(Category, blank=True, related_name="adjudications")
    rationale = models.TextField()
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    def __str__(self) -> str:
        return f"adjudication of item {self.item_id}"
