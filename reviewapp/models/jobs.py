from django.conf import settings
from django.db import models

from reviewapp.models import choices


class ImportJob(models.Model):
    """An import started from the browser, run on a worker; its progress and outcome for the page to poll."""

    Status = choices.ImportJobStatus
    Source = choices.ImportJobSource

    source_kind = models.CharField(max_length=16, choices=Source.choices)
    source = models.CharField(max_length=500, help_text="The uploaded file's name or the server path given.")
    path = models.CharField(max_length=1000, help_text="The file or folder the worker imports.")
    fmt = models.CharField(max_length=32, default="auto")
    dataset_name = models.CharField(max_length=200, blank=True)
    language = models.CharField(max_length=35, blank=True)
    skip_invalid = models.BooleanField(default=False)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.PENDING)
    progress = models.PositiveSmallIntegerField(default=0, help_text="Percent done.")
    stage = models.CharField(max_length=200, blank=True)
    summary = models.JSONField(default=dict, blank=True)
    errors = models.JSONField(default=list, blank=True)
    dataset = models.ForeignKey("reviewapp.Dataset", null=True, blank=True, on_delete=models.SET_NULL)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL)
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"import {self.pk} ({self.status})"

    @property
    def finished(self) -> bool:
        return self.status in (self.Status.DONE, self.Status.FAILED)


class CallReplay(models.Model):
    """An archived judge call sent again through the same client, kept beside the original."""

    Status = choices.CallReplayStatus

    call = models.ForeignKey("reviewapp.JudgeCall", on_delete=models.CASCADE, related_name="replays")
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.PENDING)
    model = models.CharField(max_length=200)
    raw_response = models.TextField(blank=True)
    prompt_tokens = models.PositiveIntegerField(null=True, blank=True)
    completion_tokens = models.PositiveIntegerField(null=True, blank=True)
    latency_ms = models.PositiveIntegerField(null=True, blank=True)
    attempts = models.PositiveSmallIntegerField(default=0)
    error = models.TextField(blank=True)
    requested_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL)
    created_at = models.DateTimeField(auto_now_add=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"replay {self.pk} of call {self.call_id} ({self.status})"
