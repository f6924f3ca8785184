"""Closing the loop: a rubric's edge cases tagged on conversations, where a judge version came from
(the corrections it was drafted from, and which gold it must never be measured on), and the sweeps
that prove it against the version it replaces."""

from django.conf import settings
from django.db import models

from reviewapp.models import choices


class EdgeCase(models.Model):
    """A case a rubric says the judge must handle, with the criteria it tests and an optional tagging rule."""

    judge = models.ForeignKey("reviewapp.Judge", on_delete=models.CASCADE, related_name="edge_cases")
    position = models.PositiveSmallIntegerField()
    case = models.TextField()
    criteria = models.JSONField(default=list, help_text="Criterion names (the spec's keys) this case tests.")
    coverage = models.TextField(blank=True, help_text="What the rubric expects in this case.")
    pattern = models.TextField(
        blank=True, help_text="A regular expression: conversations whose turns match get tagged."
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["judge", "position"], name="edge_case_unique_position")]
        ordering = ["judge_id", "position"]

    def __str__(self) -> str:
        return f"{self.judge_id}#{self.position} {self.case[:40]}"


class EdgeCaseTag(models.Model):
    Source = choices.EdgeCaseTagSource

    edge_case = models.ForeignKey(EdgeCase, on_delete=models.CASCADE, related_name="tags")
    conversation = models.ForeignKey("reviewapp.Conversation", on_delete=models.CASCADE, related_name="edge_case_tags")
    source = models.CharField(max_length=8, choices=Source.choices)
    added_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["edge_case", "conversation"], name="edge_case_tag_unique")]

    def __str__(self) -> str:
        return f"{self.edge_case_id} on {self.conversation_id} ({self.source})"


class VersionProvenance(models.Model):
    """A judge version drafted from reviewers' corrections: its parent, its evidence, who approved it.

    `excluded` lists the targets ([conversation id, turn id or null]) used as examples or quoted in the
    guidance: every figure of this version leaves them out of its gold."""

    version = models.OneToOneField("reviewapp.JudgeVersion", on_delete=models.CASCADE, related_name="provenance")
    parent = models.ForeignKey("reviewapp.JudgeVersion", on_delete=models.PROTECT, related_name="children")
    approved_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+")
    items = models.ManyToManyField("reviewapp.ReviewItem", blank=True, related_name="+")
    comments = models.ManyToManyField("reviewapp.Comment", blank=True, related_name="+")
    excluded = models.JSONField(default=list, blank=True)
    evidence = models.JSONField(default=dict, blank=True, help_text="Per language: disagreements and categories.")
    note = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    def __str__(self) -> str:
        return f"provenance of {self.version_id} (from {self.parent_id})"


class ProofRun(models.Model):
    """Sweeps of a new version and its parent on the same datasets, plus a rerun of the parent for noise."""

    version = models.ForeignKey("reviewapp.JudgeVersion", on_delete=models.CASCADE, related_name="proofs")
    parent = models.ForeignKey("reviewapp.JudgeVersion", on_delete=models.CASCADE, related_name="+")
    main_sweeps = models.ManyToManyField("reviewapp.Sweep", related_name="+")
    rerun_sweeps = models.ManyToManyField("reviewapp.Sweep", related_name="+")
    started_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        return f"proof {self.pk} of {self.version_id} against {self.parent_id}"
