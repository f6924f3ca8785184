from django.db import models

from reviewapp.models import choices


class Dataset(models.Model):
    """A named import: an agent run, a validation set, a review set."""

    Kind = choices.DatasetKind

    name = models.CharField(max_length=200, unique=True)
    kind = models.CharField(max_length=16, choices=Kind.choices, default=Kind.RUN)
    source = models.CharField(max_length=500, blank=True, help_text="Where the data came from (file, format).")
    description = models.TextField(blank=True)
    # Blind by default: reviewers label before they see what judges or other reviewers said.
    blind_review = models.BooleanField(default=True)
    reviews_required = models.PositiveSmallIntegerField(default=1)
    metadata = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at", "name"]

    def __str__(self) -> str:
        return self.name


class DatasetCount(models.Model):
    """How many conversations, turns, gold labels and verdicts a dataset holds in one language.

    Kept by the database itself, in the transaction that writes those rows: triggers on the four tables
    (migration 0014_dataset_counts) add what a statement inserts and take away what it deletes, and move
    a conversation's rows when it changes dataset or language. Every write path keeps it (imports and
    their COPYs, services, bulk inserts, cascading deletes), so the datasets list is a read of these few
    rows at any corpus size. Nothing in Python writes it; groups that emptied stay with zeros.
    """

    dataset = models.ForeignKey(Dataset, on_delete=models.CASCADE, related_name="+", db_index=False)
    language = models.CharField(max_length=35)
    conversations = models.BigIntegerField(db_default=0)
    turns = models.BigIntegerField(db_default=0)
    gold_labels = models.BigIntegerField(db_default=0)
    verdicts = models.BigIntegerField(db_default=0)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["dataset", "language"], name="dataset_count_group")]

    def __str__(self) -> str:
        return f"{self.conversations} {self.language} conversations of dataset {self.dataset_id}"


class Conversation(models.Model):
    # No index of its own: conversation_unique_per_dataset starts with dataset_id and serves its lookups.
    dataset = models.ForeignKey(Dataset, on_delete=models.CASCADE, related_name="conversations", db_index=False)
    external_id = models.CharField(max_length=200)
    language = models.CharField(max_length=35, default="en", help_text="BCP 47 code: en, fr, fr-CA, hi, ja ...")
    metadata = models.JSONField(default=dict, blank=True)
    audio = models.FileField(upload_to="audio/", blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["dataset", "external_id"], name="conversation_unique_per_dataset"),
        ]
        indexes = [models.Index(fields=["language", "dataset"], name="conversation_lang_dataset")]
        ordering = ["dataset_id", "id"]

    def __str__(self) -> str:
        return f"{self.dataset_id}/{self.external_id}"


class Turn(models.Model):
    Role = choices.TurnRole

    # No index of its own: turn_unique_position starts with conversation_id and serves its lookups.
    conversation = models.ForeignKey(Conversation, on_delete=models.CASCADE, related_name="turns", db_index=False)
    position = models.PositiveIntegerField()
    role = models.CharField(max_length=16, choices=Role.choices)
    text = models.TextField(blank=True, help_text="What was said or transcribed.")
    intended_text = models.TextField(blank=True, help_text="What TTS was asked to say.")
    audio_start_ms = models.IntegerField(null=True, blank=True)
    audio_end_ms = models.IntegerField(null=True, blank=True)
    entities = models.JSONField(default=list, blank=True)
    metadata = models.JSONField(default=dict, blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["conversation", "position"], name="turn_unique_position"),
        ]
        ordering = ["conversation_id", "position"]

    def __str__(self) -> str:
        return f"{self.conversation_id}#{self.position} {self.role}"

    @property
    def is_speech(self) -> bool:
        return self.role in (self.Role.USER, self.Role.AGENT)

    @property
    def said_differs(self) -> bool:
        return bool(self.intended_text) and self.intended_text.strip() != self.text.strip()
